"""Spherical k-means, exact search and the IVF index, checked against FAISS and brute force."""

from __future__ import annotations

import faiss
import numpy as np
import pandas as pd
import pytest

from rag.retrieval import ivf, synthetic

pytestmark = pytest.mark.float_heavy


# Two float32 dot products of unit vectors summed in different orders (another
# BLAS kernel, another blocking) agree to a few units in the last place.
FLOAT32_SCORE_TOLERANCE = 1e-6


def unit_rows(generator: np.random.Generator, count: int, dimensions: int) -> np.ndarray:
    rows = generator.standard_normal((count, dimensions))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def grid_vectors(seed: int, count: int, dimensions: int) -> np.ndarray:
    """Small-integer vectors: every dot product is exact in float32, so ties are real ties."""
    generator = np.random.default_rng(seed)
    values = generator.integers(-2, 3, size=(count, dimensions)).astype(np.float32)
    values[~values.any(axis=1), 0] = 1.0
    return values


def brute_force_ranking(vectors: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Full float64 sort by (-score, position): the definition of the exact ranking."""
    scores = queries.astype(np.float64) @ vectors.astype(np.float64).T
    positions = np.arange(vectors.shape[0])
    return np.array([np.lexsort((positions, -row))[:k] for row in scores])


def probed_lists(index: ivf.IVFIndex, queries: np.ndarray, probes: int) -> np.ndarray:
    scores = queries.astype(np.float64) @ index.centroids.astype(np.float64).T
    lists = np.arange(index.list_count)
    return np.array([np.lexsort((lists, -row))[:probes] for row in scores])


@pytest.fixture(scope="module")
def clustered() -> tuple[np.ndarray, np.ndarray, ivf.IVFIndex]:
    vectors = synthetic.clustered_unit_vectors(count=3_000, dimensions=16, centres=64, spread=1.2, seed=5)
    queries = synthetic.queries_near_clusters(count=120, dimensions=16, centres=64, spread=1.2, seed=5)
    return vectors, queries, ivf.build_ivf(vectors, 24, seed=1)


# --------------------------------------------------------------------------- exact search


def test_exact_search_breaks_ties_by_position_like_a_full_sort() -> None:
    vectors = grid_vectors(0, 300, 5)
    queries = grid_vectors(1, 40, 5)
    result = ivf.exact_search(vectors, queries, 25)
    assert np.array_equal(result.positions, brute_force_ranking(vectors, queries, 25))
    expected_scores = np.take_along_axis(queries @ vectors.T, result.positions, axis=1)
    assert np.array_equal(result.scores, expected_scores)
    assert np.all(result.share_scanned == 1.0)


def test_exact_search_agrees_with_faiss_flat_inner_product() -> None:
    generator = np.random.default_rng(7)
    vectors = unit_rows(generator, 4_000, 32)
    queries = unit_rows(generator, 60, 32)
    flat = faiss.IndexFlatIP(32)
    flat.add(vectors)
    faiss_scores, faiss_positions = flat.search(queries, 10)
    result = ivf.exact_search(vectors, queries, 10)
    assert np.array_equal(result.positions, faiss_positions)
    np.testing.assert_allclose(result.scores, faiss_scores, rtol=0, atol=1e-5)


def test_exact_search_with_k_beyond_the_collection_returns_every_vector() -> None:
    vectors = grid_vectors(2, 7, 4)
    queries = grid_vectors(3, 3, 4)
    result = ivf.exact_search(vectors, queries, 50)
    assert result.positions.shape == (3, 7)
    assert np.array_equal(result.positions, brute_force_ranking(vectors, queries, 7))


# --------------------------------------------------------------------------- recall formula


def test_recall_against_exact_is_the_mean_share_of_the_exact_top_k() -> None:
    approximate = np.array([[1, 2, 3], [4, 5, 6], [9, -1, -1]])
    exact = np.array([[3, 2, 9], [7, 8, 9], [9, 8, 7]])
    # Query 1 finds 2 of 3, query 2 none, query 3 one (padding never counts).
    assert ivf.recall_against_exact(approximate, exact, 3) == pytest.approx((2 / 3 + 0 + 1 / 3) / 3)
    assert ivf.recall_against_exact(approximate, exact, 1) == pytest.approx(1 / 3)


def test_recall_against_exact_rejects_mismatched_input() -> None:
    with pytest.raises(ValueError, match="queries"):
        ivf.recall_against_exact(np.zeros((2, 3), int), np.zeros((3, 3), int), 3)
    with pytest.raises(ValueError, match="k=5"):
        ivf.recall_against_exact(np.zeros((2, 3), int), np.zeros((2, 3), int), 5)


# --------------------------------------------------------------------------- spherical k-means


def test_kmeans_objective_never_decreases_and_matches_its_centroids() -> None:
    vectors = synthetic.clustered_unit_vectors(count=2_000, dimensions=12, centres=40, spread=1.5, seed=3)
    result = ivf.spherical_kmeans(vectors, 30, seed=4, max_iterations=40)
    assert result.iterations >= 3
    steps = np.diff(result.objective)
    assert np.all(steps >= -1e-9 * np.abs(result.objective[1:]))
    assert result.objective[-1] > result.objective[0]

    data = vectors.astype(np.float64)
    np.testing.assert_allclose(np.linalg.norm(result.centroids, axis=1), 1.0)
    # Assignments compare similarities rounded to the precision contract.
    assert np.array_equal(result.assignment, np.argmax(np.round(data @ result.centroids.T, 9), axis=1))
    final = np.einsum("ij,ij->i", data, result.centroids[result.assignment]).sum()
    assert final == pytest.approx(result.objective[-1], rel=1e-12)


def test_converged_centroids_are_the_normalized_sums_of_their_lists() -> None:
    vectors = synthetic.clustered_unit_vectors(count=600, dimensions=8, centres=6, spread=0.3, seed=9)
    result = ivf.spherical_kmeans(vectors, 6, seed=0, max_iterations=100)
    assert result.converged
    for list_id in range(6):
        members = vectors[result.assignment == list_id].astype(np.float64)
        total = members.sum(axis=0)
        np.testing.assert_allclose(result.centroids[list_id], total / np.linalg.norm(total), atol=1e-12)


def test_kmeans_is_deterministic_for_a_seed() -> None:
    vectors = synthetic.clustered_unit_vectors(count=1_000, dimensions=8, centres=20, seed=2)
    first = ivf.spherical_kmeans(vectors, 10, seed=11)
    second = ivf.spherical_kmeans(vectors, 10, seed=11)
    other = ivf.spherical_kmeans(vectors, 10, seed=12)
    assert np.array_equal(first.centroids, second.centroids)
    assert np.array_equal(first.assignment, second.assignment)
    assert np.array_equal(first.objective, second.objective)
    assert not np.array_equal(first.centroids, other.centroids)


def test_an_empty_list_restarts_at_the_worst_served_vector() -> None:
    vectors = np.array([[0.6, 0.8], [0.8, 0.6], [0.0, 1.0], [-1.0, 0.0]])
    # List 2 is empty; vector 3 is the worst served (similarity -1) and its
    # list 0 has another member, so list 2 restarts on it.
    assignment = np.array([0, 1, 1, 0])
    similarity = np.array([0.5, 0.9, 0.9, -1.0])
    centroids = ivf._update_centroids(
        vectors, np.ascontiguousarray(vectors.T), assignment, similarity, list_count=3
    )
    np.testing.assert_allclose(centroids[2], [-1.0, 0.0])
    np.testing.assert_allclose(centroids[1], np.array([0.8, 1.6]) / np.linalg.norm([0.8, 1.6]))


def test_an_empty_list_never_takes_the_only_member_of_another_list() -> None:
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.9], [0.6, 0.8]])
    # Vector 0 is worst served but alone in list 0; the next worst with a
    # list to spare is vector 2.
    assignment = np.array([0, 1, 1, 1])
    similarity = np.array([0.1, 1.0, 0.2, 0.8])
    centroids = ivf._update_centroids(
        vectors, np.ascontiguousarray(vectors.T), assignment, similarity, list_count=3
    )
    np.testing.assert_allclose(centroids[0], [1.0, 0.0])
    np.testing.assert_allclose(centroids[2], [0.0, 1.0])


def test_a_list_whose_members_cancel_out_restarts_too() -> None:
    vectors = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [-1.0, 0.0]])
    # List 0 holds two opposite vectors (sum zero, no direction) and list 2
    # is empty. Worst first: vector 3 restarts list 0; vector 0 is then alone
    # in list 0 and cannot be spared, so vector 1 restarts list 2.
    assignment = np.array([0, 1, 1, 0])
    similarity = np.array([0.5, 0.9, 0.9, -1.0])
    centroids = ivf._update_centroids(
        vectors, np.ascontiguousarray(vectors.T), assignment, similarity, list_count=3
    )
    np.testing.assert_allclose(centroids[0], [-1.0, 0.0])
    np.testing.assert_allclose(centroids[2], [0.8, 0.6])


def test_fewer_distinct_vectors_than_lists_leaves_lists_empty_but_searchable() -> None:
    # Two directions repeated, four lists: some lists must stay empty.
    vectors = np.repeat(np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=np.float32), 10, axis=0)
    result = ivf.spherical_kmeans(vectors, 4, seed=0, max_iterations=5)
    assert np.all(np.isfinite(result.centroids))
    assert np.all(np.diff(result.objective) >= 0)
    assert result.objective[-1] == pytest.approx(20.0)
    index = ivf.build_ivf(vectors, 4, seed=0, max_iterations=5)
    assert 0 in index.list_sizes
    queries = np.array([[1.0, 0.2, 0.0], [0.1, 1.0, 0.0]], dtype=np.float32)
    full = index.search(queries, 4, 12)
    assert np.array_equal(full.positions, ivf.exact_search(vectors, queries, 12).positions)


def test_more_lists_than_vectors_is_an_error_naming_both_counts() -> None:
    vectors = grid_vectors(4, 5, 3)
    with pytest.raises(ValueError, match=r"6 lists from only 5 vectors"):
        ivf.spherical_kmeans(vectors, 6)
    with pytest.raises(ValueError, match=r"6 lists from only 5 vectors"):
        ivf.build_ivf(vectors, 6)


def test_as_many_lists_as_vectors_gives_one_vector_per_list() -> None:
    vectors = grid_vectors(5, 9, 4)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    unique = np.unique(vectors, axis=0)
    index = ivf.build_ivf(unique, len(unique), seed=3)
    assert np.all(index.list_sizes == 1)


def test_zero_vectors_are_filed_without_breaking_the_clustering() -> None:
    generator = np.random.default_rng(8)
    vectors = unit_rows(generator, 50, 6)
    vectors[[3, 17]] = 0.0
    result = ivf.spherical_kmeans(vectors, 5, seed=0)
    assert np.all(np.isfinite(result.centroids))
    assert result.assignment[3] == 0 and result.assignment[17] == 0


# --------------------------------------------------------------------------- the IVF index


def test_probing_every_list_reproduces_exact_search_with_ties() -> None:
    vectors = grid_vectors(10, 400, 6)
    queries = grid_vectors(11, 50, 6)
    index = ivf.build_ivf(vectors, 7, seed=0)
    full = index.search(queries, 7, 30)
    exact = ivf.exact_search(vectors, queries, 30)
    assert np.array_equal(full.positions, exact.positions)
    assert np.array_equal(full.scores, exact.scores)
    assert np.array_equal(full.positions, brute_force_ranking(vectors, queries, 30))
    assert np.all(full.share_scanned == 1.0)


def test_probing_every_list_reproduces_exact_search_on_unit_vectors(clustered) -> None:
    vectors, queries, index = clustered
    full = index.search(queries, index.list_count, 10)
    exact = ivf.exact_search(vectors, queries, 10)
    assert np.array_equal(full.positions, exact.positions)
    # Two computation paths (one matrix product per list, one over all
    # vectors): their float32 sums may differ in the last bit, never more.
    np.testing.assert_allclose(full.scores, exact.scores, rtol=0, atol=FLOAT32_SCORE_TOLERANCE)


def test_lists_are_contiguous_slices_of_the_kmeans_lists(clustered) -> None:
    vectors, _, index = clustered
    clustering = ivf.spherical_kmeans(vectors, 24, seed=1)
    assert np.array_equal(index.stored_vectors, vectors[index.original_positions])
    for list_id in range(index.list_count):
        members = index.original_positions[index.list_offsets[list_id] : index.list_offsets[list_id + 1]]
        assert np.array_equal(members, np.flatnonzero(clustering.assignment == list_id))


def test_recall_rises_with_probes_and_counts_the_scanned_exact_neighbours(clustered) -> None:
    vectors, queries, index = clustered
    k = 10
    exact = brute_force_ranking(vectors, queries, k)
    list_of = np.empty(index.size, dtype=np.int64)
    for list_id in range(index.list_count):
        low, high = index.list_offsets[list_id], index.list_offsets[list_id + 1]
        list_of[index.original_positions[low:high]] = list_id
    recalls = []
    for probes in range(1, index.list_count + 1):
        result = index.search(queries, probes, k)
        recall = ivf.recall_against_exact(result.positions, exact, k)
        # A true neighbour is found exactly when its list is probed.
        lists = probed_lists(index, queries, probes)
        scanned_neighbours = np.mean(
            [np.isin(list_of[row], probe).sum() for row, probe in zip(exact, lists, strict=True)]
        )
        assert recall == pytest.approx(scanned_neighbours / k)
        sizes = index.list_sizes[lists].sum(axis=1) / index.size
        np.testing.assert_allclose(result.share_scanned, sizes)
        recalls.append(recall)
    assert np.all(np.diff(recalls) >= 0)
    assert recalls[0] < 1.0
    assert recalls[-1] == 1.0


def test_search_matches_faiss_ivf_given_the_same_lists() -> None:
    generator = np.random.default_rng(21)
    vectors = synthetic.clustered_unit_vectors(count=3_000, dimensions=24, centres=50, spread=1.0, seed=21)
    queries = unit_rows(generator, 80, 24)
    centroids = ivf.spherical_kmeans(vectors, 20, seed=0).centroids.astype(np.float32)
    # File vectors with float32 scores, as FAISS does, so both hold the same lists.
    assignment = np.argmax(vectors @ centroids.T, axis=1)
    order = np.argsort(assignment, kind="stable")
    index = ivf.IVFIndex.from_arrays(
        {
            "centroids": centroids,
            "list_offsets": np.concatenate(([0], np.cumsum(np.bincount(assignment, minlength=20)))),
            "original_positions": order,
            "stored_vectors": vectors[order],
        }
    )
    quantizer = faiss.IndexFlatIP(24)
    quantizer.add(centroids)
    theirs = faiss.IndexIVFFlat(quantizer, 24, 20, faiss.METRIC_INNER_PRODUCT)
    theirs.is_trained = True
    theirs.add(vectors)
    for probes in (1, 3, 8):
        theirs.nprobe = probes
        faiss_scores, faiss_positions = theirs.search(queries, 10)
        ours = index.search(queries, probes, 10)
        assert np.array_equal(ours.positions, faiss_positions)
        np.testing.assert_allclose(ours.scores, faiss_scores, rtol=0, atol=1e-5)


def test_k_beyond_the_scanned_vectors_returns_what_was_scanned() -> None:
    vectors = grid_vectors(12, 60, 4)
    queries = grid_vectors(13, 9, 4)
    index = ivf.build_ivf(vectors, 6, seed=0)
    result = index.search(queries, 1, 60)
    lists = probed_lists(index, queries, 1)[:, 0]
    scanned = index.list_sizes[lists]
    assert result.positions.shape == (9, scanned.max())
    assert np.array_equal(result.found, scanned)
    for row, list_id in enumerate(lists):
        low, high = index.list_offsets[list_id], index.list_offsets[list_id + 1]
        members = index.original_positions[low:high]
        expected = members[brute_force_ranking(vectors[members], queries[row : row + 1], len(members))[0]]
        assert np.array_equal(result.positions[row, : scanned[row]], expected)
        assert np.all(result.positions[row, scanned[row] :] == -1)
        assert np.all(result.scores[row, scanned[row] :] == -np.inf)


def test_building_twice_with_one_seed_gives_the_same_index(clustered) -> None:
    vectors, queries, index = clustered
    again = ivf.build_ivf(vectors, 24, seed=1)
    for name, array in index.to_arrays().items():
        assert np.array_equal(array, again.to_arrays()[name]), name
    assert np.array_equal(index.search(queries, 3, 10).positions, again.search(queries, 3, 10).positions)


def test_index_survives_a_round_trip_through_npz(clustered, tmp_path) -> None:
    _, queries, index = clustered
    path = tmp_path / "index.npz"
    np.savez(path, **index.to_arrays())
    with np.load(path) as arrays:
        loaded = ivf.IVFIndex.from_arrays(arrays)
    original, restored = index.search(queries, 4, 10), loaded.search(queries, 4, 10)
    assert np.array_equal(original.positions, restored.positions)
    assert np.array_equal(original.scores, restored.scores)


def test_inconsistent_arrays_are_rejected(clustered) -> None:
    _, _, index = clustered
    arrays = index.to_arrays()
    with pytest.raises(ValueError, match="list_offsets"):
        ivf.IVFIndex.from_arrays({**arrays, "list_offsets": arrays["list_offsets"][:-1]})
    with pytest.raises(ValueError, match="original_positions"):
        ivf.IVFIndex.from_arrays({**arrays, "original_positions": np.zeros(index.size, dtype=np.int64)})
    with pytest.raises(ValueError, match="stored_vectors"):
        ivf.IVFIndex.from_arrays({name: arrays[name] for name in arrays if name != "stored_vectors"})


def test_bad_search_arguments_name_the_offending_value(clustered) -> None:
    _, queries, index = clustered
    with pytest.raises(ValueError, match="probes must be between 1 and 24"):
        index.search(queries, 0, 10)
    with pytest.raises(ValueError, match="got 25"):
        index.search(queries, 25, 10)
    with pytest.raises(ValueError, match="k"):
        index.search(queries, 2, 0)
    with pytest.raises(ValueError, match="17 dimensions"):
        index.search(np.ones((2, 17), dtype=np.float32), 2, 10)
    with pytest.raises(ValueError, match="2-D"):
        index.search(queries[0], 2, 10)
    broken = queries.copy()
    broken[5, 2] = np.nan
    with pytest.raises(ValueError, match="row 5"):
        index.search(broken, 2, 10)


# --------------------------------------------------------------------------- the experiment


def test_probe_tradeoff_reports_recall_share_and_relative_time() -> None:
    vectors = synthetic.clustered_unit_vectors(count=2_000, dimensions=16, centres=40, seed=6)
    queries = synthetic.queries_near_clusters(count=50, dimensions=16, centres=40, seed=6)
    table = ivf.probe_tradeoff(vectors, queries, 16, [1, 4, 16], k=5, seed=0, repeats=2)
    assert isinstance(table, pd.DataFrame)
    assert list(table["probes"]) == [1, 4, 16]
    assert table["recall_against_exact"].is_monotonic_increasing
    assert table["recall_against_exact"].iloc[-1] == 1.0
    assert table["mean_share_scanned"].iloc[-1] == pytest.approx(1.0)
    assert table["mean_share_scanned"].is_monotonic_increasing
    ratio = table["ivf_seconds"] / table["exact_seconds"]
    np.testing.assert_allclose(table["time_relative_to_exact"], ratio)
    assert (table["time_relative_to_exact"] > 0).all()


def test_probe_tradeoff_rejects_a_probe_count_outside_the_lists() -> None:
    vectors = synthetic.clustered_unit_vectors(count=200, dimensions=4, centres=5, seed=0)
    with pytest.raises(ValueError, match="from 1 to 8, got 9"):
        ivf.probe_tradeoff(vectors, vectors[:5], 8, [1, 9], k=3)


@pytest.mark.pipeline  # slow (13 s): 100,000 vectors, 256 lists
def test_default_synthetic_benchmark_matches_the_handbooks_trade_off() -> None:
    """100,000 x 64 with 256 lists: 8 probes scan about 3 % and find at least 70 % of the top 10."""
    vectors = synthetic.clustered_unit_vectors()
    queries = synthetic.queries_near_clusters(count=200)
    index = ivf.build_ivf(vectors, 256, seed=0)
    exact = ivf.exact_search(vectors, queries, 10)
    result = index.search(queries, 8, 10)
    assert 0.025 <= result.mean_share_scanned <= 0.04
    assert ivf.recall_against_exact(result.positions, exact.positions, 10) >= 0.7


# --------------------------------------------------------------------------- synthetic vectors


def test_synthetic_vectors_are_seeded_unit_float32_rows() -> None:
    first = synthetic.clustered_unit_vectors(count=500, dimensions=10, centres=8, seed=4)
    again = synthetic.clustered_unit_vectors(count=500, dimensions=10, centres=8, seed=4)
    other = synthetic.clustered_unit_vectors(count=500, dimensions=10, centres=8, seed=5)
    assert first.shape == (500, 10) and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)


def test_zero_spread_puts_vectors_and_queries_on_the_shared_centres() -> None:
    centres = synthetic.cluster_centres(5, 6, seed=3)
    vectors = synthetic.clustered_unit_vectors(count=40, dimensions=6, centres=5, spread=0.0, seed=3)
    queries = synthetic.queries_near_clusters(count=10, dimensions=6, centres=5, spread=0.0, seed=3)
    for points in (vectors, queries):
        nearest = np.max(points @ centres.T, axis=1)
        np.testing.assert_allclose(nearest, 1.0, atol=1e-6)


def test_tighter_clusters_make_one_probe_find_more_neighbours() -> None:
    recalls = []
    for spread in (0.5, 3.0):
        vectors = synthetic.clustered_unit_vectors(
            count=3_000, dimensions=16, centres=32, spread=spread, seed=1
        )
        queries = synthetic.queries_near_clusters(count=60, dimensions=16, centres=32, spread=spread, seed=1)
        index = ivf.build_ivf(vectors, 32, seed=0)
        exact = ivf.exact_search(vectors, queries, 10)
        recalls.append(ivf.recall_against_exact(index.search(queries, 1, 10).positions, exact.positions, 10))
    assert recalls[0] > recalls[1] + 0.2


def test_synthetic_generators_reject_bad_settings() -> None:
    with pytest.raises(ValueError, match="spread"):
        synthetic.clustered_unit_vectors(count=10, spread=-1.0)
    with pytest.raises(ValueError, match="centres"):
        synthetic.queries_near_clusters(count=10, centres=0)
    with pytest.raises(ValueError, match="count"):
        synthetic.clustered_unit_vectors(count=0)
