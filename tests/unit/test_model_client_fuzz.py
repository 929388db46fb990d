"""Seeded fuzz of server replies: the one client uses a reply exactly as sent, or fails in one line.

A stub server on 127.0.0.1 answers each generated case: a well-formed chat
completion (its text and token counts drawn at random), or one with a field
replaced by something hostile (NaN, 10^30, a lone surrogate, a list, nesting
hundreds deep), or raw bytes, or an error status. For every case the client
either returns the reply's own text and counts, stores them and reads them
back unchanged, or raises one ``LlmError`` line and stores nothing; a
well-formed reply is never refused. Nothing else may happen: no other
exception, no value that differs from what the server sent.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.models import client
from rag.models.client import Endpoint, LlmError, RetryPolicy, Sampling, chat
from rag.models.response_cache import ResponseCache
from tests.fault_server import FaultServer, head

FUZZ = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
MESSAGES = [{"role": "user", "content": "How long is a day on Pluto?"}]

TEXTS = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
COUNTS = st.integers(min_value=0, max_value=10**9)
HOSTILE = st.one_of(
    st.sampled_from([float("nan"), float("inf"), -1, 10**30, True, "7", None, [], {}, 1.5]),
    st.just("\ud800 lone"),
    st.integers(min_value=20, max_value=400).map(lambda depth: json.loads("[" * depth + "]" * depth)),
)
FIELDS = st.sampled_from(["content", "prompt_tokens", "completion_tokens", "usage", "choices", "message"])


@st.composite
def replies(draw) -> tuple[int, bytes, dict | None]:
    """(status, body, the reply the client must return or None when it may refuse)."""
    text, prompt, completion = draw(TEXTS), draw(COUNTS), draw(COUNTS)
    message = {"role": "assistant", "content": text}
    document = {
        "choices": [{"message": message}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
    }
    expected = {"text": text, "prompt_tokens": prompt, "completion_tokens": completion}
    kind = draw(st.sampled_from(["good", "good", "field", "bytes", "status", "cut"]))
    if kind == "good":
        if draw(st.booleans()):
            del document["usage"]
            expected |= {"prompt_tokens": 0, "completion_tokens": 0}
        return 200, json.dumps(document).encode(), expected
    if kind == "field":
        field, value = draw(FIELDS), draw(HOSTILE)
        if field == "content":
            message["content"] = value
        elif field in ("prompt_tokens", "completion_tokens"):
            document["usage"][field] = value
        elif field == "message":
            document["choices"][0]["message"] = value
        else:
            document[field] = value
        return 200, json.dumps(document, allow_nan=True).encode(), None
    if kind == "bytes":
        return 200, draw(st.binary(max_size=60)), None
    if kind == "cut":
        body = json.dumps(document).encode()
        return 200, body[: draw(st.integers(min_value=0, max_value=len(body) - 1))], None
    return draw(st.sampled_from([400, 401, 403, 404, 429, 500, 503])), json.dumps(document).encode(), None


@pytest.fixture
def stub(monkeypatch):
    for variable in ("http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(client, "DEFAULT_RETRIES", RetryPolicy(max_retries=0))
    server = FaultServer()
    yield server
    server.close()


@FUZZ
@given(case=replies(), seed=st.integers(min_value=0, max_value=2**31))
def test_fuzz_a_reply_is_used_exactly_as_sent_or_refused_in_one_line(stub, tmp_path_factory, case, seed):
    status, body, expected = case

    def behave(request, connection) -> None:
        connection.sendall(head(status, {"Content-Length": str(len(body))}) + body)

    stub.script[:] = [behave]
    asked = len(stub.received)
    folder = tmp_path_factory.mktemp("cache")
    endpoint = Endpoint(stub.url + "/v1", "m", timeout_seconds=10)
    sampling = Sampling(seed=seed)
    try:
        answer = chat(endpoint, MESSAGES, sampling, ResponseCache(folder))
    except LlmError as error:
        assert expected is None, f"a well-formed reply was refused: {error}"
        assert "\n" not in str(error) and str(error).isprintable()
        assert list(folder.iterdir()) == []
        return
    document = json.loads(body)
    usage = document.get("usage") or {}
    assert answer.text == document["choices"][0]["message"]["content"]
    assert (answer.prompt_tokens, answer.completion_tokens) == (
        usage.get("prompt_tokens") or 0,
        usage.get("completion_tokens") or 0,
    )
    if expected is not None:
        assert (answer.text, answer.prompt_tokens, answer.completion_tokens) == tuple(expected.values())
    # Stored, and read back as the same reply without asking again.
    again = chat(endpoint, MESSAGES, sampling, ResponseCache(folder))
    assert again.cached and (again.text, again.prompt_tokens) == (answer.text, answer.prompt_tokens)
    assert len(stub.received) == asked + 1
