"""Secrets out of every message: the one redaction step of the path to models.

A server may echo request headers or quote the key in a 401 body, and a quote
cut short must not leave a prefix behind, so redaction runs before any cut.
:class:`Redactor` removes the key, any piece of it of
:data:`SECRET_PIECE_CHARACTERS` or more characters, its base64 and URL-encoded
forms, and credentials in a URL (user-info and query values);
:func:`escape_controls` makes what a server sent printable on one line.
"""

from __future__ import annotations

import base64
import re
import time
import unicodedata
import urllib.parse
from collections.abc import Iterable

_REDACTED = "[redacted]"
# A piece of a secret this long is treated as the secret itself.
SECRET_PIECE_CHARACTERS = 8


class Redactor:
    """Removes every form of the given secrets from a text.

    For each secret it knows the secret itself, its base64 (standard and URL-safe,
    at the three byte alignments, so a piece from the middle of an encoded key is
    caught too) and its URL-encoded form, and within each form every run of
    :data:`SECRET_PIECE_CHARACTERS` characters: a text keeps no 8-character piece
    of any of them. Shorter secrets are removed where they occur whole.
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        self._pieces: set[str] = set()
        self._whole: list[str] = []
        for secret in secrets:
            if not secret:
                continue
            for form in _secret_forms(secret):
                if len(form) < SECRET_PIECE_CHARACTERS:
                    self._whole.append(form)
                    continue
                for start in range(len(form) - SECRET_PIECE_CHARACTERS + 1):
                    self._pieces.add(form[start : start + SECRET_PIECE_CHARACTERS])
        self._whole.sort(key=len, reverse=True)

    @property
    def active(self) -> bool:
        """Whether there is any secret to remove."""
        return bool(self._pieces or self._whole)

    def __call__(self, text: str, deadline: float | None = None) -> str:
        """The text with every secret piece replaced; linear in its length.

        Past ``deadline`` (a :func:`time.monotonic` value) the rest of the text
        is dropped and marked, rather than shown unchecked or redacted late.
        """
        if not isinstance(text, str):
            text = str(text)
        covered, checked = self._covered(text, len(text), deadline)
        return self._render(text, covered, checked)

    def quote(self, text: str, limit: int, deadline: float | None = None) -> str:
        """The first ``limit`` characters of the text, redacted: work bounded by ``limit``.

        A piece of a secret that starts inside the quote and runs past its end
        is found because the coverage looks ``SECRET_PIECE_CHARACTERS`` further.
        """
        if not isinstance(text, str):
            text = str(text)
        head = text[: limit + SECRET_PIECE_CHARACTERS]
        covered, checked = self._covered(head, min(limit, len(head)), deadline)
        return self._render(head, covered, checked)

    def _covered(self, text: str, end: int, deadline: float | None) -> tuple[bytearray, int]:
        """Which characters of ``text[:end]`` belong to a secret, and how far the check got."""
        covered = bytearray(len(text))
        width = SECRET_PIECE_CHARACTERS
        pieces = self._pieces
        checked = end
        if pieces:
            step = 1 << 16
            for block in range(0, max(0, len(text) - width + 1), step):
                if deadline is not None and time.monotonic() > deadline:
                    checked = min(end, block)
                    break
                for start in range(block, min(block + step, len(text) - width + 1)):
                    if text[start : start + width] in pieces:
                        covered[start : start + width] = b"\1" * width
        for whole in self._whole:
            for match in re.finditer(re.escape(whole), text):
                covered[match.start() : match.end()] = b"\1" * (match.end() - match.start())
        return covered, checked

    @staticmethod
    def _render(text: str, covered: bytearray, end: int) -> str:
        parts = []
        for run_start, run_end, secret in _runs(covered, end):
            parts.append(_REDACTED if secret else text[run_start:run_end])
        if end < len(text) and len(covered) == len(text) and end < len(text) - SECRET_PIECE_CHARACTERS:
            parts.append(" [rest not checked in time: dropped]")
        return "".join(parts)


def _runs(covered: bytearray, end: int) -> list[tuple[int, int, bool]]:
    """Maximal runs of equal coverage in ``covered[:end]`` as (start, end, is_secret)."""
    runs, position = [], 0
    view = bytes(covered[:end])
    while position < end:
        secret = view[position] == 1
        following = view.find(b"\0" if secret else b"\1", position)
        following = end if following < 0 else following
        runs.append((position, following, secret))
        position = following
    return runs


def _secret_forms(secret: str) -> set[str]:
    forms = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret, safe="")}
    raw = secret.encode("utf-8", errors="replace")
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(raw[shift:]).decode("ascii").rstrip("=")
            # The last characters of an encoding depend on the bytes that follow; drop them.
            forms.add(encoded[: max(0, len(encoded) - 2)] if shift or len(raw) % 3 else encoded)
    return {form for form in forms if form}


def url_secrets(url: str) -> list[str]:
    """Credentials a URL may carry: user-info and every query value."""
    parsed = urllib.parse.urlsplit(url)
    found = [value for value in (parsed.username, parsed.password) if value]
    found += [value for _, value in urllib.parse.parse_qsl(parsed.query, keep_blank_values=False)]
    return found


def shown_url(url: str) -> str:
    """The URL as messages show it: no user-info, query values replaced by a marker."""
    parsed = urllib.parse.urlsplit(url)
    host = parsed.hostname or ""
    if parsed.port:
        host = f"{host}:{parsed.port}"
    query = "&".join(
        f"{name}={_REDACTED}" for name, _ in urllib.parse.parse_qsl(parsed.query, keep_blank_values=True)
    )
    return urllib.parse.urlunsplit((parsed.scheme, host, parsed.path, query, ""))


def escape_controls(text: str) -> str:
    """One printable line: control and format characters (ESC, BEL, newlines...) as escapes."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        character
        if unicodedata.category(character) not in ("Cc", "Cf", "Co", "Cs", "Cn")
        else (f"\\x{ord(character):02x}" if ord(character) < 0x100 else f"\\u{ord(character):04x}")
        for character in text
    )
