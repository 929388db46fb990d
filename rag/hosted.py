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
* ``RAG_LLM_TIMEOUT`` (optional): seconds per request, default 60

The key is kept out of reprs, exception messages (including any chained
exception) and log records; server replies quoted in errors are scrubbed of
it, since some servers echo request headers. Plain ``http`` is refused for
hosts other than the loopback interface, so the key is not sent in clear text,
and redirects are not followed, so it is not forwarded to another host.
Only the standard library is used.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from rag.prompts import Prompt

BASE_URL_VARIABLE = "RAG_LLM_BASE_URL"
API_KEY_VARIABLE = "RAG_LLM_API_KEY"
MODEL_VARIABLE = "RAG_LLM_MODEL"
TIMEOUT_VARIABLE = "RAG_LLM_TIMEOUT"

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_QUOTED_REPLY_CHARACTERS = 300
_REDACTED = "[redacted]"

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

    def __post_init__(self) -> None:
        parsed = urllib.parse.urlsplit(self.base_url)
        if parsed.scheme not in {"http", "https"} or not parsed.hostname:
            raise ValueError(f"base URL {_redact(self.base_url, self.api_key)!r} is not an http(s) URL")
        if parsed.username or parsed.password:
            raise ValueError("base URL must not carry credentials; put the key in " + API_KEY_VARIABLE)
        if (
            parsed.scheme == "http"
            and parsed.hostname not in _LOOPBACK_HOSTS
            and not self.allow_insecure_http
        ):
            raise ValueError(
                f"base URL {self.base_url!r} uses plain http to a non-loopback host, which would send "
                "the key unencrypted; use https (or allow_insecure_http=True on a trusted network)"
            )
        if not self.model.strip():
            raise ValueError("model name is empty")
        if not self.api_key:
            raise ValueError(f"API key is empty; set {API_KEY_VARIABLE}")
        if any(character in self.api_key for character in "\r\n"):
            raise ValueError("API key contains a line break")
        if not self.timeout_seconds > 0:
            raise ValueError(f"timeout_seconds must be positive, got {self.timeout_seconds!r}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be at least 0, got {self.max_retries!r}")
        if self.backoff_seconds < 0 or self.max_wait_seconds < 0:
            raise ValueError("backoff_seconds and max_wait_seconds must not be negative")

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


def config_from_environment(
    environment: Mapping[str, str] | None = None, **overrides: float | int | bool
) -> HostedConfig:
    """Read the endpoint, key and model from the environment variables above.

    ``overrides`` set the remaining :class:`HostedConfig` fields (retries,
    backoff); a missing variable raises ValueError naming it.
    """
    environment = os.environ if environment is None else environment
    values: dict[str, str] = {}
    for variable in (BASE_URL_VARIABLE, API_KEY_VARIABLE, MODEL_VARIABLE):
        value = environment.get(variable, "").strip()
        if not value:
            raise ValueError(f"environment variable {variable} is not set")
        values[variable] = value
    timeout = environment.get(TIMEOUT_VARIABLE)
    if timeout is not None and "timeout_seconds" not in overrides:
        try:
            overrides["timeout_seconds"] = float(timeout)
        except ValueError:
            raise ValueError(f"{TIMEOUT_VARIABLE}={timeout!r} is not a number of seconds") from None
    return HostedConfig(
        base_url=values[BASE_URL_VARIABLE],
        api_key=values[API_KEY_VARIABLE],
        model=values[MODEL_VARIABLE],
        **overrides,
    )


def request_body(prompt_text: str, model: str) -> dict:
    """The chat-completions request: the whole prompt as one user message, temperature 0."""
    return {"model": model, "messages": [{"role": "user", "content": prompt_text}], "temperature": 0}


def _redact(text: str, secret: str) -> str:
    return text.replace(secret, _REDACTED) if secret else text


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


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """urllib would repeat the request, Authorization header included, at the new location."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: object,
        code: int,
        msg: str,
        headers: Mapping[str, str],
        newurl: str,
    ) -> None:
        return None  # urllib then raises the 3xx as an HTTPError


_OPENER = urllib.request.build_opener(_RefuseRedirects)


@dataclass(frozen=True)
class _Attempt:
    reply: str | None = None
    failure: str | None = None
    status: int | None = None
    retry_after: float | None = None
    retryable: bool = False


def _post(config: HostedConfig, payload: bytes) -> _Attempt:
    request = urllib.request.Request(
        config.endpoint,
        data=payload,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Authorization": f"Bearer {config.api_key}",
        },
    )
    try:
        with _OPENER.open(request, timeout=config.timeout_seconds) as response:
            return _Attempt(reply=response.read().decode("utf-8", errors="replace"), status=response.status)
    except urllib.error.HTTPError as error:
        try:
            body = error.read().decode("utf-8", errors="replace")[:_QUOTED_REPLY_CHARACTERS]
        except (OSError, http.client.HTTPException):
            body = "(unreadable body)"
        return _Attempt(
            failure=f"HTTP {error.code} {error.reason}: {body}",
            status=error.code,
            retry_after=retry_after_seconds(error.headers.get("Retry-After") if error.headers else None),
            retryable=error.code in RETRYABLE_STATUS,
        )
    except TimeoutError:
        return _Attempt(failure=f"no reply within {config.timeout_seconds} s", retryable=True)
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, TimeoutError):
            return _Attempt(failure=f"no reply within {config.timeout_seconds} s", retryable=True)
        return _Attempt(failure=f"connection failed: {reason}", retryable=True)
    except (OSError, http.client.HTTPException) as error:
        return _Attempt(failure=f"connection failed: {type(error).__name__}: {error}", retryable=True)


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
    ``max_wait_seconds``. Every failure raises :class:`HostedModelError`.
    """
    if not isinstance(prompt_text, str) or not prompt_text.strip():
        raise ValueError("the prompt text is empty")
    payload = json.dumps(request_body(prompt_text, config.model)).encode("utf-8")
    failure = "no attempt was made"
    for attempt in range(config.max_retries + 1):
        outcome = _post(config, payload)
        if outcome.reply is not None:
            try:
                return parse_completion(outcome.reply)
            except ValueError as error:
                failure = f"{config.endpoint} sent an unusable reply: {error}"
                break
        failure = f"{config.endpoint} failed: {outcome.failure}"
        if not outcome.retryable or attempt == config.max_retries:
            break
        wait = min(
            max(config.backoff_seconds * 2**attempt, outcome.retry_after or 0.0), config.max_wait_seconds
        )
        logger.warning(
            "%s; retry %d of %d in %.1f s",
            _redact(failure, config.api_key),
            attempt + 1,
            config.max_retries,
            wait,
        )
        sleep(wait)
    # Raised outside any except block, so no chained exception can carry the request.
    raise HostedModelError(f"{_redact(failure, config.api_key)} (after {attempt + 1} attempt(s))")


def hosted_generator(
    config: HostedConfig, sleep: Callable[[float], None] = time.sleep
) -> Callable[[Prompt], str]:
    """The hosted model as a prompt-to-text function, interchangeable with the extractive one."""

    def generate(prompt: Prompt) -> str:
        return complete(prompt.text, config, sleep=sleep)

    return generate
