"""Size of every document's lead summary, and the evidence inside it, per corpus."""

import json

import pandas as pd

from rag.answering.summaries import fully_inside, lead_summaries, pieces_in_summaries, summary_statistics
from rag.answering.tokens import CL100K_BASE, optional_token_counter
from rag.corpus.document_tables import documents_from_frame
from rag.formats.files import read_yaml, write_csv
from rag.labels import locate_spans, parse_questions
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
window = json.loads(snakemake.params.window)["window"]
count_cl100k = optional_token_counter(CL100K_BASE)
tables = []
for corpus, parsed, path in zip(
    snakemake.params.corpora, snakemake.input.parsed, snakemake.input.questions, strict=True
):
    questions = parse_questions(read_yaml(path), path)
    documents = documents_from_frame(pd.read_parquet(parsed))
    summaries = lead_summaries(documents)
    locations = locate_spans(questions, documents, path)
    table = summary_statistics(summaries, questions, locations, window, count_cl100k)
    table.insert(0, "corpus", corpus)
    tables.append(table)
    inside = fully_inside(questions, pieces_in_summaries(questions, locations, summaries))
    log.info(
        "%s: %d summaries, %d words; %d answerable questions have all their evidence in a summary: %s",
        corpus,
        len(summaries),
        int(table["words"].iloc[-1]),
        len(inside),
        inside,
    )
write_csv(pd.concat(tables, ignore_index=True), snakemake.output[0])
finish_job()
