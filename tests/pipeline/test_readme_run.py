"""The README's first block, run as written in a fresh clone, leaves `git status` empty; so does the report.

A user who follows the README must be able to tell their own change from
noise: two builds of one commit give the same bytes in every tracked file,
and what measures the machine (results/timings/) or is not a result (the HTML
report) lands where git does not look.

The clone gets a virtual environment prepared here instead of the block's
own set-up (``tests/readme_blocks.without_setup``), which would install every
extra and build llama.cpp from source: a venv whose site-packages point at
the running interpreter's (through a ``.pth`` file), with its ``snakemake``
and ``rag`` programs. Everything else in the block runs exactly as written.

The committed results are those of one machine's BLAS kernel: MiniLM's
float32 vectors differ between kernels by about 1e-7, which leaves every
table alone but can change the sixth decimal of a score in the TREC runs
(docs/formats.md, "Precision"). On a machine whose kernel differs from the
one results/ were made with, the runs may show here; ``python -m
rag.reproduce`` is the check that holds across kernels.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.readme_blocks import PROJECT, README, shell_blocks, without_setup

# docs/comparisons.md, "The HTML report".
REPORT = ".venv/bin/snakemake --report results/report.html --report-metadata results/report_metadata.yaml"
PROGRAMS = ("snakemake", "rag")


def _git(*arguments: str, cwd: Path) -> str:
    return subprocess.run(["git", *arguments], cwd=cwd, capture_output=True, text=True, check=True).stdout


def _prepared_venv(clone: Path) -> None:
    """``clone/.venv`` over the running interpreter's packages, with the programs the README calls."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(clone / ".venv")], check=True)
    python = clone / ".venv" / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    outer = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    lines = "".join(f"import site; site.addsitedir({path!r})\n" for path in outer)
    Path(purelib, "outer_packages.pth").write_text(lines)
    for program in PROGRAMS:
        source = Path(sys.executable).parent / program
        if not source.is_file():
            pytest.skip(f"{source} is missing: run the tests from the project's venv")
        script = source.read_text().split("\n", 1)[1]
        target = clone / ".venv" / "bin" / program
        target.write_text(f"#!{python}\n{script}")
        target.chmod(0o755)


def _status(clone: Path) -> str:
    return _git("status", "--porcelain", "--untracked-files=all", cwd=clone)


def test_the_first_block_and_the_report_leave_the_clone_clean(tmp_path):
    try:
        commit = _git("rev-parse", "HEAD", cwd=PROJECT).strip()
    except (subprocess.CalledProcessError, FileNotFoundError) as error:
        pytest.skip(f"not a git checkout: {error}")
    clone = tmp_path / "clone"
    _git("clone", "--quiet", "--no-checkout", str(PROJECT), str(clone), cwd=tmp_path)
    _git("checkout", "--quiet", commit, cwd=clone)
    _prepared_venv(clone)
    assert _status(clone) == ""  # .venv/ is ignored

    block = without_setup(shell_blocks(README.read_text(encoding="utf-8"))[0])
    run = subprocess.run(["bash", "-e", "-c", block], cwd=clone, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert _status(clone) == "", "the README's first block changed tracked files"

    report = subprocess.run(["bash", "-e", "-c", REPORT], cwd=clone, capture_output=True, text=True)
    assert report.returncode == 0, report.stdout[-3000:] + report.stderr[-3000:]
    assert (clone / "results" / "report.html").is_file()
    assert _status(clone) == "", "building the report changed tracked files"
