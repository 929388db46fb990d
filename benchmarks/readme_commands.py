"""How long the README's commands take, run exactly as written, on this machine.

Reads the command blocks of README.md, runs one of them with bash in a fresh
clone of the project (the folder given), and records its wall time beside the
machine's cores and load average, since a shared machine runs several times
slower. One row per command; a new measurement replaces the command's old row.

    python benchmarks/readme_commands.py tests --clone /tmp/fresh-clone
    python benchmarks/readme_commands.py reproduce --clone /tmp/fresh-clone

`tests` is the README's test command (set up the venv and run every test, as
CI does); `reproduce` is its reproduction check, which rebuilds every table of
results/ from a clean scratch folder, the time of the pipeline's clean build
without the install. The README quotes these rows (tests/unit/test_readme_benchmarks.py).
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
FIELDS = ("command", "seconds", "passed", "cores", "load_average_before", "load_average_after", "text")


def readme_commands(readme: str) -> dict[str, str]:
    """The README's commands by name: its test command and its reproduction check."""
    blocks = re.findall(r"```bash\n(.*?)```", readme, flags=re.S)
    tests = next((b for b in blocks if "-m pytest" in b), None)
    reproduce = re.search(r"`(\.venv/bin/python -m rag\.pipeline\.reproduce)`", readme)
    if tests is None or reproduce is None:
        raise SystemExit("README.md: no test command block or no reproduction check")
    lines = [line for line in tests.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return {"tests": "\n".join(lines), "reproduce": reproduce.group(1)}


def run_seconds(command: str, clone: Path) -> tuple[float, bool]:
    """Wall seconds of one command run with bash in the clone, and whether it passed."""
    started = time.perf_counter()
    completed = subprocess.run(["bash", "-c", command], cwd=clone, check=False)
    return time.perf_counter() - started, completed.returncode == 0


def write_row(output: Path, row: dict[str, str]) -> None:
    """The table with this command's row replaced (other commands' rows kept, in order)."""
    rows = list(csv.DictReader(output.open(encoding="utf-8"))) if output.exists() else []
    rows = [r for r in rows if r["command"] != row["command"]] + [row]
    rows.sort(key=lambda r: r["command"])
    with output.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("tests", "reproduce"))
    parser.add_argument("--clone", type=Path, required=True, help="a fresh clone of the project")
    parser.add_argument("--output", type=Path, default=PROJECT / "results/benchmarks/readme_commands.csv")
    arguments = parser.parse_args()
    command = readme_commands((arguments.clone / "README.md").read_text(encoding="utf-8"))[arguments.command]
    before = os.getloadavg()[0]
    seconds, passed = run_seconds(command, arguments.clone)
    write_row(
        arguments.output,
        {
            "command": arguments.command,
            "seconds": f"{seconds:.0f}",
            "passed": str(passed).lower(),
            "cores": str(os.cpu_count()),
            "load_average_before": f"{before:.2f}",
            "load_average_after": f"{os.getloadavg()[0]:.2f}",
            "text": command.replace("\n", " ; "),
        },
    )
    print(f"{arguments.command}: {seconds:.0f} s, {'passed' if passed else 'FAILED'}")
    raise SystemExit(0 if passed else 1)


if __name__ == "__main__":
    main()
