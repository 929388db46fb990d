"""``rag compare``: the committed results/ against an ablation's folder lists what the ablation added."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from rag.cli import main
from rag.evaluation.compare_results import compare_results

RESULTS = Path(__file__).resolve().parents[2] / "results"
NEW = "bm25_k1_12"


def _ablation(folder: Path) -> Path:
    """results/ as an ablation adding one retriever writes it: the new retriever's rows in every
    table (bm25's, a little better), provenance digests and timings rewritten, nothing else changed."""
    folder.mkdir()
    for path in RESULTS.glob("*.csv"):
        shutil.copy(path, folder / path.name)
    for name, shift_column in (("metrics_ci.csv", "value"), ("significance.csv", "mean_difference")):
        table = pd.read_csv(RESULTS / name, dtype=str, keep_default_na=False)
        source = "bm25" if name == "metrics_ci.csv" else "bm25_classic"
        added = table[table.retriever == source].assign(retriever=NEW)
        added[shift_column] = (added[shift_column].astype(float) + 0.01).map("{:.6f}".format)
        pd.concat([table, added]).to_csv(folder / name, index=False)
    metrics = pd.read_csv(RESULTS / "metrics.csv", dtype=str, keep_default_na=False)
    metrics.assign(provenance="0123456789abcdef").to_csv(folder / "metrics.csv", index=False)
    statistics = pd.read_csv(RESULTS / "index_statistics.csv", dtype=str, keep_default_na=False)
    statistics.assign(seconds="99.0").to_csv(folder / "index_statistics.csv", index=False)
    return folder


def test_an_ablation_folder_shows_its_new_configurations_and_nothing_else(tmp_path):
    comparison = compare_results(RESULTS, _ablation(tmp_path / "results_ablation"))
    chunkers = sorted(set(pd.read_csv(RESULTS / "metrics_ci.csv").query("retriever == 'bm25'").chunker))
    assert chunkers and comparison.added == [("solar_system", chunker, NEW) for chunker in chunkers]
    assert comparison.removed == [] and comparison.changed == [] and comparison.flipped == []


def test_changed_means_come_with_both_intervals_and_flipped_verdicts_are_listed(tmp_path, capsys):
    after = _ablation(tmp_path / "after")
    intervals = pd.read_csv(after / "metrics_ci.csv", dtype=str, keep_default_na=False)
    row = intervals.index[
        (intervals.chunker == "sections") & (intervals.retriever == "tfidf") & (intervals.metric == "mrr")
    ][0]
    before_value = intervals.loc[row, ["value", "ci_low", "ci_high"]].tolist()
    intervals.loc[row, ["value", "ci_low", "ci_high"]] = ["0.123456", "0.100000", "0.150000"]
    intervals.to_csv(after / "metrics_ci.csv", index=False)
    significance = pd.read_csv(after / "significance.csv", dtype=str, keep_default_na=False)
    flipped = significance.index[significance.retriever == "tfidf"][0]
    significance.loc[flipped, "significant"] = str(significance.loc[flipped, "significant"] != "True")
    significance.to_csv(after / "significance.csv", index=False)

    assert main(["compare", str(RESULTS), str(after)]) == 0
    output = capsys.readouterr().out
    expected = (
        f"solar_system/sections/tfidf mrr: {before_value[0]} [{before_value[1]}, {before_value[2]}]"
        f" -> 0.123456 [0.100000, 0.150000] ({0.123456 - float(before_value[0]):+.6f})"
    )
    assert expected in output
    assert "Metric means changed, with their 95 % intervals (1):" in output
    assert "Verdicts of significance.csv changed (1):" in output
    assert f"Configurations added ({len(set(intervals[intervals.retriever == NEW].chunker))}):" in output


@pytest.mark.parametrize("missing", ["folder", "table"])
def test_a_folder_without_the_tables_is_one_line_naming_it(tmp_path, capsys, missing):
    folder = tmp_path / "results_other"
    if missing == "table":
        folder.mkdir()
    assert main(["compare", str(RESULTS), str(folder)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "results_other" in error and error.startswith("rag compare: error:")
