"""Wikipedia downloads against a misbehaving server on 127.0.0.1: nothing bad is ever cached.

Each fault must end in one clear error (or, for a transient one, in the good
body of a later attempt), and the download cache must hold nothing but whole,
parsable articles afterwards: no maintenance page, no mojibake, no truncated
or oversized body, no leftover partial file.
"""

from __future__ import annotations

import gzip
import json
import logging
import time
from pathlib import Path

import pytest

from rag.corpus.sources import article_html, resolve_lock
from rag.corpus.wikipedia import (
    WikipediaClient,
    WikipediaConfig,
    WikipediaFetchError,
    article_shape_problem,
    build_lock,
)
from rag.formats.files import FolderCache
from tests.fault_server import (
    FaultServer,
    chunked,
    cut_short,
    cut_unannounced,
    drip,
    gzip_bomb,
    redirect,
    reply,
    stream,
)

PELL_HTML = (
    Path(__file__).resolve().parents[2] / "fixtures" / "wikipedia" / "parsoid_rest.html"
).read_bytes()
REVISION = 1000003
HTML = {"Content-Type": "text/html; charset=utf-8"}
MAINTENANCE = (
    b"<!DOCTYPE html><html><head><title>Wikimedia Error</title></head><body><h1>Our servers are "
    b"currently under maintenance</h1><p>We are working on it. Please try again in a few minutes; "
    b"this page is shown while the site is being upgraded.</p></body></html>"
)


def client_for(server: FaultServer, **settings) -> WikipediaClient:
    options = {"pause_seconds": 0.0, "max_retries": 1, "timeout_seconds": 5.0, **settings}
    return WikipediaClient(WikipediaConfig(base_url=server.url, **options), sleep=lambda seconds: None)


def cached_files(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir()) if folder.exists() else []


def fetch(server: FaultServer, cache_folder: Path, **settings) -> str:
    return article_html(client_for(server, **settings), FolderCache(cache_folder), "Pell", REVISION)


def refused(server: FaultServer, cache_folder: Path, *script, **settings) -> str:
    server.script[:] = list(script)
    with pytest.raises(WikipediaFetchError) as caught:
        fetch(server, cache_folder, **settings)
    assert caught.value.__cause__ is None
    assert cached_files(cache_folder) == []
    message = str(caught.value)
    assert "\n" not in message and "'Pell'" in message
    return message


def test_a_maintenance_page_served_with_200_is_never_cached(server, tmp_path):
    message = refused(server, tmp_path / "cache", reply(MAINTENANCE, headers=HTML))
    assert "not rendered article HTML" in message
    # Once the wiki is back, the article is downloaded and cached.
    server.script[:] = [reply(PELL_HTML, headers=HTML)]
    assert fetch(server, tmp_path / "cache") == PELL_HTML.decode()
    assert cached_files(tmp_path / "cache") == [f"pell-{REVISION}.html"]


def test_a_page_that_parses_to_nothing_is_never_cached(server, tmp_path):
    empty = b'<div class="mw-parser-output"><table><tr><td>only a table</td></tr></table></div>'
    message = refused(server, tmp_path / "cache", reply(empty, headers=HTML))
    assert "not a readable article" in message and "nothing was cached" in message


def test_a_poisoned_cache_entry_is_replaced(server, tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / f"pell-{REVISION}.html").write_bytes(MAINTENANCE)
    server.script[:] = [reply(PELL_HTML, headers=HTML)]
    assert fetch(server, folder) == PELL_HTML.decode()
    assert (folder / f"pell-{REVISION}.html").read_bytes() == PELL_HTML


def test_a_wrong_charset_is_refused_not_misdecoded(server, tmp_path):
    message = refused(
        server,
        tmp_path / "cache",
        reply(PELL_HTML, headers={"Content-Type": "text/html; charset=iso-8859-1"}),
    )
    assert "charset 'iso-8859-1'" in message


