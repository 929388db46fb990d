"""Spherical k-means and an inverted-file (IVF) index for dot-product search.

Exact search compares a query with every stored vector. An IVF index first
partitions the vectors into L lists around k-means centroids; a query is then
compared with the L centroids and only the p most similar lists are scanned,
so a query costs about L + p·N/L dot products instead of N. The price is
recall: a true neighbour filed in a list that was not probed is missed, which
:func:`recall_against_exact` measures and :func:`probe_tradeoff` tabulates.

Conventions shared by every search here, so the two kinds of search can be
compared position by position:

* queries come as a batch (an ``n_queries x dimensions`` matrix);
* results are positions into the *original* order of the vectors, best first,
  ties broken by the smaller position;
* a query that scans fewer than k vectors gets fewer results: the result
  matrices are only as wide as the largest number any query could fill (at
  most k), and the missing slots hold position -1 and score -inf.

Scores are float32 dot products, as FAISS computes them. For unit vectors they
are cosine similarities; the index never normalizes what it is given.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from rag.retrieval.search import Ranking, stable_scores, top_k_among
from rag.retrieval.stored_arrays import field_arrays, field_names, missing_arrays
from rag.timing import interleaved_median_seconds

DEFAULT_MAX_ITERATIONS = 20

# Scores are computed block by block so memory stays bounded whatever the
# batch size: 8,192 rows of k-means similarities, and score buffers of at most
# 16 million float32 cells (64 MB) for search, large enough that the matrix
# products are efficient.
_ASSIGNMENT_BLOCK_ROWS = 8_192
_SCORE_BUFFER_CELLS = 16_000_000


# --------------------------------------------------------------------------- validation


def _as_matrix(name: str, values: np.ndarray, dtype: type = np.float32) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (one row per vector), got shape {array.shape}; "
            "wrap a single vector as array[None, :]"
        )
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"{name} must have at least one row and one column, got shape {array.shape}")
    if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
        raise ValueError(f"{name} must hold real numbers, got dtype {array.dtype}")
    if not np.all(np.isfinite(array)):
        bad_row = int(np.flatnonzero(~np.all(np.isfinite(array), axis=1))[0])
        raise ValueError(f"{name} row {bad_row} contains NaN or infinity")
    return np.ascontiguousarray(array, dtype=dtype)


def _check_queries(queries: np.ndarray, dimensions: int) -> np.ndarray:
    matrix = _as_matrix("queries", queries)
    if matrix.shape[1] != dimensions:
        raise ValueError(f"queries have {matrix.shape[1]} dimensions but the vectors have {dimensions}")
    return matrix


def _check_depth(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k (the search depth) must be a positive integer, got {k!r}")


# --------------------------------------------------------------------------- spherical k-means


@dataclass(frozen=True, eq=False)
class KMeansResult:
    """Centroids, the assignment they induce and the objective of every round.

    ``objective[i]`` is the sum over vectors of the dot product with the
    assigned centroid after round i (round 0 uses the initial centroids).
    Spherical k-means can only raise it, which the tests check.
    """

    centroids: np.ndarray
    assignment: np.ndarray
    objective: np.ndarray
    converged: bool

    @property
    def iterations(self) -> int:
        return len(self.objective) - 1


def _assign(vectors: np.ndarray, centroids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Most similar centroid per vector (the lower index on ties) and that similarity.

    Similarities are rounded to the precision contract (``rag.retrieval.search.stable_scores``)
    before the choice, so a vector equally close to two centroids goes to the
    lower one on every machine, whatever rounding noise its BLAS kernel adds.
    """
    assignment = np.empty(vectors.shape[0], dtype=np.int64)
    similarity = np.empty(vectors.shape[0], dtype=np.float64)
    for start in range(0, vectors.shape[0], _ASSIGNMENT_BLOCK_ROWS):
        block = vectors[start : start + _ASSIGNMENT_BLOCK_ROWS] @ centroids.T
        best = np.argmax(stable_scores(block), axis=1)
        assignment[start : start + len(best)] = best
        similarity[start : start + len(best)] = block[np.arange(len(best)), best]
    return assignment, similarity


