"""Page-level recall: pages of blocks, chunks and spans, compared with a brute-force count."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.chunk_tables import chunks_to_frame
from rag.chunking import ChunkerSpec, chunk_corpus
from rag.documents.blocks import Block, Document, pages_between
from rag.evaluation.pages import chunk_pages, evidence_pages, page_recall_at, page_recall_rows
from rag.labels import Evidence, Question, Span


def paged_document(
    doc_id="report", pages=(("1", "Alpha beta gamma."), ("1", "Delta epsilon."), ("2", "Zeta eta theta."))
):
    blocks = tuple(Block((f"p. {page}",), text, page) for page, text in pages)
    return Document(doc_id=doc_id, title=doc_id, version="1", blocks=blocks)


def brute_pages(document, start, end):
    """Pages of the characters in [start, end), read one character at a time."""
    pages = []
    for block, (first, last) in zip(document.blocks, document.block_offsets(), strict=True):
        if any(first <= position < last for position in range(start, end)) and block.page not in pages:
            pages.append(block.page)
    return tuple(page for page in pages if page)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    pages=st.lists(
        st.tuples(st.sampled_from(["", "1", "2", "3", "xiv"]), st.text("abc ", min_size=1, max_size=12)),
        min_size=1,
        max_size=8,
    ),
    data=st.data(),
)
def test_pages_between_agrees_with_a_character_by_character_count(pages, data):
    document = Document("d", "d", "1", tuple(Block(("s",), text, page) for page, text in pages))
    length = len(document.full_text)
    start = data.draw(st.integers(0, length))
    end = data.draw(st.integers(start, length))
    assert pages_between(document.blocks, document.block_offsets(), start, end) == brute_pages(
        document, start, end
    )


def test_a_chunk_names_the_pages_of_its_blocks_and_a_source_without_pages_none():
    paged = paged_document()
    plain = Document("notes", "notes", "1", (Block((), "No pages here at all."),))
    chunks = chunk_corpus([paged, plain], ChunkerSpec("fixed", size=100))
    frame = chunks_to_frame(chunks, [paged, plain])
    assert dict(zip(frame["doc_id"], frame["page"], strict=True)) == {"report": "1, 2", "notes": ""}
    sections = chunks_to_frame(chunk_corpus([paged], ChunkerSpec("sections")), [paged])
    assert list(sections["page"]) == ["1", "2"]


def question(qid, *spans):
    return Question(qid, qid, evidence=(Evidence(tuple(Span(text, "report") for text in spans)),))


def test_evidence_sits_on_the_pages_of_its_blocks():
    document = paged_document()
    pieces = evidence_pages([question("a", "Delta"), question("b", "Zeta", "Alpha")], [document])
    assert pieces == {
        "a": [frozenset({("report", "1")})],
        "b": [frozenset({("report", "1"), ("report", "2")})],
    }


def test_page_recall_counts_a_page_of_the_same_document_only():
    pages = {"c1": frozenset({("report", "2")}), "c2": frozenset({("other", "1")}), "c3": frozenset()}
    piece = [frozenset({("report", "1")})]
    assert page_recall_at(["c2", "c3", "c1"], piece, pages, 3) == 0.0
    assert page_recall_at(["c1"], [frozenset({("report", "2")})], pages, 1) == 1.0
    with pytest.raises(ValueError, match="k must be at least 1"):
        page_recall_at(["c1"], piece, pages, 0)


def test_the_rows_give_chunk_and_page_recall_with_their_counts():
    pages = chunk_pages({"chunk_id": ["c1", "c2"], "doc_id": ["report", "report"], "page": ["1", "1, 2"]})
    assert pages["c2"] == frozenset({("report", "1"), ("report", "2")})
    relevance = {"a": {"0": {"c2": 1.0}}, "b": {"0": {}}}  # b's span was cut: no chunk holds it whole
    pieces = {"a": [frozenset({("report", "2")})], "b": [frozenset({("report", "1")})]}
    ranked = {"a": ["c1", "c2"], "b": ["c1"]}
    rows = page_recall_rows(("pdf", "sections", "bm25"), ranked, relevance, pieces, pages, [2, 1])
    assert [(row["k"], row["chunk_found"], row["page_found"]) for row in rows] == [(1, 0, 1), (2, 1, 2)]
    assert [row["page_recall"] for row in rows] == [0.5, 1.0]
    assert rows[0]["questions"] == 2
