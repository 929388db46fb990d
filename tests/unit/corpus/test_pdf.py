"""The PDF source: layout rules on plain data, and the reader on real, damaged and hostile files."""

from __future__ import annotations

import random
import zlib

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rag.corpus.folders import read_file
from rag.corpus.pdf import PAGE_PREFIX, chrome, document_from_layout, extract_layout
from rag.corpus.source_kinds import SOURCES
from rag.corpus.table_text import table_blocks
from rag.documents.access_metadata import DocumentError
from rag.documents.passages import normalize_passage
from tests.extras import needs
from tests.workdir import PROJECT

DATA = PROJECT / "tests" / "data" / "pdf"
DOCUMENTS = PROJECT / "resources" / "pdf_documents" / "documents"


def line(text, size=10.0, bold=False):
    return {"text": text, "size": size, "bold": bold, "x0": 0}


def box(top, *lines):
    return {"lines": list(lines), "top": top, "bottom": top + 12}


def page(number, *boxes, tables=(), chars=100):
    return {"number": number, "height": 800, "chars": chars, "boxes": list(boxes), "tables": list(tables)}


def layout(*pages, outline=(), info=None, xmp=""):
    return {"pages": list(pages), "outline": list(outline), "info": info or {}, "xmp": xmp}


def three_pages():
    return layout(
        *(
            page(
                number,
                box(10, line(f"Annual report {2020 + number}")),  # running header, year differs
                box(100, line("Results" if number == 2 else "Body", size=16 if number == 2 else 10)),
                box(200, line("The retriev-"), line("al step reads 14 pages.")),
                box(790, line(str(number))),  # page number
            )
            for number in (1, 2, 3)
        )
    )


def test_running_headers_and_page_numbers_are_chrome_and_the_rest_is_not():
    pages = three_pages()["pages"]
    assert chrome(pages) == {(index, box) for index in range(3) for box in (0, 3)}


def test_blocks_keep_their_page_a_heading_by_font_and_a_joined_hyphenation():
    document = document_from_layout(three_pages(), "report.pdf").document
    texts = [(block.section, block.text) for block in document.blocks]
    assert ("p. 1",) == texts[0][0] and texts[0][1] == "Body"
    assert (f"{PAGE_PREFIX}2", "Results") in [section for section, _ in texts]
    assert "The retrieval step reads 14 pages." in [text for _, text in texts]
    assert not any("Annual report" in text for _, text in texts)


def test_headings_come_from_the_outline_when_there_is_one():
    pages = [
        page(1, box(100, line("Methods", size=10)), box(200, line("We measured."))),
        page(2, box(100, line("Big text not a heading", size=30)), box(200, line("More."))),
    ]
    document = document_from_layout(layout(*pages, outline=[[1, "Methods", 1]]), "a.pdf").document
    assert [block.section for block in document.blocks] == [
        ("p. 1", "Methods"),
        ("p. 2", "Methods"),
        ("p. 2", "Methods"),
    ]


def test_a_table_is_a_rendering_and_header_value_rows_unless_skipped():
    rows = [["Planet", "Moons"], ["Mars", "2"], ["Earth", "1"]]
    rendering, pairs = table_blocks(rows)
    assert rendering == "Planet | Moons / Mars | 2 / Earth | 1"
    assert pairs == "Planet: Mars; Moons: 2. Planet: Earth; Moons: 1."
    with_table = layout(page(1, box(100, line("Text.")), tables=[{"rows": rows, "top": 300}]))
    kept = document_from_layout(with_table, "t.pdf").document
    assert [block.text for block in kept.blocks] == ["Text.", rendering, pairs]
    parsed = document_from_layout(with_table, "t.pdf", skip=("tables",))
    assert [block.text for block in parsed.document.blocks] == ["Text."] and parsed.skipped["tables"] == 3


def test_access_comes_from_the_information_or_xmp_and_fails_closed():
    pages = [page(1, box(100, line("Text.")))]
    assert document_from_layout(layout(*pages), "a.pdf").document.access == "restricted"
    stated = layout(*pages, info={"access": "public", "tenant": "acme", "acl": "a, b"})
    document = document_from_layout(stated, "a.pdf").document
    assert (document.access, document.tenant, document.acl) == ("public", "acme", ("a", "b"))
    xmp = layout(*pages, xmp="<x:xmpmeta><rag:access>internal</rag:access></x:xmpmeta>")
    assert document_from_layout(xmp, "a.pdf").document.access == "internal"
    with pytest.raises(DocumentError, match="a.pdf"):
        document_from_layout(layout(*pages, info={"access": "pubilc"}), "a.pdf")


def test_a_page_without_text_is_named_in_one_warning_and_a_file_without_any_is_refused(caplog):
    pages = [page(1, box(100, line("Text."))), page(2, chars=0), page(3, chars=0)]
    document_from_layout(layout(*pages), "scan.pdf")
    assert [record.getMessage() for record in caplog.records] == [
        "scan.pdf: no text layer on page(s) [2, 3] (a scan?); those pages are not indexed"
    ]
    with pytest.raises(DocumentError, match="scan.pdf: no text layer on any page"):
        document_from_layout(layout(page(1, chars=0)), "scan.pdf")


@settings(max_examples=150, derandomize=True, deadline=None)
@given(st.lists(st.lists(st.text(max_size=8), min_size=1, max_size=4), min_size=1, max_size=5))
def test_any_table_renders_every_cell_once_in_order(rows):
    rendering, _ = table_blocks(rows)
    assert rendering == normalize_passage(" / ".join(" | ".join(row) for row in rows))


