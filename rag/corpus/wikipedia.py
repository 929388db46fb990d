"""The Wikipedia source: pinned revisions, a polite downloader, digests and the lock.

A revision id fixes an article's wikitext, but the HTML is rendered when it is
requested, and templates (unit conversions, ages, dates) may render differently
years later. So the pipeline pins three things per article in a lock file: the
revision, its timestamp, and the SHA-256 of the parsed text. A later download
whose digest differs is reported (a warning, or an error in strict mode)
instead of silently changing the corpus under the labels.

The client follows Wikimedia's API etiquette: a descriptive User-Agent with a
contact, one request at a time with a pause between requests, gzip, and
exponential backoff that honours ``Retry-After``. A body shorter than announced
is an error, never a result, so a caller that writes only what this module
returns can never cache a truncated article. Every request has a total
deadline (``timeout_seconds``, dripping bodies included), a body cap before and
after gzip (``max_body_bytes``) and a redirect limit with its own message; a body
must decode as the UTF-8 it declares and look like rendered article HTML, or it
is refused (an error or maintenance page served with status 200 is retried,
then reported, never returned for caching).
"""

from __future__ import annotations

import email.utils
import json
import math
import re
import sys
import time
import unicodedata
import urllib.parse
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from datetime import time as time_of_day
from typing import Any, Generic, TypeVar

from rag import __version__, bounded_http
from rag.documents.blocks import Document, text_digest

DEFAULT_BASE_URL = "https://en.wikipedia.org"
API_PATH = "/w/api.php"
REST_REVISION_HTML_PATH = "/w/rest.php/v1/revision/{revision}/html"
ENDPOINTS = ("rest", "parse")
# Wikimedia asks every client to say who runs it; the placeholder makes a missing
# contact obvious in server logs rather than anonymous.
CONTACT_PLACEHOLDER = "https://example.org/rag-pipeline; set-a-contact@example.org"

OFFLINE_HINT = (
    "To run without network access: the bundled corpus is the default, so remove the "
    "'wikipedia' corpus from config.yaml, or run with the articles already in the download cache."
)

_SHA256 = re.compile(r"[0-9a-f]{64}")
_MEDIAWIKI_TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"
_LOCK_KEYS = ("title", "revision", "timestamp", "sha256")
_NOT_FOUND_API_CODES = frozenset({"nosuchrevid", "missingtitle", "nosuchpageid", "invalidtitle"})
_UTF8_CHARSETS = frozenset({"utf-8", "utf8", "us-ascii", "ascii"})

T = TypeVar("T")


class WikipediaFetchError(RuntimeError):
    """A download failed for good (after retries); the message names the article."""


class RevisionNotFoundError(ValueError):
    """The requested page or revision does not exist on the wiki."""


class LockError(ValueError):
    """A lock file entry that is malformed; the message names the entry."""


class DigestMismatchError(ValueError):
    """The parsed text of a downloaded article differs from its pinned digest."""


class DigestMismatchWarning(UserWarning):
    """Raised as a warning instead of :class:`DigestMismatchError` outside strict mode."""


