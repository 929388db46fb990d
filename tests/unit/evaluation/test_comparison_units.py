"""TREC files, weighted and learned fusion, the summary table and the recall-curve figure."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

from rag.evaluation.holdout import holdout_questions, with_holdout_rows
from rag.evaluation.learned_fusion import (
    COMPONENT,
    HOLDOUT,
    MIN_LABELLED_QUESTIONS,
    PLAIN_RRF,
    TUNED,
    LearnedFusionSettings,
    assign_folds,
    cross_validated_fusion,
    minimum_labelled,
    objective_value,
    weight_grid,
)
from rag.evaluation.significance import (
    SIGNIFICANCE_COLUMNS,
    bootstrap_intervals,
    interval_table,
    significance_table,
)
from rag.evaluation.summary import results_readme, summary_table
from rag.evaluation.trec import (
    chunk_judgements,
    document_list,
    gain_scale,
    gzip_bytes,
    piece_judgements,
    qrels_lines,
    run_lines,
    strictly_decreasing,
    strictly_decreasing_lists,
)
from rag.plotting import grid_overview, legible_ticks, recall_curves
from rag.retrieval.fusion import (
    normalized_score_fusion,
    normalized_scores,
    reciprocal_rank_fusion,
    weighted_reciprocal_rank_fusion,
)
from rag.retrieval.search import Ranking

# --------------------------------------------------------------------------- TREC


def test_run_lines_keep_the_pipeline_order_when_scores_tie():
    text = run_lines({"q2": [("b", 1.0)], "q1": [("x", 2.0), ("a", 2.0), ("c", 1.9999999)]}, "bm25")
    assert [line.split()[:4] for line in text.splitlines()] == [
        ["q1", "Q0", "x", "1"],
        ["q1", "Q0", "a", "2"],
        ["q1", "Q0", "c", "3"],
        ["q2", "Q0", "b", "1"],
    ]
    # Ties and near-ties of scores around 20 (float32 resolution 2e-6) stay ordered in single precision.
    scores = [21.229368, 21.229368, 21.2293679, 21.229367, 5.0, 5.0, 1e-9, 0.0, 0.0, -3.0]
    written = strictly_decreasing(scores)
    assert (np.diff(np.array(written, dtype=np.float32)) < 0).all()
    assert written[0] == 21.229368 and written[4] == 5.0 and written[-1] == -3.0


def _sequential_scores(scores):
    """strictly_decreasing as first written: one score after another."""
    written = []
    for score in scores:
        value = round(float(score), 6)
        if written:
            step = max(10.0**-6, abs(written[-1]) * 2.0**-20)
            if value > written[-1] - step:
                value = round(written[-1] - step, 6)
        written.append(value)
    return written


def test_score_lists_are_nudged_as_one_score_after_another():
    generator = np.random.default_rng(4)
    lists = [[], [3.0], [2.0, 2.0, 2.0, 1.0]]
    for _ in range(300):
        size = int(generator.integers(0, 40))
        # Descending scores with runs of ties, near-ties, large and negative values.
        scores = np.sort(generator.choice([1e-7, 1.0, 20.0, 3e4], size) * generator.random(size))[::-1]
        scores[generator.random(size) < 0.3] = 0.0
        scores = -np.sort(-(np.round(scores, int(generator.integers(0, 9))) - generator.integers(0, 2)))
        lists.append(scores.tolist())
    expected = [_sequential_scores(scores) for scores in lists]
    assert strictly_decreasing_lists(lists) == expected
    assert [strictly_decreasing(scores) for scores in lists] == expected
    with pytest.raises(ValueError, match="finite"):
        strictly_decreasing_lists([[1.0], [2.0, float("inf")]])


def test_ids_are_refused_for_any_unicode_whitespace():
    for bad in ["", "q 1", "q\t1", "q\u00a01", "q\u20031", "q1\n"]:
        with pytest.raises(ValueError, match="whitespace"):
            run_lines({bad: [("a", 1.0)]}, "run")
        with pytest.raises(ValueError, match="whitespace"):
            run_lines({"q1": [("a", 1.0), (bad, 0.5)]}, "run")
    assert run_lines({"q\u00e91": [("a-b_c.d", 1.0)]}, "r") == "q\u00e91 Q0 a-b_c.d 1 1.000000 r\n"


def test_ids_with_spaces_and_odd_gains_are_refused():
    with pytest.raises(ValueError, match="whitespace"):
        run_lines({"q 1": [("a", 1.0)]}, "run")
    with pytest.raises(ValueError, match="finite"):
        run_lines({"q1": [("a", float("nan"))]}, "run")
    with pytest.raises(ValueError, match="six decimals"):
        gain_scale([1 / 3])


def test_qrels_scale_gains_to_integers_and_take_a_chunks_best_piece():
    relevance = {"q1": {"0": {"a": 1.0, "b": 0.5}, "1": {"b": 1.5}}, "q2": {"0": {}}}
    assert gain_scale([1.0, 0.5, 1.5]) == 10
    assert qrels_lines(chunk_judgements(relevance)) == "q1 0 a 10\nq1 0 b 15\n"
    assert qrels_lines(piece_judgements(relevance)) == "q1#0 0 a 1\nq1#0 0 b 1\nq1#1 0 b 1\n"


def test_document_runs_follow_the_document_metrics_order():
    from rag.evaluation.document_relevance import collapse_to_documents

    ranked = [("c1", 9.0), ("c2", 8.0), ("c3", 7.5), ("c4", 7.0)]
    document_of = {"c1": "d2", "c2": "d1", "c3": "d2", "c4": "d3"}
    assert document_list(ranked, document_of) == [("d2", 9.0), ("d1", 8.0), ("d3", 7.0)]
    assert [doc for doc, _ in document_list(ranked, document_of)] == collapse_to_documents(
        [chunk for chunk, _ in ranked], document_of
    )
    with pytest.raises(ValueError, match="no known document"):
        document_list([("c9", 1.0)], document_of)


def test_gzip_is_byte_stable_and_round_trips():
    text = run_lines({"q1": [("a", 1.0), ("b", 0.5)]}, "run") * 100
    assert gzip_bytes(text) == gzip_bytes(text)
    assert gzip.decompress(gzip_bytes(text)).decode() == text


# --------------------------------------------------------------------------- fusion


def _ranking(positions, scores):
    return Ranking(np.array(positions), np.array(scores, dtype=float))


def test_weighted_rrf_with_equal_weights_is_rrf_up_to_scale():
    first, second = _ranking([0, 1, 2], [3.0, 2.0, 1.0]), _ranking([2, 3], [0.9, 0.1])
    plain = reciprocal_rank_fusion([first, second], 60)
    weighted = weighted_reciprocal_rank_fusion([first, second], [0.5, 0.5], 60)
    assert list(weighted.positions) == list(plain.positions)
    assert np.allclose(weighted.scores * 2, plain.scores)
    only_second = weighted_reciprocal_rank_fusion([first, second], [0.0, 1.0], 60)
    assert list(only_second.positions[:2]) == [2, 3]


def test_normalized_scores_by_hand():
    assert normalized_scores(np.array([10.0, 6.0, 2.0]), "minmax").tolist() == [1.0, 0.5, 0.0]
    # Population standard deviation of (3, 1, -1, -3) is sqrt(5).
    assert np.allclose(
        normalized_scores(np.array([3.0, 1.0, -1.0, -3.0]), "zscore"), np.array([6, 4, 2, 0]) / np.sqrt(5)
    )
    assert normalized_scores(np.array([4.0, 4.0]), "minmax").tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="normalization"):
        normalized_scores(np.array([1.0]), "rank")


def test_normalized_fusion_lets_a_weight_overrule_a_larger_scale():
    bm25 = _ranking([0, 1], [40.0, 10.0])  # unbounded scores
    cosine = _ranking([1, 0], [0.9, 0.1])
    # Raw sums would follow BM25 whatever the cosine says; normalized, the heavier weight wins.
    assert list(normalized_score_fusion([bm25, cosine], [0.3, 0.7], "minmax").positions) == [1, 0]
    assert list(normalized_score_fusion([bm25, cosine], [0.7, 0.3], "minmax").positions) == [0, 1]


def test_weight_grid_and_folds():
    assert weight_grid(2, 2) == [(0.0, 1.0), (0.5, 0.5), (1.0, 0.0)]
    assert len(weight_grid(3, 10)) == 66  # (10 + 2 choose 2)
    folds = assign_folds([f"q{index}" for index in range(10)], 3, seed=0)
    assert sorted(np.bincount(list(folds.values()))) == [3, 3, 4]
    assert folds == assign_folds([f"q{index}" for index in reversed(range(10))], 3, seed=0)
    with pytest.raises(ValueError, match="at least 2 folds"):
        assign_folds(["a", "b"], 1, 0)


def _fusion_problem(questions=20, chunks=30, seed=4, bad_finds=True):
    """The second list finds the relevant chunk in its top three; the first lists at random or never."""
    generator = np.random.default_rng(seed)
    components, relevance = {}, {}
    for number in range(questions):
        question = f"q{number:02d}"
        relevant = int(generator.integers(chunks))
        good = list(generator.permutation(chunks))
        good.remove(relevant)
        good.insert(int(generator.integers(0, 3)), relevant)  # the second list finds it early
        bad = list(generator.permutation(chunks))
        if not bad_finds:
            bad.remove(relevant)
        components[question] = [
            _ranking(bad[:20], np.linspace(30, 10, 20)),
            _ranking(good[:20], np.linspace(0.9, 0.1, 20)),
        ]
        relevance[question] = {"0": {f"c{relevant:02d}": 1.0}}
    return components, relevance, [f"c{index:02d}" for index in range(chunks)]


def test_cross_validation_prefers_the_informative_list_and_never_sees_held_out_labels():
    components, relevance, chunk_ids = _fusion_problem()
    settings = LearnedFusionSettings(
        fusion="minmax", folds=4, seed=0, steps=4, objective="ndcg", objective_k=10
    )
    rankings, choices, warnings = cross_validated_fusion(components, relevance, chunk_ids, settings, depth=20)
    assert warnings == []
    assert len(choices) == 4 and sum(choice.held_out_questions for choice in choices) == 20
    assert all(choice.weights[1] > choice.weights[0] for choice in choices)
    # Rewriting one question's labels changes the choices of the other folds
    # at most, never the ranking of that question itself.
    folds = assign_folds(list(components), 4, 0)
    question = "q03"
    tampered = dict(
        relevance, **{question: {"0": {chunk_ids[int(components[question][0].positions[0])]: 1.0}}}
    )
    again, _, _ = cross_validated_fusion(components, tampered, chunk_ids, settings, depth=20)
    assert list(again[question].positions) == list(rankings[question].positions)
    same_fold = [q for q in components if folds[q] == folds[question]]
    for other in same_fold:
        assert list(again[other].positions) == list(rankings[other].positions)


def _objective_of(ranking, labels, chunk_ids, k=10):
    return objective_value([chunk_ids[p] for p in ranking.positions[:k]], labels, "ndcg", k)


def test_a_component_better_on_every_fold_is_chosen_alone_and_its_score_carries():
    # The first list never lists the relevant chunk: no weight on it can help.
    components, relevance, chunk_ids = _fusion_problem(questions=40, bad_finds=False)
    settings = LearnedFusionSettings(
        fusion="minmax", folds=5, seed=0, steps=10, objective="ndcg", objective_k=10
    )
    rankings, choices, warnings = cross_validated_fusion(components, relevance, chunk_ids, settings, depth=20)
    assert warnings == []
    # The informative list alone wins every fold, by the nested choice, not as a mix.
    assert [choice.choice for choice in choices] == [COMPONENT] * 5
    assert all(choice.weights == (0.0, 1.0) for choice in choices)
    for choice in choices:
        assert choice.held_out_objective == pytest.approx(choice.component_held_out[1])
        assert choice.component_held_out[1] > choice.component_held_out[0]
    # Held out, the fusion scores what the component scores alone, inside the component's interval.
    fused = np.array([[_objective_of(rankings[q], relevance[q], chunk_ids)] for q in sorted(components)])
    alone = np.array([[_objective_of(components[q][1], relevance[q], chunk_ids)] for q in sorted(components)])
    low, high = bootstrap_intervals(alone)
    assert low[0] <= fused.mean() <= high[0]
    assert high[0] - low[0] > 0  # an interval, not a point


def _agreement_problem(questions=40, chunks=60, seed=5):
    """Each list ranks the relevant chunk fourth among noise of its own: only a mix finds it first."""
    generator = np.random.default_rng(seed)
    components, relevance = {}, {}
    for number in range(questions):
        question = f"q{number:02d}"
        relevant = int(generator.integers(chunks))
        lists = []
        for side in range(2):
            noise = [
                chunk for chunk in generator.permutation(chunks) if chunk % 2 == side and chunk != relevant
            ]
            order = noise[:19]
            order.insert(3, relevant)
            lists.append(_ranking(order, np.linspace(1.0, 0.1, 20)))
        components[question] = lists
        relevance[question] = {"0": {f"c{relevant:02d}": 1.0}}
    return components, relevance, [f"c{index:02d}" for index in range(chunks)]


def test_tuned_weights_are_kept_when_the_inner_split_says_they_carry():
    components, relevance, chunk_ids = _agreement_problem()
    settings = LearnedFusionSettings(fusion="rrf", folds=5, seed=0, steps=4, objective="ndcg", objective_k=10)
    _, choices, _ = cross_validated_fusion(components, relevance, chunk_ids, settings, depth=20)
    assert {choice.choice for choice in choices} == {TUNED}
    for choice in choices:
        assert min(choice.weights) > 0
        assert choice.held_out_objective > max(choice.component_held_out)


def test_too_few_labelled_questions_fall_back_to_plain_rrf_with_a_warning():
    components, relevance, chunk_ids = _fusion_problem(questions=12)
    settings = LearnedFusionSettings(
        fusion="minmax", folds=3, seed=0, steps=4, objective="ndcg", objective_k=10
    )
    assert minimum_labelled(3) == MIN_LABELLED_QUESTIONS > 12
    rankings, choices, warnings = cross_validated_fusion(components, relevance, chunk_ids, settings, depth=20)
    assert len(warnings) == 1 and "only 12 labelled questions" in warnings[0] and "plain RRF" in warnings[0]
    assert [choice.choice for choice in choices] == [PLAIN_RRF]
    for question, lists in components.items():
        plain = reciprocal_rank_fusion(lists, 60, 20, np.arange(len(chunk_ids)))
        assert list(rankings[question].positions) == list(plain.positions)


def test_held_out_questions_move_no_choice():
    components, relevance, chunk_ids = _fusion_problem(questions=40)
    settings = LearnedFusionSettings(
        fusion="minmax", folds=4, seed=0, steps=4, objective="ndcg", objective_k=10
    )
    held = holdout_questions(sorted(components), 0.25)
    assert len(held) == 10
    rankings, choices, _ = cross_validated_fusion(
        components, relevance, chunk_ids, settings, depth=20, holdout=held
    )
    assert [choice.part for choice in choices] == ["fold"] * 4 + [HOLDOUT]
    assert choices[-1].held_out_questions == 10 and choices[-1].training_questions == 30
    assert all(choice.training_questions < 30 for choice in choices[:-1])
    # Labels that would pull towards the other list, on the held-out questions only: nothing moves.
    tampered = dict(relevance)
    for question in held:
        tampered[question] = {"0": {chunk_ids[int(components[question][0].positions[0])]: 1.0}}
    again, again_choices, _ = cross_validated_fusion(
        components, tampered, chunk_ids, settings, depth=20, holdout=held
    )
    assert [c.weights for c in again_choices] == [c.weights for c in choices]
    assert [c.training_objective for c in again_choices] == [c.training_objective for c in choices]
    for question in components:
        assert list(again[question].positions) == list(rankings[question].positions)
    # Without the holdout the same tampering does move the choice of some fold.
    _, open_choices, _ = cross_validated_fusion(components, tampered, chunk_ids, settings, depth=20)
    _, honest_choices, _ = cross_validated_fusion(components, relevance, chunk_ids, settings, depth=20)
    assert [c.training_objective for c in open_choices] != [c.training_objective for c in honest_choices]


# --------------------------------------------------------------------------- summary and figure


def _intervals():
    rows = []
    for chunker in ("a", "b"):
        for retriever, level in (("bm25", 0.5), ("dense", 0.7)):
            for metric, k, value in (("recall", 1, level), ("recall", 5, level + 0.1), ("mrr", None, level)):
                rows.append(("c", chunker, retriever, metric, k, value, value - 0.1, value + 0.1, 10))
            rows.append(
                ("c", chunker, retriever, "prompt_words", 5, 100.0 if chunker == "a" else 80.0, 90, 110, 10)
            )
    table = pd.DataFrame(
        rows,
        columns=["corpus", "chunker", "retriever", "metric", "k", "value", "ci_low", "ci_high", "questions"],
    )
    table["k"] = table["k"].astype("Int64")
    return table


def _significance():
    rows = [
        ("c", "a", "dense", "bm25", "recall", 1, 10, 0.2, 0.1, 0.3, 0.01, 0.02, 0.01, 0.02, True),
        ("c", "b", "dense", "bm25", "recall", 1, 10, 0.2, -0.1, 0.3, 0.2, 0.4, 0.2, 0.4, False),
    ]
    return pd.DataFrame(rows, columns=SIGNIFICANCE_COLUMNS).astype({"k": "Int64"})


def test_summary_marks_significance_and_the_best():
    table = summary_table(_intervals(), _significance(), "bm25").set_index(["chunker", "retriever"])
    assert "recall_at_10" not in table.columns  # k = 10 was not evaluated
    assert table.loc[("a", "dense"), "recall_at_1_vs_baseline"] == "higher"
    assert table.loc[("b", "dense"), "recall_at_1_vs_baseline"] == ""
    assert table.loc[("a", "bm25"), "recall_at_1_vs_baseline"] == "baseline"
    assert table["recall_at_1_best"].tolist() == [False, True, False, True]  # ties are all marked
    assert (
        table.loc[("b", "bm25"), "prompt_words_at_5_best"]
        and not table.loc[("a", "bm25"), "prompt_words_at_5_best"]
    )
    readme = results_readme(table.reset_index(), _significance(), "bm25", 10_000, 10_000)
    assert "## c" in readme and "1 of 2 comparisons" in readme
    # Best of the corpus (bold) and significantly above the baseline (▲).
    assert "| a | dense | **0.700 [0.600, 0.800] ▲** |" in readme


def test_legible_ticks():
    for ks in ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 50], list(range(1, 11)) + [20], list(range(1, 101))):
        ticks = legible_ticks(ks)
        assert ticks[0] == min(ks) and ticks[-1] == max(ks)
        gaps = np.diff(np.log10(ticks)) / (np.log10(max(ks)) - np.log10(min(ks)))
        assert (gaps >= 0.04 - 1e-12).all()
    # The collision: with ks up to 50, 9 and 10 are not both labelled.
    crowded = legible_ticks([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 50])
    assert not {9, 10} <= set(crowded) and 10 in crowded
    assert legible_ticks([5]) == [5]


def test_recall_curves_draw_every_retriever_with_bands_and_an_outside_legend():
    intervals = pd.DataFrame(
        [
            ("c", "x", retriever, "recall", k, value, value - 0.05, value + 0.05, 10)
            for retriever, base in (("bm25", 0.3), ("lsa", 0.4), ("new", 0.5))
            for k, value in ((1, base), (5, base + 0.2), (10, base + 0.3))
        ],
        columns=["corpus", "chunker", "retriever", "metric", "k", "value", "ci_low", "ci_high", "questions"],
    )
    figure = recall_curves(intervals, "c", "x")
    axes = figure.axes[0]
    assert _curves(figure) == ["bm25", "lsa", "new"]
    assert len(axes.collections) == 3  # one band per line
    legend_box = axes.get_legend().get_window_extent(figure.canvas.get_renderer())
    assert legend_box.x0 >= axes.get_window_extent().x1  # right of the axes
    assert _curves(recall_curves(intervals, "c", "x", best=2)) == ["lsa", "new"]
    assert _curves(recall_curves(intervals, "c", "x", ["bm25"])) == ["bm25"]


def _curves(figure):
    """The labels of a recall figure's curves (band edges are unlabelled)."""
    return [line.get_label() for line in figure.axes[0].get_lines() if not line.get_label().startswith("_")]