# --------------------------------------------------------------------------
# Real files (the pdf extra)
# --------------------------------------------------------------------------


def _one_line_refusal(data: bytes, name: str) -> str | None:
    """None if the file was read, else its refusal, which must be one line naming it."""
    try:
        read_file(data, name, "pdf")
    except DocumentError as error:
        message = str(error)
        assert message.startswith(f"{name}: ") and "\n" not in message and "Traceback" not in message
        return message
    return None


@needs("pdf")
def test_the_row_reads_a_real_pdf_with_pages_and_a_table():
    parsed = read_file((DOCUMENTS / "us-006.pdf").read_bytes(), "us-006.pdf", "pdf")
    assert SOURCES["pdf"].read is not None and SOURCES["pdf"].binary
    texts = [block.text for block in parsed.document.blocks]
    assert any("Child Race/Ethnicity: Hispanic; 3-Year-Old Cohort: 37.4%" in text for text in texts)
    assert {block.section[0] for block in parsed.document.blocks} >= {"p. 1", "p. 2"}


@needs("pdf")
def test_encrypted_and_scripted_files_are_refused_in_one_line():
    assert "encrypted" in _one_line_refusal((DATA / "password-example.pdf").read_bytes(), "locked.pdf")
    assert "JavaScript" in _one_line_refusal((DATA / "pdffill-demo.pdf").read_bytes(), "form.pdf")


def _bomb(zeros: int) -> bytes:
    """A one-page PDF whose content stream inflates to ``zeros`` bytes."""
    packer = zlib.compressobj(1)
    stream = b"".join(packer.compress(bytes(1 << 20)) for _ in range(zeros >> 20)) + packer.flush()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    out = b"%PDF-1.4\n"
    for number, body in enumerate(objects, 1):
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    return out + b"trailer\n<< /Root 1 0 R /Size 5 >>\n%%EOF\n"


@needs("pdf")
def test_a_decompression_bomb_and_deep_nesting_are_refused_or_bounded(monkeypatch):
    monkeypatch.setattr("rag.corpus.pdf.MEMORY_BYTES", 450 * 1024**2)
    assert _one_line_refusal(_bomb(600 << 20), "bomb.pdf") is not None
    nested = (
        b"%PDF-1.4\n1 0 obj\n" + b"[" * 20_000 + b"]" * 20_000 + b"\nendobj\ntrailer\n<< /Root 1 0 R >>\n"
    )
    _one_line_refusal(nested, "nested.pdf")
    assert _one_line_refusal(b"not a pdf at all", "plain.pdf") == "plain.pdf: not a PDF (no %PDF- header)"
    with pytest.raises(DocumentError, match="read as bytes"):
        extract_layout("text", "x.pdf")


@needs("pdf")
def test_seeded_mutations_of_real_pdfs_are_read_or_refused_in_one_line():
    """Truncated files and files with bytes changed at random: never a traceback or a hang."""
    chance = random.Random(52)
    originals = [(DOCUMENTS / name).read_bytes() for name in ("us-005.pdf", "us-032.pdf")]
    outcomes = []
    for number in range(6):
        data = bytearray(originals[number % 2])
        if number % 3 == 0:
            data = data[: chance.randrange(len(data) // 4, len(data))]
        else:
            for _ in range(chance.randrange(5, 200)):
                data[chance.randrange(len(data))] = chance.randrange(256)
        outcomes.append(_one_line_refusal(bytes(data), f"mutated-{number}.pdf"))
    assert len(outcomes) == 6


def test_boxes_level_with_each_other_are_read_left_to_right_whatever_the_layouts_order():
    """pdfminer may list boxes on one line (subscripts) in any order; the blocks must not depend on it."""
    left, right = box(300, line("BAF")), box(300, line("3"))
    right["lines"][0]["x0"] = 40
    body = box(100, line("The equation reads as follows."))
    texts = [
        [block.text for block in document_from_layout(layout(page(1, body, *pair)), "a.pdf").document.blocks]
        for pair in ((left, right), (right, left))
    ]
    assert texts[0] == texts[1] == ["The equation reads as follows.", "BAF", "3"]
    assert {block.page for block in document_from_layout(layout(page(7, body)), "a.pdf").document.blocks} == {
        "7"
    }


@settings(max_examples=120, deadline=None, derandomize=True)
@given(
    field=st.sampled_from(["access", "tenant", "acl"]),
    spelling=st.sampled_from(["upper", "title", "plural", "invisible", "separator"]),
    place=st.sampled_from(["info", "xmp"]),
)
def test_a_near_miss_access_key_in_a_pdf_is_an_error_naming_the_file(field, spelling, place):
    """The PDF source reads access by the schema every source shares: a lookalike key is never "open"."""
    key = {
        "upper": field.upper(),
        "title": field.title(),
        "plural": field + "s",
        "invisible": field[0] + "\u200b" + field[1:],
        "separator": "_" + field,
    }[spelling]
    # An XML element name cannot hold an invisible character: such an element is not an element.
    assume(not (place == "xmp" and spelling == "invisible"))
    pages = [page(1, box(100, line("Text.")))]
    value = {"access": "public", "tenant": "acme", "acl": "a"}[field]
    stated = (
        layout(*pages, info={key: value})
        if place == "info"
        else layout(*pages, xmp=f"<x:xmpmeta><rag:{key}>{value}</rag:{key}></x:xmpmeta>")
    )
    with pytest.raises(DocumentError, match=r"a\.pdf"):
        document_from_layout(stated, "a.pdf")
