"""Bootstrap intervals, paired tests and Holm's correction against independent implementations."""

from __future__ import annotations

import math
import os
from pathlib import Path

# ranx's randomization test runs in parallel Numba threads; one thread keeps
# it from competing with the rest of the test run for the cores.
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np
import pandas as pd
import pytest
from ranx import Qrels, Run, compare
from scipy import stats

from rag.evaluation.metrics import question_metrics
from rag.evaluation.significance import (
    _column_quantiles,
    _paired_columns,
    _question_matrix,
    bootstrap_intervals,
    compare_paired,
    holm,
    interval_table,
    paired_t_p_value,
    paired_t_p_values,
    randomization_p_values,
    significance_table,
)


def _collection(questions: int = 60, chunks: int = 40, seed: int = 7):
    """Seeded labels (one chunk per evidence piece) and two rankings, the second a bit better."""
    generator = np.random.default_rng(seed)
    relevance, first, second = {}, {}, {}
    for number in range(questions):
        question = f"q{number:03d}"
        relevant = generator.choice(chunks, size=int(generator.integers(1, 4)), replace=False)
        relevance[question] = {str(piece): {f"c{chunk:03d}": 1.0} for piece, chunk in enumerate(relevant)}
        order = [f"c{chunk:03d}" for chunk in generator.permutation(chunks)]
        first[question] = order[:20]
        # The second ranking moves one relevant chunk up to a random early place.
        promoted = order.copy()
        chunk = f"c{relevant[0]:03d}"
        promoted.remove(chunk)
        promoted.insert(int(generator.integers(0, 6)), chunk)
        second[question] = promoted[:20]
    return relevance, first, second


def _values(rankings, relevance, metric: str, k: int) -> np.ndarray:
    values = []
    for question in sorted(relevance):
        rows = question_metrics(rankings[question], relevance[question], [k])
        values.append(next(value for name, at, value in rows if name == metric and at == k))
    return np.array(values)


def _ranx(rankings, relevance, name):
    return Run(
        {
            question: {chunk: float(len(ranked) - rank) for rank, chunk in enumerate(ranked)}
            for question, ranked in rankings.items()
        },
        name=name,
    )


@pytest.mark.pipeline  # slow: see the marker in pyproject.toml
@pytest.mark.parametrize(("metric", "k", "ranx_metric"), [("ndcg", 10, "ndcg@10"), ("recall", 5, "recall@5")])
def test_randomization_and_t_test_agree_with_ranx(metric, k, ranx_metric):
    relevance, first, second = _collection()
    qrels = Qrels(
        {
            question: {chunk: 1 for piece in pieces.values() for chunk in piece}
            for question, pieces in relevance.items()
        }
    )
    ours_first, ours_second = _values(first, relevance, metric, k), _values(second, relevance, metric, k)
    permutations = 10_000
    for test in ("fisher", "student"):
        report = compare(
            qrels,
            [_ranx(first, relevance, "first"), _ranx(second, relevance, "second")],
            metrics=[ranx_metric],
            stat_test=test,
            n_permutations=permutations,
            max_p=0.05,
        )
        # The same per-question means first: the tests then see the same data.
        assert report.results["first"][ranx_metric] == pytest.approx(ours_first.mean(), abs=1e-9)
        assert report.results["second"][ranx_metric] == pytest.approx(ours_second.mean(), abs=1e-9)
        theirs = report.comparisons[frozenset(["first", "second"])][ranx_metric]["p_value"]
        if test == "fisher":
            ours = randomization_p_values((ours_second - ours_first)[:, None], permutations)[0]
            assert abs(ours - theirs) <= 0.01
        else:
            assert paired_t_p_value(ours_second - ours_first) == pytest.approx(theirs, rel=1e-9, abs=1e-12)
    # The comparison is not trivial: the promoted chunk really moves the means.
    assert ours_second.mean() > ours_first.mean()


def test_randomization_agrees_with_scipy_permutation_test():
    generator = np.random.default_rng(3)
    for shift in (0.0, 0.05, 0.15):
        baseline = generator.random(40)
        retriever = np.clip(baseline + shift + generator.normal(0, 0.2, 40), 0, 1)
        expected = stats.permutation_test(
            (retriever, baseline),
            lambda x, y: np.mean(x - y),
            permutation_type="samples",
            n_resamples=10_000,
            alternative="two-sided",
            random_state=1,
        ).pvalue
        ours = randomization_p_values((retriever - baseline)[:, None])[0]
        assert abs(ours - expected) <= 0.01