def _plus_plus_initialization(
    directions: np.ndarray, list_count: int, generator: np.random.Generator
) -> np.ndarray:
    """Rows chosen as initial centroids by k-means++ seeding with cosine distance.

    Each new centre is drawn with probability proportional to ``1 - cosine``
    to the nearest centre chosen so far, so the initial lists are spread over
    the data instead of piling up in its densest region. When every remaining
    vector coincides with a chosen centre (fewer distinct directions than
    lists), the draw is uniform among the unchosen rows; zero rows, which have
    no direction, are drawn only when nothing else is left.
    """
    count = directions.shape[0]
    usable = np.any(directions != 0, axis=1)
    chosen_mask = np.zeros(count, dtype=bool)

    def uniform_pick() -> int:
        pool = np.flatnonzero(usable & ~chosen_mask)
        if pool.size == 0:
            pool = np.flatnonzero(~chosen_mask)
        return int(generator.choice(pool))

    chosen = np.empty(list_count, dtype=np.int64)
    distance = np.ones(count, dtype=np.float64)
    for index in range(list_count):
        weights = np.where(chosen_mask | ~usable, 0.0, distance)
        cumulative = np.cumsum(weights)
        if index > 0 and cumulative[-1] > 0:
            pick = int(np.searchsorted(cumulative, generator.random() * cumulative[-1], side="right"))
            if pick == count:  # the draw rounded up to the total
                pick = int(np.flatnonzero(weights)[-1])
        else:
            pick = uniform_pick()
        chosen[index] = pick
        chosen_mask[pick] = True
        distance = np.minimum(distance, np.clip(1.0 - directions @ directions[pick], 0.0, None))
    return chosen


def _update_centroids(
    vectors: np.ndarray,
    dimensions_first: np.ndarray,
    assignment: np.ndarray,
    similarity: np.ndarray,
    list_count: int,
) -> np.ndarray:
    """Normalized sum of each list; empty lists restart at the worst-served vectors.

    A list whose sum is zero (empty, or members cancelling out) has no
    direction. It takes the non-zero vector least similar to its own
    centroid, drawn only from lists that keep at least one other member, so
    the repair never empties another list; ties go to the smaller position.
    Moving that vector cannot lower the objective: it scores its full length
    against its own direction, at least what it scored before.
    """
    # One weighted bincount per dimension over a contiguous column is much
    # faster than np.add.at and always adds in the same order.
    sums = np.stack(
        [np.bincount(assignment, weights=column, minlength=list_count) for column in dimensions_first],
        axis=1,
    )
    lengths = np.linalg.norm(sums, axis=1)
    centroids = np.zeros_like(sums)
    alive = lengths > 0
    centroids[alive] = sums[alive] / lengths[alive, None]
    dead = np.flatnonzero(~alive)
    if dead.size == 0:
        return centroids
    sizes = np.bincount(assignment, minlength=list_count)
    vector_lengths = np.linalg.norm(vectors, axis=1)
    worst_first = iter(np.lexsort((np.arange(len(similarity)), similarity)))
    for list_id in dead:
        row = next(
            (row for row in worst_first if vector_lengths[row] > 0 and sizes[assignment[row]] > 1),
            None,
        )
        if row is None:  # no list can spare a vector with a direction
            break
        sizes[assignment[row]] -= 1
        sizes[list_id] = 1
        centroids[list_id] = vectors[row] / vector_lengths[row]
    return centroids


