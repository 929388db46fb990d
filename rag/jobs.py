"""The workflow side: helpers that take a Snakemake job (its ``snakemake`` object) or end one.

Only the scripts in ``workflow/scripts`` import this module (a test checks
it): the ``rag`` package below it never sees Snakemake.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from rag import job_errors
from rag.formats.files import one_writer_per_output
from rag.formats.tables import read_provenance
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


def job_filter(job: Any) -> dict | None:
    """The filter a job's ranking is kept within (its JSON ``filter`` parameter), or None.

    Scripts that serve a rule and its ``_filtered`` twin (fuse, funnel) read
    the filter here: only the filtered rule has the parameter.
    """
    encoded = getattr(job.params, "filter", None)
    return json.loads(encoded) if encoded else None


def write_job_ranking(
    job: Any,
    question_ids: Sequence[str],
    rankings: Sequence,
    chunk_ids: Sequence[str],
    retriever: Mapping,
    stage: str,
    **parts: object,
) -> None:
    """:func:`write_ranking` for a ranking rule's job (its ``snakemake`` object).

    Every ranking rule names its output ``ranking``, its chunk table
    ``chunks`` and its code digest ``code`` (workflow/rules), so the output
    path, the chunk set's provenance and the code digest are taken from the
    job here, once, rather than repeated in every ranking script, where one
    could record another file's provenance or leave out the code.
    """
    write_ranking(
        job.output.ranking,
        question_ids,
        rankings,
        chunk_ids,
        chunk_set=read_provenance(job.input.chunks),
        retriever=retriever,
        code=job.params.code,
        stage=stage,
        **parts,
    )
