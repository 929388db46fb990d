"""Tables of documents, words and questions per type, for every corpus."""

import pandas as pd

from rag.io import finish_job, read_questions, start_log, write_csv
from rag.statistics import corpus_statistics, questions_by_type

log = start_log(snakemake.log[0])
documents, questions = [], []
for corpus, parsed, questions_path in zip(
    snakemake.params.corpora, snakemake.input.parsed, snakemake.input.questions, strict=True
):
    documents.append(corpus_statistics(pd.read_parquet(parsed), corpus))
    questions.append(questions_by_type(read_questions(questions_path), corpus))
write_csv(pd.concat(documents, ignore_index=True), snakemake.output.documents)
write_csv(pd.concat(questions, ignore_index=True), snakemake.output.questions)
finish_job()
