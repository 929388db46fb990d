"""tf-idf with sublinear term frequency and cosine scoring.

The weights follow scikit-learn's conventions (smoothed idf, ``1 + ln f``) so
that TfidfVectorizer can check them. Raw counts (``sublinear=False``) remain
available: the spec's worked example is computed with them (its d2 and d3
repeat a term, and its numbers need a weight of exactly 2 for two occurrences).

Chunk weights are stored unnormalized together with each chunk's vector
length: cosine divides by both lengths at query time, and the raw dot product
ablation (which lets long chunks win simply by containing more terms) uses the
same index without the division.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from rag.retrieval import search
from rag.retrieval.stored_arrays import require_arrays, term_matrix_arrays
from rag.text import analyze_entry


def smoothed_idf(document_frequency: np.ndarray, n_chunks: int) -> np.ndarray:
    """ln((1 + N) / (1 + n)) + 1: as if one extra chunk held every term, and never zero."""
    document_frequency = np.asarray(document_frequency, dtype=np.float64)
    return np.log((1.0 + n_chunks) / (1.0 + document_frequency)) + 1.0


def sublinear_tf(counts: np.ndarray) -> np.ndarray:
    """1 + ln f for f >= 1: the tenth occurrence adds far less than the first."""
    return 1.0 + np.log(np.asarray(counts, dtype=np.float64))


def term_frequency(counts: np.ndarray, sublinear: bool) -> np.ndarray:
    """The tf factor as a new float array (callers scale it in place)."""
    return sublinear_tf(counts) if sublinear else np.array(counts, dtype=np.float64)


def _row_lengths(matrix: sp.spmatrix) -> np.ndarray:
    """Euclidean length of every row, from the stored values without copying the matrix."""
    if matrix.format == "csc":
        rows = matrix.indices
    else:
        matrix = sp.csr_matrix(matrix)
        rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    return np.sqrt(np.bincount(rows, weights=np.square(matrix.data), minlength=matrix.shape[0]))


def _safe(lengths: np.ndarray) -> np.ndarray:
    # An all-zero vector has no matches; dividing by 1 keeps its zeros zero instead of NaN.
    return np.where(lengths > 0, lengths, 1.0)


@dataclass(frozen=True, eq=False)
class TfidfIndex:
    """Unnormalized tf-idf weights (chunks x terms, CSC) and each chunk's vector length.

    ``sublinear`` is kept with the weights because queries must be weighted
    the same way as the chunks.
    """

    vocabulary: np.ndarray
    weights: sp.csc_matrix
    idf: np.ndarray
    chunk_norms: np.ndarray
    sublinear: bool = True

    @property
    def n_chunks(self) -> int:
        return self.weights.shape[0]

    @cached_property
    def column_of(self) -> dict[str, int]:
        return search.vocabulary_lookup(self.vocabulary)

    @cached_property
    def chunk_scale(self) -> np.ndarray:
        return _safe(self.chunk_norms)

    @cached_property
    def term_bounds(self) -> np.ndarray:
        """Each term's largest weight: the most it adds to a raw dot product, per unit of query weight."""
        return search.column_maxima(self.weights.indptr, self.weights.data)

    @cached_property
    def cosine_bounds(self) -> np.ndarray:
        """Each term's largest weight divided by its chunk's length: the bound for cosine scores."""
        weights = self.weights
        return search.column_maxima(weights.indptr, weights.data, self.chunk_scale, weights.indices)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays for ``numpy.savez`` (no pickled objects)."""
        return {
            **term_matrix_arrays(self.vocabulary, self.weights, "weights"),
            "idf": self.idf,
            "chunk_norms": self.chunk_norms,
            "sublinear": np.array(self.sublinear),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> TfidfIndex:
        keys = ("vocabulary", "indptr", "indices", "weights", "idf", "chunk_norms", "sublinear")
        require_arrays(arrays, keys, "index")
        vocabulary = np.asarray(arrays["vocabulary"])
        chunk_norms = np.asarray(arrays["chunk_norms"], dtype=np.float64)
        idf = np.asarray(arrays["idf"], dtype=np.float64)
        if idf.shape != vocabulary.shape or len(arrays["indptr"]) != len(vocabulary) + 1:
            raise ValueError(f"tf-idf arrays: idf and indptr do not match the {len(vocabulary)} terms")
        weights = sp.csc_matrix(
            (np.asarray(arrays["weights"], dtype=np.float64), arrays["indices"], arrays["indptr"]),
            shape=(len(chunk_norms), len(vocabulary)),
        )
        return cls(vocabulary, weights, idf, chunk_norms, bool(arrays["sublinear"]))


def tfidf_weights(counts: sp.csc_matrix, idf: np.ndarray, sublinear: bool = True) -> sp.csc_matrix:
    """tf times idf for every stored count, keeping the CSC structure."""
    counts = sp.csc_matrix(counts)
    data = term_frequency(counts.data, sublinear)
    data *= np.repeat(idf, np.diff(counts.indptr))
    return sp.csc_matrix((data, counts.indices, counts.indptr), shape=counts.shape)


def tfidf_index_from_counts(term_counts: search.TermCounts, sublinear: bool = True) -> TfidfIndex:
    counts = term_counts.counts
    if counts.shape[0] == 0:
        raise ValueError("cannot build a tf-idf index over zero chunks")
    idf = smoothed_idf(np.diff(counts.indptr), counts.shape[0])
    weights = tfidf_weights(counts, idf, sublinear)
    return TfidfIndex(term_counts.vocabulary, weights, idf, _row_lengths(weights), bool(sublinear))


def build_tfidf_index(chunk_terms: Sequence[Sequence[str]], sublinear: bool = True) -> TfidfIndex:
    """Index analyzed chunks (lists of terms, repeats kept) for tf-idf."""
    return tfidf_index_from_counts(search.count_terms(chunk_terms), sublinear)


def query_weights(index: TfidfIndex, queries: Sequence[Sequence[str]]) -> list[search.QueryVector]:
    """Queries weighted like chunks: tf of the query counts times idf, as (columns, weights).

    Terms the collection never saw are dropped: with no chunk to match they
    would only change the query's length, which cosine ignores anyway.
    """
    return [
        (columns, term_frequency(counts, index.sublinear) * index.idf[columns])
        for columns, counts in search.query_term_counts(queries, index.column_of, distinct=False)
    ]


def query_lengths(vectors: Sequence[search.QueryVector]) -> np.ndarray:
    """Euclidean length of each query vector."""
    return np.array([np.sqrt(weights @ weights) for _, weights in vectors], dtype=np.float64)


def tfidf_search(
    index: TfidfIndex,
    queries: Sequence[Sequence[str]],
    depth: int,
    tie_order: np.ndarray | None = None,
    normalize: bool = True,
    allowed: np.ndarray | None = None,
    engine: str = "auto",
) -> list[search.Ranking]:
    """The ``depth`` best chunks of each analyzed query by cosine (or raw dot product).

    Only chunks sharing a term with the query are ranked; a query without known
    terms gets an empty ranking. ``allowed`` restricts the search to a subset
    of the chunks (a prefilter; see ``search.sparse_search``, which also says
    what ``engine`` picks).
    """
    weighted = query_weights(index, queries)
    if not normalize:
        return search.sparse_search(
            weighted,
            index.weights,
            depth,
            tie_order,
            allowed=allowed,
            term_bounds=index.term_bounds,
            engine=engine,
        )
    return search.sparse_search(
        weighted,
        index.weights,
        depth,
        tie_order,
        chunk_scale=index.chunk_scale,
        query_scale=_safe(query_lengths(weighted)),
        allowed=allowed,
        term_bounds=index.cosine_bounds,
        engine=engine,
    )


def tfidf_scores(index: TfidfIndex, queries: Sequence[Sequence[str]], normalize: bool = True) -> np.ndarray:
    """Queries x chunks scores (cosine, or raw dot products), 0 where nothing matches."""
    weighted = query_weights(index, queries)
    if not normalize:
        return search.dense_scores(weighted, index.weights)
    return search.dense_scores(
        weighted, index.weights, chunk_scale=index.chunk_scale, query_scale=_safe(query_lengths(weighted))
    )


def normalized_rows(matrix: sp.spmatrix) -> sp.csr_matrix:
    """The rows of a sparse matrix scaled to unit length (all-zero rows stay zero)."""
    matrix = sp.csr_matrix(matrix, dtype=np.float64)
    lengths = _safe(_row_lengths(matrix))
    return sp.csr_matrix(sp.diags(1.0 / lengths) @ matrix)


# The tfidf kind's behaviour, as the table of kinds (rag/kinds.py) names it.


def index_entry(entry: Mapping, texts: Sequence[str]) -> TfidfIndex:
    """Fit the index a tfidf entry describes over chunk texts."""
    return build_tfidf_index(analyze_entry(texts, entry), sublinear=entry["sublinear"])


def search_entry(
    index: TfidfIndex,
    entry: Mapping,
    query_texts: Sequence[str],
    depth: int,
    tie_order: np.ndarray | None,
    allowed: np.ndarray | None = None,
) -> list[search.Ranking]:
    """Rank the chunks for query texts as a tfidf entry analyzes and normalizes them."""
    queries = analyze_entry(query_texts, entry)
    return tfidf_search(index, queries, depth, tie_order, normalize=entry["normalize"], allowed=allowed)
