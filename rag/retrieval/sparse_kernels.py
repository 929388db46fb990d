"""The compiled query loop of the sparse retrievers (BM25 and tf-idf), in numba.

:func:`rag.retrieval.search.sparse_search` calls :func:`search_batch` when
numba is installed and the collection is large enough to pay for importing
it; otherwise it runs its numpy loop. Both return the same rankings: the same
sums in the same order, the same rounding (``numpy.round`` to
``SCORE_DECIMALS``), the same order (score, then tie order).

Per query, one of two loops (docs/performance.md explains both):

- **exhaustive, term at a time**: every posting of every query term is added
  into one accumulator per chunk, in query-term order (the order numpy's
  ``bincount`` adds them). Only the chunks touched are then scaled, rounded
  and offered to a bounded heap of the ``depth`` best, and only their
  accumulators are reset: the cost follows the postings, not the collection.
- **MaxScore, document at a time** (depth up to ``PRUNE_MAX_DEPTH``, scores
  that cannot be negative): the query terms sorted by their score upper bound
  (``term_bounds``: the largest weight in the term's postings). Once the heap
  is full, the terms whose bounds add up to less than the k-th best score can
  only contribute to chunks that cannot enter, so their postings are no longer
  walked; they are looked up (binary search) for the chunks the other terms
  bring, and not even that once the bounds show the chunk cannot reach the
  k-th best. A chunk is skipped only when its bound is below the k-th best
  rounded score by more than ``SLACK`` (rounding and summation-order noise),
  so a chunk that could tie is always scored exactly.

Every chunk's score is the sum of its contributions in query-term order
(absent terms add an exact 0.0), so both loops produce numpy's bits. The
prefilter (``allowed``) is checked before a chunk is scored. No loop is
parallel: numba uses the calling thread only, as a job's thread reservation expects.
"""

from __future__ import annotations

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - exercised where numba is not installed
    numba = None

AVAILABLE = numba is not None

# 10**SCORE_DECIMALS of rag.retrieval.search (numpy.round multiplies, rounds half to even, divides).
ROUNDING = 1e9
# A chunk is pruned only when its score bound is below the k-th best score by more than this
# (absolute plus relative to that score): half a unit of the 9th decimal, and far more than
# the float noise between a bound summed in one order and a score summed in another.
SLACK_ABSOLUTE = 2e-9
SLACK_RELATIVE = 1e-9
# The unit roundoff of float64 (half the machine epsilon), for the bucket arithmetic's error bound.
EPSILON = 2.0**-53
# MaxScore for depths up to this (the benchmark's choice, docs/performance.md); exhaustive above.
PRUNE_MAX_DEPTH = 100
# Queries touching fewer postings than this are scored exhaustively: nothing to prune.
PRUNE_MIN_POSTINGS = 512
# The exhaustive loop counts its scores into buckets to find a floor under the depth-th best
# (so only the scores above it meet the heap) from this depth on, where more than
# SELECT_FACTOR x depth chunks were touched; HISTOGRAM_BUCKETS buckets.
SELECT_MIN_DEPTH = 32
SELECT_FACTOR = 4
HISTOGRAM_BUCKETS = 4096


def _jit(function=None, *, inline: bool = False):
    """Compile ``function`` with numba, its machine code cached on disk.

    numba keeps the cache beside the module or, where that folder is
    read-only, in the user's cache folder; where neither is writable the
    function is still compiled, once per process. Small helpers are inlined
    into their callers (a call passing arrays costs more than their work).
    """
    if function is None:
        return lambda function: _jit(function, inline=inline)
    if numba is None:
        return function
    options = {"nogil": True, "inline": "always" if inline else "never"}
    try:
        return numba.njit(cache=True, **options)(function)
    except (RuntimeError, OSError):  # no writable cache location
        return numba.njit(**options)(function)


@_jit
def _sift_down(scores, ties, positions, size, at):
    while True:
        child = 2 * at + 1
        if child >= size:
            return
        if child + 1 < size and (
            scores[child + 1] < scores[child]
            or (scores[child + 1] == scores[child] and ties[child + 1] > ties[child])
        ):
            child += 1
        if not (scores[child] < scores[at] or (scores[child] == scores[at] and ties[child] > ties[at])):
            return
        scores[at], scores[child] = scores[child], scores[at]
        ties[at], ties[child] = ties[child], ties[at]
        positions[at], positions[child] = positions[child], positions[at]
        at = child


