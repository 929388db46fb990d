"""Tables as evidence: one rendering for PDF, Markdown and HTML tables, kept whole by the chunkers."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from rag.chunking import ChunkerSpec, chunk_document
from rag.corpus.articles import parse_article_html_counted
from rag.corpus.document_tables import documents_from_frame, documents_to_table
from rag.corpus.documents import parse_markdown_counted, table_block
from rag.corpus.table_text import colspan_of, markdown_cells, render_table, table_blocks
from rag.documents.access_metadata import DocumentError
from rag.documents.blocks import Block, Document
from rag.documents.passages import normalize_passage
from rag.labels import LabelError, locate_spans, parse_questions
from rag.text import count_words
from tests.workdir import PROJECT

KEEP_TABLES = ("lists", "references", "code")


def check_rows(rendering) -> None:
    """A rendering's rows lie in order inside its text, each a trimmed, non-empty stretch."""
    check_spans(rendering.text, rendering.rows)


def check_spans(text: str, rows) -> None:
    previous = 0
    for start, end in rows:
        assert previous <= start < end <= len(text)
        piece = text[start:end]
        assert piece == piece.strip() and piece
        previous = end


def test_a_table_renders_as_text_and_as_header_value_pairs():
    rows = [["Moon", "Mean radius", ""], ["Phobos", "11.1 km", "1877"], ["", "", ""], ["Deimos", "6.2 km"]]
    rendering, pairs = render_table(rows)
    assert rendering.text == "Moon | Mean radius | / Phobos | 11.1 km | 1877 / | | / Deimos | 6.2 km"
    assert (
        pairs.text == "Moon: Phobos; Mean radius: 11.1 km; column 3: 1877. Moon: Deimos; Mean radius: 6.2 km."
    )
    assert [rendering.text[start:end] for start, end in rendering.rows] == [
        "Moon | Mean radius |",
        "Phobos | 11.1 km | 1877",
        "| |",
        "Deimos | 6.2 km",
    ]
    assert [pairs.text[start:end] for start, end in pairs.rows] == [
        "Moon: Phobos; Mean radius: 11.1 km; column 3: 1877.",
        "Moon: Deimos; Mean radius: 6.2 km.",
    ]
    assert table_blocks(rows) == (rendering.text, pairs.text)
    assert render_table([]) == render_table([[]]) and render_table([])[0].text == ""


CELL = st.one_of(
    st.none(),
    st.text(alphabet=st.sampled_from(list("ab1 |\\:;./-\u00a0\u0301\u200b\t\n")), max_size=6),
)


@seed(52)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(CELL, max_size=5), max_size=6))
def test_any_rows_render_with_rows_inside_the_text(rows):
    """Ragged rows, pipes, empty headers, None cells, spaces only, combining marks: a rendering."""
    rendering, pairs = render_table(rows)
    for table in (rendering, pairs):
        check_rows(table)
        assert table.text == normalize_passage(table.text)
    cells = [["" if cell is None else cell for cell in row] for row in rows]
    assert rendering.text == normalize_passage(" / ".join(" | ".join(row) for row in cells))
    # Every row that has text has its own stretch, in the text as the row alone renders.
    rendered = [normalize_passage(" | ".join(row)) for row in cells]
    if " / ".join(rendered) == rendering.text:
        assert [rendering.text[start:end] for start, end in rendering.rows] == [
            row for row in rendered if row
        ]


def test_markdown_cells_keep_escaped_bars_and_empty_cells():
    assert markdown_cells("| a \\| b | | c |") == ["a | b", "", "c"]
    assert markdown_cells("a | b") == ["a", "b"]
    assert markdown_cells("| x \\|") == ["x |"]


