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

SLURM submissions are counted from Snakemake's log. What the node did is
read from SLURM's own record afterwards (squeue lists finished jobs for
MinJobAge, an hour on the local cluster): every job of the build, array
tasks one by one, the CPU-seconds they held (cores times run time), and the
seconds in which no job of the build ran, which is what status polls and
submission delays cost. It needs a running cluster
(``workflow/profiles/slurm/local-cluster.sh start``) and the ``slurm`` extra.

``--usage-from LISTING`` fills those columns into an existing ``--output``
table instead of building, from a saved
``squeue --states=all --noheader --format="%i|%T|%S|%e|%C|%j"`` listing: the
plugin names every job of a run by the run's id, and the runs, in the order
they started, are the table's SLURM builds in its order.

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
from datetime import datetime
from pathlib import Path

import pandas as pd
import yaml

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from rag.pipeline.reproduce import copy_inputs  # noqa: E402

MODES = ("local", "grouped", "ungrouped")
GROUPING_KEYS = ("groups", "group-components", "slurm-array-jobs")
SQUEUE_FORMAT = "%i|%T|%S|%e|%C|%j"
USAGE_COLUMNS = ("slurm_jobs", "seconds_first_to_last_job", "allocated_cpu_seconds", "seconds_without_a_job")


def usage_by_run(listing: str) -> dict[str, dict]:
    """Each run's jobs on the node, from an squeue listing in ``SQUEUE_FORMAT``, in order of start.

    A job is (start, end, cores); only completed jobs count, since a build
    that finished has no other kind left.
    """
    jobs: dict[str, list[tuple[datetime, datetime, int]]] = {}
    for line in listing.splitlines():
        fields = line.strip().split("|")
        if len(fields) != 6 or fields[1] != "COMPLETED":
            continue
        _, _, start, end, cores, run = fields
        jobs.setdefault(run, []).append(
            (datetime.fromisoformat(start), datetime.fromisoformat(end), int(cores))
        )
    usage = {run: node_usage(run_jobs) for run, run_jobs in jobs.items()}
    return dict(sorted(usage.items(), key=lambda item: item[1]["first_start"]))


def node_usage(jobs: list[tuple[datetime, datetime, int]]) -> dict:
    """How many jobs ran, from the first start to the last end; the CPU-seconds they held, and the
    seconds of that span in which none ran."""
    held = sum((end - start).total_seconds() * cores for start, end, cores in jobs)
    first, final = min(start for start, _, _ in jobs), max(end for _, end, _ in jobs)
    idle, running, last = 0.0, 0, first
    for moment, change in sorted([(start, 1) for start, _, _ in jobs] + [(end, -1) for _, end, _ in jobs]):
        if running == 0:
            idle += (moment - last).total_seconds()
        running, last = running + change, moment
    return {
        "first_start": first,
        "slurm_jobs": len(jobs),
        "seconds_first_to_last_job": round((final - first).total_seconds()),
        "allocated_cpu_seconds": round(held),
        "seconds_without_a_job": round(idle),
    }


def squeue_listing() -> str:
    command = ["squeue", "--states=all", "--noheader", f"--format={SQUEUE_FORMAT}"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def run_name(job_id: str) -> str:
    """The name the plugin gave the jobs of one run (the run's id), from one of its jobs."""
    command = ["squeue", "--states=all", "--noheader", "--format=%j", "--jobs", job_id]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()[0]


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
    usage = dict.fromkeys(USAGE_COLUMNS, 0)
    if mode != "local":
        first_job = re.search(r"submitted with SLURM jobid (\d+)", output).group(1)
        usage = usage_by_run(squeue_listing())[run_name(first_job)]
    return {
        "mode": mode,
        "build": number,
        "wall_seconds": round(seconds, 1),
        "load_average": round(load, 2),
        "jobs": int(steps[-1][1]) if steps else None,
        "slurm_submissions": submissions if mode != "local" else 0,
        **{column: usage[column] for column in USAGE_COLUMNS},
    }


def add_usage(table: pd.DataFrame, listing: str) -> pd.DataFrame:
    """``table`` with the usage columns filled from a saved listing, run by run in build order."""
    runs = list(usage_by_run(listing).values())
    on_slurm = table.index[table["mode"] != "local"]
    if len(runs) != len(on_slurm):
        sys.exit(f"clean_builds.py: the listing has {len(runs)} runs for {len(on_slurm)} SLURM builds")
    table = table.assign(**dict.fromkeys(USAGE_COLUMNS, 0))
    for row, usage in zip(on_slurm, runs, strict=True):
        for column in USAGE_COLUMNS:
            table.loc[row, column] = usage[column]
    return table


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--builds", type=int, default=3)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--usage-from", type=Path, help="a saved squeue listing; see above")
    arguments = parser.parse_args()
    if arguments.usage_from:
        table = add_usage(pd.read_csv(arguments.output), arguments.usage_from.read_text())
        table.to_csv(arguments.output, index=False)
        print(table.to_string(index=False))
        return
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
