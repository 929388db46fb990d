"""BM25 over a precomputed term-weight matrix.

A chunk's BM25 score is a sum over the distinct query terms of a per-(term,
chunk) weight that does not depend on the query: the idf times the saturating
term-frequency factor. Those weights are therefore computed once, at indexing,
into a chunks x terms CSC matrix; scoring a batch of queries is then one sparse
product (query-term indicators times the weight columns), with memory linear
in the number of postings.

Two idf variants are offered. "lucene" adds one inside the logarithm and is
always positive; "classic" is the Robertson-Spärck Jones weight, which turns
negative for a term in more than half the chunks and so punishes a chunk for
containing a query word. It is kept as the ablation that shows the problem.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from rag.kinds import RETRIEVER_KINDS, parameter_problem
from rag.retrieval import search
from rag.retrieval.stored_arrays import require_arrays, term_matrix_arrays
from rag.text import analyze_entry

# Defaults, bounds and idf variants come from the table of kinds, the one place
# the config plan checks them too.
IDF_VARIANTS: tuple[str, ...] = RETRIEVER_KINDS["bm25"].parameters["idf"].choices
DEFAULT_K1 = float(RETRIEVER_KINDS["bm25"].parameters["k1"].default)
DEFAULT_B = float(RETRIEVER_KINDS["bm25"].parameters["b"].default)


def bm25_idf(document_frequency: np.ndarray, n_chunks: int, variant: str = "lucene") -> np.ndarray:
    """The idf of terms found in ``document_frequency`` chunks out of ``n_chunks``."""
    if variant not in IDF_VARIANTS:
        raise ValueError(f"unknown BM25 idf variant {variant!r}; choose one of {IDF_VARIANTS}")
    document_frequency = np.asarray(document_frequency, dtype=np.float64)
    if np.any(document_frequency < 0) or np.any(document_frequency > n_chunks):
        raise ValueError(f"document frequencies must lie between 0 and the {n_chunks} chunks")
    odds = (n_chunks - document_frequency + 0.5) / (document_frequency + 0.5)
    return np.log1p(odds) if variant == "lucene" else np.log(odds)


def length_factor(chunk_lengths: np.ndarray, average_length: float, k1: float, b: float) -> np.ndarray:
    """K = k1 (1 - b + b |d| / avg): the count at which a term reaches half its maximum weight."""
    relative = np.asarray(chunk_lengths, dtype=np.float64) / (average_length if average_length > 0 else 1.0)
    return k1 * (1.0 - b + b * relative)


def saturation(counts: np.ndarray, length_factors: np.ndarray, k1: float) -> np.ndarray:
    """f (k1 + 1) / (f + K): 0 for an absent term, rising towards k1 + 1 with the count."""
    counts = np.asarray(counts, dtype=np.float64)
    return counts * (k1 + 1.0) / (counts + length_factors)


def _check_parameters(k1: float, b: float, idf: str) -> None:
    for key, value in (("k1", k1), ("b", b), ("idf", idf)):
        problem = parameter_problem("bm25", key, value)
        if problem:
            raise ValueError(f"BM25 {key} {problem}")


@dataclass(frozen=True, eq=False)
class BM25Index:
    """Term counts and the BM25 weight of every posting.

    ``counts`` is chunks x terms (CSC: one postings list per term) and
    ``weights`` holds the BM25 weight of each stored count in the same order,
    so the weight matrix shares the count matrix's index arrays. Counts are
    kept because the per-term breakdown needs them, and so that other k1, b
    or idf can be tried without analyzing the text again
    (``bm25_index_from_counts(index.term_counts, k1=...)``).
    """

    vocabulary: np.ndarray
    counts: sp.csc_matrix
    weights: np.ndarray
    chunk_lengths: np.ndarray
    k1: float
    b: float
    idf_variant: str

    @property
    def n_chunks(self) -> int:
        return self.counts.shape[0]

    @property
    def term_counts(self) -> search.TermCounts:
        return search.TermCounts(self.vocabulary, self.counts)

    @property
    def average_length(self) -> float:
        return float(self.chunk_lengths.mean()) if len(self.chunk_lengths) else 0.0

    @property
    def document_frequency(self) -> np.ndarray:
        return np.diff(self.counts.indptr).astype(np.int64)

    @cached_property
    def idf(self) -> np.ndarray:
        return bm25_idf(self.document_frequency, self.n_chunks, self.idf_variant)

    @cached_property
    def column_of(self) -> dict[str, int]:
        return search.vocabulary_lookup(self.vocabulary)

    @cached_property
    def weight_matrix(self) -> sp.csc_matrix:
        return sp.csc_matrix((self.weights, self.counts.indices, self.counts.indptr), shape=self.counts.shape)

    @cached_property
    def term_bounds(self) -> np.ndarray:
        """Each term's largest weight: the most it can add to a score (the bound MaxScore prunes with).

        Computed once per loaded index (one pass over the weights) rather than
        saved with it, so that the saved index, and the index sizes the
        pipeline reports, stay as they were.
        """
        return search.column_maxima(self.counts.indptr, self.weights)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays for ``numpy.savez`` (no pickled objects)."""
        return {
            **term_matrix_arrays(self.vocabulary, self.counts, "counts"),
            "weights": self.weights,
            "chunk_lengths": self.chunk_lengths,
            "k1": np.array(self.k1),
            "b": np.array(self.b),
            "idf_variant": np.array(self.idf_variant),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> BM25Index:
        keys = (
            "vocabulary",
            "indptr",
            "indices",
            "counts",
            "weights",
            "chunk_lengths",
            "k1",
            "b",
            "idf_variant",
        )
        require_arrays(arrays, keys, "index")
        vocabulary = np.asarray(arrays["vocabulary"])
        chunk_lengths = np.asarray(arrays["chunk_lengths"], dtype=np.int64)
        indptr = np.asarray(arrays["indptr"])
        if len(indptr) != len(vocabulary) + 1:
            raise ValueError(f"BM25 arrays: indptr has {len(indptr)} entries for {len(vocabulary)} terms")
        counts = sp.csc_matrix(
            (np.asarray(arrays["counts"]), np.asarray(arrays["indices"]), indptr),
            shape=(len(chunk_lengths), len(vocabulary)),
        )
        weights = np.asarray(arrays["weights"], dtype=np.float64)
        if weights.shape != counts.data.shape:
            raise ValueError(f"BM25 arrays: {len(weights)} weights for {counts.nnz} postings")
        k1, b, idf_variant = float(arrays["k1"]), float(arrays["b"]), str(arrays["idf_variant"])
        _check_parameters(k1, b, idf_variant)
        return cls(vocabulary, counts, weights, chunk_lengths, k1, b, idf_variant)


def bm25_index_from_counts(
    term_counts: search.TermCounts, k1: float = DEFAULT_K1, b: float = DEFAULT_B, idf: str = "lucene"
) -> BM25Index:
    """BM25 weights for already counted terms, so tf-idf and BM25 can share one count."""
    _check_parameters(k1, b, idf)
    counts = term_counts.counts
    if counts.shape[0] == 0:
        raise ValueError("cannot build a BM25 index over zero chunks")
    chunk_lengths = term_counts.chunk_lengths
    average = float(chunk_lengths.mean())
    idf_values = bm25_idf(np.diff(counts.indptr), counts.shape[0], idf)
    factors = length_factor(chunk_lengths, average, k1, b)
    # saturation(f, K) * idf per posting, computed in place: one float array per
    # posting alive at a time keeps the peak memory of indexing low.
    weights = counts.data.astype(np.float64)
    denominator = factors[counts.indices]
    denominator += weights
    weights *= k1 + 1.0
    weights /= denominator
    del denominator
    weights *= np.repeat(idf_values, np.diff(counts.indptr))
    return BM25Index(term_counts.vocabulary, counts, weights, chunk_lengths, float(k1), float(b), idf)


def build_bm25_index(
    chunk_terms: Sequence[Sequence[str]], k1: float = DEFAULT_K1, b: float = DEFAULT_B, idf: str = "lucene"
) -> BM25Index:
    """Index analyzed chunks (lists of terms, repeats kept) for BM25."""
    return bm25_index_from_counts(search.count_terms(chunk_terms), k1=k1, b=b, idf=idf)


def bm25_search(
    index: BM25Index,
    queries: Sequence[Sequence[str]],
    depth: int,
    tie_order: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
    engine: str = "auto",
) -> list[search.Ranking]:
    """The ``depth`` best chunks of each analyzed query.

    Every distinct query term counts once (the sum runs over distinct terms),
    and only chunks containing at least one query term are ranked; a query
    without known terms gets an empty ranking. ``allowed`` restricts the
    search to a subset of the chunks (a prefilter; see ``search.sparse_search``,
    which also says what ``engine`` picks).
    """
    indicators = search.query_term_counts(queries, index.column_of, distinct=True)
    signed = index.idf_variant != "lucene"
    return search.sparse_search(
        indicators,
        index.weight_matrix,
        depth,
        tie_order,
        signed=signed,
        allowed=allowed,
        term_bounds=None if signed else index.term_bounds,
        engine=engine,
    )


def bm25_scores(index: BM25Index, queries: Sequence[Sequence[str]]) -> np.ndarray:
    """Queries x chunks BM25 scores, 0 where no query term occurs."""
    indicators = search.query_term_counts(queries, index.column_of, distinct=True)
    return search.dense_scores(indicators, index.weight_matrix)


@dataclass(frozen=True)
class TermContribution:
    """One query term's share of one chunk's BM25 score, with its factors."""

    term: str
    position: int
    count: int
    idf: float
    length_factor: float
    saturation: float
    contribution: float


def bm25_breakdown(index: BM25Index, query_terms: Sequence[str]) -> list[TermContribution]:
    """Every (distinct query term, matching chunk) pair and the factors of its weight.

    This is the score written out term by term, for explaining a ranking;
    ordered by query term, then chunk position.
    """
    factors = length_factor(index.chunk_lengths, index.average_length, index.k1, index.b)
    counts = index.counts
    rows: list[TermContribution] = []
    for term in dict.fromkeys(query_terms):
        column = index.column_of.get(term)
        if column is None:
            continue
        start, end = counts.indptr[column], counts.indptr[column + 1]
        order = np.argsort(counts.indices[start:end], kind="stable") + start
        for posting in order:
            position = int(counts.indices[posting])
            count = int(counts.data[posting])
            factor = float(factors[position])
            rows.append(
                TermContribution(
                    term=term,
                    position=position,
                    count=count,
                    idf=float(index.idf[column]),
                    length_factor=factor,
                    saturation=float(saturation(np.array([count]), np.array([factor]), index.k1)[0]),
                    contribution=float(index.weights[posting]),
                )
            )
    return rows


# The bm25 kind's behaviour, as the table of kinds (rag/kinds.py) names it.


def index_entry(entry: Mapping, texts: Sequence[str]) -> BM25Index:
    """Fit the index a bm25 entry describes over chunk texts."""
    return build_bm25_index(analyze_entry(texts, entry), k1=entry["k1"], b=entry["b"], idf=entry["idf"])


def search_entry(
    index: BM25Index,
    entry: Mapping,
    query_texts: Sequence[str],
    depth: int,
    tie_order: np.ndarray | None,
    allowed: np.ndarray | None = None,
) -> list[search.Ranking]:
    """Rank the chunks for query texts as a bm25 entry analyzes them."""
    return bm25_search(index, analyze_entry(query_texts, entry), depth, tie_order, allowed=allowed)
