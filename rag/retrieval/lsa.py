"""Latent semantic analysis: a truncated SVD of the unit-length tf-idf matrix.

Chunks are embedded as X V_r (equal to U_r Σ_r) and queries by the same
projection onto the r right singular vectors; both are scaled to unit length
so a dot product is a cosine. Terms found in fewer than ``min_document_frequency``
chunks are left out: a term in a single chunk carries no co-occurrence
information and only adds columns.

Solver. On the collection's scale (a few thousand chunks, ~10,000 terms) a
dense SVD costs minutes on two cores, whereas ARPACK (``scipy.sparse.linalg.svds``)
computes the leading r triplets of the sparse matrix in seconds, converged to
machine precision (``tol=0``). ARPACK is deterministic once its start vector is
fixed, so the start vector comes from a seeded generator. When r approaches the
smaller side of the matrix, ARPACK cannot deliver (it needs r < min(shape)) and a
dense SVD costs about the same anyway, so the dense LAPACK routine is used. Either
way, each component's sign is fixed so that the largest-magnitude entry of its
right singular vector is positive (scikit-learn's convention), which makes the
embeddings reproducible across solvers and runs.

Measured single-threaded on the 2-core machine, for 3,000 x 10,000 with ~140,000
non-zeros: ARPACK 0.8 s for r = 128 and 10 s for r = 512, dense LAPACK 42 s.
Multi-threaded OpenBLAS on a loaded machine was several times slower than one
thread, so the workflow should run BLAS with one thread per job.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Unpack

import numpy as np
import scipy.sparse as sp

from rag.retrieval.search import (
    ExactSearchOptions,
    Ranking,
    TermCounts,
    count_terms,
    exact_search,
    query_term_counts,
    top_k,
    vocabulary_lookup,
)
from rag.retrieval.stored_arrays import field_arrays, field_names, require_arrays
from rag.retrieval.tfidf import normalized_rows, smoothed_idf, sublinear_tf, tfidf_weights
from rag.text import analyze_entry

# Below this many rows and columns a dense SVD takes well under a second.
DENSE_SVD_LIMIT = 400
# Singular values at or below this share of the largest are numerically zero:
# exact arithmetic would give 0 (a rank-deficient matrix: duplicate chunks, a
# chunk with no kept term), and what LAPACK returns instead is rounding noise,
# about 1e-15 of the largest. Their singular vectors are then arbitrary
# directions that differ from one BLAS kernel to the next, and a query's
# projection onto them would change its cosines. They are dropped.
RANK_TOLERANCE = 1e-10


@dataclass(frozen=True, eq=False)
class LSAModel:
    """What is needed to embed new queries and search the chunks.

    ``components`` is V_r (terms x r), ``chunk_embeddings`` the unit-length
    rows of X V_r. ``requested_dimensions`` records r as asked, in case it had
    to be clipped to what the matrix allows.
    """

    vocabulary: np.ndarray
    idf: np.ndarray
    components: np.ndarray
    singular_values: np.ndarray
    chunk_embeddings: np.ndarray
    requested_dimensions: int

    @property
    def dimensions(self) -> int:
        return len(self.singular_values)

    @cached_property
    def column_of(self) -> dict[str, int]:
        return vocabulary_lookup(self.vocabulary)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays for ``numpy.savez`` (no pickled objects): the fields, under their names."""
        return field_arrays(self)

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> LSAModel:
        require_arrays(arrays, field_names(cls), "LSA")
        keys = ("vocabulary", "idf", "components", "singular_values", "chunk_embeddings")
        vocabulary, idf, components, singular_values, chunk_embeddings = (
            np.asarray(arrays[key]) for key in keys
        )
        r = len(singular_values)
        if components.shape != (len(vocabulary), r) or chunk_embeddings.shape[1:] != (r,):
            raise ValueError(
                f"LSA arrays: components {components.shape} and embeddings {chunk_embeddings.shape} "
                f"do not match {len(vocabulary)} terms and {r} dimensions"
            )
        return cls(
            vocabulary,
            idf,
            components,
            singular_values,
            chunk_embeddings,
            int(arrays["requested_dimensions"]),
        )


