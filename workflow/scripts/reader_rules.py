"""Switch each of the reader's rules off in turn and answer the development and held-out questions."""

import pandas as pd

from rag.answering.reader import read_chosen_thresholds
from rag.ask.index import IndexOptions, build_question_index, documents_and_question_sets
from rag.ask.reader_rules import development_only_rules, rule_ablation
from rag.formats.files import write_csv
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
documents, question_sets = documents_and_question_sets(
    snakemake.input.documents, snakemake.input.development, snakemake.input.heldout
)
# rag ask's own spec retriever (BM25 + LSA + IVF) and the reader's cross-validated threshold without MiniLM.
index = build_question_index(documents, IndexOptions(dense_model=None), None)
threshold = read_chosen_thresholds(snakemake.input.thresholds)["reader"]
rows = rule_ablation(index, documents, question_sets, threshold)
log.info("rules that help only the development questions: %s", development_only_rules(rows) or "none")
write_csv(pd.DataFrame(rows), snakemake.output[0])
finish_job()
