"""Markdown of other dialects, read in one attempt: real files from six projects nobody here wrote
(tests/fixtures/real_markdown/README.md), through the pipeline's parse and ``rag ask``'s alike,
with no dialect markup left in any chunk; titles without a level-1 heading; one parser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from rag.ask.cli import folder_skip, read_ask_folder
from rag.ask.index import IndexOptions, chunker_spec, index_chunks, setup_entries
from rag.ask.setups import ASK_SETUPS
from rag.chunking import chunk_corpus, spec_from_config
from rag.corpus.documents import parse_markdown, parse_markdown_file
from rag.corpus.folders import read_corpus_folder
from rag.corpus.markdown_dialects import _SHORTCODE, remove_shortcodes, strip_dialects
from rag.corpus.source_kinds import DEFAULT_SKIPPED
from rag.documents.access_metadata import DocumentError
from rag.formats.files import read_yaml
from rag.kinds import CHUNKER_KINDS, canonical_entry, defaults
from rag.labels import parse_questions, span_problems

PROJECT = Path(__file__).resolve().parents[3]
REAL = PROJECT / "tests" / "fixtures" / "real_markdown"
PROJECTS = sorted(path for path in REAL.iterdir() if path.is_dir())
CONFIG = read_yaml(PROJECT / "config.yaml")
# Markup of the dialects that a rendered page never shows. Checked in every chunk's text and
# section path; a definition's "]: http" would be a link reference definition left as text.
LEFTOVER = re.compile(
    r"\{\{[<%#]|[<%]\}\}|^\s*(?:!!!|\?\?\?)|:::|===\s*\"|\]:\s*https?:|<Tabs|<TabItem|</?Listing"
    r"|\bimport\s+[\w*{][^\n]*\bfrom\s*['\"]|^export\s+(?:default|const)|\{#[\w-]+\}|\{/\*",
    re.MULTILINE,
)


def grid_specs():
    """Every chunker of config.yaml's grid, as the pipeline fills it with its kind's defaults."""
    parameters = defaults(CHUNKER_KINDS)
    return {
        name: spec_from_config(canonical_entry(parameters, entry, name))
        for name, entry in CONFIG["chunkers"].items()
    }


def pipeline_reading(folder: Path):
    """The folder as the pipeline reads a Markdown corpus entry with the source's defaults."""
    return read_corpus_folder({"source": "markdown", "documents": str(folder)}, Path("."), folder.name)


def test_the_fixtures_are_25_or_more_files_of_5_or_more_projects_with_their_licences():
    files = [path for project in PROJECTS for path in project.glob("*.md")]
    assert len(PROJECTS) >= 5 and len(files) >= 25
    readme = (REAL / "README.md").read_text(encoding="utf-8")
    for project in PROJECTS:
        assert list(project.glob("LICENSE*.txt")), project.name
        for path in project.glob("*.md"):
            assert f"`{project.name}/{path.name}`" in readme


@pytest.mark.parametrize("project", PROJECTS, ids=[project.name for project in PROJECTS])
def test_every_real_file_parses_in_one_attempt_with_no_markup_in_any_chunk(project):
    reading = pipeline_reading(project)
    assert reading.problems == []
    assert len(reading.documents) == len(list(project.glob("*.md")))
    chunks = [chunk for spec in grid_specs().values() for chunk in chunk_corpus(reading.documents, spec)]
    chunks += index_chunks(reading.documents, IndexOptions(skip=DEFAULT_SKIPPED["markdown"]))
    left = [(chunk.chunk_id, match.group(0)) for chunk in chunks for match in LEFTOVER.finditer(chunk.text)]
    assert left == []
    titles = [document.title for document in reading.documents]
    assert all(title and not LEFTOVER.search(title) for title in titles)


@pytest.mark.parametrize("project", PROJECTS, ids=[project.name for project in PROJECTS])
def test_rag_ask_reads_a_folder_through_the_pipelines_parse(project):
    """Same documents, blocks and skip setting; the same chunks from the same chunker."""
    pipeline = sorted(pipeline_reading(project).documents, key=lambda document: document.doc_id)
    skip = folder_skip(project, configs=[])
    assert skip == DEFAULT_SKIPPED["markdown"]  # list items kept, as the pipeline keeps them
    asked = read_ask_folder(project, skip)
    assert asked.documents == pipeline
    options = IndexOptions(skip=skip)
    assert index_chunks(asked.documents, options) == chunk_corpus(pipeline, chunker_spec(options))


def test_rag_ask_reads_the_bundled_corpus_as_its_grid_entry_says():
    entry = CONFIG["corpora"]["solar_system"]
    folder = PROJECT / entry["documents"]
    skip = folder_skip(folder, configs=[PROJECT / "config.yaml"])
    assert skip == tuple(entry["skip"])
    pipeline = read_corpus_folder(entry, PROJECT, "solar_system")
    asked = read_ask_folder(folder, skip)
    assert asked.documents == sorted(pipeline.documents, key=lambda document: document.doc_id)


# --------------------------------------------------------------------------
# Titles
# --------------------------------------------------------------------------


