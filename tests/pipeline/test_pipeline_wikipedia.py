"""The Wikipedia corpus end to end, against a local MediaWiki stand-in."""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest
import yaml

from tests.workdir import FIXTURES, make_workdir, read_config, snakemake, write_config

ARTICLES = {
    "Pell": (101, "2031-03-30T08:15:00Z", "parsoid_rest.html"),
    "Vesk": (202, "2031-04-02T10:00:00Z", "modern_parse.html"),
}


class Wiki(BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_GET(self):  # noqa: N802 - the http.server API
        Wiki.requests.append(self.path)
        url = urllib.parse.urlsplit(self.path)
        if url.path.endswith("/api.php"):
            title = urllib.parse.parse_qs(url.query)["titles"][0]
            revision, timestamp, _ = ARTICLES[title]
            page = {"title": title, "revisions": [{"revid": revision, "timestamp": timestamp}]}
            self._send(json.dumps({"query": {"pages": [page]}}), "application/json")
            return
        revision = int(url.path.split("/")[-2])
        for _, (known, _, fixture) in ARTICLES.items():
            if known == revision:
                self._send((FIXTURES / "wikipedia" / fixture).read_text(), "text/html")
                return
        self.send_error(404)

    def _send(self, body: str, kind: str) -> None:
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *arguments):
        pass


@pytest.fixture
def wiki():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Wiki)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Wiki.requests.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_pinned_articles_are_locked_fetched_once_and_parsed(tmp_path, wiki):
    workdir = make_workdir(tmp_path / "run", "tiny_wikipedia")
    config = read_config(workdir)
    config["corpora"]["wiki"]["api"] = wiki
    write_config(workdir, config)

    snakemake(workdir, "--cores", "1", "work/qrels/wiki/sentences20.parquet")
    lock = yaml.safe_load((workdir / "resources/wiki/wikipedia.lock.yaml").read_text())
    assert [(a["title"], a["revision"]) for a in lock["articles"]] == [("Pell", 101), ("Vesk", 202)]
    assert all(len(a["sha256"]) == 64 for a in lock["articles"])
    assert sorted(p.name for p in (workdir / "cache/wikipedia").iterdir()) == [
        "pell-101.html",
        "vesk-202.html",
    ]
    html_requests = [path for path in Wiki.requests if "/revision/" in path]
    assert len(html_requests) == 2, "each revision is downloaded once, then read from the cache"

    parsed = pd.read_parquet(workdir / "work/parsed/wiki.parquet")
    assert set(parsed["doc_id"]) == {"pell", "vesk"}
    assert set(parsed["version"]) == {"101", "202"}
    qrels = pd.read_parquet(workdir / "work/qrels/wiki/sentences20.parquet")
    assert set(qrels["question_id"]) == {"pell-discovery", "vesk-crater"}


def test_changed_text_warns_naming_the_article_and_strict_fails(tmp_path, wiki):
    workdir = make_workdir(tmp_path / "run", "tiny_wikipedia")
    config = read_config(workdir)
    config["corpora"]["wiki"]["api"] = wiki
    write_config(workdir, config)
    snakemake(workdir, "--cores", "1", "work/parsed/wiki.parquet")

    # The cached download no longer matches the pinned digest.
    cached = workdir / "cache/wikipedia/pell-101.html"
    cached.write_text(cached.read_text().replace("1958", "1959"))
    (workdir / "work/parsed/wiki.parquet").unlink()
    result = snakemake(workdir, "--cores", "1", "work/parsed/wiki.parquet")
    assert "Pell" in result.stdout + result.stderr and "sha-256" in (result.stdout + result.stderr).lower()

    config["corpora"]["wiki"]["strict"] = True
    write_config(workdir, config)
    (workdir / "work/parsed/wiki.parquet").unlink()
    result = snakemake(workdir, "--cores", "1", "work/parsed/wiki.parquet", check=False)
    assert result.returncode != 0
    assert "Pell" in result.stdout + result.stderr
    assert not (workdir / "work/parsed/wiki.parquet").exists()


def test_no_network_gives_one_clear_error(tmp_path):
    workdir = make_workdir(tmp_path / "run", "tiny_wikipedia")
    result = snakemake(workdir, "--cores", "1", "work/parsed/wiki.parquet", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Pell" in output and "without network access" in output
    assert not (workdir / "resources/wiki/wikipedia.lock.yaml").exists()
