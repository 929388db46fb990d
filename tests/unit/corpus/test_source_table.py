"""The table of corpus sources against the schema, the plan's checks and the folder reader."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.corpus.config_checks import check_corpus, corpus_level
from rag.corpus.documents import SKIPPABLE
from rag.corpus.folders import folder_files, read_file, skipped_setting
from rag.corpus.source_kinds import DEFAULT_SKIPPED, FOLDER_SOURCES, SOURCES, source_of_file
from rag.documents.access_metadata import DocumentError
from rag.kinds import ConfigError
from tests.workdir import PROJECT

SCHEMA = yaml.safe_load((PROJECT / "workflow/schemas/config.schema.yaml").read_text())
CORPUS = SCHEMA["properties"]["corpora"]["additionalProperties"]["properties"]


def test_the_schema_names_the_sources_of_the_table():
    assert sorted(CORPUS["source"]["enum"]) == sorted(SOURCES)


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_every_own_key_of_a_row_is_in_the_schema_and_says_whose_it_is(source):
    for key in SOURCES[source].own:
        assert key in CORPUS, f"{source}: key {key!r} is not in the schema"
        assert source in CORPUS[key]["description"], f"the schema's {key!r} does not name {source!r}"


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_the_default_skips_are_skippable_and_a_setting_without_skip_takes_them(source):
    row = SOURCES[source]
    assert set(row.default_skip) <= set(SKIPPABLE)
    assert skipped_setting({"source": source}, "here") == DEFAULT_SKIPPED[source] == row.default_skip
    if row.always_skips:
        with pytest.raises(DocumentError, match="always skips"):
            skipped_setting({"source": source, "skip": []}, "here")


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_required_keys_and_levels_come_from_the_row(source):
    row = SOURCES[source]
    entry = {"source": source, **{key: "x" for key in row.required}}
    check_corpus(entry, "c")
    assert corpus_level(entry) == row.levels[0]
    for key in row.required:
        with pytest.raises(ConfigError, match=f"required for source '{source}'"):
            check_corpus({k: v for k, v in entry.items() if k != key}, "c")


def test_folder_files_takes_each_sources_endings_and_nothing_else(tmp_path):
    for source, endings in FOLDER_SOURCES.items():
        for ending in endings:
            (tmp_path / f"{source}{ending.upper()}").write_text("x")
    (tmp_path / "notes.rst").write_text("x")
    for source, endings in FOLDER_SOURCES.items():
        found = {path.name for path in folder_files(tmp_path, source)}
        assert found == {f"{source}{ending.upper()}" for ending in endings}


def test_a_source_that_is_not_a_folder_of_files_is_refused_by_the_reader():
    with pytest.raises(DocumentError, match="unknown folder source 'beir'"):
        read_file("text", "a.txt", "beir")


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.text(max_size=12), st.sampled_from(["", ".md", ".MD", ".txt", ".html", ".htm", ".pdf", ".x"]))
def test_a_file_name_has_at_most_one_source_and_it_reads_that_ending(stem, ending):
    source = source_of_file(stem.replace("/", "") + ending)
    if source is not None:
        assert (stem.replace("/", "") + ending).lower().endswith(FOLDER_SOURCES[source])


def test_rag_ask_reads_a_folder_as_the_first_source_whose_files_it_holds(tmp_path):
    """A folder of PDFs is read as bytes of the pdf row; one with Markdown stays Markdown."""
    from rag.corpus.folders import read_folder_files
    from rag.corpus.markdown_files import FolderError

    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    (pdfs / "a.pdf").write_bytes(b"%PDF-1.4 not really")
    (pdfs / "notes.docx").write_bytes(b"ignored")
    assert read_folder_files(pdfs) == ("pdf", [("a.pdf", b"%PDF-1.4 not really")])
    (pdfs / "b.md").write_text("# B\n\nText.\n", encoding="utf-8")
    assert read_folder_files(pdfs) == ("markdown", [("b.md", "# B\n\nText.\n")])
    outside = tmp_path / "secret.pdf"
    outside.write_bytes(b"%PDF-1.4")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "c.pdf").symlink_to(outside)
    with pytest.raises(FolderError, match="outside the corpus folder"):
        read_folder_files(linked)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FolderError, match=r"no Markdown documents \(\*\.md\)"):
        read_folder_files(empty)
    with pytest.raises(FolderError, match="no such folder"):
        read_folder_files(tmp_path / "missing")
