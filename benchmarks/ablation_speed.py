"""The everyday loop, timed: the default grid from clean, a no-op, one retriever added, one chunker added.

Each build runs in a fresh copy of the project (Snakefile, workflow, rag,
config.yaml, resources) with nothing cached, as in a fresh clone, and runs
four steps in order, each to completion with ``snakemake --cores 2``:

- ``clean``: the default grid from nothing;
- ``noop``: the same command again (nothing to do);
- ``add_retriever``: ``bm25_k1_12`` (BM25 with Lucene's k1 = 1.2) added to config.yaml;
- ``add_chunker``: ``sentences60`` (sentences of at most 60 words) added as well.

Python's bytecode cache is on, as in a user's shell, whatever the caller's
``PYTHONDONTWRITEBYTECODE`` says. The machine's one-minute load average is written beside every figure, so
figures from a shared machine can be told from an idle one's, and the median
of ``--builds`` builds is given per step. Targets on an idle two-core machine
(issue 29): clean within 90 s (goal 60), no-op within 2 s, one retriever
within 20 s, one chunker within 45 s.

``--baseline REF`` also builds the project as it was at git commit REF from
clean in every round, right before the current code's clean build, and
gives each round's ratio of the two (``clean_relative_to_baseline``). A
shared machine's speed drifts between runs and between days; a ratio taken
pair by pair does not.

``--embedding-cache DIR`` links an existing MiniLM embedding cache into each
copy instead of encoding from nothing (the ``embedding_cache`` column says
which); the committed figures use none.

Beside the table, ``--rules`` writes where the clean build's time goes: per
rule, its jobs and the seconds from each job's start to its end as the
Snakemake log stamps them (whole seconds, so a rule of many short jobs is
counted roughly), medians over the builds. A rule's seconds overlap other
rules' on two cores; their sum is the work, not the wall time.

Usage:
    python benchmarks/ablation_speed.py --builds 3 --output results/benchmarks/ablation_speed.csv \
        --rules results/benchmarks/ablation_speed_rules.csv
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from rag.pipeline.reproduce import copy_inputs, job_counts  # noqa: E402

# The entries each step adds to config.yaml (README.md, "Add an ablation").
ADDED_RETRIEVER = ("retrievers", "bm25_k1_12", {"kind": "bm25", "k1": 1.2})
ADDED_CHUNKER = ("chunkers", "sentences60", {"kind": "sentences", "max_words": 60})
STEPS = ("clean", "noop", "add_retriever", "add_chunker")
TARGETS = {"clean": 90.0, "noop": 2.0, "add_retriever": 20.0, "add_chunker": 45.0}


def add_entry(workdir: Path, section: str, name: str, entry: dict) -> None:
    """Add one named entry to the copy's config.yaml (reformatting the file schedules nothing)."""
    path = workdir / "config.yaml"
    config = yaml.safe_load(path.read_text())
    config[section][name] = entry
    path.write_text(yaml.safe_dump(config, sort_keys=False))


_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]$")
_RULE = re.compile(r"^(?:local)?rule (\w+):$")
_JOB = re.compile(r"^\s+jobid: (\d+)$")
_FINISHED = re.compile(r"^Finished jobid: (\d+)")


def rule_seconds(log: str) -> dict[str, tuple[int, float]]:
    """Rule -> (jobs, seconds summed over its jobs) from a Snakemake log's time stamps."""
    stamp, rule, started, rule_of, seconds = None, None, {}, {}, {}
    for line in log.splitlines():
        if match := _STAMP.match(line):
            stamp = datetime.datetime.strptime(" ".join(match.group(1).split()), "%a %b %d %H:%M:%S %Y")
        elif match := _RULE.match(line):
            rule = match.group(1)
        elif (match := _JOB.match(line)) and rule is not None:
            started[match.group(1)], rule_of[match.group(1)], rule = stamp, rule, None
        elif (match := _FINISHED.match(line)) and match.group(1) in started:
            seconds[match.group(1)] = (stamp - started[match.group(1)]).total_seconds()
    totals: dict[str, tuple[int, float]] = {}
    for job, spent in seconds.items():
        jobs, total = totals.get(rule_of[job], (0, 0.0))
        totals[rule_of[job]] = (jobs + 1, total + spent)
    return totals


def newest_log(workdir: Path) -> str:
    """The text of the newest Snakemake log in a project copy."""
    logs = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"))
    return logs[-1].read_text() if logs else ""


def run_step(workdir: Path, cores: int) -> tuple[float, int, float]:
    """One ``snakemake --cores N`` to completion: wall seconds, jobs run, load average at the start."""
    load = os.getloadavg()[0]
    command = [sys.executable, "-m", "snakemake", "--cores", str(cores)]
    environment = {**os.environ, "PYTHONPATH": str(workdir)}
    # As a user's shell runs it: Python caches each module's bytecode, so the
    # jobs after the first ones import the copy's rag modules without
    # compiling them again (some shells switch the cache off; that alone
    # costs every job tenths of a second).
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.perf_counter()
    result = subprocess.run(command, cwd=workdir, capture_output=True, text=True, env=environment)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"snakemake failed in {workdir}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return seconds, sum(job_counts(result.stdout + result.stderr).values()), load


