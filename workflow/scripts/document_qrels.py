"""The documents holding each question's evidence, as graded document judgements."""

import pandas as pd

from rag.corpus.document_tables import documents_from_frame
from rag.formats.tables import provenance, write_parquet
from rag.labels import evidence_judgements, locate_spans
from rag.pipeline.jobs import finish_job, start_log
from rag.question_tables import judgements_to_frame, read_questions

log = start_log(snakemake.log[0])
questions = [question for question in read_questions(snakemake.input.questions) if question.answerable]
documents = documents_from_frame(pd.read_parquet(snakemake.input.parsed))
judgements = evidence_judgements(questions, locate_spans(questions, documents, snakemake.input.questions))
log.info("%d answerable questions, %d relevant (question, document) pairs", len(questions), len(judgements))
write_parquet(judgements_to_frame(judgements), snakemake.output[0], provenance(stage="document_qrels"))
finish_job()