def _grid_intervals(retrievers: int) -> pd.DataFrame:
    rows = [
        ("c", "x", f"r{index:02d}", "recall", k, value, value - 0.05, value + 0.05, 10)
        for index in range(retrievers)
        for k, value in ((1, 0.2 + index / 100), (5, 0.4 + index / 100), (10, 0.5 + index / 100))
    ]
    return pd.DataFrame(
        rows + [(*row[:2], "bm25", *row[3:]) for row in rows[:3]],
        columns=["corpus", "chunker", "retriever", "metric", "k", "value", "ci_low", "ci_high", "questions"],
    )


def test_a_large_grid_draws_the_baseline_and_the_best_seven_each_in_its_own_colour_and_marker():
    figure = recall_curves(_grid_intervals(20), "c", "x", baselines=["bm25"])
    lines = [line for line in figure.axes[0].get_lines() if not line.get_label().startswith("_")]
    # r19 has the highest recall, then r18...; the baseline bm25 (as low as r00) is drawn first.
    assert [line.get_label() for line in lines] == [
        "bm25 (baseline)",
        *[f"r{index}" for index in range(13, 20)],
    ]
    assert len({line.get_color() for line in lines}) == 8 and len({line.get_marker() for line in lines}) == 8
    assert "8 of 21 retrievers" in figure.axes[0].get_title()
    assert len(figure.axes[0].collections) == 8