def test_markdown_tables_become_two_blocks_and_skip_tables_stays_possible():
    text = (
        "# Moons\n\nIntro.\n\n| Moon | | Radius |\n|:--|--|--:|\n| *Phobos* | x | 11.1 km | extra |\n"
        "| Deimos \\| II |\n\nAfter.\n"
    )
    document, skipped = parse_markdown_counted(text, "moons.md", KEEP_TABLES)
    assert [block.text for block in document.blocks] == [
        "Intro.",
        "Moon | | Radius / Phobos | x | 11.1 km | extra / Deimos | II",
        "Moon: Phobos; column 2: x; Radius: 11.1 km. Moon: Deimos | II.",
        "After.",
    ]
    assert skipped["tables"] == 0 and all(block.table_rows for block in document.blocks[1:3])
    document, skipped = parse_markdown_counted(text, "moons.md", ("tables", *KEEP_TABLES))
    assert [block.text for block in document.blocks] == ["Intro.", "After."] and skipped["tables"] == 4


def test_html_tables_with_colspan_and_a_nested_table():
    page = (
        "<h2>Probes</h2><p>Before.</p><table class='wikitable'>"
        "<tr><th>Probe</th><th colspan='2'>Arrival</th></tr>"
        "<tr><td>Venera <b>13</b></td><td>1982</td><td>March<table><tr><td>inner</td><td>cell</td></tr>"
        "</table></td></tr></table><table class='infobox'><tr><td>skipped</td></tr></table><p>After.</p>"
    )
    blocks, skipped = parse_article_html_counted(page, "probes", KEEP_TABLES)
    assert [block.text for block in blocks] == [
        "Before.",
        "Probe | Arrival | Arrival / Venera 13 | 1982 | March inner cell",
        "Probe: Venera 13; Arrival: 1982; Arrival: March inner cell.",
        "After.",
    ]
    assert all(block.section == ("Probes",) for block in blocks)
    blocks, skipped = parse_article_html_counted(page, "probes")
    assert [block.text for block in blocks] == ["Before.", "After."] and skipped["tables"] == 2


def test_colspan_is_a_bounded_whole_number():
    assert [colspan_of(value) for value in (None, "", "2", " 3 ", "0", "-1", "x", "²", "99999999999")] == [
        1,
        1,
        2,
        3,
        1,
        1,
        1,
        1,
        1,
    ]
    assert colspan_of("100000") == 100


HTML_PIECE = st.sampled_from(
    [
        "<table>",
        "</table>",
        "<tr>",
        "</tr>",
        "<td>",
        "</td>",
        "<th colspan='3'>",
        "<td colspan='x'>",
        "<td colspan='999999'>",
        "</th>",
        "<p>",
        "</p>",
        "<h2>",
        "</h2>",
        "<table class='navbox'>",
        "<ul><li>",
        "a | b",
        "word",
        "<br>",
        "&amp;",
        "<",
        " ",
    ]
)


@seed(52)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(HTML_PIECE, max_size=40), st.booleans())
def test_any_html_table_markup_gives_blocks_or_one_line(pieces, keep):
    """Unclosed cells, nested and stray table tags, odd colspans: blocks with valid rows, or one line."""
    try:
        blocks, _ = parse_article_html_counted(
            "".join(pieces), "fuzz.html", KEEP_TABLES if keep else ("tables", *KEEP_TABLES)
        )
    except DocumentError as error:
        assert "\n" not in str(error) and str(error).startswith("fuzz.html")
        return
    for block in blocks:
        check_spans(block.text, block.table_rows)
        assert block.text == normalize_passage(block.text) and block.text
    assert keep or not any(block.table_rows for block in blocks)


MARKDOWN_LINE = st.one_of(
    st.lists(CELL.filter(lambda cell: cell is None or "\n" not in cell), max_size=4).map(
        lambda cells: "| " + " | ".join(cell or "" for cell in cells) + " |"
    ),
    st.sampled_from(
        ["|---|---|", "| :-- |", "", "Prose line.", "## Heading", "> | quoted | table |", "- item"]
    ),
)


