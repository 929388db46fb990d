"""The compiled and pruned sparse search ranks exactly as the numpy loop did before them.

The reference below is the sparse search as it was before the compiled loop
(MaxScore pruning, numba), copied unchanged but for names: both engines of
``rag.retrieval.search.sparse_search`` must return its positions and scores
bit for bit, on seeded random collections, depths, k1, b, idf variants,
stemming, tf-idf weightings, tie orders and prefilter masks.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

import numpy as np
import pytest

from rag.retrieval import search, sparse_kernels
from rag.retrieval.bm25 import BM25Index, bm25_search, build_bm25_index
from rag.retrieval.tfidf import TfidfIndex, build_tfidf_index, query_lengths, query_weights, tfidf_search
from rag.text import analyze

SAMPLE_SIZE = 1024  # the reference's strided sample (search.SAMPLE_SIZE then)

# --------------------------------------------------------------------------
# The reference: rag.retrieval.search.sparse_search and _best before the compiled loop
# --------------------------------------------------------------------------


def reference_best(
    scores: np.ndarray, depth: int, ties: np.ndarray | None, floor: float = -np.inf
) -> np.ndarray:
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


def reference_sparse_search(
    queries: Sequence[tuple[np.ndarray, np.ndarray]],
    chunk_weights,
    depth: int,
    tie_order: np.ndarray | None = None,
    signed: bool = False,
    chunk_scale: np.ndarray | None = None,
    query_scale: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
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
    """
    n_chunks = chunk_weights.shape[0]
    if tie_order is not None:
        tie_order = np.asarray(tie_order)
    if chunk_weights.format != "csc":
        chunk_weights = chunk_weights.tocsc()
    indptr, indices, data = chunk_weights.indptr, chunk_weights.indices, chunk_weights.data
    rankings: list[tuple[np.ndarray, np.ndarray]] = []
    for row, (terms, weights) in enumerate(queries):
        if len(terms) == 0:
            rankings.append((np.empty(0, np.int64), np.empty(0)))
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
        scores = np.round(scores, 9) + 0.0
        chosen = reference_best(scores, depth, tie_order)
        rankings.append((chosen, scores[chosen]))
    return rankings


# --------------------------------------------------------------------------
# Random cases
# --------------------------------------------------------------------------

WORDS = (
    "orbit orbits orbiting moon moons planet planets planetary ring rings ringed storm storms "
    "crater craters ice icy rock rocky gas giant giants sun solar dust dusty"
).split()
CASES = 2_000
needs_numba = pytest.mark.skipif(not sparse_kernels.AVAILABLE, reason="numba is not installed")


def random_collection(rng: np.random.Generator) -> tuple[list[list[str]], list[list[str]]]:
    """Chunks and queries over a small vocabulary, stemmed or not, with repeats, duplicates and empties."""
    n_words = int(rng.integers(2, len(WORDS) + 1))
    words = WORDS[:n_words]
    weights = 1.0 / np.arange(1, n_words + 1) ** rng.uniform(0.0, 2.0)
    weights /= weights.sum()
    stem = bool(rng.integers(2))

    def text(length: int) -> list[str]:
        return analyze(" ".join(rng.choice(words, size=length, p=weights)), stem=stem)

    chunks = [text(int(rng.integers(0, 12))) for _ in range(int(rng.integers(1, 80)))]
    for _ in range(int(rng.integers(0, 4))):  # exact duplicates: tied scores
        chunks.append(list(chunks[int(rng.integers(len(chunks)))]))
    if not any(chunks):
        chunks[0] = [words[0]]
    queries = [text(int(rng.integers(0, 7))) for _ in range(int(rng.integers(1, 6)))]
    queries.append(["unknownterm"])
    return chunks, queries


def random_options(rng: np.random.Generator, n_chunks: int) -> dict:
    depth = int(rng.choice([0, 1, 2, 3, 5, 10, 20, 100, 1000]))
    tie_order = rng.permutation(n_chunks) if rng.integers(2) else None
    allowed = rng.random(n_chunks) < rng.uniform(0.1, 1.0) if rng.integers(2) else None
    return {"depth": depth, "tie_order": tie_order, "allowed": allowed}


