"""The reproduction check: rebuild every table in a scratch folder and compare it with results/.

    python -m rag.pipeline.reproduce            # exits 0 when every cell matches, 1 otherwise

The tracked inputs (Snakefile, config.yaml, workflow/, rag/, resources/) are
copied into a temporary folder and the whole pipeline runs there with
``snakemake -d``, so nothing in the project is touched. Each regenerated
``results/*.csv`` is then compared with the committed one, cell by cell, as
text: the tables are written with fixed formatting, so the same numbers give
the same bytes. Two kinds of column are treated differently, both declared
below so that a reader can see the whole contract in one place:

- timing columns (``TIMING_COLUMNS``) measure the machine, not the method, and
  are skipped;
- columns with a declared tolerance (``COLUMN_TOLERANCES``) match when the two
  numbers differ by at most that much.

Every other cell must be identical. Rows are matched by their key: the
shortest run of leading columns that identifies each row of the committed
table (corpus, chunker, retriever, metric, k for ``metrics.csv``).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# Columns that time the machine: skipped by the comparison (docs/formats.md). The
# index jobs' seconds and memory and the synthetic IVF benchmark's times are not
# here: they are written to results/timings/ (rag.timing.TIMINGS_FOLDER), which
# git ignores and this check never reads (it compares results/*.csv only).
TIMING_COLUMNS: Mapping[str, frozenset[str]] = {
    # A language model's request time, and whether this run read the reply from the cache.
    "llm_answers.csv": frozenset({"seconds", "cached"}),
    # A language model's answers: seconds per answer, and whether it came from the response
    # cache (a rebuild from the committed cache reads every answer from it).
    "llm_answers_judged.csv": frozenset({"seconds", "cached"}),
    "llm_answers_summary.csv": frozenset({"seconds_per_answer", "cached_answers"}),
}
# Columns compared within an absolute tolerance instead of exactly: (file, column) -> tolerance.
# Empty: every non-timing cell of the bundled grid reproduces exactly under any BLAS kernel.
COLUMN_TOLERANCES: Mapping[tuple[str, str], float] = {}
# The workflow's code: what a copy of the project needs to run on another configuration.
WORKFLOW_CODE = ("Snakefile", "workflow", "rag")
# What a run reads: copied into the scratch folder, nothing else.
TRACKED_INPUTS = (*WORKFLOW_CODE, "config.yaml", "resources")


@dataclass(frozen=True)
class CellDifference:
    """One cell that did not reproduce; ``column`` names a whole-table problem when no cell applies."""

    file: str
    row: str
    column: str
    committed: str
    regenerated: str

    def describe(self) -> str:
        return (
            f"{self.file} [{self.row}] {self.column}: committed {self.committed!r}, "
            f"regenerated {self.regenerated!r}"
        )


Table = tuple[list[str], list[list[str]]]


def _key_width(header: Sequence[str], rows: Sequence[Sequence[str]], excluded: frozenset[str]) -> int:
    """How many leading columns make every row's key unique (0 when none do: rows go by position)."""
    for width in range(1, len(header) + 1):
        if header[width - 1] in excluded:
            return 0
        keys = [tuple(row[:width]) for row in rows]
        if len(set(keys)) == len(keys):
            return width
    return 0


def _matches(committed: str, regenerated: str, tolerance: float | None) -> bool:
    if committed == regenerated:
        return True
    if tolerance is None:
        return False
    try:
        first, second = float(committed), float(regenerated)
    except ValueError:
        return False
    return math.isclose(first, second, rel_tol=0.0, abs_tol=tolerance)


