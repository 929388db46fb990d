"""Outputs never overlap inputs (issue 42): Snakemake stops on the plan's line before any job."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.workdir import make_workdir, snakemake


def _listing(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` with the content of each file (None for folders)."""
    return {
        str(path.relative_to(folder)): (path.read_bytes() if path.is_file() else None)
        for path in sorted(folder.rglob("*"))
    }


@pytest.mark.parametrize(
    ("results", "names"), [(".", "is the working folder"), ("documents", "is the documents")]
)
def test_a_results_folder_overlapping_an_input_stops_the_dry_run_and_writes_nothing(tmp_path, results, names):
    workdir = make_workdir(tmp_path / "run")
    before = _listing(workdir)
    outcome = snakemake(workdir, "-n", "--cores", "1", "--config", f"results={results}", check=False)
    output = outcome.stdout + outcome.stderr
    assert outcome.returncode == 1, output
    errors = [line for line in output.splitlines() if "config['results']" in line]
    assert len(errors) == 1 and names in errors[0], output
    assert "Traceback" not in output and "Job stats" not in output
    assert _listing(workdir) == before


def test_a_folder_of_its_own_plans_as_before(tmp_path):
    workdir = make_workdir(tmp_path / "run")
    outcome = snakemake(workdir, "-n", "--cores", "1", "--config", "results=results_ablation")
    assert "results_ablation/metrics.csv" in outcome.stdout + outcome.stderr