def test_the_overview_has_every_chunker_and_retriever_with_quality_and_cost_side_by_side():
    rows = []
    for chunker, words in (("fixed", 500.0), ("sentences", 300.0)):
        for index, retriever in enumerate(("bm25", "lsa", "minilm")):
            rows.append(("c", chunker, retriever, "ndcg", 10, 0.5 + index / 10 + (chunker == "fixed") / 20))
            rows.append(("c", chunker, retriever, "prompt_words", 5, words + 10 * index))
    metrics = pd.DataFrame(rows, columns=["corpus", "chunker", "retriever", "metric", "k", "value"])
    metrics = metrics[~((metrics.chunker == "sentences") & (metrics.retriever == "minilm"))]  # not run
    figure = grid_overview(metrics, "c")
    quality, cost = figure.axes[0], figure.axes[1]
    assert [tick.get_text() for tick in quality.get_xticklabels()] == ["fixed", "sentences"]
    assert [tick.get_text() for tick in quality.get_yticklabels()] == ["bm25", "lsa", "minilm"]
    assert "ndcg@10" in quality.get_title() and "prompt words@5" in cost.get_title()
    texts = [text.get_text() for text in quality.texts]
    assert len(texts) == 5 and "0.750" in texts  # the pair that did not run has no value
    assert "300" in [text.get_text() for text in cost.texts]
    assert len(quality.patches) == 1 and len(cost.patches) == 1  # the best and the cheapest boxed


