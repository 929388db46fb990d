"""One schema of access metadata for every source: a lookalike key is an error naming file and line.

Drawn, seeded: a near miss of ``access``, ``tenant`` or ``acl`` (another case,
a plural, a synonym, an invisible or compatibility character inside, a
separator) in Markdown front matter, an HTML ``<meta>`` (by ``name``, or
by ``property``/``http-equiv``/``itemprop`` even when spelled exactly), a BEIR
record (top level, ``metadata``, or nested anywhere), or a corpus's
``default_*`` setting. Each must be refused in one line naming the file and
the key's line, by the pipeline's reader (the parse job's and planning's
:func:`rag.corpus.folders.read_file`, :func:`rag.corpus.beir.parse_corpus`)
and by ``rag ask``'s (:func:`rag.ask.index.parse_documents`).
"""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.ask.index import parse_documents
from rag.corpus.beir import BeirFormatError, parse_corpus
from rag.corpus.documents import document_defaults
from rag.corpus.folders import read_corpus_folder, read_file
from rag.documents.access_metadata import (
    ACCESS_FIELDS,
    ACCESS_LEVELS,
    DocumentDefaults,
    DocumentError,
    lookalike,
    skeleton,
)

SEED = settings(max_examples=60, deadline=None, derandomize=True)
VALUES = {"access": "public", "tenant": "acme", "acl": ["eng"]}
# Characters that render as nothing: every format character of the Basic
# Multilingual Plane and beyond that NFKC keeps, and the other default-ignorables.
INVISIBLE = sorted(
    {chr(code) for code in range(0x110000) if unicodedata.category(chr(code)) == "Cf"}
    | {"\u034f", "\u115f", "\u1160", "\u3164", "\ufe0f", "\uffa0", "\U000e0041"}
)
SYNONYMS = {"access": ["access_level", "accessLevel"], "tenant": ["tenant_id"], "acl": ["groups", "group"]}


@st.composite
def near_misses(draw, field: str | None = None) -> tuple[str, str]:
    """(a key that looks like a field but is not it, the field)."""
    field = field or draw(st.sampled_from(ACCESS_FIELDS))
    key = draw(st.sampled_from([field, *SYNONYMS[field]]))
    changes = draw(
        st.sets(st.sampled_from(["case", "plural", "invisible", "fullwidth", "separator"]), min_size=1)
    )
    if "case" in changes:
        flips = draw(st.lists(st.booleans(), min_size=len(key), max_size=len(key)))
        key = "".join(c.upper() if flip else c for c, flip in zip(key, flips, strict=True))
    if "plural" in changes:
        key += "es" if key.lower().endswith("ss") else "s"
    if "fullwidth" in changes:
        index = draw(st.integers(0, len(key) - 1))
        if key[index].isascii() and key[index].isalpha():
            key = key[:index] + chr(ord(key[index]) - 0x21 + 0xFF01) + key[index + 1 :]
    if "separator" in changes:
        index = draw(st.integers(1, len(key) - 1))
        key = key[:index] + draw(st.sampled_from("-_.")) + key[index:]
    if "invisible" in changes or key == field:
        index = draw(st.integers(0, len(key)))
        key = key[:index] + draw(st.sampled_from(INVISIBLE)) + key[index:]
    assert key != field
    return key, field


def yaml_key(key: str) -> str:
    """A key as a double-quoted YAML scalar, every non-ASCII character escaped."""
    return '"' + "".join(c if c.isascii() and c.isalnum() else f"\\U{ord(c):08x}" for c in key) + '"'


def html_text(key: str) -> str:
    return "".join(c if c.isascii() and c.isalnum() else f"&#x{ord(c):x};" for c in key)


def markdown(key: str, field: str, before: int) -> tuple[str, int]:
    """A Markdown file stating ``key`` on a line after ``before`` other keys; its line number."""
    lines = ["---", *(f"note{number}: x" for number in range(before))]
    lines.append(f"{yaml_key(key)}: {json.dumps(VALUES[field])}")
    return "\n".join([*lines, "---", "", "# Vault", "", "The vault code is 4711."]) + "\n", before + 2


def test_the_fields_themselves_are_no_lookalikes_and_the_drawn_ones_are():
    assert [lookalike(field) for field in ACCESS_FIELDS] == [None, None, None]
    for key, field in [("ACL", "acl"), ("Tenant", "tenant"), ("acls", "acl"), ("groups", "acl")]:
        assert lookalike(key) == field
    assert lookalike("ac\u200bl") == "acl" and lookalike("\uff41ccess") == "access"
    assert skeleton("Default-ACL") == "defaultacl"
    for unrelated in ("title", "tags", "accent", "tenancy_note", "id", "updated", "hide-toc"):
        assert lookalike(unrelated) is None, unrelated


