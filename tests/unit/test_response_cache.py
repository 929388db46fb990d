"""The response cache keeps only good replies and serves only intact entries.

Against scripted servers on 127.0.0.1: an error (429, 401) or a fallback is
never stored, so a healthy server is asked again; a reply with a number beyond
any token count, a lone surrogate or nesting 200,000 deep is refused before
it is used or stored; an entry that is edited, damaged, not a regular file or
too large is a miss with one warning line, asked again and replaced; a cache
that cannot be written keeps the reply for the run and warns once; files
follow the umask; every committed entry passes every check. A seeded fuzz
test mutates entry files (cache entries are files read back).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.models import client, response_cache
from rag.models.client import (
    Endpoint,
    LlmError,
    RetryPolicy,
    Sampling,
    chat,
    chat_request,
    complete_text,
    continuation_logprobs,
)
from rag.models.response_cache import ResponseCache, check_entry, entry_digest, request_digest, seal
from tests.fault_server import FaultServer, reply

PROJECT = Path(__file__).resolve().parents[2]
MESSAGES = [{"role": "user", "content": "How long is a day on Pluto?"}]
FUZZ = settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def chat_body(content: str = "About 6.4 Earth days [1].", prompt_tokens: object = 7) -> bytes:
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 3}
    return json.dumps(
        {"choices": [{"message": {"role": "assistant", "content": content}}], "usage": usage}
    ).encode()


def echo_body() -> bytes:
    tokens = ["A", " day", " lasts", " six", " days"]
    offsets = [0, 1, 5, 11, 15]
    logprobs = {"tokens": tokens, "text_offset": offsets, "token_logprobs": [None, -1.0, -2.0, -0.5, -0.25]}
    return json.dumps({"choices": [{"text": "".join(tokens), "logprobs": logprobs}]}).encode()


@pytest.fixture(autouse=True)
def no_retries(monkeypatch):
    """One attempt per call, so a 429 ends the call at once (the retries are tested elsewhere)."""
    monkeypatch.setattr(client, "DEFAULT_RETRIES", RetryPolicy(max_retries=0))


def endpoint_of(server: FaultServer) -> Endpoint:
    return Endpoint(server.url + "/v1", "m")


def warnings_of(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]


# --------------------------------------------------------------------------
# Must show: an error is never stored; a corrupted entry is asked again with one warning
# --------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 401, 503])
def test_an_error_then_a_healthy_server_the_second_run_asks_again_and_stores_the_reply(
    server, tmp_path, status
):
    cache = ResponseCache(tmp_path / "cache")
    server.script[:] = [reply(b'{"error": "busy"}', status=status)]
    with pytest.raises(LlmError, match=f"HTTP {status}"):
        chat(endpoint_of(server), MESSAGES, Sampling(), cache)
    assert not (tmp_path / "cache").exists() or list((tmp_path / "cache").iterdir()) == []
    server.script[:] = [reply(chat_body("Six days [1]."))]
    healthy = chat(endpoint_of(server), MESSAGES, Sampling(), cache)
    assert healthy.text == "Six days [1]." and not healthy.cached and len(server.received) == 2
    again = chat(endpoint_of(server), MESSAGES, Sampling(), ResponseCache(tmp_path / "cache"))
    assert again.cached and again.text == "Six days [1]." and len(server.received) == 2


@pytest.mark.parametrize("status", [429, 401, 403, 500])
def test_a_failed_completions_call_is_not_stored_as_no_log_probabilities(server, tmp_path, status):
    cache = ResponseCache(tmp_path)
    server.script[:] = [reply(b'{"error": "later"}', status=status)]
    with pytest.raises(LlmError, match=f"HTTP {status}"):
        continuation_logprobs(endpoint_of(server), "A day", " lasts six days", cache)
    assert list(tmp_path.iterdir()) == []
    server.script[:] = [reply(echo_body())]
    assert continuation_logprobs(endpoint_of(server), "A day", " lasts six days", cache) == (
        -2.0,
        -0.5,
        -0.25,
    )
    assert len(list(tmp_path.glob("*.json"))) == 1


def test_a_refused_field_is_answered_once_and_not_stored(server, tmp_path, caplog):
    cache = ResponseCache(tmp_path)
    server.script[:] = [reply(b'{"error": "echo is not supported"}', status=400)]
    assert continuation_logprobs(endpoint_of(server), "A day", " lasts", cache) is None
    assert list(tmp_path.iterdir()) == []
    # complete_text's fallback (asked again without logprobs) is used, never stored under the first request.
    plain = json.dumps({"choices": [{"text": " six days", "finish_reason": "stop"}]}).encode()
    server.script[:] = [reply(b'{"error": "logprobs"}', status=400), reply(plain)]
    assert (
        complete_text(endpoint_of(server), "A day lasts", Sampling(max_tokens=4), cache).text == " six days"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_corrupted_entry_is_asked_again_with_one_warning(server, tmp_path, caplog):
    cache = ResponseCache(tmp_path)
    server.script[:] = [reply(chat_body("Six days [1]."))]
    chat(endpoint_of(server), MESSAGES, Sampling(), cache)
    path = cache.path(chat_request(endpoint_of(server), MESSAGES, Sampling()))
    stored = json.loads(path.read_text())
    stored["reply"]["text"] = "Sixty days [1]."  # a hand edit that leaves valid JSON
    path.write_text(json.dumps(stored))
    fresh = ResponseCache(tmp_path)
    with caplog.at_level(logging.WARNING):
        assert fresh.get(chat_request(endpoint_of(server), MESSAGES, Sampling())) is None
        answer = chat(endpoint_of(server), MESSAGES, Sampling(), fresh)
    assert answer.text == "Six days [1]." and not answer.cached and len(server.received) == 2
    (warning,) = warnings_of(caplog)
    assert path.name in warning and "sha256" in warning and "\n" not in warning
    assert json.loads(path.read_text())["reply"]["text"] == "Six days [1]."
    assert chat(endpoint_of(server), MESSAGES, Sampling(), ResponseCache(tmp_path)).cached


# --------------------------------------------------------------------------
# Replies refused before they are used or stored
# --------------------------------------------------------------------------

DEEP = b'{"choices": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"


@pytest.mark.parametrize(
    "body, words",
    [
        (chat_body(prompt_tokens=10**30), "usage.prompt_tokens"),
        (chat_body(prompt_tokens=-3), "usage.prompt_tokens"),
        (chat_body(prompt_tokens=True), "usage.prompt_tokens"),
        (chat_body("a lone \ud800 surrogate"), "lone surrogate"),
        (DEEP, "nested deeper"),
        (b'{"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": NaN}}', "NaN"),
        (b'{"choices": [{"message": {"content": "x"}}], "n": 1e400}', "not finite"),
        (b'{"choices": [{"message": {"content": "\xff\xfe"}}]}', "UTF-8"),
        (b'{"choices": [{"message": {"content": "x"}}], "n": ' + b"9" * 5000 + b"}", "too long"),
    ],
)
def test_a_malformed_reply_is_one_line_and_never_stored(server, tmp_path, body, words):
    cache = ResponseCache(tmp_path)
    server.script[:] = [reply(body)]
    with pytest.raises(LlmError) as caught:
        chat(endpoint_of(server), MESSAGES, Sampling(), cache)
    assert words in str(caught.value) and "\n" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []
    server.script[:] = [reply(chat_body("Six days [1]."))]
    assert chat(endpoint_of(server), MESSAGES, Sampling(), cache).text == "Six days [1]."


# --------------------------------------------------------------------------
# Entries checked on every read
# --------------------------------------------------------------------------

REQUEST = {"kind": "chat", "endpoint": "e", "model": "m", "messages": MESSAGES}
GOOD_REPLY = {"text": "Six days [1].", "prompt_tokens": 7, "completion_tokens": 3, "seconds": 0.25}


def stored_entry(tmp_path: Path) -> tuple[ResponseCache, Path]:
    cache = ResponseCache(tmp_path)
    cache.put(REQUEST, GOOD_REPLY)
    return ResponseCache(tmp_path), cache.path(REQUEST)


def rewrite(path: Path, change) -> None:
    entry = json.loads(path.read_text())
    change(entry)
    path.write_text(json.dumps(entry, allow_nan=True))


def reseal(entry: dict) -> None:
    entry["sha256"] = entry_digest(entry["request"], entry["reply"])


DAMAGES = {
    "missing reply key": lambda e: (e["reply"].pop("seconds"), reseal(e)),
    "extra reply key": lambda e: (e["reply"].update(extra=1), reseal(e)),
    "NaN seconds": lambda e: e["reply"].update(seconds=float("nan")),
    "huge token count": lambda e: (e["reply"].update(prompt_tokens=10**30), reseal(e)),
    "text is a number": lambda e: (e["reply"].update(text=3), reseal(e)),
    "no digest": lambda e: e.pop("sha256"),
    "wrong digest": lambda e: e.update(sha256="0" * 64),
    "edited text": lambda e: e["reply"].update(text="Sixty days [1]."),
    "another request": lambda e: (e["request"].update(model="other"), reseal(e)),
    "extra field": lambda e: e.update(note="hi"),
    "request not a mapping": lambda e: e.update(request=[1]),
}


@pytest.mark.parametrize("name", sorted(DAMAGES))
def test_a_damaged_entry_is_a_miss_with_one_warning(tmp_path, caplog, name):
    cache, path = stored_entry(tmp_path)
    rewrite(path, DAMAGES[name])
    with caplog.at_level(logging.WARNING):
        assert cache.get(REQUEST) is None
        assert cache.get(REQUEST) is None
    (warning,) = warnings_of(caplog)
    assert path.name in warning and "\n" not in warning and "asking again" in warning


@pytest.mark.parametrize(
    "text",
    [b"", b"{", b"\xff\xfe{}", b"[" * 100_000 + b"]" * 100_000, b'{"a": 1e999}', b"null", b"\x00" * 10],
)
def test_an_unreadable_entry_is_a_miss_with_one_warning(tmp_path, caplog, text):
    cache, path = stored_entry(tmp_path)
    path.write_bytes(text)
    with caplog.at_level(logging.WARNING):
        assert cache.get(REQUEST) is None
    assert len(warnings_of(caplog)) == 1


def test_only_regular_files_of_bounded_size_are_read(tmp_path, caplog, monkeypatch):
    cache, path = stored_entry(tmp_path)
    good = path.read_bytes()
    outside = tmp_path.parent / f"{tmp_path.name}-outside.json"
    outside.write_bytes(good)
    kinds = {}
    path.unlink()
    path.symlink_to(outside)
    kinds["symbolic link"] = ResponseCache(tmp_path).get(REQUEST)
    path.unlink()
    os.mkfifo(path)
    kinds["not a regular file"] = ResponseCache(tmp_path).get(REQUEST)  # must not block
    path.unlink()
    path.mkdir()
    kinds["folder"] = ResponseCache(tmp_path).get(REQUEST)
    path.rmdir()
    path.write_bytes(good)
    monkeypatch.setattr(response_cache, "MAX_ENTRY_BYTES", len(good) - 1)
    with caplog.at_level(logging.WARNING):
        kinds["larger than"] = ResponseCache(tmp_path).get(REQUEST)
    assert kinds == dict.fromkeys(kinds)
    monkeypatch.setattr(response_cache, "MAX_ENTRY_BYTES", len(good))
    assert ResponseCache(tmp_path).get(REQUEST) == GOOD_REPLY
    outside.unlink()


def test_put_refuses_a_malformed_reply(tmp_path):
    cache = ResponseCache(tmp_path)
    for reply_value in (
        {**GOOD_REPLY, "prompt_tokens": 10**30},
        {**GOOD_REPLY, "text": "\udc80"},
        {**GOOD_REPLY, "seconds": float("inf")},
        {"text": "partial"},
    ):
        with pytest.raises(ValueError, match="not stored"):
            cache.put(REQUEST, reply_value)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------
# A cache that cannot be written; the umask
# --------------------------------------------------------------------------


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_a_cache_that_cannot_be_written_keeps_the_reply_and_warns_once(
    server, tmp_path, caplog, monkeypatch, code
):
    def refuse(path: Path) -> int:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(response_cache, "_create_mode_file", refuse)
    cache = ResponseCache(tmp_path)
    server.script[:] = [reply(chat_body("Six days [1].")), reply(chat_body("Seven days [2]."))]
    with caplog.at_level(logging.WARNING):
        first = chat(endpoint_of(server), MESSAGES, Sampling(), cache)
        second = chat(endpoint_of(server), MESSAGES, Sampling(seed=1), cache)
        again = chat(endpoint_of(server), MESSAGES, Sampling(), cache)
    assert (first.text, second.text) == ("Six days [1].", "Seven days [2].")
    assert again.cached and again.text == first.text and len(server.received) == 2
    (warning,) = warnings_of(caplog)
    assert os.strerror(code) in warning and "run goes on" in warning
    assert list(tmp_path.iterdir()) == []


def test_a_cache_folder_under_a_file_keeps_the_reply(server, tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = ResponseCache(blocker / "cache")
    server.script[:] = [reply(chat_body("Six days [1]."))]
    with caplog.at_level(logging.WARNING):
        assert chat(endpoint_of(server), MESSAGES, Sampling(), cache).text == "Six days [1]."
    assert len(warnings_of(caplog)) == 1


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_entries_follow_the_umask(tmp_path, mask, mode):
    previous = os.umask(mask)
    try:
        cache = ResponseCache(tmp_path / "cache")
        cache.put(REQUEST, GOOD_REPLY)
    finally:
        os.umask(previous)
    assert cache.path(REQUEST).stat().st_mode & 0o777 == mode
    assert not list((tmp_path / "cache").glob("*.partial"))


# --------------------------------------------------------------------------
# The committed entries, and sealing entries written before the digest
# --------------------------------------------------------------------------


def test_every_committed_entry_passes_every_check_under_its_own_name():
    paths = sorted((PROJECT / "resources" / "llm_cache").glob("*.json"))
    assert len(paths) > 400
    for path in paths:
        entry = json.loads(path.read_text(encoding="utf-8"))
        assert path.name == f"{request_digest(entry['request'])}.json"
        assert check_entry(entry, entry["request"]) == entry["reply"]
        assert ResponseCache(path.parent).get(entry["request"]) == entry["reply"]


def test_sealing_adds_the_digest_and_keeps_the_name(tmp_path, caplog):
    cache, path = stored_entry(tmp_path)
    rewrite(path, lambda e: e.pop("sha256"))
    with caplog.at_level(logging.WARNING):
        assert cache.get(REQUEST) is None
    misnamed = tmp_path / ("0" * 64 + ".json")
    shutil.copy(path, misnamed)
    assert seal(tmp_path) == (1, 0, [f"{misnamed.name} is not named by its request's digest"])
    assert ResponseCache(tmp_path).get(REQUEST) == GOOD_REPLY
    assert seal(tmp_path)[:2] == (0, 1)


# --------------------------------------------------------------------------
# Fuzz: entry files mutated at random are either served unchanged or a miss with one warning
# --------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
FIELDS = st.sampled_from(["text", "prompt_tokens", "completion_tokens", "seconds", "extra"])
MUTATIONS = st.one_of(
    st.tuples(st.just("set reply"), FIELDS, JSON_VALUES),
    st.tuples(st.just("set and reseal"), FIELDS, JSON_VALUES),
    st.tuples(st.just("drop"), st.sampled_from(["request", "reply", "sha256"]), st.none()),
    st.tuples(st.just("truncate"), st.integers(min_value=0, max_value=400), st.none()),
    st.tuples(st.just("flip byte"), st.integers(min_value=0, max_value=400), st.integers(0, 255)),
    st.tuples(st.just("insert"), st.integers(min_value=0, max_value=400), st.binary(max_size=6)),
    st.tuples(st.just("surrogate"), st.sampled_from(["\\ud800", "\\udfff", "\\ud83d"]), st.none()),
    st.tuples(st.just("deep"), st.integers(min_value=30, max_value=3000), st.none()),
)


def mutate(data: bytes, mutation: tuple) -> bytes:
    how, where, what = mutation
    if how in ("set reply", "set and reseal", "drop"):
        try:
            entry = json.loads(data)
        except ValueError:
            return data  # an earlier mutation broke the JSON: nothing to edit
        if not isinstance(entry, dict):
            return data
        if how == "drop":
            entry.pop(where, None)
        elif isinstance(entry.get("reply"), dict):
            entry["reply"][where] = what
            if how == "set and reseal" and isinstance(entry.get("request"), dict):
                try:
                    reseal(entry)
                except ValueError:
                    pass  # NaN cannot be digested: left unsealed
        return json.dumps(entry, allow_nan=True).encode()
    if how == "truncate":
        return data[: min(where, len(data))]
    if how == "flip byte":
        position = min(where, len(data) - 1)
        return data[:position] + bytes([what]) + data[position + 1 :]
    if how == "insert":
        position = min(where, len(data))
        return data[:position] + what + data[position:]
    if how == "surrogate":
        return data.replace(b"Six days", where.encode())
    return data.replace(b'"Six days [1]."', b"[" * where + b"]" * where)


@FUZZ
@given(mutations=st.lists(MUTATIONS, min_size=1, max_size=3))
def test_fuzz_a_mutated_entry_is_served_intact_or_a_miss_with_one_warning(tmp_path_factory, mutations):
    folder = tmp_path_factory.mktemp("entries")
    cache = ResponseCache(folder)
    cache.put(REQUEST, GOOD_REPLY)
    path = cache.path(REQUEST)
    data = path.read_bytes()
    for mutation in mutations:
        data = mutate(data, mutation)
    path.write_bytes(data)
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("rag.models.response_cache")
    logger.addHandler(handler)
    try:
        fresh = ResponseCache(folder)
        first, second = fresh.get(REQUEST), fresh.get(REQUEST)
    finally:
        logger.removeHandler(handler)
    assert first == second
    if first is None:
        # A miss says so once, in one line naming the file.
        assert len(records) == 1 and path.name in records[0].getMessage()
        assert "\n" not in records[0].getMessage()
        return
    assert records == []
    # Served only what the file holds, sealed by its digest and of the chat reply's form (checked
    # here apart from the module) ...
    entry = json.loads(data)
    assert first == entry["reply"] and entry["request"] == REQUEST
    assert entry["sha256"] == entry_digest(entry["request"], entry["reply"])
    assert set(first) == set(GOOD_REPLY) and isinstance(first["text"], str)
    for name in ("prompt_tokens", "completion_tokens"):
        assert type(first[name]) is int and 0 <= first[name] <= 10**9
    assert type(first["seconds"]) in (int, float) and 0 <= first["seconds"] <= 10**6
    # ... and, unless the mutation wrote a new digest, exactly the stored reply.
    if not any(how == "set and reseal" for how, _, _ in mutations):
        assert first == GOOD_REPLY
