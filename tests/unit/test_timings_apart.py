"""Timings kept apart from the compared tables: rag.timing.split_timings and where the rules write them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.timing import IVF_TIMING_COLUMNS, TIMINGS_FOLDER, split_timings

PROJECT = Path(__file__).resolve().parents[2]


def test_split_keeps_keys_on_both_sides_and_times_on_one():
    table = pd.DataFrame(
        {"probes": [1, 2], "recall": [0.5, 0.75], "ivf_seconds": [0.1, 0.2], "build_seconds": [3.0, 3.0]}
    )
    kept, timings = split_timings(table, ["probes"], ["ivf_seconds", "build_seconds"])
    assert list(kept.columns) == ["probes", "recall"]
    assert list(timings.columns) == ["probes", "ivf_seconds", "build_seconds"]
    pd.testing.assert_frame_equal(kept.merge(timings)[table.columns], table)


def test_a_missing_timing_column_or_an_ambiguous_key_is_named():
    table = pd.DataFrame({"probes": [1, 1], "ivf_seconds": [0.1, 0.2]})
    with pytest.raises(ValueError, match="no column 'exact_seconds'"):
        split_timings(table, ["probes"], ["exact_seconds"])
    with pytest.raises(ValueError, match=r"\['probes'\] do not identify each row"):
        split_timings(table, ["probes"], ["ivf_seconds"])


@settings(max_examples=40, derandomize=True, deadline=None)
@given(st.lists(st.floats(0, 1e3, allow_nan=False), min_size=1, max_size=12), st.integers(0, 3))
def test_split_then_join_gives_back_the_table(times, seed):
    rows = len(times)
    generator = np.random.default_rng(seed)
    table = pd.DataFrame(
        {
            "lists": np.full(rows, 4),
            "probes": generator.permutation(rows) + 1,
            "recall_against_exact": generator.random(rows),
            **{column: np.asarray(times) * (index + 1) for index, column in enumerate(IVF_TIMING_COLUMNS)},
        }
    )
    kept, timings = split_timings(table, ["lists", "probes"], IVF_TIMING_COLUMNS)
    assert not set(IVF_TIMING_COLUMNS) & set(kept.columns)
    pd.testing.assert_frame_equal(kept.merge(timings)[table.columns], table)


def test_git_ignores_the_timings_and_the_report_but_not_the_results():
    ignored = subprocess.run(
        [
            "git",
            "check-ignore",
            "--no-index",
            "--verbose",
            f"results/{TIMINGS_FOLDER}/ivf_synthetic.csv",
            "results/report.html",
            "results/ivf_synthetic.csv",
        ],
        cwd=PROJECT,
        capture_output=True,
        text=True,
    )
    if ignored.returncode == 128:
        pytest.skip(f"not a git checkout: {ignored.stderr.strip()}")
    paths = {line.split("\t")[-1] for line in ignored.stdout.splitlines()}
    assert paths == {f"results/{TIMINGS_FOLDER}/ivf_synthetic.csv", "results/report.html"}


def test_the_rules_write_their_timings_to_the_timings_folder():
    rules = {
        "retrieval.smk": f'timings=f"{{RESULTS}}/{TIMINGS_FOLDER}/index_statistics.csv"',
        "vector_search.smk": f'timings=TABLE("{TIMINGS_FOLDER}/ivf_synthetic.csv")',
    }
    for rule_file, output in rules.items():
        assert output in (PROJECT / "workflow" / "rules" / rule_file).read_text(), rule_file


def test_an_ablation_that_reuses_a_table_reuses_its_timings_from_the_same_folder():
    from rag.pipeline.config import TABLE_GROUPS

    for group, table, timings in (
        ("ivf_synthetic", "ivf_synthetic.csv", "ivf_synthetic.csv"),
        ("ivf_figure", "figures/ivf_tradeoff.png", "ivf_query_time.png"),
    ):
        assert {table, f"{TIMINGS_FOLDER}/{timings}"} <= set(TABLE_GROUPS[group])