def compare_tables(
    name: str,
    committed: Table,
    regenerated: Table,
    timing: frozenset[str] = frozenset(),
    tolerances: Mapping[str, float] | None = None,
) -> list[CellDifference]:
    """Every differing cell of two tables given as (header, rows of text cells)."""
    tolerances = dict(tolerances or {})
    header, rows = committed
    new_header, new_rows = regenerated
    if header != new_header:
        return [CellDifference(name, "header", "columns", ",".join(header), ",".join(new_header))]
    width = _key_width(header, rows, timing | set(tolerances))

    def key_of(index: int, row: Sequence[str]) -> str:
        if width == 0:
            return f"row {index + 1}"
        return ", ".join(
            f"{column}={value}" for column, value in zip(header[:width], row[:width], strict=True)
        )

    committed_rows = {key_of(index, row): row for index, row in enumerate(rows)}
    regenerated_rows = {key_of(index, row): row for index, row in enumerate(new_rows)}
    differences = []
    for key, row in committed_rows.items():
        other = regenerated_rows.get(key)
        if other is None:
            differences.append(CellDifference(name, key, "(row)", "present", "missing"))
            continue
        for column, old, new in zip(header, row, other, strict=True):
            if column not in timing and not _matches(old, new, tolerances.get(column)):
                differences.append(CellDifference(name, key, column, old, new))
    for key in regenerated_rows.keys() - committed_rows.keys():
        differences.append(CellDifference(name, key, "(row)", "missing", "present"))
    return differences


def read_table(path: Path) -> Table:
    """A CSV file as its header and rows of text cells, exactly as written."""
    import csv

    with open(path, newline="", encoding="utf-8") as handle:
        lines = list(csv.reader(handle))
    if not lines:
        return [], []
    return lines[0], lines[1:]


def compare_folders(committed: Path, regenerated: Path) -> list[CellDifference]:
    """Compare every ``*.csv`` of the committed results folder with its regenerated twin."""
    differences = []
    committed_files = {path.name for path in committed.glob("*.csv")}
    regenerated_files = {path.name for path in regenerated.glob("*.csv")}
    for name in sorted(committed_files | regenerated_files):
        if name not in regenerated_files:
            differences.append(CellDifference(name, "(file)", "(file)", "present", "missing"))
            continue
        if name not in committed_files:
            differences.append(CellDifference(name, "(file)", "(file)", "missing", "present"))
            continue
        tolerances = {column: value for (file, column), value in COLUMN_TOLERANCES.items() if file == name}
        differences.extend(
            compare_tables(
                name,
                read_table(committed / name),
                read_table(regenerated / name),
                TIMING_COLUMNS.get(name, frozenset()),
                tolerances,
            )
        )
    return differences


def copy_inputs(project: Path, scratch: Path, names: Sequence[str] = TRACKED_INPUTS) -> Path:
    """Copy the tracked inputs of a run (not work/, results/ or caches) into ``scratch``; returns it.

    ``names`` picks fewer, e.g. :data:`WORKFLOW_CODE` for a copy that will be
    given its own configuration. ``scratch`` is made when missing.
    """
    scratch.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in names:
        source = project / name
        if source.is_dir():
            shutil.copytree(source, scratch / name, ignore=ignore)
        elif source.is_file():
            shutil.copy2(source, scratch / name)
        else:
            raise FileNotFoundError(f"{source}: a tracked input of the pipeline is missing")
    return scratch


def job_counts(log: str) -> dict[str, int]:
    """Rule -> jobs from the "Job stats" table of a Snakemake run's (or dry run's) output.

    Empty when Snakemake found nothing to be done; an output with neither is an error.
    """
    if "Nothing to be done" in log:
        return {}
    if "Job stats:" not in log:
        raise ValueError(f"no job stats in the Snakemake output:\n{log[-3000:]}")
    counts = {}
    for line in log.split("Job stats:", 1)[1].splitlines()[3:]:
        match = re.match(r"^(\S+)\s+(\d+)$", line.strip())
        if not match:
            break
        if match.group(1) != "total":
            counts[match.group(1)] = int(match.group(2))
    return counts


# Snakemake's line after every finished job: "57 of 208 steps (27%) done".
_STEPS_DONE = re.compile(r"^(\d+) of (\d+) steps \(\d+%\) done")
# Seconds between two progress lines of the rebuild (and one at the end).
PROGRESS_EVERY = 10.0
# Characters of the run's output kept to show when it fails.
_OUTPUT_TAIL = 8000


