"""The workflow side: helpers that start and end a workflow job and write a ranking rule's output.

Only the scripts in ``workflow/scripts`` import this module (a test checks
it). Its functions take plain values (paths, parameters, records): each
script reads them from its ``snakemake`` object and passes them on, so no
function in ``rag`` takes the Snakemake job itself (tests/unit/test_no_snakemake_objects.py).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from rag.formats.files import one_writer_per_output
from rag.formats.tables import read_provenance
from rag.pipeline import job_errors
from rag.retrieval.ranking_files import write_ranking


def start_log(path: str | os.PathLike) -> logging.Logger:
    """A logger that writes to a rule's log file (and nowhere else)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    logger = logging.getLogger(f"rag.job.{path}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").addHandler(handler)
    job_errors.install(logger)
    one_writer_per_output()
    return logger


def finish_job() -> NoReturn:
    """End a workflow script that has written all its outputs, without Python's teardown.

    By its last line a script has renamed every output into place and closed
    its files; what would follow is the interpreter freeing every module and
    object one at a time, about a tenth of a second for the numpy, pyarrow
    and scipy a job loads. Over the ~150 jobs of a clean build that is a tenth
    of the build's CPU time. Logs and standard streams are flushed first. Only
    reached when the script succeeded: a failing script raises before it, and
    exits with Python's usual error status.
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def job_filter(encoded: str | None) -> dict | None:
    """The filter a job's ranking is kept within, decoded from its JSON ``filter`` parameter, or None.

    Scripts that serve a rule and its ``_filtered`` twin (fuse, funnel) pass
    the parameter here, or None when the rule has none: only the filtered
    rule has it.
    """
    return json.loads(encoded) if encoded else None


def write_job_ranking(
    path: str | os.PathLike,
    question_ids: Sequence[str],
    rankings: Sequence,
    chunk_ids: Sequence[str],
    *,
    chunks: str | os.PathLike,
    code: str,
    retriever: Mapping,
    stage: str,
    **parts: object,
) -> None:
    """:func:`write_ranking` at ``path`` for a ranking rule, recording the provenance of its chunk table.

    Every ranking rule names its output ``ranking``, its chunk table
    ``chunks`` and its code digest ``code`` (workflow/rules); the scripts
    pass those three, and the chunk set's provenance is read here from the
    very chunk table the job ranked, so no script can record another file's.
    """
    write_ranking(
        path,
        question_ids,
        rankings,
        chunk_ids,
        chunk_set=read_provenance(chunks),
        retriever=retriever,
        code=code,
        stage=stage,
        **parts,
    )


@dataclass(frozen=True)
class RankingJob:
    """A ranking rule's job: the ranking it writes, the chunk table it ranked, its code digest and stage.

    Every ranking script (rank, rank_embedder, rank_ivf, rank_filtered,
    fuse, learned_filtered, funnel, rank_question_set) builds one from its
    rule's ``output.ranking``, ``input.chunks`` and ``params.code`` and ends
    with :meth:`finish`, so the tail that writes a ranking with its
    provenance and ends the job is written once, here.
    """

    ranking: str | os.PathLike
    chunks: str | os.PathLike
    code: str
    stage: str

    def write(
        self,
        question_ids: Sequence[str],
        rankings: Sequence,
        chunk_ids: Sequence[str],
        retriever: Mapping,
        **parts: object,
    ) -> None:
        """:func:`write_job_ranking` of this job: the rankings with the provenance of its chunk table."""
        write_job_ranking(
            self.ranking,
            question_ids,
            rankings,
            chunk_ids,
            chunks=self.chunks,
            code=self.code,
            retriever=retriever,
            stage=self.stage,
            **parts,
        )

    def finish(
        self,
        question_ids: Sequence[str],
        rankings: Sequence,
        chunk_ids: Sequence[str],
        retriever: Mapping,
        **parts: object,
    ) -> NoReturn:
        """:meth:`write` the job's ranking, then :func:`finish_job`: a ranking script's last line."""
        self.write(question_ids, rankings, chunk_ids, retriever, **parts)
        finish_job()