def reference_bm25(index: BM25Index, queries: list[list[str]], **options) -> list:
    vectors = search.query_term_counts(queries, index.column_of, distinct=True)
    signed = index.idf_variant != "lucene"
    return reference_sparse_search(
        vectors, index.weight_matrix, options["depth"], options["tie_order"], signed=signed,
        allowed=options["allowed"],
    )  # fmt: skip


def reference_tfidf(index: TfidfIndex, queries: list[list[str]], normalize: bool, **options) -> list:
    weighted = query_weights(index, queries)
    scales = {}
    if normalize:
        lengths = query_lengths(weighted)
        scales = {"chunk_scale": index.chunk_scale, "query_scale": np.where(lengths > 0, lengths, 1.0)}
    return reference_sparse_search(
        weighted, index.weights, options["depth"], options["tie_order"], allowed=options["allowed"], **scales
    )


def same(rankings: Sequence[search.Ranking], reference: list) -> bool:
    return len(rankings) == len(reference) and all(
        np.array_equal(ranking.positions, positions) and np.array_equal(ranking.scores, scores)
        for ranking, (positions, scores) in zip(rankings, reference, strict=True)
    )


@needs_numba
def test_compiled_and_pruned_rankings_equal_the_reference(monkeypatch):
    """2,000 seeded cases; in each, both engines, and MaxScore forced on every query or never."""
    rng = np.random.default_rng(20261205)
    pruned = 0
    for case in range(CASES):
        chunks, queries = random_collection(rng)
        options = random_options(rng, len(chunks))
        prune = bool(rng.integers(2))
        monkeypatch.setattr(sparse_kernels, "PRUNE_MIN_POSTINGS", 0 if prune else 10**9)
        monkeypatch.setattr(sparse_kernels, "PRUNE_MIN_CHUNKS", 0 if prune else 10**9)
        monkeypatch.setattr(sparse_kernels, "PRUNE_MAX_DEPTH", 10**9 if prune else 0)
        depth_share = float(rng.choice([0.0, 1.0])) if prune else 0.0
        monkeypatch.setattr(sparse_kernels, "PRUNE_DEPTH_SHARE", depth_share)
        # MaxScore's exact floor from few or many postings of its strongest term, and its hand-over
        # to the exhaustive loop never (share 1), always (share 0) or where the floor leaves much.
        monkeypatch.setattr(sparse_kernels, "PRIME_POSTINGS", int(rng.choice([1, 2, 5, 32, 4096])))
        monkeypatch.setattr(sparse_kernels, "PRIME_WINDOW", int(rng.choice([1, 3, 32, 1024])))
        monkeypatch.setattr(sparse_kernels, "PRIME_WINDOW_DEPTHS", int(rng.choice([0, 1, 3, 50])))
        essential_share = float(rng.choice([1.0, 1.0, 0.0, rng.uniform()]))
        monkeypatch.setattr(sparse_kernels, "ESSENTIAL_SHARE", essential_share)
        # The exhaustive loop's sampled floor on every query it can cut, from small or large samples
        # (a small one often guesses too high, and the loop must then do without).
        select = bool(rng.integers(2))
        monkeypatch.setattr(sparse_kernels, "SELECT_MIN_DEPTH", 1 if select else 32)
        monkeypatch.setattr(sparse_kernels, "SELECT_FACTOR", 1 if select else 4)
        monkeypatch.setattr(sparse_kernels, "SELECT_SAMPLE", int(rng.choice([1, 2, 3, 7, 2048])))
        if rng.integers(2):
            k1, b = float(rng.choice([0.0, rng.uniform(0, 3)])), float(rng.choice([0.0, 1.0, rng.uniform()]))
            idf = str(rng.choice(["lucene", "classic"]))
            index = build_bm25_index(chunks, k1=k1, b=b, idf=idf)
            expected = reference_bm25(index, queries, **options)
            label = f"case {case}: bm25 k1={k1} b={b} idf={idf}"
            for engine in ("compiled", "numpy"):
                assert same(bm25_search(index, queries, engine=engine, **options), expected), (
                    f"{label} {engine}"
                )
            pruned += prune and idf == "lucene"
        else:
            normalize, sublinear = bool(rng.integers(2)), bool(rng.integers(2))
            index = build_tfidf_index(chunks, sublinear=sublinear)
            expected = reference_tfidf(index, queries, normalize, **options)
            label = f"case {case}: tfidf normalize={normalize} sublinear={sublinear}"
            for engine in ("compiled", "numpy"):
                found = tfidf_search(index, queries, normalize=normalize, engine=engine, **options)
                assert same(found, expected), f"{label} {engine}"
            pruned += prune
    assert pruned > CASES // 4  # MaxScore took a good share of the cases


