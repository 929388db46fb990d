"""Each chunk-level ranking as a gzip TREC run, and each chunk set's labels as qrels.

Each run file is a part (rag.evaluation.table_parts) keyed by its ranking's bytes:
adding a retriever converts only its own rankings.
"""

from pathlib import Path

import pandas as pd

from rag.evaluation.metrics import relevance_by_question
from rag.evaluation.table_parts import PartStore, describe, file_digest, part_key, reuse_or_compute
from rag.evaluation.trec import chunk_judgements, piece_judgements, qrels_lines, run_file
from rag.formats.files import atomic_path, read_yaml, write_text
from rag.labels import parse_questions
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
questions = {
    corpus: [q for q in parse_questions(read_yaml(path), path) if q.answerable]
    for corpus, path in zip(snakemake.params.corpora, snakemake.input.questions, strict=True)
}
for (corpus, _chunker), qrels_path, qrels_out, pieces_out in zip(
    snakemake.params.pairs,
    snakemake.input.qrels,
    snakemake.output.qrels,
    snakemake.output.piece_qrels,
    strict=True,
):
    relevance = relevance_by_question(questions[corpus], pd.read_parquet(qrels_path))
    write_text(qrels_out, qrels_lines(chunk_judgements(relevance)))
    write_text(pieces_out, qrels_lines(piece_judgements(relevance)))

paths = dict(zip(map(tuple, snakemake.params.grid), snakemake.input.rankings, strict=True))
keys = {run: part_key(snakemake.params.code, ".".join(run), file_digest(path)) for run, path in paths.items()}


def convert(missing):
    """The TREC runs of the rankings without a stored part."""
    return {run: run_file(paths[run], ".".join(run)) for run in missing}


runs, missing = reuse_or_compute(PartStore(Path(snakemake.params.parts)), "trec_runs", keys, convert, ".gz")
log.info(describe("TREC runs", len(keys), missing))
for run, run_path in zip(paths, snakemake.output.runs, strict=True):
    with atomic_path(run_path) as temporary:
        temporary.write_bytes(runs[run])
finish_job()
