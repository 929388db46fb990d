"""How sure a mean over questions is, and whether two retrievers really differ.

Every metric of the pipeline is a mean over the labelled questions, and a
question set of a hundred makes many differences between retrievers smaller
than the noise of drawing those questions. This module puts numbers on that:

- a percentile bootstrap confidence interval of each mean (questions drawn
  with replacement, ``RESAMPLES`` times);
- paired tests of a retriever against a baseline on the same questions: a
  randomization test (each question's pair of values swapped, or not, at
  random: ``PERMUTATIONS`` sign flips of the differences) and Student's paired
  t-test;
- Holm's step-down correction over the comparisons of one family, so that a
  table of dozens of comparisons does not find "significant" ones by chance.

Byte-stable tables on any machine: per-question values are first rounded to
whole micro-units (``SCALE``), so every resampled sum is a sum of integers,
exact in float64 whatever order a BLAS kernel adds them in (the sums are
checked to stay below 2**53). The t-test's sums use ``math.fsum``, which is
correctly rounded. Random draws come from NumPy's seeded PCG64 generator and
depend only on the seed and the number of questions, so adding a retriever
to the grid leaves every other row unchanged.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rag.evaluation import metric_registry

# Bootstrap resamples and randomization-test draws; 10,000 keeps the Monte
# Carlo error of a p-value near 0.05 at about 0.002.
RESAMPLES = 10_000
PERMUTATIONS = 10_000
CONFIDENCE = 0.95
ALPHA = 0.05
SEED = 0
# Per-question values in micro-units: every metric table is written with six decimals.
SCALE = 1_000_000
# Written precision: means and intervals with six decimals, p-values with four.
VALUE_DECIMALS = 6
P_DECIMALS = 4
_EXACT = 2.0**53
# Columns resampled together: one product with the shared draws per block of columns.
BLOCK_COLUMNS = 256


@dataclass(frozen=True)
class Comparison:
    """One paired comparison of a retriever with the baseline over the same questions."""

    mean_difference: float
    difference_low: float
    difference_high: float
    p_randomization: float
    p_t: float


def to_units(values: np.ndarray) -> np.ndarray:
    """Values as whole micro-units (float64 holding integers); NaN stays NaN."""
    values = np.asarray(values, dtype=np.float64)
    return np.round(values * SCALE)


def bootstrap_counts(questions: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """How often each question is drawn in each resample: a (resamples, questions) matrix.

    The draws depend on the seed and the number of questions only, so every
    metric and retriever over one question set shares them (a paired bootstrap).
    """
    if questions < 1:
        raise ValueError("a bootstrap needs at least one question")
    return _shared_counts(questions, resamples, seed)


@functools.lru_cache(maxsize=8)
def _shared_counts(questions: int, resamples: int, seed: int) -> np.ndarray:
    """One seeded draw matrix per question count, shared (read-only) by every interval and comparison."""
    generator = np.random.default_rng(seed)
    drawn = generator.integers(0, questions, size=(resamples, questions))
    offsets = (np.arange(resamples) * questions)[:, None]
    counts = np.bincount((drawn + offsets).ravel(), minlength=resamples * questions)
    counts = counts.reshape(resamples, questions).astype(np.float64)
    counts.setflags(write=False)
    return counts


@functools.lru_cache(maxsize=8)
def sign_flips(questions: int, permutations: int = PERMUTATIONS, seed: int = SEED) -> np.ndarray:
    """The randomization test's seeded (permutations, questions) matrix of ±1, drawn once per
    question count and shared (read-only) by every comparison over that many questions."""
    generator = np.random.default_rng(seed)
    signs = 2.0 * generator.integers(0, 2, size=(permutations, questions)) - 1.0
    signs.setflags(write=False)
    return signs


def _exact_products(weights: np.ndarray, units: np.ndarray, row_weight: float | None = None) -> np.ndarray:
    """weights @ units for integer-valued float64 matrices, refused when a sum could round.

    ``row_weight`` is the largest sum of |weights| over a row when the caller
    knows it (the shared draw and sign matrices: the number of questions), so
    it is not recomputed over a 10,000-row matrix for every comparison.
    """
    if row_weight is None:
        row_weight = np.abs(weights).sum(axis=1).max(initial=0.0)
    bound = row_weight * np.abs(units).max(initial=0.0)
    if bound >= _EXACT:
        raise ValueError("values too large for exact resampled sums; rescale the metric")
    return weights @ units


def bootstrap_intervals(
    values: np.ndarray,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals of the mean of each column of ``values`` (questions x columns).

    A NaN is a question the metric skips (e.g. an empty list's duplicate
    rate); each resample's mean is over its drawn questions that have a value.
    A column without any value gets NaN bounds.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError("values must be a questions x columns matrix")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie between 0 and 1, got {confidence!r}")
    counts = bootstrap_counts(values.shape[0], resamples, seed)
    tail = (1 - confidence) / 2
    low = np.full(values.shape[1], np.nan)
    high = np.full(values.shape[1], np.nan)
    # Columns in blocks: one product with the shared draws per block, whatever
    # the number of runs, with the resampled means of one block in memory.
    for start in range(0, values.shape[1], BLOCK_COLUMNS):
        block = slice(start, start + BLOCK_COLUMNS)
        low[block], high[block] = _block_intervals(counts, values[:, block], tail)
    return low, high


def _block_intervals(counts: np.ndarray, values: np.ndarray, tail: float) -> tuple[np.ndarray, np.ndarray]:
    present = ~np.isnan(values)
    units = np.where(present, to_units(values), 0.0)
    sums = _exact_products(counts, units, float(values.shape[0]))  # a resample draws n questions
    if present.all():
        drawn = np.full((1, values.shape[1]), float(values.shape[0]))  # every drawn question has a value
    else:
        drawn = counts @ present.astype(np.float64)  # integers below 2**53: exact
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / drawn / SCALE
    low = np.full(values.shape[1], np.nan)
    high = np.full(values.shape[1], np.nan)
    # Columns with a mean in every resample: one vectorised quantile (the same
    # interpolation as per column); the rest one by one over their finite means.
    complete = ~np.isnan(means).any(axis=0)
    if complete.any():
        low[complete], high[complete] = _column_quantiles(means[:, complete], [tail, 1 - tail])
    for column in np.flatnonzero(~complete):
        finite = means[:, column][~np.isnan(means[:, column])]
        if len(finite):
            low[column], high[column] = np.quantile(finite, [tail, 1 - tail])
    return low, high


def _column_quantiles(values: np.ndarray, quantiles: Sequence[float]) -> np.ndarray:
    """``np.quantile(values, quantiles, axis=0)`` of a matrix without NaN, about a third faster.

    Each column is copied into a contiguous row and sorted (NumPy's vectorised
    sort beats the quantile's partition of a strided column), and the quantile
    of the sorted rows reads the same order statistics and interpolates them
    with the same code: the same numbers. Zeros are made positive first, so
    which of -0.0 and 0.0 lands next to the other cannot depend on the sort.
    """
    rows = np.ascontiguousarray(values.T)
    rows += 0.0
    rows.sort(axis=1)
    return np.quantile(rows, quantiles, axis=1)


def randomization_p_values(
    differences: np.ndarray, permutations: int = PERMUTATIONS, seed: int = SEED
) -> np.ndarray:
    """Two-sided paired randomization test of each column of ``differences`` (questions x columns).

    Under the null hypothesis the two retrievers are exchangeable on every
    question, so each difference's sign is a coin flip. The p-value is the
    share of sign flips whose |mean| reaches the observed one, counting the
    observed assignment itself ((b + 1) / (n + 1)), so it is never zero.
    """
    differences = np.asarray(differences, dtype=np.float64)
    if differences.ndim != 2:
        raise ValueError("differences must be a questions x columns matrix")
    if np.isnan(differences).any():
        raise ValueError("a paired test needs a value for every question of both retrievers")
    units = to_units(differences)
    signs = sign_flips(differences.shape[0], permutations, seed)
    reached = np.zeros(differences.shape[1])
    for start in range(0, differences.shape[1], BLOCK_COLUMNS):
        block = units[:, start : start + BLOCK_COLUMNS]
        flipped = np.abs(_exact_products(signs, block, float(differences.shape[0])))
        observed = np.abs(block.sum(axis=0))  # integers: exact in any order
        reached[start : start + BLOCK_COLUMNS] = (flipped >= observed[None, :]).sum(axis=0)
    return (reached + 1) / (permutations + 1)


def paired_t_p_value(differences: Sequence[float]) -> float:
    """Two-sided p-value of Student's paired t-test on one vector of differences.

    Identical values on every question give p = 1 (nothing to test); a
    constant nonzero difference gives p = 0 (no spread, a sure effect). Fewer
    than two questions leave no spread to estimate, so p = 1: a corpus of one
    question can never show a significant difference.
    """
    return paired_t_p_values([differences])[0]


def paired_t_p_values(columns: Sequence[Sequence[float]]) -> list[float]:
    """:func:`paired_t_p_value` of each vector, with one call of Student's t for all of them."""
    # Student's t survival function is scipy.special.stdtr(df, -t), exactly what
    # scipy.stats.t.sf computes; scipy.special loads in a third of scipy.stats' time.
    from scipy.special import stdtr  # lazy: the package imports without scipy

    p_values: list[float | None] = []
    statistics, freedoms, pending = [], [], []
    for index, column in enumerate(columns):
        differences = [float(value) for value in column]
        count = len(differences)
        if count < 2:
            p_values.append(1.0)
            continue
        mean = math.fsum(differences) / count
        variance = math.fsum((value - mean) ** 2 for value in differences) / (count - 1)
        if variance == 0.0:
            p_values.append(1.0 if mean == 0.0 else 0.0)
            continue
        p_values.append(None)
        statistics.append(abs(mean / math.sqrt(variance / count)))
        freedoms.append(count - 1)
        pending.append(index)
    if pending:
        tails = 2.0 * stdtr(np.array(freedoms), -np.array(statistics))
        for index, value in zip(pending, tails, strict=True):
            p_values[index] = float(value)
    return p_values


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values of one family of comparisons.

    The i-th smallest p is multiplied by (m - i), running maxima keep the
    order, and values cap at 1. Equal p-values keep their given order, so the
    result does not depend on how a sort breaks ties.
    """
    count = len(p_values)
    order = sorted(range(count), key=lambda index: (p_values[index], index))
    adjusted = [0.0] * count
    running = 0.0
    for position, index in enumerate(order):
        running = max(running, min(1.0, (count - position) * p_values[index]))
        adjusted[index] = running
    return adjusted


def compare_paired(
    retriever: np.ndarray,
    baseline: np.ndarray,
    resamples: int = RESAMPLES,
    permutations: int = PERMUTATIONS,
    seed: int = SEED,
) -> list[Comparison]:
    """Paired comparisons of each column of ``retriever`` with the same column of ``baseline``.

    Both are questions x columns matrices over the same questions in the same
    order; columns are metrics (or metric and k pairs).
    """
    retriever = np.asarray(retriever, dtype=np.float64)
    baseline = np.asarray(baseline, dtype=np.float64)
    if retriever.shape != baseline.shape:
        raise ValueError(f"paired values differ in shape: {retriever.shape} and {baseline.shape}")
    differences = (to_units(retriever) - to_units(baseline)) / SCALE
    low, high = bootstrap_intervals(differences, resamples, seed)
    p_random = randomization_p_values(differences, permutations, seed)
    units = to_units(differences)
    p_t = paired_t_p_values([units[:, column] / SCALE for column in range(units.shape[1])])
    return [
        Comparison(
            mean_difference=math.fsum(units[:, column]) / len(units) / SCALE,
            difference_low=float(low[column]),
            difference_high=float(high[column]),
            p_randomization=float(p_random[column]),
            p_t=p_t[column],
        )
        for column in range(units.shape[1])
    ]


# ---------------------------------------------------------------------------
# Tables: from per-question metric values (one row per corpus, chunker,
# retriever, question, metric and k) to intervals and tests.
# ---------------------------------------------------------------------------

RUN_KEYS = ["corpus", "chunker", "retriever"]

# One family of Holm's correction: the metrics of one retriever against one baseline on one chunk set.
FAMILY_KEYS = ["corpus", "chunker", "retriever", "baseline"]

INTERVAL_COLUMNS = [*RUN_KEYS, "metric", "k", "value", "ci_low", "ci_high", "questions"]
SIGNIFICANCE_COLUMNS = [
    "corpus",
    "chunker",
    "retriever",
    "baseline",
    "metric",
    "k",
    "questions",
    "mean_difference",
    "difference_ci_low",
    "difference_ci_high",
    "p_randomization",
    "p_randomization_holm",
    "p_t",
    "p_t_holm",
    "significant",
]


def _question_matrix(rows) -> tuple[list[tuple], np.ndarray]:
    """questions x (corpus, chunker, retriever, metric, k) values of one corpus's rows.

    Questions in id order and columns in key order, as one pivot per run
    sorted and side by side would give (:func:`_check_complete` has made sure
    every column has every question of the corpus), but from two group
    numberings and one scatter instead of a pivot per run. Returns the
    columns' keys and the matrix; a missing value is NaN.
    """
    columns = rows.groupby([*RUN_KEYS, "metric", "k"], sort=True, dropna=False)
    questions = rows.groupby("question_id", sort=True, dropna=False).ngroup().to_numpy()
    matrix = np.full((questions.max(initial=-1) + 1, columns.ngroups), np.nan)
    matrix[questions, columns.ngroup().to_numpy()] = rows["value"].to_numpy(dtype=np.float64)
    return list(columns.size().index), matrix  # the keys in group number order


def _check_complete(frame) -> None:
    sizes = frame.groupby([*RUN_KEYS, "metric", "k"], sort=True).size()
    questions = frame.groupby("corpus")["question_id"].nunique()
    for (corpus, chunker, retriever, metric, k), size in sizes.items():
        if size != questions[corpus]:
            raise ValueError(
                f"{corpus}/{chunker}/{retriever}: {metric}@{k} has {size} questions, "
                f"the corpus has {questions[corpus]}"
            )


def _paired_columns(keys: Sequence[tuple], baseline: str) -> tuple[list[tuple], list[int], list[int]]:
    """Which columns of a corpus's matrix (:func:`_question_matrix`, ``keys`` in key order) each
    comparison with ``baseline`` pairs: its labels (corpus, chunker, retriever, metric, k), the
    retriever's columns and the baseline's.

    Each retriever of a chunker the baseline ran on is compared on the baseline's
    metrics and ks, in key order; a metric the retriever lacks points at the
    column of NaN the caller appends at index -1, and its test fails (a
    paired test needs every value). Chunkers without the baseline have no
    comparisons.
    """
    position = {key: column for column, key in enumerate(keys)}
    by_run: dict[tuple, list[tuple]] = {}
    for key in keys:
        by_run.setdefault(key[:3], []).append(key[3:])
    labels, treated, controls = [], [], []
    for corpus, chunker, retriever in by_run:
        reference = (corpus, chunker, baseline)
        if retriever == baseline or reference not in by_run:
            continue
        for metric_k in by_run[reference]:
            labels.append((corpus, chunker, retriever, *metric_k))
            treated.append(position.get((corpus, chunker, retriever, *metric_k), -1))
            controls.append(position[(*reference, *metric_k)])
    return labels, treated, controls


def interval_table(question_metrics, resamples: int = RESAMPLES, seed: int = SEED):
    """Each metric row's mean over questions with its bootstrap confidence interval.

    ``k`` is 0 for whole-list metrics (MRR) and written empty, as in metrics.csv.
    """
    import pandas as pd

    _check_complete(question_metrics)
    rows = []
    for _, runs in question_metrics.groupby("corpus", sort=True):
        # Every run of a corpus has the same questions: one resampling of all their columns.
        keys, values = _question_matrix(runs)
        labels = [(*run_metric, int(k)) for *run_metric, k in keys]
        low, high = bootstrap_intervals(values, resamples, seed)
        units = to_units(values)
        for column, label in enumerate(labels):
            present = units[:, column][~np.isnan(units[:, column])]
            mean = math.fsum(present) / len(present) / SCALE if len(present) else math.nan
            rows.append((*label, mean, low[column], high[column], len(present)))
    table = pd.DataFrame(rows, columns=INTERVAL_COLUMNS)
    for column in ("value", "ci_low", "ci_high"):
        table[column] = table[column].round(VALUE_DECIMALS)
    table["k"] = table["k"].astype("Int64").where(table["k"] > 0)
    return table


def significance_table(
    question_metrics,
    baseline: str,
    resamples: int = RESAMPLES,
    permutations: int = PERMUTATIONS,
    seed: int = SEED,
    alpha: float = ALPHA,
):
    """Every retriever against ``baseline`` on the same corpus, chunker and questions.

    A family for Holm's correction is one comparison: one retriever against
    the baseline on one corpus and chunker, over every tested metric and k
    (:data:`FAMILY_KEYS`). Adding or removing any other retriever, chunker or
    corpus therefore never moves an existing corrected p-value or verdict
    (docs/comparisons.md). Both tests are corrected, each within its own
    families; ``significant`` uses the corrected randomization test at level
    ``alpha``. A chunker the baseline does not run on has no comparisons.
    """
    import pandas as pd

    _check_complete(question_metrics)
    tested = question_metrics[question_metrics["metric"].isin(metric_registry.tested_names())]
    rows = []
    for _, corpus_runs in tested.groupby("corpus", sort=True):
        # Every comparison of a corpus has the same questions: one call tests all their columns
        # with the shared draws and sign flips (each column's result is what a call of its own gives).
        keys, values = _question_matrix(corpus_runs)
        labels, treated, controls = _paired_columns(keys, baseline)
        if not labels:
            continue
        size = values.shape[0]
        labels = [(*label, size) for label in labels]
        values = np.column_stack([values, np.full(size, np.nan)])  # column -1: a metric a retriever lacks
        comparisons = compare_paired(values[:, treated], values[:, controls], resamples, permutations, seed)
        for label, result in zip(labels, comparisons, strict=True):
            corpus, chunker, retriever, metric, k, questions = label
            rows.append(
                {
                    "corpus": corpus,
                    "chunker": chunker,
                    "retriever": retriever,
                    "baseline": baseline,
                    "metric": metric,
                    "k": int(k),
                    "questions": questions,
                    "mean_difference": result.mean_difference,
                    "difference_ci_low": result.difference_low,
                    "difference_ci_high": result.difference_high,
                    "p_randomization": result.p_randomization,
                    "p_t": result.p_t,
                }
            )
    table = pd.DataFrame(rows, columns=SIGNIFICANCE_COLUMNS)
    if table.empty:
        return table
    for test in ("p_randomization", "p_t"):
        table[f"{test}_holm"] = 0.0
        for _, family in table.groupby(FAMILY_KEYS, sort=True):
            table.loc[family.index, f"{test}_holm"] = holm(family[test].tolist())
    table["significant"] = table["p_randomization_holm"] < alpha
    for column in ("mean_difference", "difference_ci_low", "difference_ci_high"):
        table[column] = table[column].round(VALUE_DECIMALS)
    for column in ("p_randomization", "p_randomization_holm", "p_t", "p_t_holm"):
        table[column] = table[column].round(P_DECIMALS)
    table["k"] = table["k"].astype("Int64").where(table["k"] > 0)
    return table.sort_values(
        ["corpus", "chunker", "retriever", "metric", "k"], kind="stable", ignore_index=True
    )


def question_values(evaluation):
    """The per-question rows of the aggregated metrics, named and keyed as in metrics.csv.

    ``evaluation`` is the evaluation job's long table (corpus, chunker,
    retriever, question_id, type, metric, k, value); whole-list metrics keep k = 0.
    """
    rows = evaluation[evaluation["metric"].isin(metric_registry.names())]
    table = rows[[*RUN_KEYS, "question_id", "metric", "k", "value"]].copy()
    return table.sort_values([*RUN_KEYS, "metric", "k", "question_id"], kind="stable", ignore_index=True)


def split_by_run(table, runs):
    """Each of ``runs`` (corpus, chunker, retriever) with its rows of ``table``, in the table's order:
    the parts a whole-grid table is merged from (rag.evaluation.table_parts). A run without rows gets
    an empty part with the table's columns."""
    groups = {run: rows for run, rows in table.groupby(RUN_KEYS, sort=False)}
    return {run: groups.get(tuple(run), table.iloc[:0]).reset_index(drop=True) for run in runs}


