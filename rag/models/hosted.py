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

The request goes through the one HTTP client of :mod:`rag.models.client`
(its retries, deadline, proxy rule, redaction and reply checks), so every call
to a model is made the same way: this module only reads its configuration from
the environment and turns the client's errors into :class:`HostedModelError`.
The default of ``RAG_LLM_TIMEOUT`` is the ``llm`` kind's ``timeout``
(rag/kinds.py), the same as the pipeline's entries.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rag.kinds import GENERATOR_KINDS
from rag.models.client import MAX_REPLY_BYTES, Endpoint, LlmError, RetryPolicy, Sampling, chat, is_loopback
from rag.models.redaction import Redactor, shown_url, url_secrets

if TYPE_CHECKING:
    from rag.models.gate import Gate, ModelEntry

BASE_URL_VARIABLE = "RAG_LLM_BASE_URL"
API_KEY_VARIABLE = "RAG_LLM_API_KEY"
MODEL_VARIABLE = "RAG_LLM_MODEL"
TIMEOUT_VARIABLE = "RAG_LLM_TIMEOUT"

DEFAULT_MAX_REPLY_BYTES = MAX_REPLY_BYTES
# The pipeline's llm entries time out after this many seconds by default; so does rag ask.
DEFAULT_TIMEOUT_SECONDS = float(GENERATOR_KINDS["llm"].parameters["timeout"].default)
# Temperature 0 so that reruns are reproducible; room for a paragraph with citations.
SAMPLING = Sampling(temperature=0.0, max_tokens=512, seed=0)
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
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    max_retries: int = 3
    backoff_seconds: float = 1.0
    max_wait_seconds: float = 60.0
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES

    def __post_init__(self) -> None:
        shown = shown_url(self.base_url) if isinstance(self.base_url, str) else repr(self.base_url)
        parsed = urllib.parse.urlsplit(self.base_url)
        if parsed.scheme not in {"http", "https"} or not parsed.hostname:
            raise ValueError(f"base URL {shown!r} is not an http(s) URL")
        if parsed.username or parsed.password:
            raise ValueError("base URL must not carry credentials; put the key in " + API_KEY_VARIABLE)
        if parsed.query:
            raise ValueError("base URL must not carry a query; put the key in " + API_KEY_VARIABLE)
        if parsed.scheme == "http" and not is_loopback(parsed.hostname):
            raise ValueError(
                f"base URL {shown!r} uses plain http to a non-loopback host, which would send "
                "the key unencrypted; use https, or a loopback address (localhost, 127.0.0.1)"
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
        try:
            self.client_endpoint  # noqa: B018 (the client's own checks of the same values)
            self.retries  # noqa: B018
        except ValueError as error:
            raise ValueError(self.redact(str(error))) from None

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
    def client_endpoint(self) -> Endpoint:
        """The endpoint as the one HTTP client takes it; the key is read from API_KEY_VARIABLE."""
        return Endpoint(
            self.base_url,
            self.model,
            key_variable=API_KEY_VARIABLE,
            timeout_seconds=self.timeout_seconds,
            max_reply_bytes=self.max_reply_bytes,
        )

    @property
    def retries(self) -> RetryPolicy:
        return RetryPolicy(self.max_retries, self.backoff_seconds, self.max_wait_seconds)

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


def complete(
    prompt_text: str,
    config: HostedConfig,
    sleep: Callable[[float], None] = time.sleep,
    gate: Gate | None = None,
) -> str:
    """Send the prompt and return the model's reply text, through :func:`rag.models.client.chat`.

    429 and 5xx replies, timeouts, refused connections and replies cut short
    are retried up to ``max_retries`` times, waiting ``backoff_seconds``
    doubled on each retry or the server's Retry-After if that is longer, never
    more than ``max_wait_seconds``. ``timeout_seconds`` bounds the whole call:
    each attempt gets what is left of it, and a retry whose wait would reach
    the deadline is not made (the error says so). Every failure raises
    :class:`HostedModelError` in one line, without the key. The request goes
    where ``gate`` (rag.models.gate) routes it; without one, only to loopback.
    """
    if not isinstance(prompt_text, str) or not prompt_text.strip():
        raise ValueError("the prompt text is empty")
    messages = [{"role": "user", "content": prompt_text}]
    try:
        reply = chat(
            dataclasses.replace(config.client_endpoint, gate=gate),
            messages,
            SAMPLING,
            None,
            {API_KEY_VARIABLE: config.api_key},
            sleep,
            retries=config.retries,
        )
    except LlmError as error:
        # Raised outside the except block's chain, so no chained exception can carry the request.
        message = config.redact(str(error))
    else:
        return reply.text
    raise HostedModelError(message)


def hosted_entry(config: HostedConfig) -> ModelEntry:
    """The hosted endpoint as the gate sees it: an entry named ``hosted`` that may receive public text."""
    from rag.models.gate import ModelEntry

    return ModelEntry("hosted", "generator", config.base_url, frozenset({"public"}))


def hosted_generator(
    config: HostedConfig,
    sleep: Callable[[float], None] = time.sleep,
    gate_of: Callable[[object], Gate] | None = None,
) -> Callable[[object], str]:
    """The hosted model as a prompt-to-text function, interchangeable with the extractive one.

    ``gate_of`` gives each prompt's gate (rag.models.gate), which admits its sources first.
    """

    def generate(prompt) -> str:  # a rag.answering.prompts.Prompt
        gate = None if gate_of is None else gate_of(prompt)
        return complete(prompt.text, config, sleep=sleep, gate=gate)

    return generate
