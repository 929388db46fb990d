"""``rag ask --trace FILE`` opens its file safely, and before any model is asked.

Drawn, seeded: the trace path is a new file, an existing file, a symbolic link
(to a file, to a document, dangling), a FIFO, a directory, a device, a file
inside the documents folder, the config file or a hard link to a document.
Accepted only when it is a regular file outside everything ``rag ask`` reads;
otherwise one line naming ``--trace`` and the file, and nothing it points to
changed. A refusal comes before the model: a stub endpoint receives nothing.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag import cli
from rag.ask.traces import TraceFileError, append_trace, open_trace_file
from tests.fault_server import FaultServer, reply

KINDS = ("new", "existing", "link_to_file", "link_to_document", "dangling_link", "fifo", "directory")
KINDS += ("device", "inside_documents", "config", "hard_link_to_document")


def layout(root: Path) -> tuple[Path, Path, Path]:
    documents = root / "documents"
    documents.mkdir(exist_ok=True)
    document = documents / "a.md"
    document.write_text("---\naccess: public\n---\n\n# A\n\nThe alpha widget weighs 12 kilograms.\n")
    config = root / "config.yaml"
    config.write_text("callers: {}\n")
    return documents, document, config


def make(kind: str, root: Path, documents: Path, document: Path, config: Path) -> Path:
    path = root / "trace.jsonl"
    if kind == "existing":
        path.write_text('{"earlier": 1}\n')
    elif kind == "link_to_file":
        (root / "elsewhere.jsonl").write_text("")
        path.symlink_to(root / "elsewhere.jsonl")
    elif kind == "link_to_document":
        path.symlink_to(document)
    elif kind == "dangling_link":
        path.symlink_to(root / "missing.jsonl")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "device":
        path = Path(os.devnull)
    elif kind == "inside_documents":
        path = documents / "trace.jsonl"
    elif kind == "config":
        path = config
    elif kind == "hard_link_to_document":
        os.link(document, path)
    return path


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.sampled_from(KINDS), st.integers(0, 2**16))
def test_a_trace_file_is_a_regular_file_outside_every_input_or_refused(tmp_path_factory, kind, number):
    root = tmp_path_factory.mktemp(f"trace{number}")
    documents, document, config = layout(root)
    before = {path: path.read_bytes() for path in (document, config)}
    path = make(kind, root, documents, document, config)
    inputs = [documents, root / "cache", config]
    accepted = kind in ("new", "existing")
    if accepted:
        descriptor = open_trace_file(path, inputs)
        append_trace(descriptor, json.dumps({"n": number}) + "\n", str(path))
        assert path.read_text().splitlines()[-1] == json.dumps({"n": number})
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0 or kind == "existing"
    else:
        with pytest.raises(TraceFileError) as error:
            open_trace_file(path, inputs)
        message = str(error.value)
        assert message.startswith(f"--trace {path}: ") and "\n" not in message
    assert {path: path.read_bytes() for path in before} == before  # no input changed
    if kind == "link_to_file":
        assert (root / "elsewhere.jsonl").read_text() == ""


def test_a_fifo_is_refused_without_waiting_for_a_reader(tmp_path):
    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo)
    outcome = []
    worker = threading.Thread(target=lambda: outcome.append(_refusal(fifo)), daemon=True)
    worker.start()
    worker.join(10)
    assert outcome and "FIFO" in outcome[0]


def _refusal(path: Path) -> str:
    try:
        open_trace_file(path, [])
    except TraceFileError as error:
        return str(error)
    return "accepted"


def test_a_full_disk_is_refused_at_opening(tmp_path, monkeypatch):
    class Full:
        f_bavail, f_frsize = 3, 4096

    monkeypatch.setattr(os, "fstatvfs", lambda descriptor: Full())
    with pytest.raises(TraceFileError, match="disk is full"):
        open_trace_file(tmp_path / "trace.jsonl", [])


def test_lines_are_appended_whole_and_earlier_lines_kept(tmp_path):
    path = tmp_path / "trace.jsonl"
    path.write_text('{"earlier": 1}\n')
    for number in range(3):
        append_trace(open_trace_file(path, []), json.dumps({"n": number}) + "\n", str(path))
    assert [json.loads(line) for line in path.read_text().splitlines()] == [{"earlier": 1}] + [
        {"n": number} for number in range(3)
    ]


@pytest.mark.parametrize("kind", ["directory", "inside_documents", "config", "link_to_file"])
def test_a_refused_trace_file_stops_rag_ask_before_the_model_is_asked(tmp_path, monkeypatch, capsys, kind):
    documents, document, config = layout(tmp_path)
    monkeypatch.chdir(tmp_path)
    path = make(kind, tmp_path, documents, document, config)
    answer = {"choices": [{"message": {"content": "It weighs 12 kilograms [1]."}}]}
    server = FaultServer([reply(json.dumps(answer).encode())])
    try:
        monkeypatch.setenv("RAG_LLM_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("RAG_LLM_API_KEY", "k")
        monkeypatch.setenv("RAG_LLM_MODEL", "stub")
        arguments = ["ask", "How much does the alpha widget weigh?", "--documents", str(documents)]
        arguments += ["--cache", str(tmp_path / "cache"), "--retriever", "bm25_lsa_ivf"]
        arguments += ["--generator", "hosted", "--trace", str(path)]
        assert cli.main(arguments) == 1
    finally:
        server.close()
    error = capsys.readouterr().err
    assert f"--trace {path}: " in error and len(error.strip().splitlines()) == 1
    assert server.received == []
    assert document.read_text().endswith("12 kilograms.\n") and config.read_text() == "callers: {}\n"