@_jit
def _offer(scores, ties, positions, size, capacity, score, tie, position):
    """Keep (score, tie, position) if it is among the ``capacity`` best; the new heap size.

    The heap's root is its worst entry, so a full heap admits a candidate
    with one comparison.
    """
    if size < capacity:
        at = size
        scores[at], ties[at], positions[at] = score, tie, position
        while at > 0:
            parent = (at - 1) // 2
            if not (
                scores[at] < scores[parent] or (scores[at] == scores[parent] and ties[at] > ties[parent])
            ):
                break
            scores[at], scores[parent] = scores[parent], scores[at]
            ties[at], ties[parent] = ties[parent], ties[at]
            positions[at], positions[parent] = positions[parent], positions[at]
            at = parent
        return size + 1
    if scores[0] < score or (scores[0] == score and ties[0] > tie):
        scores[0], ties[0], positions[0] = score, tie, position
        _sift_down(scores, ties, positions, size, 0)
    return size


@_jit
def _drain(scores, ties, positions, size, out_positions, out_scores):
    """Write the heap best first into the outputs (emptying it)."""
    for last in range(size - 1, -1, -1):
        out_positions[last] = positions[0]
        out_scores[last] = scores[0]
        scores[0], ties[0], positions[0] = scores[last], ties[last], positions[last]
        _sift_down(scores, ties, positions, last, 0)


@_jit
def _histogram_floor(values, count, capacity, histogram):
    """A score at or below the ``capacity``-th largest of ``values[:count]``, less the slack.

    One pass finds the smallest and largest value, another counts the values
    into ``len(histogram)`` equal buckets between them; the bucket where the running count from the
    top reaches ``capacity`` gives the floor: its lower edge, lowered by the
    float error of the bucket arithmetic (a few units in the last place of the
    range) and the rounding slack. -inf where no bucket below the top one is
    reached, and so nothing is cut.
    """
    buckets = len(histogram)
    lowest, highest = np.inf, -np.inf
    for at in range(count):
        lowest = min(lowest, values[at])
        highest = max(highest, values[at])
    if not highest > lowest:
        return -np.inf
    histogram[:] = 0
    scale = buckets / (highest - lowest)
    for at in range(count):
        bucket = int((values[at] - lowest) * scale)
        histogram[min(bucket, buckets - 1)] += 1
    running = 0
    bucket = buckets - 1
    while bucket > 0:
        running += histogram[bucket]
        if running >= capacity:
            break
        bucket -= 1
    if bucket == 0:
        return -np.inf
    edge = lowest + bucket / scale - 64 * EPSILON * (abs(lowest) + abs(highest))
    return edge - SLACK_ABSOLUTE - SLACK_RELATIVE * abs(edge)


