"""The precision contract: rankings that do not depend on rounding noise (docs/formats.md, "Precision").

Another BLAS kernel changes the last bits of a score. These tests imitate
that on one machine, by adding noise far below the contract's precision or by
reordering the chunks (which changes every summation order of the SVD and
the matrix products), and check that rankings, compared by chunk id, do not
move while scores agree within a stated tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

from rag.retrieval import ivf
from rag.retrieval.lsa import RANK_TOLERANCE, fit_lsa, lsa_search, numerical_rank
from rag.retrieval.search import SCORE_DECIMALS, exact_search, stable_scores, top_k, top_k_among

pytestmark = pytest.mark.float_heavy

# Two float64 computations of one cosine through different summation orders agree this closely.
FLOAT64_SCORE_TOLERANCE = 1e-12


def test_stable_scores_round_to_the_contract_and_keep_infinities():
    scores = np.array([0.1234567894, 0.1234567896, -0.0, -1e-12, -np.inf, 17.5])
    rounded = stable_scores(scores)
    assert rounded[0] == 0.123456789 and rounded[1] == 0.12345679
    assert np.signbit(rounded[2]) == np.False_ and np.signbit(rounded[3]) == np.False_
    assert rounded[4] == -np.inf and rounded[5] == 17.5
    assert SCORE_DECIMALS == 9


def test_scores_tied_in_exact_arithmetic_are_ordered_by_tie_order_whatever_the_noise():
    generator = np.random.default_rng(0)
    exact = np.repeat([0.75, 0.5, 0.0], 40)
    tie_order = generator.permutation(len(exact))
    expected = top_k(exact, 60, tie_order)
    for _ in range(20):
        noisy = exact + generator.uniform(-1e-14, 1e-14, len(exact))
        ranking = top_k(noisy, 60, tie_order)
        assert np.array_equal(ranking.positions, expected.positions)
        assert np.array_equal(ranking.scores, expected.scores)
        among = top_k_among(np.arange(len(exact)), noisy, 60, tie_order)
        assert np.array_equal(among.positions, expected.positions)


def test_exact_search_ties_at_zero_follow_the_tie_order():
    """Chunks orthogonal to the query: in float arithmetic their cosines are ±1e-17, not 0."""
    generator = np.random.default_rng(1)
    query = generator.standard_normal(8)
    query /= np.linalg.norm(query)
    orthogonal = generator.standard_normal((30, 8))
    orthogonal -= np.outer(orthogonal @ query, query)
    orthogonal /= np.linalg.norm(orthogonal, axis=1, keepdims=True)
    assert np.any(orthogonal @ query != 0)  # the noise the contract removes
    chunks = np.vstack([query, orthogonal])
    tie_order = generator.permutation(len(chunks))
    (ranking,) = exact_search(chunks, query[np.newaxis, :], len(chunks), tie_order)
    assert ranking.positions[0] == 0 and ranking.scores[0] == 1.0
    assert np.all(ranking.scores[1:] == 0.0)
    assert np.array_equal(ranking.positions[1:], 1 + np.argsort(tie_order[1:]))


def rank_deficient_corpus() -> list[list[str]]:
    """Duplicated chunks and a chunk with no repeated term: a tf-idf matrix of lower rank than its rows."""
    generator = np.random.default_rng(3)
    words = [f"w{index}" for index in range(40)]
    chunks = [list(generator.choice(words, size=12)) for _ in range(30)]
    chunks += [list(chunk) for chunk in chunks[:10]]  # ten exact duplicates
    chunks.append(["unique", "words", "only"])  # no kept term: a zero row
    return chunks


def test_lsa_keeps_only_numerically_non_zero_components():
    chunks = rank_deficient_corpus()
    with pytest.warns(UserWarning):
        model = fit_lsa(chunks, dimensions=200)
    # 41 rows, 10 of them duplicates and one all zero: at most 30 independent directions.
    assert model.dimensions <= 30 and model.requested_dimensions == 200
    assert model.singular_values[-1] > RANK_TOLERANCE * model.singular_values[0]
    assert numerical_rank(np.array([2.0, 1.0, 1e-12, 0.0])) == 2
    assert numerical_rank(np.array([0.0, 0.0])) == 0


def test_lsa_rankings_do_not_depend_on_the_order_of_the_chunks():
    """Reordering the rows changes every summation order of the fit, as another kernel would."""
    chunks = rank_deficient_corpus()
    ids = [f"chunk-{index:03d}" for index in range(len(chunks))]
    permutation = np.random.default_rng(4).permutation(len(chunks))
    queries = [list(chunk[:4]) for chunk in chunks[::3]] + [["w1", "w2"], ["w39"]]

    def ranked(order: np.ndarray):
        ordered_ids = [ids[index] for index in order]
        tie_order = np.argsort(np.argsort(ordered_ids))
        with pytest.warns(UserWarning):
            model = fit_lsa([chunks[index] for index in order], dimensions=128)
        rankings = lsa_search(model, queries, 25, tie_order)
        return [([ordered_ids[p] for p in r.positions], r.scores) for r in rankings]

    for (first_ids, first_scores), (second_ids, second_scores) in zip(
        ranked(np.arange(len(chunks))), ranked(permutation), strict=True
    ):
        assert first_ids == second_ids
        np.testing.assert_allclose(first_scores, second_scores, rtol=0, atol=FLOAT64_SCORE_TOLERANCE)


def test_kmeans_sends_a_vector_equidistant_from_two_centroids_to_the_lower_one():
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [np.sqrt(0.5), np.sqrt(0.5)]])
    centroids = np.array([[1.0, 0.0], [0.0, 1.0]])
    for noise in (1e-15, -1e-15):
        assignment, _ = ivf._assign(vectors, centroids + [[0.0, noise], [noise, 0.0]])
        assert list(assignment) == [0, 1, 0]


def test_probed_lists_break_near_ties_by_list_number():
    """A query closer to list 1 by rounding noise only probes list 0, the lower number."""
    vectors = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    index = ivf.IVFIndex.from_arrays(
        {
            "centroids": np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32),
            "list_offsets": np.array([0, 2, 4]),
            "original_positions": np.arange(4),
            "stored_vectors": vectors.astype(np.float32),
        }
    )
    query = np.array([[0.6, 0.6 + 3e-16]])
    assert query[0, 1] > query[0, 0]
    (ranking,) = ivf.rank_probed_lists(index, vectors, query, 1, 4)
    assert sorted(ranking.positions) == [0, 1]


def test_a_prefilter_that_removes_every_match_gives_an_empty_ranking():
    from rag.retrieval.bm25 import bm25_search, build_bm25_index

    index = build_bm25_index([["alpha", "beta"], ["gamma"], ["alpha"]])
    allowed = np.array([False, True, False])
    (ranking,) = bm25_search(index, [["alpha"]], 5, allowed=allowed)
    assert len(ranking) == 0
