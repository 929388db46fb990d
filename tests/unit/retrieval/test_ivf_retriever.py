"""The ivf retriever kind: probed lists scored exactly, with the pipeline's tie-breaking.

Every check compares with a brute-force float64 sort over the members of the
probed lists, found here from the index's own arrays rather than through the
code under test.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from rag.evaluation.config_checks import IVF_SYNTHETIC_PARAMETERS, IVF_TRADEOFF_PARAMETERS, canonical_settings
from rag.evaluation.ivf_tuning import probe_sweep
from rag.evaluation.metrics import recall_at
from rag.kinds import ConfigError, canonical_entry
from rag.retrieval import ivf, synthetic
from rag.retrieval.config_checks import RETRIEVER_PARAMETERS, check_dense_retriever, check_ivf_entry
from rag.retrieval.retrievers import (
    DENSE_KINDS,
    RetrieverError,
    build_ivf_retriever,
    build_retriever,
    chunk_embeddings,
    load_retriever,
    query_embeddings,
    search,
)
from rag.retrieval.search import chunk_id_order

SCHEMA = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml"


pytestmark = [pytest.mark.float_heavy, pytest.mark.usefixtures("single_threaded_blas")]


def grid_vectors(seed: int, count: int, dimensions: int) -> np.ndarray:
    """Small-integer vectors: dot products are exact, so equal scores are real ties."""
    values = np.random.default_rng(seed).integers(-2, 3, size=(count, dimensions)).astype(np.float64)
    values[~values.any(axis=1), 0] = 1.0
    return values


def brute_force_probed(index: ivf.IVFIndex, queries: np.ndarray, probes: int) -> np.ndarray:
    scores = queries.astype(np.float32).astype(np.float64) @ index.centroids.astype(np.float64).T
    lists = np.arange(index.list_count)
    return np.array([np.lexsort((lists, -row))[:probes] for row in scores])


def brute_force_members(index: ivf.IVFIndex, lists: np.ndarray) -> np.ndarray:
    list_of = np.repeat(np.arange(index.list_count), index.list_sizes)
    stored_rows = np.flatnonzero(np.isin(list_of, lists))
    return index.original_positions[stored_rows]


def brute_force_ranking(
    vectors: np.ndarray, query: np.ndarray, candidates: np.ndarray, depth: int, tie_order: np.ndarray
) -> np.ndarray:
    scores = vectors[candidates] @ query
    return candidates[np.lexsort((tie_order[candidates], -scores))[:depth]]


def test_probed_lists_are_the_best_centroids_with_ties_to_the_lower_list() -> None:
    vectors = synthetic.clustered_unit_vectors(count=1_500, dimensions=12, centres=30, seed=2)
    queries = synthetic.queries_near_clusters(count=60, dimensions=12, centres=30, seed=2)
    index = ivf.build_ivf(vectors, 12, seed=0)
    for probes in (1, 3, 12):
        assert np.array_equal(index.probed_lists(queries, probes), brute_force_probed(index, queries, probes))
    # A zero query scores every centroid 0: the tie goes to the lowest lists.
    assert index.probed_lists(np.zeros((1, 12)), 4).tolist() == [[0, 1, 2, 3]]
    with pytest.raises(ValueError, match="between 1 and 12"):
        index.probed_lists(queries, 13)


@pytest.mark.parametrize("probes", [1, 2, 5, 7])
def test_ranking_is_the_exact_ranking_of_the_probed_lists_with_ties_by_tie_order(probes: int) -> None:
    vectors = grid_vectors(3, 400, 6)
    queries = grid_vectors(4, 30, 6)
    tie_order = np.random.default_rng(5).permutation(400)
    index = ivf.build_ivf(vectors, 7, seed=0)
    rankings = ivf.rank_probed_lists(index, vectors, queries, probes, 25, tie_order)
    probed = brute_force_probed(index, queries, probes)
    ties_settled = 0
    for query, lists, ranking in zip(queries, probed, rankings, strict=True):
        candidates = brute_force_members(index, lists)
        expected = brute_force_ranking(vectors, query, candidates, 25, tie_order)
        assert np.array_equal(ranking.positions, expected)
        assert np.array_equal(ranking.scores, vectors[expected] @ query)
        ties_settled += int(np.sum(np.diff(ranking.scores) == 0))
    assert ties_settled > 0  # the grid really produced ties for tie_order to settle


def test_probing_every_list_gives_the_pipelines_exact_search() -> None:
    from rag.retrieval.search import exact_search

    vectors = synthetic.clustered_unit_vectors(count=800, dimensions=16, centres=20, seed=8).astype(
        np.float64
    )
    queries = synthetic.queries_near_clusters(count=40, dimensions=16, centres=20, seed=8).astype(np.float64)
    queries[7] = 0.0
    tie_order = np.random.default_rng(1).permutation(800)
    index = ivf.build_ivf(vectors, 10, seed=3)
    approximate = ivf.rank_probed_lists(index, vectors, queries, 10, 30, tie_order)
    exact = exact_search(vectors, queries, 30, tie_order)
    for mine, reference in zip(approximate, exact, strict=True):
        assert np.array_equal(mine.positions, reference.positions)
        np.testing.assert_allclose(mine.scores, reference.scores, rtol=0, atol=1e-12)
    assert len(approximate[7]) == 0


def test_identical_vectors_tie_exactly_wherever_they_are_stored() -> None:
    generator = np.random.default_rng(0)
    vectors = generator.standard_normal((300, 24))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    copies = [5, 77, 150, 222, 299]
    vectors[copies] = vectors[5]
    tie_order = np.arange(300)[::-1].copy()  # later positions win ties
    index = ivf.build_ivf(vectors, 4, seed=0)
    (ranking,) = ivf.rank_probed_lists(index, vectors, vectors[5:6], 4, 5, tie_order)
    assert ranking.positions.tolist() == sorted(copies, reverse=True)
    assert len(set(ranking.scores.tolist())) == 1


def test_rank_probed_lists_rejects_vectors_the_index_was_not_built_from() -> None:
    vectors = grid_vectors(6, 100, 4)
    index = ivf.build_ivf(vectors, 5, seed=0)
    with pytest.raises(ValueError, match="shape"):
        ivf.rank_probed_lists(index, vectors[:90], vectors[:3], 2, 5)
    with pytest.raises(ValueError, match="not the ones the index was built from"):
        ivf.rank_probed_lists(index, vectors + 1.0, vectors[:3], 2, 5)


# --------------------------------------------------------------------------- the retriever kind


TEXTS = [
    "Mercury is the smallest planet and the closest to the Sun.",
    "Venus has a thick atmosphere of carbon dioxide and sulfuric acid clouds.",
    "Mars has two small moons, Phobos and Deimos, and a thin atmosphere.",
    "Jupiter is the largest planet, a gas giant with dozens of moons.",
    "Saturn is a gas giant known for its bright rings of ice.",
    "Uranus rotates on its side and has faint rings.",
    "Neptune has the strongest winds of any planet in the Solar System.",
    "The Moon is the only natural satellite of the Earth.",
    "Pluto is a dwarf planet in the Kuiper belt with five moons.",
    "Ceres is the largest object in the asteroid belt, a dwarf planet.",
    "The atmosphere of Titan, a moon of Saturn, is thick with nitrogen.",
    "Io, a moon of Jupiter, is the most volcanic body in the Solar System.",
]
QUESTIONS = ["Which planet has rings?", "What is the largest planet?", "zzz qqq", "moons of a gas giant"]


def lsa_retriever():
    return build_retriever(
        canonical_entry(RETRIEVER_PARAMETERS, {"kind": "lsa", "dimensions": 6}, "lsa"), TEXTS
    )


def ivf_entry(**settings):
    return canonical_entry(RETRIEVER_PARAMETERS, {"kind": "ivf", "base": "lsa", **settings}, "lsa_ivf")


def test_ivf_retriever_with_every_list_probed_ranks_like_its_base() -> None:
    base = lsa_retriever()
    tie_order = chunk_id_order([f"chunk-{i:02d}" for i in range(len(TEXTS))][::-1])
    retriever = build_ivf_retriever(ivf_entry(lists=4, probes=4), base)
    for mine, reference in zip(
        search(retriever, QUESTIONS, 8, tie_order), search(base, QUESTIONS, 8, tie_order), strict=True
    ):
        assert np.array_equal(mine.positions, reference.positions)
        np.testing.assert_allclose(mine.scores, reference.scores, rtol=0, atol=1e-12)


def test_ivf_retriever_searches_only_the_probed_lists_and_survives_npz(tmp_path) -> None:
    base = lsa_retriever()
    retriever = build_ivf_retriever(ivf_entry(lists=4, probes=1, seed=2), base)
    index = retriever.index.lists
    queries = query_embeddings(base, QUESTIONS)
    rankings = search(retriever, QUESTIONS, 12, None)
    for query, lists, ranking in zip(queries, brute_force_probed(index, queries, 1), rankings, strict=True):
        if not query.any():
            assert len(ranking) == 0
            continue
        candidates = brute_force_members(index, lists)
        expected = brute_force_ranking(chunk_embeddings(base), query, candidates, 12, np.arange(len(TEXTS)))
        assert np.array_equal(ranking.positions, expected)
    np.savez(tmp_path / "ivf.npz", **retriever.index.to_arrays())
    with np.load(tmp_path / "ivf.npz") as arrays:
        loaded = load_retriever(retriever.entry, dict(arrays), base=base)
    for again, ranking in zip(search(loaded, QUESTIONS, 12, None), rankings, strict=True):
        assert np.array_equal(again.positions, ranking.positions)


def test_ivf_retriever_errors_name_the_retriever_and_the_problem() -> None:
    base = lsa_retriever()
    with pytest.raises(RetrieverError, match=r"'lsa_ivf'.*13 lists but the chunk set has only 12 chunks"):
        build_ivf_retriever(ivf_entry(lists=13, probes=1), base, "lsa_ivf")
    sparse = build_retriever(canonical_entry(RETRIEVER_PARAMETERS, {"kind": "bm25"}, "bm25"), TEXTS)
    with pytest.raises(RetrieverError, match="'bm25' retriever; an IVF index needs a dense one"):
        build_ivf_retriever(ivf_entry(), sparse, "lsa_ivf")
    with pytest.raises(RetrieverError, match="needs its base"):
        load_retriever(ivf_entry(), {})
    with pytest.raises(RetrieverError, match="not built from chunk texts"):
        build_retriever(ivf_entry(), TEXTS)


# --------------------------------------------------------------------------- configuration


def test_ivf_entries_get_defaults_and_are_checked_against_the_grid() -> None:
    entry = ivf_entry()
    assert entry == {"kind": "ivf", "base": "lsa", "lists": 16, "probes": 4, "seed": 0}
    with pytest.raises(ConfigError, match=r"\['base'\]: required"):
        canonical_entry(RETRIEVER_PARAMETERS, {"kind": "ivf"}, "config['retrievers']['x']")
    grid = {"lsa": {"kind": "lsa"}, "bm25": {"kind": "bm25"}, "x": entry}
    check_ivf_entry("x", entry, grid, DENSE_KINDS)
    with pytest.raises(
        ConfigError, match=r"config\['retrievers'\]\['x'\]\['base'\]: unknown retriever 'nope'"
    ):
        check_ivf_entry("x", {**entry, "base": "nope"}, grid, DENSE_KINDS)
    with pytest.raises(ConfigError, match=r"\['base'\]: retriever 'bm25' is of kind 'bm25'"):
        check_ivf_entry("x", {**entry, "base": "bm25"}, grid, DENSE_KINDS)
    with pytest.raises(ConfigError, match=r"\['base'\]: retriever 'x' is of kind 'ivf'"):
        check_ivf_entry("x", {**entry, "base": "x"}, grid, DENSE_KINDS)
    with pytest.raises(ConfigError, match=r"\['probes'\]: 17 probes but only 16 lists"):
        check_ivf_entry("x", {**entry, "probes": 17}, grid, DENSE_KINDS)
    with pytest.raises(ConfigError, match=r"\['retriever'\]: retriever 'bm25'"):
        check_dense_retriever("bm25", grid, DENSE_KINDS, "config['ivf_tradeoff']['retriever']")


def test_experiment_settings_fill_defaults_sort_probes_and_reject_unknown_keys() -> None:
    settings = canonical_settings(IVF_SYNTHETIC_PARAMETERS, {"probes": [8, 1, 2]}, "config['ivf_synthetic']")
    assert settings["probes"] == [1, 2, 8] and settings["vectors"] == 100_000
    with pytest.raises(ConfigError, match=r"config\['ivf_synthetic'\]\['probe'\]: unknown key"):
        canonical_settings(IVF_SYNTHETIC_PARAMETERS, {"probe": [1]}, "config['ivf_synthetic']")
    with pytest.raises(ConfigError, match=r"\['chunker'\]: required"):
        canonical_settings(
            IVF_TRADEOFF_PARAMETERS, {"corpus": "c", "retriever": "r"}, "config['ivf_tradeoff']"
        )


def test_schema_defaults_agree_with_the_parameter_tables() -> None:
    schema = yaml.safe_load(SCHEMA.read_text())["properties"]
    for section, table in (
        ("ivf_tradeoff", IVF_TRADEOFF_PARAMETERS),
        ("ivf_synthetic", IVF_SYNTHETIC_PARAMETERS),
    ):
        properties = schema[section]["properties"]
        assert set(properties) == set(table), section
        for key, default in table.items():
            if default is not None:
                assert properties[key].get("default") == default, (section, key)
    retriever_keys = set(schema["retrievers"]["additionalProperties"]["properties"])
    assert set(RETRIEVER_PARAMETERS["ivf"]) <= retriever_keys
    assert "ivf" in schema["retrievers"]["additionalProperties"]["properties"]["kind"]["enum"]


# --------------------------------------------------------------------------- the probe sweep


def test_probe_sweep_measures_exact_and_labelled_recall_per_probe_count() -> None:
    vectors = synthetic.clustered_unit_vectors(count=600, dimensions=10, centres=15, spread=1.3, seed=4)
    vectors = vectors.astype(np.float64)
    queries = synthetic.queries_near_clusters(count=30, dimensions=10, centres=15, spread=1.3, seed=4)
    queries = queries.astype(np.float64)
    queries[3] = 0.0
    chunk_ids = [f"c{i:04d}" for i in range(600)]
    question_ids = [f"q{i:02d}" for i in range(30)]
    generator = np.random.default_rng(9)
    relevance = {
        question_id: {"0": {chunk_ids[j]: 1.0 for j in generator.choice(600, 3, replace=False)}}
        for question_id in question_ids[:20]
    }
    table = probe_sweep(vectors, queries, question_ids, chunk_ids, relevance, 6, k=10, labelled_k=5, seed=1)
    assert table["probes"].tolist() == [1, 2, 3, 4, 5, 6]
    assert (table["questions_searched"] == 29).all() and (table["questions_labelled"] == 20).all()
    assert table["mean_share_scanned"].is_monotonic_increasing
    assert table["recall_against_exact"].is_monotonic_increasing
    last = table.iloc[-1]
    assert last["mean_share_scanned"] == pytest.approx(1.0) and last["recall_against_exact"] == 1.0
    assert table["recall_against_exact"].iloc[0] < 1.0

    # Independently: the same index, brute-force probing and sorting.
    index = ivf.build_ivf(vectors, 6, seed=1)
    searched = [row for row in range(30) if queries[row].any()]
    positions = np.arange(600)
    for probes in (1, 3):
        recalls, shares, labelled = [], [], []
        for row in range(30):
            query = queries[row]
            lists = brute_force_probed(index, query[None, :], probes)[0]
            candidates = brute_force_members(index, lists) if query.any() else np.empty(0, dtype=np.int64)
            found = brute_force_ranking(vectors, query, candidates, 10, positions)
            if row in searched:
                exact = brute_force_ranking(vectors, query, positions, 10, positions)
                recalls.append(len(set(found) & set(exact)) / 10)
                shares.append(index.list_sizes[lists].sum() / 600)
            if question_ids[row] in relevance:
                labelled.append(recall_at([chunk_ids[p] for p in found], relevance[question_ids[row]], 5))
        measured = table[table["probes"] == probes].iloc[0]
        assert measured["recall_against_exact"] == pytest.approx(np.mean(recalls))
        assert measured["mean_share_scanned"] == pytest.approx(np.mean(shares))
        assert measured["labelled_recall"] == pytest.approx(np.mean(labelled))


def test_probe_sweep_rejects_inconsistent_input() -> None:
    vectors = np.eye(5)
    with pytest.raises(ValueError, match="k = 10 exceeds the 5 chunks"):
        probe_sweep(vectors, vectors[:2], ["a", "b"], list("vwxyz"), {}, 2, k=10)
    with pytest.raises(ValueError, match="question 'c' has relevance labels"):
        probe_sweep(vectors, vectors[:2], ["a", "b"], list("vwxyz"), {"c": {"0": {"v": 1.0}}}, 2, k=3)
    with pytest.raises(ValueError, match="3 question ids"):
        probe_sweep(vectors, vectors[:2], ["a", "b", "c"], list("vwxyz"), {}, 2, k=3)
    with pytest.raises(ValueError, match="every query vector is zero"):
        probe_sweep(vectors, np.zeros((2, 5)), ["a", "b"], list("vwxyz"), {}, 2, k=3)
    assert isinstance(probe_sweep(vectors, vectors[:2], ["a", "b"], list("vwxyz"), {}, 2, k=3), pd.DataFrame)
