"""The workflow passes Snakemake's linter, and the code its formatters and ruff (CI runs these too)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.workdir import PROJECT


def run(*command: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(PROJECT)}
    return subprocess.run(command, cwd=PROJECT, capture_output=True, text=True, env=environment, timeout=600)


def test_snakemake_lint_finds_nothing():
    result = run(sys.executable, "-m", "snakemake", "--lint", "--cores", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Lints for" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "command",
    [
        ("ruff", "check", "."),
        ("ruff", "format", "--check", "."),
        ("snakefmt", "--check", "workflow", "Snakefile"),
    ],
    ids=["ruff", "ruff-format", "snakefmt"],
)
def test_code_is_formatted_and_clean(command):
    executable = shutil.which(command[0], path=os.path.dirname(sys.executable)) or shutil.which(command[0])
    assert executable, f"{command[0]} is part of the test extra"
    result = run(executable, *command[1:])
    assert result.returncode == 0, result.stdout + result.stderr
