"""A keyed file store of language-model requests and replies: never pay twice.

A reply from a model costs time (and, from a hosted API, money) and is not
guaranteed to be the same tomorrow. Every request the chat client makes is
therefore kept here with its reply, one JSON file per request, named by the
sha256 of the canonical JSON of the request: endpoint base URL, model, every
sampling parameter, the exact messages (or prompt) and the request kind. A
re-run, or the reproduction check on another machine, reads the file instead
of asking the model; the committed entries let a fresh clone rebuild the
tables with no model at all.

The request dict the client passes holds no key and no header, and
:meth:`ResponseCache.put` refuses one that looks as if it did. Files are
written atomically (a temporary file in the same folder, fsync, rename, fsync
of the folder), so a crash leaves the old entry or the new one, never half of
one. A file that cannot be read, or whose stored request differs from the one
asked for, is a miss (with a warning), never a wrong reply.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

_FORBIDDEN_FIELDS = frozenset({"authorization", "headers", "api_key", "key", "token"})


def canonical_json(value: object) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the same request always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def request_digest(request: dict) -> str:
    """The cache key of a request: sha256 of its canonical JSON."""
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


def _check_request(request: dict) -> None:
    if not isinstance(request, dict):
        raise TypeError("a cached request must be a dict")
    forbidden = sorted(name for name in request if str(name).lower() in _FORBIDDEN_FIELDS)
    if forbidden:
        raise ValueError(f"a cached request must not carry credentials or headers: {forbidden}")


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so a crash leaves the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
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
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


class ResponseCache:
    """One JSON file per request under ``folder``: ``{"request": ..., "reply": ...}``."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def path(self, request: dict) -> Path:
        return self.folder / f"{request_digest(request)}.json"

    def get(self, request: dict) -> dict | None:
        """The stored reply of exactly this request, or None."""
        _check_request(request)
        path = self.path(request)
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            logger.warning("response cache entry %s is unreadable (%s); asking again", path.name, error)
            return None
        if (
            not isinstance(stored, dict)
            or canonical_json(stored.get("request")) != canonical_json(request)
            or not isinstance(stored.get("reply"), dict)
        ):
            logger.warning("response cache entry %s does not hold this request; asking again", path.name)
            return None
        return stored["reply"]

    def put(self, request: dict, reply: dict) -> None:
        _check_request(request)
        if not isinstance(reply, dict):
            raise TypeError("a cached reply must be a dict")
        # ASCII only: control characters of a reply are stored as \u escapes, never raw.
        text = json.dumps({"request": request, "reply": reply}, sort_keys=True, indent=1, ensure_ascii=True)
        write_atomically(self.path(request), text + "\n")