def baseline_source(root: Path, reference: str) -> Path:
    """The project's files at commit ``reference``, exported once per run (``git archive``)."""
    folder = root / "baseline_source"
    if not folder.exists():
        folder.mkdir()
        archive = subprocess.run(
            ["git", "archive", reference], cwd=PROJECT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def baseline_clean(root: Path, number: int, cores: int, reference: str) -> dict:
    """The clean step of the code at ``reference``, in a fresh copy of its files."""
    workdir = copy_inputs(baseline_source(root, reference), root / f"baseline_{number}")
    seconds, jobs, load = run_step(workdir, cores)
    print(f"build {number}, clean at {reference}: {seconds:.1f} s, {jobs} jobs, load {load:.2f}", flush=True)
    return {
        "build": number,
        "step": "clean_baseline",
        "wall_seconds": round(seconds, 1),
        "load_average": round(load, 2),
        "jobs": jobs,
        "target_seconds": float("nan"),
        "embedding_cache": "fresh",
        "code": reference,
    }


def build(root: Path, number: int, cores: int, embedding_cache: Path | None) -> tuple[list[dict], list[dict]]:
    """The four steps in a fresh copy of the project, and the clean step's seconds per rule."""
    workdir = copy_inputs(PROJECT, root / f"build_{number}")
    if embedding_cache is not None:
        (workdir / "cache").mkdir()
        (workdir / "cache" / "embeddings").symlink_to(embedding_cache.resolve())
    rows, rules = [], []
    for step in STEPS:
        if step == "add_retriever":
            add_entry(workdir, *ADDED_RETRIEVER)
        if step == "add_chunker":
            add_entry(workdir, *ADDED_CHUNKER)
        seconds, jobs, load = run_step(workdir, cores)
        rows.append(
            {
                "build": number,
                "step": step,
                "wall_seconds": round(seconds, 1),
                "load_average": round(load, 2),
                "jobs": jobs,
                "target_seconds": TARGETS[step],
                "embedding_cache": "shared" if embedding_cache is not None else "fresh",
                "code": "current",
            }
        )
        print(f"build {number}, {step}: {seconds:.1f} s, {jobs} jobs, load {load:.2f}", flush=True)
        if step == "clean":
            rules = [
                {"build": number, "rule": rule, "jobs": jobs, "seconds": total}
                for rule, (jobs, total) in rule_seconds(newest_log(workdir)).items()
            ]
    return rows, rules


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--builds", type=int, default=3, help="fresh copies, each running every step")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--output", type=Path, default=PROJECT / "results/benchmarks/ablation_speed.csv")
    parser.add_argument("--embedding-cache", type=Path, help="an existing embedding cache to link in")
    parser.add_argument("--rules", type=Path, help="also write the clean build's seconds per rule here")
    parser.add_argument("--keep", type=Path, help="build in this new folder and keep the copies")
    parser.add_argument("--baseline", help="also build this git commit from clean in every round, for ratios")
    arguments = parser.parse_args()
    rows, rules = [], []
    with tempfile.TemporaryDirectory(prefix="ablation-speed-") as temporary:
        root = Path(temporary)
        if arguments.keep is not None:
            arguments.keep.mkdir(parents=True)  # refuses an existing folder
            root = arguments.keep
        for number in range(1, arguments.builds + 1):
            if arguments.baseline is not None:
                rows.append(baseline_clean(root, number, arguments.cores, arguments.baseline))
            step_rows, rule_rows = build(root, number, arguments.cores, arguments.embedding_cache)
            rows, rules = rows + step_rows, rules + rule_rows
    table = pd.DataFrame(rows)
    table["median_wall_seconds"] = table.groupby("step")["wall_seconds"].transform("median")
    if arguments.baseline is not None:
        clean = table[table["step"] == "clean"].set_index("build")["wall_seconds"]
        baseline = table[table["step"] == "clean_baseline"].set_index("build")["wall_seconds"]
        ratio = (clean / baseline).round(3)
        table["clean_relative_to_baseline"] = table["build"].map(ratio).where(table["step"] == "clean")
        print(f"clean relative to {arguments.baseline}: {ratio.tolist()}, median {ratio.median()}")
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(arguments.output, index=False)
    print(table.groupby("step", sort=False)[["median_wall_seconds", "jobs", "load_average"]].median())
    if arguments.rules is not None:
        per_rule = pd.DataFrame(rules).groupby("rule")[["jobs", "seconds"]].median()
        per_rule = per_rule.sort_values(["seconds", "jobs"], ascending=False).reset_index()
        per_rule["share_of_work"] = (per_rule["seconds"] / per_rule["seconds"].sum()).round(3)
        per_rule.to_csv(arguments.rules, index=False)
        print(per_rule.head(12).to_string(index=False))


if __name__ == "__main__":
    main()
