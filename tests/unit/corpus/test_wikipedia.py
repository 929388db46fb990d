"""The Wikipedia client against a scripted wiki on 127.0.0.1, plus digests and the lock.

The stub server answers each path from a queue of scripted replies (the last
one repeats), and records every request. Waits go through a fake clock, so
backoff and Retry-After are asserted as numbers without sleeping.
"""

from __future__ import annotations

import email.utils
import gzip
import hashlib
import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from rag import __version__
from rag.corpus.articles import document_from_html
from rag.corpus.wikipedia import (
    API_PATH,
    DigestMismatchError,
    DigestMismatchWarning,
    LockedArticle,
    LockError,
    RevisionNotFoundError,
    WikipediaClient,
    WikipediaConfig,
    WikipediaFetchError,
    article_doc_id,
    build_lock,
    check_digest,
    mediawiki_timestamp,
    parse_lock,
    parse_retry_after,
    revision_from_query,
    revision_url,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "wikipedia"
PELL_HTML = (FIXTURES / "parsoid_rest.html").read_text(encoding="utf-8")
PELL_REVISION = 1000003
PELL_PATH = f"/w/rest.php/v1/revision/{PELL_REVISION}/html"
PELL_TEXT = "\n\n".join(
    [
        "Pell is a dwarf planet beyond the orbit of Calyx, about 1,150 km (710 mi) across.",
        "Its surface temperature stays near \u2212230 \u00b0C, colder than any world nearer the star.",
        "Pell was found on photographic plates in 1958 by M. Orsi.",
        "The name honours a shepherd in an old story; its symbol is a crook drawn sideways.",
        "One orbit takes 612 years. Its path crosses that of Calyx.",
    ]
)


# --------------------------------------------------------------------------
# The scripted wiki
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    send_bytes: int | None = None  # announce the whole body, send only this many bytes
    delay_seconds: float = 0.0


@dataclass
class Recorded:
    path: str
    query: dict[str, str]
    headers: dict[str, str]


@dataclass
class StubWiki:
    base_url: str = ""
    replies: dict[str, list[Reply]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, path: str, *replies: Reply) -> None:
        self.replies[path] = list(replies)

    def next_reply(self, path: str) -> Reply:
        with self.lock:
            queue = self.replies.get(path)
            if not queue:
                return Reply(404, b"no such path")
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def count(self, path: str) -> int:
        return sum(1 for request in self.requests if request.path == path)


def _handler(stub: StubWiki) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the name http.server dispatches to
            parts = urllib.parse.urlsplit(self.path)
            with stub.lock:
                stub.requests.append(
                    Recorded(
                        parts.path, dict(urllib.parse.parse_qsl(parts.query)), dict(self.headers.items())
                    )
                )
            reply = stub.next_reply(parts.path)
            if reply.delay_seconds:
                time.sleep(reply.delay_seconds)
            self.send_response(reply.status)
            for name, value in reply.headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            sent = reply.body if reply.send_bytes is None else reply.body[: reply.send_bytes]
            self.wfile.write(sent)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - inherited signature
            pass

    return Handler


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that timed out and left is part of the script


@pytest.fixture
def wiki(monkeypatch: pytest.MonkeyPatch) -> Iterator[StubWiki]:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    stub = StubWiki()
    server = QuietServer(("127.0.0.1", 0), _handler(stub))
    stub.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield stub
    server.shutdown()
    server.server_close()
    thread.join()


@dataclass
class FakeTime:
    """A clock that moves only when the client sleeps, recording every wait."""

    now: float = 1000.0
    waits: list[float] = field(default_factory=list)

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


WALL_CLOCK = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)


def client_for(wiki: StubWiki, fake: FakeTime, **settings: object) -> WikipediaClient:
    options: dict[str, object] = {"pause_seconds": 0.0, "max_retries": 3, "max_wait_seconds": 30.0}
    options.update(settings)
    config = WikipediaConfig(base_url=wiki.base_url, **options)  # type: ignore[arg-type]
    return WikipediaClient(config, sleep=fake.sleep, clock=fake.clock, now=lambda: WALL_CLOCK)


