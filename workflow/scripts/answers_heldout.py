"""Answer the development and the held-out questions through rag ask's path, the reader frozen."""

from pathlib import Path

import pandas as pd

from rag.answering.answers import measure_ask
from rag.answering.question_answering import parse_documents
from rag.answering.reader import CachedSentenceEmbedder, dense_available
from rag.corpus.markdown_files import read_markdown_folder
from rag.formats.files import read_yaml, write_csv
from rag.jobs import finish_job, start_log
from rag.labels import parse_questions

log = start_log(snakemake.log[0])
files = [(file.name, file.text) for file in read_markdown_folder(snakemake.input.documents)]
documents = parse_documents(files, location=f"{snakemake.input.documents}/")
# The development questions, then each held-out file under its own name (its file name).
named = [("development", snakemake.input.development)] + [
    (Path(path).stem, path) for path in snakemake.input.heldout
]
question_sets = {name: parse_questions(read_yaml(path), path) for name, path in named}
embedder = CachedSentenceEmbedder(snakemake.params.cache) if dense_available() else None
if embedder is None:
    log.warning("the dense extra is not installed: only the spec's BM25 + LSA + IVF retriever is measured")
table = pd.DataFrame(measure_ask(documents, question_sets, embedder))
if embedder is not None:
    embedder.save()
for row in table[table["group"] == "answerable"].itertuples():
    log.info(
        "%s, %s, %s: %d of %d answerable correct, %d wrong",
        row.questions_file,
        row.retriever,
        row.generator,
        row.correct,
        row.questions,
        row.wrong,
    )
write_csv(table, snakemake.output[0])
finish_job()