@seed(52)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(MARKDOWN_LINE, max_size=12))
def test_any_markdown_table_gives_blocks_or_one_line(lines):
    text = "# Fuzz\n\n" + "\n".join(lines) + "\n"
    try:
        document, _ = parse_markdown_counted(text, "fuzz.md", KEEP_TABLES)
    except DocumentError as error:
        assert "\n" not in str(error) and str(error).startswith("fuzz.md")
        return
    for block in document.blocks:
        check_spans(block.text, block.table_rows)


def table_document(rows: int) -> Document:
    """A document with prose around a table of ``rows`` rows (six words each)."""
    table = [
        ["Name", "Value"],
        *[[f"item{number} alpha beta", f"{number} gamma delta"] for number in range(rows)],
    ]
    rendering, pairs = render_table(table)
    blocks = (
        Block(("S",), "A first sentence of prose. A second one."),
        table_block(("S",), rendering),
        table_block(("S",), pairs),
        Block(("S",), "Closing prose. It ends here."),
    )
    return Document("d", "D", "1", blocks)


@pytest.mark.parametrize("rows", [1, 3, 40])
def test_sentence_chunks_keep_a_table_whole_when_it_fits_and_cut_it_only_between_rows(rows):
    document = table_document(rows)
    spec = ChunkerSpec("sentences", size=30)
    chunks = chunk_document(document, spec)
    offsets = document.block_offsets()
    for block, (block_start, block_end) in zip(document.blocks, offsets, strict=True):
        if not block.table_rows:
            continue
        starts = {block_start + start for start, _ in block.table_rows}
        ends = {block_start + end for _, end in block.table_rows}
        inside = [chunk for chunk in chunks if chunk.start < block_end and chunk.end > block_start]
        if count_words(block.text) <= spec.size:
            # Whole: one chunk holds the table from its first row to its last.
            assert len(inside) == 1 and inside[0].start <= block_start and inside[0].end >= block_end
        else:
            assert len(inside) > 1
        for chunk in inside:
            assert chunk.start <= block_start or chunk.start in starts
            assert chunk.end >= block_end or chunk.end in ends
    # The sections chunker holds the table with its section.
    sections = chunk_document(document, ChunkerSpec("sections"))
    assert len(sections) == 1 and sections[0].text == document.full_text


def test_table_rows_survive_the_parse_table():
    document = table_document(3)
    frame = documents_to_table([document, Document("e", "E", "1", (Block((), "Prose."),))]).to_pandas()
    assert documents_from_frame(frame)[0].blocks == document.blocks
    assert documents_from_frame(frame)[1].blocks == (Block((), "Prose."),)
    old = frame.drop(columns=["table_rows"])  # a table written before table blocks
    assert documents_from_frame(old)[0].blocks[1].table_rows == ()


def bundled_documents(skip) -> list[Document]:
    folder = PROJECT / "resources" / "solar_system" / "documents"
    return [
        parse_markdown_counted(path.read_text(encoding="utf-8"), path.name, skip)[0]
        for path in sorted(folder.glob("*.md"))
    ]


def test_question_spans_may_point_into_a_table_and_are_not_found_when_tables_are_skipped():
    """The table-cell questions of config/tables_indexed.yaml sit in table blocks of the bundled documents."""
    path = PROJECT / "resources" / "tables_indexed" / "questions.yaml"
    questions = parse_questions(yaml.safe_load(path.read_text(encoding="utf-8")), str(path))
    documents = {document.doc_id: document for document in bundled_documents(KEEP_TABLES)}
    locations = locate_spans(questions, list(documents.values()))
    assert len(locations) == len(questions) == 5
    for location in locations:
        document = documents[location.doc_id]
        inside = [
            block
            for block, (start, end) in zip(document.blocks, document.block_offsets(), strict=True)
            if start <= location.start and location.end <= end
        ]
        assert len(inside) == 1 and inside[0].table_rows
    with pytest.raises(LabelError, match="5 evidence span problem"):
        locate_spans(questions, bundled_documents(("tables", *KEEP_TABLES)))
