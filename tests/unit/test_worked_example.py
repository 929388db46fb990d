"""The spec's worked example, value by value, from the real analyzer and retrievers."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from rag.worked_example import compute_worked_example, report


def close(value: float) -> pytest.approx:
    # The spec prints four decimals; half a unit in the last place is the tolerance.
    return pytest.approx(value, abs=5e-5)


@pytest.fixture(scope="module")
def example():
    return compute_worked_example()


def test_analyzer_terms(example):
    assert example.query_terms == ("moons", "mars")
    assert example.chunk_terms["d1"] == ("mars", "two", "small", "moons", "phobos", "deimos")
    assert example.chunk_terms["d2"] == ("phobos", "orbits", "mars", "faster", "mars", "rotates")
    assert example.chunk_terms["d3"] == ("jupiter", "dozens", "moons", "including", "four", "large", "moons")
    assert example.chunk_terms["d4"] == ("red", "colour", "mars", "comes", "iron", "oxide", "dust")
    assert example.average_length == 6.5


def test_bm25_factors(example):
    assert example.bm25_idf == {"moons": close(0.6931), "mars": close(0.3567)}
    assert example.length_factors == {6: close(1.4135), 7: close(1.5865)}
    assert example.saturations[("moons", "d1")] == close(1.0359)
    assert example.saturations[("mars", "d1")] == close(1.0359)
    assert example.saturations[("mars", "d2")] == close(1.4648)
    assert example.saturations[("moons", "d3")] == close(1.3941)
    assert example.saturations[("mars", "d4")] == close(0.9665)
    assert example.contributions == {
        ("moons", "d1"): close(0.7180),
        ("moons", "d3"): close(0.9663),
        ("mars", "d1"): close(0.3695),
        ("mars", "d2"): close(0.5225),
        ("mars", "d4"): close(0.3447),
    }


def test_bm25_scores_and_ranking(example):
    assert example.bm25_scores == {
        "d1": close(1.0875),
        "d2": close(0.5225),
        "d3": close(0.9663),
        "d4": close(0.3447),
    }
    assert example.bm25_ranking == ("d1", "d3", "d2", "d4")


def test_tfidf(example):
    single_chunk_term = next(term for term in example.tfidf_idf if term not in ("mars", "moons"))
    assert example.tfidf_idf["mars"] == close(1.2231)
    assert example.tfidf_idf["moons"] == close(1.5108)
    assert example.tfidf_idf[single_chunk_term] == close(1.9163)
    assert example.tfidf_chunk_lengths == {
        "d1": close(4.1325),
        "d2": close(4.3913),
        "d3": close(5.2432),
        "d4": close(4.8507),
    }
    assert example.tfidf_query_length == close(1.9439)
    assert example.tfidf_dot_products == {
        "d1": close(3.7787),
        "d2": close(2.9922),
        "d3": close(4.5652),
        "d4": close(1.4961),
    }
    assert example.tfidf_cosines == {
        "d1": close(0.4704),
        "d2": close(0.3505),
        "d3": close(0.4479),
        "d4": close(0.1587),
    }
    assert example.tfidf_ranking == example.bm25_ranking


def test_sublinear_tfidf_differs_only_where_a_term_repeats(example):
    # d1 and d4 hold every term once, so 1 + ln f = f = 1 there.
    assert example.tfidf_sublinear_cosines["d1"] == pytest.approx(example.tfidf_cosines["d1"], abs=1e-12)
    assert example.tfidf_sublinear_cosines["d4"] == pytest.approx(example.tfidf_cosines["d4"], abs=1e-12)
    assert example.tfidf_sublinear_cosines["d2"] < example.tfidf_cosines["d2"]
    assert example.tfidf_sublinear_cosines["d3"] < example.tfidf_cosines["d3"]


def test_dense_encoder(example):
    assert example.dense_cosines == {
        "d1": close(0.9130),
        "d2": close(0.9839),
        "d3": close(0.5174),
        "d4": close(0.6508),
    }
    assert example.dense_ranking == ("d2", "d1", "d4", "d3")


def test_reciprocal_rank_fusion(example):
    assert example.fused_scores == {
        "d1": close(0.1742),
        "d2": close(0.1678),
        "d3": close(0.1548),
        "d4": close(0.1484),
    }
    assert example.fused_scores["d1"] == pytest.approx(1 / 11 + 1 / 12, abs=1e-9)  # rounded to 9 decimals
    assert example.fused_ranking == ("d1", "d2", "d3", "d4")


def test_evaluation(example):
    assert example.ideal_dcg == close(2.6309)
    bm25, dense, fused = (example.evaluations[name] for name in ("bm25", "dense", "fused"))
    assert bm25.ranking == ("d1", "d3", "d2")
    assert bm25.recall == {1: 0.5, 2: 0.5, 3: 1.0}
    assert bm25.reciprocal_rank == 1.0
    assert bm25.dcg == close(2.5)
    assert bm25.ndcg == close(0.9502)
    assert dense.ranking == ("d2", "d1", "d4")
    assert dense.recall == {1: 0.5, 2: 1.0, 3: 1.0}
    assert dense.reciprocal_rank == 1.0
    assert dense.dcg == close(2.2619)
    assert dense.ndcg == close(0.8597)
    assert fused.ranking == ("d1", "d2", "d3")
    assert fused.recall == {1: 0.5, 2: 1.0, 3: 1.0}
    assert fused.reciprocal_rank == 1.0
    assert fused.dcg == close(2.6309)
    assert fused.ndcg == close(1.0)


def test_classic_idf_pitfall(example):
    assert example.classic_idf["moons"] == pytest.approx(0.0, abs=1e-15)
    assert example.classic_idf["mars"] == close(-0.8473)
    # The Jupiter chunk, which never mentions Mars, comes first; every chunk matches a term.
    assert example.classic_ranking[0] == "d3"
    assert sorted(example.classic_ranking) == ["d1", "d2", "d3", "d4"]


def test_ndcg_pitfall(example):
    assert example.pitfall_ndcg == close(0.3066)
    assert example.pitfall_retrieved_ideal_ndcg == close(0.5)


def test_prompt_answer_and_citations(example):
    assert example.prompt_sources == ("d1", "d2")  # the two best fused chunks
    assert example.prompt_tokens == 91
    assert example.sentence_coverages == {"d1": close(1.0), "d2": close(0.3397)}
    assert example.answer == "Mars has two small moons, Phobos and Deimos [1]."
    first, second, third = example.draft_checks
    assert (first.cited, first.matched_terms, first.term_count, first.supported) == ((1,), 5, 5, True)
    assert first.support == close(1.0)
    assert (second.cited, second.matched_terms, second.term_count) == ((2,), 2, 6)
    assert second.support == close(0.3333)
    assert second.unsupported_numbers == ("8",) and not second.supported
    assert third.missing_citations == (3,) and third.support == 0.0 and not third.supported


def test_report_prints_values_in_order(example):
    text = report(example)
    expected_in_order = ["0.6931", "1.4135", "1.4648", "0.7180", "1.0875", "1.2231", "4.3913", "0.3505"]
    expected_in_order += ["0.9839", "0.1742", "2.6309", "0.9502", "0.8597", "91 word", "0.3397", "0.3333"]
    # RAG-Sequence and RAG-Token come after the citation check and before the pitfalls.
    expected_in_order += ["RAG-Sequence and RAG-Token", "1.1300", "0.7558", "0.2442", "= 0.2353"]
    expected_in_order += ["0.5488 x 0.4657 = 0.2556", "0.6886", "0.3114", "0.5488 x 0.4287 = 0.2353"]
    expected_in_order += ["-0.8473", "0.3066"]
    positions = [text.index(value) for value in expected_in_order]
    assert positions == sorted(positions)


def test_runs_as_a_module():
    completed = subprocess.run(
        [sys.executable, "-m", "rag.worked_example"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert "ranking: d1, d3, d2, d4" in completed.stdout
    assert "0.3066" in completed.stdout
    assert "0.5488 x 0.4657 = 0.2556" in completed.stdout


def test_rag_sequence_and_rag_token(example):
    rag = example.rag
    # The prior is a softmax of the two prompt sources' BM25 scores at temperature 0.5.
    assert list(rag.prior) == list(example.prompt_sources) == ["d1", "d2"]
    assert rag.logit_difference == close(1.1300)
    assert rag.prior == {"d1": close(0.7558), "d2": close(0.2442)}
    assert rag.answer_products == {"d1": close(0.30), "d2": close(0.035)}
    assert rag.sequence_likelihood == close(0.2353)
    assert rag.token_factors == (close(0.5488), close(0.4657))
    assert rag.token_likelihood == close(0.2556)
    # RAG-Sequence token by token: the same first factor, then the posterior's mixture.
    assert rag.sequence_posterior == {"d1": close(0.6886), "d2": close(0.3114)}
    assert rag.sequence_factors == (close(0.5488), close(0.4287))
    assert rag.sequence_factors[0] * rag.sequence_factors[1] == pytest.approx(
        rag.sequence_likelihood, rel=1e-12
    )
    # RAG-Token keeps the prior weights, and d1, which supports the second token, weighs more there.
    assert rag.token_likelihood > rag.sequence_likelihood


def test_rag_prior_follows_the_bm25_scores(example):
    # An independent softmax of the printed BM25 scores, not the rag function.
    d1, d2 = example.bm25_scores["d1"], example.bm25_scores["d2"]
    first = 1 / (1 + math.exp(-(d1 - d2) / 0.5))
    assert example.rag.prior["d1"] == pytest.approx(first, abs=1e-12)
    assert example.rag.prior["d2"] == pytest.approx(1 - first, abs=1e-12)