def spherical_kmeans(
    vectors: np.ndarray,
    list_count: int,
    seed: int = 0,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
) -> KMeansResult:
    """Partition vectors into ``list_count`` groups by dot product with unit centroids.

    Each round gives every vector to its most similar centroid and replaces
    each centroid by the normalized sum of its vectors; it stops when no
    vector changes list or after ``max_iterations`` rounds. Initialization is
    k-means++ on cosine distance with ``numpy.random.default_rng(seed)``;
    arithmetic is float64 so the objective's monotonicity is not blurred by
    rounding. More lists than vectors is an error rather than a silent clip,
    because the pipeline records L as a parameter of the experiment. Zero
    vectors are allowed (an embedding of a chunk with no known terms): they
    score 0 everywhere and land in list 0.
    """
    matrix = _as_matrix("vectors", vectors, dtype=np.float64)
    count = matrix.shape[0]
    if isinstance(list_count, bool) or not isinstance(list_count, int | np.integer) or list_count < 1:
        raise ValueError(f"list_count must be a positive integer, got {list_count!r}")
    if list_count > count:
        raise ValueError(f"cannot build {list_count} lists from only {count} vectors; use at most {count}")
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, int | np.integer):
        raise ValueError(f"max_iterations must be an integer, got {max_iterations!r}")
    if max_iterations < 0:
        raise ValueError(f"max_iterations must not be negative, got {max_iterations}")
    lengths = np.linalg.norm(matrix, axis=1)
    directions = matrix / np.where(lengths > 0, lengths, 1.0)[:, None]

    dimensions_first = np.ascontiguousarray(matrix.T)
    generator = np.random.default_rng(seed)
    # Seeding only needs rough distances, and float32 halves its memory traffic.
    seeds = _plus_plus_initialization(directions.astype(np.float32), list_count, generator)
    centroids = directions[seeds]
    assignment, similarity = _assign(matrix, centroids)
    objective = [float(similarity.sum())]
    converged = False
    for _ in range(max_iterations):
        centroids = _update_centroids(matrix, dimensions_first, assignment, similarity, list_count)
        new_assignment, similarity = _assign(matrix, centroids)
        objective.append(float(similarity.sum()))
        if np.array_equal(new_assignment, assignment):
            converged = True
            break
        assignment = new_assignment
    return KMeansResult(
        centroids=centroids,
        assignment=assignment,
        objective=np.array(objective),
        converged=converged,
    )


# --------------------------------------------------------------------------- ranking helpers


@dataclass(frozen=True, eq=False)
class SearchResult:
    """Top-k positions and scores for a batch of queries.

    ``positions`` and ``scores`` are ``n_queries x width`` with width at most
    k (see the module docstring for short rows); ``share_scanned`` is the
    fraction of the collection each query compared itself with.
    """

    positions: np.ndarray
    scores: np.ndarray
    share_scanned: np.ndarray

    @property
    def mean_share_scanned(self) -> float:
        return float(self.share_scanned.mean())

    @property
    def found(self) -> np.ndarray:
        """How many real results each query got (k unless too little was scanned)."""
        return (self.positions >= 0).sum(axis=1)


def _descending_score_keys(scores: np.ndarray) -> np.ndarray:
    """uint32 keys whose ascending order is the scores' descending order.

    Flipping the bits of a float's pattern this way orders it like the float
    itself, so one integer sort replaces a slower multi-key lexsort. Adding
    0.0 first turns -0.0 into 0.0, keeping equal scores equal keys.
    """
    bits = (scores.astype(np.float32) + np.float32(0.0)).view(np.uint32)
    ascending = np.where(bits >> np.uint32(31), ~bits, bits | np.uint32(0x80000000))
    return ~ascending


