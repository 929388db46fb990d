"""A keyed file store of language-model requests and replies: never pay twice, never serve a bad reply.

A reply from a model costs time (and, from a hosted API, money) and is not
guaranteed to be the same tomorrow. Every request the chat client makes is
therefore kept here with its reply, one JSON file per request, named by the
sha256 of the canonical JSON of the request: endpoint, model, every sampling
parameter, the exact messages (or prompt) and the request kind. A re-run, or
the reproduction check on another machine, reads the file instead of asking
the model; the committed entries let a fresh clone rebuild the tables with no
model at all.

Why each rule:

* **Only a well-formed reply is stored.** :meth:`ResponseCache.put` refuses
  (``ValueError``) a reply that does not fit its kind's schema
  (:data:`REPLY_FIELDS`), or holds a number that is not finite or beyond
  :data:`MAX_NUMBER`, a token count beyond :data:`MAX_TOKEN_COUNT`, a lone
  surrogate, nesting deeper than :data:`MAX_DEPTH`, or more than
  :data:`MAX_ENTRY_BYTES` of JSON. The client checks a reply with the same
  function (:func:`reply_problem`) before using it, and stores only complete,
  successful replies: never an error, a fallback or a partial one.
* **An entry is checked on every read.** Its file must be a regular file
  (no symbolic link, fifo or folder; opened with ``O_NOFOLLOW``) of at most
  :data:`MAX_ENTRY_BYTES`, hold valid UTF-8 JSON with exactly ``request``,
  ``reply`` and ``sha256``, the stored request must be the one asked for, the
  reply must pass the checks above, and ``sha256`` must be the digest of the
  canonical JSON of request and reply (:func:`entry_digest`), so a
  hand-edited or damaged entry is caught. An entry that fails any check is a
  miss: it is never served, the request is asked again (and the entry
  replaced), and one warning line names the file and the reason, once per
  file and run. Entries written before the digest existed are sealed once by
  ``python -m rag.models.response_cache seal FOLDER`` (every check but the
  digest, then the digest added); unsealed, they are misses like any other.
* **A cache that cannot be written never loses the reply.** A read-only or
  full folder gives one warning per run; the reply is returned, kept in memory
  for the rest of the run, and the run goes on.
* **Files follow the umask**, like every other output: an entry is created
  with mode 0666 less the umask, written to a temporary name in the same
  folder, fsynced and renamed, so a crash leaves the old entry or the new one.

The request dict the client passes holds no key and no header, and ``put``
refuses one that looks as if it did.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import math
import os
import secrets
import stat
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from rag.models.redaction import escape_controls

logger = logging.getLogger(__name__)

_FORBIDDEN_FIELDS = frozenset({"authorization", "headers", "api_key", "key", "token"})
ENTRY_FIELDS = ("reply", "request", "sha256")
# Bounds of what a stored entry (and a reply the client uses) may hold.
MAX_ENTRY_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 32
MAX_NUMBER = 1e15
MAX_TOKEN_COUNT = 10**9
MAX_SECONDS = 10**6

# The committed cache the pipeline reads and adds to (workflow/rules/common.smk's LLM_CACHE).
COMMITTED_CACHE = "resources/llm_cache"

# The reply fields of each request kind the client makes, and what each holds.
REPLY_FIELDS: dict[str, dict[str, str]] = {
    "chat": {"text": "text", "prompt_tokens": "count", "completion_tokens": "count", "seconds": "seconds"},
    # A chat reply with the log-probabilities of its tokens' top candidates (rag.models.client.chat).
    "chat_logprobs": {
        "text": "text",
        "prompt_tokens": "count",
        "completion_tokens": "count",
        "seconds": "seconds",
        "top_logprobs": "candidates?",
    },
    "completion": {"text": "text", "tokens": "texts", "logprobs": "numbers?", "finished": "flag"},
    "continuation_logprobs": {"logprobs": "numbers?"},
}


class UnusableValue(ValueError):
    """A value that must not be stored or served; the message says which part and why."""


def canonical_json(value: object) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the same request always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def request_digest(request: dict) -> str:
    """The cache key of a request: sha256 of its canonical JSON."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