def test_holdout_rows_reach_the_summary_as_a_corpus_of_their_own():
    generator = np.random.default_rng(3)
    questions = [f"q{number:02d}" for number in range(40)]
    rows = [
        ("c", "k", retriever, question, metric, k, float(generator.random() < level))
        for retriever, level in (("bm25", 0.4), ("dense", 0.7))
        for question in questions
        for metric, k in (("recall", 5), ("ndcg", 10), ("mrr", 0))
    ]
    values = pd.DataFrame(
        rows, columns=["corpus", "chunker", "retriever", "question_id", "metric", "k", "value"]
    )
    with_held = with_holdout_rows(values, {"c": 0.25})
    held = holdout_questions(questions, 0.25)
    assert set(with_held[with_held.corpus == "c:holdout"].question_id) == set(held)
    assert len(with_held) == len(values) * 5 // 4
    # The split follows the ids alone: changing the held-out questions' values moves nobody.
    changed = values.assign(value=np.where(values.question_id.isin(held), 1.0 - values.value, values.value))
    assert set(with_holdout_rows(changed, {"c": 0.25}).query("corpus == 'c:holdout'").question_id) == set(
        held
    )
    intervals = interval_table(with_held, resamples=200)
    summary = summary_table(intervals, significance_table(with_held, "bm25", 200, 200), "bm25")
    assert set(summary.corpus) == {"c", "c:holdout"}
    holdout_recall = summary[(summary.corpus == "c:holdout") & (summary.retriever == "dense")].iloc[0]
    expected = values[
        (values.question_id.isin(held)) & (values.retriever == "dense") & (values.metric == "recall")
    ]
    assert holdout_recall["recall_at_5"] == pytest.approx(expected.value.mean(), abs=1e-6)
    assert with_holdout_rows(values, {"c": 0.0}).equals(values)
