"""Rankings: from scores to the best chunks, and the term matrices the sparse retrievers share.

Every retriever ends the same way: a score per chunk, and the ``depth`` best
of them in order. Doing that in one place keeps tie-breaking identical across
retrievers, so two runs (or two retrievers that agree on scores) always return
the same list. Ties are broken by ``tie_order``, each chunk's rank in chunk-id
order, which the pipeline passes so that results do not depend on the order in
which chunks happened to be indexed.

The sparse retrievers (BM25 and tf-idf) differ only in the weight they give a
term in a chunk; both keep those weights in a chunks x terms CSC matrix, whose
columns are exactly the postings lists of an inverted index.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

# scipy.sparse is imported by the functions that build sparse matrices: fusion
# and dense search use this module too, and their short pipeline jobs should
# not pay for loading scipy.

# The precision contract (docs/formats.md). Two machines compute a score with
# different BLAS kernels and summation orders, so they agree only to about 1e-15
# of its size, and two chunks whose scores are equal in exact arithmetic may
# come out in either order. Every score is therefore rounded to this many
# decimals before any comparison, and the rounded value is what a ranking
# stores: scores that agree to the contract are equal, and their order is
# settled by chunk id, the same on every machine.
SCORE_DECIMALS = 9


def stable_scores(scores: np.ndarray) -> np.ndarray:
    """Scores rounded to ``SCORE_DECIMALS`` decimals (-0.0 as 0.0; infinities kept).

    Rounding is exact IEEE arithmetic, so every machine rounds a given
    float64 to the same value; only scores within rounding noise of a
    rounding boundary (about one in 10^6) can still land differently.
    """
    return np.round(np.asarray(scores, dtype=np.float64), SCORE_DECIMALS) + 0.0


@dataclass(frozen=True, eq=False)
class Ranking:
    """The retrieved chunks of one query, best first.

    ``positions`` index the chunk table, so a ranking stays a pair of small
    arrays until someone needs the chunk ids.
    """

    positions: np.ndarray
    scores: np.ndarray

    def __post_init__(self) -> None:
        positions = np.asarray(self.positions, dtype=np.int64)
        scores = np.asarray(self.scores, dtype=np.float64)
        if positions.ndim != 1 or positions.shape != scores.shape:
            raise ValueError(
                f"a ranking needs one score per position, got {positions.shape} positions "
                f"and {scores.shape} scores"
            )
        object.__setattr__(self, "positions", positions)
        object.__setattr__(self, "scores", scores)

    def __len__(self) -> int:
        return len(self.positions)

    @classmethod
    def empty(cls) -> Ranking:
        return cls(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64))


def chunk_id_order(chunk_ids: Sequence[str]) -> np.ndarray:
    """Each chunk's rank in sorted chunk-id order: the ``tie_order`` of the pipeline."""
    ids = list(chunk_ids)
    if len(set(ids)) != len(ids):
        duplicate = next(chunk_id for chunk_id, count in Counter(ids).items() if count > 1)
        raise ValueError(f"chunk id {duplicate!r} occurs more than once")
    order = np.empty(len(ids), dtype=np.int64)
    order[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
    return order


def ranked_ids(ranking: Ranking, chunk_ids: Sequence[str]) -> list[str]:
    """The chunk ids of a ranking, best first."""
    return [chunk_ids[position] for position in ranking.positions]


def _resolve_tie_order(tie_order: np.ndarray | None, size: int) -> np.ndarray:
    if tie_order is None:
        return np.arange(size, dtype=np.int64)
    tie_order = np.asarray(tie_order)
    if tie_order.shape != (size,):
        raise ValueError(f"tie_order must give one rank per chunk ({size}), got shape {tie_order.shape}")
    return tie_order


def check_allowed(allowed: np.ndarray | None, size: int) -> np.ndarray | None:
    """A prefilter as a boolean mask over the ``size`` chunk positions (None: every chunk).

    Searches take the mask, not a list of ids, so that a filtered-out chunk is
    removed before any score is compared: it can never be ranked, whatever
    the depth.
    """
    if allowed is None:
        return None
    allowed = np.asarray(allowed)
    if allowed.dtype != np.bool_ or allowed.shape != (size,):
        raise ValueError(
            f"the allowed chunks must be a boolean mask over the {size} chunks, "
            f"got dtype {allowed.dtype} and shape {allowed.shape}"
        )
    return allowed


def _check_depth(depth: int) -> None:
    if isinstance(depth, bool) or not isinstance(depth, int | np.integer) or depth < 0:
        raise ValueError(f"depth must be a non-negative integer, got {depth!r}")


# The compiled loop estimates the share of chunks a prefilter allows from this many of them.
ALLOWED_SAMPLE = 4096

# Above this many scores, a strided sample first bounds the k-th best score
# from below, so the exact selection only sees the few scores above the bound.
SAMPLE_SIZE = 1024


def _best(scores: np.ndarray, depth: int, ties: np.ndarray | None, floor: float = -np.inf) -> np.ndarray:
    """Indices of the ``depth`` best scores above ``floor``, best first, ties by ``ties``.

    A full sort costs O(n log n) per query. Instead, the k-th largest score of
    a strided sample is a lower bound on the k-th largest overall (a sample's
    k-th best cannot beat the whole set's), so every winner scores at least
    that much; one comparison over all n scores keeps only those, typically a
    few hundred. ``argpartition`` then finds the exact boundary score among
    them and only the winners are sorted. Scores tied with the boundary are
    settled by ``ties`` (None: the index itself) before the cut, so the result
    never depends on which of them the partition happened to pick.

    Scores at or below ``floor`` are never chosen (-inf, or 0 for sparse
    scores where exactly the non-matching chunks score 0).
    """
    n = len(scores)
    if depth == 0 or n == 0:
        return np.empty(0, dtype=np.int64)
    stride = n // SAMPLE_SIZE
    if stride >= 4 and depth * 8 < SAMPLE_SIZE:
        sample = scores[::stride]
        bound = np.partition(sample, len(sample) - depth)[len(sample) - depth]
        candidates = np.flatnonzero(scores >= bound) if bound > floor else np.flatnonzero(scores > floor)
    else:
        candidates = np.flatnonzero(scores > floor)
    values = scores[candidates]
    if depth < len(candidates):
        boundary = np.partition(values, len(values) - depth)[len(values) - depth]
        above = candidates[values > boundary]
        tied = candidates[values == boundary]
        needed = depth - len(above)
        if len(tied) > needed:
            tied_ties = tied if ties is None else ties[tied]
            tied = tied[np.argpartition(tied_ties, needed - 1)[:needed]]
        candidates = np.concatenate((above, tied))
    candidate_ties = candidates if ties is None else ties[candidates]
    return candidates[np.lexsort((candidate_ties, -scores[candidates]))]


def top_k_among(
    positions: np.ndarray, scores: np.ndarray, depth: int, tie_order: np.ndarray | None = None
) -> Ranking:
    """The ``depth`` best of some candidate chunks, ties broken by ``tie_order``.

    ``tie_order`` is indexed by chunk position (None: the position itself).
    A score of -inf marks a candidate that must not be ranked at all.
    """
    _check_depth(depth)
    positions = np.asarray(positions, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    if positions.shape != scores.shape or positions.ndim != 1:
        raise ValueError(f"positions {positions.shape} and scores {scores.shape} must be equal 1-d shapes")
    if np.isnan(scores).any():
        bad = positions[np.flatnonzero(np.isnan(scores))[0]]
        raise ValueError(f"the score of chunk position {bad} is NaN")
    ties = positions if tie_order is None else np.asarray(tie_order)[positions]
    scores = stable_scores(scores)
    chosen = _best(scores, depth, ties)
    return Ranking(positions[chosen], scores[chosen])


def top_k(scores: np.ndarray, depth: int, tie_order: np.ndarray | None = None) -> Ranking:
    """The ``depth`` best chunks of a full score vector, ties broken by ``tie_order``.

    A score of -inf marks a chunk that must not be ranked at all.
    """
    _check_depth(depth)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1:
        raise ValueError(f"scores must be one vector, got shape {scores.shape}")
    if np.isnan(scores).any():
        raise ValueError(f"the score of chunk position {np.flatnonzero(np.isnan(scores))[0]} is NaN")
    ties = None if tie_order is None else _resolve_tie_order(tie_order, len(scores))
    scores = stable_scores(scores)
    chosen = _best(scores, depth, ties)
    return Ranking(chosen, scores[chosen])


# --------------------------------------------------------------------------
# Exact dense search
# --------------------------------------------------------------------------


class ExactSearchOptions(TypedDict, total=False):
    """The keywords of :func:`exact_search` after the tie order.

    A search that only passes them on (:func:`rag.retrieval.lsa.lsa_search`)
    takes ``**options: Unpack[ExactSearchOptions]`` rather than repeating the
    parameters, so their defaults stay in one place: :func:`exact_search`'s signature.
    """

    batch_size: int
    allowed: np.ndarray | None


def exact_search(
    matrix: np.ndarray,
    queries: np.ndarray,
    depth: int,
    tie_order: np.ndarray | None = None,
    batch_size: int = 1024,
    allowed: np.ndarray | None = None,
) -> list[Ranking]:
    """Exact nearest neighbours by dot product (cosine for unit vectors).

    Queries are multiplied in batches so one BLAS call serves many queries
    without holding a (queries x chunks) matrix for the whole set. A query
    vector that is all zeros (none of its terms is known to the encoder)
    returns an empty ranking: ranking every chunk at score 0 would pretend to
    an answer.

    ``allowed`` (a boolean mask over the chunks) is a prefilter: only the
    allowed rows are multiplied at all, so the other chunks are never scored.
    """
    _check_depth(depth)
    matrix = np.asarray(matrix, dtype=np.float64)
    queries = np.asarray(queries, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"the chunk embeddings must be a matrix, got shape {matrix.shape}")
    if queries.ndim == 1:
        queries = queries[np.newaxis, :]
    if queries.ndim != 2 or queries.shape[1] != matrix.shape[1]:
        raise ValueError(
            f"query embeddings of shape {queries.shape} do not match chunk embeddings of "
            f"dimension {matrix.shape[1]}"
        )
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    if tie_order is not None:
        tie_order = _resolve_tie_order(tie_order, matrix.shape[0])
    allowed = check_allowed(allowed, matrix.shape[0])
    rows = np.arange(matrix.shape[0]) if allowed is None else np.flatnonzero(allowed)
    if allowed is not None:
        matrix = matrix[rows]
        tie_order = rows if tie_order is None else tie_order[rows]
    rankings: list[Ranking] = []
    for start in range(0, len(queries), batch_size):
        block = queries[start : start + batch_size]
        scores = stable_scores(block @ matrix.T)
        for query, row in zip(block, scores, strict=True):
            if not query.any():
                rankings.append(Ranking.empty())
            else:
                chosen = _best(row, depth, tie_order)
                rankings.append(Ranking(rows[chosen], row[chosen]))
    return rankings


# --------------------------------------------------------------------------
# Sparse term matrices shared by BM25 and tf-idf
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TermCounts:
    """How often each term occurs in each chunk.

    ``vocabulary`` is sorted, so a term's column does not depend on the order
    in which chunks were indexed; ``counts`` is chunks x terms in CSC layout,
    i.e. one postings list (chunk positions and counts) per term.
    """

    vocabulary: np.ndarray
    counts: sp.csc_matrix

    @property
    def chunk_lengths(self) -> np.ndarray:
        return np.asarray(self.counts.sum(axis=1)).ravel().astype(np.int64)

    @property
    def document_frequency(self) -> np.ndarray:
        return np.diff(self.counts.indptr).astype(np.int64)


def count_terms(chunk_terms: Sequence[Sequence[str]]) -> TermCounts:
    """Build the term-count matrix of analyzed chunks.

    The only Python-level loop is one dictionary lookup per token; grouping the
    tokens into postings is a single COO-to-CSC conversion, which sums repeated
    (chunk, term) pairs in compiled code.
    """
    for position, terms in enumerate(chunk_terms):
        if isinstance(terms, str):
            raise ValueError(f"chunk {position} must be a list of terms, got the string {terms[:40]!r}")
    lengths = np.fromiter((len(terms) for terms in chunk_terms), dtype=np.int64, count=len(chunk_terms))
    flat = list(itertools.chain.from_iterable(chunk_terms))
    if flat and not isinstance(flat[0], str):
        # Checking every token would cost as much as indexing; nested lists show up here.
        raise ValueError(f"terms must be strings, got {flat[0]!r}")
    vocabulary = sorted(set(flat))
    column_of = dict(zip(vocabulary, range(len(vocabulary)), strict=True))
    # 32-bit positions halve the peak memory of indexing; they hold up to 2**31 chunks and terms.
    columns = np.fromiter(map(column_of.__getitem__, flat), dtype=np.int32, count=len(flat))
    del flat
    import scipy.sparse as sp

    rows = np.repeat(np.arange(len(lengths), dtype=np.int32), lengths)
    counts = sp.csc_matrix(
        (np.ones(len(columns), dtype=np.int32), (rows, columns)), shape=(len(lengths), len(vocabulary))
    )
    del rows, columns
    counts.sum_duplicates()
    return TermCounts(vocabulary=np.array(vocabulary, dtype=np.str_), counts=counts)


def vocabulary_lookup(vocabulary: np.ndarray) -> dict[str, int]:
    """Term -> column, for turning query terms into matrix columns."""
    return {str(term): column for column, term in enumerate(vocabulary.tolist())}


# A query as the columns of its known terms and one weight per column.
QueryVector = tuple[np.ndarray, np.ndarray]


def query_term_counts(
    queries: Sequence[Sequence[str]], column_of: dict[str, int], distinct: bool
) -> list[QueryVector]:
    """Each query's known terms as (columns, counts), in order of first occurrence.

    ``distinct`` counts a repeated query term once, as BM25's sum over the
    distinct query terms requires; tf-idf weights the repeats instead.
    Unknown terms cannot match any chunk and are dropped. Plain arrays rather
    than a sparse matrix: building a scipy matrix costs more than scoring a
    single query on a small collection.
    """
    vectors: list[QueryVector] = []
    for terms in queries:
        if isinstance(terms, str):
            raise ValueError(f"a query must be a list of terms, got the string {terms!r}")
        counts: dict[int, int] = {}
        for term in terms:
            column = column_of.get(term)
            if column is not None:
                counts[column] = 1 if distinct else counts.get(column, 0) + 1
        vectors.append(
            (
                np.fromiter(counts.keys(), np.int64, len(counts)),
                np.fromiter(counts.values(), np.float64, len(counts)),
            )
        )
    return vectors


def query_matrix(vectors: Sequence[QueryVector], n_columns: int) -> sp.csr_matrix:
    """Queries x terms sparse matrix of query vectors, for products with many queries at once."""
    lengths = [len(columns) for columns, _ in vectors]
    indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    columns = np.concatenate([columns for columns, _ in vectors]) if vectors else np.empty(0, np.int64)
    weights = np.concatenate([weights for _, weights in vectors]) if vectors else np.empty(0)
    import scipy.sparse as sp

    return sp.csr_matrix((weights, columns, indptr), shape=(len(vectors), n_columns))


def sparse_search(
    queries: Sequence[QueryVector],
    chunk_weights: sp.csc_matrix,
    depth: int,
    tie_order: np.ndarray | None = None,
    signed: bool = False,
    chunk_scale: np.ndarray | None = None,
    query_scale: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
    term_bounds: np.ndarray | None = None,
    engine: str = "auto",
) -> list[Ranking]:
    """Score each query by adding up its terms' postings, and keep the best.

    A query's scores are one weighted ``bincount`` over the concatenated
    postings of its terms: a single pass in compiled code over exactly the
    postings the query touches, with no per-posting Python loop. Only chunks
    that share at least one term with the query are ranked. With positive
    weights those are exactly the chunks scoring above 0; with signed weights
    (the classic idf can be 0 or negative) a match can sum to exactly 0, so
    ``signed=True`` marks the others with -inf instead.

    ``chunk_scale`` and ``query_scale`` divide the scores (tf-idf's vector
    lengths), so one unnormalized matrix serves both cosine and raw dot products.

    ``allowed`` (a boolean mask over the chunks) is a prefilter: postings of
    other chunks are dropped before they are added up, so a filtered-out
    chunk never gets a score and can never be ranked.

    ``engine`` picks the loop: "numpy" (below), "compiled" (numba,
    :mod:`rag.retrieval.sparse_kernels`), or "auto": compiled where numba is
    installed and it pays (:func:`compiled_pays`: a batch large enough to pay
    for loading it, or a process that has loaded it already). Both give the
    same rankings, scores included. ``term_bounds`` (one per column: an upper
    bound of its weights, each divided by its chunk's ``chunk_scale`` where
    there is one; None where weights can be negative) lets the compiled loop
    skip postings that cannot reach the top ``depth`` (MaxScore).
    """
    _check_depth(depth)
    n_chunks = chunk_weights.shape[0]
    if tie_order is not None:
        tie_order = _resolve_tie_order(tie_order, n_chunks)
    allowed = check_allowed(allowed, n_chunks)
    if chunk_weights.format != "csc":
        chunk_weights = chunk_weights.tocsc()
    if _use_compiled(engine, n_chunks, len(queries)):
        return _compiled_search(
            queries, chunk_weights, depth, tie_order, signed, chunk_scale, query_scale, allowed, term_bounds
        )
    indptr, indices, data = chunk_weights.indptr, chunk_weights.indices, chunk_weights.data
    rankings: list[Ranking] = []
    for row, (terms, weights) in enumerate(queries):
        if len(terms) == 0:
            rankings.append(Ranking.empty())
            continue
        parts = [slice(indptr[term], indptr[term + 1]) for term in terms]
        matched_chunks = np.concatenate([indices[part] for part in parts])
        if np.all(weights == 1.0):
            contributions = np.concatenate([data[part] for part in parts])
        else:
            contributions = np.concatenate(
                [data[part] * weight for part, weight in zip(parts, weights, strict=True)]
            )
        if allowed is not None:
            kept = allowed[matched_chunks]
            matched_chunks, contributions = matched_chunks[kept], contributions[kept]
        # float64 even when the prefilter left no posting (bincount then counts in integers).
        scores = np.bincount(matched_chunks, weights=contributions, minlength=n_chunks).astype(np.float64)
        if chunk_scale is not None:
            scores /= chunk_scale
        if query_scale is not None:
            scores /= query_scale[row]
        if signed:
            unmatched = np.ones(n_chunks, dtype=bool)
            unmatched[matched_chunks] = False
            scores[unmatched] = -np.inf
        else:
            # Which chunks match is decided before rounding: a tiny positive
            # score stays a match even where it rounds to 0.
            scores[scores <= 0] = -np.inf
        scores = stable_scores(scores)
        chosen = _best(scores, depth, tie_order)
        rankings.append(Ranking(chosen, scores[chosen]))
    return rankings


# Where numba is installed, "auto" uses the compiled loop for a batch of queries that saves more than
# loading it costs a fresh process (importing numba, loading the cached machine code): from
# COMPILED_MIN_WORK chunk-queries (queries times chunks) on, the benchmark's choice
# (results/benchmarks/engine_crossover.csv: a fresh process pays about a third of a second; a query
# saves about a hundredth of a microsecond per chunk). A process that asks one question at a time
# switches once its numpy searches have done that much work (it has then spent about what loading
# would have cost: at most twice the better choice, whatever comes next). Once a process has
# loaded the loop, every search of at least COMPILED_MIN_CHUNKS chunks uses it: per query it is
# never slower there.
COMPILED_MIN_WORK = 40_000_000
COMPILED_MIN_CHUNKS = 10_000
ENGINES = ("auto", "compiled", "numpy")
# Whether this process has run the compiled loop (its machine code is loaded), and the chunk-queries
# its numpy loop has searched in collections the compiled loop would serve.
_compiled_loaded = False
_numpy_work = 0


def compiled_pays(n_chunks: int, n_queries: int, loaded: bool, done: int = 0) -> bool:
    """Whether "auto" runs the compiled loop for ``n_queries`` over ``n_chunks`` chunks.

    ``loaded``: this process has loaded it; ``done``: the chunk-queries its
    numpy loop has already searched in collections of at least
    ``COMPILED_MIN_CHUNKS`` chunks.
    """
    if n_chunks < COMPILED_MIN_CHUNKS:
        return False
    return loaded or done + n_chunks * n_queries >= COMPILED_MIN_WORK


def _use_compiled(engine: str, n_chunks: int, n_queries: int) -> bool:
    if engine not in ENGINES:
        raise ValueError(f"unknown search engine {engine!r}; choose one of {ENGINES}")
    global _numpy_work
    if engine == "numpy" or (
        engine == "auto" and not compiled_pays(n_chunks, n_queries, _compiled_loaded, _numpy_work)
    ):
        if n_chunks >= COMPILED_MIN_CHUNKS:
            _numpy_work += n_chunks * n_queries
        return False
    from rag.retrieval import sparse_kernels

    if not sparse_kernels.AVAILABLE:
        if engine == "compiled":
            raise ValueError("the compiled search engine needs numba: pip install -c constraints.txt numba")
        return False
    return True


_scratch = threading.local()
# Kept on each matrix: its indptr as int64, its values as float64, whether its postings are in chunk order.
_PREPARED = "_rag_compiled_arrays"


def _prepared_arrays(matrix: sp.csc_matrix) -> tuple[np.ndarray, np.ndarray, bool]:
    """The compiled loop's view of a matrix, converted once per matrix rather than once per call."""
    prepared = getattr(matrix, _PREPARED, None)
    if prepared is None or prepared[3] is not matrix.indices or prepared[4] is not matrix.data:
        prepared = (
            matrix.indptr.astype(np.int64, copy=False),
            np.asarray(matrix.data, dtype=np.float64),
            bool(matrix.has_canonical_format),
            matrix.indices,
            matrix.data,
        )
        setattr(matrix, _PREPARED, prepared)
    return prepared[:3]


def _scratch_arrays(n_chunks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-chunk accumulators for the compiled loop, kept between calls (one set per thread).

    The loop leaves them zero, so a call pays for the chunks it touches, not
    for zeroing arrays as long as the collection.
    """
    arrays = getattr(_scratch, "arrays", None)
    if arrays is None or len(arrays[0]) != n_chunks:
        arrays = (
            np.zeros(n_chunks, dtype=np.float64),
            np.zeros(n_chunks, dtype=np.bool_),
            np.empty(n_chunks, dtype=np.int64),
            np.empty(n_chunks, dtype=np.float64),
        )
        _scratch.arrays = arrays
    return arrays


def _compiled_search(
    queries: Sequence[QueryVector],
    chunk_weights: sp.csc_matrix,
    depth: int,
    tie_order: np.ndarray | None,
    signed: bool,
    chunk_scale: np.ndarray | None,
    query_scale: np.ndarray | None,
    allowed: np.ndarray | None,
    term_bounds: np.ndarray | None,
) -> list[Ranking]:
    """:func:`sparse_search` by the compiled loop (same arguments, checked)."""
    from rag.retrieval import sparse_kernels as kernels

    n_chunks = chunk_weights.shape[0]
    capacity = min(int(depth), n_chunks)
    n_queries = len(queries)
    if capacity == 0 or n_queries == 0:
        return [Ranking.empty() for _ in queries]
    # A single query (rag ask, a user's loop) skips the batch's concatenations: its own arrays go in.
    if n_queries == 1:
        columns, weights = queries[0]
        columns = np.asarray(columns, dtype=np.int64)
        weights = np.asarray(weights, dtype=np.float64)
        pointers = np.array((0, len(columns)), dtype=np.int64)
    else:
        lengths = np.fromiter((len(columns) for columns, _ in queries), dtype=np.int64, count=n_queries)
        pointers = np.zeros(n_queries + 1, dtype=np.int64)
        np.cumsum(lengths, out=pointers[1:])
        columns = np.concatenate([np.asarray(columns, dtype=np.int64) for columns, _ in queries])
        weights = np.concatenate([np.asarray(weights, dtype=np.float64) for _, weights in queries])
    scales = _ones(n_queries) if query_scale is None else np.asarray(query_scale, dtype=np.float64)
    # MaxScore walks each postings list in chunk order, which a canonical CSC matrix guarantees.
    indptr, data, canonical = _prepared_arrays(chunk_weights)
    use_bounds = term_bounds is not None and not signed and canonical
    accumulator, seen, touched, values = _scratch_arrays(n_chunks)
    # MaxScore's floor comes from exact scores of a few chunks, the largest weights of a window of
    # postings; where a prefilter hides some chunks, the window is proportionally longer, so that
    # it holds as many allowed ones. The share allowed is read from a strided sample: it only
    # sizes that effort, and counting a large mask on every call would cost a tenth of a top-10 query.
    prunes = kernels.prunes(n_chunks, capacity)
    spread = 1.0
    if allowed is not None and prunes:
        sample = allowed[:: max(1, n_chunks // ALLOWED_SAMPLE)]
        spread = 1.0 / max(np.count_nonzero(sample) / len(sample), 1 / 64)
    prime_postings = max(capacity, kernels.PRIME_POSTINGS)
    prime_window = int(max(kernels.PRIME_WINDOW, kernels.PRIME_WINDOW_DEPTHS * capacity) * spread)
    out_positions = np.empty((n_queries, capacity), dtype=np.int64)
    out_scores = np.empty((n_queries, capacity), dtype=np.float64)
    out_sizes = np.empty(n_queries, dtype=np.int64)
    kernels.search_batch(
        indptr,
        chunk_weights.indices,
        data,
        pointers,
        columns,
        weights,
        scales,
        np.asarray(term_bounds, dtype=np.float64) if use_bounds else _NO_FLOATS,
        use_bounds,
        allowed if allowed is not None else _NO_BOOLS,
        allowed is not None,
        np.asarray(chunk_scale, dtype=np.float64) if chunk_scale is not None else _NO_FLOATS,
        chunk_scale is not None,
        bool(signed),
        np.asarray(tie_order, dtype=np.int64) if tie_order is not None else _NO_INTS,
        tie_order is not None,
        capacity,
        prunes,
        kernels.PRUNE_MIN_POSTINGS,
        prime_postings,
        prime_window,
        kernels.ESSENTIAL_SHARE,
        kernels.SELECT_MIN_DEPTH,
        kernels.SELECT_FACTOR,
        kernels.SELECT_SAMPLE,
        accumulator,
        seen,
        touched,
        values,
        out_positions,
        out_scores,
        out_sizes,
    )
    global _compiled_loaded
    _compiled_loaded = True
    return [
        Ranking(out_positions[row, :size], out_scores[row, :size])
        for row, size in enumerate(out_sizes.tolist())
    ]


# Stand-ins for the compiled loop's unused arrays, and one query's scale, made once rather than per
# call. The loop never writes them (left writable: a read-only array would compile the loop again).
_NO_FLOATS = np.empty(0, dtype=np.float64)
_NO_INTS = np.empty(0, dtype=np.int64)
_NO_BOOLS = np.empty(0, dtype=np.bool_)
_ONE = np.ones(1, dtype=np.float64)


def _ones(count: int) -> np.ndarray:
    return _ONE if count == 1 else np.ones(count, dtype=np.float64)


# Postings per block when column_maxima divides values (bounds the temporary array).
COLUMN_BLOCK = 1 << 22


def column_maxima(
    indptr: np.ndarray, values: np.ndarray, divisors: np.ndarray | None = None, rows: np.ndarray | None = None
) -> np.ndarray:
    """Each CSC column's largest value (0 for an empty column), optionally each divided by its row's divisor.

    The sparse retrievers' per-term score bounds. Divided values are formed a
    block of postings at a time, so the peak memory stays small.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    maxima = np.zeros(len(indptr) - 1, dtype=np.float64)
    block = COLUMN_BLOCK
    edges = np.unique(
        np.concatenate(
            (np.searchsorted(indptr, np.arange(0, indptr[-1], block), "right") - 1, [len(indptr) - 1])
        )
    )
    for first, last in itertools.pairwise(edges.tolist()):
        start, stop = indptr[first], indptr[last]
        if stop == start:
            continue
        part = np.asarray(values[start:stop], dtype=np.float64)
        if divisors is not None:
            part = part / divisors[rows[start:stop]]
        lengths = np.diff(indptr[first : last + 1])
        filled = np.flatnonzero(lengths)
        maxima[first + filled] = np.maximum.reduceat(part, (indptr[first:last] - start)[filled])
    return maxima


def dense_scores(
    queries: Sequence[QueryVector],
    chunk_weights: sp.csc_matrix,
    chunk_scale: np.ndarray | None = None,
    query_scale: np.ndarray | None = None,
) -> np.ndarray:
    """Every (query, chunk) score as a dense matrix: for tests and small collections."""
    product = query_matrix(queries, chunk_weights.shape[1]) @ chunk_weights.T
    scores = np.asarray(product.toarray(), dtype=np.float64)
    if chunk_scale is not None:
        scores = scores / chunk_scale[np.newaxis, :]
    if query_scale is not None:
        scores = scores / query_scale[:, np.newaxis]
    return scores