def entry_digest(request: Mapping, reply: Mapping) -> str:
    """The integrity digest of an entry: sha256 of the canonical JSON of its request and reply."""
    return hashlib.sha256(canonical_json({"reply": reply, "request": request}).encode("utf-8")).hexdigest()


def value_problem(value: object, where: str = "value", max_depth: int = MAX_DEPTH) -> str | None:
    """Why a decoded JSON value cannot be kept: too deep, a bad number or a lone surrogate; else None.

    Iterative, so a value nested 200,000 deep is refused without recursion.
    """
    pending = [(value, where, 0)]
    while pending:
        item, path, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth >= max_depth:
                return f"{path} is nested deeper than {max_depth} levels"
            if isinstance(item, dict):
                for name, inner in item.items():
                    if not isinstance(name, str):
                        return f"{path} has a key that is not text"
                    problem = _text_problem(name, f"{path} key")
                    if problem:
                        return problem
                    pending.append((inner, f"{path}.{name[:40]}", depth + 1))
            else:
                pending.extend((inner, f"{path}[{index}]", depth + 1) for index, inner in enumerate(item))
        elif isinstance(item, str):
            problem = _text_problem(item, path)
            if problem:
                return problem
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int | float):
            if not math.isfinite(item) or abs(item) > MAX_NUMBER:
                return f"{path} holds the number {_short_number(item)}, not finite or beyond {MAX_NUMBER:g}"
        else:
            return f"{path} holds a {type(item).__name__}, not a JSON value"
    return None


def _short_number(value: int | float) -> str:
    if isinstance(value, int) and value.bit_length() > 64:
        return f"of {len(str(abs(value)))} digits"
    return repr(value)