def steps_done(line: str) -> tuple[int, int] | None:
    """(jobs done, jobs in all) from a Snakemake progress line, or None for any other line."""
    match = _STEPS_DONE.match(line.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def progress_message(done: int, total: int, seconds: float) -> str:
    """``57/208 jobs done, 1 min 20 s elapsed, about 3 min 27 s left``: one line of the rebuild."""
    from rag.progress import format_duration

    line = f"{done}/{total} jobs done, {format_duration(seconds)} elapsed"
    if 0 < done < total:
        line += f", about {format_duration((total - done) * seconds / done)} left"
    return line


def _print_now(line: str) -> None:
    print(line, flush=True)


def follow_progress(
    lines: Iterable[str],
    report: Callable[[str], object],
    clock: Callable[[], float] = time.monotonic,
    every: float = PROGRESS_EVERY,
) -> str:
    """Read a Snakemake run's output and report its progress; returns the output's last characters.

    ``report`` gets :func:`progress_message` once ``every`` seconds have
    passed since the last line (or the start) and when the last job is done.
    """
    started = last = clock()
    tail = ""
    for line in lines:
        tail = (tail + line)[-_OUTPUT_TAIL:]
        steps = steps_done(line)
        if steps is None:
            continue
        now = clock()
        if now - last >= every or steps[0] == steps[1]:
            last = now
            report(progress_message(*steps, now - started))
    return tail


def regenerate(
    project: Path, scratch: Path, cores: int, report: Callable[[str], object] = _print_now
) -> subprocess.CompletedProcess:
    """Run the whole pipeline on a copy of the tracked inputs in ``scratch``.

    The run takes minutes: ``report`` gets a progress line (jobs done of all,
    time elapsed and left) every :data:`PROGRESS_EVERY` seconds and when the
    last job is done (:func:`follow_progress`). The returned ``stdout`` holds
    the end of the run's output, its errors included, for a failure to show.
    """
    copy_inputs(project, scratch)
    command = [sys.executable, "-m", "snakemake", "-s", str(scratch / "Snakefile"), "-d", str(scratch)]
    command += ["--cores", str(cores), "--quiet", "rules"]
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(scratch)},
    ) as process:
        assert process.stdout is not None
        tail = follow_progress(process.stdout, report)
    return subprocess.CompletedProcess(command, process.returncode, stdout=tail, stderr="")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rag.pipeline.reproduce",
        description="Rebuild every results/*.csv in a scratch folder and compare it with the committed one.",
    )
    parser.add_argument("--project", default=".", help="the project folder (default: the current one)")
    parser.add_argument("--cores", type=int, default=2, help="cores for snakemake (default 2)")
    parser.add_argument(
        "--keep", metavar="FOLDER", help="build in FOLDER and keep it, instead of a temporary one"
    )
    arguments = parser.parse_args(argv)
    project = Path(arguments.project).resolve()
    committed = project / "results"
    if not committed.is_dir():
        print(f"{committed}: no committed results to compare with", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="rag-reproduce-") as temporary:
        scratch = Path(arguments.keep).resolve() if arguments.keep else Path(temporary)
        if arguments.keep and scratch.exists() and any(scratch.iterdir()):
            print(f"{scratch}: the scratch folder must be new or empty", file=sys.stderr)
            return 2
        scratch.mkdir(parents=True, exist_ok=True)
        print(f"regenerating the tables in {scratch} (a few minutes) ...", flush=True)
        run = regenerate(project, scratch, arguments.cores)
        if run.returncode != 0:
            print(run.stdout[-4000:] + run.stderr[-4000:], file=sys.stderr)
            print(f"the pipeline failed in {scratch} (exit status {run.returncode})", file=sys.stderr)
            return 2
        differences = compare_folders(committed, scratch / "results")
    for difference in differences:
        print(difference.describe())
    tables = len(list(committed.glob("*.csv")))
    if differences:
        print(f"{len(differences)} cells differ from the committed results ({tables} tables compared)")
        return 1
    print(f"all {tables} tables reproduce (timing columns skipped: {dict(TIMING_COLUMNS)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
