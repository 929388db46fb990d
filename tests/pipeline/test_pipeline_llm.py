"""Language-model answers end to end on the tiny corpus.

* The real bundled model: llama.cpp's server with SmolLM2 answers the tiny
  questions closed book and from BM25's chunks; its log lists the chat
  requests; a second run answers every question from the response cache and
  starts no server (skipped, with the install command, without the llm extra).
* The same ``llm`` generator pointed at stub OpenAI-compatible servers that
  answer with a fixed sentence: moving it to another endpoint re-runs only the
  LLM answer jobs and changes only the LLM answer table; a stub that returns
  errors quoting the key leaves no piece of it in any output, log or file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from rag.answering.llm_answers import COLUMNS
from tests.extras import require_extra
from tests.fault_server import FaultServer, reply
from tests.workdir import copy_project, make_workdir, planned_jobs, read_config, snakemake, write_config

TARGETS = ["results/answers.csv", "results/answers_summary.csv", "results/llm_answers.csv"]
KEY = "sk-live-Q7v2Rz9KxW4mTb8LpN3sYd6Hc1Fg5Ja0"
PIECES = [KEY[start : start + 8] for start in range(len(KEY) - 7)]
SETTINGS = ["none/none", "sentences20/bm25"]


def configure(workdir: Path, generator: dict) -> None:
    config = read_config(workdir)
    config["generators"] = {
        "extractive": {"kind": "extractive"},
        "reader": {"kind": "reader", "similarity": "none"},
        "model": generator,
    }
    config["answers"] = {
        "chunkers": ["sentences20"],
        "retrievers": ["bm25"],
        "k": 3,
        "abstention": {"thresholds": [0.0, 0.5, 1.0]},
        "summaries": {"window": 1000},
        "llm": {"chunkers": ["sentences20"], "retrievers": ["none", "bm25"]},
        "caller": "everyone",  # beta is restricted: the public caller would not read it
    }
    write_config(workdir, config)


def answer_files(workdir: Path) -> list[Path]:
    return [workdir / f"work/llm_answers/tiny/development/model/{setting}.parquet" for setting in SETTINGS]


def completion(content: str) -> bytes:
    body = {
        "choices": [{"message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5},
    }
    return json.dumps(body).encode()


def stub(content: str) -> FaultServer:
    return FaultServer([reply(completion(content))])


def every_file(workdir: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(workdir)): path.read_bytes() for path in workdir.rglob("*") if path.is_file()
    }


# --------------------------------------------------------------------------
# The real bundled model
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    require_extra("llm")
    root = tmp_path_factory.mktemp("llm-bundled")
    project = copy_project(root / "project")
    workdir = make_workdir(root / "work")
    configure(workdir, {"kind": "llm", "base_url": "bundled", "max_tokens": 16, "timeout": 900})
    first = snakemake(workdir, "--cores", "2", *TARGETS, snakefile=project / "Snakefile")
    return project, workdir, first.stdout + first.stderr


def test_the_bundled_server_answers_every_question_and_logs_each_request(bundled):
    _, workdir, _ = bundled
    questions = len(pd.read_parquet(answer_files(workdir)[0]))
    for setting in SETTINGS:
        log = (workdir / f"logs/llm_server/tiny/development/model/{setting}.log").read_text()
        assert len(re.findall(r'"POST /v1/chat/completions HTTP/1\.1" 200', log)) == questions, setting
    table = pd.read_csv(workdir / "results/llm_answers.csv")
    assert tuple(table.columns) == COLUMNS
    assert len(table) == 2 * questions and not table["cached"].any()
    assert (table["completion_tokens"] > 0).all() and (table["prompt_tokens"] > 0).all()
    closed = table[table["retriever"] == "none"]
    assert (closed["source_chunk_ids"].isna() | (closed["source_chunk_ids"] == "")).all()
    cache = list((workdir / "resources/llm_cache").glob("*.json"))
    assert len(cache) == 2 * questions
    assert not any(":" + str(port) in path.read_text() for path in cache for port in _ports(workdir))


def _ports(workdir: Path) -> set[int]:
    logs = (workdir / "logs/llm_server").rglob("*.log")
    return {int(port) for log in logs for port in re.findall(r"on 127\.0\.0\.1:(\d+)", log.read_text())}


def test_a_second_run_answers_from_the_cache_without_a_server(bundled):
    project, workdir, _ = bundled
    before = pd.read_csv(workdir / "results/llm_answers.csv")
    logs = list((workdir / "logs/llm_server").rglob("*.log"))
    assert logs and all("starting the bundled model" in path.read_text() for path in logs)
    # The answers are asked again (their files exist, so Snakemake must be told to);
    # every reply must come from the cache.
    snakemake(workdir, "--cores", "2", "--forcerun", "llm_answer", *TARGETS, snakefile=project / "Snakefile")
    after = pd.read_csv(workdir / "results/llm_answers.csv")
    assert after["cached"].all()
    timing = ["seconds", "cached"]
    pd.testing.assert_frame_equal(before.drop(columns=timing), after.drop(columns=timing))
    # The jobs ran again, and no server was started: their server logs are empty.
    for path in logs:
        assert not path.exists() or path.read_text() == "", f"{path}: a server was started"
    for setting in SETTINGS:
        job = (workdir / f"logs/llm_answer/tiny/development/model/{setting}.log").read_text()
        assert "from the cache, 0 asked" in job


# --------------------------------------------------------------------------
# Stub endpoints: another endpoint changes only the LLM answers; the key stays secret
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    first, second = stub("Alpha orbits in 88.2 days [1]."), stub("I cannot answer from the sources.")
    root = tmp_path_factory.mktemp("llm-stub")
    project = copy_project(root / "project")
    workdir = make_workdir(root / "work")
    yield project, workdir, first, second
    first.close()
    second.close()


def test_another_endpoint_changes_only_the_llm_answer_table(stubs):
    project, workdir, first, second = stubs
    configure(workdir, {"kind": "llm", "base_url": first.url + "/v1", "model": "stub"})
    snakemake(workdir, "--cores", "2", *TARGETS, snakefile=project / "Snakefile")
    questions = len(pd.read_parquet(answer_files(workdir)[0]))
    assert len(first.received) == 2 * questions
    before = {path: path.read_bytes() for path in (workdir / "results").rglob("*.csv")}

    configure(workdir, {"kind": "llm", "base_url": second.url + "/v1", "model": "stub"})
    assert planned_jobs(workdir, project / "Snakefile", tuple(TARGETS)) == {
        "llm_answer": 2,
        "llm_answers_table": 1,
    }
    snakemake(workdir, "--cores", "2", *TARGETS, snakefile=project / "Snakefile")
    after = {path: path.read_bytes() for path in (workdir / "results").rglob("*.csv")}
    changed = sorted(path.name for path in after if after[path] != before.get(path))
    assert changed == ["llm_answers.csv"]
    table = pd.read_csv(workdir / "results/llm_answers.csv")
    assert table["abstained"].all() and not table["faithful"].any()
    assert len(first.received) == 2 * questions and len(second.received) == 2 * questions


def test_errors_quoting_the_key_leave_no_piece_of_it_anywhere(tmp_path, monkeypatch):
    error = json.dumps({"error": {"message": f"invalid key {KEY}; your key is {KEY[::-1][::-1]}"}}).encode()
    failing = FaultServer([reply(error, status=500, headers={"Content-Type": "application/json"})])
    try:
        project = copy_project(tmp_path / "project")
        workdir = make_workdir(tmp_path / "work")
        generator = {
            "kind": "llm",
            "base_url": failing.url + "/v1",
            "model": "stub",
            "api_key_env": "TEST_LLM_KEY",
            "timeout": 4,
        }
        configure(workdir, generator)
        monkeypatch.setenv("TEST_LLM_KEY", KEY)
        result = snakemake(workdir, "--cores", "1", *TARGETS, snakefile=project / "Snakefile", check=False)
    finally:
        failing.close()
    assert result.returncode != 0
    assert failing.received and failing.received[0].headers["authorization"] == f"Bearer {KEY}"
    output = result.stdout + result.stderr
    assert "HTTP 500" in output
    files = every_file(workdir)
    assert not any(path.startswith("work/llm_answers") for path in files)  # nothing half-written
    for piece in PIECES:
        assert piece not in output, piece
        for path, content in files.items():
            assert piece.encode() not in content, (piece, path)
