"""Read a BEIR collection's split: documents, queries as questions, qrels as document judgements."""

import json

from rag import io
from rag.corpus.beir import judged_questions
from rag.corpus.documents import PARSER_VERSION
from rag.provenance import documents_record

log = io.start_log(snakemake.log[0])
entry = json.loads(snakemake.params.corpus)
documents, questions, judgements = io.read_beir_collection(
    snakemake.input.corpus, snakemake.input.queries, snakemake.input.qrels, entry["default_access"]
)
log.info(
    "%d documents, %d queries (%d judged), %d judgements (%d with score 0)",
    len(documents),
    len(questions),
    sum(question.answerable for question in questions),
    len(judgements),
    sum(judgement.gain == 0 for judgement in judgements),
)
questions = judged_questions(questions, entry["queries"])
log.info("ranking %d queries (queries: %s)", len(questions), entry["queries"])

documents.sort(key=lambda document: document.doc_id)
meta = io.provenance(
    stage="parse",
    parser_version=PARSER_VERSION,
    source="beir",
    split=entry["split"],
    **documents_record({document.doc_id: document.version for document in documents}),
)
io.write_parquet(io.documents_to_frame(documents), snakemake.output.parsed, meta)
io.write_parquet(io.questions_to_frame(questions), snakemake.output.questions, meta)
io.write_parquet(io.judgements_to_frame(judgements), snakemake.output.qrels, meta)
io.finish_job()
