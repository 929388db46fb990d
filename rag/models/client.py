"""One client for every OpenAI-compatible endpoint: llama.cpp, vLLM, Ollama, hosted APIs.

All of them accept POST ``{base_url}/chat/completions`` (and most
``/completions``) with the same standard fields, so only those are sent:
``model``, ``messages`` (or ``prompt``), ``temperature``, ``max_tokens`` and
``seed``; ``usage`` is read when the server reports it. The pipeline's ``llm``
generators, the grounding experiments and ``rag ask`` all go through here, with
one :class:`~rag.models.response_cache.ResponseCache`, so a reply is paid
for once.

Why each rule:

* **A deadline is a deadline.** ``timeout_seconds`` (``RAG_LLM_TIMEOUT`` for
  ``rag ask``) bounds the whole call: every attempt gets only what is left, a
  retry whose wait would end past the deadline is not started, and a
  ``Retry-After`` beyond it ends the call with one line saying so.
* **The key never leaves over plain http.** It is read from the environment
  variable the entry names (never from a config file) and sent only over
  https, or over plain http straight to a loopback address: proxies from the
  environment are ignored for loopback endpoints, and a proxy (or a
  non-loopback host) for plain http with a key is refused in one line.
* **The bundled server is the one this run started.** It requires a key
  generated when it starts (:mod:`rag.models.local_server`), registered here
  for its base URL with a check that its process is still running
  (:func:`served`): every request to it carries that key, and a request to a
  server that has exited is refused rather than sent to whatever now listens
  on its port.
* **Loopback is recognised by name and by address.** ``localhost`` and every
  address of 127.0.0.0/8 and ``::1`` (:func:`is_loopback`) go direct, never
  through a proxy; redirects are never followed.
* **Only a well-formed, successful reply is used or cached.** A reply is
  parsed strictly (valid UTF-8, no NaN, nesting bounded) and checked with the
  response cache's own :func:`~rag.models.response_cache.reply_problem`
  (finite, bounded numbers, no lone surrogate) before anything uses it; an
  error (a 401, a 429 after its retries) or a fallback answer is never stored.
* **Nothing from the server reaches a terminal raw.** Error quotes are cut
  before redaction (so the work is bounded by the quote, not by a 7 MiB body),
  redacted of every 8-character piece of the key, and control characters
  (ESC, BEL, ...) are escaped.
"""

from __future__ import annotations

import contextlib
import email.utils
import ipaddress
import json
import logging
import math
import os
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from rag import bounded_http
from rag.kinds import LLM_MAX_TOKENS
from rag.models.redaction import Redactor, escape_controls, shown_url
from rag.models.response_cache import (
    MAX_TOKEN_COUNT,
    ResponseCache,
    UnusableValue,
    parse_json,
    reply_problem,
)
from rag.progress import format_duration

logger = logging.getLogger(__name__)

