"""Turn evidence spans into relevant chunks (qrels) and count cut evidence."""

import dataclasses
import json

import pandas as pd

from rag.chunk_tables import chunks_from_frame
from rag.chunking import spec_from_config
from rag.corpus.document_tables import documents_from_frame
from rag.evaluation.chunk_judging import evidence_cuts, judge_chunks
from rag.formats.files import read_yaml
from rag.formats.tables import provenance, read_provenance, write_parquet
from rag.labels import locate_spans, parse_questions
from rag.pipeline.jobs import finish_job, start_log
from rag.provenance import carried

log = start_log(snakemake.log[0])
questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)
documents = documents_from_frame(pd.read_parquet(snakemake.input.parsed))
chunks = chunks_from_frame(pd.read_parquet(snakemake.input.chunks))
spec = spec_from_config(json.loads(snakemake.params.chunker))

locations = locate_spans(questions, documents, snakemake.input.questions)
judgements = judge_chunks(questions, locations, chunks)
window = spec.window
cuts = evidence_cuts(questions, locations, judgements, window)
log.info(
    "%d questions, %d relevant (question, chunk) pairs, %d of %d pieces cut",
    len(questions),
    len(judgements),
    sum(c.cut for c in cuts),
    len(cuts),
)

columns = ["question_id", "piece", "chunk_id", "gain"]
qrels = pd.DataFrame([dataclasses.asdict(j) for j in judgements], columns=columns)
meta = provenance(**carried(read_provenance(snakemake.input.chunks)), stage="label")
write_parquet(qrels, snakemake.output.qrels, meta)
write_parquet(pd.DataFrame([dataclasses.asdict(c) for c in cuts]), snakemake.output.cuts, meta)
finish_job()
