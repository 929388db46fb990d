"""Switch each of the reader's rules off in turn and answer the development and held-out questions."""

from pathlib import Path

import pandas as pd

from rag.answering.question_answering import IndexOptions, build_question_index, parse_documents
from rag.answering.reader import DEFAULT_THRESHOLD_WITHOUT_SIMILARITY
from rag.answering.reader_rules import development_only_rules, rule_ablation
from rag.corpus.markdown_files import read_markdown_folder
from rag.formats.files import read_yaml, write_csv
from rag.jobs import finish_job, start_log
from rag.labels import parse_questions

log = start_log(snakemake.log[0])
files = [(file.name, file.text) for file in read_markdown_folder(snakemake.input.documents)]
documents = parse_documents(files, location=f"{snakemake.input.documents}/")
named = [("development", snakemake.input.development)] + [
    (Path(path).stem, path) for path in snakemake.input.heldout
]
question_sets = {name: parse_questions(read_yaml(path), path) for name, path in named}
# rag ask's own spec retriever (BM25 + LSA + IVF) and the reader's threshold without MiniLM.
index = build_question_index(documents, IndexOptions(dense_model=None), None)
rows = rule_ablation(index, documents, question_sets, DEFAULT_THRESHOLD_WITHOUT_SIMILARITY)
log.info("rules that help only the development questions: %s", development_only_rules(rows) or "none")
write_csv(pd.DataFrame(rows), snakemake.output[0])
finish_job()