MAX_REPLY_BYTES = 8 * 1024 * 1024
QUOTED_REPLY_CHARACTERS = 300
MAX_RETRIES = 3
BACKOFF_SECONDS = 1.0
PROGRESS_EVERY_SECONDS = 5.0
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
# Statuses by which a server refuses a request's fields (logprobs, echo, response_format):
# an answer about the request, unlike 401, 403 or 429, which say nothing about it.
REFUSED_STATUS = frozenset({400, 404, 422, 501})
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
# How deep a server's JSON reply may nest (a chat completion nests 4 levels).
MAX_REPLY_DEPTH = 64


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` is this machine's loopback: ``localhost``, 127.0.0.0/8 or ``::1``."""
    if not host:
        return False
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait between attempts; every wait stays within the call's deadline."""

    max_retries: int = MAX_RETRIES
    backoff_seconds: float = BACKOFF_SECONDS
    max_wait_seconds: float = 60.0

    def __post_init__(self) -> None:
        retries = self.max_retries
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 100:
            raise ValueError(f"max_retries must be a whole number from 0 to 100, got {retries!r}")
        for name in ("backoff_seconds", "max_wait_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number of seconds, got {value!r}")
            if value < 0:
                raise ValueError(f"{name} must not be negative, got {value!r}")

    def wait(self, attempt: int, retry_after: float | None) -> float:
        """The wait before retry ``attempt`` (1 for the first): doubled backoff or Retry-After, capped."""
        return min(max(self.backoff_seconds * 2 ** (attempt - 1), retry_after or 0.0), self.max_wait_seconds)


DEFAULT_RETRIES = RetryPolicy()


# Base URL of a server this process started -> (its per-start key, whether it still runs).
_SERVED: dict[str, tuple[str, Callable[[], bool]]] = {}
_SERVED_LOCK = threading.Lock()


def _served_key(base_url: str) -> str | None:
    with _SERVED_LOCK:
        found = _SERVED.get(base_url.rstrip("/"))
    if found is None:
        return None
    key, alive = found
    if not alive():
        raise LlmError(
            f"{shown_url(base_url)}: the server this run started there has exited; "
            "not asking whatever listens on its port now"
        )
    return key


@contextlib.contextmanager
def served(base_url: str, key: str, alive: Callable[[], bool]) -> Iterator[None]:
    """While the block runs, requests to ``base_url`` carry ``key`` and need ``alive()`` to hold."""
    name = base_url.rstrip("/")
    with _SERVED_LOCK:
        _SERVED[name] = (key, alive)
    try:
        yield
    finally:
        with _SERVED_LOCK:
            _SERVED.pop(name, None)


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


class LlmError(RuntimeError):
    """The endpoint failed or cannot be used safely; the message is one key-free line.

    ``status`` is the HTTP status of the last reply, when there was one.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GateError(LlmError):
    """A request the gate refuses (rag.models.gate); one line naming the caller, the entry and why
    (never a chunk's text)."""


class ResponseFormatRefused(LlmError):
    """The server refused a request's ``response_format``; the caller may ask again in plain text."""


# Words in a 4xx reply that show the server refused the response_format field itself.
_RESPONSE_FORMAT_WORDS = ("response_format", "json_schema", "grammar", "schema")


@dataclass(frozen=True)
class Endpoint:
    """Where a model is served. ``key_variable`` names the environment variable holding the key.

    ``identity`` is how the response cache knows the endpoint when its URL
    is not stable: the bundled server listens on a fresh port each time, so it
    is known by its model file and server version instead
    (:func:`rag.models.local_server.identity`). Default: the base URL.
    """

    base_url: str
    model: str
    key_variable: str | None = None
    concurrency: int = 1
    timeout_seconds: float = 120.0
    identity: str | None = None
    max_reply_bytes: int = MAX_REPLY_BYTES
    # The gate (rag.models.gate) this endpoint's requests passed: it routes them. Without one,
    # a request goes only to an address that is loopback by where it resolves.
    gate: object | None = field(default=None, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        parsed = urllib.parse.urlsplit(self.base_url if isinstance(self.base_url, str) else "")
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"base_url {shown_url(str(self.base_url))!r} is not an http(s) URL")
        if parsed.username or parsed.password or parsed.query:
            raise ValueError("base_url must not carry credentials or a query; name key_variable instead")
        if not isinstance(self.model, str) or not self.model.strip() or not self.model.isprintable():
            raise ValueError("model must be a non-empty printable name")
        if self.key_variable is not None and (
            not isinstance(self.key_variable, str) or not self.key_variable.replace("_", "").isalnum()
        ):
            raise ValueError(f"key_variable {self.key_variable!r} is not an environment variable name")
        if (
            isinstance(self.concurrency, bool)
            or not isinstance(self.concurrency, int)
            or not 1 <= self.concurrency <= 64
        ):
            raise ValueError(f"concurrency must be an integer from 1 to 64, got {self.concurrency!r}")
        if self.identity is not None and (
            not isinstance(self.identity, str) or not self.identity.strip() or not self.identity.isprintable()
        ):
            raise ValueError("identity must be a non-empty printable name")
        seconds = self.timeout_seconds
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
            raise ValueError(f"timeout_seconds must be a number of seconds, got {seconds!r}")
        if not 0 < seconds <= 24 * 3600:
            raise ValueError(f"timeout_seconds must be above 0 and at most 86400, got {seconds!r}")
        size = self.max_reply_bytes
        if isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= 1 << 30:
            raise ValueError(
                f"max_reply_bytes must be a positive whole number of at most 2**30, got {size!r}"
            )

    @property
    def cache_name(self) -> str:
        """The endpoint in cache keys: its identity, else its base URL."""
        return self.identity or self.base_url

    @property
    def loopback(self) -> bool:
        return is_loopback(urllib.parse.urlsplit(self.base_url).hostname)

    def url(self, path: str) -> str:
        return self.base_url.rstrip("/") + path


@dataclass(frozen=True)
class Sampling:
    """How a reply is sampled; the defaults are an llm generator entry's (rag.kinds)."""

    temperature: float = 0.0
    max_tokens: int = LLM_MAX_TOKENS
    seed: int = 0


@dataclass(frozen=True)
class Completion:
    """A chat reply. ``top_logprobs``, when asked for and given by the server: per generated
    token, ``[token, [[candidate, log-probability], ...]]`` (:func:`chat`'s ``top_logprobs``)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cached: bool
    top_logprobs: list | None = None
    # Whether ``text`` is a structured reply still to be read against its prompt's sources
    # (rag.answering.llm_answers.structured_reply). Not part of the cached reply.
    structured: bool = False


def read_key(endpoint: Endpoint, environment: Mapping[str, str]) -> str | None:
    """The key from the named environment variable, or None when the endpoint needs none."""
    if endpoint.key_variable is None:
        return None
    key = environment.get(endpoint.key_variable, "").strip()
    if not key:
        raise LlmError(f"environment variable {endpoint.key_variable} (key_variable) is not set")
    if not key.isascii() or not key.isprintable() or " " in key or len(key) > 4096:
        raise LlmError(
            f"environment variable {endpoint.key_variable} holds a character a header cannot carry"
        )
    return key


def endpoint_route(endpoint: Endpoint):
    """Where ``endpoint``'s requests go (rag.models.gate.Route), resolved once; refused off the machine
    without a gate: only the gate knows whose text a request holds and what the endpoint may receive."""
    from rag.models.routes import RouteError, route_of

    gate = endpoint.gate
    if gate is not None:
        return gate.route(endpoint.base_url)
    try:
        route = route_of(endpoint.base_url)
    except RouteError as error:
        raise GateError(f"{shown_url(endpoint.base_url)}: {error}") from None
    if not route.loopback:
        raise GateError(
            f"{shown_url(endpoint.base_url)}: {route.where()} is not this machine's loopback, and the "
            "request did not pass the gate (rag.models.gate.open_gate) that checks what it may receive"
        )
    return route


def transport_check(endpoint: Endpoint, key: str | None, route=None) -> bool:
    """Whether to use the environment's proxy; raises when the key would travel in clear text.

    https: the proxy (if any) only tunnels encrypted bytes, so it is used,
    except to a loopback address. Plain http to a loopback address (by the
    address it resolves to, ``route``): always direct, proxy ignored. Plain
    http elsewhere: allowed without a key, refused with one.
    """
    parsed = urllib.parse.urlsplit(endpoint.base_url)
    loopback = endpoint.loopback if route is None else route.loopback
    if loopback:
        return False
    if parsed.scheme == "https":
        return True
    if key is not None:
        proxy = bounded_http.proxy_for(endpoint.base_url)
        through = (
            f" through the proxy {shown_url(proxy if '://' in proxy else 'http://' + proxy)}" if proxy else ""
        )
        raise LlmError(
            f"{shown_url(endpoint.base_url)}: refusing to send the key over plain http{through}; "
            "use https, or a loopback address (127.0.0.1) with no proxy"
        )
    return True


@dataclass(frozen=True)
class _Reply:
    document: dict
    seconds: float


def post_json(
    endpoint: Endpoint,
    path: str,
    body: dict,
    environment: Mapping[str, str] = os.environ,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    retries: RetryPolicy | None = None,
) -> _Reply:
    """POST ``body`` to ``base_url + path`` with retries, all within ``endpoint.timeout_seconds``.

    ``retries`` defaults to :data:`DEFAULT_RETRIES` and ``sleep`` to :func:`time.sleep`, read when called.
    """
    retries = DEFAULT_RETRIES if retries is None else retries
    sleep = time.sleep if sleep is None else sleep
    key = read_key(endpoint, environment)
    if key is None:
        key = _served_key(endpoint.base_url)
    if not endpoint.loopback:
        transport_check(endpoint, key)  # the key's rule first: nothing is resolved or connected for it
    route = endpoint_route(endpoint)
    use_proxy = transport_check(endpoint, key, route)
    redactor = Redactor([key] if key else [])
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    payload = json.dumps(body).encode("utf-8")
    shown = shown_url(endpoint.url(path))
    started = clock()
    deadline = started + endpoint.timeout_seconds
    failure = "no attempt was made"
    status = None
    attempt = 0
    while True:
        attempt += 1
        remaining = deadline - clock()
        outcome = _attempt(
            endpoint.url(path), headers, payload, remaining, use_proxy, redactor, deadline, endpoint, route
        )
        if isinstance(outcome, dict):
            return _Reply(outcome, clock() - started)
        failure, retryable, retry_after, status = outcome
        failure = f"{shown} failed: {failure}"
        if not retryable or attempt > retries.max_retries:
            break
        wait = retries.wait(attempt, retry_after)
        left = deadline - clock()
        if wait + 0.5 >= left:
            if retry_after is not None and retry_after >= wait:
                failure += (
                    f"; the server asks to retry after {retry_after:g} s, past the deadline of "
                    f"{endpoint.timeout_seconds:g} s"
                )
            else:
                failure += f"; no time left for a retry within the deadline of {endpoint.timeout_seconds:g} s"
            break
        logger.warning(
            "%s; retry %d of %d in %.1f s", escape_controls(failure), attempt, retries.max_retries, wait
        )
        sleep(wait)
    raise LlmError(escape_controls(f"{failure} (after {attempt} attempt(s))"), status)


def _attempt(
    url: str,
    headers: dict,
    payload: bytes,
    seconds: float,
    use_proxy: bool,
    redactor: Redactor,
    deadline: float,
    endpoint: Endpoint,
    route=None,
) -> dict | tuple[str, bool, float | None, int | None]:
    """One request: the parsed JSON reply, or (redacted failure, retryable, retry-after, status)."""
    if seconds <= 0:
        return "no time left before the deadline", False, None, None
    try:
        reply = bounded_http.request(
            "POST",
            url,
            headers,
            payload,
            deadline_seconds=seconds,
            max_body_bytes=endpoint.max_reply_bytes,
            use_proxy=use_proxy,
            connect_to=None if route is None else route.connect_to,
        )
    except bounded_http.DeadlineExceeded:
        return (
            f"no whole reply within the {seconds:.1f} s left of the deadline of "
            f"{endpoint.timeout_seconds:g} s",
            True,
            None,
            None,
        )
    except bounded_http.BodyTooLarge as error:
        return f"reply refused: {error} (max_reply_bytes)", False, None, None
    except bounded_http.TruncatedBody as error:
        return redactor.quote(f"reply cut short: {error}", QUOTED_REPLY_CHARACTERS), True, None, None
    except bounded_http.HttpFault as error:
        return redactor.quote(f"connection failed: {error}", QUOTED_REPLY_CHARACTERS), True, None, None
    if not 200 <= reply.status < 300:
        text = reply.body.decode("utf-8", errors="replace")
        quoted = redactor.quote(text, QUOTED_REPLY_CHARACTERS, deadline)
        reason = redactor.quote(reply.reason or "", 80)
        return (
            f"HTTP {reply.status} {reason}: {quoted}",
            reply.status in RETRYABLE_STATUS,
            retry_after_seconds(reply.header("Retry-After")),
            reply.status,
        )
    try:
        document = parse_json(reply.body, MAX_REPLY_DEPTH)
    except UnusableValue as error:
        return f"the reply {error}", False, None, reply.status
    if not isinstance(document, dict):
        return "the reply is not a JSON object", False, None, reply.status
    return _redact_document(document, redactor, deadline)


def _redact_document(document: dict, redactor: Redactor, deadline: float) -> dict:
    """A server may echo the key back: every text of the reply is redacted before use."""

    def clean(value: object) -> object:
        if isinstance(value, str):
            return redactor(value, deadline)
        if isinstance(value, list):
            return [clean(item) for item in value]
        if isinstance(value, dict):
            return {redactor(str(name)): clean(item) for name, item in value.items()}
        return value

    return clean(document) if redactor.active else document


def _usage(document: dict, shown: str) -> tuple[int, int]:
    """Token counts from ``usage``: 0 when the server gives none, an error when it gives nonsense."""
    usage = document.get("usage")
    if usage is None:
        return 0, 0
    if not isinstance(usage, dict):
        raise LlmError(f"{shown}: the reply's usage is not a mapping")
    counts = []
    for name in ("prompt_tokens", "completion_tokens"):
        value = usage.get(name)
        if value is None:
            counts.append(0)
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
            raise LlmError(
                escape_controls(
                    f"{shown}: usage.{name} {str(value)[:40]} is not a token count from 0 to "
                    f"{MAX_TOKEN_COUNT:,}"
                )
            )
        counts.append(value)
    return counts[0], counts[1]


def _checked(kind: str, reply: dict, shown: str) -> dict:
    """``reply`` when it may be used and cached; LlmError naming what is wrong otherwise."""
    problem = reply_problem(kind, reply)
    if problem:
        raise LlmError(escape_controls(f"{shown}: the reply cannot be used: {problem}"))
    return reply


def chat_request(
    endpoint: Endpoint,
    messages: list[dict],
    sampling: Sampling,
    response_format: dict | None = None,
    top_logprobs: int | None = None,
) -> dict:
    """What the cache is keyed by: endpoint, model, every sampling parameter, the exact messages."""
    return chat_request_key(
        endpoint.cache_name, endpoint.model, messages, sampling, response_format, top_logprobs
    )


def chat_request_key(
    endpoint_name: str,
    model: str,
    messages: list[dict],
    sampling: Sampling,
    response_format: dict | None = None,
    top_logprobs: int | None = None,
) -> dict:
    """The cache key of a chat request, from the endpoint's stable name (no port of a local server).

    ``response_format`` is in the key only when the request asks for one, so
    the keys of plain requests are the same as before the field existed. A
    request asking for the log-probabilities of its reply's tokens
    (``top_logprobs`` candidates per token) is of kind ``chat_logprobs``,
    whose reply keeps them.
    """
    key = {
        "kind": "chat" if top_logprobs is None else "chat_logprobs",
        "endpoint": endpoint_name,
        "model": model,
        "sampling": asdict(sampling),
        "messages": messages,
    }
    if response_format is not None:
        key["response_format"] = response_format
    if top_logprobs is not None:
        key["top_logprobs"] = top_logprobs
    return key


# The most candidates per token a request may ask log-probabilities for (the protocol's limit).
MAX_TOP_LOGPROBS = 20


def _chat_logprobs(document: dict, limit: int) -> list | None:
    """``choices[0].logprobs.content`` as ``[[token, [[candidate, logprob], ...]], ...]``, or None.

    None when the server gives none or gives them in another form (they are
    then not used: a verdict is read from the reply's text alone).
    """
    try:
        content = document["choices"][0]["logprobs"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(content, list):
        return None
    tokens = []
    for entry in content:
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            return None
        candidates = entry.get("top_logprobs")
        if not isinstance(candidates, list):
            return None
        kept = []
        for candidate in candidates[:limit]:
            if not isinstance(candidate, dict):
                return None
            token, value = candidate.get("token"), candidate.get("logprob")
            if not isinstance(token, str) or isinstance(value, bool) or not isinstance(value, int | float):
                return None
            if not math.isfinite(value) or value > 0:
                return None
            # Below -1e4 a probability is 0 in every float; kept within the cache's number bounds.
            kept.append([token, max(float(value), -1e4)])
        tokens.append([entry["token"], kept])
    return tokens


def _check_messages(messages: object) -> list[dict]:
    if not isinstance(messages, list) or not messages:
        raise LlmError("messages must be a non-empty list of {role, content}")
    for message in messages:
        if not (
            isinstance(message, dict)
            and isinstance(message.get("role"), str)
            and isinstance(message.get("content"), str)
        ):
            raise LlmError("every message must be a {role: text, content: text} mapping")
    return messages


def chat(
    endpoint: Endpoint,
    messages: list[dict],
    sampling: Sampling,
    cache: ResponseCache | None,
    environment: Mapping[str, str] = os.environ,
    sleep: Callable[[float], None] | None = None,
    response_format: dict | None = None,
    retries: RetryPolicy | None = None,
    top_logprobs: int | None = None,
) -> Completion:
    """The model's reply to ``messages``, from the cache when it holds exactly this request.

    ``response_format`` (the protocol's standard field, e.g. a ``json_schema``)
    asks for a structured reply; a server that refuses the field raises
    :class:`ResponseFormatRefused`, so the caller can ask again in plain text.
    ``top_logprobs`` asks for the log-probabilities of that many candidates
    at every generated token (the protocol's ``logprobs``/``top_logprobs``);
    the reply keeps them, or None when the server gives none.
    """
    if top_logprobs is not None and (
        isinstance(top_logprobs, bool)
        or not isinstance(top_logprobs, int)
        or not 1 <= top_logprobs <= MAX_TOP_LOGPROBS
    ):
        raise ValueError(f"top_logprobs must be a whole number from 1 to {MAX_TOP_LOGPROBS}")
    request = chat_request(endpoint, _check_messages(messages), sampling, response_format, top_logprobs)
    stored = cache.get(request) if cache is not None else None
    if stored is not None:
        return Completion(**{**stored, "cached": True})
    body = {
        "model": endpoint.model,
        "messages": messages,
        "temperature": sampling.temperature,
        "max_tokens": sampling.max_tokens,
        "seed": sampling.seed,
    }
    if response_format is not None:
        body["response_format"] = response_format
    if top_logprobs is not None:
        body["logprobs"] = True
        body["top_logprobs"] = top_logprobs
    try:
        reply = post_json(endpoint, "/chat/completions", body, environment, sleep, retries=retries)
    except LlmError as error:
        refused = any(f"HTTP {status} " in str(error) for status in (400, 422, 501))
        if response_format is not None and refused and any(w in str(error) for w in _RESPONSE_FORMAT_WORDS):
            raise ResponseFormatRefused(str(error)) from None
        raise
    shown = shown_url(endpoint.base_url)
    try:
        text = reply.document["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise LlmError(f"{shown}: the reply has no choices[0].message.content") from None
    if not isinstance(text, str):
        raise LlmError(f"{shown}: choices[0].message.content is {type(text).__name__}, not text")
    prompt_tokens, completion_tokens = _usage(reply.document, shown)
    logprobs = None if top_logprobs is None else _chat_logprobs(reply.document, top_logprobs)
    completion = Completion(
        text, prompt_tokens, completion_tokens, round(reply.seconds, 3), cached=False, top_logprobs=logprobs
    )
    stored = asdict(completion)
    del stored["cached"], stored["structured"]
    if top_logprobs is None:
        del stored["top_logprobs"]
    _checked(request["kind"], stored, shown)
    if cache is not None:
        cache.put(request, stored)
    return completion


def chat_many(
    endpoint: Endpoint,
    conversations: Sequence[list[dict]],
    sampling: Sampling,
    cache: ResponseCache | None,
    progress: Callable[[str], object] | None = None,
    environment: Mapping[str, str] = os.environ,
    response_format: dict | None = None,
    top_logprobs: int | None = None,
) -> list[Completion]:
    """Replies in input order, at most ``endpoint.concurrency`` requests in flight.

    A progress line (answers done, tokens, time left) goes to ``progress``
    (default: this module's logger) at most every few seconds and at the end.
    """
    report = progress or logger.info
    total = len(conversations)
    lock = threading.Lock()
    state = {"done": 0, "tokens": 0, "last": time.monotonic()}
    started = state["last"]

    def one(messages: list[dict]) -> Completion:
        completion = chat(
            endpoint,
            messages,
            sampling,
            cache,
            environment,
            response_format=response_format,
            top_logprobs=top_logprobs,
        )
        with lock:
            state["done"] += 1
            state["tokens"] += completion.prompt_tokens + completion.completion_tokens
            now = time.monotonic()
            if state["done"] == total or now - state["last"] >= PROGRESS_EVERY_SECONDS:
                state["last"] = now
                report(progress_text(state["done"], total, state["tokens"], now - started))
        return completion

    with ThreadPoolExecutor(max_workers=endpoint.concurrency) as pool:
        return list(pool.map(one, conversations))


def progress_text(done: int, total: int, tokens: int, seconds: float) -> str:
    """``answers: 12/40, 5,310 tokens, about 1 min 05 s left``."""
    left = seconds / done * (total - done) if done else 0.0
    remaining = "done" if done >= total else f"about {format_duration(left)} left"
    return f"answers: {done:,}/{total:,}, {tokens:,} tokens, {remaining}"


def continuation_request(endpoint: Endpoint, prefix: str, continuation: str) -> dict:
    return {
        "kind": "continuation_logprobs",
        "endpoint": endpoint.cache_name,
        "model": endpoint.model,
        "prefix": prefix,
        "continuation": continuation,
    }


def continuation_logprobs(
    endpoint: Endpoint,
    prefix: str,
    continuation: str,
    cache: ResponseCache | None,
    environment: Mapping[str, str] = os.environ,
) -> tuple[float, ...] | None:
    """The log-probability of each token of ``continuation`` after ``prefix``, or None.

    Asks ``/completions`` to echo the prompt ``prefix + continuation`` with
    ``logprobs`` (llama-cpp-python's server does, with its default
    ``logits_all=True``; vLLM does; chat-only APIs do not). The tokens kept are
    those that end past the prefix, so a token straddling the boundary counts
    for the continuation: start the continuation with a space to avoid one.
    None (with a warning) when the server gives no per-token log-probabilities.
    """
    request = continuation_request(endpoint, prefix, continuation)
    stored = cache.get(request) if cache is not None else None
    if stored is not None:
        values = stored.get("logprobs")
        return None if values is None else tuple(float(value) for value in values)
    body = {
        "model": endpoint.model,
        "prompt": prefix + continuation,
        "max_tokens": 1,
        "temperature": 0.0,
        "echo": True,
        "logprobs": 1,
        "seed": 0,
    }
    shown = shown_url(endpoint.base_url)
    try:
        reply = post_json(endpoint, "/completions", body, environment)
    except LlmError as error:
        if error.status not in REFUSED_STATUS:
            raise
        # The server refuses the request's fields: no answer this time, and nothing is stored.
        logger.warning("%s", escape_controls(f"{shown} gives no echoed log-probabilities: {error}"))
        return None
    values = _continuation_values(reply.document, len(prefix), len(prefix) + len(continuation))
    if values is None:
        logger.warning("%s returned no per-token log-probabilities for the prompt", shown)
    stored = _checked("continuation_logprobs", {"logprobs": None if values is None else list(values)}, shown)
    if cache is not None:
        cache.put(request, stored)
    return values


def _continuation_values(document: dict, prefix_characters: int, end: int) -> tuple[float, ...] | None:
    """Log-probabilities of the echoed tokens between the prefix and ``end`` (not the generated one)."""
    try:
        logprobs = document["choices"][0]["logprobs"]
        tokens, offsets, values = logprobs["tokens"], logprobs["text_offset"], logprobs["token_logprobs"]
    except (KeyError, IndexError, TypeError):
        return None
    if not (isinstance(tokens, list) and isinstance(offsets, list) and isinstance(values, list)):
        return None
    kept = []
    for token, offset, value in zip(tokens, offsets, values, strict=False):
        if not isinstance(offset, int) or not isinstance(token, str):
            return None
        if offset + len(token) > prefix_characters and offset < end:
            if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
                return None
            kept.append(float(value))
    return tuple(kept) if kept else None


@dataclass(frozen=True)
class TextCompletion:
    """A raw continuation of a prompt, with the log-probability of each generated token.

    ``finished`` is true when the server stopped at a stop sequence or the end
    of text rather than at ``max_tokens``. ``logprobs`` is None when the
    server gives none.
    """

    text: str
    tokens: tuple[str, ...]
    logprobs: tuple[float, ...] | None
    finished: bool


def completion_request(endpoint: Endpoint, prompt: str, sampling: Sampling, stop: Sequence[str]) -> dict:
    return {
        "kind": "completion",
        "endpoint": endpoint.cache_name,
        "model": endpoint.model,
        "sampling": asdict(sampling),
        "stop": list(stop),
        "prompt": prompt,
    }


def complete_text(
    endpoint: Endpoint,
    prompt: str,
    sampling: Sampling,
    cache: ResponseCache | None,
    stop: Sequence[str] = ("\n",),
    environment: Mapping[str, str] = os.environ,
) -> TextCompletion:
    """Continue ``prompt`` as plain text (``/completions``, no chat template): the model from memory.

    Asks for the log-probability of each generated token (``logprobs``), so
    the continuation's likelihood can be compared with the trigram model's.
    """
    request = completion_request(endpoint, prompt, sampling, stop)
    stored = cache.get(request) if cache is not None else None
    shown = shown_url(endpoint.base_url)
    if stored is None:
        body = {
            "model": endpoint.model,
            "prompt": prompt,
            "max_tokens": sampling.max_tokens,
            "temperature": sampling.temperature,
            "seed": sampling.seed,
            "stop": list(stop),
            "logprobs": 1,
        }
        fallback = False
        try:
            reply = post_json(endpoint, "/completions", body, environment)
        except LlmError as error:
            # A server that refuses logprobs (llama.cpp without logits_all, say) still completes.
            if error.status not in REFUSED_STATUS:
                raise
            logger.warning("%s", escape_controls(f"{shown} refuses logprobs ({error}); asking without"))
            del body["logprobs"]
            reply = post_json(endpoint, "/completions", body, environment)
            fallback = True
        stored = _checked("completion", _completion_reply(reply.document, shown), shown)
        # A reply to another request (without logprobs) is used once, never stored under this one's key.
        if cache is not None and not fallback:
            cache.put(request, stored)
    values = stored.get("logprobs")
    return TextCompletion(
        text=stored["text"],
        tokens=tuple(stored["tokens"]),
        logprobs=None if values is None else tuple(float(value) for value in values),
        finished=bool(stored["finished"]),
    )


def _completion_reply(document: dict, shown: str) -> dict:
    """The cached form of a ``/completions`` reply: text, generated tokens' log-probabilities, finished."""
    try:
        choice = document["choices"][0]
        text = choice["text"]
    except (KeyError, IndexError, TypeError):
        raise LlmError(f"{shown}: the reply has no choices[0].text") from None
    if not isinstance(text, str):
        raise LlmError(f"{shown}: choices[0].text is not text")
    values, tokens = None, []
    logprobs = choice.get("logprobs")
    if isinstance(logprobs, dict) and isinstance(logprobs.get("token_logprobs"), list):
        candidates, names = logprobs["token_logprobs"], logprobs.get("tokens")
        if all(
            isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
            for value in candidates
        ):
            values = [float(value) for value in candidates]
        if isinstance(names, list) and all(isinstance(name, str) for name in names):
            tokens = names
    if values is None:
        logger.warning("%s returned no per-token log-probabilities for the completion", shown)
    finished = choice.get("finish_reason") != "length"
    return {"text": text, "tokens": tokens, "logprobs": values, "finished": finished}