@_jit
def _exhaustive(
    indptr, indices, data, columns, weights, allowed, use_allowed, chunk_scale, use_chunk_scale,
    query_scale, signed, marked_by_sum, ties, use_ties, capacity, accumulator, seen, touched, values,
    heap_scores, heap_ties, heap_positions, select_min_depth, select_factor, histogram,
):  # fmt: skip
    """Term at a time over the query's postings; the heap size.

    Where every contribution is positive (``marked_by_sum``), a chunk's sum
    is 0 exactly until it is touched, so the sum itself marks it: a query
    touching a large share of the collection then finds its chunks by one
    sequential pass over the sums, and a smaller one lists them as it goes.
    Otherwise ``seen`` marks them.
    """
    n_chunks = len(accumulator)
    postings = 0
    for term in range(len(columns)):
        postings += indptr[columns[term] + 1] - indptr[columns[term]]
    scan = marked_by_sum and postings * 8 >= n_chunks
    n_touched = 0
    if scan:
        # Every posting, the prefilter's too: whether a chunk may be ranked is settled once per
        # chunk in the pass below, not by a branch per posting.
        for term in range(len(columns)):
            column = columns[term]
            weight = weights[term]
            for posting in range(indptr[column], indptr[column + 1]):
                accumulator[indices[posting]] += data[posting] * weight
    else:
        for term in range(len(columns)):
            column = columns[term]
            weight = weights[term]
            for posting in range(indptr[column], indptr[column + 1]):
                chunk = indices[posting]
                if use_allowed and not allowed[chunk]:
                    continue
                if marked_by_sum:
                    if accumulator[chunk] == 0.0:
                        touched[n_touched] = chunk
                        n_touched += 1
                elif not seen[chunk]:
                    seen[chunk] = True
                    touched[n_touched] = chunk
                    n_touched += 1
                accumulator[chunk] += data[posting] * weight
    # The touched chunks that can be ranked, with their final scores, packed into touched/values.
    count = 0
    if scan:
        # Without branches: each chunk is written at the next free place, which moves on
        # only where the chunk is kept.
        for chunk in range(n_chunks):
            total = accumulator[chunk]
            accumulator[chunk] = 0.0
            score = (total / chunk_scale[chunk] if use_chunk_scale else total) / query_scale
            keep = score > 0.0
            if use_allowed:
                keep = keep & allowed[chunk]
            touched[count] = chunk
            values[count] = score
            count += keep
    else:
        for at in range(n_touched):
            chunk = touched[at]
            total = accumulator[chunk]
            accumulator[chunk] = 0.0
            seen[chunk] = False
            score = (total / chunk_scale[chunk] if use_chunk_scale else total) / query_scale
            if signed or score > 0.0:
                touched[count] = chunk
                values[count] = score
                count += 1
    # For a deep ranking, a floor under the depth-th largest score first (one counting pass):
    # whatever lies clearly below it rounds below at least depth others, and only the rest
    # meet the heap.
    floor = -np.inf
    if capacity >= select_min_depth and count > select_factor * capacity:
        floor = _histogram_floor(values, count, capacity, histogram)
    size = 0
    for at in range(count):
        score = values[at]
        if score < floor:
            continue
        if size == capacity and score < heap_scores[0] - SLACK_ABSOLUTE:
            continue  # rounds below the worst kept: no need to round it
        chunk = touched[at]
        tie = ties[chunk] if use_ties else chunk
        rounded = np.rint(score * ROUNDING) / ROUNDING + 0.0
        if size == capacity and (
            rounded < heap_scores[0] or (rounded == heap_scores[0] and tie > heap_ties[0])
        ):
            continue  # not better than the worst kept
        size = _offer(heap_scores, heap_ties, heap_positions, size, capacity, rounded, tie, chunk)
    return size


@_jit
def _maxscore(
    indptr, indices, data, columns, weights, bounds, allowed, use_allowed, chunk_scale,
    use_chunk_scale, query_scale, ties, use_ties, capacity, heap_scores, heap_ties, heap_positions,
):  # fmt: skip
    """MaxScore, document at a time, for non-negative contributions; the heap size.

    ``bounds`` holds each query term's largest possible share of a final
    score (after the scaling), in query-term order.
    """
    n_terms = len(columns)
    order = np.argsort(bounds)
    prefix = np.empty(n_terms, dtype=np.float64)
    running = 0.0
    for rank in range(n_terms):
        running += bounds[order[rank]]
        prefix[rank] = running
    cursor = np.empty(n_terms, dtype=np.int64)
    end = np.empty(n_terms, dtype=np.int64)
    for term in range(n_terms):
        cursor[term] = indptr[columns[term]]
        end[term] = indptr[columns[term] + 1]
    contributions = np.zeros(n_terms, dtype=np.float64)
    no_chunk = 9223372036854775807
    first_essential = 0
    size = 0
    threshold = -np.inf
    while first_essential < n_terms:
        chunk = no_chunk
        for rank in range(first_essential, n_terms):
            term = order[rank]
            if cursor[term] < end[term] and indices[cursor[term]] < chunk:
                chunk = indices[cursor[term]]
        if chunk == no_chunk:
            break
        if use_allowed and not allowed[chunk]:
            for rank in range(first_essential, n_terms):
                term = order[rank]
                if cursor[term] < end[term] and indices[cursor[term]] == chunk:
                    cursor[term] += 1
            continue
        scale = query_scale * (chunk_scale[chunk] if use_chunk_scale else 1.0)
        estimate = 0.0
        for rank in range(first_essential, n_terms):
            term = order[rank]
            if cursor[term] < end[term] and indices[cursor[term]] == chunk:
                contributions[term] = data[cursor[term]] * weights[term]
                estimate += contributions[term] / scale
                cursor[term] += 1
        cut = threshold - SLACK_ABSOLUTE - SLACK_RELATIVE * abs(threshold)
        rejected = False
        for rank in range(first_essential - 1, -1, -1):
            if estimate + prefix[rank] < cut:
                rejected = True
                break
            term = order[rank]
            # The first posting at or after the chunk: binary search (postings are in chunk order).
            low, high = cursor[term], end[term]
            while low < high:
                middle = (low + high) >> 1
                if indices[middle] < chunk:
                    low = middle + 1
                else:
                    high = middle
            cursor[term] = low
            if cursor[term] < end[term] and indices[cursor[term]] == chunk:
                contributions[term] = data[cursor[term]] * weights[term]
                estimate += contributions[term] / scale
        # The exact score: the contributions in query-term order, as numpy adds them.
        total = 0.0
        for term in range(n_terms):
            total += contributions[term]
            contributions[term] = 0.0
        if rejected:
            continue
        score = (total / chunk_scale[chunk] if use_chunk_scale else total) / query_scale
        if not score > 0.0:
            continue
        if size == capacity and score < heap_scores[0] - SLACK_ABSOLUTE:
            continue  # rounds below the worst kept: no need to round it
        tie = ties[chunk] if use_ties else chunk
        rounded = np.rint(score * ROUNDING) / ROUNDING + 0.0
        if size == capacity and (
            rounded < heap_scores[0] or (rounded == heap_scores[0] and tie > heap_ties[0])
        ):
            continue  # not better than the worst kept
        size = _offer(heap_scores, heap_ties, heap_positions, size, capacity, rounded, tie, chunk)
        if size == capacity and heap_scores[0] > threshold:
            threshold = heap_scores[0]
            cut = threshold - SLACK_ABSOLUTE - SLACK_RELATIVE * abs(threshold)
            while first_essential < n_terms and prefix[first_essential] < cut:
                first_essential += 1
    return size


