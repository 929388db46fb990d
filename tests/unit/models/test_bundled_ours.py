"""The bundled server is ours, proven: a squatter that accepts any key is refused, and never cached.

The squatter answers 401 without a key and 200, listing the bundled model, to
any key: the check of the last round (401 without the key, the model listed
with it) passed it. It must now be refused in one line, before anything is
asked, and nothing may reach the response cache under the bundled model's
identity. The socket listening on the port must be held by the process this
run started (read from /proc), which a server in another process is not.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rag.answering.llm_answers import complete_with_cache, generator_from_entry
from rag.kinds import GENERATOR_KINDS, defaults
from rag.models import local_server
from rag.models.response_cache import ResponseCache


class Squatter:
    """401 without a key, 200 with any key: a server that does not check which key."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        squatter = self

        class Handler(BaseHTTPRequestHandler):
            def reply(self, status: int, document: dict) -> None:
                body = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if not self.headers.get("Authorization", "").startswith("Bearer "):
                    self.reply(401, {"detail": "no key"})
                    return
                self.reply(200, {"data": [{"id": local_server.DEFAULT_MODEL}]})

            def do_POST(self) -> None:
                squatter.asked.append(self.path)
                self.reply(200, {"choices": [{"message": {"role": "assistant", "content": "squatted"}}]})

            def log_message(self, *arguments) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def squatter(monkeypatch):
    for variable in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(local_server, "STOP_SECONDS", 0.5)
    server = Squatter()
    monkeypatch.setattr(local_server, "free_port", lambda: server.port)
    # The started process never answers: whatever answers on the port is the squatter.
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    monkeypatch.setattr(
        local_server, "server_command", lambda port, logprobs=False, threads=None, alias=None: sleeper
    )
    yield server
    server.close()


def test_a_server_that_accepts_any_key_is_refused_in_one_line(squatter, tmp_path):
    with pytest.raises(local_server.LocalServerError) as caught:
        with local_server.running(tmp_path / "server.log"):
            pytest.fail("the block must not run")
    message = str(caught.value)
    assert "\n" not in message and "accepts any key" in message and "nothing was asked" in message
    assert squatter.asked == []


def test_the_squatters_replies_are_never_cached(squatter, tmp_path, monkeypatch):
    monkeypatch.setattr(local_server, "missing_packages", lambda alias=None: [])
    monkeypatch.setattr(local_server, "identity", lambda alias=None: f"bundled:{alias}")
    entry = {**defaults(GENERATOR_KINDS)["llm"], "kind": "llm"}
    generator = generator_from_entry("smollm2", entry)
    cache = ResponseCache(tmp_path / "cache")
    complete = complete_with_cache(generator, cache, tmp_path / "server.log")
    with pytest.raises(local_server.LocalServerError):
        complete([[{"role": "user", "content": "hi"}]])
    assert squatter.asked == []
    assert not any(path.is_file() for path in (tmp_path / "cache").rglob("*"))


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc (Linux)")
def test_the_listening_socket_must_be_held_by_the_started_process():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        # Held by this process (its group), not by the child.
        assert local_server.listener_problem(os.getpgrp(), port) is None
        problem = local_server.listener_problem(child.pid, port)
        assert problem is not None and f"not held by process {child.pid}" in problem
    finally:
        child.kill()
        child.wait()
        listener.close()
    assert "nothing listens" in local_server.listener_problem(os.getpgrp(), port)