def test_a_chapter_starting_at_level_two_is_titled_by_its_first_heading_with_a_note():
    parsed = parse_markdown_file("## Functions\n\nText.\n\n### Parameters\n\nMore.\n", "ch03.md")
    assert parsed.document.title == "Functions"
    assert parsed.title_from == "its first heading ('Functions', level 2)"
    # The title heads no section of its own, as a level-1 heading would not.
    assert [block.section for block in parsed.document.blocks] == [(), ("Parameters",)]


def test_a_first_heading_that_shares_its_level_stays_a_section():
    parsed = parse_markdown_file("## Install\n\nRun it.\n\n## Use\n\nCall it.\n", "README.md")
    assert parsed.document.title == "Install"
    assert [block.section for block in parsed.document.blocks] == [("Install",), ("Use",)]


def test_a_file_without_headings_is_titled_by_its_file_name():
    parsed = parse_markdown_file("Only a paragraph.\n", "notes/meeting-notes.md")
    assert (parsed.document.title, parsed.title_from) == ("meeting-notes", "its file name")


def test_an_h1_in_an_html_block_is_a_title_and_a_level_one_heading_needs_no_note():
    readme = '<div align="center">\n<h1>Widget <em>Kit</em></h1>\n</div>\n\n## Install\n\nRun it.\n'
    parsed = parse_markdown_file(readme, "README.md")
    assert (parsed.document.title, parsed.title_from) == ("Widget Kit", None)
    assert parse_markdown_file("# Real\n\nText.\n", "a.md").title_from is None


def test_a_folder_gets_one_warning_naming_every_file_titled_by_a_fallback(tmp_path):
    for name, text in {"a.md": "## A\n\nText.\n", "b.md": "Text.\n", "c.md": "# C\n\nText.\n"}.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    reading = pipeline_reading(tmp_path)
    assert reading.problems == []
    (warning,) = reading.warnings("corpus")
    assert warning.startswith("corpus: 2 files without a level-1 heading")
    assert (
        "a.md (from its first heading ('A', level 2))" in warning and "b.md (from its file name)" in warning
    )
    assert "c.md" not in warning


def test_a_question_naming_a_file_whose_front_matter_sets_another_id_gets_a_hint(tmp_path):
    (tmp_path / "install-guide.md").write_text("---\nid: install\n---\n# Install\n\nRun pip.\n")
    reading = pipeline_reading(tmp_path)
    questions = parse_questions(
        [
            {
                "id": "q",
                "question": "?",
                "evidence": [{"spans": [{"document": "install-guide", "text": "pip"}]}],
            }
        ],
        "q.yaml",
    )
    _, problems = span_problems(questions, reading.documents, reading.failed, reading.file_ids)
    (problem,) = problems
    assert "names unknown document 'install-guide'" in problem and "sets the id 'install'" in problem


# --------------------------------------------------------------------------
# Each construct
# --------------------------------------------------------------------------


def texts(markdown: str, skip=DEFAULT_SKIPPED["markdown"]) -> list[str]:
    return [block.text for block in parse_markdown(markdown, "x.md", skip=skip).blocks]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{{< figure src="a.png" >}}\n\nSee {{% term "a" %}} here.\n', ["See here."]),
        ("{{< note >}}\nKept text.\n{{< /note >}}\n", ["Kept text."]),
        ('{{< code-toggle\n  file="hugo"\n>}}\n\nAfter.\n', ["After."]),
        ('!!! note "Title"\n\n    Body of the note.\n\nAfter.\n', ["Body of the note.", "After."]),
        ('=== "Latest"\n\n    In the tab.\n\n=== "Older"\n\n    Other tab.\n', ["In the tab.", "Other tab."]),
        ("??? tip\n\n    !!! warning\n\n        Nested.\n", ["Nested."]),
        (":::tip[Pro tip]\n\nUse it.\n\n:::\n", ["Use it."]),
        (":::warning Careful\nDo not.\n:::\n", ["Do not."]),
        ('import Tabs from "@theme/Tabs";\nimport X from "x";\n\nProse.\n', ["Prose."]),
        ("export const meta = {\n  a: 1,\n};\n\nProse.\n", ["Prose."]),
        ('<Tabs groupId="os">\n<TabItem value="a">\n\nInside.\n\n</TabItem>\n</Tabs>\n', ["Inside."]),
        ("{/* a comment */}\n\nProse.\n", ["Prose."]),
        ("{{#include ../listings/a.rs}}\n\nProse {{#title T}}.\n", ["Prose ."]),
        ("See the [guide] and [Ref][guide].\n\n[guide]: https://example.org\n", ["See the guide and Ref."]),
        ("Keep [not a link] as written.\n", ["Keep [not a link] as written."]),
        ("## Install {#install}\n\nText.\n", ["Text."]),
        ("<!-- hidden -->\nShown.\n", ["Shown."]),
    ],
)
def test_each_construct_is_dropped_and_its_text_kept(body, expected):
    assert texts(f"# T\n\n{body}") == expected