def html_reply(text: str = PELL_HTML, **settings: object) -> Reply:
    headers = (("Content-Type", "text/html; charset=utf-8"),)
    return Reply(200, text.encode("utf-8"), headers, **settings)  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# Fetching
# --------------------------------------------------------------------------


def test_fetch_returns_the_html_and_sends_a_descriptive_user_agent(wiki: StubWiki) -> None:
    wiki.script(PELL_PATH, html_reply())
    fake = FakeTime()
    client = client_for(wiki, fake, contact="https://example.org/team; team@example.org")
    assert client.fetch_revision_html("Pell", PELL_REVISION) == PELL_HTML
    (request,) = wiki.requests
    user_agent = request.headers["User-Agent"]
    assert user_agent == client.config.user_agent
    assert user_agent.startswith(f"rag-pipeline/{__version__} (https://example.org/team; team@example.org) ")
    assert "Python-urllib/" in user_agent
    assert request.headers["Accept-Encoding"] == "gzip"
    assert fake.waits == []


def test_a_gzip_body_is_decompressed(wiki: StubWiki) -> None:
    compressed = gzip.compress(PELL_HTML.encode("utf-8"))
    wiki.script(PELL_PATH, Reply(200, compressed, (("Content-Encoding", "gzip"),)))
    assert client_for(wiki, FakeTime()).fetch_revision_html("Pell", PELL_REVISION) == PELL_HTML


def test_429_with_retry_after_seconds_is_waited_out_then_succeeds(wiki: StubWiki) -> None:
    wiki.script(PELL_PATH, Reply(429, b"slow down", (("Retry-After", "3"),)), html_reply())
    fake = FakeTime()
    assert (
        client_for(wiki, fake, max_wait_seconds=5.0).fetch_revision_html("Pell", PELL_REVISION) == PELL_HTML
    )
    assert fake.waits == [3.0]
    assert wiki.count(PELL_PATH) == 2


def test_retry_after_is_capped(wiki: StubWiki) -> None:
    wiki.script(PELL_PATH, Reply(503, b"busy", (("Retry-After", "120"),)), html_reply())
    fake = FakeTime()
    client_for(wiki, fake, max_wait_seconds=0.25).fetch_revision_html("Pell", PELL_REVISION)
    assert fake.waits == [0.25]


def test_retry_after_as_an_http_date(wiki: StubWiki) -> None:
    later = email.utils.format_datetime(WALL_CLOCK + timedelta(seconds=7), usegmt=True)
    wiki.script(PELL_PATH, Reply(429, b"", (("Retry-After", later),)), html_reply())
    fake = FakeTime()
    client_for(wiki, fake).fetch_revision_html("Pell", PELL_REVISION)
    assert fake.waits == [7.0]


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("0", 0.0),
        (" 12 ", 12.0),
        ("Wed, 01 Jan 2030 12:00:30 GMT", 30.0),
        ("Tue, 31 Dec 2029 12:00:00 GMT", 0.0),  # a date in the past: retry now
        ("soon", None),
        ("-5", None),
        (None, None),
    ],
)
def test_parse_retry_after(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header, WALL_CLOCK) == seconds


def test_repeated_server_errors_exhaust_the_retries_with_exponential_backoff(wiki: StubWiki) -> None:
    wiki.script(PELL_PATH, Reply(500, b"internal error"))
    fake = FakeTime()
    client = client_for(wiki, fake, max_retries=3, backoff_base_seconds=0.5)
    with pytest.raises(WikipediaFetchError) as raised:
        client.fetch_revision_html("Pell", PELL_REVISION)
    message = str(raised.value)
    assert "'Pell'" in message and str(PELL_REVISION) in message
    assert "HTTP 500" in message and "4 attempts" in message
    assert "config.yaml" in message and "bundled corpus" in message
    assert wiki.count(PELL_PATH) == 4
    assert fake.waits == [0.5, 1.0, 2.0]


def test_backoff_is_capped(wiki: StubWiki) -> None:
    wiki.script(PELL_PATH, Reply(502, b"bad gateway"))
    fake = FakeTime()
    with pytest.raises(WikipediaFetchError):
        client_for(
            wiki, fake, max_retries=4, backoff_base_seconds=1.0, max_wait_seconds=3.0
        ).fetch_revision_html("Pell", PELL_REVISION)
    assert fake.waits == [1.0, 2.0, 3.0, 3.0]