def _text_problem(text: str, where: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return f"{where} holds a lone surrogate, not valid UTF-8"
    return None


def reply_problem(kind: object, reply: object) -> str | None:
    """Why ``reply`` is not a well-formed reply of a ``kind`` request; None when it is.

    Kinds other than those of :data:`REPLY_FIELDS` get the generic checks only.
    """
    if not isinstance(reply, dict):
        return "the reply is not a mapping"
    problem = value_problem(reply, "reply")
    if problem:
        return problem
    fields = REPLY_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        return None
    if set(reply) != set(fields):
        return f"the reply's fields are {sorted(reply)}, not {sorted(fields)}"
    for name, expected in fields.items():
        if not _holds(reply[name], expected):
            return f"reply.{name} is not {_EXPECTED_WORDS[expected]}"
    return None


_EXPECTED_WORDS = {
    "text": "text",
    "texts": "a list of texts",
    "count": f"a whole number from 0 to {MAX_TOKEN_COUNT:,}",
    "seconds": f"a number of seconds from 0 to {MAX_SECONDS:,}",
    "numbers?": "null or a list of numbers",
    "flag": "true or false",
    "candidates?": "null or a list of [token, [[candidate, log-probability], ...]]",
}


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _holds(value: object, expected: str) -> bool:
    if expected == "text":
        return isinstance(value, str)
    if expected == "texts":
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    if expected == "count":
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKEN_COUNT
    if expected == "seconds":
        return _is_number(value) and 0 <= value <= MAX_SECONDS
    if expected == "numbers?":
        return value is None or (isinstance(value, list) and all(_is_number(item) for item in value))
    if expected == "flag":
        return isinstance(value, bool)
    if expected == "candidates?":
        return value is None or (
            isinstance(value, list) and all(_is_token_candidates(item) for item in value)
        )
    raise AssertionError(expected)


def _is_token_candidates(item: object) -> bool:
    """``[token, [[candidate, logprob], ...]]``: a generated token and its top candidates."""
    if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
        return False
    candidates = item[1]
    return isinstance(candidates, list) and all(
        isinstance(pair, list)
        and len(pair) == 2
        and isinstance(pair[0], str)
        and _is_number(pair[1])
        and pair[1] <= 0
        for pair in candidates
    )


def _check_request(request: dict) -> None:
    if not isinstance(request, dict):
        raise TypeError("a cached request must be a dict")
    forbidden = sorted(name for name in request if str(name).lower() in _FORBIDDEN_FIELDS)
    if forbidden:
        raise ValueError(f"a cached request must not carry credentials or headers: {forbidden}")


def _create_mode_file(path: Path) -> int:
    """A new file opened for writing with mode 0666 less the umask (the kernel applies it)."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so a crash leaves the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.parent / f".{path.name}.{secrets.token_hex(8)}.partial"
    handle = _create_mode_file(temporary)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def entry_text(request: dict, reply: dict) -> str:
    """An entry's file: request, reply and digest, sorted, one key a line, ASCII only."""
    entry = {"request": request, "reply": reply, "sha256": entry_digest(request, reply)}
    # ASCII only: control characters of a reply are stored as \u escapes, never raw.
    return json.dumps(entry, sort_keys=True, indent=1, ensure_ascii=True, allow_nan=False) + "\n"


def _reject_constant(name: str) -> object:
    raise UnusableValue(f"holds {name}, not a finite number")


def parse_json(data: bytes | str, max_depth: int = MAX_DEPTH) -> object:
    """Strict JSON: valid UTF-8, no NaN or Infinity, nesting bounded; UnusableValue otherwise."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise UnusableValue(f"is not valid UTF-8 (byte {error.start})") from None
    try:
        value = json.loads(data, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise UnusableValue(f"is not JSON ({error.msg} at position {error.pos})") from None
    except UnusableValue:
        raise
    except ValueError:
        raise UnusableValue("holds a number too long to read") from None
    except RecursionError:
        raise UnusableValue(f"is nested deeper than {max_depth} levels") from None
    problem = value_problem(value, "the value", max_depth)
    if problem:
        raise UnusableValue(problem)
    return value


def _read_regular_file(path: Path) -> bytes | None:
    """The bytes of a regular file of at most MAX_ENTRY_BYTES; None when absent; UnusableValue otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        handle = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UnusableValue("is a symbolic link, not a regular file") from None
        raise UnusableValue(f"cannot be opened ({error.strerror or error})") from None
    try:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode):
            raise UnusableValue("is not a regular file")
        if status.st_size > MAX_ENTRY_BYTES:
            raise UnusableValue(f"is larger than {MAX_ENTRY_BYTES:,} bytes")
        with os.fdopen(handle, "rb", closefd=False) as stream:
            data = stream.read(MAX_ENTRY_BYTES + 1)
    except OSError as error:
        raise UnusableValue(f"cannot be read ({error.strerror or error})") from None
    finally:
        os.close(handle)
    if len(data) > MAX_ENTRY_BYTES:
        raise UnusableValue(f"is larger than {MAX_ENTRY_BYTES:,} bytes")
    return data


def check_entry(stored: object, request: Mapping | None = None, sealed: bool = True) -> dict:
    """The reply of a decoded entry, or UnusableValue saying what is wrong with it.

    ``request``: the request it must hold (None: any). ``sealed``: whether
    the digest must be there (False only when sealing older entries).
    """
    if not isinstance(stored, dict):
        raise UnusableValue("is not a JSON object")
    wanted = set(ENTRY_FIELDS) if sealed else {"reply", "request"}
    if set(stored) - {"sha256"} != {"reply", "request"} or (sealed and set(stored) != wanted):
        raise UnusableValue(f"holds the fields {sorted(stored)[:6]}, not {sorted(wanted)}")
    if not isinstance(stored["request"], dict):
        raise UnusableValue("holds a request that is not a mapping")
    if request is not None and canonical_json(stored["request"]) != canonical_json(request):
        raise UnusableValue("holds another request")
    problem = reply_problem(stored["request"].get("kind"), stored["reply"])
    if problem:
        raise UnusableValue(problem)
    if sealed and stored["sha256"] != entry_digest(stored["request"], stored["reply"]):
        raise UnusableValue("does not match its sha256 (edited or damaged)")
    return stored["reply"]


