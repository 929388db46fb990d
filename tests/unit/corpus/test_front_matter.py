"""Front matter read with certainty or refused, naming file and line (issue 27, family 2)."""

from __future__ import annotations

import pytest

from rag.corpus.documents import parse_markdown
from rag.corpus.front_matter import FrontMatterError, load_front_matter
from rag.documents.access_metadata import DocumentError

BODY = "# Secret\n\nThe vault code is 4711.\n"


def alias_bomb() -> str:
    """The billion-laughs front matter: nine levels of nine aliases, under 500 bytes."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 9):
        aliases = ",".join(f"*a{level - 1}" for _ in range(9))
        lines.append(f"a{level}: &a{level} [{aliases}]")
    return "---\n" + "\n".join(lines) + "\n---\n" + BODY


def refusal(text: str) -> str:
    with pytest.raises(DocumentError) as caught:
        parse_markdown(text, "notes/secret.md", default_access="public")
    message = str(caught.value)
    assert message.startswith("notes/secret.md") and "\n" not in message
    return message


def test_the_duplicate_access_document_is_an_error_naming_file_and_line():
    text = "---\nid: secret\naccess: restricted\naccess: public\n---\n" + BODY
    assert refusal(text) == ("notes/secret.md, line 4: key 'access' appears twice (first on line 3)")


@pytest.mark.parametrize(
    ("front_matter", "message"),
    [
        ("access: restricted\n'access': public", "line 3: key 'access' appears twice"),
        ("title: A\ntags:\n  - a\nid: x\ntitle: B", "line 6: key 'title' appears twice (first on line 2)"),
        ("id: &name secret\ntitle: *name", "line 2: an anchor (&name)"),
        ("id: !!str 12", "line 2: a tag (tag:yaml.org,2002:str)"),
        ("id: !!python/object:os.system x", "line 2: a tag"),
        ("<<: {access: public}\naccess: restricted", "line 2: a merge key (<<)"),
        ("<<:\n  access: public\nid: x", "line 2: a merge key (<<)"),
        ("id: {a: 1}", "line 2: a flow-style mapping"),
        ("? [a, b]\n: c", "line 2: a key that is a list or mapping"),
        ("id: x\u2028access: public", "line 2: a line separator other than LF, CRLF or CR (U+2028)"),
        ("id: x\naccess: restricted\x85access: public", "line 3: a line separator other than LF"),
        ("id: x\n\x0caccess: public", "line 3: a line separator other than LF"),
    ],
)
def test_front_matter_needing_more_than_plain_values_is_refused(front_matter, message):
    assert message in refusal("---\n" + front_matter + "\n---\n" + BODY)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("\n---\naccess: restricted\n---\n" + BODY, "line 2: front matter must open on line 1"),
        (" \n\n---\naccess: restricted\n---\n" + BODY, "line 3: front matter must open on line 1"),
        ("---\u2028access: restricted\u2028---\n" + BODY, "line 1: the front matter fence is followed by"),
        ("---\x85access: restricted\x85---\n" + BODY, "line 1: the front matter fence is followed by"),
    ],
)
def test_a_fence_that_is_not_certainly_line_1_is_refused(text, message):
    assert message in refusal(text)


def test_the_alias_bomb_is_refused_before_any_alias_is_followed():
    text = alias_bomb()
    assert len(text.split("---\n")[1].encode()) < 500
    assert "line 2: an anchor (&a0)" in refusal(text)
    with pytest.raises(FrontMatterError) as caught:
        load_front_matter("x: *undefined", 2)
    assert caught.value.line == 2 and "alias" in caught.value.problem


def test_plain_values_lists_and_maps_still_read():
    text = "---\nid: x\naccess: restricted\ntags: [a, b]\nupdated: 2026-03-01\nversion: 2\n---\n" + BODY
    document = parse_markdown(text, "x.md", default_access="public")
    assert (document.access, document.tags, document.updated, document.version) == (
        "restricted",
        ("a", "b"),
        "2026-03-01",
        "2",
    )
    assert load_front_matter("a:\n  b: [1, 2]\n  c: 'x'", 2) == {"a": {"b": [1, 2], "c": "x"}}