def _rank_candidates(
    query_ids: np.ndarray, positions: np.ndarray, scores: np.ndarray, query_count: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Best k of a pile of (query, position, score) candidates, ties by position.

    Every search funnels its candidates through here, so exact search and the
    index order equal scores identically. Candidates are sorted on one 64-bit
    key (query, then descending score); only when two candidates of a query
    share a score is the slower sort with position as a third key needed.
    """
    keys = (query_ids.astype(np.uint64) << np.uint64(32)) | _descending_score_keys(scores).astype(np.uint64)
    order = np.argsort(keys)
    sorted_keys = keys[order]
    if np.any(sorted_keys[1:] == sorted_keys[:-1]):
        order = np.lexsort((positions, keys))
    sorted_queries = query_ids[order]
    counts = np.bincount(sorted_queries, minlength=query_count)
    starts = np.cumsum(counts) - counts
    rank = np.arange(len(order)) - starts[sorted_queries]
    keep = rank < k
    width = int(min(k, counts.max())) if len(order) else 0
    top_positions = np.full((query_count, width), -1, dtype=np.int64)
    top_scores = np.full((query_count, width), -np.inf, dtype=np.float32)
    rows, columns = sorted_queries[keep], rank[keep]
    top_positions[rows, columns] = positions[order[keep]]
    top_scores[rows, columns] = scores[order[keep]]
    return top_positions, top_scores


def _top_k_superset(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cells that may be among their row's k best: a superset of the top k, ties included.

    Selecting exactly k per row (argpartition) would be slow and would drop
    ties arbitrarily. Instead the columns are split into interleaved groups
    (column j, j + W, j + 2W, ... form group j); the k-th largest group
    maximum of a row is a lower bound on its k-th largest cell, because k
    distinct cells reach it. Only groups reaching the bound are reread, so
    whole rows are touched by just one elementwise maximum over contiguous
    slices. Cells holding -inf are padding and never returned.
    """
    row_count, width = scores.shape
    group_size = max(1, int(np.sqrt(width / k)))
    group_count = -(-width // group_size)
    if group_count <= k:
        rows, columns = np.nonzero(scores > -np.inf)
        return rows, columns, scores[rows, columns]
    maxima = scores[:, :group_count].copy()
    for slice_start in range(group_count, width, group_count):
        part = scores[:, slice_start : slice_start + group_count]
        np.maximum(maxima[:, : part.shape[1]], part, out=maxima[:, : part.shape[1]])
    bound = np.partition(maxima, group_count - k, axis=1)[:, group_count - k]
    group_rows, groups = np.nonzero(maxima >= bound[:, None])
    columns = groups[:, None] + np.arange(group_size) * group_count
    inside = columns < width
    columns = np.where(inside, columns, 0)
    values = scores[group_rows[:, None], columns]
    keep = inside & (values >= bound[group_rows, None]) & (values > -np.inf)
    rows = np.broadcast_to(group_rows[:, None], columns.shape)[keep]
    return rows, columns[keep], values[keep]


# --------------------------------------------------------------------------- exact search


def exact_search(vectors: np.ndarray, queries: np.ndarray, k: int) -> SearchResult:
    """Top k by full dot product, the reference the index is measured against.

    Queries are scored in blocks so the score matrix stays within a bounded
    buffer whatever the batch size.
    """
    matrix = _as_matrix("vectors", vectors)
    batch = _check_queries(queries, matrix.shape[1])
    _check_depth(k)
    block_rows = max(1, _SCORE_BUFFER_CELLS // matrix.shape[0])
    query_ids, positions, scores = [], [], []
    for start in range(0, batch.shape[0], block_rows):
        block = batch[start : start + block_rows] @ matrix.T
        rows, columns, values = _top_k_superset(block, k)
        query_ids.append(rows + start)
        positions.append(columns)
        scores.append(values)
    top_positions, top_scores = _rank_candidates(
        np.concatenate(query_ids), np.concatenate(positions), np.concatenate(scores), batch.shape[0], k
    )
    return SearchResult(top_positions, top_scores, np.ones(batch.shape[0]))


# --------------------------------------------------------------------------- the IVF index


@dataclass(frozen=True, eq=False)
class IVFIndex:
    """Vectors filed in lists, each list one contiguous slice.

    (Like the other records holding arrays here, it compares by identity:
    element-wise array equality has no single truth value.)

    ``stored_vectors[list_offsets[i]:list_offsets[i + 1]]`` is list i, so
    probing p lists reads p slices instead of gathering scattered rows.
    ``original_positions`` maps each stored row back to its position in the
    input, and within a list rows keep their input order.
    """

    centroids: np.ndarray
    list_offsets: np.ndarray
    original_positions: np.ndarray
    stored_vectors: np.ndarray

    @property
    def list_count(self) -> int:
        return self.centroids.shape[0]

    @property
    def list_sizes(self) -> np.ndarray:
        return np.diff(self.list_offsets)

    @property
    def size(self) -> int:
        return self.stored_vectors.shape[0]

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The fields as plain arrays for ``numpy.savez``; :meth:`from_arrays` restores them."""
        return field_arrays(self)

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> IVFIndex:
        """Rebuild an index from :meth:`to_arrays` output, checking it is consistent."""
        missing = missing_arrays(arrays, field_names(cls))
        if missing:
            raise ValueError(f"IVF arrays lack {', '.join(missing)}")
        centroids = _as_matrix("centroids", arrays["centroids"])
        stored = _as_matrix("stored_vectors", arrays["stored_vectors"])
        offsets = np.asarray(arrays["list_offsets"], dtype=np.int64)
        original = np.asarray(arrays["original_positions"], dtype=np.int64)
        if centroids.shape[1] != stored.shape[1]:
            raise ValueError(
                f"centroids have {centroids.shape[1]} dimensions but stored_vectors {stored.shape[1]}"
            )
        if offsets.shape != (centroids.shape[0] + 1,):
            raise ValueError(
                f"list_offsets must have {centroids.shape[0] + 1} entries (lists + 1), got {offsets.shape}"
            )
        if offsets[0] != 0 or offsets[-1] != stored.shape[0] or np.any(np.diff(offsets) < 0):
            raise ValueError("list_offsets must rise from 0 to the number of stored vectors")
        if original.shape != (stored.shape[0],) or not np.array_equal(
            np.sort(original), np.arange(stored.shape[0])
        ):
            raise ValueError("original_positions must be a permutation of the stored rows")
        return cls(centroids, offsets, original, stored)

    def probed_lists(self, queries: np.ndarray, probes: int) -> np.ndarray:
        """The ``probes`` lists each query scans: ``n_queries x probes`` list numbers, best first.

        Lists are chosen by the dot product of the query with their centroid,
        ties to the lower list number, so the choice is reproducible.
        """
        batch = _check_queries(queries, self.stored_vectors.shape[1])
        if isinstance(probes, bool) or not isinstance(probes, int | np.integer):
            raise ValueError(f"probes must be an integer, got {probes!r}")
        if not 1 <= probes <= self.list_count:
            raise ValueError(f"probes must be between 1 and {self.list_count} (the lists), got {probes}")
        centroid_scores = batch @ self.centroids.T
        rows, columns, values = _top_k_superset(centroid_scores, probes)
        probed, _ = _rank_candidates(rows, columns, values, batch.shape[0], probes)
        return probed

    def members(self, list_ids: np.ndarray) -> np.ndarray:
        """Original positions of the vectors filed in the given lists, list by list."""
        offsets = self.list_offsets
        parts = [self.original_positions[offsets[list_id] : offsets[list_id + 1]] for list_id in list_ids]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def search(self, queries: np.ndarray, probes: int, k: int) -> SearchResult:
        """Scan the ``probes`` lists whose centroids score highest; return the best k found.

        Lists are chosen by centroid score, ties to the lower list number.
        Queries are processed in blocks sized so the padded score buffer of
        :meth:`_scan` stays bounded.
        """
        batch = _check_queries(queries, self.stored_vectors.shape[1])
        _check_depth(k)
        query_count = batch.shape[0]
        probed = self.probed_lists(batch, probes)
        sizes = self.list_sizes

        widest = max(1, int(sizes.max()))
        block_queries = max(1, _SCORE_BUFFER_CELLS // (probes * widest))
        query_ids, positions, scores = [], [], []
        for start in range(0, query_count, block_queries):
            block_probed = probed[start : start + block_queries]
            found = self._scan(batch[start : start + block_queries], block_probed, k)
            query_ids.append(found[0] + start)
            positions.append(found[1])
            scores.append(found[2])
        top_positions, top_scores = _rank_candidates(
            np.concatenate(query_ids), np.concatenate(positions), np.concatenate(scores), query_count, k
        )
        share = sizes[probed].sum(axis=1) / self.size
        return SearchResult(top_positions, top_scores, share)

    def _scan(
        self, queries: np.ndarray, probed: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Candidates (query row, original position, score) from the probed lists.

        Query-list pairs are grouped by list, so each list costs one matrix
        product with every query that probes it. The scores land in a buffer
        with one row per query and one padded slot per probe, which
        :func:`_top_k_superset` then reduces in a few whole-array passes.
        """
        query_count, probes = probed.shape
        offsets = self.list_offsets
        width = int(self.list_sizes[probed].max())
        if width == 0:
            empty = np.empty(0, dtype=np.int64)
            return empty, empty, np.empty(0, dtype=np.float32)
        buffer = np.full((query_count * probes, width), -np.inf, dtype=np.float32)
        pair_lists = probed.ravel()
        grouping = np.argsort(pair_lists, kind="stable")
        pairs_per_list = np.bincount(pair_lists, minlength=self.list_count)
        pair_starts = np.concatenate(([0], np.cumsum(pairs_per_list)))
        for list_id in np.flatnonzero(pairs_per_list):
            low, high = offsets[list_id], offsets[list_id + 1]
            if low == high:
                continue
            pairs = grouping[pair_starts[list_id] : pair_starts[list_id + 1]]
            buffer[pairs, : high - low] = queries[pairs // probes] @ self.stored_vectors[low:high].T
        rows, columns, values = _top_k_superset(buffer.reshape(query_count, probes * width), k)
        slots, offsets_in_list = np.divmod(columns, width)
        stored_rows = offsets[probed[rows, slots]] + offsets_in_list
        return rows, self.original_positions[stored_rows], values


def build_ivf(
    vectors: np.ndarray, list_count: int, seed: int = 0, max_iterations: int = DEFAULT_MAX_ITERATIONS
) -> IVFIndex:
    """Cluster with :func:`spherical_kmeans` and file each vector in its centroid's list."""
    matrix = _as_matrix("vectors", vectors)
    clustering = spherical_kmeans(matrix, list_count, seed=seed, max_iterations=max_iterations)
    storage_order = np.argsort(clustering.assignment, kind="stable")
    sizes = np.bincount(clustering.assignment, minlength=list_count)
    return IVFIndex(
        centroids=clustering.centroids.astype(np.float32),
        list_offsets=np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
        original_positions=storage_order.astype(np.int64),
        stored_vectors=np.ascontiguousarray(matrix[storage_order]),
    )


# --------------------------------------------------------------------------- the pipeline's ranking


def _probed_lists_exactly(index: IVFIndex, queries: np.ndarray, probes: int) -> np.ndarray:
    """The lists each query probes, chosen on float64 scores rounded to the precision contract.

    ``IVFIndex.probed_lists`` scores with a float32 matrix product, whose last
    bits depend on the BLAS kernel; a query nearly equidistant from two
    centroids could then probe different lists on different machines. Here
    each centroid score is a row-wise sum of float64 products (no BLAS), and
    ties go to the lower list number.
    """
    if isinstance(probes, bool) or not isinstance(probes, int | np.integer):
        raise ValueError(f"probes must be an integer, got {probes!r}")
    if not 1 <= probes <= index.list_count:
        raise ValueError(f"probes must be between 1 and {index.list_count} (the lists), got {probes}")
    _check_queries(queries, index.stored_vectors.shape[1])
    centroids = index.centroids.astype(np.float64)
    list_numbers = np.arange(index.list_count)
    probed = np.empty((len(queries), probes), dtype=np.int64)
    for row, query in enumerate(queries):
        scores = stable_scores((centroids * query).sum(axis=1))
        probed[row] = np.lexsort((list_numbers, -scores))[:probes]
    return probed


def share_scanned(index: IVFIndex, queries: np.ndarray, probes: int) -> np.ndarray:
    """Per query, the share of the vectors :func:`rank_probed_lists` scans with ``probes`` lists.

    The lists are chosen exactly as that search chooses them, so the share
    reported beside a ranking is the share that ranking was made from; a
    query of zeros (no known term) scans nothing.
    """
    batch = np.asarray(queries, dtype=np.float64)
    shares = index.list_sizes[_probed_lists_exactly(index, batch, probes)].sum(axis=1) / index.size
    return np.where(batch.any(axis=1), shares, 0.0)


def rank_probed_lists(
    index: IVFIndex,
    vectors: np.ndarray,
    queries: np.ndarray,
    probes: int,
    depth: int,
    tie_order: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
) -> list[Ranking]:
    """Each query's ``depth`` best vectors among the lists it probes, on the pipeline's conventions.

    The pipeline's retrievers score in float64 and break ties by chunk id
    (``tie_order``, as in :func:`rag.retrieval.search.top_k`), so this search scores the
    members of the probed lists exactly, from ``vectors`` (the float64 vectors
    the index was built from, in their original order) rather than from the
    index's float32 copies. With every list probed it therefore returns the
    exact ranking, and with fewer lists the exact ranking restricted to the
    probed lists: the only difference from exact search is what was scanned.
    Each score is a row-wise sum of products, so identical vectors score
    identically wherever they sit and their ties really go by ``tie_order``.
    A query of zeros (no known term) gets an empty ranking, as in exact search.
    ``allowed`` (a boolean mask over the vectors) is a prefilter: members
    outside it are dropped from the probed lists before anything is scored.
    """
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.shape != index.stored_vectors.shape:
        raise ValueError(
            f"the index holds {index.size} vectors of dimension {index.stored_vectors.shape[1]}, "
            f"but the vectors given have shape {matrix.shape}"
        )
    if not np.array_equal(index.stored_vectors, matrix[index.original_positions].astype(np.float32)):
        raise ValueError("the vectors given are not the ones the index was built from")
    batch = np.asarray(queries, dtype=np.float64)
    probed = _probed_lists_exactly(index, batch, probes)
    rankings = []
    for query, lists in zip(batch, probed, strict=True):
        if not query.any():
            rankings.append(Ranking.empty())
            continue
        candidates = index.members(lists)
        if allowed is not None:
            candidates = candidates[np.asarray(allowed, dtype=bool)[candidates]]
        scores = (matrix[candidates] * query).sum(axis=1)
        rankings.append(top_k_among(candidates, scores, depth, tie_order))
    return rankings


# --------------------------------------------------------------------------- measurement


def recall_against_exact(approximate_positions: np.ndarray, exact_positions: np.ndarray, k: int) -> float:
    """Mean over queries of |A ∩ E| / k for the approximate and exact top k.

    This measures fidelity to exact search only, not relevance. Padding
    (-1) in the approximate rows never counts as a hit.
    """
    _check_depth(k)
    approximate = np.asarray(approximate_positions)
    exact = np.asarray(exact_positions)
    if approximate.ndim != 2 or exact.ndim != 2:
        raise ValueError(
            f"positions must be 2-D (queries x ranks), got {approximate.shape} and {exact.shape}"
        )
    if approximate.shape[0] != exact.shape[0]:
        raise ValueError(
            f"approximate positions cover {approximate.shape[0]} queries, exact {exact.shape[0]}"
        )
    if exact.shape[1] < k or np.any(exact[:, :k] < 0):
        raise ValueError(f"the exact ranking holds fewer than k={k} results for some query")
    top_approximate = approximate[:, :k]
    top_exact = exact[:, :k]
    matches = (top_approximate[:, :, None] == top_exact[:, None, :]).any(axis=2) & (top_approximate >= 0)
    return float(matches.sum(axis=1).mean() / k)


def _interleaved_median_seconds(
    runs: Mapping[object, Callable[[], SearchResult]], repeats: int
) -> tuple[dict[object, float], dict[object, SearchResult]]:
    """Median time of each run over ``repeats`` rounds, and its result.

    Every run goes once untimed (a warm-up, which also gives the result);
    then each round times every run once, in turn
    (:func:`rag.timing.interleaved_median_seconds`), so that ratios between
    the runs stay fair on a busy machine.
    """
    results = {name: run() for name, run in runs.items()}
    return interleaved_median_seconds(runs, repeats), results


def probe_tradeoff(
    vectors: np.ndarray,
    queries: np.ndarray,
    list_count: int,
    probe_counts: Sequence[int],
    k: int,
    seed: int = 0,
    repeats: int = 3,
    blas_threads: int | None = 1,
) -> pd.DataFrame:
    """Recall, share scanned and time against exact search for each number of probes.

    Times are medians over ``repeats`` runs of the whole query batch (after
    one warm-up), and exact search is timed in the same call, its runs
    interleaved with the index's, so the ratio compares runs on the same
    machine under the same load; absolute seconds vary between runs. Both
    searches run with the BLAS limited to ``blas_threads`` (None leaves it
    alone): the index multiplies many small matrices, and a multi-threaded
    BLAS spends more time synchronizing its threads on those than computing,
    several times slower on a busy machine, which would measure the thread
    pool rather than the index.
    """
    # Imported here: searching a built index must not pay for loading pandas.
    import pandas as pd
    from threadpoolctl import threadpool_limits

    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    if not probe_counts:
        raise ValueError("probe_counts is empty")
    for probes in probe_counts:
        if (
            isinstance(probes, bool)
            or not isinstance(probes, int | np.integer)
            or not 1 <= probes <= list_count
        ):
            raise ValueError(f"each probe count must be an integer from 1 to {list_count}, got {probes!r}")
    _check_depth(k)
    matrix = _as_matrix("vectors", vectors)
    batch = _check_queries(queries, matrix.shape[1])
    started = time.perf_counter()
    index = build_ivf(matrix, list_count, seed=seed)
    build_seconds = time.perf_counter() - started
    limit = nullcontext() if blas_threads is None else threadpool_limits(blas_threads, user_api="blas")
    rows = []
    runs: dict[object, Callable[[], SearchResult]] = {"exact": lambda: exact_search(matrix, batch, k)}
    for probes in probe_counts:
        runs[int(probes)] = lambda p=probes: index.search(batch, p, k)
    with limit:
        seconds, results = _interleaved_median_seconds(runs, repeats)
    exact, exact_seconds = results["exact"], seconds["exact"]
    for probes in probe_counts:
        approximate, ivf_seconds = results[int(probes)], seconds[int(probes)]
        rows.append(
            {
                "lists": list_count,
                "probes": int(probes),
                "k": k,
                "recall_against_exact": recall_against_exact(approximate.positions, exact.positions, k),
                "mean_share_scanned": approximate.mean_share_scanned,
                "ivf_seconds": ivf_seconds,
                "exact_seconds": exact_seconds,
                "time_relative_to_exact": ivf_seconds / exact_seconds,
                "build_seconds": build_seconds,
            }
        )
    return pd.DataFrame(rows)
