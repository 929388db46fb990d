"""Tables of documents, words, skipped lines and questions per type, for every corpus."""

import pandas as pd

from rag.evaluation.statistics import corpus_statistics, questions_by_type
from rag.formats.files import write_csv
from rag.formats.tables import read_provenance
from rag.pipeline.jobs import finish_job, start_log
from rag.question_tables import read_questions

log = start_log(snakemake.log[0])
documents, questions = [], []
for corpus, parsed in zip(snakemake.params.corpora, snakemake.input.parsed, strict=True):
    skipped = read_provenance(parsed).get("skipped", {})
    documents.append(corpus_statistics(pd.read_parquet(parsed), corpus, skipped))
# Unlabelled corpora have no questions, and no rows in questions_by_type.csv.
for corpus, questions_path in zip(snakemake.params.labelled, snakemake.input.questions, strict=True):
    questions.append(questions_by_type(read_questions(questions_path), corpus))
write_csv(pd.concat(documents, ignore_index=True), snakemake.output.documents)
columns = ["corpus", "type", "questions", "evidence_pieces"]
write_csv(
    pd.concat(questions, ignore_index=True) if questions else pd.DataFrame(columns=columns),
    snakemake.output.questions,
)
finish_job()
