"""The hosted generator against misbehaving servers on 127.0.0.1: deadlines, size caps, the key.

Every fault must end in one :class:`HostedModelError` (or ValueError for bad
settings) that names what went wrong and holds no 8-character piece of the key
in any form; the command-line test runs each fault through ``rag ask`` and
searches stdout, stderr and every file written for the key.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import tracemalloc
import urllib.parse
from pathlib import Path

import pytest

from rag.models.hosted import HostedConfig, HostedModelError, complete, config_from_environment
from rag.models.redaction import Redactor
from tests.fault_server import FaultServer, drip, reply, stream
from tests.workdir import FIXTURES, PROJECT

KEY = "sk-live-Q7v2Rz9KxW4mTb8LpN3sYd6Hc1Fg5Ja0"
BOM_FREE = KEY.encode()
BASE64_KEY = base64.b64encode(BOM_FREE).decode()
PIECES = [KEY[start : start + 8] for start in range(len(KEY) - 7)]


def pieces_in(text: str) -> list[str]:
    forms = [KEY, BASE64_KEY, urllib.parse.quote(KEY, safe="")]
    found = [piece for piece in PIECES if piece in text]
    found += [form for form in forms if form in text]
    return found


def completion(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()


def config_for(server: FaultServer, **overrides) -> HostedConfig:
    settings = {"timeout_seconds": 2.0, "max_retries": 0, **overrides}
    return HostedConfig(base_url=server.url + "/v1", model="m", api_key=KEY, **settings)


def failure(server: FaultServer, *script, **overrides) -> str:
    server.script[:] = list(script)
    with pytest.raises(HostedModelError) as caught:
        complete("prompt", config_for(server, **overrides), sleep=lambda seconds: None)
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    message = str(caught.value)
    assert "\n" not in message and pieces_in(message) == []
    return message


# --------------------------------------------------------------------------
# Deadlines and sizes
# --------------------------------------------------------------------------


def test_dripping_reply_ends_at_the_deadline(server):
    # 73 bytes at one every 0.2 s would take 14.6 s; each byte comes well within any socket timeout.
    started = time.monotonic()
    message = failure(server, drip(completion("x" * 20)[:73].ljust(73), 0.2), timeout_seconds=1.5)
    elapsed = time.monotonic() - started
    assert "no whole reply within" in message and "deadline of 1.5 s" in message
    assert elapsed < 1.5 + 1.0


@pytest.mark.parametrize("announce", [True, False])
def test_huge_reply_is_refused_in_bounded_memory(server, announce):
    tracemalloc.start()
    try:
        message = failure(server, stream(300 * 1024 * 1024, announce=announce), timeout_seconds=30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "reply refused" in message and "max_reply_bytes" in message
    assert peak < 100 * 1024 * 1024


def test_reply_cut_short_is_an_error(server):
    body = completion("a whole answer")

    def cut(request, connection):
        connection.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body[:10]
        )

    assert "cut short" in failure(server, cut)


def test_redirect_is_reported_not_followed(server):
    def moved(request, connection):
        connection.sendall(
            b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:9/x\r\n"
            b"Content-Length: 0\r\nConnection: close\r\n\r\n"
        )

    assert "HTTP 307" in failure(server, moved)
    assert len(server.received) == 1


# --------------------------------------------------------------------------
# The key, in every form a server might send it back
# --------------------------------------------------------------------------

ECHOES = {
    "401 quoting the key after 290 characters": (401, ("x" * 290 + f" bad key {KEY}").encode()),
    "key echoed twice": (500, f"{KEY} ... {KEY}".encode()),
    "base64 of the key": (403, f"Authorization: Basic {BASE64_KEY}".encode()),
    "base64 of the key at another alignment": (403, base64.b64encode(b"u:" + BOM_FREE)),
    "URL-encoded key": (400, urllib.parse.quote(f"key={KEY}", safe="").encode()),
    "a 12-character prefix": (401, f"key {KEY[:12]}... is invalid".encode()),
    "a piece from the middle": (401, f"bad {KEY[10:19]} here".encode()),
}


@pytest.mark.parametrize("name", sorted(ECHOES))
def test_key_in_an_error_body_never_shows(server, name):
    status, body = ECHOES[name]
    message = failure(server, reply(body, status=status))
    assert f"HTTP {status}" in message
    # The quote is cut to 300 characters after redaction: the marker itself may be cut.
    assert "[redacted]" in message or message.count("x") >= 250


def test_key_echoed_in_the_answer_is_redacted(server):
    server.script[:] = [reply(completion(f"Your key is {KEY}, and again {KEY[:9]}."))]
    answer = complete("prompt", config_for(server))
    assert pieces_in(answer) == [] and answer.count("[redacted]") == 2


def test_credentials_in_the_base_url_never_show():
    with pytest.raises(ValueError) as caught:
        HostedConfig(f"http://api.example.com/v1?api_key={KEY}", "m", "other-key-0000")
    assert "query" in str(caught.value) and pieces_in(str(caught.value)) == []
    with pytest.raises(ValueError) as caught:
        HostedConfig(f"https://user:{KEY}@api.example.com/v1", "m", "other-key-0000")
    assert "credentials" in str(caught.value) and pieces_in(str(caught.value)) == []


def test_query_credentials_are_refused_without_showing_them(server):
    # The one client sends the key only in the Authorization header: a query is refused, unsent.
    with pytest.raises(ValueError) as caught:
        HostedConfig(f"{server.url}/v1?api_key={KEY}", "m", "other-key-0000", max_retries=0)
    assert "query" in str(caught.value) and pieces_in(str(caught.value)) == []
    assert server.received == []


def test_redactor_removes_every_piece():
    redact = Redactor([KEY])
    text = " | ".join([KEY, KEY[5:20], BASE64_KEY, urllib.parse.quote(KEY, safe=""), "harmless"])
    cleaned = redact(text)
    assert pieces_in(cleaned) == [] and cleaned.endswith("harmless")
    assert redact("nothing secret here") == "nothing secret here"


# --------------------------------------------------------------------------
# Bad settings in the environment: one line naming the variable
# --------------------------------------------------------------------------

GOOD = {"RAG_LLM_BASE_URL": "https://x.example/v1", "RAG_LLM_API_KEY": KEY, "RAG_LLM_MODEL": "m"}
BAD_ENVIRONMENTS = [
    ("RAG_LLM_API_KEY", {"RAG_LLM_API_KEY": KEY + "é"}),
    ("RAG_LLM_API_KEY", {"RAG_LLM_API_KEY": KEY[:10] + "\x1b" + KEY[10:]}),
    ("RAG_LLM_API_KEY", {"RAG_LLM_API_KEY": KEY[:10] + " " + KEY[10:]}),
    ("RAG_LLM_TIMEOUT", {"RAG_LLM_TIMEOUT": "inf"}),
    ("RAG_LLM_TIMEOUT", {"RAG_LLM_TIMEOUT": "nan"}),
    ("RAG_LLM_TIMEOUT", {"RAG_LLM_TIMEOUT": "-1"}),
    ("RAG_LLM_TIMEOUT", {"RAG_LLM_TIMEOUT": "1e300"}),
    ("RAG_LLM_TIMEOUT", {"RAG_LLM_TIMEOUT": "0"}),
    ("RAG_LLM_BASE_URL", {"RAG_LLM_BASE_URL": "https://exämple.org/v1"}),
    ("RAG_LLM_BASE_URL", {"RAG_LLM_BASE_URL": "ftp://x.example/v1"}),
    ("RAG_LLM_BASE_URL", {"RAG_LLM_BASE_URL": f"http://x.example/v1?key={KEY}"}),
    ("RAG_LLM_MODEL", {"RAG_LLM_MODEL": "gpt\u202e"}),
    ("RAG_LLM_MODEL", {"RAG_LLM_MODEL": " "}),
]


@pytest.mark.parametrize(("variable", "change"), BAD_ENVIRONMENTS)
def test_bad_environment_values_name_their_variable(variable, change):
    with pytest.raises(ValueError) as caught:
        config_from_environment({**GOOD, **change})
    message = str(caught.value)
    assert variable in message and "\n" not in message and pieces_in(message) == []


# --------------------------------------------------------------------------
# Through `rag ask`: nothing of the key in stdout, stderr or any file written
# --------------------------------------------------------------------------


def command_faults(server_url: str) -> dict[str, tuple[dict, list]]:
    good = {"RAG_LLM_BASE_URL": server_url + "/v1", "RAG_LLM_API_KEY": KEY, "RAG_LLM_MODEL": "m"}
    return {
        "echo in 401": (good, [reply(f"invalid key {KEY}".encode(), status=401)]),
        "echo in answer": (good, [reply(completion(f"The key is {KEY}. [1]"))]),
        "base64 echo": (good, [reply(f"Basic {BASE64_KEY}".encode(), status=403)]),
        "dripping": ({**good, "RAG_LLM_TIMEOUT": "1"}, [drip(completion("late"), 0.3)]),
        "huge reply": (good, [stream(64 * 1024 * 1024, announce=False)]),
        "key in URL query": ({**good, "RAG_LLM_BASE_URL": f"http://x.example/v1?k={KEY}"}, [reply(b"")]),
        "non-ASCII key": ({**good, "RAG_LLM_API_KEY": KEY + "é"}, [reply(b"")]),
        "infinite timeout": ({**good, "RAG_LLM_TIMEOUT": "inf"}, [reply(b"")]),
    }


@pytest.mark.pipeline  # slow: see the marker in pyproject.toml
def test_the_key_never_reaches_output_or_files(server, tmp_path):
    documents = FIXTURES / "tiny" / "documents"
    files_checked = 0
    for name, (environment, script) in command_faults(server.url).items():
        server.script[:] = script
        workdir = tmp_path / name.replace(" ", "_")
        workdir.mkdir()
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "rag",
                "ask",
                "How long is a day on Beta?",
                "--documents",
                str(documents),
            ]
            + ["--generator", "hosted"],
            cwd=workdir,
            env={
                **{k: v for k, v in os.environ.items() if "proxy" not in k.lower()},
                **environment,
                "PYTHONPATH": str(PROJECT),
            },
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "Traceback" not in result.stderr, (name, result.stderr)
        assert pieces_in(result.stdout) == [] and pieces_in(result.stderr) == [], name
        if name != "echo in answer":
            # Retries may log a warning line each; the error itself is the one last line.
            last = result.stderr.rstrip("\n").split("\n")[-1]
            assert result.returncode == 1 and last.startswith("rag ask: error: --generator hosted"), name
            assert result.stderr.count("error:") == 1, (name, result.stderr)
        written = [path for path in Path(workdir).rglob("*") if path.is_file()]
        files_checked += len(written)
        for path in written:
            assert pieces_in(path.read_bytes().decode("latin-1")) == [], (name, path)
    assert files_checked > 0  # the index caches of the runs that reached the server
