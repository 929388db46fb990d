"""One access model for every source (issue 27, family 1): what a reader stores as each document's access."""

from __future__ import annotations

import json

import pytest

from rag.corpus.beir import BeirFormatError, parse_corpus
from rag.corpus.folders import read_document
from rag.corpus.sources import article_document
from rag.documents.access_metadata import DocumentError
from rag.documents.blocks import Document

BODY = "<title>Notes</title><p>The vault code is 4711.</p>"


@pytest.mark.parametrize("default_access", ["public", "internal", "restricted"])
def test_plain_text_takes_the_corpus_default(default_access):
    document, _ = read_document("The vault code is 4711.\n", "notes/vault.txt", "text", None, default_access)
    assert document.access == default_access


@pytest.mark.parametrize(
    ("html", "default_access", "access"),
    [
        (BODY, "restricted", "restricted"),
        (BODY, "public", "public"),
        ('<meta name="access" content="public">' + BODY, "restricted", "public"),
        ('<head><META NAME="access" content="restricted"/></head>' + BODY, "public", "restricted"),
    ],
)
def test_html_declares_access_in_a_meta_tag_or_takes_the_default(html, default_access, access):
    document, _ = read_document(html, "pages/vault.html", "html", None, default_access)
    assert document.access == access


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (
            '<meta name="access" content="restricted">\n<meta name="access" content="public">' + BODY,
            'pages/vault.html, line 2: a second <meta name="access"> (the first is on line 1)',
        ),
        (
            '<meta name="access" content="Public">' + BODY,
            'pages/vault.html, line 1: <meta name="access"> must be',
        ),
        ('<meta name="access">' + BODY, "must be one of public, internal, restricted, got ''"),
        # One schema for every source: another case is a lookalike, an error, not a match.
        (
            '<head><META NAME="Access" content="restricted"/></head>' + BODY,
            "pages/vault.html, line 1: <meta name>: key 'Access' looks like the access field 'access'",
        ),
    ],
)
def test_an_html_access_not_read_with_certainty_is_an_error(html, message):
    with pytest.raises(DocumentError) as caught:
        read_document(html, "pages/vault.html", "html", None, "public")
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_beir_records_carry_access_or_take_the_default():
    lines = [
        json.dumps({"_id": "a", "title": "A", "text": "Open text.", "access": "public"}),
        json.dumps({"_id": "b", "title": "B", "text": "Staff text."}),
    ]
    documents = parse_corpus(lines, "corpus.jsonl", "restricted")
    assert [(document.doc_id, document.access) for document in documents] == [
        ("a", "public"),
        ("b", "restricted"),
    ]
    assert parse_corpus(lines, "corpus.jsonl", "internal")[1].access == "internal"
    with pytest.raises(BeirFormatError, match=r"^corpus\.jsonl:1: 'access' must be one of"):
        parse_corpus([json.dumps({"_id": "a", "text": "x", "access": "everyone"})], "corpus.jsonl")


def test_wikipedia_articles_take_the_corpus_default():
    html = '<div class="mw-parser-output"><p>Mars is the fourth planet.</p></div>'
    assert article_document({}, "Mars", 1, None, html).access == "restricted"
    assert article_document({"default_access": "public"}, "Mars", 1, None, html).access == "public"


def test_a_document_built_without_an_access_level_is_restricted():
    assert Document(doc_id="x", title="X", version="1", blocks=()).access == "restricted"


@pytest.mark.parametrize(
    ("text", "name", "source"),
    [
        ('---\nid: "evil\\e[2Jid"\n---\n# T\n\nText.\n', "notes/evil.md", "markdown"),  # YAML's \e is ESC
        ("# T\n\nText.\n", "notes/evil\x1b]0;x\x07.md", "markdown"),
        ("Text.\n", "notes/evil\u202e.txt", "text"),
    ],
)
def test_a_document_id_with_control_characters_is_refused_shown_escaped(text, name, source):
    with pytest.raises(DocumentError) as caught:
        read_document(text, name, source, None, "public")
    message = str(caught.value)
    assert "holds control or invisible characters" in message
    assert (
        "\x1b" not in message.split(": document id ")[1]
        and "\u202e" not in message.split(": document id ")[1]
    )


def test_a_beir_id_with_an_escape_is_refused():
    with pytest.raises(BeirFormatError, match=r"^corpus\.jsonl:1: document id 'a\\x1b\[31m' holds control"):
        parse_corpus([json.dumps({"_id": "a\x1b[31m", "text": "x"})], "corpus.jsonl")
