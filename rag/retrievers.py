"""Retrievers as named in the configuration: one entry, one fitted index.

The workflow and the ``rag`` command build and query every kind through these
two functions, so a retriever behaves the same in a batch experiment and in an
interactive question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rag.bm25 import BM25Index, bm25_search, build_bm25_index
from rag.lsa import LSAModel, fit_lsa, lsa_search
from rag.search import Ranking
from rag.text import analyze
from rag.tfidf import TfidfIndex, build_tfidf_index, tfidf_search

SPARSE_AND_DENSE_KINDS = ("bm25", "tfidf", "lsa")

INDEX_TYPES = {"bm25": BM25Index, "tfidf": TfidfIndex, "lsa": LSAModel}


class RetrieverError(ValueError):
    """A retriever that cannot be built; the message names it."""


@dataclass(frozen=True)
class Retriever:
    """A fitted retriever: its configuration entry and its index."""

    entry: Mapping
    index: BM25Index | TfidfIndex | LSAModel

    @property
    def kind(self) -> str:
        return self.entry["kind"]

    def analyze(self, text: str) -> list[str]:
        return analyze(text, stem=bool(self.entry.get("stem", False)))


def build_retriever(entry: Mapping, indexed_texts: Sequence[str], name: str = "retriever") -> Retriever:
    """Fit the index a config entry describes over the chunks' indexed texts."""
    kind = entry["kind"]
    if not indexed_texts:
        raise RetrieverError(f"retriever {name!r}: the chunk set is empty")
    terms = [analyze(text, stem=bool(entry.get("stem", False))) for text in indexed_texts]
    if kind == "bm25":
        index = build_bm25_index(terms, k1=entry["k1"], b=entry["b"], idf=entry["idf"])
    elif kind == "tfidf":
        index = build_tfidf_index(terms, sublinear=entry["sublinear"])
    elif kind == "lsa":
        index = fit_lsa(terms, entry["dimensions"], entry["min_df"])
    else:
        raise RetrieverError(f"retriever {name!r}: kind {kind!r} is not built from chunk texts")
    return Retriever(entry, index)


def search(
    retriever: Retriever,
    query_texts: Sequence[str],
    depth: int,
    tie_order: np.ndarray | None,
    allowed: np.ndarray | None = None,
) -> list[Ranking]:
    """Rank the chunks for every query; a query with no known term gets an empty ranking.

    ``allowed``, a boolean mask over the chunks (see :mod:`rag.filters`), is
    a prefilter applied inside the search of every kind: chunks outside it
    are never scored, so they can never be ranked.
    """
    queries = [retriever.analyze(text) for text in query_texts]
    if retriever.kind == "bm25":
        return bm25_search(retriever.index, queries, depth, tie_order, allowed=allowed)
    if retriever.kind == "tfidf":
        normalize = retriever.entry["normalize"]
        return tfidf_search(retriever.index, queries, depth, tie_order, normalize=normalize, allowed=allowed)
    return lsa_search(retriever.index, queries, depth, tie_order, allowed=allowed)


def load_retriever(entry: Mapping, arrays: Mapping[str, np.ndarray]) -> Retriever:
    """A retriever from the arrays its ranking rule saved, without refitting."""
    return Retriever(entry, INDEX_TYPES[entry["kind"]].from_arrays(arrays))
