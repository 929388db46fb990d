"""Citation accuracy and the citation check against the claim-level hand labels:
results/citation_accuracy.csv and results/citation_check.csv."""

import pandas as pd

from rag.formats.files import write_csv
from rag.formats.tables import read_columns
from rag.measuring.citation_accuracy import (
    chunk_sources,
    citation_accuracy_table,
    citation_check_table,
    describe_check,
    labelled_sources,
    labels_of_table,
    no_labels,
    read_claim_labels,
)
from rag.measuring.llm_tables import identifiers
from rag.pipeline.jobs import finish_job, start_log
from rag.question_tables import read_questions

log = start_log(snakemake.log[0])
judged = pd.read_csv(snakemake.input.judged, dtype={"question_id": str}, keep_default_na=False)
judged["abstained"] = judged["abstained"].astype(str) == "True"
chunks = {}
for path in snakemake.input.chunks:
    columns = read_columns(path, ["chunk_id", "title", "section", "text"])
    for chunk_id, title, section, text in zip(*columns.values(), strict=True):
        chunks[chunk_id] = (text, f"{title} › {section}" if section else title)
questions = {}
for name, path in snakemake.params.question_files.items():  # "corpus/questions"
    questions |= {(name, question.question_id): question.text for question in read_questions(path)}
labels = no_labels()
if snakemake.input.labels:
    labels = labels_of_table(read_claim_labels(*snakemake.input.labels), judged)

log.info("%d labelled answers match rows of the table", len(labels.answers))
accuracy = citation_accuracy_table(
    judged,
    labels,
    lambda row: chunk_sources(identifiers(row["source_chunk_ids"]), chunks),
    lambda row: questions.get((f"{row['corpus']}/{row['questions']}", str(row["question_id"]))),
)
check = citation_check_table(labels, lambda answer: labelled_sources(answer, chunks))
for line in describe_check(check):
    log.info("%s", line)
write_csv(accuracy, snakemake.output.accuracy)
write_csv(check, snakemake.output.check)
finish_job()