def test_t_test_matches_scipy_and_handles_constant_differences():
    generator = np.random.default_rng(5)
    for _ in range(5):
        first, second = generator.random(30), generator.random(30)
        assert paired_t_p_value(first - second) == pytest.approx(
            stats.ttest_rel(first, second).pvalue, rel=1e-9
        )
    assert paired_t_p_value([0.0] * 10) == 1.0
    assert paired_t_p_value([0.25] * 10) == 0.0
    # One question: no spread to estimate, never significant.
    assert paired_t_p_value([0.5]) == 1.0


def test_bootstrap_interval_agrees_with_scipy():
    generator = np.random.default_rng(11)
    values = (generator.random((91, 3)) < [[0.2, 0.5, 0.8]]).astype(float)
    low, high = bootstrap_intervals(values)
    for column in range(3):
        expected = stats.bootstrap(
            (values[:, column],), np.mean, n_resamples=10_000, method="percentile", random_state=2
        ).confidence_interval
        assert abs(low[column] - expected.low) <= 0.012
        assert abs(high[column] - expected.high) <= 0.012
        assert low[column] < values[:, column].mean() < high[column]


def test_bootstrap_skips_missing_values_and_is_repeatable():
    values = np.array([[1.0, np.nan], [0.0, np.nan], [1.0, np.nan], [1.0, 0.5]])
    low, high = bootstrap_intervals(values, resamples=2000)
    again = bootstrap_intervals(values, resamples=2000)
    assert np.array_equal(low, again[0], equal_nan=True) and np.array_equal(high, again[1], equal_nan=True)
    assert 0.0 <= low[0] < high[0] <= 1.0
    # Column two has one value: where it is drawn the mean is 0.5, elsewhere there is none.
    assert low[1] == high[1] == 0.5


def test_holm_against_a_worked_example():
    # Sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> raised to 0.06.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    assert holm([]) == []


def test_exact_sums_refuse_values_that_could_round():
    with pytest.raises(ValueError, match="too large"):
        bootstrap_intervals(np.full((10, 1), 1e9))


def test_identical_retrievers_are_never_significant():
    values = np.random.default_rng(1).random((50, 2))
    (result, _) = compare_paired(values, values)
    assert result.mean_difference == 0.0 and result.p_randomization == 1.0 and result.p_t == 1.0


def _long(corpus, chunker, retriever, values):
    return pd.DataFrame(
        {
            "corpus": corpus,
            "chunker": chunker,
            "retriever": retriever,
            "question_id": [f"q{index:02d}" for index in range(len(values))],
            "metric": "recall",
            "k": 5,
            "value": values,
        }
    )


def test_tables_are_stable_when_a_retriever_is_added():
    generator = np.random.default_rng(2)
    base = generator.random(30)
    runs = [
        _long("c", "x", "bm25", base),
        _long("c", "x", "better", np.clip(base + 0.3, 0, 1)),
        _long("c", "x", "same", base + generator.normal(0, 0.01, 30)),
    ]
    values = pd.concat(runs, ignore_index=True)
    extra = pd.concat([values, _long("c", "x", "another", generator.random(30))], ignore_index=True)
    intervals, more_intervals = interval_table(values), interval_table(extra)
    assert intervals.equals(more_intervals[more_intervals.retriever != "another"].reset_index(drop=True))
    table = significance_table(values, "bm25")
    assert list(table.retriever) == ["better", "same"]
    assert table.set_index("retriever").loc["better", "significant"]
    assert not table.set_index("retriever").loc["same", "significant"]
    # Each comparison is its own Holm family: another retriever moves no existing row or verdict.
    bigger = significance_table(extra, "bm25")
    assert table.equals(bigger[bigger.retriever != "another"].reset_index(drop=True))


