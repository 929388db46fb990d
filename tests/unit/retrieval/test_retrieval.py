"""Properties of rankings, the sparse retrievers, LSA, exact search and fusion."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from rag.retrieval.bm25 import (
    BM25Index,
    bm25_breakdown,
    bm25_idf,
    bm25_index_from_counts,
    bm25_scores,
    bm25_search,
    build_bm25_index,
)
from rag.retrieval.fusion import reciprocal_rank_fusion, score_sum_fusion
from rag.retrieval.lsa import LSAModel, embed_queries, fit_lsa, lsa_search, nearest_terms
from rag.retrieval.search import Ranking, chunk_id_order, exact_search, ranked_ids, top_k, top_k_among
from rag.retrieval.tfidf import TfidfIndex, build_tfidf_index, tfidf_scores, tfidf_search
from rag.text import analyze

pytestmark = [pytest.mark.float_heavy, pytest.mark.usefixtures("single_threaded_blas")]


def reference_ranking(scores: np.ndarray, depth: int, tie_order: np.ndarray) -> np.ndarray:
    """A full sort, the definition top_k must agree with."""
    return np.lexsort((tie_order, -scores))[:depth]


def random_corpus(seed: int, n_chunks: int = 120, vocabulary: int = 60) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, vocabulary + 1)
    weights /= weights.sum()
    return [
        [f"w{j}" for j in rng.choice(vocabulary, size=rng.integers(1, 25), p=weights)]
        for _ in range(n_chunks)
    ]


# --------------------------------------------------------------------------
# top_k and Ranking
# --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_top_k_matches_a_full_sort_with_many_ties(seed):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 4, size=200).astype(float)  # heavy ties at every boundary
    tie_order = rng.permutation(200)
    for depth in (1, 3, 10, 57, 199, 200, 500):
        ranking = top_k(scores, depth, tie_order)
        expected = reference_ranking(scores, depth, tie_order)
        assert np.array_equal(ranking.positions, expected)
        assert np.array_equal(ranking.scores, scores[expected])


@pytest.mark.parametrize("seed", range(3))
def test_top_k_on_long_vectors_with_excluded_entries(seed):
    # Long enough for the sampled lower bound to prune; -inf marks unrankable chunks.
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 50, size=30_000).astype(float)
    scores[rng.random(30_000) < 0.7] = -np.inf
    tie_order = rng.permutation(30_000)
    rankable = np.flatnonzero(scores > -np.inf)
    for depth in (1, 10, 100, 5_000, 40_000):
        ranking = top_k(scores, depth, tie_order)
        expected = rankable[reference_ranking(scores[rankable], depth, tie_order[rankable])]
        assert np.array_equal(ranking.positions, expected)
    assert len(top_k(np.full(30_000, -np.inf), 10)) == 0


def test_top_k_breaks_ties_by_tie_order_not_position():
    scores = np.array([1.0, 2.0, 2.0, 2.0, 0.5])
    assert top_k(scores, 2).positions.tolist() == [1, 2]
    assert top_k(scores, 2, tie_order=np.array([0, 4, 3, 1, 2])).positions.tolist() == [3, 2]


def test_top_k_among_keeps_candidate_positions():
    ranking = top_k_among(np.array([7, 3, 9]), np.array([0.1, 0.9, 0.5]), 2, tie_order=np.arange(10))
    assert ranking.positions.tolist() == [3, 9]
    assert ranking.scores.tolist() == [0.9, 0.5]


def test_top_k_depth_zero_and_empty_and_invalid():
    assert len(top_k(np.array([1.0, 2.0]), 0)) == 0
    assert len(top_k(np.array([]), 5)) == 0
    with pytest.raises(ValueError, match="depth"):
        top_k(np.array([1.0]), -1)
    with pytest.raises(ValueError, match="NaN"):
        top_k(np.array([1.0, np.nan]), 1)
    with pytest.raises(ValueError, match="tie_order"):
        top_k(np.array([1.0, 2.0]), 1, tie_order=np.array([0]))


def test_ranking_rejects_mismatched_arrays():
    with pytest.raises(ValueError, match="one score per position"):
        Ranking(np.array([1, 2]), np.array([0.5]))


def test_chunk_id_order_ranks_ids_and_rejects_duplicates():
    assert chunk_id_order(["c", "a", "b"]).tolist() == [2, 0, 1]
    with pytest.raises(ValueError, match="'a'"):
        chunk_id_order(["a", "b", "a"])


# --------------------------------------------------------------------------
# BM25
# --------------------------------------------------------------------------


def test_lucene_idf_is_positive_and_classic_turns_negative():
    n = 10
    frequencies = np.arange(1, n + 1)
    assert np.all(bm25_idf(frequencies, n, "lucene") > 0)
    classic = bm25_idf(frequencies, n, "classic")
    assert np.all(classic[frequencies > n / 2] < 0)
    assert np.all(classic[frequencies < n / 2] > 0)
    assert classic[frequencies == n / 2][0] == 0.0
    with pytest.raises(ValueError, match="'okapi'"):
        bm25_idf(frequencies, n, "okapi")


def test_saturation_never_exceeds_k1_plus_one():
    k1 = 1.2
    chunks = [["x"] * count + ["filler"] * 3 for count in (1, 2, 5, 50, 5000)] + [["other"]]
    index = build_bm25_index(chunks, k1=k1, b=0.75)
    rows = bm25_breakdown(index, ["x"])
    saturations = [row.saturation for row in rows]
    assert all(value < k1 + 1 for value in saturations)
    assert saturations == sorted(saturations)  # more occurrences never score less
    assert saturations[-1] > 0.99 * (k1 + 1)
    for row in rows:
        assert row.contribution == pytest.approx(row.idf * row.saturation, rel=1e-15)


def test_one_occurrence_in_an_average_chunk_is_worth_exactly_the_idf():
    chunks = [["a", "b", "c"], ["a", "d", "e"], ["f", "g", "h"]]  # all of average length
    index = build_bm25_index(chunks)
    (row, _) = bm25_breakdown(index, ["a"])
    assert row.length_factor == pytest.approx(index.k1)
    assert row.contribution == pytest.approx(row.idf)


def test_b_zero_ignores_length_and_b_one_normalizes_fully():
    short, long = ["mars", "x"], ["mars"] + ["y"] * 9
    chunks = [short, long, ["z"] * 6]
    flat = bm25_scores(build_bm25_index(chunks, b=0.0), [["mars"]])[0]
    assert flat[0] == flat[1]
    full = build_bm25_index(chunks, b=1.0)
    scores = bm25_scores(full, [["mars"]])[0]
    assert scores[0] > scores[1]
    average = full.average_length
    k1 = full.k1
    for position, length in ((0, 2), (1, 10)):
        expected = full.idf[full.column_of["mars"]] * (k1 + 1) / (1 + k1 * length / average)
        assert scores[position] == pytest.approx(expected, rel=1e-14)


def test_repeated_query_terms_count_once():
    index = build_bm25_index(random_corpus(1))
    once = bm25_scores(index, [["w1", "w5"]])
    repeated = bm25_scores(index, [["w1", "w1", "w5", "w1"]])
    assert np.array_equal(once, repeated)


def test_empty_and_unknown_queries_give_empty_rankings():
    index = build_bm25_index(random_corpus(2))
    queries = [[], ["never-seen"], analyze("What is it?"), ["w0"]]
    rankings = bm25_search(index, queries, depth=10)
    assert [len(ranking) for ranking in rankings[:3]] == [0, 0, 0]
    assert len(rankings[3]) == 10


def test_only_matching_chunks_are_ranked():
    chunks = [["mars"], ["venus"], ["mars", "moons"], ["jupiter"]]
    (ranking,) = bm25_search(build_bm25_index(chunks), [["mars"]], depth=10)
    assert sorted(ranking.positions.tolist()) == [0, 2]


@pytest.mark.parametrize("idf", ["lucene", "classic"])
def test_sparse_search_agrees_with_dense_scores(idf):
    chunks = random_corpus(3)
    index = build_bm25_index(chunks, idf=idf)
    rng = np.random.default_rng(3)
    queries = [[f"w{j}" for j in rng.integers(0, 70, size=rng.integers(1, 5))] for _ in range(40)]
    tie_order = rng.permutation(len(chunks))
    scores = bm25_scores(index, queries)
    for query, ranking, row in zip(queries, bm25_search(index, queries, 15, tie_order), scores, strict=True):
        matching = np.flatnonzero([any(term in chunk for term in query) for chunk in chunks])
        expected = matching[reference_ranking(row[matching], 15, tie_order[matching])]
        assert np.array_equal(ranking.positions, expected)
        assert np.allclose(ranking.scores, row[expected], rtol=0, atol=1e-9)  # rounded to 9 decimals


def test_classic_idf_keeps_chunks_whose_score_sums_to_zero():
    # "a" is in exactly half the chunks, so its classic idf is ln(1) = 0.
    chunks = [["a", "b"], ["a", "c"], ["d"], ["e"]]
    (ranking,) = bm25_search(build_bm25_index(chunks, idf="classic"), [["a"]], depth=10)
    assert sorted(ranking.positions.tolist()) == [0, 1]
    assert ranking.scores.tolist() == [0.0, 0.0]


def test_reweighting_from_stored_counts_equals_indexing_again():
    chunks = random_corpus(10)
    index = build_bm25_index(chunks)
    reweighted = bm25_index_from_counts(index.term_counts, k1=0.9, b=0.4, idf="classic")
    direct = build_bm25_index(chunks, k1=0.9, b=0.4, idf="classic")
    queries = [["w0", "w3"], ["w12"]]
    assert np.array_equal(bm25_scores(reweighted, queries), bm25_scores(direct, queries))


def test_bm25_parameters_are_validated():
    with pytest.raises(ValueError, match="k1"):
        build_bm25_index([["a"]], k1=-1)
    with pytest.raises(ValueError, match="b must"):
        build_bm25_index([["a"]], b=1.5)
    with pytest.raises(ValueError, match="zero chunks"):
        build_bm25_index([])
    with pytest.raises(ValueError, match="string"):
        build_bm25_index(["a chunk given as text"])


def test_bm25_index_round_trips_through_npz(tmp_path):
    index = build_bm25_index(random_corpus(4), k1=1.2, b=0.6, idf="classic")
    np.savez(tmp_path / "bm25.npz", **index.to_arrays())
    with np.load(tmp_path / "bm25.npz") as stored:
        loaded = BM25Index.from_arrays(dict(stored))
    assert (loaded.k1, loaded.b, loaded.idf_variant) == (1.2, 0.6, "classic")
    queries = [["w1", "w7"], ["w30"]]
    assert np.array_equal(bm25_scores(loaded, queries), bm25_scores(index, queries))
    arrays = index.to_arrays()
    del arrays["weights"]
    with pytest.raises(ValueError, match="'weights'"):
        BM25Index.from_arrays(arrays)


# --------------------------------------------------------------------------
# tf-idf
# --------------------------------------------------------------------------


def test_raw_dot_products_favour_long_chunks_and_cosine_does_not():
    short = ["saturn", "rings"]
    long = ["saturn", "rings"] + [f"filler{i}" for i in range(30)] + ["saturn"]
    chunks = [short, long, ["other"], ["more"]]
    index = build_tfidf_index(chunks)
    cosine = tfidf_scores(index, [["saturn", "rings"]])[0]
    raw = tfidf_scores(index, [["saturn", "rings"]], normalize=False)[0]
    assert cosine[0] > cosine[1]
    assert raw[1] > raw[0]
    assert cosine[0] == pytest.approx(1.0)  # identical term vectors


def test_tfidf_query_repeats_are_weighted_sublinearly():
    index = build_tfidf_index(random_corpus(5))
    once = tfidf_scores(index, [["w2", "w9"]], normalize=False)[0]
    twice = tfidf_scores(index, [["w2", "w2", "w9"]], normalize=False)[0]
    w2 = index.weights[:, index.column_of["w2"]].toarray().ravel() * index.idf[index.column_of["w2"]]
    assert np.allclose(twice - once, math.log(2) * w2, rtol=0, atol=1e-12)


def test_tfidf_search_agrees_with_scores_and_handles_empty_queries(tmp_path):
    chunks = random_corpus(6)
    index = build_tfidf_index(chunks)
    queries = [["w3", "w11"], [], ["unknown"]]
    rankings = tfidf_search(index, queries, depth=5)
    scores = tfidf_scores(index, queries)
    assert np.allclose(rankings[0].scores, np.sort(scores[0])[::-1][:5], rtol=0, atol=1e-9)  # 9 decimals
    assert len(rankings[1]) == len(rankings[2]) == 0
    np.savez(tmp_path / "tfidf.npz", **index.to_arrays())
    with np.load(tmp_path / "tfidf.npz") as stored:
        loaded = TfidfIndex.from_arrays(dict(stored))
    assert np.array_equal(tfidf_scores(loaded, queries), scores)


# --------------------------------------------------------------------------
# LSA and exact search
# --------------------------------------------------------------------------


def test_exact_search_matches_a_full_sort_and_skips_zero_queries():
    rng = np.random.default_rng(7)
    matrix = rng.normal(size=(300, 8))
    queries = rng.normal(size=(5, 8))
    queries[2] = 0.0
    tie_order = rng.permutation(300)
    rankings = exact_search(matrix, queries, 12, tie_order, batch_size=2)
    for query, ranking in zip(queries, rankings, strict=True):
        if not query.any():
            assert len(ranking) == 0
            continue
        expected = reference_ranking(matrix @ query, 12, tie_order)
        assert np.array_equal(ranking.positions, expected)
    with pytest.raises(ValueError, match="dimension"):
        exact_search(matrix, rng.normal(size=(1, 3)), 5)


def test_lsa_embeddings_are_unit_length_and_deterministic():
    chunks = random_corpus(8)
    first, second = fit_lsa(chunks, 10), fit_lsa(chunks, 10)
    assert np.allclose(np.linalg.norm(first.chunk_embeddings, axis=1), 1.0)
    assert np.array_equal(first.chunk_embeddings, second.chunk_embeddings)
    assert np.all(np.diff(first.singular_values) <= 0)
    largest = np.abs(first.components).argmax(axis=0)
    assert np.all(first.components[largest, np.arange(10)] > 0)  # the sign convention


def test_lsa_drops_rare_terms_and_clips_dimensions():
    chunks = [["a", "b", "rare1"], ["a", "c"], ["b", "c", "rare2"], ["a", "b", "c"]]
    with pytest.warns(UserWarning, match="using 3"):
        model = fit_lsa(chunks, 50)
    assert model.vocabulary.tolist() == ["a", "b", "c"]
    assert (model.dimensions, model.requested_dimensions) == (3, 50)
    assert np.allclose(embed_queries(model, [["rare1"]]), 0.0)
    assert len(lsa_search(model, [["rare1"]], 3)[0]) == 0
    with pytest.raises(ValueError, match="dimensions"):
        fit_lsa(chunks, 0)
    with pytest.raises(ValueError, match="no term occurs"):
        fit_lsa([["x"], ["y"]], 2)


def test_lsa_links_terms_that_never_co_occur():
    # "cosmonaut" and "astronaut" never share a chunk but share their neighbours.
    chunks = [
        ["astronaut", "rocket", "orbit"],
        ["cosmonaut", "rocket", "orbit"],
        ["astronaut", "station"],
        ["cosmonaut", "station"],
        ["volcano", "lava", "crater"],
        ["volcano", "lava"],
        ["crater", "impact"],
        ["impact", "lava"],
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = fit_lsa(chunks, 2)
    assert nearest_terms(model, "astronaut", 1)[0][0] == "cosmonaut"
    (ranking,) = lsa_search(model, [["astronaut"]], 4)
    assert set(ranking.positions[:4].tolist()) == {0, 1, 2, 3}
    with pytest.raises(ValueError, match="'pluto'"):
        nearest_terms(model, "pluto")


def test_lsa_model_round_trips_through_npz(tmp_path):
    model = fit_lsa(random_corpus(9), 6)
    np.savez(tmp_path / "lsa.npz", **model.to_arrays())
    with np.load(tmp_path / "lsa.npz") as stored:
        loaded = LSAModel.from_arrays(dict(stored))
    queries = [["w1", "w4"], ["w20"]]
    assert np.array_equal(embed_queries(loaded, queries), embed_queries(model, queries))


# --------------------------------------------------------------------------
# Fusion
# --------------------------------------------------------------------------


def ranking_of(positions: list[int], scores: list[float] | None = None) -> Ranking:
    scores = scores if scores is not None else [float(len(positions) - i) for i in range(len(positions))]
    return Ranking(np.array(positions), np.array(scores))


def test_reciprocal_rank_fusion_with_lists_of_different_lengths():
    fused = reciprocal_rank_fusion([ranking_of([4, 2, 0]), ranking_of([2])], constant=60)
    assert fused.positions.tolist() == [2, 4, 0]
    assert fused.scores.tolist() == pytest.approx([1 / 62 + 1 / 61, 1 / 61, 1 / 63])


def test_fusion_ties_are_broken_by_tie_order():
    # A Latin square: every chunk collects ranks 1, 2 and 3, in a different
    # list order. With c = 2, adding 1/3, 1/4, 1/5 in those orders gives
    # totals that differ in the last bit, so only a canonical summation
    # makes the tie exact and lets tie_order settle it.
    lists = [ranking_of([5, 8, 1]), ranking_of([8, 1, 5]), ranking_of([1, 5, 8])]
    naive = [1 / 3 + 1 / 5 + 1 / 4, 1 / 4 + 1 / 3 + 1 / 5, 1 / 5 + 1 / 4 + 1 / 3]
    assert len(set(naive)) > 1
    tie_order = np.arange(10)
    fused = reciprocal_rank_fusion(lists, constant=2, tie_order=tie_order)
    totals = dict(zip(fused.positions.tolist(), fused.scores.tolist(), strict=True))
    assert totals[5] == totals[8] == totals[1]
    assert fused.positions.tolist() == [1, 5, 8]
    reversed_order = reciprocal_rank_fusion(lists, constant=2, tie_order=tie_order[::-1].copy())
    assert reversed_order.positions.tolist() == [8, 5, 1]


def test_small_constants_weight_the_top_ranks_more():
    # Chunk 0 is first in one list only; chunk 2 is third in both.
    lists = [ranking_of([0, 1, 2]), ranking_of([4, 3, 2])]
    assert reciprocal_rank_fusion(lists, constant=0, depth=2).positions.tolist() == [0, 4]
    assert reciprocal_rank_fusion(lists, constant=60, depth=1).positions.tolist() == [2]
    with pytest.raises(ValueError, match="constant"):
        reciprocal_rank_fusion(lists, constant=-1)


def test_score_sum_fusion_adds_raw_scores_with_missing_as_zero():
    bm25 = ranking_of([0, 1, 2], [26.0, 12.0, 3.0])
    dense = ranking_of([3, 2, 1], [0.93, 0.9, 0.1])
    fused = score_sum_fusion([bm25, dense])
    assert fused.positions.tolist() == [0, 1, 2, 3]
    assert fused.scores.tolist() == pytest.approx([26.0, 12.1, 3.9, 0.93])
    # The larger scale decides: the dense list's favourite comes last, while
    # rank fusion prefers the chunks both lists place in the middle.
    assert fused.positions[-1] == 3
    assert reciprocal_rank_fusion([bm25, dense], constant=1).positions[:2].tolist() == [1, 2]


def test_fusion_rejects_duplicate_chunks_and_handles_no_lists():
    with pytest.raises(ValueError, match="ranking 1"):
        reciprocal_rank_fusion([ranking_of([1, 2]), ranking_of([3, 3])])
    assert len(reciprocal_rank_fusion([])) == 0
    assert len(score_sum_fusion([Ranking.empty(), Ranking.empty()])) == 0


def test_ranked_ids_maps_positions_to_chunk_ids():
    assert ranked_ids(ranking_of([2, 0]), ["a", "b", "c"]) == ["c", "a"]
