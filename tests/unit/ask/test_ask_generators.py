"""``rag ask --generator NAME``: the plan's checks on a local entry, reserved bundled names, one timeout.

An llm entry of ./config.yaml passes the same checks as in the pipeline's
plan (rag.answering.config_checks): a wrong value is one line naming the key,
never a traceback and never accepted. The bundled names run the pipeline's own
entries (so ``rag ask`` and the pipeline share the sampling and timeout), and
a local entry cannot redefine them, so it cannot send a key of its choosing to
an endpoint of its choosing under the bundled model's name.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rag.ask import cli
from rag.ask.cli import AskError, bundled_generators, llm_entry
from rag.retrieval.filters import PUBLIC_CALLER

PROJECT = Path(__file__).resolve().parents[3]


def local_config(tmp_path: Path, monkeypatch, generators: object) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"generators": generators}))


@pytest.mark.parametrize(
    "change, key",
    [
        ({"temperature": "hot"}, "temperature"),
        ({"max_tokens": -5}, "max_tokens"),
        ({"max_tokens": 10**9}, "max_tokens"),
        ({"timeout": 0}, "timeout"),
        ({"seed": -1}, "seed"),
        ({"concurrency": 0}, "concurrency"),
        ({"colour": "blue"}, "colour"),
        ({"user": "no placeholder"}, "user"),
        ({"base_url": "ftp://x.example/v1"}, "base_url"),
        ({"base_url": "https://u:p@x.example/v1"}, "credentials"),
        ({"api_key_env": "NOT A NAME"}, "key_variable"),
    ],
)
def test_a_local_entry_gets_the_plans_checks_in_one_line(tmp_path, monkeypatch, change, key):
    local_config(
        tmp_path, monkeypatch, {"mine": {"kind": "llm", "base_url": "https://x.example/v1", **change}}
    )
    with pytest.raises(AskError) as caught:
        llm_entry("mine")
    message = str(caught.value)
    assert key in message and "config.yaml" in message and "\n" not in message


@pytest.mark.parametrize(
    "generators, words",
    [
        ({"mine": "llm"}, "not a mapping"),
        ({"mine": {"kind": "reader"}}, "not a language model"),
        (["mine"], "not a mapping"),
    ],
)
def test_a_malformed_section_is_one_line(tmp_path, monkeypatch, generators, words):
    local_config(tmp_path, monkeypatch, generators)
    with pytest.raises(AskError, match=words):
        llm_entry("mine")


def test_an_unreadable_config_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text("generators: [unclosed\n")
    with pytest.raises(AskError, match="config.yaml: cannot be read as YAML"):
        llm_entry("mine")


@pytest.mark.parametrize("name", ["llm", "smollm2"])
def test_a_local_entry_cannot_redefine_a_bundled_name(tmp_path, monkeypatch, name):
    evil = {"kind": "llm", "base_url": "https://collector.example/v1", "api_key_env": "HOME"}
    local_config(tmp_path, monkeypatch, {name: evil})
    with pytest.raises(AskError) as caught:
        llm_entry(name)
    message = str(caught.value)
    assert "reserved" in message and name in message and "\n" not in message
    assert os.environ.get("HOME", "unset") not in message


def test_the_projects_own_config_may_list_the_bundled_entry_unchanged(monkeypatch):
    monkeypatch.chdir(PROJECT)
    assert llm_entry("smollm2") == bundled_generators()["smollm2"]


def test_the_bundled_names_run_the_pipelines_entry_and_its_timeout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pipeline = yaml.safe_load((PROJECT / "config.yaml").read_text())["generators"]["smollm2"]
    for name in ("llm", "smollm2"):
        entry = llm_entry(name)
        assert entry["base_url"] == "bundled"
        assert (entry["timeout"], entry["max_tokens"]) == (pipeline["timeout"], pipeline["max_tokens"])


def test_the_hosted_generator_takes_the_same_timeout(monkeypatch):
    from rag.models import hosted

    monkeypatch.delenv("RAG_LLM_TIMEOUT", raising=False)
    environment = {
        "RAG_LLM_BASE_URL": "https://x.example/v1",
        "RAG_LLM_API_KEY": "k" * 20,
        "RAG_LLM_MODEL": "m",
    }
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    seen = {}
    monkeypatch.setattr(hosted, "hosted_generator", lambda config, **gated: seen.setdefault("config", config))
    cli._hosted_generator(PUBLIC_CALLER, {})
    assert seen["config"].timeout_seconds == float(bundled_generators()["llm"]["timeout"])
    monkeypatch.setenv("RAG_LLM_TIMEOUT", "7")
    seen.clear()
    cli._hosted_generator(PUBLIC_CALLER, {})
    assert seen["config"].timeout_seconds == 7.0


def test_through_the_command_a_bad_entry_is_one_line_and_exit_status_1(tmp_path):
    (tmp_path / "config.yaml").write_text(
        yaml.safe_dump({"generators": {"mine": {"kind": "llm", "temperature": "hot"}}})
    )
    result = subprocess.run(
        [sys.executable, "-m", "rag", "ask", "How long is a day on Mars?", "--generator", "mine"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "temperature" in line and "hot" in line
