"""The README's cluster and embedding figures are the benchmark tables' own.

The issue asks for them in the README itself; this test keeps the hand-written
sentences equal to what the benchmark scripts measured, so a new measurement
that is not carried over fails here instead of leaving stale prose.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pandas as pd

PROJECT = Path(__file__).resolve().parents[2]
BENCHMARKS = PROJECT / "results" / "benchmarks"


def _readme() -> str:
    """The README with its line breaks and runs of spaces folded to one space."""
    return re.sub(r"\s+", " ", (PROJECT / "README.md").read_text())


def test_readme_gives_the_median_of_three_clean_builds_of_each_way():
    builds = pd.read_csv(BENCHMARKS / "clean_builds.csv")
    assert sorted(builds["mode"].unique()) == ["grouped", "local", "ungrouped"]
    assert (builds.groupby("mode").size() >= 3).all(), "a median of three needs three builds of each way"
    medians = {
        mode: (statistics.median(rows["wall_seconds"]), statistics.median(rows["slurm_submissions"]))
        for mode, rows in builds.groupby("mode")
    }
    # The table's own median column agrees with its builds.
    for mode, rows in builds.groupby("mode"):
        assert set(rows["median_wall_seconds"]) == {medians[mode][0]}
    jobs = int(builds["jobs"].max())
    assert (builds["jobs"] == jobs).all(), "every build ran the same jobs"
    readme = _readme()
    assert f"earlier grid of {jobs} jobs (`results/benchmarks/clean_builds.csv`)" in readme
    assert (
        f"{medians['grouped'][0]:.0f} s with the ranking jobs grouped and chunk, label and answer "
        f"jobs in arrays ({medians['grouped'][1]:.0f} submissions)"
    ) in readme
    assert f"{medians['ungrouped'][0]:.0f} s without ({medians['ungrouped'][1]:.0f} submissions)" in readme


def test_readme_gives_minilm_seconds_per_thousand_texts():
    throughput = pd.read_csv(BENCHMARKS / "embedder_throughput.csv")
    numpy_encoder = throughput[throughput["encoder"].str.startswith("numpy (")].iloc[0]
    assert numpy_encoder["texts"] == 1000
    readme = _readme()
    assert (
        f"1,000 chunk-like texts ({numpy_encoder['mean_tokens']:.0f} tokens on average) in "
        f"{numpy_encoder['best_seconds']:.0f} s at best and "
        f"{numpy_encoder['median_seconds']:.0f} s as a median"
    ) in readme
    assert "device: cuda" in readme


def test_readme_gives_the_current_grid_s_clean_build_from_the_ablation_speed_table():
    table = pd.read_csv(BENCHMARKS / "ablation_speed.csv")
    clean = table[table["step"] == "clean"]
    assert len(clean) >= 3, "a median of three needs three builds"
    (jobs,) = clean["jobs"].unique()
    median = statistics.median(clean["wall_seconds"])
    assert set(clean["median_wall_seconds"]) == {median}
    readme = _readme()
    assert f"{jobs} jobs in {median:.0f} s locally (`results/benchmarks/ablation_speed.csv`)" in readme
    # No job count in the README but the two tables'.
    quoted = {int(number.replace(",", "")) for number in re.findall(r"\b([\d,]+) jobs\b", readme)}
    assert quoted <= {int(jobs), int(pd.read_csv(BENCHMARKS / "clean_builds.csv")["jobs"].max())}, quoted


def test_readme_gives_the_llm_build_time_of_its_table():
    build = pd.read_csv(BENCHMARKS / "llm_build.csv").iloc[-1]
    assert int(build["cores"]) == 2
    readme = _readme()
    assert f"{build['seconds']:.0f} s on an idle two-core machine with the switches above" in readme
    assert build["cmake_args"] in readme  # the switches measured are the README's


def test_readme_gives_the_measured_time_of_its_test_command_and_reproduction_check():
    """The README's minutes are the rows of readme_commands.csv, measured on the commands it prints."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "readme_commands", PROJECT / "benchmarks" / "readme_commands.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    commands = module.readme_commands((PROJECT / "README.md").read_text(encoding="utf-8"))
    table = pd.read_csv(BENCHMARKS / "readme_commands.csv", keep_default_na=False)
    assert sorted(table["command"]) == sorted(commands), "every README command measured, and only those"
    readme = _readme()
    for row in table.itertuples():
        # The row measured the command the README prints today (`passed` says how it ended).
        assert row.text == commands[row.command].replace("\n", " ; "), f"{row.command}: re-measure it"
        assert int(row.cores) == 2
        minutes = round(int(row.seconds) / 60)
        sentence = {
            "tests": f"the test command took {minutes} min",
            "reproduce": f"the reproduction check took {minutes} min",
        }[row.command]
        assert sentence in readme, f"README.md should say: {sentence}"
