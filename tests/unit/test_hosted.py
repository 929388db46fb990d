"""The hosted generator against a scripted chat-completions server on 127.0.0.1.

The hosted generator is configuration over the one HTTP client
(rag.models.client): these tests check that its retries, deadline, redirects,
redaction and reply checks hold when reached through ``RAG_LLM_*``.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rag.answering.prompts import build_prompt
from rag.answering.verification import check_answer
from rag.chunking import Chunk
from rag.models.client import retry_after_seconds
from rag.models.hosted import (
    HostedConfig,
    HostedModelError,
    complete,
    config_from_environment,
    hosted_generator,
)

SECRET = "sk-test-7f3a9c1e5b2d4f6a8c0e"
QUESTION = "What moons does Mars have?"
D1 = Chunk("d1", "d1", "Mars", "", 0, 44, "Mars has two small moons, Phobos and Deimos.")
D2 = Chunk("d2", "d2", "Mars", "", 0, 44, "Phobos orbits Mars faster than Mars rotates.")


def completion(content: str) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
    }


@dataclass
class Reply:
    status: int = 200
    body: bytes | dict = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict


class StubServer:
    """Answers POSTs with scripted replies, in order, and records every request."""

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.received: list[Received] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server dispatches by this name
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                stub.received.append(Received(self.path, dict(self.headers), body))
                reply = stub.script.pop(0) if stub.script else Reply(500, b"script exhausted")
                if reply.delay:
                    time.sleep(reply.delay)
                payload = json.dumps(reply.body).encode() if isinstance(reply.body, dict) else reply.body
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def do_GET(self) -> None:  # a followed redirect would arrive here
                stub.received.append(Received(self.path, dict(self.headers), {}))
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args) -> None:  # silence the default stderr log
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def stub(monkeypatch):
    for variable in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    server = StubServer()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()
    server.thread.join(timeout=5)


class Sleeps(list):
    """Records the waits instead of sleeping, so retries cost no time."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def make_config(stub: StubServer, **overrides) -> HostedConfig:
    settings = {"timeout_seconds": 5.0, "max_retries": 3, "backoff_seconds": 0.5, **overrides}
    return HostedConfig(base_url=stub.base_url, model="test-model", api_key=SECRET, **settings)


def assert_secret_absent(error: BaseException) -> None:
    current: BaseException | None = error
    while current is not None:
        assert SECRET not in str(current)
        assert SECRET not in repr(current)
        current = current.__cause__ or current.__context__


# --------------------------------------------------------------------------
# Success and the request
# --------------------------------------------------------------------------


def test_request_carries_prompt_model_temperature_and_key(stub):
    prompt = build_prompt(QUESTION, [D1, D2])
    stub.script.append(Reply(body=completion("Mars has two small moons, Phobos and Deimos [1].")))
    reply = hosted_generator(make_config(stub))(prompt)

    assert reply == "Mars has two small moons, Phobos and Deimos [1]."
    (request,) = stub.received
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {SECRET}"
    assert request.headers["Content-Type"] == "application/json"
    assert request.body["model"] == "test-model"
    assert request.body["temperature"] == 0
    assert request.body["messages"] == [{"role": "user", "content": prompt.text}]
    # The client's standard fields only, so any OpenAI-compatible server takes it.
    assert set(request.body) == {"model", "messages", "temperature", "max_tokens", "seed"}


def test_reply_is_verified_against_the_prompt_sources(stub):
    prompt = build_prompt(QUESTION, [D1, D2])
    draft = "Mars has two moons, Phobos and Deimos [1]. Phobos circles Mars every 8 hours [2]."
    stub.script.append(Reply(body=completion(draft)))
    report = check_answer(hosted_generator(make_config(stub))(prompt), prompt.source_texts)
    assert [claim.supported for claim in report.claims] == [True, False]
    assert report.unsupported_numbers == ("8",)


def test_trailing_slash_in_base_url(stub):
    stub.script.append(Reply(body=completion("ok")))
    config = HostedConfig(base_url=stub.base_url + "/", model="m", api_key=SECRET)
    assert complete("Say ok.", config) == "ok"
    assert stub.received[0].path == "/v1/chat/completions"


# --------------------------------------------------------------------------
# Retries
# --------------------------------------------------------------------------


def test_429_then_success_honours_retry_after(stub):
    stub.script += [
        Reply(429, b'{"error": "rate limited"}', {"Retry-After": "7"}),
        Reply(body=completion("Phobos and Deimos [1].")),
    ]
    sleeps = Sleeps()
    config = make_config(stub, timeout_seconds=30.0)
    assert complete("prompt", config, sleep=sleeps) == "Phobos and Deimos [1]."
    assert sleeps == [7.0]  # longer than the 0.5 s backoff, so the server's wait wins
    assert len(stub.received) == 2


def test_retry_after_as_http_date():
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds(format_datetime(now + timedelta(seconds=30), usegmt=True), now) == 30.0
    assert retry_after_seconds("3", now) == 3.0
    assert retry_after_seconds(format_datetime(now - timedelta(seconds=30), usegmt=True), now) == 0.0
    assert retry_after_seconds("soon", now) is None
    assert retry_after_seconds(None, now) is None