def test_a_truncated_body_is_retried_and_then_raised_never_returned(wiki: StubWiki) -> None:
    wiki.script(PELL_PATH, html_reply(send_bytes=200))
    fake = FakeTime()
    with pytest.raises(WikipediaFetchError, match="truncated") as raised:
        client_for(wiki, fake, max_retries=2).fetch_revision_html("Pell", PELL_REVISION)
    assert "'Pell'" in str(raised.value)
    assert wiki.count(PELL_PATH) == 3


def test_a_truncated_body_followed_by_a_complete_one_returns_the_complete_one(wiki: StubWiki) -> None:
    wiki.script(PELL_PATH, html_reply(send_bytes=len(PELL_HTML) // 2), html_reply())
    assert client_for(wiki, FakeTime()).fetch_revision_html("Pell", PELL_REVISION) == PELL_HTML
    assert wiki.count(PELL_PATH) == 2


def test_a_cut_gzip_stream_is_an_error_even_when_its_length_matches(wiki: StubWiki) -> None:
    compressed = gzip.compress(PELL_HTML.encode("utf-8"))[:-20]
    wiki.script(PELL_PATH, Reply(200, compressed, (("Content-Encoding", "gzip"),)))
    with pytest.raises(WikipediaFetchError, match="gzip"):
        client_for(wiki, FakeTime(), max_retries=1).fetch_revision_html("Pell", PELL_REVISION)


def test_a_timeout_is_retried_and_then_reported(wiki: StubWiki) -> None:
    wiki.script(PELL_PATH, html_reply(delay_seconds=0.5))
    with pytest.raises(WikipediaFetchError, match="timed out"):
        client_for(wiki, FakeTime(), max_retries=1, timeout_seconds=0.05).fetch_revision_html(
            "Pell", PELL_REVISION
        )


def test_connection_refused_gives_one_clear_offline_message() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    fake = FakeTime()
    config = WikipediaConfig(base_url=f"http://127.0.0.1:{port}", pause_seconds=0.0, max_retries=2)
    client = WikipediaClient(config, sleep=fake.sleep, clock=fake.clock)
    with pytest.raises(WikipediaFetchError) as raised:
        client.fetch_revision_html("Pell", PELL_REVISION)
    message = str(raised.value)
    assert "'Pell'" in message and f"revision {PELL_REVISION}" in message
    assert "could not be reached" in message and "3 attempts" in message
    assert "remove the 'wikipedia' corpus from config.yaml" in message
    assert "cache" in message
    assert len(fake.waits) == 2


def test_a_missing_revision_is_not_retried(wiki: StubWiki) -> None:
    wiki.script(PELL_PATH, Reply(404, b"not found"))
    with pytest.raises(RevisionNotFoundError, match=f"'Pell' at revision {PELL_REVISION}"):
        client_for(wiki, FakeTime()).fetch_revision_html("Pell", PELL_REVISION)
    assert wiki.count(PELL_PATH) == 1


def test_a_refused_user_agent_is_not_retried(wiki: StubWiki) -> None:
    wiki.script(PELL_PATH, Reply(403, b"forbidden"))
    with pytest.raises(WikipediaFetchError, match="HTTP 403.*User-Agent"):
        client_for(wiki, FakeTime()).fetch_revision_html("Pell", PELL_REVISION)
    assert wiki.count(PELL_PATH) == 1


def test_consecutive_requests_keep_the_configured_pause(wiki: StubWiki) -> None:
    other = "/w/rest.php/v1/revision/7/html"
    wiki.script(PELL_PATH, html_reply())
    wiki.script(other, html_reply())
    fake = FakeTime()
    client = client_for(wiki, fake, pause_seconds=2.0)
    client.fetch_revision_html("Pell", PELL_REVISION)
    fake.now += 0.5  # the caller spent half a second between the two calls
    client.fetch_revision_html("Other", 7)
    assert fake.waits == [1.5]


def test_the_action_api_endpoint_unwraps_the_parse_answer(wiki: StubWiki) -> None:
    answer = {"parse": {"title": "Pell", "pageid": 4242, "revid": PELL_REVISION, "text": PELL_HTML}}
    wiki.script(API_PATH, Reply(200, json.dumps(answer).encode("utf-8")))
    client = client_for(wiki, FakeTime(), endpoint="parse")
    assert client.fetch_revision_html("Pell", PELL_REVISION) == PELL_HTML
    (request,) = wiki.requests
    assert request.query == {
        "action": "parse",
        "oldid": str(PELL_REVISION),
        "prop": "text",
        "format": "json",
        "formatversion": "2",
    }


def test_the_action_api_reports_a_missing_revision(wiki: StubWiki) -> None:
    answer = {"error": {"code": "nosuchrevid", "info": "There is no revision with ID 1000003."}}
    wiki.script(API_PATH, Reply(200, json.dumps(answer).encode("utf-8")))
    with pytest.raises(RevisionNotFoundError, match="nosuchrevid"):
        client_for(wiki, FakeTime(), endpoint="parse").fetch_revision_html("Pell", PELL_REVISION)


@pytest.mark.parametrize("revision", [0, -3, "1000003", True, 1.5])
def test_a_bad_revision_id_is_rejected_before_any_request(revision: object) -> None:
    with pytest.raises(ValueError, match="revision of 'Pell'"):
        WikipediaClient(WikipediaConfig()).fetch_revision_html("Pell", revision)  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# Resolving a date to a revision
# --------------------------------------------------------------------------


def query_reply(pages: list[dict]) -> Reply:
    answer = {"batchcomplete": True, "query": {"pages": pages}}
    return Reply(200, json.dumps(answer).encode("utf-8"), (("Content-Type", "application/json"),))


def test_resolve_revision_asks_for_the_newest_revision_at_or_before_the_date(wiki: StubWiki) -> None:
    page = {
        "pageid": 4242,
        "ns": 0,
        "title": "Pell",
        "revisions": [{"revid": 999, "parentid": 998, "timestamp": "2031-03-30T08:15:00Z"}],
    }
    wiki.script(API_PATH, query_reply([page]))
    client = client_for(wiki, FakeTime())
    assert client.resolve_revision("Pell", "2031-04-01") == (999, "2031-03-30T08:15:00Z")
    (request,) = wiki.requests
    assert request.query["action"] == "query" and request.query["prop"] == "revisions"
    assert request.query["titles"] == "Pell"
    assert request.query["rvlimit"] == "1" and request.query["rvdir"] == "older"
    assert request.query["rvstart"] == "2031-04-01T23:59:59Z"
    assert request.query["format"] == "json" and request.query["formatversion"] == "2"


def test_resolve_revision_of_a_missing_page(wiki: StubWiki) -> None:
    wiki.script(API_PATH, query_reply([{"ns": 0, "title": "Nowhere planet", "missing": True}]))
    with pytest.raises(RevisionNotFoundError, match="no Wikipedia page titled 'Nowhere planet'"):
        client_for(wiki, FakeTime()).resolve_revision("Nowhere planet", "2031-04-01T00:00:00Z")


def test_resolve_revision_before_the_page_existed(wiki: StubWiki) -> None:
    wiki.script(API_PATH, query_reply([{"pageid": 4242, "ns": 0, "title": "Pell"}]))
    with pytest.raises(
        RevisionNotFoundError, match="'Pell' has no revision at or before 1990-01-01T00:00:00Z"
    ):
        client_for(wiki, FakeTime()).resolve_revision("Pell", datetime(1990, 1, 1))


def test_resolve_revision_retries_an_unreadable_answer(wiki: StubWiki) -> None:
    page = {
        "pageid": 1,
        "ns": 0,
        "title": "Pell",
        "revisions": [{"revid": 5, "timestamp": "2031-03-30T08:15:00Z"}],
    }
    good = query_reply([page])
    wiki.script(API_PATH, Reply(200, good.body[:-10]), good)
    fake = FakeTime()
    assert client_for(wiki, fake).resolve_revision("Pell", "2031-04-01T00:00:00Z") == (
        5,
        "2031-03-30T08:15:00Z",
    )
    assert fake.waits == [1.0]


def test_revision_from_query_refuses_a_revision_after_the_date() -> None:
    payload = {
        "query": {
            "pages": [{"title": "Pell", "revisions": [{"revid": 5, "timestamp": "2031-05-01T00:00:00Z"}]}]
        }
    }
    with pytest.raises(WikipediaFetchError, match="later revision"):
        revision_from_query(payload, "Pell", "2031-04-01T00:00:00Z")


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        ("2031-04-01", "2031-04-01T23:59:59Z"),
        (date(2031, 4, 1), "2031-04-01T23:59:59Z"),
        ("2031-04-01T02:30:00+02:00", "2031-04-01T00:30:00Z"),
        ("2031-04-01T00:30:00Z", "2031-04-01T00:30:00Z"),
        (datetime(2031, 4, 1, 0, 30), "2031-04-01T00:30:00Z"),
    ],
)
def test_mediawiki_timestamp(moment: object, expected: str) -> None:
    assert mediawiki_timestamp(moment) == expected  # type: ignore[arg-type]


