"""Issue 27, housekeeping and tracebacks: what a job leaves behind when killed, and how it fails.

Each job is a real Python process started the way Snakemake starts a script,
so a ``kill -9`` and an uncaught exception behave as they do in the pipeline.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rag.escaping import visible
from rag.formats.files import write_text

PROJECT = Path(__file__).resolve().parents[2]


def run_job(body: str, folder: Path) -> subprocess.CompletedProcess:
    script = (
        "from rag.pipeline.jobs import start_log\nfrom rag.formats.files import write_text, atomic_path\n"
    )
    script += f"log = start_log({str(folder / 'job.log')!r})\n" + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def partials(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.partial"))


def test_a_kill_9_during_a_write_leaves_no_partial_after_the_rerun(tmp_path):
    killed = run_job(
        """
        import os, signal
        with atomic_path("out/table.csv") as temporary:
            temporary.write_text("half a ta")
            os.kill(os.getpid(), signal.SIGKILL)
        """,
        tmp_path,
    )
    assert killed.returncode == -9
    assert len(partials(tmp_path)) == 1  # the kill did leave one, so the check below could fail
    rerun = run_job('write_text("out/table.csv", "a,b\\n1,2\\n")\n', tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert partials(tmp_path) == []
    assert (tmp_path / "out/table.csv").read_text() == "a,b\n1,2\n"


def test_a_rewrite_keeps_the_mode_of_the_existing_file(tmp_path):
    target = tmp_path / "private.csv"
    write_text(target, "first\n")
    target.chmod(0o600)
    write_text(target, "second\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.read_text() == "second\n"


def test_every_write_is_fsynced_file_and_folder(tmp_path, monkeypatch):
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(descriptor: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{descriptor}"))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    write_text(tmp_path / "sub" / "table.csv", "x\n")
    assert len(synced) == 2
    assert synced[0].endswith(".partial") and synced[1] == str(tmp_path / "sub")


@pytest.mark.parametrize(
    "raise_line",
    [
        "from rag.corpus.documents import DocumentError as E; raise E('notes/a\\x1b[31m.md: line 3: bad')",
        "from rag.corpus.wikipedia import WikipediaFetchError as E; raise E('article \\x07 gone')",
        "from rag.corpus.beir import BeirFormatError; raise BeirFormatError('qrels.tsv:2: bad score')",
        "from rag.labels import LabelError; raise LabelError('questions.yaml: q1: bad gain')",
    ],
)
def test_a_user_error_in_a_job_is_one_escaped_line_without_a_traceback(tmp_path, raise_line):
    failed = run_job(raise_line + "\n", tmp_path)
    assert failed.returncode == 1
    lines = failed.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert "Traceback" not in failed.stderr and "\x1b" not in failed.stderr and "\x07" not in failed.stderr
    assert lines[0].split(": ", 2)[2] in (tmp_path / "job.log").read_text()


def test_a_bug_keeps_its_traceback(tmp_path):
    failed = run_job("{}['missing']\n", tmp_path)
    assert failed.returncode == 1 and "Traceback" in failed.stderr and "KeyError" in failed.stderr


def test_visible_escapes_controls_and_bidi_but_keeps_text():
    assert visible("caf\u00e9 \u6587") == "caf\u00e9 \u6587"
    assert visible("a\x1b[31mb\x07\u202e") == "a\\x1b[31mb\\x07\\u202e"
    assert visible("one\ntwo", keep_newlines=False) == "one\\x0atwo"


def test_a_config_error_under_snakemake_dry_run_is_one_line_without_frames():
    snakemake = Path(sys.executable).with_name("snakemake")
    finished = subprocess.run(
        [str(snakemake), "-n", "--quiet", "--config", "retrievers=5"],
        cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert finished.returncode == 1
    errors = [line for line in finished.stderr.splitlines() if "Error" in line or "File " in line]
    assert errors == [
        "Error: ConfigError: invalid config.yaml: config['retrievers']: 5 is not of type 'object'"
    ]