@_jit
def search_batch(
    indptr, indices, data, query_pointers, query_columns, query_weights, query_scales,
    term_bounds, use_bounds, allowed, use_allowed, chunk_scale, use_chunk_scale, signed, ties,
    use_ties, capacity, prune_max_depth, prune_min_postings, select_min_depth, select_factor,
    accumulator, seen, touched, values, histogram, out_positions, out_scores, out_sizes,
):  # fmt: skip
    """Rank each query of a batch into row i of ``out_positions``/``out_scores`` (length: ``out_sizes``).

    ``term_bounds`` (one per column; used where ``use_bounds``) bound a
    column's weights from above, each divided by its chunk's scale where
    there is one. ``accumulator``, ``seen``, ``touched`` and ``values`` are
    per-chunk scratch arrays; the first two are zero (False) on entry and left so.
    """
    heap_scores = np.empty(capacity, dtype=np.float64)
    heap_ties = np.empty(capacity, dtype=np.int64)
    heap_positions = np.empty(capacity, dtype=np.int64)
    for query in range(len(query_pointers) - 1):
        start, stop = query_pointers[query], query_pointers[query + 1]
        columns = query_columns[start:stop]
        weights = query_weights[start:stop]
        query_scale = query_scales[query]
        postings = 0
        positive = True
        for term in range(len(columns)):
            postings += indptr[columns[term] + 1] - indptr[columns[term]]
            positive = positive and weights[term] > 0.0
        prune = (
            use_bounds
            and not signed
            and positive
            and capacity <= prune_max_depth
            and postings >= prune_min_postings
        )
        if prune:
            bounds = np.empty(len(columns), dtype=np.float64)
            for term in range(len(columns)):
                bounds[term] = term_bounds[columns[term]] * weights[term] / query_scale
            size = _maxscore(
                indptr, indices, data, columns, weights, bounds, allowed, use_allowed, chunk_scale,
                use_chunk_scale, query_scale, ties, use_ties, capacity, heap_scores, heap_ties,
                heap_positions,
            )  # fmt: skip
        else:
            size = _exhaustive(
                indptr, indices, data, columns, weights, allowed, use_allowed, chunk_scale,
                use_chunk_scale, query_scale, signed, use_bounds and positive, ties, use_ties,
                capacity, accumulator, seen, touched, values, heap_scores, heap_ties, heap_positions,
                select_min_depth, select_factor, histogram,
            )  # fmt: skip
        _drain(heap_scores, heap_ties, heap_positions, size, out_positions[query], out_scores[query])
        out_sizes[query] = size
