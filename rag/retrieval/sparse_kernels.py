"""The compiled query loop of the sparse retrievers (BM25 and tf-idf), in numba.

:func:`rag.retrieval.search.sparse_search` calls :func:`search_batch` when
numba is installed and the collection is large enough to pay for importing
it; otherwise it runs its numpy loop. Both return the same rankings: the same
sums in the same order, the same rounding (``numpy.round`` to
``SCORE_DECIMALS``), the same order (score, then tie order).

Per query, one of two loops (docs/performance.md explains both):

- **exhaustive, term at a time**: every posting of every query term is added
  into one accumulator per chunk, in query-term order (the order numpy's
  ``bincount`` adds them). A query touching few chunks lists them as it goes
  and only those are scaled, rounded and ranked, and only their accumulators
  are reset: the cost follows the postings, not the collection. A query
  touching many is ranked by one pass over the sums that also clears them,
  testing a block of sums at a time against one cutoff (the prefilter read
  per chunk, not per posting). A shallow ranking offers what passes to a
  bounded heap of the ``depth`` best. A deep one first guesses, from a
  strided sample, a score that about twice ``depth`` chunks reach, keeps only
  the chunks near or above it and sorts the best of those (cheaper than a
  heap of a thousand); it checks in the same pass that at least ``depth``
  reached the guess, else it adds the postings again and ranks without it:
  the result never depends on the sample.
- **MaxScore, document at a time** (depth up to ``PRUNE_MAX_DEPTH``, or up
  to ``PRUNE_DEPTH_SHARE`` of the collection; scores that cannot be
  negative): the query terms sorted by their score upper bound
  (``term_bounds``: the largest weight in the term's postings). It starts
  from a floor: the k-th best of a few chunks' partial scores (the chunks of
  the strongest terms' largest weights, summed over those terms only: no
  lookup in a weak term's long list; :func:`_primed_threshold`). The terms
  whose bounds add up to less than that floor (later: the k-th best score
  kept) can only contribute to chunks that cannot enter, so their postings
  are not walked; they are looked up (:func:`_seek`: a guess from the
  list's spread, then galloping) for the
  chunks the other terms bring, and not even that once the bounds show the
  chunk cannot reach the k-th best. Where the floor leaves more than
  ``ESSENTIAL_SHARE`` of the query's postings to walk, the query goes to the
  exhaustive loop instead. A chunk is skipped only when its bound is below
  the k-th best rounded score by more than ``SLACK`` (rounding and
  summation-order noise), so a chunk that could tie is always scored exactly.

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
# MaxScore for depths up to this, or up to this share of the collection; exhaustive above (the
# benchmark's choice, results/benchmarks/prune_crossover.csv: a depth of 1,000 ranks faster
# exhaustively at 100,000 chunks and at 1,000,000).
PRUNE_MAX_DEPTH = 100
PRUNE_DEPTH_SHARE = 0.0005
# Collections of fewer chunks than this are scored exhaustively (rag.retrieval.search): their lists
# are short enough that adding every posting costs less than MaxScore's bookkeeping (the benchmark's
# choice: a top 10 of 30,000 chunks ranked faster exhaustively, of 50,000 faster pruned).
PRUNE_MIN_CHUNKS = 40_000
# Queries touching fewer postings than this are scored exhaustively: nothing to prune.
PRUNE_MIN_POSTINGS = 512
# MaxScore first scores exactly the chunks of the max(depth, PRIME_POSTINGS) largest weights among
# the first max(PRIME_WINDOW, PRIME_WINDOW_DEPTHS x depth) postings of its strongest term (then
# the next, while fewer than depth were scored): a floor to prune from before its heap has
# filled (the benchmark's choice; a deep ranking picks its depth's best from three times as
# many postings, so its floor is not merely the worst of them). Under a prefilter, the largest
# weights of allowed chunks, and rag.retrieval.search lengthens the window by the share hidden.
PRIME_POSTINGS = 32
PRIME_WINDOW = 1024
PRIME_WINDOW_DEPTHS = 3
# ...and leaves the query to the exhaustive loop where more than this share of its postings stay
# essential above that floor: walking them a chunk at a time would cost more than adding them all.
ESSENTIAL_SHARE = 0.15
# The exhaustive loop guesses a floor under the depth-th best score from a strided sample of
# SELECT_SAMPLE scores (so only the scores above it meet the heap) from this depth on, where
# more than SELECT_FACTOR x depth chunks were touched.
SELECT_MIN_DEPTH = 32
SELECT_FACTOR = 4
SELECT_SAMPLE = 2048
# ...and at least enough for the guess to be about this far from the sample's top: a guess of the
# 5th best sample (2,048 of a million sums, depth 1,000) fails about one query in eighteen, and a failed
# guess adds every posting again and ranks every touched chunk.
SELECT_SAMPLE_RANK = 32
# The passes over every chunk's sum test this many at once (a test vectorised), then one by one
# only in the blocks where some score passes.
SCAN_BLOCK = 16


def prunes(n_chunks: int, depth: int) -> bool:
    """Whether a top-``depth`` ranking of ``n_chunks`` chunks may use MaxScore (the switches above).

    The one place this is decided: :func:`search_batch` is told, and prunes
    a query only if it also touches ``PRUNE_MIN_POSTINGS`` postings, with
    positive weights and bounds.
    """
    if n_chunks < PRUNE_MIN_CHUNKS:
        return False
    return depth <= PRUNE_MAX_DEPTH or depth <= PRUNE_DEPTH_SHARE * n_chunks


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
    """Write the heap best first into the outputs (emptying it).

    A heap kept sorted worst first (as :func:`_sorted_best` leaves it) is
    read off backwards in one pass; any other is popped entry by entry.
    """
    for at in range(1, size):
        if scores[at] < scores[at - 1] or (scores[at] == scores[at - 1] and ties[at] > ties[at - 1]):
            break
    else:
        for at in range(size):
            out_positions[at] = positions[size - 1 - at]
            out_scores[at] = scores[size - 1 - at]
        return
    for last in range(size - 1, -1, -1):
        out_positions[last] = positions[0]
        out_scores[last] = scores[0]
        scores[0], ties[0], positions[0] = scores[last], ties[last], positions[last]
        _sift_down(scores, ties, positions, last, 0)


@_jit
def _sampled_guess(values, count, capacity, sample_size):
    """A score that about twice ``capacity`` of ``values[:count]`` reach, from a strided sample; -inf if none.

    Only a guess: the caller checks that at least ``capacity`` values reach
    it before relying on it (and does without it otherwise).
    """
    sample_size = max(sample_size, SELECT_SAMPLE_RANK * count // (2 * capacity))
    stride = max(1, count // sample_size)
    sample = values[:count:stride]
    size = len(sample)
    rank = (2 * capacity * size + count - 1) // count  # from the top, rounded up
    if rank >= size:
        return -np.inf
    return np.partition(sample, size - rank)[size - rank]


@_jit
def _scan_guess(
    accumulator, allowed, use_allowed, chunk_scale, use_chunk_scale, query_scale, capacity, sample_size
):  # fmt: skip
    """:func:`_sampled_guess` over every chunk's sum (those that cannot be ranked count as 0)."""
    n_chunks = len(accumulator)
    sample_size = max(sample_size, SELECT_SAMPLE_RANK * n_chunks // (2 * capacity))
    stride = max(1, n_chunks // sample_size)
    size = (n_chunks + stride - 1) // stride
    rank = (2 * capacity * size + n_chunks - 1) // n_chunks
    if rank >= size:
        return -np.inf
    sample = np.zeros(size, dtype=np.float64)
    for at in range(size):
        chunk = at * stride
        total = accumulator[chunk]
        score = (total / chunk_scale[chunk] if use_chunk_scale else total) / query_scale
        if score > 0.0 and (not use_allowed or allowed[chunk]):
            sample[at] = score
    guess = np.partition(sample, size - rank)[size - rank]
    return guess if guess > 0.0 else -np.inf


@_jit
def _accumulate(indptr, indices, data, columns, weights, accumulator):
    """Add every posting of the query's terms into its chunk's sum, in query-term order."""
    for term in range(len(columns)):
        column = columns[term]
        weight = weights[term]
        # Unsigned positions: numba then adds no fix-up for negative indices to each posting's reads.
        for posting in range(np.uint64(indptr[column]), np.uint64(indptr[column + 1])):
            accumulator[indices[posting]] += data[posting] * weight


@_jit(inline=True)
def _sum_score(accumulator, chunk, plain, chunk_scale, use_chunk_scale, query_scale):
    """A chunk's score from its sum (dividing by 1.0 changes no bit: a plain sum skips the divisions)."""
    total = accumulator[chunk]
    if plain:
        return total
    return (total / chunk_scale[chunk] if use_chunk_scale else total) / query_scale


@_jit(inline=True)
def _block_reaches(accumulator, low, cutoff):
    """Whether a sum of the ``SCAN_BLOCK`` from ``low`` on exceeds ``cutoff``: one vectorised test."""
    reaches = False
    for chunk in range(low, low + SCAN_BLOCK):
        reaches |= accumulator[chunk] > cutoff
    return reaches


@_jit(inline=True)
def _offer_range(
    accumulator, low, high, allowed, use_allowed, plain, chunk_scale, use_chunk_scale, query_scale,
    ties, use_ties, capacity, heap_scores, heap_ties, heap_positions, size, cutoff,
):  # fmt: skip
    """Offer the chunks of ``[low, high)`` that score above ``cutoff`` to the heap; (size, cutoff)."""
    for chunk in range(low, high):
        score = _sum_score(accumulator, chunk, plain, chunk_scale, use_chunk_scale, query_scale)
        if score <= cutoff or (use_allowed and not allowed[chunk]):
            continue
        tie = ties[chunk] if use_ties else chunk
        rounded = np.rint(score * ROUNDING) / ROUNDING + 0.0
        if size == capacity and (
            rounded < heap_scores[0] or (rounded == heap_scores[0] and tie > heap_ties[0])
        ):
            continue  # not better than the worst kept
        size = _offer(heap_scores, heap_ties, heap_positions, size, capacity, rounded, tie, chunk)
        if size == capacity:
            cutoff = max(cutoff, np.nextafter(heap_scores[0] - SLACK_ABSOLUTE, -np.inf))
    return size, cutoff


@_jit
def _scan_select(
    accumulator, allowed, use_allowed, chunk_scale, use_chunk_scale, query_scale, ties, use_ties,
    capacity, heap_scores, heap_ties, heap_positions,
):  # fmt: skip
    """Offer every chunk's positive sum (allowed chunks only) to the heap, clearing every sum; its size.

    At or below ``cutoff`` a score cannot enter: 0 (untouched: every
    contribution here is positive) or, once the heap is full, under its
    worst score less the slack (it would round below it). It is tested a
    block at a time, then chunk by chunk only in the blocks where a score
    passes.
    """
    plain = not use_chunk_scale and query_scale == 1.0
    size, cutoff = 0, 0.0
    n_chunks = len(accumulator)
    whole = n_chunks - n_chunks % SCAN_BLOCK
    for low in range(0, whole, SCAN_BLOCK):
        if not plain or _block_reaches(accumulator, low, cutoff):  # scaled sums: chunk by chunk
            size, cutoff = _offer_range(
                accumulator, low, low + SCAN_BLOCK, allowed, use_allowed, plain, chunk_scale,
                use_chunk_scale, query_scale, ties, use_ties, capacity, heap_scores, heap_ties,
                heap_positions, size, cutoff,
            )  # fmt: skip
        for chunk in range(low, low + SCAN_BLOCK):
            accumulator[chunk] = 0.0
    size, cutoff = _offer_range(
        accumulator, whole, n_chunks, allowed, use_allowed, plain, chunk_scale, use_chunk_scale,
        query_scale, ties, use_ties, capacity, heap_scores, heap_ties, heap_positions, size, cutoff,
    )  # fmt: skip
    accumulator[whole:] = 0.0
    return size


@_jit(inline=True)
def _pack_range(
    accumulator, low, high, allowed, use_allowed, plain, chunk_scale, use_chunk_scale, query_scale,
    cutoff, guess, touched, values, count, reaching,
):  # fmt: skip
    """Pack the chunks of ``[low, high)`` that score above ``cutoff``; (count, reaching ``guess``).

    Without a branch: each chunk is written at the next free place, which
    only a chunk that passes takes (a prefilter's mask is no pattern a
    processor could predict). ``touched`` and ``values`` have room for
    every chunk.
    """
    for chunk in range(low, high):
        score = _sum_score(accumulator, chunk, plain, chunk_scale, use_chunk_scale, query_scale)
        passes = score > cutoff
        if use_allowed:
            passes &= allowed[chunk]
        touched[count] = chunk
        values[count] = score
        count += passes
        reaching += passes & (score >= guess)
    return count, reaching


@_jit
def _scan_collect(
    accumulator, allowed, use_allowed, chunk_scale, use_chunk_scale, query_scale, guess, touched, values
):  # fmt: skip
    """Pack the chunks whose score is near or above ``guess`` into touched/values, clearing every sum.

    Returns how many were packed and how many reach ``guess`` itself
    (positive sums of allowed chunks only). One pass both reads and clears
    the sums, a block at a time as :func:`_scan_select` does.
    """
    floor = guess - SLACK_ABSOLUTE - SLACK_RELATIVE * abs(guess)
    plain = not use_chunk_scale and query_scale == 1.0
    cutoff = max(0.0, np.nextafter(floor, -np.inf))
    count, reaching = 0, 0
    n_chunks = len(accumulator)
    whole = n_chunks - n_chunks % SCAN_BLOCK
    for low in range(0, whole, SCAN_BLOCK):
        if not plain or _block_reaches(accumulator, low, cutoff):  # scaled sums: chunk by chunk
            count, reaching = _pack_range(
                accumulator, low, low + SCAN_BLOCK, allowed, use_allowed, plain, chunk_scale,
                use_chunk_scale, query_scale, cutoff, guess, touched, values, count, reaching,
            )  # fmt: skip
        for chunk in range(low, low + SCAN_BLOCK):
            accumulator[chunk] = 0.0
    count, reaching = _pack_range(
        accumulator, whole, n_chunks, allowed, use_allowed, plain, chunk_scale, use_chunk_scale,
        query_scale, cutoff, guess, touched, values, count, reaching,
    )  # fmt: skip
    accumulator[whole:] = 0.0
    return count, reaching


@_jit
def _collect(touched, values, count, guess, capacity):
    """Keep at the front of touched/values the scores near or above ``guess``; how many.

    -1 (nothing moved) where fewer than ``capacity`` scores reach ``guess``:
    then some score below it might belong in the ranking.
    """
    reaching = 0
    for at in range(count):
        reaching += values[at] >= guess
    if reaching < capacity:
        return -1
    floor = guess - SLACK_ABSOLUTE - SLACK_RELATIVE * abs(guess)
    kept = 0
    for at in range(count):
        if values[at] >= floor:
            touched[kept] = touched[at]
            values[kept] = values[at]
            kept += 1
    return kept


@_jit(inline=True)
def _ranked(picks, chunks, rounded, in_chunk_order, ties, use_ties):
    """``picks`` (positions into chunks/rounded) in ranking order: rounded score, tie order, chunk.

    Stable sorts from the last key to the first, as numpy's ``lexsort``.
    """
    if not in_chunk_order:
        picks = picks[np.argsort(chunks[picks], kind="mergesort")]
    if use_ties:
        picks = picks[np.argsort(ties[chunks[picks]], kind="mergesort")]
    return picks[np.argsort(-rounded[picks], kind="mergesort")]


@_jit
def _sorted_best(
    touched, values, count, in_chunk_order, ties, use_ties, capacity, heap_scores, heap_ties,
    heap_positions,
):  # fmt: skip
    """The ``capacity`` best of the packed scores into the heap, sorted worst first; its size.

    Used where a guess left a few times ``capacity`` candidates: selecting
    the best (``np.partition``) and sorting only those costs less than
    offering each candidate to the heap. ``in_chunk_order``: the packed
    chunks ascend.
    """
    chunks = touched[:count]
    rounded = np.empty(count, dtype=np.float64)
    for at in range(count):
        rounded[at] = np.rint(values[at] * ROUNDING) / ROUNDING + 0.0
    size = min(capacity, count)
    if size == 0:
        return 0
    picks = np.arange(count)
    if count > size:
        # The size-th best rounded score; the scores above it, and those equal to it that rank first.
        boundary = -np.partition(-rounded, size - 1)[size - 1]
        keep = rounded > boundary
        level = _ranked(picks[rounded == boundary], chunks, rounded, in_chunk_order, ties, use_ties)
        keep[level[: size - np.count_nonzero(keep)]] = True
        picks = np.nonzero(keep)[0]  # in packed order still
    picks = _ranked(picks, chunks, rounded, in_chunk_order, ties, use_ties)
    for at in range(size):
        pick = picks[size - 1 - at]
        chunk = chunks[pick]
        heap_scores[at] = rounded[pick]
        heap_ties[at] = ties[chunk] if use_ties else chunk
        heap_positions[at] = chunk
    return size


@_jit
def _exhaustive(
    indptr, indices, data, columns, weights, allowed, use_allowed, chunk_scale, use_chunk_scale,
    query_scale, signed, marked_by_sum, ties, use_ties, capacity, accumulator, seen, touched, values,
    heap_scores, heap_ties, heap_positions, select_min_depth, select_factor, sample_size,
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
    if marked_by_sum and postings * 8 >= n_chunks:
        # Every posting, the prefilter's too: whether a chunk may be ranked is settled once per
        # chunk in the pass over the sums, not by a branch per posting.
        _accumulate(indptr, indices, data, columns, weights, accumulator)
        if capacity >= select_min_depth:
            guess = -np.inf
            if n_chunks > select_factor * capacity:
                guess = _scan_guess(
                    accumulator, allowed, use_allowed, chunk_scale, use_chunk_scale, query_scale,
                    capacity, sample_size,
                )  # fmt: skip
            # Without a guess, every positive sum is a candidate (and none is missed).
            count, reaching = _scan_collect(
                accumulator, allowed, use_allowed, chunk_scale, use_chunk_scale, query_scale, guess,
                touched, values,
            )  # fmt: skip
            if reaching < capacity and guess > -np.inf:
                # The guess was too high and the sums are cleared: add them again, take them all.
                _accumulate(indptr, indices, data, columns, weights, accumulator)
                count, reaching = _scan_collect(
                    accumulator, allowed, use_allowed, chunk_scale, use_chunk_scale, query_scale,
                    -np.inf, touched, values,
                )  # fmt: skip
            return _sorted_best(
                touched, values, count, True, ties, use_ties, capacity, heap_scores, heap_ties,
                heap_positions,
            )  # fmt: skip
        return _scan_select(
            accumulator, allowed, use_allowed, chunk_scale, use_chunk_scale, query_scale, ties,
            use_ties, capacity, heap_scores, heap_ties, heap_positions,
        )  # fmt: skip
    n_touched = 0
    for term in range(len(columns)):
        column = columns[term]
        weight = weights[term]
        for posting in range(np.uint64(indptr[column]), np.uint64(indptr[column + 1])):
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
    # For a deep ranking, a guess at a score at most the depth-th best (from a sample): whatever
    # lies clearly below it rounds below at least depth others, so only the rest are sorted.
    # The guess holds if at least depth scores reach it; if not (or without one), all are.
    if capacity >= select_min_depth:
        if count > select_factor * capacity:
            guess = _sampled_guess(values, count, capacity, sample_size)
            if guess > -np.inf:
                kept = _collect(touched, values, count, guess, capacity)
                if kept >= 0:
                    count = kept
        return _sorted_best(
            touched, values, count, False, ties, use_ties, capacity, heap_scores, heap_ties,
            heap_positions,
        )  # fmt: skip
    return _select(touched, values, count, ties, use_ties, capacity, heap_scores, heap_ties, heap_positions)


@_jit
def _select(touched, values, count, ties, use_ties, capacity, heap_scores, heap_ties, heap_positions):
    """Offer the packed scores to the heap; its size."""
    size = 0
    for at in range(count):
        score = values[at]
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


@_jit(inline=True)
def _seek(indices, at, stop, chunk):
    """The first posting in ``[at, stop)`` whose chunk is at least ``chunk`` (postings in chunk order).

    It first guesses where ``chunk`` would sit were the remaining postings
    spread evenly over their chunks (in a long list each read is a cache
    miss, so a close first guess saves most of them), then gallops from the
    guess, forwards or backwards, and ends with a binary search: exact
    whatever the spread.
    """
    if at >= stop or indices[at] >= chunk:
        return at
    last = stop - 1
    if indices[last] < chunk:
        return stop
    # indices[at] < chunk <= indices[last]: the answer lies in (at, last].
    span = indices[last] - indices[at]
    guess = at + 1 + np.int64((last - at - 1) * ((chunk - indices[at]) / span))
    low, high = at, last  # indices[low] < chunk <= indices[high]
    stride = 1
    if indices[guess] < chunk:
        low = guess
        while low + stride < high and indices[low + stride] < chunk:
            low += stride
            stride <<= 1
        high = min(low + stride, high)
    else:
        high = guess
        while high - stride > low and indices[high - stride] >= chunk:
            high -= stride
            stride <<= 1
        low = max(high - stride, low)
    while high - low > 1:
        middle = (low + high) >> 1
        if indices[middle] < chunk:
            low = middle
        else:
            high = middle
    return high


@_jit
def _primed_threshold(
    indptr, indices, data, columns, weights, order, allowed, use_allowed, chunk_scale,
    use_chunk_scale, query_scale, capacity, prime_postings, prime_window, cursor, end,
):  # fmt: skip
    """A score that at least ``capacity`` chunks reach, from a few partial scores; -inf if none.

    Query terms are taken from the one that can add the most (``order``:
    the terms by bound, weakest first). Among the first ``prime_window``
    postings of a term, the chunks of its ``prime_postings`` largest weights
    (ties included; under a prefilter, of the allowed chunks) are scored
    over the terms taken so far only, each looked up by :func:`_seek`: the
    weaker terms, whose lists are the long ones, would cost a cache miss
    per lookup, and leaving out a contribution that cannot be negative
    leaves a floor under the chunk's score (also once summed and rounded:
    both keep the order). A chunk that a term taken before also holds is
    left out (it was that term's to score), so no chunk counts twice. The
    next term is taken only while fewer than ``capacity`` chunks were scored
    (a very rare term, or a prefilter hiding most of its chunks). The
    ``capacity``-th best of their rounded floors is at most the final
    ``capacity``-th best score, so MaxScore may prune below it
    from its first chunk on instead of waiting for its heap to fill with
    good chunks. ``cursor`` and ``end`` are the terms' postings ranges
    (``cursor`` is moved).
    """
    n_terms = len(columns)
    rank_of = np.empty(n_terms, dtype=np.int64)
    for rank in range(n_terms):
        rank_of[order[rank]] = rank
    budget = max(prime_window, prime_postings)
    room = 0  # at most one score per posting looked at
    for term in range(n_terms):
        room += min(end[term] - indptr[columns[term]], budget)
    kept = np.empty(room, dtype=np.float64)
    count = 0
    for rank in range(n_terms - 1, -1, -1):
        if count >= capacity:
            break
        first = order[rank]
        start = indptr[columns[first]]
        stop = min(indptr[columns[first] + 1], start + budget)
        # The weight the prime_postings-th largest reaches (the query term's weight and the scale
        # are positive: they keep the order).
        # Under a prefilter, among the allowed chunks' weights only.
        lightest = -np.inf
        if stop - start > prime_postings:
            window = np.empty(stop - start, dtype=np.float64)
            size = 0
            for posting in range(start, stop):
                if not use_allowed or allowed[indices[posting]]:
                    window[size] = data[posting]
                    size += 1
            if size > prime_postings:
                lightest = np.partition(window[:size], size - prime_postings)[size - prime_postings]
        for term in range(n_terms):
            cursor[term] = indptr[columns[term]]
        for posting in range(start, stop):
            if data[posting] < lightest:
                continue
            chunk = indices[posting]
            if use_allowed and not allowed[chunk]:
                continue
            total = 0.0
            scored_before = False
            for term in range(n_terms):
                if rank_of[term] < rank:
                    continue  # a weaker term: left out, the score is then a floor under the chunk's
                low = _seek(indices, cursor[term], end[term], chunk)
                cursor[term] = low
                if low < end[term] and indices[low] == chunk:
                    total += data[low] * weights[term]
                    scored_before = scored_before or rank_of[term] > rank
            if scored_before:
                continue
            score = (total / chunk_scale[chunk] if use_chunk_scale else total) / query_scale
            if score > 0.0:
                kept[count] = np.rint(score * ROUNDING) / ROUNDING + 0.0
                count += 1
    if count < capacity:
        return -np.inf
    return np.partition(kept[:count], count - capacity)[count - capacity]


@_jit
def _maxscore(
    indptr, indices, data, columns, weights, bounds, allowed, use_allowed, chunk_scale,
    use_chunk_scale, query_scale, ties, use_ties, capacity, prime_postings, prime_window,
    essential_share, heap_scores, heap_ties, heap_positions,
):  # fmt: skip
    """MaxScore, document at a time, for non-negative contributions; the heap size.

    ``bounds`` holds each query term's largest possible share of a final
    score (after the scaling), in query-term order.
    """
    n_terms = len(columns)
    if n_terms == 0:
        return 0
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
    size = 0
    threshold = _primed_threshold(
        indptr, indices, data, columns, weights, order, allowed, use_allowed, chunk_scale,
        use_chunk_scale, query_scale, capacity, prime_postings, prime_window, cursor, end,
    )  # fmt: skip
    for term in range(n_terms):
        cursor[term] = indptr[columns[term]]
    first_essential = 0
    cut = threshold - SLACK_ABSOLUTE - SLACK_RELATIVE * abs(threshold)
    while first_essential < n_terms and prefix[first_essential] < cut:
        first_essential += 1
    # Where the floor leaves most postings essential, pruning cannot pay for walking them a
    # chunk at a time: the caller scores the query term at a time instead.
    essential = 0
    total_postings = 0
    for rank in range(n_terms):
        length = end[order[rank]] - cursor[order[rank]]
        total_postings += length
        if rank >= first_essential:
            essential += length
    if essential > essential_share * total_postings:
        return -1
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
            cursor[term] = _seek(indices, cursor[term], end[term], chunk)
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
    use_ties, capacity, may_prune, prune_min_postings, prime_postings,
    prime_window, essential_share, select_min_depth, select_factor, sample_size, accumulator, seen,
    touched, values, out_positions, out_scores, out_sizes,
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
        prune = may_prune and use_bounds and not signed and positive and postings >= prune_min_postings
        size = -1
        if prune:
            bounds = np.empty(len(columns), dtype=np.float64)
            for term in range(len(columns)):
                bounds[term] = term_bounds[columns[term]] * weights[term] / query_scale
            size = _maxscore(
                indptr, indices, data, columns, weights, bounds, allowed, use_allowed, chunk_scale,
                use_chunk_scale, query_scale, ties, use_ties, capacity, prime_postings, prime_window,
                essential_share, heap_scores, heap_ties, heap_positions,
            )  # fmt: skip
        if not prune or size < 0:
            size = _exhaustive(
                indptr, indices, data, columns, weights, allowed, use_allowed, chunk_scale,
                use_chunk_scale, query_scale, signed, use_bounds and positive, ties, use_ties,
                capacity, accumulator, seen, touched, values, heap_scores, heap_ties, heap_positions,
                select_min_depth, select_factor, sample_size,
            )  # fmt: skip
        _drain(heap_scores, heap_ties, heap_positions, size, out_positions[query], out_scores[query])
        out_sizes[query] = size
