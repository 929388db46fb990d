"""Read a BEIR collection's split: documents, queries as questions, qrels as document judgements."""

from rag.documents import PARSER_VERSION
from rag.io import (
    documents_to_frame,
    judgements_to_frame,
    provenance,
    questions_to_frame,
    read_beir_collection,
    start_log,
    write_parquet,
)

log = start_log(snakemake.log[0])
documents, questions, judgements = read_beir_collection(
    snakemake.input.corpus, snakemake.input.queries, snakemake.input.qrels
)
answerable = sum(question.answerable for question in questions)
log.info(
    "%d documents, %d queries (%d with a relevant document), %d judgements (%d with score 0)",
    len(documents),
    len(questions),
    answerable,
    len(judgements),
    sum(judgement.gain == 0 for judgement in judgements),
)

meta = provenance(stage="parse", parser_version=PARSER_VERSION, source="beir", files=dict(snakemake.input))
documents.sort(key=lambda document: document.doc_id)
write_parquet(documents_to_frame(documents), snakemake.output.parsed, meta)
write_parquet(questions_to_frame(questions), snakemake.output.questions, meta)
write_parquet(judgements_to_frame(judgements), snakemake.output.qrels, meta)