def merge_parts(parts, empty):
    """The parts of a whole-grid table, concatenated in the given order (``empty`` when there are none)."""
    import pandas as pd

    frames = [part for part in parts if len(part)]
    return pd.concat(frames, ignore_index=True) if frames else empty


def _runs(question_metrics):
    return {run: rows for run, rows in question_metrics.groupby(RUN_KEYS, sort=True)}


def interval_table_from_parts(question_metrics, store, code: str):
    """:func:`interval_table`, each run's rows a part of ``store`` (a
    :class:`rag.evaluation.table_parts.PartStore`) keyed by ``code`` and the run's
    values: only runs without a stored part are resampled, in one call.

    Every column is resampled with the same shared draws whatever else is in the
    call, so the merged table equals the whole-grid one. Returns the table and
    the line saying how many parts were reused and computed.
    """
    import pandas as pd

    from rag.evaluation.table_parts import describe, frame_digest, part_key, reuse_or_compute

    runs = _runs(question_metrics)
    keys = {run: part_key(code, frame_digest(rows)) for run, rows in runs.items()}

    def compute(missing):
        return split_by_run(interval_table(pd.concat([runs[run] for run in missing])), missing)

    parts, computed = reuse_or_compute(store, "intervals", keys, compute)
    return merge_parts(parts.values(), pd.DataFrame(columns=INTERVAL_COLUMNS)), describe(
        "intervals", len(keys), computed
    )


