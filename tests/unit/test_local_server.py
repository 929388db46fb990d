"""Starting and stopping the bundled server, with a stand-in process in place of llama.cpp.

The real server is started by tests/pipeline/test_pipeline_llm.py; here a tiny
Python process plays it, so the start, wait, log and stop logic is checked in
a second, and so are its failures.
"""

from __future__ import annotations

import sys
import urllib.request

import pytest

from rag.models import local_server

STAND_IN = """
import http.server, json, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"data": [{"id": "SmolLM2-135M-Instruct"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
print("stand-in listening", flush=True)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def test_the_server_answers_inside_the_block_and_is_stopped_after_it(monkeypatch, tmp_path):
    monkeypatch.setattr(
        local_server,
        "server_command",
        lambda port, logprobs=False: [sys.executable, "-c", STAND_IN, str(port)],
    )
    log = tmp_path / "logs" / "server.log"
    with local_server.running(log) as base_url:
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(base_url + "/models", timeout=5) as reply:
            assert reply.status == 200
    with pytest.raises(OSError):
        opener.open(base_url + "/models", timeout=2)
    text = log.read_text()
    assert f"starting the bundled model on {base_url[7:-3]}" in text and "stand-in listening" in text


def test_a_server_that_exits_is_one_line_naming_its_log(monkeypatch, tmp_path):
    command = [sys.executable, "-c", "print('model file is corrupt'); raise SystemExit(3)"]
    monkeypatch.setattr(local_server, "server_command", lambda port, logprobs=False: command)
    log = tmp_path / "server.log"
    with pytest.raises(local_server.LocalServerError) as caught:
        with local_server.running(log):
            pass
    message = str(caught.value)
    assert "exited with status 3" in message and str(log) in message and "model file is corrupt" in message
    assert "\n" not in message


def test_the_command_fixes_the_flags_that_make_replies_deterministic(monkeypatch, tmp_path):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"gguf")
    monkeypatch.setattr(local_server, "model_path", lambda: model)
    command = local_server.server_command(41234)
    assert command[1:4] == ["-m", "llama_cpp.server", "--model"] and command[4] == str(model)
    flags = dict(zip(command[5::2], command[6::2], strict=True))
    assert flags["--host"] == "127.0.0.1" and flags["--port"] == "41234"
    assert (flags["--seed"], flags["--n_ctx"], flags["--n_threads"]) == ("0", "4096", "2")
    assert flags["--interrupt_requests"] == "false" and flags["--logits_all"] == "false"
    with_logprobs = local_server.server_command(1, logprobs=True)
    assert dict(zip(with_logprobs[5::2], with_logprobs[6::2], strict=True))["--logits_all"] == "true"
