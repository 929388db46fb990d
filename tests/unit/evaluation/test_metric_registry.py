"""The metric registry is the one place a metric is defined: one added there reaches every table."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from rag.evaluation import metric_registry
from rag.evaluation.grid import ChunkSetLabels, evaluate_run, evaluation_tables
from rag.evaluation.metric_registry import Metric
from rag.evaluation.significance import interval_table, significance_table
from rag.evaluation.summary import summary_table
from rag.labels import Question


def _hit(ranked, relevance, k):
    """1 when any evidence chunk is in the top k: a metric the evaluation's one pass does not know."""
    relevant = {chunk for chunks in relevance.values() for chunk in chunks}
    return float(bool(relevant.intersection(ranked[:k])))


def _grid(questions=24, chunks=12, seed=3):
    generator = np.random.default_rng(seed)
    chunk_ids = [f"c{index:02d}" for index in range(chunks)]
    picks = generator.integers(chunks, size=questions)
    relevance = {f"q{number:02d}": {"0": {chunk_ids[pick]: 1.0}} for number, pick in enumerate(picks)}
    labels = ChunkSetLabels(
        relevance=relevance,
        words=dict.fromkeys(chunk_ids, 10),
        documents={chunk: f"d{index % 3}" for index, chunk in enumerate(chunk_ids)},
        cohorts=pd.DataFrame({"question_id": list(relevance), "document": "d0"}),
    )
    asked = [Question(question_id, "?") for question_id in relevance]
    runs = {}
    for retriever in ("bm25", "other"):
        ranked = {question: list(generator.permutation(chunk_ids)) for question in relevance}
        runs["c", "x", retriever] = evaluate_run(ranked, asked, labels, [1, 5, 10])
    tables = evaluation_tables(runs, {run: "digest" for run in runs}, {("c", "x"): labels})
    intervals = interval_table(tables.question_values)
    significance = significance_table(tables.question_values, "bm25")
    return tables, intervals, significance, summary_table(intervals, significance, "bm25")


def test_a_metric_added_to_the_registry_reaches_metrics_summary_and_significance(monkeypatch):
    hit = Metric("hit", "Hit", at_k=True, summary_ks=(5,), function=_hit)
    monkeypatch.setattr(metric_registry, "REGISTRY", (*metric_registry.REGISTRY, hit))
    tables, intervals, significance, summary = _grid()
    assert set(tables.metrics.loc[tables.metrics.metric == "hit", "k"]) == {1, 5, 10}
    assert {"hit_at_5", "hit_at_5_ci_low", "hit_at_5_vs_baseline"} <= set(summary.columns)
    assert set(significance.loc[significance.metric == "hit", "k"]) == {1, 5, 10}
    # With one evidence piece per question a hit is exactly recall, computed by the other path.
    by_metric = tables.metrics.set_index(["retriever", "metric", "k"])["value"]
    assert np.allclose(by_metric.xs("hit", level="metric"), by_metric.xs("recall", level="metric"))
    assert 0 < by_metric.xs("hit", level="metric").mean() < 1
    assert "hit" in metric_registry.objectives()


def test_without_the_registry_entry_the_metric_is_nowhere():
    tables, intervals, significance, summary = _grid()
    assert "hit" not in set(tables.metrics.metric) | set(significance.metric)
    assert not [column for column in summary.columns if column.startswith("hit")]


def test_one_name_per_metric_across_tables():
    tables, intervals, significance, summary = _grid()
    assert "reciprocal_rank" not in set(tables.metrics.metric) | set(significance.metric)
    assert {"mrr", "mrr_ci_low"} <= set(summary.columns)
    assert "reciprocal_rank" in tables.per_question.columns  # the published per-question header


def test_unknown_names_fail_in_one_line():
    with pytest.raises(ValueError, match="unknown metric 'nope'"):
        metric_registry.objective("nope")
    with pytest.raises(ValueError, match="cannot be an objective"):
        metric_registry.objective("prompt_words")
    assert dataclasses.is_dataclass(metric_registry.metric("recall"))