# --------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class WikipediaConfig:
    """How to reach the wiki and how gently.

    ``endpoint`` picks the HTML source: ``"rest"`` (default) asks the REST API
    for the Parsoid HTML of a revision, ``"parse"`` asks the action API
    (``action=parse&oldid=``). Both shapes are read by :mod:`rag.corpus.articles`.
    Waits (``Retry-After`` and backoff alike) are capped at ``max_wait_seconds``
    so a misbehaving server cannot stall a run for hours.
    """

    base_url: str = DEFAULT_BASE_URL
    endpoint: str = "rest"
    contact: str = CONTACT_PLACEHOLDER
    timeout_seconds: float = 30.0
    pause_seconds: float = 1.0
    max_retries: int = 4
    backoff_base_seconds: float = 1.0
    max_wait_seconds: float = 60.0
    max_redirects: int = 5
    max_body_bytes: int = 32 * 1024 * 1024

    def __post_init__(self) -> None:
        parsed = urllib.parse.urlsplit(self.base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"wikipedia base_url must be an http(s) URL, got {self.base_url!r}")
        if self.endpoint not in ENDPOINTS:
            raise ValueError(f"wikipedia endpoint must be one of {ENDPOINTS}, got {self.endpoint!r}")
        if not self.contact.strip():
            raise ValueError(
                "wikipedia contact must not be empty (Wikimedia's User-Agent policy asks for one)"
            )
        for name in ("timeout_seconds", "backoff_base_seconds", "max_wait_seconds"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value < math.inf:
                raise ValueError(f"wikipedia {name} must be a positive finite number, got {value!r}")
        for name in ("max_redirects", "max_body_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < (name == "max_body_bytes"):
                raise ValueError(f"wikipedia {name} must be a non-negative integer, got {value!r}")
        if not isinstance(self.pause_seconds, int | float) or self.pause_seconds < 0:
            raise ValueError(f"wikipedia pause_seconds must be zero or more, got {self.pause_seconds!r}")
        if (
            not isinstance(self.max_retries, int)
            or isinstance(self.max_retries, bool)
            or self.max_retries < 0
        ):
            raise ValueError(
                f"wikipedia max_retries must be a non-negative integer, got {self.max_retries!r}"
            )

    @property
    def user_agent(self) -> str:
        python = f"{sys.version_info.major}.{sys.version_info.minor}"
        return f"rag-pipeline/{__version__} ({self.contact}) Python-urllib/{python}"

    def revision_html_url(self, revision: int) -> str:
        if self.endpoint == "rest":
            return self.base_url.rstrip("/") + REST_REVISION_HTML_PATH.format(revision=revision)
        return self.api_url(
            {
                "action": "parse",
                "oldid": str(revision),
                "prop": "text",
                "format": "json",
                "formatversion": "2",
            }
        )

    def api_url(self, parameters: Mapping[str, str]) -> str:
        return self.base_url.rstrip("/") + API_PATH + "?" + urllib.parse.urlencode(parameters)


def revision_url(title: str, revision: int, base_url: str = DEFAULT_BASE_URL) -> str:
    """The permanent link a reader can open to see exactly the pinned text."""
    page = urllib.parse.quote(title.replace(" ", "_"), safe="")
    return f"{base_url.rstrip('/')}/w/index.php?title={page}&oldid={revision}"


def article_doc_id(title: str) -> str:
    """A stable, file-name-safe document id: "Ceres (dwarf planet)" becomes "ceres-dwarf-planet"."""
    decomposed = unicodedata.normalize("NFKD", title.lower())
    ascii_title = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title).strip("-")
    if not slug:
        raise ValueError(f"article title {title!r} has no letters or digits to make a document id from")
    return slug


# --------------------------------------------------------------------------
# Time stamps and Retry-After
# --------------------------------------------------------------------------


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds to wait according to a ``Retry-After`` header, or None if absent or unreadable.

    The header is either a number of seconds or an HTTP date; a date in the
    past means "now".
    """
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(int(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def mediawiki_timestamp(moment: str | date | datetime) -> str:
    """A moment in MediaWiki's UTC form (2024-06-01T00:00:00Z).

    A bare date stands for the end of that day, so "as of 2024-06-01" includes
    the edits made on the 1st. A time without a zone is taken as UTC.
    """
    if isinstance(moment, str):
        text = moment.strip()
        try:
            if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
                moment = date.fromisoformat(text)
            else:
                moment = datetime.fromisoformat(text)
        except ValueError as error:
            raise ValueError(f"not an ISO 8601 date or time: {moment!r}") from error
    if isinstance(moment, datetime):
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC).strftime(_MEDIAWIKI_TIMESTAMP)
    if isinstance(moment, date):
        return datetime.combine(moment, time_of_day(23, 59, 59), tzinfo=UTC).strftime(_MEDIAWIKI_TIMESTAMP)
    raise ValueError(f"expected an ISO 8601 date or time, got {type(moment).__name__} {moment!r}")


# --------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------


class _TryAgain(Exception):
    """One attempt failed in a way that a later attempt may not."""

    def __init__(self, reason: str, retry_after: float | None = None, network: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.network = network


@dataclass(frozen=True)
class _Download(Generic[T]):
    """One GET to make: what to ask for, how to read the body, and what a missing page means.

    Every attempt and redirect of the download needs all of it, so it travels
    as one record instead of five arguments.
    """

    url: str
    what: str  # what is downloaded, for error messages
    accept: str  # the Accept header
    read: Callable[[str], T]  # the decoded body -> the result
    not_found: Callable[[int], Exception]  # HTTP 404 or 410 -> the error to raise


class WikipediaClient:
    """Sequential, rate-limited GET requests to one wiki.

    The client remembers when its last request ended, so consecutive calls
    keep ``pause_seconds`` apart. ``sleep``, ``clock`` and ``now`` are
    injectable so tests can record waits instead of waiting.
    """

    def __init__(
        self,
        config: WikipediaConfig | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.config = config or WikipediaConfig()
        self._sleep = sleep
        self._clock = clock
        self._now = now
        self._last_request_end: float | None = None

    # -- public ----------------------------------------------------------------

    def fetch_revision_html(self, title: str, revision: int) -> str:
        """The rendered HTML of one revision, complete or not at all."""
        _check_title(title)
        _check_revision(revision, title)
        what = f"Wikipedia article {title!r} at revision {revision}"
        url = self.config.revision_html_url(revision)

        def not_found(status: int) -> Exception:
            return RevisionNotFoundError(
                f"{what}: the wiki answered HTTP {status}; the revision does not exist or was "
                "deleted, so check the revision in the lock file"
            )

        if self.config.endpoint == "rest":
            return self._get(_Download(url, what, "text/html", _html_body, not_found))
        return self._get(
            _Download(url, what, "application/json", lambda text: _parse_api_html(text, what), not_found)
        )

    def resolve_revision(self, title: str, as_of: str | date | datetime) -> tuple[int, str]:
        """The newest revision of ``title`` at or before ``as_of``: (revision id, timestamp)."""
        _check_title(title)
        timestamp = mediawiki_timestamp(as_of)
        url = self.config.api_url(
            {
                "action": "query",
                "prop": "revisions",
                "rvprop": "ids|timestamp",
                "rvlimit": "1",
                "rvstart": timestamp,
                "rvdir": "older",
                "titles": title,
                "redirects": "1",
                "format": "json",
                "formatversion": "2",
            }
        )
        what = f"revision of Wikipedia article {title!r} as of {timestamp}"

        def not_found(status: int) -> Exception:
            return WikipediaFetchError(f"{what}: the API answered HTTP {status} at {url}")

        payload = self._get(_Download(url, what, "application/json", _json_body, not_found))
        return revision_from_query(payload, title, timestamp)

    # -- one GET with retries ----------------------------------------------------

    def _get(self, download: _Download[T]) -> T:
        config = self.config
        reasons: list[str] = []
        network_failure = False
        deadline = math.inf
        attempts = 0
        for attempt in range(config.max_retries + 1):
            self._wait_for_turn()
            if attempt == 0:
                # timeout_seconds bounds the whole call: every attempt, redirect and backoff wait.
                deadline = self._clock() + config.timeout_seconds
            attempts += 1
            try:
                return self._attempt(download, deadline)
            except _TryAgain as failure:
                reasons.append(failure.reason)
                network_failure = network_failure or failure.network
                if attempt == config.max_retries:
                    break
                wait = failure.retry_after
                if wait is None:
                    wait = config.backoff_base_seconds * 2**attempt
                wait = min(wait, config.max_wait_seconds)
                if self._clock() + max(wait, config.pause_seconds) >= deadline:
                    # A retry that cannot start before the deadline is not started.
                    reasons.append(
                        f"the next attempt could not start within timeout_seconds={config.timeout_seconds:g}"
                    )
                    break
                self._sleep(wait)
        summary = "; ".join(dict.fromkeys(reasons))  # distinct reasons, in order of first appearance
        cause = "the wiki could not be reached" if network_failure else "the wiki kept failing"
        raise WikipediaFetchError(
            f"could not download the {download.what}: {cause} after {attempts} attempt"
            f"{'s' if attempts != 1 else ''} ({summary}) at {download.url}. {OFFLINE_HINT}"
        )

    def _attempt(self, download: _Download[T], deadline: float) -> T:
        try:
            return download.read(self._request(download, deadline))
        finally:
            # The pause counts from the end of a request, backoff waits included.
            self._last_request_end = self._clock()

    def _wait_for_turn(self) -> None:
        if self._last_request_end is None:
            return
        remaining = self.config.pause_seconds - (self._clock() - self._last_request_end)
        if remaining > 0:
            self._sleep(remaining)

    def _request(self, download: _Download[Any], deadline: float) -> str:
        """One download, redirects included, bounded in time and size, decoded by its declared charset."""
        config = self.config
        headers = {"User-Agent": config.user_agent, "Accept": download.accept, "Accept-Encoding": "gzip"}
        location = download.url
        for _ in range(config.max_redirects + 1):
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise _TryAgain(
                    f"timed out (no whole reply within {config.timeout_seconds:g} s)", network=True
                )
            try:
                reply = bounded_http.request(
                    "GET",
                    location,
                    headers,
                    deadline_seconds=remaining,
                    max_body_bytes=config.max_body_bytes,
                )
            except bounded_http.DeadlineExceeded:
                raise _TryAgain(
                    f"timed out (no whole reply within {config.timeout_seconds:g} s)", network=True
                ) from None
            except bounded_http.BodyTooLarge as error:
                raise WikipediaFetchError(
                    f"could not download the {download.what}: {error} (max_body_bytes) at {location}"
                ) from None
            except bounded_http.TruncatedBody as error:
                raise _TryAgain(str(error)) from None
            except bounded_http.HttpFault as error:
                raise _TryAgain(str(error), network=True) from None
            if reply.status in (301, 302, 303, 307, 308):
                target = reply.header("Location")
                if not target:
                    raise WikipediaFetchError(
                        f"could not download the {download.what}: HTTP {reply.status} without a Location"
                    )
                location = urllib.parse.urljoin(location, target)
                if urllib.parse.urlsplit(location).scheme not in ("http", "https"):
                    raise WikipediaFetchError(
                        f"could not download the {download.what}: redirected to a non-http URL"
                    )
                continue
            return self._body(reply, location, download.what, download.not_found)
        raise WikipediaFetchError(
            f"could not download the {download.what}: more than {config.max_redirects} redirects "
            f"starting at {download.url} (a redirect loop?); check the corpus 'api' URL"
        )

    def _body(
        self, reply: bounded_http.HttpReply, url: str, what: str, not_found: Callable[[int], Exception]
    ) -> str:
        status = reply.status
        if status == 429 or status >= 500:
            retry_after = parse_retry_after(reply.header("Retry-After"), self._now())
            raise _TryAgain(f"HTTP {status}", retry_after=retry_after)
        if status in (404, 410):
            raise not_found(status)
        if status == 403:
            raise WikipediaFetchError(
                f"could not download the {what}: HTTP 403 at {url} (the User-Agent may have been refused; "
                f"set a real contact). {OFFLINE_HINT}"
            )
        if status != 200:
            raise WikipediaFetchError(
                f"could not download the {what}: HTTP {status} at {url}. {OFFLINE_HINT}"
            )
        body = reply.body
        encoding = (reply.header("Content-Encoding") or "identity").strip().lower()
        if not reply.framed and encoding != "gzip":
            # Read until the server hung up, with no length and no chunks: a body cut at 60 %
            # looks exactly like a whole one, so it is retried, never cached or pinned.
            raise _TryAgain("a body with no declared length and no chunked or gzip framing")
        if encoding == "gzip":
            try:
                body = bounded_http.gunzip(body, self.config.max_body_bytes)
            except bounded_http.BodyTooLarge as error:
                raise WikipediaFetchError(
                    f"could not download the {what}: {error} (max_body_bytes)"
                ) from None
            except bounded_http.TruncatedBody:
                raise _TryAgain("truncated or corrupt gzip body") from None
        elif encoding != "identity":
            raise WikipediaFetchError(
                f"could not download the {what}: unsupported Content-Encoding {encoding!r}"
            )
        charset = (reply.headers.get_content_charset() or "utf-8").lower()
        if charset.replace("_", "-") not in _UTF8_CHARSETS:
            # MediaWiki serves UTF-8 only; another charset is a proxy or error page, and decoding
            # UTF-8 bytes by it would index mojibake under the article's name.
            raise WikipediaFetchError(
                f"could not download the {what}: the reply declares charset {charset!r}, but the wiki "
                f"serves UTF-8; refusing it rather than indexing misdecoded text (at {url})"
            )
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise WikipediaFetchError(
                f"could not download the {what}: body is not valid UTF-8 (byte {error.start}) at {url}"
            ) from None


def _check_title(title: str) -> None:
    if not isinstance(title, str) or not title.strip():
        raise ValueError(f"article title must be a non-empty string, got {title!r}")


def _check_revision(revision: Any, title: str) -> None:
    if not isinstance(revision, int) or isinstance(revision, bool) or revision <= 0:
        raise ValueError(f"revision of {title!r} must be a positive integer, got {revision!r}")


_MARKER_ELEMENT = re.compile(r"<(body|div)\b[^>]*?\bclass\s*=\s*[\"'][^\"']*\bmw-parser-output\b", re.I)
_TRAILING_COMMENTS = re.compile(r"(?:\s*<!--.*?-->)*\s*\Z", re.S)
_PAGE_END = re.compile(r"</body\s*>\s*</html\s*>\Z", re.I)
_DIV_OPEN = re.compile(r"<div\b", re.I)
_DIV_CLOSE = re.compile(r"</div\s*>", re.I)


def article_shape_problem(text: str) -> str | None:
    """Why HTML is not a whole rendered article, or None when it is one.

    Two things must both hold. The marker: an element whose class is
    ``mw-parser-output`` (Parsoid's ``<body>``, or the action API's wrapping
    ``<div>``), not merely the word somewhere in the page. And the closing
    structure: a whole Parsoid page is an ``<html>`` whose ``about`` names its
    revision and that ends in ``</body></html>``; an action API fragment starts
    with the marked ``<div>`` and ends by closing every ``<div>`` it opened
    (trailing parser-report comments allowed). A body cut short, or a
    maintenance page that happens to carry the class, fails one of the two.
    """
    if "<" not in text:
        return "empty or non-HTML body"
    marker = _MARKER_ELEMENT.search(text)
    if marker is None:
        return "the body is not rendered article HTML (an error or maintenance page?)"
    end = _TRAILING_COMMENTS.search(text)
    content = text[: end.start()] if end else text
    if marker.group(1).lower() == "body":
        if "Special:Redirect/revision/" not in text[: marker.start()] or not _PAGE_END.search(content):
            return "the body is not a whole rendered article page (cut short, or a maintenance page?)"
        return None
    if text[: marker.start()].strip() or not content.endswith("</div>"):
        return "the body is not a whole rendered article fragment (cut short, or a maintenance page?)"
    if len(_DIV_OPEN.findall(content)) != len(_DIV_CLOSE.findall(content)):
        return "the body's elements are not all closed (cut short?)"
    return None


def looks_like_article(text: str) -> bool:
    """Whether HTML is a whole rendered article (not an error or maintenance page, not cut short)."""
    return article_shape_problem(text) is None


def _html_body(text: str) -> str:
    """Rendered article HTML, or a retry: an error or maintenance page served with status 200 is not one."""
    problem = article_shape_problem(text)
    if problem is not None:
        raise _TryAgain(problem)
    return text


def _json_body(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise _TryAgain(f"unreadable JSON ({error.msg})") from None


def _parse_api_html(text: str, what: str) -> str:
    payload = _json_body(text)
    _raise_api_error(payload, what)
    html = payload.get("parse", {}).get("text") if isinstance(payload, dict) else None
    if isinstance(html, dict):  # formatversion=1 nests the HTML under "*"
        html = html.get("*")
    if not isinstance(html, str):
        raise WikipediaFetchError(f"could not download the {what}: the parse answer has no HTML text")
    return _html_body(html)


def _raise_api_error(payload: Any, what: str) -> None:
    if not isinstance(payload, dict) or "error" not in payload:
        return
    error = payload["error"] if isinstance(payload["error"], dict) else {}
    code, info = error.get("code", "unknown"), error.get("info", "")
    if code in _NOT_FOUND_API_CODES:
        raise RevisionNotFoundError(f"{what}: the API answered {code!r} ({info})")
    raise WikipediaFetchError(f"could not download the {what}: the API answered {code!r} ({info})")


def revision_from_query(payload: Any, title: str, as_of: str) -> tuple[int, str]:
    """Read the answer of a ``prop=revisions`` query (formatversion=2) for one title.

    Kept separate from the request so the interpretation of missing pages and
    empty histories can be checked on plain data.
    """
    what = f"revision of Wikipedia article {title!r} as of {as_of}"
    _raise_api_error(payload, what)
    pages = payload.get("query", {}).get("pages") if isinstance(payload, dict) else None
    if not isinstance(pages, list) or not pages or not isinstance(pages[0], dict):
        raise WikipediaFetchError(f"could not resolve the {what}: the API answer has no pages")
    page = pages[0]
    if page.get("invalid"):
        raise RevisionNotFoundError(f"{title!r} is not a valid page title: {page.get('invalidreason', '')}")
    if page.get("missing"):
        raise RevisionNotFoundError(f"there is no Wikipedia page titled {title!r}")
    revisions = page.get("revisions") or []
    if not revisions:
        raise RevisionNotFoundError(
            f"Wikipedia article {title!r} has no revision at or before {as_of} (was it created later?)"
        )
    revision, timestamp = revisions[0].get("revid"), revisions[0].get("timestamp")
    if not isinstance(revision, int) or isinstance(revision, bool) or revision <= 0:
        raise WikipediaFetchError(
            f"could not resolve the {what}: revision id {revision!r} is not a positive integer"
        )
    timestamp = mediawiki_timestamp(str(timestamp))
    if timestamp > mediawiki_timestamp(as_of):
        raise WikipediaFetchError(
            f"could not resolve the {what}: the API returned a later revision ({timestamp})"
        )
    return revision, timestamp


# --------------------------------------------------------------------------
# Digests
# --------------------------------------------------------------------------


def check_digest(document: Document, pinned_sha256: str, strict: bool = False) -> bool:
    """Compare a parsed article with its pinned digest; True when they agree.

    A mismatch is a warning by default because the usual cause is harmless
    (a template rendered differently); strict runs make it an error so a
    published result is never computed on a drifted corpus.
    """
    pinned = _checked_sha256(pinned_sha256, f"pinned digest of {document.title!r}")
    actual = text_digest(document)
    if actual == pinned:
        return True
    message = (
        f"Wikipedia article {document.title!r} (revision {document.version}): the parsed text has "
        f"SHA-256 {actual}, but {pinned} is pinned. Templates are expanded when the HTML is rendered, "
        "so a later download can format values differently; check that the labelled evidence spans "
        "still occur."
    )
    if strict:
        raise DigestMismatchError(message)
    warnings.warn(message, DigestMismatchWarning, stacklevel=2)
    return False


def _checked_sha256(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _SHA256.fullmatch(value.strip().lower()):
        raise LockError(f"{what} must be 64 hexadecimal digits, got {value!r}")
    return value.strip().lower()


# --------------------------------------------------------------------------
# The lock file, as plain data
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class LockedArticle:
    """One pinned article: what to download and what its parsed text must hash to."""

    title: str
    revision: int
    timestamp: str
    sha256: str

    def __post_init__(self) -> None:
        label = f"lock entry {self.title!r}"
        if not isinstance(self.title, str) or not self.title.strip():
            raise LockError(f"lock entry with title {self.title!r}: title must be a non-empty string")
        if not isinstance(self.revision, int) or isinstance(self.revision, bool) or self.revision <= 0:
            raise LockError(f"{label}: revision must be a positive integer, got {self.revision!r}")
        # A revision's timestamp is a moment; a bare date would silently mean the end of that day.
        if not isinstance(self.timestamp, str | datetime) or not re.search(r"\d[T ]\d", str(self.timestamp)):
            raise LockError(f"{label}: timestamp must be a date and time, got {self.timestamp!r}")
        try:
            timestamp = mediawiki_timestamp(self.timestamp)
        except ValueError as error:
            raise LockError(f"{label}: timestamp {self.timestamp!r} is not an ISO 8601 time") from error
        object.__setattr__(self, "timestamp", timestamp)
        object.__setattr__(self, "sha256", _checked_sha256(self.sha256, f"{label}: sha256"))


def build_lock(entries: Iterable[LockedArticle]) -> dict[str, list[dict[str, Any]]]:
    """The lock file's content, in the order given, ready for ``yaml.safe_dump``."""
    articles = list(entries)
    for entry in articles:
        if not isinstance(entry, LockedArticle):
            raise LockError(
                f"lock entries must be LockedArticle records, got {type(entry).__name__} {entry!r}"
            )
    _check_unique(articles)
    return {
        "articles": [
            {
                "title": entry.title,
                "revision": entry.revision,
                "timestamp": entry.timestamp,
                "sha256": entry.sha256,
            }
            for entry in articles
        ]
    }


def parse_lock(mapping: Any) -> tuple[LockedArticle, ...]:
    """Validate the loaded lock file and return its entries, in file order."""
    if not isinstance(mapping, Mapping) or set(mapping) != {"articles"}:
        keys = sorted(mapping) if isinstance(mapping, Mapping) else type(mapping).__name__
        raise LockError(f"a lock must be a mapping with the single key 'articles', got {keys}")
    raw_entries = mapping["articles"]
    if not isinstance(raw_entries, list):
        raise LockError(f"lock 'articles' must be a list, got {type(raw_entries).__name__}")
    articles: list[LockedArticle] = []
    for index, raw in enumerate(raw_entries, start=1):
        name = raw.get("title") if isinstance(raw, Mapping) else None
        where = f"lock entry {index}" + (f" ({name!r})" if name else "")
        if not isinstance(raw, Mapping):
            raise LockError(f"{where}: expected a mapping, got {type(raw).__name__} {raw!r}")
        missing = [key for key in _LOCK_KEYS if key not in raw]
        unknown = sorted(str(key) for key in raw if key not in _LOCK_KEYS)
        if missing or unknown:
            raise LockError(
                f"{where}: missing keys {missing}, unknown keys {unknown}; expected {list(_LOCK_KEYS)}"
            )
        try:
            articles.append(LockedArticle(**{key: raw[key] for key in _LOCK_KEYS}))
        except LockError as error:
            raise LockError(f"{where}: {error}") from None
    _check_unique(articles)
    return tuple(articles)


def _check_unique(articles: list[LockedArticle]) -> None:
    titles: set[str] = set()
    revisions: dict[int, str] = {}
    for entry in articles:
        if entry.title in titles:
            raise LockError(f"lock entry {entry.title!r} appears twice")
        if entry.revision in revisions:
            raise LockError(
                f"lock entries {revisions[entry.revision]!r} and {entry.title!r} pin the same "
                f"revision {entry.revision}"
            )
        titles.add(entry.title)
        revisions[entry.revision] = entry.title
