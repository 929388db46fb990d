"""The default grid built from clean, locally and through SLURM with and without grouping.

Each build runs in a fresh copy of the project (Snakefile, workflow, rag,
config.yaml, resources) with nothing cached, as in a fresh clone: every job
runs and the sentence embedder encodes every chunk. The three ways are
interleaved (local, grouped, ungrouped; then again), so a change in the
machine's load falls on all three alike, and the median of ``--builds``
builds of each is reported beside every build's wall time.

- ``local``: ``snakemake --cores 2``.
- ``grouped``: ``snakemake --profile workflow/profiles/slurm``: ranking jobs
  submitted in groups of up to 20, chunk, label and answer jobs as arrays.
- ``ungrouped``: the same profile without its groups and arrays: one
  submission per job.

SLURM submissions are counted from Snakemake's log. It needs a running
cluster (``workflow/profiles/slurm/local-cluster.sh start``) and the
``slurm`` extra.

Usage:
    python benchmarks/clean_builds.py --builds 3 --output results/benchmarks/clean_builds.csv
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from rag.reproduce import copy_inputs  # noqa: E402

MODES = ("local", "grouped", "ungrouped")
GROUPING_KEYS = ("groups", "group-components", "slurm-array-jobs")


def ungrouped_profile(workdir: Path) -> Path:
    """The SLURM profile without groups and arrays, beside the original."""
    profile = yaml.safe_load((workdir / "workflow/profiles/slurm/config.yaml").read_text())
    for key in GROUPING_KEYS:
        profile.pop(key, None)
    folder = workdir / "workflow/profiles/slurm_ungrouped"
    folder.mkdir()
    (folder / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    return folder


def build(mode: str, root: Path, number: int) -> dict:
    workdir = copy_inputs(PROJECT, root / f"{mode}_{number}")
    command = [sys.executable, "-m", "snakemake"]
    if mode == "local":
        command += ["--cores", "2"]
    elif mode == "grouped":
        command += ["--profile", "workflow/profiles/slurm"]
    else:
        command += ["--profile", str(ungrouped_profile(workdir))]
    environment = {**os.environ, "PYTHONPATH": str(workdir)}
    load = os.getloadavg()[0]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=workdir, capture_output=True, text=True, env=environment)
    seconds = time.perf_counter() - start
    output = result.stdout + result.stderr
    if result.returncode != 0:
        sys.exit(f"clean_builds.py: the {mode} build failed:\n{output[-3000:]}")
    # One sbatch call per line: a single job, or an array of several.
    submissions = len(re.findall(r"submitted with SLURM jobid \d+|Submitted array job with", output))
    steps = re.findall(r"(\d+) of (\d+) steps \(100%\) done", output)
    shutil.rmtree(workdir, ignore_errors=True)
    return {
        "mode": mode,
        "build": number,
        "wall_seconds": round(seconds, 1),
        "load_average": round(load, 2),
        "jobs": int(steps[-1][1]) if steps else None,
        "slurm_submissions": submissions if mode != "local" else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--builds", type=int, default=3)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--output", type=Path, required=True)
    arguments = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="clean-builds-") as root:
        for number in range(1, arguments.builds + 1):
            for mode in arguments.modes:
                rows.append(build(mode, Path(root), number))
                print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    medians = table.groupby("mode")["wall_seconds"].agg(statistics.median)
    table["median_wall_seconds"] = table["mode"].map(medians)
    table.to_csv(arguments.output, index=False)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
