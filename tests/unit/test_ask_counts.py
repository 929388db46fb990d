"""`rag ask` reads a folder as the pipeline does: the same documents and words as corpus_statistics.csv.

Both sides are the real thing: the committed results/corpus_statistics.csv,
made by the pipeline's parse rule for the bundled corpus with config.yaml's
``skip`` setting, and the index `rag ask` builds from the same folder with the
same setting.
"""

from __future__ import annotations

import pandas as pd
import pytest

from rag.ask.index import IndexOptions, build_question_index, parse_documents
from rag.corpus.markdown_files import read_markdown_folder
from rag.formats.files import read_yaml
from tests.workdir import PROJECT

CORPUS = "solar_system"


def word_count(documents) -> int:
    """Words as corpus_statistics.csv counts them: whitespace-separated, over every kept block."""
    return sum(len(block.text.split()) for document in documents for block in document.blocks)


@pytest.fixture(scope="module")
def pipeline_counts() -> tuple[pd.DataFrame, pd.Series]:
    statistics = pd.read_csv(PROJECT / "results" / "corpus_statistics.csv")
    rows = statistics[statistics["corpus"] == CORPUS]
    return rows[rows["doc_id"] != "(all)"], rows[rows["doc_id"] == "(all)"].iloc[0]


@pytest.fixture(scope="module")
def ask_index():
    entry = read_yaml(PROJECT / "config.yaml")["corpora"][CORPUS]
    files = [(file.name, file.text) for file in read_markdown_folder(PROJECT / entry["documents"])]
    documents = parse_documents(files, skip=entry["skip"])
    return documents, build_question_index(documents, IndexOptions(skip=tuple(entry["skip"])))


def test_rag_ask_counts_the_documents_and_words_of_corpus_statistics(pipeline_counts, ask_index):
    per_document, total = pipeline_counts
    documents, index = ask_index
    assert index.document_count == len(per_document) == len(documents)
    assert index.word_count == int(total["words"])
    words = {
        document.doc_id: sum(len(block.text.split()) for block in document.blocks) for document in documents
    }
    assert words == dict(zip(per_document["doc_id"], per_document["words"].astype(int), strict=True))


def test_keeping_lists_changes_the_count_so_the_setting_is_what_is_compared():
    entry = read_yaml(PROJECT / "config.yaml")["corpora"][CORPUS]
    assert "lists" in entry["skip"]
    files = [(file.name, file.text) for file in read_markdown_folder(PROJECT / entry["documents"])]
    kept = parse_documents(files, skip=[setting for setting in entry["skip"] if setting != "lists"])
    skipped = parse_documents(files, skip=entry["skip"])
    assert word_count(kept) > word_count(skipped)
