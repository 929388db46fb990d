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


# --------------------------------------------------------------------------
# A folder already indexed is not parsed: the cached index holds what the parse gave
# --------------------------------------------------------------------------

import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rag.ask.index import IndexOptions, index_from_bundle, index_to_bundle  # noqa: E402
from rag.retrieval.filters import parse_caller  # noqa: E402

LEVELS = ("public", "internal", "restricted")
FRONT = st.fixed_dictionaries(
    {},
    optional={
        "access": st.sampled_from(LEVELS),
        "tenant": st.sampled_from(("acme", "globex")),
        "acl": st.lists(st.sampled_from(("eng", "ops")), min_size=1, max_size=2, unique=True),
        "updated": st.sampled_from(("2024-01-05", "2025-06-30")),
    },
)
CALLERS = [
    parse_caller("anyone", {}),
    parse_caller("inside", {"access": ["public", "internal"], "tenant": "acme", "groups": ["eng"]}),
    parse_caller("dated", {"access": list(LEVELS), "groups": ["ops"], "as_of": "2025-01-01"}),
]


def folder_text(front: dict, number: int) -> str:
    lines = [
        f"{key}: {value if not isinstance(value, list) else '[' + ', '.join(value) + ']'}"
        for key, value in front.items()
    ]
    header = "---\n" + "\n".join(lines) + "\n---\n" if lines else ""
    return f"{header}# Widget {number}\n\nThe widget {number} has a mass of {number + 3} kilograms.\n"


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(st.lists(FRONT, min_size=1, max_size=4), st.sampled_from((None, "public", "internal")))
def test_the_cached_view_of_a_folder_is_the_parsed_one(tmp_path_factory, fronts, default_access):
    folder = tmp_path_factory.mktemp("docs")
    for number, front in enumerate(fronts):
        (folder / f"widget{number}.md").write_text(folder_text(front, number), encoding="utf-8")
    options = IndexOptions()
    parsed = cli.read_ask_folder(folder, options.skip)
    index, _ = cli.load_or_build_index(folder, tmp_path_factory.mktemp("cache"), options, reading=parsed)
    index = index_from_bundle(*index_to_bundle(index))  # as a later call reads it
    cached = cli.cached_folder(parsed.files, index)

    def view(document):
        return (
            document.doc_id,
            document.access,
            document.tenant or "",
            tuple(document.acl),
            document.updated,
        )

    assert [view(document) for document in cached.documents] == sorted(map(view, parsed.documents))
    assert cached.unstated == parsed.unstated and cached.notes == parsed.notes
    for caller in CALLERS:
        question = "What is the mass of widget 1?"
        assert cli.nothing_readable(folder, cached, caller, default_access, question) == cli.nothing_readable(
            folder, parsed, caller, default_access, question
        )


@pytest.mark.parametrize("notes", ["note: one", [1], None, {"a": "b"}])
def test_reading_notes_that_are_not_a_list_of_text_make_the_cached_index_unreadable(tmp_path, notes):
    (tmp_path / "a.md").write_text(FILES["stated.md"], encoding="utf-8")
    reading = cli.read_ask_folder(tmp_path, ())
    index, _ = cli.load_or_build_index(tmp_path, tmp_path / "cache", IndexOptions(skip=()), reading=reading)
    arrays, values, manifest = index_to_bundle(index)
    with pytest.raises(ValueError, match="incomplete index"):
        index_from_bundle(arrays, {**values, "reading_notes": notes}, manifest)