def test_incomplete_runs_are_refused():
    values = pd.concat([_long("c", "x", "bm25", [1.0, 0.0, 1.0]), _long("c", "x", "other", [1.0, 0.0])])
    with pytest.raises(ValueError, match="c/x/other: recall@5 has 2 questions"):
        interval_table(values)


def _grid(seed: int = 3) -> pd.DataFrame:
    """Per-question values of two chunkers' runs in shuffled row order, with NaNs and ties."""
    generator = np.random.default_rng(seed)
    frames = []
    for chunker, retrievers in [("x", ["bm25", "dense", "rrf"]), ("y", ["dense", "bm25"])]:
        for retriever in retrievers:
            for metric, ks in [("recall", [1, 5, 10]), ("mrr", [0]), ("duplicate_source_rate", [5])]:
                for k in ks:
                    values = np.round(generator.random(25), 1)
                    if metric == "duplicate_source_rate":
                        values[generator.random(25) < 0.2] = np.nan
                    frames.append(_long("c", chunker, retriever, values).assign(metric=metric, k=k))
    table = pd.concat(frames, ignore_index=True)
    return table.sample(frac=1.0, random_state=4).reset_index(drop=True)


def test_question_matrix_is_the_per_run_pivots_side_by_side():
    table = _grid()
    keys, matrix = _question_matrix(table)
    # The former construction: one pivot per run, questions and (metric, k) sorted.
    labels, blocks = [], []
    for run, rows in table.groupby(["corpus", "chunker", "retriever"], sort=True):
        wide = rows.pivot(index="question_id", columns=["metric", "k"], values="value").sort_index()
        wide = wide.sort_index(axis=1)
        labels += [(*run, metric, k) for metric, k in wide.columns]
        blocks.append(wide.to_numpy(np.float64))
    assert keys == labels
    assert np.array_equal(matrix, np.hstack(blocks), equal_nan=True)


def test_paired_columns_pair_each_retriever_with_the_baseline_on_its_chunker():
    keys = [
        ("c", "x", "bm25", "mrr", 0),
        ("c", "x", "bm25", "recall", 5),
        ("c", "x", "dense", "recall", 5),
        ("c", "y", "dense", "recall", 5),
    ]
    labels, treated, controls = _paired_columns(keys, "bm25")
    # dense lacks bm25's mrr (column -1, the caller's NaN); chunker y has no baseline.
    assert labels == [("c", "x", "dense", "mrr", 0), ("c", "x", "dense", "recall", 5)]
    assert treated == [-1, 2] and controls == [0, 1]


def test_a_retriever_without_a_metric_of_the_baseline_cannot_be_compared():
    values = pd.concat([_long("c", "x", "bm25", [1.0, 0.0, 1.0]), _long("c", "x", "other", [0.0, 0.0, 1.0])])
    values = pd.concat([values, _long("c", "x", "bm25", [0.5, 0.0, 1.0]).assign(metric="mrr", k=0)])
    with pytest.raises(ValueError, match="needs a value for every question"):
        significance_table(values, "bm25")


def test_column_quantiles_equal_numpy_quantiles():
    generator = np.random.default_rng(8)
    # Few distinct values, zeros and ties, as resampled means of recall have.
    values = generator.integers(-3, 4, size=(1001, 40)) / 7.0
    values[:, 5] = 0.0
    expected = np.quantile(values, [0.025, 0.975], axis=0)
    assert np.array_equal(_column_quantiles(values, [0.025, 0.975]), expected)
    spread = generator.normal(size=(10_000, 7))
    assert np.array_equal(
        _column_quantiles(spread, [0.025, 0.975]), np.quantile(spread, [0.025, 0.975], axis=0)
    )


def test_t_test_p_values_are_scipy_stats_exactly():
    generator = np.random.default_rng(9)
    sizes = generator.integers(2, 120, size=50)
    columns = [generator.normal(0.05 * index, 1.0, size=int(size)) for index, size in enumerate(sizes)]
    expected = []
    for column in columns:
        mean, spread = column.mean(), column.std(ddof=1)
        expected.append(stats.t.sf(abs(mean / (spread / np.sqrt(len(column)))), len(column) - 1))
    # Same statistic up to summation order, so compare the tails on the module's own statistics:
    # scipy.stats.t.sf is stdtr(df, -t), the function the module calls.
    assert paired_t_p_values(columns) == pytest.approx([2.0 * value for value in expected], rel=1e-9)
    for column, p in zip(columns, paired_t_p_values(columns), strict=True):
        mean = math.fsum(column) / len(column)
        variance = math.fsum((value - mean) ** 2 for value in column) / (len(column) - 1)
        statistic = abs(mean / math.sqrt(variance / len(column)))
        assert p == float(2.0 * stats.t.sf(np.array([statistic]), np.array([len(column) - 1]))[0])