def significance_table_from_parts(question_metrics, baseline: str, store, code: str):
    """:func:`significance_table`, each compared run a part keyed by ``code``, the baseline and the
    values of both runs: only new or changed comparisons are tested, in one call.

    A Holm family is one run against the baseline (:data:`FAMILY_KEYS`), so a
    part holds whole families and merging moves no corrected p-value.
    Returns the table and the line saying how many parts were reused and computed.
    """
    import pandas as pd

    from rag.evaluation.table_parts import describe, frame_digest, part_key, reuse_or_compute

    runs = _runs(question_metrics)
    digests = {run: frame_digest(rows) for run, rows in runs.items()}
    reference = {
        run: (*run[:2], baseline) for run in runs if run[2] != baseline and (*run[:2], baseline) in runs
    }
    keys = {
        run: part_key(code, baseline, digests[run], digests[control]) for run, control in reference.items()
    }

    def compute(missing):
        needed = sorted(set(missing) | {reference[run] for run in missing})
        return split_by_run(significance_table(pd.concat([runs[run] for run in needed]), baseline), missing)

    parts, computed = reuse_or_compute(store, "significance", keys, compute)
    table = merge_parts(parts.values(), pd.DataFrame(columns=SIGNIFICANCE_COLUMNS))
    return table, describe("comparisons", len(keys), computed)
