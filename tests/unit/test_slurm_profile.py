"""The SLURM profile: valid Snakemake options, runnable unchanged once the plugin exists.

Here the profile is checked without its executor and the plugin's options:
every other option must still be one that Snakemake accepts and the workflow
must plan the same jobs with it.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.workdir import copy_project, make_workdir, planned_jobs, snakemake

PROFILE = Path(__file__).resolve().parents[2] / "workflow" / "profiles" / "slurm" / "config.yaml"


def test_profile_targets_slurm_with_default_resources():
    profile = yaml.safe_load(PROFILE.read_text())
    assert profile["executor"] == "slurm"
    defaults = dict(item.split("=", 1) for item in profile["default-resources"])
    assert int(defaults["mem_mb"]) > 0 and int(defaults["runtime"]) > 0
    assert profile["jobs"] >= 1


def test_profile_options_are_accepted_by_snakemake(tmp_path):
    project = copy_project(tmp_path / "project")
    workdir = make_workdir(tmp_path / "work")
    profile = yaml.safe_load(PROFILE.read_text())
    # The executor and its plugin's options (slurm-*) are checked on a real
    # cluster by tests/pipeline/test_slurm_cluster.py.
    profile = {
        key: value for key, value in profile.items() if key != "executor" and not key.startswith("slurm-")
    }
    local = tmp_path / "profile"
    local.mkdir()
    (local / "config.yaml").write_text(yaml.safe_dump({**profile, "cores": 1}))
    result = snakemake(workdir, "-n", "--profile", str(local), snakefile=project / "Snakefile")
    output = result.stdout + result.stderr
    assert "rule rank:" in output or "localrule rank:" in output
    # The profile changes where jobs run, never which jobs run.
    assert planned_jobs(workdir, project / "Snakefile") == {
        rule: int(count) for rule, count in _job_counts(output).items()
    }


def _job_counts(output: str) -> dict[str, int]:
    counts = {}
    for line in output.split("Job stats:", 1)[1].splitlines()[3:]:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        if parts[0] != "total":
            counts[parts[0]] = int(parts[1])
    return counts