RESULTS = Path(__file__).resolve().parents[3] / "results"


@pytest.mark.pipeline  # slow: see the marker in pyproject.toml
@pytest.mark.parametrize(
    ("metric", "k", "column"), [("recall", 5, "recall_at_5"), ("mrr", None, "reciprocal_rank")]
)
def test_committed_p_values_agree_with_ranx_on_the_same_runs(metric, k, column):
    """The bundled corpus's comparisons, from the committed per-question values of every run.

    First, significance.csv's p-value is exactly our test on those values (so
    this checks the runs the table was made from). Then ours and ranx's
    Fisher randomization test, both with 100,000 permutations, agree within
    0.01 on a seeded sample of the family's comparisons. At the table's 10,000 the two
    Monte Carlo estimates alone differ by more than 0.01 about one time in
    six near p = 0.5; at 100,000 their difference has a standard deviation
    of at most 0.0023, so 0.01 is more than four of them. Both tests are
    given the values in whole micro-units (the table's precision): in plain
    floats ranx misses permutations whose mean difference equals the observed
    one only up to rounding, and on MRR it then reports 0.75 where the exact
    count gives 0.87.
    """
    from ranx.statistical_tests import fisher_randomization_test

    per_question = pd.read_csv(RESULTS / "per_question.csv")
    table = pd.read_csv(RESULTS / "significance.csv")
    family = table[(table["metric"] == metric) & (table["k"].isna() if k is None else table["k"] == k)]
    values = per_question.pivot_table(index="question_id", columns=["chunker", "retriever"], values=column)
    assert len(family) > 50 and values.notna().all().all()
    permutations = 100_000
    controls = np.column_stack([values[(row.chunker, row.baseline)] for row in family.itertuples()])
    treatments = np.column_stack([values[(row.chunker, row.retriever)] for row in family.itertuples()])
    differences = treatments - controls
    # One call for the family, as the pipeline makes it: the same sign flips for every column.
    np.testing.assert_allclose(randomization_p_values(differences), family["p_randomization"], atol=5e-5)
    ours = randomization_p_values(differences, permutations)
    # ranx runs one comparison at a time (about half a second each at 100,000
    # permutations): a seeded sample of 24 of the family keeps CI short.
    sample = sorted(np.random.default_rng(0).choice(len(family), size=24, replace=False))
    for column in sample:
        row = family.iloc[column]
        # In whole micro-units, as ours: float means of values such as 1/7 break
        # ties between equal sums at random in the last bit, and a tie must count.
        theirs, _ = fisher_randomization_test(
            np.round(controls[:, column] * 1e6), np.round(treatments[:, column] * 1e6), permutations, 0.05, 42
        )
        assert abs(ours[column] - theirs) <= 0.01, (row.chunker, row.retriever, ours[column], theirs)


@pytest.mark.pipeline  # slow: see the marker in pyproject.toml
def test_every_committed_trec_run_reproduces_metrics_csv_with_ir_measures():
    """ir-measures on results/runs/ gives metrics.csv's nDCG@10 and recall@k, run by run."""
    import yaml

    from tests.trec_check import assert_runs_reproduce_metrics

    questions = yaml.safe_load((RESULTS.parent / "resources/solar_system/questions.yaml").read_text())
    answerable = {q["id"]: len(q["evidence"]) for q in questions["questions"] if q["answerable"]}
    metrics = pd.read_csv(RESULTS / "metrics.csv")
    runs = sorted((RESULTS / "runs" / "solar_system").glob("*/*.run.gz"))
    assert len(runs) == metrics.groupby(["chunker", "retriever"]).ngroups
    for run in runs:
        assert_runs_reproduce_metrics(run, metrics, answerable, [1, 5, 10, 20])