class ResponseCache:
    """One JSON file per request under ``folder``: ``{"request": ..., "reply": ..., "sha256": ...}``."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._lock = threading.Lock()
        self._warned: set[str] = set()
        self._unwritten: dict[str, dict] = {}
        self._write_failed = False

    def path(self, request: dict) -> Path:
        return self.folder / f"{request_digest(request)}.json"

    def _warn_once(self, name: str, message: str) -> None:
        with self._lock:
            if name in self._warned:
                return
            self._warned.add(name)
        logger.warning("%s", escape_controls(message))

    def get(self, request: dict) -> dict | None:
        """The stored reply of exactly this request, or None (a miss; one warning for a bad entry)."""
        _check_request(request)
        path = self.path(request)
        with self._lock:
            kept = self._unwritten.get(path.name)
        if kept is not None:
            return kept
        try:
            data = _read_regular_file(path)
            if data is None:
                return None
            return check_entry(parse_json(data), request)
        except UnusableValue as error:
            self._warn_once(path.name, f"response cache entry {path} {error}; not used, asking again")
            return None

    def put(self, request: dict, reply: dict) -> None:
        """Store a well-formed reply; ValueError for a malformed one; a failed write warns once."""
        _check_request(request)
        if not isinstance(reply, dict):
            raise TypeError("a cached reply must be a dict")
        problem = value_problem(request, "request") or reply_problem(request.get("kind"), reply)
        if problem:
            raise UnusableValue(f"not stored in the response cache: {problem}")
        text = entry_text(request, reply)
        if len(text) > MAX_ENTRY_BYTES:
            raise UnusableValue(f"not stored in the response cache: larger than {MAX_ENTRY_BYTES:,} bytes")
        path = self.path(request)
        try:
            write_atomically(path, text)
        except OSError as error:
            with self._lock:
                self._unwritten[path.name] = reply
                first = not self._write_failed
                self._write_failed = True
            if first:
                logger.warning(
                    "%s",
                    escape_controls(
                        f"response cache {self.folder} cannot be written ({error.strerror or error}); "
                        "replies are kept for this run only and the run goes on"
                    ),
                )
            return
        with self._lock:
            self._unwritten.pop(path.name, None)


def holds_replies_of(folder: Path | str, endpoint: str) -> bool:
    """Whether ``folder`` holds at least one usable entry asked of ``endpoint`` (a cache identity).

    A bundled model that is not installed is still planned when its replies
    are here: its jobs read them, and a prompt not here fails naming the
    extra (rag.answering.config_checks.prune_unavailable_generators).
    """
    folder = Path(folder)
    if not folder.is_dir():
        return False
    needle = json.dumps(endpoint)
    for path in sorted(folder.glob("*.json")):
        try:
            data = _read_regular_file(path)
        except UnusableValue:
            continue
        if data is None or needle.encode() not in data:
            continue
        try:
            stored = parse_json(data)
            check_entry(stored)
        except (UnusableValue, ValueError):
            continue
        if stored["request"].get("endpoint") == endpoint:
            return True
    return False


def seal(folder: Path) -> tuple[int, int, list[str]]:
    """Add the digest to every entry of ``folder`` written before it existed.

    An entry is sealed only when its file name is its request's digest and
    it passes every other check; its request and reply are kept as they are,
    so its file name (the request key) does not change. Returns (sealed,
    already sealed, problems).
    """
    sealed, already, problems = 0, 0, []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            data = _read_regular_file(path)
            stored = parse_json(data or b"")
            if isinstance(stored, dict) and "sha256" in stored:
                check_entry(stored)
                already += 1
                continue
            reply = check_entry(stored, sealed=False)
            if f"{request_digest(stored['request'])}.json" != path.name:
                raise UnusableValue("is not named by its request's digest")
        except UnusableValue as error:
            problems.append(f"{path.name} {error}")
            continue
        write_atomically(path, entry_text(stored["request"], reply))
        sealed += 1
    return sealed, already, problems


def main(arguments: list[str] | None = None) -> int:
    """``python -m rag.models.response_cache seal FOLDER``: add the digest to older entries."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("command", choices=["seal"])
    parser.add_argument("folder", type=Path)
    options = parser.parse_args(arguments)
    if not options.folder.is_dir():
        print(f"Error: {options.folder} is not a folder", file=sys.stderr)
        return 1
    sealed, already, problems = seal(options.folder)
    for problem in problems:
        print(escape_controls(f"not sealed: {problem}"), file=sys.stderr)
    print(f"{options.folder}: {sealed} entries sealed, {already} already sealed, {len(problems)} refused")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