def test_server_errors_exhaust_retries_with_exponential_backoff(stub, caplog):
    stub.script += [Reply(500, b"internal error"), Reply(502, b"bad gateway")] + [Reply(503, b"down")] * 2
    sleeps = Sleeps()
    with caplog.at_level(logging.WARNING, logger="rag.models.client"):
        with pytest.raises(HostedModelError, match=r"HTTP 503.*after 4 attempt") as caught:
            complete("prompt", make_config(stub), sleep=sleeps)
    assert sleeps == [0.5, 1.0, 2.0]
    assert len(stub.received) == 4
    assert len(caplog.records) == 3
    assert_secret_absent(caught.value)
    for record in caplog.records:
        assert SECRET not in record.getMessage()


def test_wait_is_capped(stub):
    stub.script += [Reply(429, b"", {"Retry-After": "3600"}), Reply(body=completion("ok"))]
    sleeps = Sleeps()
    complete("prompt", make_config(stub, max_wait_seconds=10.0, timeout_seconds=60.0), sleep=sleeps)
    assert sleeps == [10.0]


def test_client_errors_are_not_retried(stub):
    stub.script.append(Reply(400, b'{"error": "bad model"}'))
    sleeps = Sleeps()
    with pytest.raises(HostedModelError, match="HTTP 400.*bad model"):
        complete("prompt", make_config(stub), sleep=sleeps)
    assert sleeps == []
    assert len(stub.received) == 1


@pytest.mark.parametrize("status", [302, 307])
def test_redirect_is_not_followed(stub, status):
    # urllib by default turns a POST answered by 302 into a GET to the new location, headers included.
    location = stub.base_url.replace("/v1", "/elsewhere")
    stub.script.append(Reply(status, b"", {"Location": location}))
    with pytest.raises(HostedModelError, match=f"HTTP {status}"):
        complete("prompt", make_config(stub), sleep=Sleeps())
    assert [request.path for request in stub.received] == ["/v1/chat/completions"]


def test_timeout_is_retried_within_the_whole_call_deadline(stub):
    stub.script += [Reply(body=completion("late"), delay=1.0), Reply(body=completion("late"), delay=1.0)]
    sleeps = Sleeps()
    config = make_config(stub, timeout_seconds=0.2, max_retries=3, backoff_seconds=0.0)
    with pytest.raises(HostedModelError, match=r"no whole reply within .* deadline of 0\.2 s") as caught:
        complete("prompt", config, sleep=sleeps)
    # The first attempt used the whole deadline: at most a retry with no time left, never four.
    assert len(stub.received) <= 2 and "after 4 attempt" not in str(caught.value)
    assert_secret_absent(caught.value)


def test_a_timeout_is_not_retried_when_the_backoff_would_pass_the_deadline(stub):
    stub.script += [Reply(body=completion("late"), delay=1.0)] * 2
    sleeps = Sleeps()
    config = make_config(stub, timeout_seconds=0.2, max_retries=3, backoff_seconds=0.5)
    with pytest.raises(HostedModelError) as caught:
        complete("prompt", config, sleep=sleeps)
    assert sleeps == [] and len(stub.received) == 1
    assert "no time left for a retry within the deadline of 0.2 s" in str(caught.value)


def test_a_retry_after_beyond_the_deadline_ends_the_call_in_one_line(stub):
    stub.script += [Reply(429, b"busy", {"Retry-After": "30"}), Reply(body=completion("ok"))]
    sleeps = Sleeps()
    with pytest.raises(HostedModelError) as caught:
        complete("prompt", make_config(stub, timeout_seconds=3.0, max_wait_seconds=60.0), sleep=sleeps)
    message = str(caught.value)
    assert sleeps == [] and len(stub.received) == 1 and "\n" not in message
    assert "HTTP 429" in message
    assert "the server asks to retry after 30 s, past the deadline of 3 s" in message