def test_examples_of_markup_inside_code_stay_code():
    body = "```md\n!!! note\n{{< qr >}}\n:::tip\n```\n"
    (code,) = texts(f"# T\n\n{body}", skip=())
    assert code.startswith("!!! note {{") and code.endswith(":::tip")
    assert texts(f"# T\n\n{body}\nProse.\n") == ["Prose."]


def test_a_heading_attribute_list_leaves_the_section_name():
    document = parse_markdown("# T\n\n## Install {#install}\n\nText.\n", "x.md")
    assert document.blocks[0].section == ("Install",)


# --------------------------------------------------------------------------
# Fuzz
# --------------------------------------------------------------------------

PIECES = st.sampled_from(
    [
        "{{<",
        ">}}",
        "{{%",
        "%}}",
        "{{#include a}}",
        "!!! note",
        "??? tip",
        '=== "Tab"',
        ":::",
        ":::note",
        "import X from 'y';",
        "export const a = 1;",
        "[a]",
        "[a]: http://x",
        "```",
        "    ",
        "\t",
        "\n",
        "\n\n",
        "# ",
        "## ",
        "- ",
        "> ",
        "<h1>",
        "</h1>",
        "<!--",
        "-->",
        "{#id}",
        "{/* c */}",
        "word",
    ]
)
TEXT = st.lists(st.one_of(PIECES, st.text(max_size=8)), max_size=40).map("".join)


@seed(51)
@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_arbitrary_text_never_raises_and_keeps_its_lines(text):
    lines = text.split("\n")
    assert len(strip_dialects(lines)) == len(lines)
    try:
        parse_markdown(text, "fuzz.md", skip=DEFAULT_SKIPPED["markdown"])
    except DocumentError:
        pass


WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), min_size=1, max_size=5).map(" ".join)
CONSTRUCTS = st.sampled_from(
    [
        "{{{{< shortcode {0} >}}}}\n{0}\n{{{{< /shortcode >}}}}\n",
        'Inline {{{{% term "{0}" %}}}} {0}.\n',
        '!!! note "{0}"\n\n    {0}\n',
        '=== "{0}"\n\n    {0}\n',
        ":::tip[{0}]\n\n{0}\n\n:::\n",
        "import {{ {0} }} from 'x';\n",
        "{{{{#include {0}.rs}}}}\n",
        "[{0}]\n\n[{0}]: https://example.org\n",
        "## {0} {{#anchor}}\n\n{0}\n",
        "{0}\n",
    ]
)


@seed(52)
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(CONSTRUCTS, WORDS), min_size=1, max_size=8))
def test_documents_built_of_recognised_constructs_leave_no_marker(pieces):
    body = "\n".join(template.format(words) for template, words in pieces)
    try:
        document = parse_markdown(f"# T\n\n{body}", "fuzz.md", skip=DEFAULT_SKIPPED["markdown"])
    except DocumentError as error:
        assert "no paragraphs" in str(error)
        return
    for block in document.blocks:
        assert not LEFTOVER.search(block.text), block.text
        assert "[" not in block.text and "{" not in block.text, block.text


def test_rag_asks_chunker_is_a_chunker_of_the_grid():
    parameters = defaults(CHUNKER_KINDS)
    grid = [canonical_entry(parameters, entry, name) for name, entry in CONFIG["chunkers"].items()]
    for setup in ASK_SETUPS:
        options = IndexOptions(dense_model="all-MiniLM-L6-v2" if setup == "bm25_minilm" else None)
        assert setup_entries(options).chunker in grid


@seed(53)
@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["{{", "{{<", "{{%", "{{#", "{{#a", ">}}", "%}}", "}}", "}", "{", "<", "%", "#", "a", " "]
        ),
        max_size=30,
    ).map("".join)
)
def test_shortcodes_are_removed_as_their_regular_expression_removes_them(line):
    assert remove_shortcodes(line) == _SHORTCODE.sub("", line)


def test_lines_of_unclosed_openers_are_read_in_one_pass():
    """Not timed: the same output as the regular expression, on inputs that would make it quadratic."""
    for line in ("{{<" * 20000 + "}}", "{{#a{" * 20000 + "}}", "{{%" * 20000 + ">}}"):
        assert strip_dialects([line]) == [_SHORTCODE.sub("", line)]
    heading = "## " + " " * 50000 + "x {#a"
    assert strip_dialects([heading, "## A " + " " * 50000 + "{#a}"]) == [heading, "## A"]


@pytest.mark.parametrize("project", PROJECTS, ids=[project.name for project in PROJECTS])
def test_rag_ask_answers_from_each_real_folder_in_one_attempt(project, tmp_path, capsys):
    from rag import cli

    arguments = [
        "ask",
        "What are the options and their default values?",
        "--documents",
        str(project),
        "--default-access",
        "public",
    ]
    arguments += ["--retriever", "bm25_lsa_ivf", "--cache", str(tmp_path / "cache")]
    assert cli.main(arguments) == 0
    output = capsys.readouterr().out
    prompt = output.split("<sources>")[1].split("</sources>")[0]
    assert prompt.count("\n  | [") >= 1 and not LEFTOVER.search(prompt)
