"""Markdown as other projects write it: CommonMark headings, inline markup rendered once for
documents and spans, front matter for other tools, and every problem of a folder at once."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rag.corpus.config_checks import corpus_problems
from rag.corpus.documents import parse_markdown, parse_markdown_file
from rag.corpus.folders import read_corpus_folder
from rag.documents.rendering import render_span
from rag.escaping import visible_lines
from rag.formats.files import read_yaml
from rag.labels import LabelError, locate_spans, markup_difference, parse_questions, span_problems
from rag.pipeline.config import ConfigError, build_plan
from rag.pipeline.job_errors import one_line

PROJECT = Path(__file__).resolve().parents[3]
SCHEMA = read_yaml(PROJECT / "workflow" / "schemas" / "config.schema.yaml")
QUESTIONS_SCHEMA = read_yaml(PROJECT / "workflow" / "schemas" / "questions.schema.yaml")


def sections(document) -> list[tuple[tuple[str, ...], str]]:
    return [(block.section, block.text) for block in document.blocks]


def test_setext_headings_are_the_title_and_sections():
    text = (
        "Widget Toolkit\n==============\n\nLead text.\n\n"
        "Install\n-------\n\nRun pip.\n\n### Deeper\n\nMore.\n"
    )
    document = parse_markdown(text, "README.md")
    assert document.title == "Widget Toolkit"
    assert sections(document) == [
        ((), "Lead text."),
        (("Install",), "Run pip."),
        (("Install", "Deeper"), "More."),
    ]


def test_a_multi_line_setext_heading_and_atx_forms_commonmark_accepts():
    text = "# Title #\n\nLead.\n\nTwo line\nheading\n---\n\nBody.\n\n   ## Indented ##\n\nLast.\n"
    document = parse_markdown(text, "x.md")
    assert document.title == "Title"
    assert sections(document) == [((), "Lead."), (("Two line heading",), "Body."), (("Indented",), "Last.")]


@pytest.mark.parametrize(
    "body",
    [
        "- # inside a list item\n",  # a heading inside a list stays the item's text
        "    # indented code\n",  # four spaces: code, not a heading
        "#not-a-heading\n",  # no space after the hashes
    ],
)
def test_what_commonmark_does_not_read_as_a_heading_is_no_section(body):
    document = parse_markdown(f"# T\n\nLead.\n\n{body}\nAfter.\n", "x.md", skip=())
    assert all(block.section == () for block in document.blocks)


def test_thematic_breaks_link_definitions_and_myst_targets_are_not_text():
    text = (
        "(intro)=\n\n# T\n\nSee the [guide][g] and [`fs.open()`][].\n\n* * *\n\n---\n\n"
        "After the rule.\n\n[g]: https://example.org/guide\n[`fs.open()`]: #open\n"
    )
    document = parse_markdown(text, "x.md")
    assert [block.text for block in document.blocks] == ["See the guide and fs.open().", "After the rule."]


def test_quotes_alerts_roles_and_badges_render_as_a_reader_sees_them():
    text = (
        "# T\n\n[![Build](https://ci/badge.svg)](https://ci/)\n\nProse before.\n"
        "> [!NOTE]\n> The alpha widget weighs 12 grams,\n> > nested.\n\n"
        "The {ref}`format <requirements-file-format>` and {mod}`pip._internal.req` and "
        "{py:func}`~pip.main.run` and {doc}`<install>`.\n"
    )
    document = parse_markdown(text, "x.md")
    assert [block.text for block in document.blocks] == [
        "Build",
        "Prose before.",  # a quote interrupts a paragraph
        "The alpha widget weighs 12 grams, nested.",
        "The format and pip._internal.req and run and install.",
    ]


@pytest.mark.parametrize(
    ("copied", "rendered"),
    [
        ("The `node:fs` module", "The node:fs module"),
        ("See [`fs.open()`][] for the flags", "See fs.open() for the flags"),
        ("see the [user guide][guide] for", "see the user guide for"),
        ("> Note: on Windows,\n> Node.js follows", "Note: on Windows, Node.js follows"),
        ("and {mod}`pip._internal.req` parses it", "and pip._internal.req parses it"),
        ("Plain text, 4,880\u00a0km.", "Plain text, 4,880 km."),
        ("the cell `matrix[i][j]` of", "the cell matrix[i][j] of"),
    ],
)
def test_a_span_copied_from_the_source_renders_like_the_paragraph(copied, rendered):
    assert render_span(copied) == rendered
    paragraph = parse_markdown(f"# T\n\n{copied} and more.\n", "x.md").blocks[0].text
    assert rendered in paragraph


def test_the_bundled_spans_and_answers_are_unchanged_by_rendering():
    data = read_yaml(PROJECT / "resources" / "solar_system" / "questions.yaml")
    questions = data["questions"] if isinstance(data, dict) else data
    texts = [
        span if isinstance(span, str) else span["text"]
        for question in questions
        for piece in question.get("evidence") or []
        for span in piece["spans"]
    ] + [question["answer"] for question in questions if question.get("answer")]
    assert len(texts) > 100
    assert all(render_span(text) == " ".join(text.split()) for text in texts)


def test_front_matter_for_other_tools_is_kept_and_warned_about_once(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, extra in (("a", "hide-toc: true\nsidebar_position: 3"), ("b", "hide-toc: false"), ("c", "")):
        (folder / f"{name}.md").write_text(f"---\ntitle: {name.upper()}\n{extra}\n---\n\nText {name}.\n")
    parsed = parse_markdown_file((folder / "a.md").read_text(), "a.md")
    assert parsed.other_metadata == {"hide-toc": "true", "sidebar_position": "3"}
    reading = read_corpus_folder({"source": "markdown", "documents": "docs"}, tmp_path, "here")
    assert reading.problems == [] and len(reading.documents) == 3
    warning = reading.warning("config['corpora']['mine']")
    assert warning == (
        "config['corpora']['mine']: front matter keys the pipeline does not use, kept as metadata: "
        f"'hide-toc' (2 files: {folder / 'a.md'}, {folder / 'b.md'}); "
        f"'sidebar_position' (1 file: {folder / 'a.md'})"
    )


@pytest.mark.parametrize(
    ("front", "message"),
    [
        ("access: public\naccess: restricted", "key 'access' appears twice"),
        ("tenant: a\ntenant: b", "key 'tenant' appears twice"),
        ("acl: [a]\nacl: [b]", "key 'acl' appears twice"),
        ("tags: vault", "'tags' must be a list of texts"),
        ("access: [public]", "'access' must be one of"),
    ],
)
def test_the_keys_the_pipeline_uses_stay_strict(front, message):
    with pytest.raises(Exception, match=message):
        parse_markdown(f"---\n{front}\n---\n# T\n\nText.\n", "x.md")


def write_folder(root: Path, files: dict[str, str], questions: list | None = None) -> dict:
    (root / "documents").mkdir(parents=True)
    for name, text in files.items():
        (root / "documents" / name).write_text(text)
    entry = {"source": "markdown", "documents": "documents", "skip": ["tables", "references", "code"]}
    if questions is not None:
        (root / "questions.yaml").write_text(yaml.safe_dump(questions))
        entry["questions"] = "questions.yaml"
    return entry


def test_one_pass_reports_every_document_and_span_problem(tmp_path):
    files = {
        "a.md": "---\naccess: Public\n---\n# A\n\nText.\n",
        "b.md": "# B\n\nText.\n\n```\nnever closed\n",
        "c.md": "# C\n\nThe same words. The same words.\n",
        "d.md": "---\nid: c\n---\n# D\n\nDuplicate id.\n",
        "e.md": "# E\n\nSee the [user guide][guide] for the widget kinds.\n",
    }
    questions = [
        {
            "id": "q1",
            "question": "?",
            "evidence": [{"spans": [{"document": "c", "text": "The same words."}]}],
        },
        {"id": "q2", "question": "?", "evidence": [{"spans": [{"document": "a", "text": "Text"}]}]},
        {
            "id": "q3",
            "question": "?",
            "evidence": [{"spans": [{"document": "e", "text": "guide][guide] for"}]}],
        },
    ]
    entry = write_folder(tmp_path, files, questions)
    problems, warnings = corpus_problems(
        {"mine": entry}, tmp_path, QUESTIONS_SCHEMA, lambda p: read_yaml(tmp_path / p)
    )
    assert warnings == []
    assert len(problems) == 5, problems
    assert problems[0].startswith(f"{tmp_path / 'documents' / 'a.md'}: front matter 'access'")
    assert problems[1] == f"{tmp_path / 'documents' / 'b.md'}, line 5: a code fence is never closed"
    assert "document id 'c' is already used by" in problems[2]
    assert "question 'q1'" in problems[3] and "occurs 2 times in document 'c'" in problems[3]
    assert "question 'q3'" in problems[4] and "differs in markup only (link brackets" in problems[4]
    assert not any("'q2'" in problem for problem in problems)  # its document did not parse: said once


def test_build_plan_reports_them_with_the_question_file_problems_and_keeps_the_warning(tmp_path):
    files = {"a.md": "---\nhide-toc: true\n---\n# A\n\nText here.\n", "b.md": "# B\n\n"}
    entry = write_folder(tmp_path, files, [{"id": "q", "question": "?", "evidence": []}, {"question": "?"}])
    config = {
        "corpora": {"mine": entry},
        "chunkers": {"s": {"kind": "sections"}},
        "retrievers": {"b": {"kind": "bm25"}},
        "evaluation": {"depth": 5, "ks": [1, 5]},
    }
    with pytest.raises(ConfigError) as error:
        build_plan(config, SCHEMA, root=tmp_path, questions_schema=QUESTIONS_SCHEMA)
    first, *lines = str(error.value).split("\n")
    assert first == "4 problem(s) in the question files and documents:"
    assert any("b.md: no paragraphs to index" in line for line in lines)
    assert sum("questions.yaml: question" in line for line in lines) == 3
    (tmp_path / "documents" / "b.md").write_text("# B\n\nNow text.\n")
    (tmp_path / "questions.yaml").write_text(
        yaml.safe_dump([{"id": "q", "question": "?", "evidence": [{"spans": ["Now text"]}]}])
    )
    config = {
        "corpora": {"mine": entry},
        "chunkers": {"s": {"kind": "sections"}},
        "retrievers": {"b": {"kind": "bm25"}},
        "evaluation": {"depth": 5, "ks": [1, 5]},
    }
    plan = build_plan(config, SCHEMA, root=tmp_path, questions_schema=QUESTIONS_SCHEMA)
    assert [warning for warning in plan.warnings if "hide-toc" in warning] == [
        "config['corpora']['mine']: front matter keys the pipeline does not use, kept as metadata: "
        f"'hide-toc' (1 file: {tmp_path / 'documents' / 'a.md'})"
    ]


def test_a_span_repeated_in_its_document_is_refused_and_a_span_in_two_documents_is_not():
    first = parse_markdown("# A\n\nOne fact. One fact.\n", "a.md")
    second = parse_markdown("# B\n\nOne fact, said once.\n", "b.md")
    questions = parse_questions(
        [{"id": "q", "question": "?", "evidence": [{"spans": ["One fact"]}]}], "q.yaml"
    )
    locations, problems = span_problems(questions, [first, second])
    assert len(locations) == 3
    assert problems == [
        "question 'q': evidence span 'One fact' occurs 2 times in document 'a' (at characters 0, 10); "
        "a span must be unique in its document, so lengthen it"
    ]
    with pytest.raises(LabelError, match="1 evidence span problem"):
        locate_spans(questions, [first, second])
    assert len(locate_spans(questions, [second])) == 1


@pytest.mark.parametrize(
    ("span", "kinds"),
    [
        ("`pip install", ["backticks (code)"]),
        ("guide][guide] for the", ["link brackets ([text][ref], [text](url))"]),
        ("the_user guide", ["emphasis (* or _)"]),
    ],
)
def test_markup_difference_names_what_differs(span, kinds):
    texts = {"z": "Unrelated.", "doc": "Run pip install. Read the user guide for the kinds."}
    found = markup_difference(span, texts)
    assert found is not None and found[0] == "doc" and found[2] == kinds
    assert markup_difference("words nowhere", texts) is None


def test_a_multi_line_report_prints_as_lines_and_cannot_forge_a_message():
    assert visible_lines("2 problems:\n  a\n  b") == "2 problems:\n  a\n  b"
    assert visible_lines("one\nError: forged\x1b[31m") == "one\n  Error: forged\\x1b[31m"
    error = ConfigError("2 problem(s):\n  x.md: bad\n  y.md: worse")
    assert one_line(error) == "ConfigError: 2 problem(s):\n  x.md: bad\n  y.md: worse"
    assert "\\x0a" not in one_line(error)