@SEED
@given(near_misses(), st.integers(0, 3))
def test_a_front_matter_lookalike_is_an_error_with_file_and_line_in_the_pipeline_and_in_rag_ask(
    drawn, before
):
    key, field = drawn
    text, line = markdown(key, field, before)
    with pytest.raises(DocumentError) as pipeline:
        read_file(text, "docs/vault.md", "markdown", None, DocumentDefaults("restricted"))
    with pytest.raises(DocumentError) as ask:
        parse_documents([("vault.md", text)], "docs/")
    for error in (pipeline.value, ask.value):
        message = str(error)
        assert message.startswith(f"docs/vault.md, line {line}: key ") and "\n" not in message
        assert f"looks like the access field {field!r}" in message


@SEED
@given(
    near_misses(),
    st.integers(0, 3),
    st.sampled_from(["name", "property", "http-equiv", "itemprop"]),
    st.booleans(),
)
def test_an_html_lookalike_is_an_error_with_file_and_line(drawn, before, attribute, exact):
    key, field = drawn
    if attribute != "name" and exact:
        key = field  # the exact field named by another attribute is refused too
    content = ", ".join(VALUES[field]) if field == "acl" else VALUES[field]
    html = "<html><head>" + "\n" * before
    html += f'<meta {attribute}="{html_text(key)}" content="{content}">'
    html += "</head><body><h1>Vault</h1><p>The vault code is 4711.</p></body></html>"
    with pytest.raises(DocumentError) as pipeline:
        read_file(html, "pages/vault.html", "html", None, DocumentDefaults("public"))
    with pytest.raises(DocumentError) as ask:
        parse_documents([("vault.html", html)], "pages/", source="html")
    for error in (pipeline.value, ask.value):
        assert str(error).startswith(f"pages/vault.html, line {before + 1}: "), str(error)
        assert repr(field) in str(error) and "\n" not in str(error)


@SEED
@given(near_misses(), st.integers(0, 3), st.sampled_from(["top", "metadata", "nested"]))
def test_a_beir_lookalike_is_an_error_with_file_and_line(drawn, before, place):
    key, field = drawn
    lines = [json.dumps({"_id": f"d{n}", "title": "T", "text": "Open text."}) for n in range(before)]
    record: dict = {"_id": "vault", "title": "Vault", "text": "The vault code is 4711."}
    if place == "top":
        record[key] = VALUES[field]
    elif place == "metadata":
        record["metadata"] = {key: VALUES[field]}
    else:
        record["metadata"] = {"extra": {field: VALUES[field]}}  # the exact name where no reader looks
    lines.append(json.dumps(record))
    with pytest.raises(BeirFormatError) as error:
        parse_corpus(lines, "corpus.jsonl", default_access="public")
    assert str(error.value).startswith(f"corpus.jsonl:{before + 1}: "), str(error.value)
    assert repr(field) in str(error.value)


@SEED
@given(near_misses())
def test_a_corpus_default_setting_lookalike_is_an_error_naming_the_key(drawn):
    key, field = drawn
    entry = {"source": "markdown", "documents": "docs", f"default_{key}": VALUES[field]}
    with pytest.raises(DocumentError) as error:
        document_defaults(entry, "config['corpora']['notes']")
    assert str(error.value).startswith(f"config['corpora']['notes'][{f'default_{key}'!r}]: looks like")
    assert f"'default_{field}'" in str(error.value)


@SEED
@given(st.sampled_from(ACCESS_LEVELS), st.sampled_from(ACCESS_LEVELS))
def test_a_stated_access_level_wins_over_the_default_in_every_source(stated, default):
    text = f"---\naccess: {stated}\n---\n\n# Vault\n\nThe vault code is 4711.\n"
    html = f'<meta name="access" content="{stated}"><h1>Vault</h1><p>The vault code is 4711.</p>'
    record = json.dumps({"_id": "v", "title": "V", "text": "The vault code is 4711.", "access": stated})
    nested = json.dumps({"_id": "v", "title": "V", "text": "Code 4711.", "metadata": {"access": stated}})
    defaults = DocumentDefaults(default)
    assert read_file(text, "v.md", "markdown", None, defaults).document.access == stated
    assert read_file(html, "v.html", "html", None, defaults).document.access == stated
    assert parse_corpus([record], "c.jsonl", default)[0].access == stated
    assert parse_corpus([nested], "c.jsonl", default)[0].access == stated


def test_planning_reads_a_folder_with_a_lookalike_as_a_problem_naming_file_and_line(tmp_path):
    (tmp_path / "docs").mkdir()
    text, line = markdown("ACL", "acl", 1)
    (tmp_path / "docs" / "vault.md").write_text(text)
    (tmp_path / "docs" / "open.md").write_text("---\naccess: public\n---\n\n# Open\n\nOpen text here.\n")
    reading = read_corpus_folder(
        {"source": "markdown", "documents": "docs"}, tmp_path, "config['corpora']['x']"
    )
    assert [document.doc_id for document in reading.documents] == ["open"]
    assert (
        len(reading.problems) == 1 and f"vault.md, line {line}: key 'ACL' looks like" in reading.problems[0]
    )
