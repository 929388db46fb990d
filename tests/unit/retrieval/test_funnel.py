"""The candidate funnel: first stage, reranker interface, per-document cap, final k."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rag.evaluation.metric_registry import funnel_columns
from rag.retrieval.bm25 import bm25_scores, build_bm25_index
from rag.retrieval.funnel import funnel_ranking, funnel_summary, fused_reranker, retriever_reranker
from rag.retrieval.lsa import embed_queries, fit_lsa
from rag.retrieval.retrievers import build_retriever, search
from rag.retrieval.search import Ranking
from rag.text import analyze

BM25 = {"kind": "bm25", "k1": 1.5, "b": 0.75, "idf": "lucene", "stem": False}
LSA = {"kind": "lsa", "dimensions": 8, "min_df": 2, "stem": False}


pytestmark = pytest.mark.usefixtures("single_threaded_blas")


# Rankings store scores rounded to 9 decimals (rag.retrieval.search.SCORE_DECIMALS), so they
# match an unrounded reference to within half a unit of the last decimal.
CONTRACT_TOLERANCE = 1e-9


def corpus(seed: int = 3, n_chunks: int = 120, vocabulary: int = 40) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, vocabulary + 1)
    weights /= weights.sum()
    texts = [
        " ".join(f"w{j}" for j in rng.choice(vocabulary, size=rng.integers(2, 15), p=weights))
        for _ in range(n_chunks)
    ]
    queries = [" ".join(f"w{j}" for j in rng.integers(0, vocabulary, 3)) for _ in range(10)]
    return texts, queries


def test_without_a_reranker_the_funnel_is_the_first_stage_cut_to_n():
    first = Ranking(np.array([5, 3, 9, 1, 7, 2]), np.array([6.0, 5, 4, 3, 2, 1]))
    result = funnel_ranking(first, "q", None, candidates=4, depth=10)
    assert result.positions.tolist() == [5, 3, 9, 1]
    assert result.scores.tolist() == [6.0, 5, 4, 3]
    assert funnel_ranking(first, "q", None, candidates=4, depth=2).positions.tolist() == [5, 3]


def test_a_plain_callable_is_a_reranker():
    first = Ranking(np.arange(6), np.arange(6, 0, -1).astype(float))

    def prefer_high_positions(query: str, candidates: np.ndarray) -> np.ndarray:
        return candidates.astype(float)

    result = funnel_ranking(first, "q", prefer_high_positions, candidates=4, depth=3)
    assert result.positions.tolist() == [3, 2, 1]  # only the 4 candidates compete; 4 and 5 never do


def test_unscored_candidates_follow_in_first_stage_order():
    first = Ranking(np.array([10, 11, 12, 13, 14]), np.array([5.0, 4, 3, 2, 1]))

    def lexical(query: str, candidates: np.ndarray) -> np.ndarray:
        return np.array([-np.inf, 1.0, -np.inf, 2.0, -np.inf])

    result = funnel_ranking(first, "q", lexical, candidates=5, depth=5)
    assert result.positions.tolist() == [13, 11, 10, 12, 14]


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        (np.array([1.0, 2.0]), "returned"),
        (np.array([1.0, np.nan, 0.0]), "NaN"),
        (np.array([np.inf, 0, 0]), "inf"),
    ],
)
def test_a_misbehaving_reranker_is_an_error(scores, message):
    first = Ranking(np.array([0, 1, 2]), np.array([3.0, 2, 1]))
    with pytest.raises(ValueError, match=message):
        funnel_ranking(first, "q", lambda query, candidates: scores, candidates=3, depth=3)


def test_retriever_reranker_scores_exactly_the_candidates_like_the_full_scorer():
    texts, queries = corpus()
    terms = [analyze(text) for text in texts]
    full = bm25_scores(build_bm25_index(terms), [analyze(query) for query in queries])
    rerank = retriever_reranker(build_retriever(BM25, texts), len(texts))
    rng = np.random.default_rng(0)
    for row, query in enumerate(queries):
        candidates = rng.choice(len(texts), size=25, replace=False)
        scores = rerank(query, candidates)
        query_terms = set(analyze(query))
        for candidate, score in zip(candidates, scores, strict=True):
            if query_terms & set(terms[candidate]):
                assert score == pytest.approx(full[row, candidate], abs=CONTRACT_TOLERANCE)
            else:
                assert score == -np.inf  # shares no term: no opinion rather than a score of 0


def test_lsa_reranking_of_bm25_candidates_is_lsa_restricted_to_them():
    texts, queries = corpus(seed=5)
    bm25 = build_retriever(BM25, texts)
    lsa = build_retriever(LSA, texts)
    model = fit_lsa([analyze(text) for text in texts], LSA["dimensions"], LSA["min_df"])
    tie_order = np.random.default_rng(1).permutation(len(texts))
    firsts = search(bm25, queries, 40, tie_order)
    reranker = retriever_reranker(lsa, len(texts), tie_order)
    for query, first in zip(queries, firsts, strict=True):
        result = funnel_ranking(first, query, reranker, candidates=30, depth=10, tie_order=tie_order)
        candidates = first.positions[:30]
        cosines = model.chunk_embeddings[candidates] @ embed_queries(model, [analyze(query)])[0]
        expected = candidates[np.lexsort((tie_order[candidates], -cosines))][:10]
        assert result.positions.tolist() == expected.tolist()
        assert set(result.positions) <= set(candidates)


def test_fused_reranker_is_reciprocal_rank_fusion_among_the_candidates():
    texts, queries = corpus(seed=8)
    tie_order = np.arange(len(texts))
    bm25, lsa = build_retriever(BM25, texts), build_retriever(LSA, texts)
    parts = [retriever_reranker(bm25, len(texts), tie_order), retriever_reranker(lsa, len(texts), tie_order)]
    fused = fused_reranker(parts, constant=10.0, tie_order=tie_order)
    candidates = np.array([3, 17, 25, 40, 41, 60, 77, 90, 101, 119])
    for query in queries:
        expected = dict.fromkeys(candidates.tolist(), 0.0)
        for part in parts:
            scores = part(query, candidates)
            ranked = sorted(
                (int(c) for c, s in zip(candidates, scores, strict=True) if np.isfinite(s)),
                key=lambda c, scores=scores: (-scores[list(candidates).index(c)], c),
            )
            for rank, candidate in enumerate(ranked, start=1):
                expected[candidate] += 1.0 / (10.0 + rank)
        got = fused(query, candidates)
        for candidate, score in zip(candidates, got, strict=True):
            if expected[int(candidate)] == 0.0:
                assert score == -np.inf
            else:
                assert score == pytest.approx(expected[int(candidate)], abs=CONTRACT_TOLERANCE)


def test_the_cap_walks_down_the_reranked_list():
    first = Ranking(np.arange(8), np.arange(8, 0, -1).astype(float))
    documents = ["a", "a", "a", "b", "a", "b", "b", "c"]
    result = funnel_ranking(
        first, "q", None, candidates=8, depth=5, chunk_documents=documents, max_per_document=2
    )
    assert result.positions.tolist() == [0, 1, 3, 5, 7]
    with pytest.raises(ValueError, match="document of every chunk"):
        funnel_ranking(first, "q", None, candidates=8, depth=5, max_per_document=2)


@pytest.mark.parametrize("candidates", [0, -1, 2.5, True])
def test_candidates_must_be_a_positive_integer(candidates):
    with pytest.raises(ValueError, match="candidates"):
        funnel_ranking(Ranking.empty(), "q", None, candidates=candidates, depth=5)


def test_funnel_summary_puts_settings_beside_metrics():
    metrics = pd.DataFrame(
        [
            ("c", "s", "f1", "recall", 1, 0.5),
            ("c", "s", "f1", "recall", 5, 0.8),
            ("c", "s", "f1", "mrr", None, 0.6),
            ("c", "s", "f1", "ndcg", 5, 0.7),
            ("c", "s", "f1", "duplicate_source_rate", 5, 0.3),
            ("c", "s", "bm25", "recall", 1, 0.9),
        ],
        columns=["corpus", "chunker", "retriever", "metric", "k", "value"],
    )
    funnels = {"f1": {"first": "bm25", "rerank": None, "candidates": 30, "diversity": 2}}
    table = funnel_summary(metrics, funnels, funnel_columns([1, 5]))
    assert table.to_dict("records") == [
        {
            "corpus": "c",
            "chunker": "s",
            "retriever": "f1",
            "first": "bm25",
            "rerank": "none",
            "candidates": 30,
            "max_per_document": 2,
            "recall_at_1": 0.5,
            "recall_at_5": 0.8,
            "mrr": 0.6,
            "ndcg_at_5": 0.7,
            "duplicate_source_rate_at_5": 0.3,
        }
    ]