def test_mediawiki_timestamp_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="'last spring'"):
        mediawiki_timestamp("last spring")


# --------------------------------------------------------------------------
# Digests
# --------------------------------------------------------------------------


def pell_document():
    return document_from_html(PELL_HTML, doc_id="pell", title="Pell", revision=PELL_REVISION)


def test_a_matching_digest_passes_silently(recwarn: pytest.WarningsRecorder) -> None:
    pinned = hashlib.sha256(PELL_TEXT.encode("utf-8")).hexdigest()
    assert check_digest(pell_document(), pinned) is True
    assert check_digest(pell_document(), pinned.upper(), strict=True) is True
    assert len(recwarn) == 0


def test_a_wrong_digest_warns_naming_the_article() -> None:
    wrong = hashlib.sha256(b"another text").hexdigest()
    with pytest.warns(DigestMismatchWarning, match=f"'Pell' \\(revision {PELL_REVISION}\\)"):
        assert check_digest(pell_document(), wrong) is False


def test_a_wrong_digest_is_an_error_in_strict_mode() -> None:
    wrong = hashlib.sha256(b"another text").hexdigest()
    with pytest.raises(DigestMismatchError, match="'Pell'"):
        check_digest(pell_document(), wrong, strict=True)


def test_a_malformed_pinned_digest_is_rejected() -> None:
    with pytest.raises(LockError, match="'Pell'"):
        check_digest(pell_document(), "abc123")