def test_a_body_that_is_not_its_charset_is_refused(server, tmp_path):
    broken = PELL_HTML.replace(b"Pell", b"P\xe9ll")
    message = refused(server, tmp_path / "cache", reply(broken, headers=HTML))
    assert "not valid UTF-8" in message


def test_a_redirect_loop_has_its_own_message(server, tmp_path):
    message = refused(server, tmp_path / "cache", redirect(f"/w/rest.php/v1/revision/{REVISION}/html"))
    assert "more than 5 redirects" in message and "redirect loop" in message
    assert "User-Agent" not in message
    assert len(server.received) == 6


def test_a_redirect_within_the_limit_is_followed(server, tmp_path):
    server.script[:] = [redirect("/elsewhere"), reply(PELL_HTML, headers=HTML)]
    assert fetch(server, tmp_path / "cache") == PELL_HTML.decode()
    assert [request.path for request in server.received][-1] == "/elsewhere"


def test_a_dripping_body_ends_at_the_deadline(server, tmp_path):
    started = time.monotonic()
    message = refused(
        server, tmp_path / "cache", drip(PELL_HTML[:400], 0.1, HTML), timeout_seconds=1.0, max_retries=0
    )
    assert time.monotonic() - started < 1.0 + 1.0
    assert "timed out" in message


@pytest.mark.parametrize("announce", [True, False])
def test_an_oversized_body_is_refused(server, tmp_path, announce):
    message = refused(
        server,
        tmp_path / "cache",
        stream(64 * 1024 * 1024, announce=announce, headers=HTML),
        max_body_bytes=1024 * 1024,
    )
    assert "max_body_bytes" in message


def test_a_gzip_bomb_is_refused_without_expanding_it(server, tmp_path):
    message = refused(server, tmp_path / "cache", gzip_bomb(64 * 1024 * 1024), max_body_bytes=4 * 1024 * 1024)
    assert "expands to more than" in message


def test_an_interrupted_download_leaves_nothing_and_its_partial_file_is_removed(server, tmp_path):
    folder = tmp_path / "cache"
    message = refused(server, folder, cut_short(PELL_HTML, 300, HTML))
    assert "truncated" in message
    # A run killed while writing the cache leaves a hidden partial file; the next run removes it.
    folder.mkdir()
    leftover = folder / f".pell-{REVISION}.html.0123abcd.partial"
    leftover.write_bytes(PELL_HTML[:100])
    server.script[:] = [reply(PELL_HTML, headers=HTML)]
    assert fetch(server, folder) == PELL_HTML.decode()
    assert cached_files(folder) == [f"pell-{REVISION}.html"]


# -- downloads complete or absent (issue 27) -----------------------------------------------

REVISION_ANSWER = json.dumps(
    {
        "query": {
            "pages": [
                {"title": "Pell", "revisions": [{"revid": REVISION, "timestamp": "2024-01-02T03:04:05Z"}]}
            ]
        }
    }
).encode()
JSON = {"Content-Type": "application/json; charset=utf-8"}
ENTRY = {"titles": ["Pell"], "as_of": "2024-06-01"}
# A maintenance page that carries the marker word (in a comment and a stray class) and closes properly.
MARKED_MAINTENANCE = (
    b"<!DOCTYPE html><html><head><title>Maintenance</title></head><body><!-- mw-parser-output -->"
    b'<p class="note mw-parser-output-note">Our servers are under maintenance; please try again.</p>'
    b"</body></html>"
)


def lock_of(server: FaultServer, folder: Path) -> dict:
    articles = resolve_lock(ENTRY, client_for(server), FolderCache(folder), logging.getLogger("test"))
    return build_lock(articles)


