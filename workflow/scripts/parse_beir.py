"""Read a BEIR collection's split: documents, queries as questions, qrels as document judgements."""

import json

from rag.corpus.beir import judged_questions
from rag.corpus.beir_files import read_beir_collection
from rag.corpus.document_tables import documents_to_table
from rag.corpus.documents import PARSER_VERSION, document_defaults
from rag.formats.tables import provenance, write_parquet
from rag.pipeline.jobs import finish_job, start_log
from rag.provenance import documents_record
from rag.question_tables import judgements_to_frame, questions_to_frame

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.corpus)
defaults = document_defaults(entry, f"config['corpora'][{snakemake.wildcards.corpus!r}]")
documents, questions, judgements = read_beir_collection(
    snakemake.input.corpus,
    snakemake.input.queries,
    snakemake.input.qrels,
    defaults.access,
    defaults.tenant,
    defaults.acl,
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
meta = provenance(
    stage="parse",
    parser_version=PARSER_VERSION,
    source="beir",
    split=entry["split"],
    **documents_record({document.doc_id: document.version for document in documents}),
)
write_parquet(documents_to_table(documents), snakemake.output.parsed, meta)
write_parquet(questions_to_frame(questions), snakemake.output.questions, meta)
write_parquet(judgements_to_frame(judgements), snakemake.output.qrels, meta)
finish_job()