# --------------------------------------------------------------------------
# The lock
# --------------------------------------------------------------------------

DIGEST_A = hashlib.sha256(b"a").hexdigest()
DIGEST_B = hashlib.sha256(b"b").hexdigest()


def test_the_lock_round_trips_through_yaml_in_order() -> None:
    entries = [
        LockedArticle("Vesk", 12, "2031-01-02T03:04:05Z", DIGEST_A),
        LockedArticle("Ceres (dwarf planet)", 7, "2030-12-31T23:00:00Z", DIGEST_B),
    ]
    mapping = build_lock(entries)
    assert mapping == {
        "articles": [
            {"title": "Vesk", "revision": 12, "timestamp": "2031-01-02T03:04:05Z", "sha256": DIGEST_A},
            {
                "title": "Ceres (dwarf planet)",
                "revision": 7,
                "timestamp": "2030-12-31T23:00:00Z",
                "sha256": DIGEST_B,
            },
        ]
    }
    assert parse_lock(yaml.safe_load(yaml.safe_dump(mapping, sort_keys=False))) == tuple(entries)


def test_an_unquoted_yaml_timestamp_is_normalised() -> None:
    text = (
        "articles:\n"
        "  - title: Vesk\n"
        "    revision: 12\n"
        "    timestamp: 2031-01-02T05:04:05+02:00\n"
        f"    sha256: {DIGEST_A}\n"
    )
    assert isinstance(yaml.safe_load(text)["articles"][0]["timestamp"], datetime)
    (entry,) = parse_lock(yaml.safe_load(text))
    assert entry.timestamp == "2031-01-02T03:04:05Z"


