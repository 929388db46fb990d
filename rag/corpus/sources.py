"""Turning a corpus entry of the configuration into documents.

Shared by the workflow scripts and the ``rag`` command, so that both read a
Wikipedia corpus the same way: the lock pins each article to a revision and a
digest, the cache keeps every download, and nothing is fetched twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from rag.corpus.articles import document_from_html
from rag.corpus.documents import document_defaults
from rag.corpus.wikipedia import (
    DEFAULT_BASE_URL,
    LockedArticle,
    WikipediaClient,
    WikipediaConfig,
    WikipediaFetchError,
    article_doc_id,
    article_shape_problem,
    check_digest,
    revision_url,
)
from rag.documents.access_metadata import DocumentError
from rag.documents.blocks import Document, text_digest


class HtmlCache(Protocol):
    """Where downloaded HTML is kept; ``read`` returns None on a miss."""

    def read(self, key: str) -> str | None: ...

    def write(self, key: str, text: str) -> None: ...

    def remove(self, key: str) -> None: ...


def wikipedia_client(entry: Mapping) -> WikipediaClient:
    settings = {
        "base_url": entry.get("api", DEFAULT_BASE_URL),
        "endpoint": entry.get("endpoint", "rest"),
    }
    if "contact" in entry:
        settings["contact"] = entry["contact"]
    for key in ("pause_seconds", "max_retries"):
        if key in entry:
            settings[key] = entry[key]
    return WikipediaClient(WikipediaConfig(**settings))


def cache_key(title: str, revision: int) -> str:
    return f"{article_doc_id(title)}-{revision}.html"


def article_html(client: WikipediaClient, cache: HtmlCache, title: str, revision: int) -> str:
    """The HTML of a revision, from the cache or downloaded; only HTML that parses is ever cached.

    A download is parsed before it is written, so a page that is not the
    article (an error page served with status 200, say) never enters the cache
    or the lock. A cached file that no longer parses (written by an older
    version, or damaged) is removed and downloaded again.
    """
    key = cache_key(title, revision)
    html = cache.read(key)
    if html is not None:
        try:
            _check_article(html, title, revision)
            return html
        except DocumentError:
            cache.remove(key)
    html = client.fetch_revision_html(title, revision)
    try:
        _check_article(html, title, revision)
    except DocumentError as error:
        raise WikipediaFetchError(
            f"Wikipedia article {title!r} at revision {revision}: the downloaded page is not a readable "
            f"article ({error}); nothing was cached"
        ) from None
    cache.write(key, html)
    return html


def _check_article(html: str, title: str, revision: int) -> None:
    problem = article_shape_problem(html)
    if problem is not None:
        raise DocumentError(problem)
    document_from_html(html, article_doc_id(title), title, revision)


def article_document(entry: Mapping, title: str, revision: int, timestamp: str | None, html: str) -> Document:
    base_url = entry.get("api", DEFAULT_BASE_URL)
    # An article cannot state who may read it: its corpus's defaults decide.
    defaults = document_defaults(entry, "the corpus entry")
    return document_from_html(
        html,
        article_doc_id(title),
        title,
        revision,
        url=revision_url(title, revision, base_url),
        updated=timestamp[:10] if timestamp else None,
        access=defaults.access,
        tenant=defaults.tenant,
        acl=defaults.acl,
    )


def resolve_lock(entry: Mapping, client: WikipediaClient, cache: HtmlCache, log) -> list[LockedArticle]:
    """Pin every title to its newest revision at or before ``as_of``."""
    articles = []
    for title in entry["titles"]:
        revision, timestamp = client.resolve_revision(title, entry["as_of"])
        html = article_html(client, cache, title, revision)
        document = article_document(entry, title, revision, timestamp, html)
        log.info("%s: revision %s (%s), %d paragraphs", title, revision, timestamp, len(document.blocks))
        articles.append(LockedArticle(title, revision, timestamp, text_digest(document)))
    return articles


def locked_documents(
    entry: Mapping, articles: list[LockedArticle], client: WikipediaClient, cache: HtmlCache
) -> list[Document]:
    """The pinned articles, each checked against its digest (warning, or error if strict)."""
    documents = []
    for article in articles:
        html = article_html(client, cache, article.title, article.revision)
        document = article_document(entry, article.title, article.revision, article.timestamp, html)
        check_digest(document, article.sha256, strict=bool(entry.get("strict", False)))
        documents.append(document)
    return documents
