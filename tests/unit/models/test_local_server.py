"""Starting, verifying and stopping the bundled server, with a stand-in process in place of llama.cpp.

A tiny Python process plays the server (it requires the per-start key from
its environment, as llama.cpp's server does with ``api_key``), so the start,
the check that the port answers as the server this run started, the log,
the thread count and the stop on every exit path (return, error, SIGTERM and
SIGKILL of the job that started it) are checked in seconds. One test starts
the real server (the llm extra) and asks it through the one client.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rag.models import local_server
from rag.models.client import Endpoint, LlmError, Sampling, chat
from tests.extras import require_extra

PROJECT = Path(__file__).resolve().parents[3]

# The stand-in: GET /v1/models and POST /v1/chat/completions, both requiring the key of
# its API_KEY variable; it ignores SIGTERM (the real server did while computing).
STAND_IN = """
import http.server, json, os, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
KEY = os.environ["API_KEY"]
class Handler(http.server.BaseHTTPRequestHandler):
    def reply(self, status, document):
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def allowed(self):
        if self.headers.get("Authorization") != "Bearer " + KEY:
            self.reply(401, {"detail": "Invalid API key"})
            return False
        return True
    def do_GET(self):
        if self.allowed():
            self.reply(200, {"data": [{"id": "SmolLM2-135M-Instruct"}]})
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.allowed():
            message = {"role": "assistant", "content": "stand-in reply"}
            usage = {"prompt_tokens": 3, "completion_tokens": 2}
            self.reply(200, {"choices": [{"message": message}], "usage": usage})
    def log_message(self, *arguments):
        pass
print("stand-in pid", os.getpid(), flush=True)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def stand_in(port: int, logprobs: bool = False, threads: int | None = None, alias: str = "") -> list[str]:
    return [sys.executable, "-c", STAND_IN, str(port)]


@pytest.fixture(autouse=True)
def short_grace(monkeypatch):
    """The stand-in ignores SIGTERM: a short grace before SIGKILL keeps these tests quick."""
    monkeypatch.setattr(local_server, "STOP_SECONDS", 0.5)