def good_entry(**changes: object) -> dict[str, object]:
    entry: dict[str, object] = {
        "title": "Vesk",
        "revision": 12,
        "timestamp": "2031-01-02T03:04:05Z",
        "sha256": DIGEST_A,
    }
    entry.update(changes)
    return entry


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (good_entry(revision="12"), r"lock entry 2 \('Vesk'\).*revision must be a positive integer"),
        (good_entry(revision=0), r"lock entry 2 \('Vesk'\).*revision"),
        (good_entry(sha256="not-a-digest"), r"lock entry 2 \('Vesk'\).*sha256.*64 hexadecimal"),
        (good_entry(timestamp="2031-01-02"), r"lock entry 2 \('Vesk'\).*date and time"),
        (good_entry(timestamp="yesterday"), r"lock entry 2 \('Vesk'\).*timestamp"),
        (good_entry(title=""), r"lock entry 2.*title must be a non-empty string"),
        (
            {"title": "Vesk", "revision": 12, "sha256": DIGEST_A},
            r"lock entry 2 \('Vesk'\).*missing keys \['timestamp'\]",
        ),
        (good_entry(comment="x"), r"lock entry 2 \('Vesk'\).*unknown keys \['comment'\]"),
        ("Vesk", r"lock entry 2: expected a mapping"),
    ],
)
def test_a_bad_lock_entry_is_named(entry: object, message: str) -> None:
    first = {"title": "Calyx", "revision": 11, "timestamp": "2031-01-01T00:00:00Z", "sha256": DIGEST_B}
    with pytest.raises(LockError, match=message):
        parse_lock({"articles": [first, entry]})


def test_duplicate_titles_and_revisions_are_rejected() -> None:
    first = good_entry()
    with pytest.raises(LockError, match="'Vesk' appears twice"):
        parse_lock({"articles": [first, good_entry(revision=13)]})
    with pytest.raises(LockError, match="'Vesk' and 'Calyx' pin the same revision 12"):
        parse_lock({"articles": [first, good_entry(title="Calyx")]})
    with pytest.raises(LockError, match="appears twice"):
        build_lock([LockedArticle(**first), LockedArticle(**good_entry(revision=13))])  # type: ignore[arg-type]


@pytest.mark.parametrize("mapping", [None, [], {"articles": {}}, {"articles": [], "extra": 1}])
def test_a_lock_must_be_a_mapping_of_articles(mapping: object) -> None:
    with pytest.raises(LockError, match="articles"):
        parse_lock(mapping)


# --------------------------------------------------------------------------
# Configuration and names
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "field_name"),
    [
        ({"base_url": "ftp://example.org"}, "base_url"),
        ({"base_url": "en.wikipedia.org"}, "base_url"),
        ({"endpoint": "graphql"}, "endpoint"),
        ({"contact": " "}, "contact"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"pause_seconds": -1}, "pause_seconds"),
        ({"max_retries": -1}, "max_retries"),
        ({"backoff_base_seconds": 0}, "backoff_base_seconds"),
        ({"max_wait_seconds": -2}, "max_wait_seconds"),
    ],
)
def test_bad_configuration_names_the_setting(settings: dict[str, object], field_name: str) -> None:
    with pytest.raises(ValueError, match=field_name):
        WikipediaConfig(**settings)  # type: ignore[arg-type]


def test_default_urls_point_at_english_wikipedia() -> None:
    config = WikipediaConfig()
    assert config.revision_html_url(42) == "https://en.wikipedia.org/w/rest.php/v1/revision/42/html"
    parsed = urllib.parse.urlsplit(WikipediaConfig(endpoint="parse").revision_html_url(42))
    assert (parsed.netloc, parsed.path) == ("en.wikipedia.org", "/w/api.php")
    assert dict(urllib.parse.parse_qsl(parsed.query))["oldid"] == "42"


def test_revision_url_and_document_ids() -> None:
    assert revision_url("Ceres (dwarf planet)", 7) == (
        "https://en.wikipedia.org/w/index.php?title=Ceres_%28dwarf_planet%29&oldid=7"
    )
    assert article_doc_id("Ceres (dwarf planet)") == "ceres-dwarf-planet"
    assert article_doc_id("Moon") == "moon"
    assert article_doc_id("Tōhoku 2") == "tohoku-2"
    with pytest.raises(ValueError, match="'\\?\\?'"):
        article_doc_id("??")