def lsa_term_matrix(
    term_counts: TermCounts, min_document_frequency: int = 2
) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix]:
    """The kept vocabulary, its idf and the unit-length tf-idf rows X over it.

    The idf uses the whole collection (N chunks, each term's own document
    frequency); rows are normalized after dropping the rare terms, so every
    chunk with at least one kept term is a unit vector.
    """
    if min_document_frequency < 1:
        raise ValueError(f"min_document_frequency must be at least 1, got {min_document_frequency}")
    counts = term_counts.counts
    document_frequency = np.diff(counts.indptr)
    kept = np.flatnonzero(document_frequency >= min_document_frequency)
    if len(kept) == 0:
        raise ValueError(
            f"no term occurs in {min_document_frequency} or more chunks; LSA has nothing to factorize"
        )
    idf = smoothed_idf(document_frequency[kept], counts.shape[0])
    matrix = normalized_rows(tfidf_weights(counts[:, kept], idf))
    return term_counts.vocabulary[kept], idf, matrix


def _fix_signs(u: np.ndarray, vt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    largest = np.argmax(np.abs(vt), axis=1)
    signs = np.sign(vt[np.arange(len(vt)), largest])
    signs[signs == 0] = 1.0
    return u * signs, vt * signs[:, np.newaxis]


def truncated_svd(
    matrix: sp.spmatrix, dimensions: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The leading ``dimensions`` singular triplets (U, s, Vt), largest first, signs fixed."""
    smaller = min(matrix.shape)
    if not 1 <= dimensions <= smaller:
        raise ValueError(f"cannot take {dimensions} singular vectors of a {matrix.shape} matrix")
    if max(matrix.shape) <= DENSE_SVD_LIMIT or 2 * dimensions >= smaller:
        u, s, vt = np.linalg.svd(matrix.toarray(), full_matrices=False)
        u, s, vt = u[:, :dimensions], s[:dimensions], vt[:dimensions]
    else:
        import scipy.sparse.linalg as sparse_linalg  # only fitting needs ARPACK, not querying

        start = np.random.default_rng(seed).uniform(-1.0, 1.0, smaller)
        u, s, vt = sparse_linalg.svds(sp.csr_matrix(matrix, dtype=np.float64), k=dimensions, tol=0, v0=start)
        order = np.argsort(-s, kind="stable")
        u, s, vt = u[:, order], s[order], vt[order]
    u, vt = _fix_signs(u, vt)
    return u, s, vt


def numerical_rank(singular_values: np.ndarray) -> int:
    """How many of the (descending) singular values lie above ``RANK_TOLERANCE`` of the largest."""
    if len(singular_values) == 0 or singular_values[0] <= 0:
        return 0
    return int(np.count_nonzero(singular_values > RANK_TOLERANCE * singular_values[0]))


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    lengths = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(lengths > 0, lengths, 1.0)


def fit_lsa_from_counts(
    term_counts: TermCounts, dimensions: int, min_document_frequency: int = 2, seed: int = 0
) -> LSAModel:
    """Fit LSA with r = ``dimensions``.

    r cannot exceed the smaller side of X (chunks or kept terms); a larger
    request is clipped to that bound with a warning, and the model records both.
    Components whose singular value is numerically zero (``RANK_TOLERANCE``)
    are dropped as well, silently: they carry no information, only noise.
    ``seed`` fixes ARPACK's start vector; the converged result does not depend
    on it beyond rounding, but a fixed one makes runs bit-identical.
    """
    if isinstance(dimensions, bool) or not isinstance(dimensions, int | np.integer) or dimensions < 1:
        raise ValueError(f"LSA dimensions must be a positive integer, got {dimensions!r}")
    vocabulary, idf, matrix = lsa_term_matrix(term_counts, min_document_frequency)
    used = min(dimensions, *matrix.shape)
    if used < dimensions:
        warnings.warn(
            f"LSA: {dimensions} dimensions requested but the tf-idf matrix is {matrix.shape[0]} x "
            f"{matrix.shape[1]}; using {used}",
            stacklevel=2,
        )
    _, s, vt = truncated_svd(matrix, used, seed=seed)
    # Only the numerically non-zero components are kept (RANK_TOLERANCE), so
    # r can be smaller than asked on a rank-deficient matrix; the model
    # records the request beside what it kept.
    kept = max(1, numerical_rank(s))
    s, vt = s[:kept], vt[:kept]
    components = np.ascontiguousarray(vt.T)
    # X V_r rather than U_r Σ_r: equal in exact arithmetic, but a chunk with no
    # kept term then gets an exactly zero row instead of rounding noise that
    # normalization would blow up to a unit vector.
    embeddings = _unit_rows(np.asarray(matrix @ components))
    return LSAModel(vocabulary, idf, components, s, embeddings, int(dimensions))


def fit_lsa(
    chunk_terms: Sequence[Sequence[str]], dimensions: int, min_document_frequency: int = 2, seed: int = 0
) -> LSAModel:
    """Fit LSA on analyzed chunks (lists of terms, repeats kept)."""
    return fit_lsa_from_counts(count_terms(chunk_terms), dimensions, min_document_frequency, seed)


def embed_queries(model: LSAModel, queries: Sequence[Sequence[str]]) -> np.ndarray:
    """Unit-length query embeddings; a query with no kept term is the zero vector."""
    embeddings = np.zeros((len(queries), model.dimensions))
    for row, (columns, counts) in enumerate(query_term_counts(queries, model.column_of, distinct=False)):
        # Normalizing before the projection is skipped: the result is scaled to unit length anyway.
        embeddings[row] = (sublinear_tf(counts) * model.idf[columns]) @ model.components[columns]
    return _unit_rows(embeddings)


def lsa_search(
    model: LSAModel,
    queries: Sequence[Sequence[str]],
    depth: int,
    tie_order: np.ndarray | None = None,
    **options: Unpack[ExactSearchOptions],
) -> list[Ranking]:
    """Exact cosine search of the chunk embeddings (empty ranking for a query with no kept term).

    ``options`` are the keywords of ``exact_search``, passed on as given:
    ``allowed`` restricts the search to a subset of the chunks (a prefilter),
    ``batch_size`` sets how many queries one matrix product serves.
    """
    return exact_search(model.chunk_embeddings, embed_queries(model, queries), depth, tie_order, **options)


def term_embeddings(model: LSAModel) -> np.ndarray:
    """Rows of V_r Σ_r: terms that occur in similar chunks get similar rows."""
    return model.components * model.singular_values


def nearest_terms(model: LSAModel, term: str, count: int = 10) -> list[tuple[str, float]]:
    """The ``count`` terms closest to ``term`` by cosine of their embeddings, ties by vocabulary order."""
    column = model.column_of.get(term)
    if column is None:
        raise ValueError(f"term {term!r} is not in the LSA vocabulary")
    embeddings = _unit_rows(term_embeddings(model))
    scores = embeddings @ embeddings[column]
    scores[column] = -np.inf
    ranking = top_k(scores, min(count, len(scores) - 1))
    return [
        (str(model.vocabulary[p]), float(s)) for p, s in zip(ranking.positions, ranking.scores, strict=True)
    ]


# The lsa kind's behaviour, as the table of kinds (rag/kinds.py) names it.


def index_entry(entry: Mapping, texts: Sequence[str]) -> LSAModel:
    """Fit the model an lsa entry describes over chunk texts."""
    return fit_lsa(analyze_entry(texts, entry), entry["dimensions"], entry["min_df"])


def search_entry(
    model: LSAModel,
    entry: Mapping,
    query_texts: Sequence[str],
    depth: int,
    tie_order: np.ndarray | None,
    allowed: np.ndarray | None = None,
) -> list[Ranking]:
    """Rank the chunks for query texts as an lsa entry analyzes them."""
    return lsa_search(model, analyze_entry(query_texts, entry), depth, tie_order, allowed=allowed)


def embed_entry(model: LSAModel, entry: Mapping, query_texts: Sequence[str]) -> np.ndarray:
    """Query vectors in the model's space (zeros for a query with no kept term)."""
    return embed_queries(model, analyze_entry(query_texts, entry))