@pytest.fixture
def no_proxy(monkeypatch):
    for variable in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(variable, raising=False)


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def wait_until_gone(pid: int, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def stand_in_pid(log: Path) -> int:
    for line in log.read_text().splitlines():
        if line.startswith("stand-in pid "):
            return int(line.split()[-1])
    raise AssertionError(f"no stand-in pid in {log.read_text()!r}")


def test_the_server_answers_with_its_key_inside_the_block_and_is_stopped_after_it(
    monkeypatch, tmp_path, no_proxy
):
    monkeypatch.setattr(local_server, "server_command", stand_in)
    log = tmp_path / "logs" / "server.log"
    with local_server.running(log) as base_url:
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        # The client carries the per-start key to the server's base URL, and only there.
        reply = chat(
            Endpoint(base_url, "SmolLM2-135M-Instruct"), [{"role": "user", "content": "hi"}], Sampling(), None
        )
        assert reply.text == "stand-in reply"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with pytest.raises(urllib.error.HTTPError) as refused:
            opener.open(base_url + "/models", timeout=5)
        assert refused.value.code == 401
        pid = stand_in_pid(log)
    assert not alive(pid)
    with pytest.raises(OSError):
        opener.open(base_url + "/models", timeout=2)
    text = log.read_text()
    assert f"starting the bundled model SmolLM2-135M-Instruct on {base_url[7:-3]} with 1 thread(s)" in text
    assert f"serving as process {pid} on {base_url[7:-3]}, verified by its per-start key; identity " in text


def test_the_key_is_never_on_the_command_line_or_in_the_log(monkeypatch, tmp_path, no_proxy):
    seen = {}

    def command(port, logprobs=False, threads=None, alias=None):
        seen["command"] = stand_in(port)
        return seen["command"]

    monkeypatch.setattr(local_server, "server_command", command)
    log = tmp_path / "server.log"
    with local_server.running(log, key="per-start-key-0123456789") as base_url:
        pid = stand_in_pid(log)
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert b"API_KEY=per-start-key-0123456789" in environ
        assert "per-start-key" not in " ".join(Path(f"/proc/{pid}/cmdline").read_text().split("\0"))
        assert base_url
    assert "per-start-key" not in log.read_text() and "per-start-key" not in " ".join(seen["command"])


def test_a_request_after_the_server_exited_is_refused_not_sent_to_the_port(monkeypatch, tmp_path, no_proxy):
    monkeypatch.setattr(local_server, "server_command", stand_in)
    log = tmp_path / "server.log"
    with local_server.running(log) as base_url:
        os.kill(stand_in_pid(log), signal.SIGKILL)
        assert wait_until_gone(stand_in_pid(log))
        with pytest.raises(LlmError, match="has exited; not asking whatever listens on its port"):
            chat(Endpoint(base_url, "m"), [{"role": "user", "content": "hi"}], Sampling(), None)


class Impostor:
    """Something already listening on the port: it answers every request, key or not."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = json.dumps({"data": [{"id": local_server.DEFAULT_MODEL}]}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *arguments) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()
        self.port = self.server.server_address[1]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_port_answered_by_something_else_is_refused_in_one_line(monkeypatch, tmp_path, no_proxy):
    impostor = Impostor()
    try:
        monkeypatch.setattr(local_server, "free_port", lambda: impostor.port)
        # A started process that never answers: whatever answers is the impostor.
        sleeper = [sys.executable, "-c", "import time; print('sleeping', flush=True); time.sleep(60)"]
        monkeypatch.setattr(
            local_server, "server_command", lambda port, logprobs=False, threads=None, alias=None: sleeper
        )
        with pytest.raises(local_server.LocalServerError) as caught:
            with local_server.running(tmp_path / "server.log"):
                pytest.fail("the block must not run")
    finally:
        impostor.close()
    message = str(caught.value)
    assert "something other than the server this run started" in message and "401" in message
    assert "\n" not in message


def test_a_server_that_exits_is_one_line_naming_its_log(monkeypatch, tmp_path, no_proxy):
    command = [sys.executable, "-c", "print('model file is corrupt'); raise SystemExit(3)"]
    monkeypatch.setattr(
        local_server, "server_command", lambda port, logprobs=False, threads=None, alias=None: command
    )
    log = tmp_path / "server.log"
    with pytest.raises(local_server.LocalServerError) as caught:
        with local_server.running(log):
            pass
    message = str(caught.value)
    assert "exited with status 3" in message and str(log) in message and "model file is corrupt" in message
    assert "\n" not in message


def test_an_error_inside_the_block_stops_the_server(monkeypatch, tmp_path, no_proxy):
    monkeypatch.setattr(local_server, "server_command", stand_in)
    log = tmp_path / "server.log"
    with pytest.raises(RuntimeError, match="job failed"):
        with local_server.running(log):
            pid = stand_in_pid(log)
            raise RuntimeError("job failed")
    assert not alive(pid)


def test_the_command_fixes_the_flags_that_make_replies_deterministic(monkeypatch, tmp_path):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"gguf")
    monkeypatch.setattr(local_server, "model_file", lambda alias=None: str(model))
    monkeypatch.delenv(local_server.THREADS_VARIABLE, raising=False)
    command = local_server.server_command(41234)
    assert command[1:4] == ["-m", "llama_cpp.server", "--model"] and command[4] == str(model)
    flags = dict(zip(command[5::2], command[6::2], strict=True))
    assert flags["--host"] == "127.0.0.1" and flags["--port"] == "41234"
    assert (flags["--seed"], flags["--n_ctx"]) == ("0", "4096")
    # One thread by default: the job's share of the machine.
    assert (flags["--n_threads"], flags["--n_threads_batch"]) == ("1", "1")
    assert flags["--interrupt_requests"] == "false" and flags["--logits_all"] == "false"
    assert "--api_key" not in flags
    with_logprobs = local_server.server_command(1, logprobs=True)
    assert dict(zip(with_logprobs[5::2], with_logprobs[6::2], strict=True))["--logits_all"] == "true"


def test_the_threads_follow_the_job(monkeypatch, tmp_path):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"gguf")
    monkeypatch.setattr(local_server, "model_file", lambda alias=None: str(model))
    monkeypatch.setenv(local_server.THREADS_VARIABLE, "3")
    flags = dict(zip(*(lambda c: (c[5::2], c[6::2]))(local_server.server_command(1)), strict=True))
    assert (flags["--n_threads"], flags["--n_threads_batch"]) == ("3", "3")
    for bad in ("0", "two", "-1", "1e3", "999"):
        monkeypatch.setenv(local_server.THREADS_VARIABLE, bad)
        with pytest.raises(local_server.LocalServerError) as caught:
            local_server.server_command(1)
        assert local_server.THREADS_VARIABLE in str(caught.value) and "\n" not in str(caught.value)


def test_the_answer_rule_passes_its_threads_to_the_server():
    # The job sets RAG_LLM_THREADS from its rule's threads: before any server starts.
    for script in ("llm_answer.py", "grounding.py"):
        text = (PROJECT / "workflow" / "scripts" / script).read_text()
        assert "\nfollow_job_threads(snakemake.threads)" in text, script
    local_server.follow_job_threads(3)
    try:
        assert local_server.server_threads() == 3
    finally:
        os.environ.pop(local_server.THREADS_VARIABLE)


# --------------------------------------------------------------------------
# The server never outlives the job that started it, whatever signal ends the job
# --------------------------------------------------------------------------

JOB = """
import sys, time
sys.path.insert(0, {project!r})
from rag.models import local_server
STAND_IN = {stand_in!r}
def command(port, logprobs=False, threads=None, alias=None):
    return [sys.executable, "-c", STAND_IN, str(port)]
local_server.server_command = command
with local_server.running({log!r}):
    print("serving", flush=True)
    time.sleep(120)
"""


def _default_signals() -> None:
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(number, signal.SIG_DFL)


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGKILL, signal.SIGHUP, signal.SIGINT])
def test_the_server_dies_with_the_job_whatever_signal_ends_it(tmp_path, number):
    log = tmp_path / "server.log"
    job = subprocess.Popen(
        [sys.executable, "-c", JOB.format(project=str(PROJECT), stand_in=STAND_IN, log=str(log))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={name: value for name, value in os.environ.items() if "proxy" not in name.lower()},
        # A job started from a shell's background (nohup, `&`) inherits SIGHUP and SIGINT ignored;
        # the job under test is one a signal can end, whatever ran pytest.
        preexec_fn=_default_signals,
    )
    try:
        assert job.stdout.readline().strip() == "serving", job.stderr.read()
        server = stand_in_pid(log)
        assert alive(server)
        job.send_signal(number)
        job.wait(timeout=60)
        # The stand-in ignores SIGTERM: it is gone because its group was killed.
        assert wait_until_gone(server), f"the server {server} outlived its job (signal {number})"
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    if number in (signal.SIGTERM, signal.SIGHUP):
        # Ended as an exit through the job's finally blocks, not a crash.
        assert "Traceback" not in job.stderr.read() and job.returncode == 128 + number


# --------------------------------------------------------------------------
# The real bundled server (the llm extra)
# --------------------------------------------------------------------------


def test_the_real_server_requires_its_key_answers_the_client_and_stops(tmp_path, no_proxy):
    require_extra("llm")
    log = tmp_path / "server.log"
    messages = [{"role": "user", "content": "Say yes."}]
    with local_server.running(log, threads=1) as base_url:
        reply = chat(Endpoint(base_url, local_server.DEFAULT_MODEL), messages, Sampling(max_tokens=4), None)
        assert reply.completion_tokens >= 1
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with pytest.raises(urllib.error.HTTPError) as refused:
            opener.open(base_url + "/models", timeout=5)
        assert refused.value.code == 401
        pid = int(log.read_text().split("serving as process ")[1].split()[0])
        assert alive(pid)
    assert not alive(pid)
    assert "identity bundled:" in log.read_text()
