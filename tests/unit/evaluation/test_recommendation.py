"""results/README.md recommends: the best tested against the runner-up and other chunkers, a cost-aware
choice, and a warning when the questions are too few to separate the leaders."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rag.evaluation.recommendation import recommendation_lines, recommendations, smallest_p
from rag.evaluation.significance import interval_table, significance_table
from rag.evaluation.summary import results_readme, summary_table

QUALITY = (("recall", 1), ("recall", 5), ("recall", 10), ("mrr", 0), ("ndcg", 10))


def _values(questions: int, runs: dict[tuple[str, str], tuple[float, int]], seed: int = 5) -> pd.DataFrame:
    """Per-question values: each run's quality is a seeded 0/1 draw with its success rate; words fixed."""
    generator = np.random.default_rng(seed)
    frames = []
    for (chunker, retriever), (rate, words) in runs.items():
        for metric, k in (*QUALITY, ("prompt_words", 5)):
            value = np.full(questions, float(words)) if metric == "prompt_words" else None
            if value is None:
                value = (generator.random(questions) < rate).astype(float)
            frames.append(
                pd.DataFrame(
                    {
                        "corpus": "c",
                        "chunker": chunker,
                        "retriever": retriever,
                        "question_id": [f"q{index:03d}" for index in range(questions)],
                        "metric": metric,
                        "k": k,
                        "value": value,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def _readme(values: pd.DataFrame) -> tuple[list, str]:
    intervals = interval_table(values)
    significance = significance_table(values, "bm25")
    summary = summary_table(intervals, significance, "bm25")
    found = recommendations(summary, values, "c")
    text = results_readme(summary, significance, "bm25", 100, 100, {"c": recommendation_lines(found)})
    return found, text


RUNS = {
    ("sections", "bm25"): (0.3, 400),
    ("sections", "dense"): (0.95, 900),
    ("sections", "fused"): (0.95, 300),
    ("sentences", "bm25"): (0.2, 200),
    ("sentences", "dense"): (0.5, 250),
}


def test_the_best_is_tested_against_the_runner_up_and_every_other_chunker():
    found, text = _readme(_values(200, RUNS))
    recall = next(item for item in found if item.metric.name == "recall_at_5")
    recall_rows = _values(200, RUNS).query("metric == 'recall' and k == 5")
    means = recall_rows.groupby(["chunker", "retriever"])["value"]
    expected = means.mean().sort_values(ascending=False).index[0]
    assert (recall.chunker, recall.retriever) == expected
    roles = [contender.role for contender in recall.contenders]
    assert roles == ["runner-up", "best of sentences"]
    # The best of sentences (dense, 0.5) is far below: separated; fused is close to dense.
    assert recall.contenders[1].p_holm < 0.05
    # Cost-aware: the cheapest configuration inside the best's interval.
    inside = [run for run, mean in means.mean().items() if recall.low <= mean <= recall.high]
    assert len(inside) >= 1
    assert recall.cheapest[:2] == min(inside, key=lambda run: RUNS[run][1])
    assert "### Recommendation per metric" in text and "cost-aware choice" in text
    assert "warning: only" not in text


def test_the_small_sample_warning_fires_on_five_questions():
    assert smallest_p(5) >= 0.05 > smallest_p(6)
    found, text = _readme(_values(5, RUNS))
    assert found and all(item.warning and item.warning.startswith("only 5 questions") for item in found)
    assert "⚠ warning: only 5 questions" in text


def test_the_answers_link_points_where_answers_md_lies_or_is_left_out():
    found, _ = _readme(_values(60, RUNS))
    assert "[answers.md](answers.md)" in "\n".join(recommendation_lines(found))
    shared = "\n".join(recommendation_lines(found, "../results/answers.md"))
    assert "[answers.md](../results/answers.md)" in shared
    assert "answers.md" not in "\n".join(recommendation_lines(found, None))
