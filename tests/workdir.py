"""Helpers for tests that drive Snakemake on small configurations.

Every test that reaches :func:`snakemake` (directly, through a helper of its
module, or through a fixture) is marked ``pipeline`` by ``tests/conftest.py``,
and :func:`snakemake` refuses to run inside a test that is not, so the fast
subset (``pytest -m "not pipeline"``) cannot quietly start a workflow.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

from rag.pipeline.reproduce import WORKFLOW_CODE, copy_inputs, job_counts

PROJECT = Path(__file__).resolve().parents[1]
FIXTURES = PROJECT / "tests" / "fixtures"

# Set by tests/conftest.py to the id of the running test when it is not marked
# ``pipeline``; None outside tests and inside pipeline tests.
unmarked_test: str | None = None


def copy_project(destination: Path) -> Path:
    """A private copy of the workflow and the package, safe to edit in a test."""
    return copy_inputs(PROJECT, destination, WORKFLOW_CODE)


def make_workdir(destination: Path, fixture: str = "tiny") -> Path:
    shutil.copytree(FIXTURES / fixture, destination, dirs_exist_ok=True)
    return destination


def read_config(workdir: Path) -> dict:
    return yaml.safe_load((workdir / "config.yaml").read_text())


def write_config(workdir: Path, config: dict) -> None:
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def add_question(workdir: Path, question_id: str, text: str, document: str, evidence: str) -> None:
    """Append an answerable fact question, with one evidence span in ``document``, to questions.yaml."""
    questions = yaml.safe_load((workdir / "questions.yaml").read_text())
    questions["questions"].append(
        {
            "id": question_id,
            "question": text,
            "type": "fact",
            "answerable": True,
            "evidence": [{"spans": [{"document": document, "text": evidence}]}],
        }
    )
    (workdir / "questions.yaml").write_text(yaml.safe_dump(questions, sort_keys=False))


def snakemake(workdir: Path, *arguments: str, snakefile: Path | None = None, check: bool = True):
    if unmarked_test is not None:
        raise AssertionError(
            f"{unmarked_test} runs Snakemake but is not marked pipeline; "
            "tests/conftest.py marks tests that reach tests.workdir.snakemake through module "
            "functions or fixtures, otherwise add @pytest.mark.pipeline"
        )
    snakefile = snakefile or PROJECT / "Snakefile"
    command = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "-d", str(workdir), *arguments]
    environment = {**os.environ, "PYTHONPATH": str(snakefile.parent)}
    result = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600)
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(arguments)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def planned_jobs(
    workdir: Path, snakefile: Path | None = None, targets: tuple[str, ...] = ()
) -> dict[str, int]:
    """Rule -> job count of a dry run (of ``targets``, default all); empty when there is nothing to do."""
    result = snakemake(workdir, "-n", "--cores", "1", *targets, snakefile=snakefile)
    return job_counts(result.stdout + result.stderr)


def planned_outputs(workdir: Path, snakefile: Path | None = None) -> list[str]:
    result = snakemake(workdir, "-n", "--cores", "1", snakefile=snakefile)
    return re.findall(r"^\s+output: (.*)$", result.stdout + result.stderr, flags=re.MULTILINE)


@dataclass(frozen=True)
class Build:
    """A private copy of the project, a workdir built by it, and what Snakemake printed."""

    project: Path
    workdir: Path
    log: str


def build(
    root: Path,
    prepare: Callable[[Path], None] | None = None,
    targets: Iterable[str] = (),
    fixture: str = "tiny",
    cores: int = 2,
) -> Build:
    """Copy the project and ``fixture`` under ``root``, let ``prepare`` edit the workdir, run Snakemake.

    The project is copied so a test may edit the workflow without touching the
    checkout; ``targets`` (default: everything) keeps a build to what a test reads.
    """
    project = copy_project(root / "project")
    workdir = make_workdir(root / "work", fixture)
    if prepare is not None:
        prepare(workdir)
    result = snakemake(workdir, "--cores", str(cores), *targets, snakefile=project / "Snakefile")
    return Build(project=project, workdir=workdir, log=result.stdout + result.stderr)