def test_a_body_cut_at_60_percent_without_a_length_is_refused_and_a_rerun_is_clean(server, tmp_path):
    server.script[:] = [reply(REVISION_ANSWER, headers=JSON), cut_unannounced(PELL_HTML, 0.6, HTML)]
    with pytest.raises(WikipediaFetchError) as caught:
        lock_of(server, tmp_path / "cut")
    assert caught.value.__cause__ is None and "\n" not in str(caught.value)
    assert "no declared length" in str(caught.value)
    assert cached_files(tmp_path / "cut") == []  # nothing cached, and no lock was built to pin it
    server.script[:] = [reply(REVISION_ANSWER, headers=JSON), reply(PELL_HTML, headers=HTML)]
    recovered = lock_of(server, tmp_path / "cut")
    server.script[:] = [reply(REVISION_ANSWER, headers=JSON), reply(PELL_HTML, headers=HTML)]
    clean = lock_of(server, tmp_path / "clean")
    assert recovered == clean
    assert (tmp_path / "cut" / f"pell-{REVISION}.html").read_bytes() == (
        tmp_path / "clean" / f"pell-{REVISION}.html"
    ).read_bytes()


@pytest.mark.parametrize("fraction", [0.2, 0.6, 0.95])
def test_every_cut_of_the_article_fails_the_article_checks(fraction):
    text = PELL_HTML.decode()
    assert article_shape_problem(text) is None
    assert article_shape_problem(text[: int(len(text) * fraction)]) is not None


def test_a_maintenance_page_carrying_the_marker_is_never_cached(server, tmp_path):
    message = refused(server, tmp_path / "cache", reply(MARKED_MAINTENANCE, headers=HTML))
    assert "not rendered article HTML" in message


def test_a_complete_chunked_or_gzip_body_without_a_length_is_accepted(server, tmp_path):
    server.script[:] = [chunked(PELL_HTML, HTML)]
    assert fetch(server, tmp_path / "chunked") == PELL_HTML.decode()
    zipped = gzip.compress(PELL_HTML)
    server.script[:] = [
        cut_unannounced(zipped, 1.0, {"Content-Encoding": "gzip", **HTML}),
    ]
    assert fetch(server, tmp_path / "gzip") == PELL_HTML.decode()


def test_a_chunked_body_that_stops_before_its_last_chunk_is_refused(server, tmp_path):
    big = PELL_HTML * 4
    message = refused(server, tmp_path / "cache", chunked(big, HTML, complete=False))
    assert "truncated" in message or "attempt" in message


def test_a_gzip_body_cut_without_a_length_is_refused(server, tmp_path):
    zipped = gzip.compress(PELL_HTML)
    message = refused(
        server, tmp_path / "cache", cut_unannounced(zipped, 0.6, {"Content-Encoding": "gzip", **HTML})
    )
    assert "gzip" in message


def test_a_cached_cut_entry_is_removed_and_downloaded_again(server, tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / f"pell-{REVISION}.html").write_bytes(PELL_HTML[: len(PELL_HTML) * 6 // 10])
    server.script[:] = [reply(PELL_HTML, headers=HTML)]
    assert fetch(server, folder) == PELL_HTML.decode()
    assert (folder / f"pell-{REVISION}.html").read_bytes() == PELL_HTML


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_timeout_seconds_bounds_the_whole_call_backoff_included(server, tmp_path):
    clock = FakeClock()
    config = WikipediaConfig(
        base_url=server.url, pause_seconds=0.0, max_retries=6, timeout_seconds=5.0, backoff_base_seconds=1.0
    )
    client = WikipediaClient(config, sleep=clock.sleep, clock=clock)
    server.script[:] = [reply(b"busy", status=503, headers={"Retry-After": "2", **HTML})]
    with pytest.raises(WikipediaFetchError) as caught:
        article_html(client, FolderCache(tmp_path / "cache"), "Pell", REVISION)
    assert sum(clock.sleeps) < 5.0  # without the bound: 6 waits of 2 s
    assert "could not start within timeout_seconds=5" in str(caught.value)
    assert len(server.received) == len(clock.sleeps) + 1 < 7
