"""A generator backed by any OpenAI-compatible chat-completions endpoint.

Hosted services and local inference servers (vLLM, llama.cpp, Ollama) accept
the same request: POST ``{base_url}/chat/completions`` with a model name and
messages. The prompt goes out exactly as assembled for the extractive path,
as a single user message, at temperature 0 so that reruns are reproducible,
and the reply goes through the same citation check.

Configuration comes from the environment so the key never lives in code,
configuration files or notebooks:

* ``RAG_LLM_BASE_URL``: e.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:8000/v1``
* ``RAG_LLM_API_KEY``: sent as ``Authorization: Bearer ...`` (local servers accept any value)
* ``RAG_LLM_MODEL``: the model name the endpoint expects
* ``RAG_LLM_TIMEOUT`` (optional): seconds for the whole call, default 60: every
  attempt, its reply and the waits between retries together, not a socket
  timeout; a retry that cannot start before the deadline is not made

The key is kept out of reprs, exception messages (including any chained
exception) and log records. Every message this module emits passes through one
:class:`Redactor`, which removes the key, any piece of it of 8 or more
characters, its base64 and URL-encoded forms, and credentials in the base URL
(user-info and query values): some servers echo request headers or quote the
key in a 401 body, and a quote cut short must not leave a prefix behind, so
redaction runs before any cut. Plain ``http`` is refused for hosts other than
the loopback interface, so the key is not sent in clear text, and redirects are
not followed, so it is not forwarded to another host. A reply larger than
``max_reply_bytes`` is refused after reading at most that much, in pieces.
Only the standard library is used (:mod:`rag.bounded_http`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rag import bounded_http
from rag.models.client import LOOPBACK_HOSTS, RETRYABLE_STATUS, retry_after_seconds
from rag.models.redaction import Redactor, shown_url, url_secrets

BASE_URL_VARIABLE = "RAG_LLM_BASE_URL"
API_KEY_VARIABLE = "RAG_LLM_API_KEY"
MODEL_VARIABLE = "RAG_LLM_MODEL"
TIMEOUT_VARIABLE = "RAG_LLM_TIMEOUT"

_QUOTED_REPLY_CHARACTERS = 300
DEFAULT_MAX_REPLY_BYTES = 8 * 1024 * 1024
_MAX_TIMEOUT_SECONDS = 24 * 3600.0
_MAX_ENVIRONMENT_CHARACTERS = 4096

logger = logging.getLogger(__name__)


class HostedModelError(RuntimeError):
    """The endpoint failed or replied with something that is not a chat completion."""


@dataclass(frozen=True)
class HostedConfig:
    """Where and how to reach the model. ``api_key`` never appears in the repr."""

    base_url: str
    model: str
    api_key: str = field(repr=False)
    timeout_seconds: float = 60.0
    max_retries: int = 3
    backoff_seconds: float = 1.0
    max_wait_seconds: float = 60.0
    allow_insecure_http: bool = False
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES

    def __post_init__(self) -> None:
        shown = shown_url(self.base_url) if isinstance(self.base_url, str) else repr(self.base_url)
        parsed = urllib.parse.urlsplit(self.base_url)
        if parsed.scheme not in {"http", "https"} or not parsed.hostname:
            raise ValueError(f"base URL {shown!r} is not an http(s) URL")
        if parsed.username or parsed.password:
            raise ValueError("base URL must not carry credentials; put the key in " + API_KEY_VARIABLE)
        if parsed.scheme == "http" and parsed.hostname not in LOOPBACK_HOSTS and not self.allow_insecure_http:
            raise ValueError(
                f"base URL {shown!r} uses plain http to a non-loopback host, which would send "
                "the key unencrypted; use https (or allow_insecure_http=True on a trusted network)"
            )
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError("model name is empty")
        if not isinstance(self.api_key, str) or not self.api_key:
            raise ValueError(f"API key is empty; set {API_KEY_VARIABLE}")
        if not self.api_key.isascii() or not self.api_key.isprintable() or " " in self.api_key.strip():
            raise ValueError(
                f"API key ({API_KEY_VARIABLE}) holds a character that cannot go in an HTTP header "
                "(non-ASCII, a control character or a space)"
            )
        if not self.model.isprintable():
            raise ValueError("model name holds a control character")
        for name in ("timeout_seconds", "backoff_seconds", "max_wait_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number of seconds, got {value!r}")
        if not 0 < self.timeout_seconds <= _MAX_TIMEOUT_SECONDS:
            raise ValueError(
                f"timeout_seconds must be positive and at most {_MAX_TIMEOUT_SECONDS:g}, "
                f"got {self.timeout_seconds!r}"
            )
        if (
            isinstance(self.max_retries, bool)
            or not isinstance(self.max_retries, int)
            or self.max_retries < 0
        ):
            raise ValueError(f"max_retries must be an integer of at least 0, got {self.max_retries!r}")
        if self.backoff_seconds < 0 or self.max_wait_seconds < 0:
            raise ValueError("backoff_seconds and max_wait_seconds must not be negative")
        if (
            isinstance(self.max_reply_bytes, bool)
            or not isinstance(self.max_reply_bytes, int)
            or self.max_reply_bytes <= 0
        ):
            raise ValueError(f"max_reply_bytes must be a positive integer, got {self.max_reply_bytes!r}")

    def __repr__(self) -> str:
        # The base URL may carry a credential in its query; the key never appears.
        return (
            f"HostedConfig(base_url={shown_url(self.base_url)!r}, model={self.model!r}, "
            f"timeout_seconds={self.timeout_seconds!r}, max_retries={self.max_retries!r})"
        )

    @property
    def endpoint(self) -> str:
        parsed = urllib.parse.urlsplit(self.base_url)
        path = parsed.path.rstrip("/") + "/chat/completions"
        return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, path, parsed.query, ""))

    @property
    def shown_endpoint(self) -> str:
        return shown_url(self.endpoint)

    @property
    def redact(self) -> Redactor:
        """The one redaction step every message of this configuration passes through."""
        return Redactor([self.api_key, *url_secrets(self.base_url)])


def _environment_value(environment: Mapping[str, str], variable: str) -> str:
    value = environment.get(variable, "").strip()
    if not value:
        raise ValueError(f"environment variable {variable} is not set")
    if len(value) > _MAX_ENVIRONMENT_CHARACTERS:
        raise ValueError(
            f"environment variable {variable} is longer than {_MAX_ENVIRONMENT_CHARACTERS} characters"
        )
    if not value.isascii() or not value.isprintable():
        raise ValueError(
            f"environment variable {variable} holds a non-ASCII or control character; "
            "an HTTP header or URL cannot carry it"
        )
    return value


def config_from_environment(
    environment: Mapping[str, str] | None = None, **overrides: float | int | bool
) -> HostedConfig:
    """Read the endpoint, key and model from the environment variables above.

    ``overrides`` set the remaining :class:`HostedConfig` fields (retries,
    backoff). Every bad value raises ValueError naming its variable, in one
    line and without the value when it may be a secret.
    """
    environment = os.environ if environment is None else environment
    values = {
        variable: _environment_value(environment, variable)
        for variable in (BASE_URL_VARIABLE, API_KEY_VARIABLE, MODEL_VARIABLE)
    }
    timeout = environment.get(TIMEOUT_VARIABLE)
    if timeout is not None and "timeout_seconds" not in overrides:
        try:
            seconds = float(timeout)
        except ValueError:
            seconds = math.nan
        if not math.isfinite(seconds) or not 0 < seconds <= _MAX_TIMEOUT_SECONDS:
            raise ValueError(
                f"{TIMEOUT_VARIABLE}={timeout[:40]!r} is not a number of seconds above 0 and at most "
                f"{_MAX_TIMEOUT_SECONDS:g}"
            )
        overrides["timeout_seconds"] = seconds
    redact = Redactor([values[API_KEY_VARIABLE], *url_secrets(values[BASE_URL_VARIABLE])])
    try:
        return HostedConfig(
            base_url=values[BASE_URL_VARIABLE],
            api_key=values[API_KEY_VARIABLE],
            model=values[MODEL_VARIABLE],
            **overrides,
        )
    except ValueError as error:
        variable = MODEL_VARIABLE if "model" in str(error) else BASE_URL_VARIABLE
        if "API key" in str(error):
            variable = API_KEY_VARIABLE
        raise ValueError(redact(f"{variable}: {error}")) from None


def request_body(prompt_text: str, model: str) -> dict:
    """The chat-completions request: the whole prompt as one user message, temperature 0."""
    return {"model": model, "messages": [{"role": "user", "content": prompt_text}], "temperature": 0}


@dataclass(frozen=True)
class _Attempt:
    reply: str | None = None
    failure: str | None = None
    status: int | None = None
    retry_after: float | None = None
    retryable: bool = False


def _post(config: HostedConfig, payload: bytes, seconds: float) -> _Attempt:
    """One request, bounded in time and size; redirects are reported, never followed.

    Texts in the outcome are not yet redacted; :func:`complete` redacts every
    message before it is logged or raised (the reply quote too, before it is cut).
    ``seconds`` is what is left of the whole call's deadline.
    """
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "Authorization": f"Bearer {config.api_key}",
    }
    try:
        reply = bounded_http.request(
            "POST",
            config.endpoint,
            headers,
            payload,
            deadline_seconds=seconds,
            max_body_bytes=config.max_reply_bytes,
        )
    except bounded_http.DeadlineExceeded:
        return _Attempt(
            failure=f"no reply within {config.timeout_seconds:g} s (the whole call's deadline)",
            retryable=True,
        )
    except bounded_http.BodyTooLarge as error:
        return _Attempt(failure=f"reply refused: {error} (max_reply_bytes)")
    except bounded_http.TruncatedBody as error:
        return _Attempt(failure=f"reply cut short: {error}", retryable=True)
    except bounded_http.HttpFault as error:
        return _Attempt(failure=f"connection failed: {error}", retryable=True)
    text = reply.body.decode("utf-8", errors="replace")
    if 200 <= reply.status < 300:
        return _Attempt(reply=text, status=reply.status)
    quoted = config.redact(text)[:_QUOTED_REPLY_CHARACTERS]
    return _Attempt(
        failure=f"HTTP {reply.status} {reply.reason}: {quoted}",
        status=reply.status,
        retry_after=retry_after_seconds(reply.header("Retry-After")),
        retryable=reply.status in RETRYABLE_STATUS,
    )


def parse_completion(reply: str) -> str:
    """The text of the first choice of a chat-completions reply."""
    try:
        document = json.loads(reply)
    except json.JSONDecodeError as error:
        raise ValueError(f"reply is not valid JSON ({error.msg} at position {error.pos})") from None
    try:
        content = document["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ValueError("reply has no choices[0].message.content") from None
    if not isinstance(content, str):
        raise ValueError(f"choices[0].message.content is {type(content).__name__}, not text")
    return content


def complete(
    prompt_text: str,
    config: HostedConfig,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Send the prompt and return the model's reply text.

    429 and 5xx replies, timeouts and refused connections are retried up to
    ``max_retries`` times, waiting ``backoff_seconds`` doubled on each retry
    or the server's Retry-After if that is longer, never more than
    ``max_wait_seconds``. ``timeout_seconds`` bounds the whole call:
    each attempt gets what is left of it, and a retry whose wait would reach
    the deadline is not made (the error says so, naming the wait). Every
    failure raises :class:`HostedModelError`.
    """
    if not isinstance(prompt_text, str) or not prompt_text.strip():
        raise ValueError("the prompt text is empty")
    payload = json.dumps(request_body(prompt_text, config.model)).encode("utf-8")
    failure = "no attempt was made"
    deadline = time.monotonic() + config.timeout_seconds
    for attempt in range(config.max_retries + 1):
        outcome = _post(config, payload, max(deadline - time.monotonic(), 0.001))
        if outcome.reply is not None:
            try:
                # A model (or a proxy) may echo the key back: the answer is redacted like any message.
                return config.redact(parse_completion(outcome.reply))
            except ValueError as error:
                failure = f"{config.shown_endpoint} sent an unusable reply: {error}"
                break
        failure = f"{config.shown_endpoint} failed: {outcome.failure}"
        if not outcome.retryable or attempt == config.max_retries:
            break
        wait = min(
            max(config.backoff_seconds * 2**attempt, outcome.retry_after or 0.0), config.max_wait_seconds
        )
        left = deadline - time.monotonic()
        if wait >= left:
            asked = (
                "the server asks to wait"
                if outcome.retry_after and wait > config.backoff_seconds * 2**attempt
                else "a retry would wait"
            )
            failure += (
                f"; {asked} {wait:g} s, past the whole call's {config.timeout_seconds:g} s deadline "
                f"({TIMEOUT_VARIABLE}), so no retry was made"
            )
            break
        logger.warning(
            "%s; retry %d of %d in %.1f s",
            config.redact(failure),
            attempt + 1,
            config.max_retries,
            wait,
        )
        sleep(wait)
    # Raised outside any except block, so no chained exception can carry the request.
    raise HostedModelError(config.redact(f"{failure} (after {attempt + 1} attempt(s))"))


def hosted_generator(
    config: HostedConfig, sleep: Callable[[float], None] = time.sleep
) -> Callable[[object], str]:
    """The hosted model as a prompt-to-text function, interchangeable with the extractive one."""

    def generate(prompt) -> str:  # a rag.answering.prompts.Prompt
        return complete(prompt.text, config, sleep=sleep)

    return generate
