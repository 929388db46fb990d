"""`rag ask` reads a folder twice, not three times: once as the pipeline does, once more to find the
documents that state no access level (the second parse, with the other default)."""

from __future__ import annotations

from collections import Counter

from rag.ask import cli
from rag.ask.index import documents_without_access, read_documents
from rag.corpus import source_kinds

FILES = {
    "stated.md": "---\naccess: public\n---\n# Stated\n\nIt says public.\n",
    "closed.md": "---\naccess: internal\n---\n# Closed\n\nIt says internal.\n",
    "silent.md": "# Silent\n\nIt says nothing about access.\n",
}


def test_each_file_is_parsed_twice_and_the_unstated_ones_are_found(tmp_path, monkeypatch):
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    parsed = Counter()
    original = source_kinds.parse_markdown_file

    def counting(text, name, *rest):
        parsed[name.rsplit("/", 1)[-1]] += 1
        return original(text, name, *rest)

    monkeypatch.setattr(source_kinds, "parse_markdown_file", counting)
    reading = cli.read_ask_folder(tmp_path, ())
    assert reading.unstated == {"silent"}
    assert {document.doc_id: document.access for document in reading.documents} == {
        "closed": "internal",
        "silent": "restricted",
        "stated": "public",
    }
    assert parsed == dict.fromkeys(FILES, 2)


def test_the_parsed_documents_stand_for_the_first_parse():
    files = [("a.md", FILES["stated.md"]), ("b.md", FILES["silent.md"])]
    closed = read_documents(files).documents
    assert documents_without_access(files, closed=closed) == documents_without_access(files) == {"b"}
