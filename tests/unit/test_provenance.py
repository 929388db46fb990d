"""Provenance records: what they hold, and that any difference changes their ids."""

from __future__ import annotations

import pytest

import rag.text
from rag.chunking import ChunkerSpec, chunk_document, chunk_id
from rag.corpus.documents import PARSER_VERSION, parse_markdown
from rag.provenance import (
    documents_record,
    embedding_model,
    filter_record,
    provenance_row,
    record_digest,
    retriever_record,
)
from rag.text import analyzer_digest, stopwords_digest

BM25 = {"kind": "bm25", "k1": 1.5, "b": 0.75, "idf": "lucene", "stem": False}
LSA = {"kind": "lsa", "dimensions": 128, "min_df": 2, "stem": False}


def test_record_digest_ignores_key_order_but_not_values():
    assert record_digest({"a": 1, "b": [1, 2]}) == record_digest({"b": [1, 2], "a": 1})
    assert record_digest({"a": 1, "b": [1, 2]}) != record_digest({"a": 1, "b": [2, 1]})
    assert record_digest({"a": 1}) != record_digest({"a": "1"})


def test_a_changed_stopword_list_changes_both_analyzer_digests(monkeypatch):
    before = analyzer_digest(), stopwords_digest(), retriever_record(BM25)
    monkeypatch.setattr(rag.text, "STOPWORDS", rag.text.STOPWORDS | {"planet"})
    after = analyzer_digest(), stopwords_digest(), retriever_record(BM25)
    assert before[0] != after[0] and before[1] != after[1]
    assert before[2]["analyzer"] != after[2]["analyzer"]
    assert record_digest(before[2]) != record_digest(after[2])


def test_stemming_changes_the_analyzer_digest_but_not_the_stopword_digest():
    assert analyzer_digest(True) != analyzer_digest(False)
    stemmed = retriever_record({**BM25, "stem": True})
    assert stemmed["analyzer"] == analyzer_digest(True)
    assert stemmed["stopwords"] == stopwords_digest()


@pytest.mark.parametrize(
    ("change", "key"),
    [({"k1": 1.2}, "k1"), ({"idf": "classic"}, "idf"), ({"stem": True}, "stem")],
)
def test_any_retriever_parameter_changes_the_retriever_digest(change, key):
    assert (
        retriever_record(BM25)["retriever_digest"] != retriever_record({**BM25, **change})["retriever_digest"]
    )


def test_embedding_model_names_lsa_and_pretrained_encoders_only():
    assert embedding_model(BM25) is None
    assert embedding_model(LSA) == "lsa(dimensions=128, min_df=2, stem=False)"
    assert embedding_model({**LSA, "dimensions": 64}) != embedding_model(LSA)
    assert embedding_model({"kind": "embedder", "model": "all-MiniLM-L6-v2"}) == "all-MiniLM-L6-v2"


def test_documents_record_changes_when_a_document_goes_or_gets_a_new_version():
    base = documents_record({"alpha": "1", "beta": "3"})
    assert base["document_count"] == 2
    assert documents_record({"beta": "3", "alpha": "1"}) == base
    assert documents_record({"alpha": "1"})["documents_digest"] != base["documents_digest"]
    assert documents_record({"alpha": "2", "beta": "3"})["documents_digest"] != base["documents_digest"]


def test_chunk_ids_depend_on_the_parser_version_and_the_document_version():
    key = ("alpha", "1", "spec", 0, 10)
    assert chunk_id(*key) == chunk_id(*key, parser_version=PARSER_VERSION)
    assert chunk_id(*key) != chunk_id(*key, parser_version="older")
    assert chunk_id(*key) != chunk_id("alpha", "2", "spec", 0, 10)
    text = "---\nid: a\nversion: 1\n---\n# A\n\nOne sentence here. Another one there.\n"
    spec = ChunkerSpec("sentences", 3)
    first = chunk_document(parse_markdown(text, "a.md"), spec)
    bumped = chunk_document(parse_markdown(text.replace("version: 1", "version: 2"), "a.md"), spec)
    assert [c.text for c in first] == [c.text for c in bumped]
    assert not {c.chunk_id for c in first} & {c.chunk_id for c in bumped}


def test_provenance_row_flattens_a_funnel_record():
    chunk_part = {"parser_version": "3", "document_count": 2, "documents_digest": "d", "chunker_digest": "c"}
    lsa = {**chunk_part, "rag_version": "0.1.0", **retriever_record(LSA)}
    bm25 = {**chunk_part, "rag_version": "0.1.0", **retriever_record({**BM25, "stem": True})}
    funnel = {
        **chunk_part,
        "rag_version": "0.1.0",
        "retriever": {"kind": "funnel"},
        "retriever_digest": record_digest({"kind": "funnel"}),
        "first": bm25,
        "rerank": {"retriever": {"kind": "rrf"}, "components": {"lsa": retriever_record(LSA)}},
        **filter_record({"access": ["public"]}),
    }
    row = provenance_row(funnel)
    assert row["analyzer"] == "+".join(sorted({analyzer_digest(False), analyzer_digest(True)}))
    assert row["embedding_model"] == embedding_model(LSA)
    assert row["parser_version"] == "3" and row["chunker_digest"] == "c"
    assert row["filter_digest"] == record_digest({"access": ["public"]})
    assert row["provenance"] == record_digest(funnel)
    assert provenance_row(lsa)["filter_digest"] == "none"