def test_refused_connection_is_reported():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))  # bound but not listening: connections are refused
    try:
        config = HostedConfig(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", "m", SECRET, max_retries=0)
        with pytest.raises(HostedModelError, match="connection failed") as caught:
            complete("prompt", config)
    finally:
        listener.close()
    assert_secret_absent(caught.value)


# --------------------------------------------------------------------------
# Bad replies and the key
# --------------------------------------------------------------------------


def test_malformed_json_is_a_clear_error_and_not_retried(stub):
    stub.script.append(Reply(body=b"<html>oops</html>"))
    sleeps = Sleeps()
    with pytest.raises(HostedModelError, match="not JSON") as caught:
        complete("prompt", make_config(stub), sleep=sleeps)
    assert sleeps == []
    assert caught.value.__cause__ is None and caught.value.__context__ is None


@pytest.mark.parametrize(
    "body, message",
    [
        ({"choices": []}, "choices"),
        ({"error": {"message": "quota"}}, "choices"),
        ({"choices": [{"message": {"content": None}}]}, "NoneType"),
        ({**completion("ok"), "usage": {"prompt_tokens": 10**30}}, "usage.prompt_tokens"),
        ({**completion("ok"), "usage": {"completion_tokens": -1}}, "usage.completion_tokens"),
        (completion("lone \ud800 surrogate"), "lone surrogate"),
    ],
)
def test_reply_without_usable_content_is_a_clear_error(stub, body, message):
    stub.script.append(Reply(body=body))
    with pytest.raises(HostedModelError, match=message) as caught:
        complete("prompt", make_config(stub), sleep=Sleeps())
    assert "\n" not in str(caught.value) and len(stub.received) == 1


def test_key_echoed_by_the_server_is_redacted(stub, caplog):
    stub.script += [Reply(503, f"bad header Authorization: Bearer {SECRET}".encode())] * 2
    with caplog.at_level(logging.DEBUG):
        with pytest.raises(HostedModelError, match=r"\[redacted\]") as caught:
            complete("prompt", make_config(stub, max_retries=1), sleep=Sleeps())
    assert_secret_absent(caught.value)
    assert caplog.records
    for record in caplog.records:
        assert SECRET not in record.getMessage()


def test_key_is_not_in_the_repr():
    config = HostedConfig("https://api.example.com/v1", "m", SECRET)
    assert SECRET not in repr(config)
    assert SECRET not in str(config)
    assert SECRET not in repr(hosted_generator(config))


# --------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------


def test_config_from_environment():
    environment = {
        "RAG_LLM_BASE_URL": "https://api.example.com/v1",
        "RAG_LLM_API_KEY": SECRET,
        "RAG_LLM_MODEL": "gpt-test",
        "RAG_LLM_TIMEOUT": "12.5",
    }
    config = config_from_environment(environment, max_retries=1)
    assert (config.base_url, config.model, config.api_key) == (
        "https://api.example.com/v1",
        "gpt-test",
        SECRET,
    )
    assert config.timeout_seconds == 12.5
    assert config.max_retries == 1
    assert config.endpoint == "https://api.example.com/v1/chat/completions"


@pytest.mark.parametrize("missing", ["RAG_LLM_BASE_URL", "RAG_LLM_API_KEY", "RAG_LLM_MODEL"])
def test_missing_variable_is_named(missing):
    environment = {
        "RAG_LLM_BASE_URL": "https://x.example/v1",
        "RAG_LLM_API_KEY": SECRET,
        "RAG_LLM_MODEL": "m",
    }
    del environment[missing]
    with pytest.raises(ValueError, match=missing) as caught:
        config_from_environment(environment)
    assert SECRET not in str(caught.value)


def test_bad_timeout_variable_is_named():
    environment = {
        "RAG_LLM_BASE_URL": "https://x.example/v1",
        "RAG_LLM_API_KEY": SECRET,
        "RAG_LLM_MODEL": "m",
        "RAG_LLM_TIMEOUT": "soon",
    }
    with pytest.raises(ValueError, match="RAG_LLM_TIMEOUT"):
        config_from_environment(environment)


@pytest.mark.parametrize(
    "base_url, message",
    [
        ("ftp://example.com/v1", "not an http"),
        ("http://api.example.com/v1", "plain http"),
        ("https://user:pw@api.example.com/v1", "credentials"),
    ],
)
def test_unsafe_base_url_is_rejected(base_url, message):
    with pytest.raises(ValueError, match=message):
        HostedConfig(base_url, "m", SECRET)


@pytest.mark.parametrize(
    "base_url", ["http://localhost:8000/v1", "http://127.0.0.2:8000/v1", "http://[::1]:8000/v1"]
)
def test_plain_http_is_allowed_to_loopback_by_name_and_address(base_url):
    assert HostedConfig(base_url, "m", SECRET).endpoint == base_url + "/chat/completions"


@pytest.mark.parametrize(
    "base_url", ["http://gpu-box.lan:8000/v1", "http://10.0.0.7/v1", "http://128.0.0.1/v1"]
)
def test_plain_http_with_the_key_to_another_host_is_refused(base_url):
    with pytest.raises(ValueError, match="plain http"):
        HostedConfig(base_url, "m", SECRET)


def test_the_default_timeout_is_the_pipeline_entries():
    from rag.answering.config_checks import GENERATOR_PARAMETERS

    environment = {
        "RAG_LLM_BASE_URL": "https://x.example/v1",
        "RAG_LLM_API_KEY": SECRET,
        "RAG_LLM_MODEL": "m",
    }
    assert config_from_environment(environment).timeout_seconds == GENERATOR_PARAMETERS["llm"]["timeout"]


@pytest.mark.parametrize(
    "overrides, message",
    [({"api_key": ""}, "API key"), ({"model": " "}, "model"), ({"timeout_seconds": 0}, "timeout")],
)
def test_invalid_settings_are_named(overrides, message):
    settings = {"base_url": "https://api.example.com/v1", "model": "m", "api_key": SECRET, **overrides}
    with pytest.raises(ValueError, match=message):
        HostedConfig(**settings)


def test_empty_prompt_is_rejected():
    with pytest.raises(ValueError, match="prompt"):
        complete("  ", HostedConfig("https://api.example.com/v1", "m", SECRET))
