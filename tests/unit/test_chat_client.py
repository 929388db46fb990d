"""The OpenAI-compatible chat client against scripted servers on 127.0.0.1.

Cache hits send nothing; the deadline bounds the whole call, retries
included; a proxy never sees a loopback request and a key is never sent over
plain http elsewhere; error replies quoting the key leave no 8-character
piece of it in messages, logs or cache files; ESC and BEL are escaped.
"""

from __future__ import annotations

import json
import logging
import time

import pytest

from rag.models.client import (
    Completion,
    Endpoint,
    LlmError,
    Sampling,
    TextCompletion,
    chat,
    chat_many,
    complete_text,
    continuation_logprobs,
)
from rag.models.redaction import Redactor, escape_controls
from rag.models.response_cache import ResponseCache
from tests.fault_server import FaultServer, drip, reply

KEY = "sk-live-Q7v2Rz9KxW4mTb8LpN3sYd6Hc1Fg5Ja0"
PIECES = [KEY[start : start + 8] for start in range(len(KEY) - 7)]
MESSAGES = [{"role": "user", "content": "How long is a day on Pluto?"}]
ENVIRONMENT = {"TEST_LLM_KEY": KEY}


def completion_body(content: str, prompt_tokens: int = 7, completion_tokens: int = 3) -> bytes:
    return json.dumps(
        {
            "choices": [{"message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
        }
    ).encode()


def endpoint_for(server: FaultServer, **fields) -> Endpoint:
    return Endpoint(base_url=server.url + "/v1", model="m", key_variable="TEST_LLM_KEY", **fields)


def test_reply_usage_and_standard_fields_only(server, tmp_path):
    server.script[:] = [reply(completion_body("About 6.4 Earth days [1]."))]
    answer = chat(endpoint_for(server), MESSAGES, Sampling(max_tokens=32, seed=5), None, ENVIRONMENT)
    assert answer == Completion("About 6.4 Earth days [1].", 7, 3, answer.seconds, cached=False)
    (request,) = server.received
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = json.loads(request.body)
    assert set(body) == {"model", "messages", "temperature", "max_tokens", "seed"}
    assert (body["max_tokens"], body["seed"], body["temperature"]) == (32, 5, 0.0)


def test_cache_hit_sends_no_request_and_stores_no_key(server, tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    server.script[:] = [reply(completion_body("six days"))]
    first = chat(endpoint_for(server), MESSAGES, Sampling(), cache, ENVIRONMENT)
    second = chat(endpoint_for(server), MESSAGES, Sampling(), cache, ENVIRONMENT)
    assert len(server.received) == 1
    assert (first.cached, second.cached) == (False, True)
    assert second.text == first.text and second.seconds == first.seconds
    # Another sampling parameter or message is another request.
    chat(endpoint_for(server), MESSAGES, Sampling(seed=1), cache, ENVIRONMENT)
    assert len(server.received) == 2
    stored = "".join(path.read_text() for path in (tmp_path / "cache").iterdir())
    assert [piece for piece in PIECES if piece in stored] == []
    assert "authorization" not in stored.lower()
    assert not list((tmp_path / "cache").glob("*.partial"))


def test_chat_many_keeps_order_and_reports_progress(server):
    server.script[:] = [reply(completion_body("a")), reply(completion_body("b")), reply(completion_body("c"))]
    lines: list[str] = []
    conversations = [[{"role": "user", "content": f"q{index}"}] for index in range(3)]
    replies = chat_many(
        endpoint_for(server, concurrency=1), conversations, Sampling(), None, lines.append, ENVIRONMENT
    )
    assert [answer.text for answer in replies] == ["a", "b", "c"]
    assert lines[-1] == "answers: 3/3, 30 tokens, done"


def test_dripping_reply_ends_at_the_whole_call_deadline(server):
    server.script[:] = [drip(completion_body("x" * 60), 0.2)]
    started = time.monotonic()
    with pytest.raises(LlmError) as caught:
        chat(endpoint_for(server, timeout_seconds=3), MESSAGES, Sampling(), None, ENVIRONMENT)
    elapsed = time.monotonic() - started
    # Four attempts with 1 + 2 + 4 s of backoff would take about 19 s.
    assert elapsed < 3 + 2.5
    assert "deadline" in str(caught.value)


def test_retry_after_beyond_the_deadline_ends_the_call(server):
    server.script[:] = [reply(b"busy", status=429, headers={"Retry-After": "30"})]
    started = time.monotonic()
    with pytest.raises(LlmError) as caught:
        chat(endpoint_for(server, timeout_seconds=3), MESSAGES, Sampling(), None, ENVIRONMENT)
    assert time.monotonic() - started < 2
    assert "retry after 30 s, past the deadline of 3 s" in str(caught.value)
    assert len(server.received) == 1


def test_retry_after_within_the_deadline_is_honoured(server):
    server.script[:] = [
        reply(b"busy", status=503, headers={"Retry-After": "0"}),
        reply(completion_body("ok")),
    ]
    answer = chat(endpoint_for(server, timeout_seconds=10), MESSAGES, Sampling(), None, ENVIRONMENT)
    assert answer.text == "ok" and len(server.received) == 2


def test_proxy_receives_nothing_for_a_loopback_endpoint(server, monkeypatch):
    proxy = FaultServer()
    proxy.script[:] = [reply(completion_body("from the proxy"))]
    try:
        monkeypatch.setenv("http_proxy", proxy.url)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        server.script[:] = [reply(completion_body("direct"))]
        answer = chat(endpoint_for(server), MESSAGES, Sampling(), None, ENVIRONMENT)
        assert answer.text == "direct"
        assert proxy.received == []
    finally:
        proxy.close()


def test_key_over_plain_http_to_another_host_is_refused_before_any_connection(monkeypatch):
    proxy = FaultServer()
    proxy.script[:] = [reply(completion_body("from the proxy"))]
    try:
        monkeypatch.setenv("http_proxy", proxy.url)
        endpoint = Endpoint(base_url="http://models.example.org/v1", model="m", key_variable="TEST_LLM_KEY")
        with pytest.raises(LlmError) as caught:
            chat(endpoint, MESSAGES, Sampling(), None, ENVIRONMENT)
        assert "refusing to send the key over plain http through the proxy" in str(caught.value)
        assert "\n" not in str(caught.value)
        assert proxy.received == []
    finally:
        proxy.close()


def test_errors_quoting_the_key_leave_no_piece_anywhere(server, tmp_path, caplog):
    quoting = f"invalid key {KEY} (headers: Authorization: Bearer {KEY})\x1b]0;owned\x07".encode()
    server.script[:] = [reply(quoting, status=500), reply(quoting, status=401)]
    cache = ResponseCache(tmp_path / "cache")
    with caplog.at_level(logging.WARNING), pytest.raises(LlmError) as caught:
        chat(endpoint_for(server), MESSAGES, Sampling(), cache, ENVIRONMENT)
    text = str(caught.value) + caplog.text
    assert [piece for piece in PIECES if piece in text] == []
    assert "\x1b" not in text and "\x07" not in text and "\\x1b" in text
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").iterdir())


def test_a_key_echoed_in_a_reply_is_redacted(server):
    server.script[:] = [reply(completion_body(f"your key is {KEY}"))]
    answer = chat(endpoint_for(server), MESSAGES, Sampling(), None, ENVIRONMENT)
    assert [piece for piece in PIECES if piece in answer.text] == []


def test_quoting_a_huge_error_body_is_bounded_by_the_quote():
    redactor = Redactor([KEY])
    body = ("x" * (7 * 1024 * 1024 - 5)) + KEY
    started = time.process_time()
    quote = redactor.quote(KEY[3:] + body, 300)
    assert time.process_time() - started < 0.5
    assert [piece for piece in PIECES if piece in quote] == []
    assert quote.startswith("[redacted]")


def test_a_quote_cut_inside_the_key_keeps_no_prefix():
    redactor = Redactor([KEY])
    text = "y" * 295 + KEY
    assert [piece for piece in PIECES if piece in redactor.quote(text, 300)] == []
    assert not redactor.quote(text, 300).endswith(KEY[:5])


def test_missing_key_variable_is_one_line(server):
    with pytest.raises(LlmError, match="TEST_LLM_KEY"):
        chat(endpoint_for(server), MESSAGES, Sampling(), None, {})


def test_escape_controls():
    assert escape_controls("a\x1b[31mb\x07\n") == "a\\x1b[31mb\\x07\\x0a"


def echo_body(tokens: list[str], logprobs: list[float | None]) -> bytes:
    offsets, position = [], 0
    for token in tokens:
        offsets.append(position)
        position += len(token)
    return json.dumps(
        {
            "choices": [
                {
                    "text": "".join(tokens),
                    "logprobs": {"tokens": tokens, "text_offset": offsets, "token_logprobs": logprobs},
                }
            ]
        }
    ).encode()


def test_continuation_logprobs_keeps_the_continuation_tokens(server, tmp_path):
    # Prefix "A day on Pluto lasts", continuation " about 6 days", then one generated token.
    tokens = ["A", " day", " on", " Pluto", " lasts", " about", " 6", " days", "."]
    server.script[:] = [reply(echo_body(tokens, [None, -1, -2, -3, -4, -0.5, -0.25, -0.125, -9]))]
    cache = ResponseCache(tmp_path)
    endpoint = Endpoint(base_url=server.url + "/v1", model="m")
    values = continuation_logprobs(endpoint, "A day on Pluto lasts", " about 6 days", cache)
    assert values == (-0.5, -0.25, -0.125)
    body = json.loads(server.received[0].body)
    assert server.received[0].path == "/v1/completions" and body["echo"] is True
    assert continuation_logprobs(endpoint, "A day on Pluto lasts", " about 6 days", cache) == values
    assert len(server.received) == 1


def test_continuation_logprobs_none_when_the_server_gives_none(server, tmp_path):
    server.script[:] = [reply(json.dumps({"choices": [{"text": "x"}]}).encode())]
    endpoint = Endpoint(base_url=server.url + "/v1", model="m")
    assert continuation_logprobs(endpoint, "prefix", " more", ResponseCache(tmp_path)) is None


def test_cache_entry_for_another_request_is_a_miss(tmp_path):
    cache = ResponseCache(tmp_path)
    request = {"kind": "chat", "messages": ["a"]}
    cache.put(request, {"text": "x", "prompt_tokens": 1, "completion_tokens": 1, "seconds": 0.5})
    path = cache.path(request)
    stored = json.loads(path.read_text())
    stored["request"]["messages"] = ["b"]
    path.write_text(json.dumps(stored))
    assert cache.get(request) is None
    with pytest.raises(ValueError):
        cache.put({"authorization": "Bearer x"}, {})


def test_endpoint_refuses_credentials_in_the_url():
    with pytest.raises(ValueError):
        Endpoint(base_url="https://user:pass@example.org/v1", model="m")
    with pytest.raises(ValueError):
        Endpoint(base_url="https://example.org/v1?key=abc", model="m")


def test_complete_text_reads_the_generated_tokens_and_keys_the_cache_by_the_stable_name(server, tmp_path):
    logprobs = {"tokens": [" about", " 2"], "token_logprobs": [-0.5, -1.5]}
    document = {"choices": [{"text": " about 2", "logprobs": logprobs, "finish_reason": "length"}]}
    server.script[:] = [reply(json.dumps(document).encode())]
    endpoint = Endpoint(base_url=server.url + "/v1", model="m", identity="model.gguf")
    cache = ResponseCache(tmp_path)
    completion = complete_text(endpoint, "A day on Pluto lasts", Sampling(max_tokens=2), cache)
    assert completion == TextCompletion(" about 2", (" about", " 2"), (-0.5, -1.5), finished=False)
    body = json.loads(server.received[0].body)
    assert server.received[0].path == "/v1/completions" and body["stop"] == ["\n"] and body["max_tokens"] == 2
    (entry,) = tmp_path.glob("*.json")
    assert "model.gguf" in entry.read_text() and server.url not in entry.read_text()
    moved = Endpoint(base_url="http://127.0.0.1:9/v1", model="m", identity="model.gguf")
    assert complete_text(moved, "A day on Pluto lasts", Sampling(max_tokens=2), cache) == completion
    assert len(server.received) == 1


def test_complete_text_asks_again_without_logprobs_when_the_server_refuses_them(server):
    document = {"choices": [{"text": " about 2 years", "finish_reason": "stop"}]}
    server.script[:] = [
        reply(b'{"error": "logprobs not supported"}', status=400),
        reply(json.dumps(document).encode()),
    ]
    endpoint = Endpoint(base_url=server.url + "/v1", model="m")
    completion = complete_text(endpoint, "A day on Pluto lasts", Sampling(max_tokens=8), None)
    assert completion == TextCompletion(" about 2 years", (), None, finished=True)
    first, second = (json.loads(request.body) for request in server.received)
    assert first["logprobs"] == 1 and "logprobs" not in second