@needs_numba
def test_a_larger_collection_prunes_and_still_ranks_like_the_reference(monkeypatch):
    """Zipf-like terms over 3,000 chunks: long postings lists, where MaxScore skips most of them."""
    monkeypatch.setattr(sparse_kernels, "PRUNE_MIN_CHUNKS", 0)
    rng = np.random.default_rng(7)
    vocabulary = np.array([f"t{rank}" for rank in range(400)])
    p = 1.0 / np.arange(1, 401) ** 1.1
    p /= p.sum()
    chunks = [list(rng.choice(vocabulary, size=int(rng.integers(1, 60)), p=p)) for _ in range(3_000)]
    queries = [list(rng.choice(vocabulary, size=int(rng.integers(1, 6)), p=p)) for _ in range(60)]
    index = build_bm25_index(chunks)
    half = rng.random(len(chunks)) < 0.5
    for depth in (1, 10, 100, 1000):
        for allowed in (None, half):
            options = {"depth": depth, "tie_order": None, "allowed": allowed}
            expected = reference_bm25(index, [sorted(set(query)) for query in queries], **options)
            found = bm25_search(
                index, [sorted(set(query)) for query in queries], engine="compiled", **options
            )
            assert same(found, expected), (depth, allowed is None)


def test_bounds_bound_every_weight_and_survive_loading():
    rng = np.random.default_rng(3)
    chunks, _ = random_collection(rng)
    bm25 = build_bm25_index(chunks)
    tfidf = build_tfidf_index(chunks)
    columns = np.repeat(np.arange(len(bm25.vocabulary)), np.diff(bm25.counts.indptr))
    assert np.all(bm25.weights <= bm25.term_bounds[columns])
    assert np.array_equal(np.maximum.reduceat(bm25.weights, bm25.counts.indptr[:-1]), bm25.term_bounds)
    normalized = tfidf.weights.data / tfidf.chunk_scale[tfidf.weights.indices]
    assert np.all(normalized <= tfidf.cosine_bounds[columns])
    # Computed again from a loaded index, not saved: the saved arrays (and their sizes) are as before.
    loaded = BM25Index.from_arrays(bm25.to_arrays())
    assert "term_bounds" not in bm25.to_arrays()
    assert np.array_equal(loaded.term_bounds, bm25.term_bounds)
    assert np.array_equal(TfidfIndex.from_arrays(tfidf.to_arrays()).cosine_bounds, tfidf.cosine_bounds)


def test_column_maxima_across_blocks(monkeypatch):
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 5, 50)
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    values = rng.random(indptr[-1])
    expected = np.array(
        [values[a:b].max() if b > a else 0.0 for a, b in zip(indptr[:-1], indptr[1:], strict=True)]
    )
    for block in (1, 3, 7, 1 << 22):
        monkeypatch.setattr(search, "COLUMN_BLOCK", block)
        assert np.array_equal(search.column_maxima(indptr, values), expected)
    divisors = rng.uniform(0.5, 2.0, 10)
    rows = rng.integers(0, 10, indptr[-1])
    divided = values / divisors[rows]
    expected = np.array(
        [divided[a:b].max() if b > a else 0.0 for a, b in zip(indptr[:-1], indptr[1:], strict=True)]
    )
    monkeypatch.setattr(search, "COLUMN_BLOCK", 4)
    assert np.array_equal(search.column_maxima(indptr, values, divisors, rows), expected)


def test_an_unknown_engine_is_one_clear_error():
    index = build_bm25_index([["a"]])
    with pytest.raises(ValueError, match="unknown search engine 'fast'"):
        bm25_search(index, [["a"]], 1, engine="fast")


def test_small_collections_do_not_load_numba():
    """A pipeline job over a small collection never imports numba (it would cost it a third of a second)."""
    code = (
        "import sys\n"
        "from rag.retrieval.bm25 import bm25_search, build_bm25_index\n"
        "bm25_search(build_bm25_index([['a', 'b'], ['b']]), [['b']], 10)\n"
        "print('numba' in sys.modules)\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "False"
