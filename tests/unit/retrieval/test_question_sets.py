"""Ranking a held-out question set from the grid's saved indexes gives the grid's own rankings."""

from __future__ import annotations

import numpy as np
import pytest

from rag.retrieval.fusion import reciprocal_rank_fusion
from rag.retrieval.question_sets import base_components, rank_question_set
from rag.retrieval.retrievers import build_retriever, search

ENTRIES = {
    "bm25": {"kind": "bm25", "k1": 1.5, "b": 0.75, "idf": "lucene", "stem": False},
    "tfidf": {"kind": "tfidf", "normalize": True, "sublinear": True, "stem": False},
    "rrf_bm25_tfidf": {"kind": "rrf", "components": ["bm25", "tfidf"], "constant": 60},
    "rrf_nested": {"kind": "rrf", "components": ["rrf_bm25_tfidf", "bm25"], "constant": 60},
    "ivf": {"kind": "ivf", "base": "bm25"},
}
TEXTS = [
    "Mercury has a large iron core and a weak magnetic field",
    "Venus rotates backwards and has a thick carbon dioxide atmosphere",
    "Mars has two small moons, Phobos and Deimos",
    "Jupiter has a great red spot, a storm larger than Earth",
    "The magnetic field of Jupiter is the strongest of any planet",
    "Saturn has bright rings of ice",
]
QUESTIONS = ["Which planet has the strongest magnetic field?", "What are the moons of Mars?", "rings of ice"]


@pytest.fixture(scope="module")
def saved():
    """The arrays each base retriever's ranking rule would save, built here independently."""
    return {name: build_retriever(ENTRIES[name], TEXTS).index.to_arrays() for name in ("bm25", "tfidf")}


def test_a_base_retriever_loaded_from_its_index_ranks_as_a_fresh_one(saved):
    tie_order = np.arange(len(TEXTS))
    ranked = rank_question_set("bm25", ENTRIES, QUESTIONS, 10, tie_order, saved.__getitem__)
    fresh = search(build_retriever(ENTRIES["bm25"], TEXTS), QUESTIONS, 10, tie_order)
    assert len(ranked) == len(QUESTIONS)
    for loaded, built in zip(ranked, fresh, strict=True):
        assert list(loaded.positions) == list(built.positions)
        np.testing.assert_allclose(loaded.scores, built.scores)
    assert ranked[0].positions[0] == 4  # the strongest field is Jupiter's


def test_a_fusion_fuses_its_components_rankings_of_the_new_questions(saved):
    tie_order = np.arange(len(TEXTS))
    fused = rank_question_set("rrf_bm25_tfidf", ENTRIES, QUESTIONS, 10, tie_order, saved.__getitem__)
    bm25 = search(build_retriever(ENTRIES["bm25"], TEXTS), QUESTIONS, 10, tie_order)
    tfidf = search(build_retriever(ENTRIES["tfidf"], TEXTS), QUESTIONS, 10, tie_order)
    for position, ranking in enumerate(fused):
        expected = reciprocal_rank_fusion([bm25[position], tfidf[position]], 60, 10, tie_order)
        assert list(ranking.positions) == list(expected.positions)
    nested = rank_question_set("rrf_nested", ENTRIES, QUESTIONS, 10, tie_order, saved.__getitem__)
    assert len(nested) == len(QUESTIONS)
    assert base_components("rrf_nested", ENTRIES) == ["bm25", "tfidf"]


def test_kinds_that_cannot_be_loaded_for_new_questions_are_refused(saved):
    with pytest.raises(ValueError, match="'ivf'.*fitted, pretrained, fused"):
        rank_question_set("ivf", ENTRIES, QUESTIONS, 10, np.arange(len(TEXTS)), saved.__getitem__)


def test_a_fused_ranking_records_its_components():
    from rag.retrieval.question_sets import ranking_provenance

    record = ranking_provenance("rrf_nested", ENTRIES)
    assert record["retriever"] == ENTRIES["rrf_nested"]
    assert set(record["components"]) == {"rrf_bm25_tfidf", "bm25"}
    assert set(record["components"]["rrf_bm25_tfidf"]["components"]) == {"bm25", "tfidf"}
    assert ranking_provenance("bm25", ENTRIES)["retriever"] == ENTRIES["bm25"]


def test_a_ranking_reads_only_its_own_entries_and_ranks_the_same_from_them(saved):
    from rag.retrieval.question_sets import entries_used

    used = entries_used("rrf_nested", ENTRIES)
    assert set(used) == {"rrf_nested", "rrf_bm25_tfidf", "bm25", "tfidf"}
    assert set(entries_used("bm25", ENTRIES)) == {"bm25"}
    tie_order = np.arange(len(TEXTS))
    whole = rank_question_set("rrf_nested", ENTRIES, QUESTIONS, 10, tie_order, saved.__getitem__)
    alone = rank_question_set("rrf_nested", used, QUESTIONS, 10, tie_order, saved.__getitem__)
    assert [list(ranking.positions) for ranking in alone] == [list(ranking.positions) for ranking in whole]
