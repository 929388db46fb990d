"""Page-level recall: do the top k chunks come from the page the evidence is on?

Beside chunk recall (a chunk that contains an evidence span whole), a corpus
whose source has pages (a PDF) is also scored by page: a piece of evidence is
found at k when one of the pages its spans sit on is among the pages of the
top k chunks. A page is a (document, page) pair: page 3 of one file is not
page 3 of another. A chunk's pages are its blocks' pages (the chunk table's
``page`` column); a span's pages are the pages of the blocks it overlaps.
Page recall is at least chunk recall whenever every relevant chunk has the
page of its span, and it forgives a chunker that cut the span in two.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rag.documents.blocks import PAGE_SEPARATOR, Document, pages_between
from rag.evaluation.metrics import Relevance, recall_at
from rag.labels import Question, locate_spans

if TYPE_CHECKING:
    import pandas as pd

# A page of the corpus: (document id, page).
Page = tuple[str, str]
# Each question's pieces of evidence, each as the pages its spans sit on.
EvidencePages = dict[str, list[frozenset[Page]]]

PAGE_RECALL_COLUMNS = [
    "corpus",
    "chunker",
    "retriever",
    "k",
    "questions",
    "chunk_found",
    "chunk_recall",
    "page_found",
    "page_recall",
]
# Recall values are rounded to this many digits, so that the table is the same on every machine.
DIGITS = 4


def evidence_pages(questions: Sequence[Question], documents: Sequence[Document]) -> EvidencePages:
    """The pages of every piece of every question's evidence (an empty set for a span without a page)."""
    by_id = {document.doc_id: document for document in documents}
    offsets = {document.doc_id: document.block_offsets() for document in documents}
    pieces: dict[str, list[set[Page]]] = {
        question.question_id: [set() for _ in question.evidence] for question in questions
    }
    for location in locate_spans(questions, documents):
        document = by_id[location.doc_id]
        pages = pages_between(document.blocks, offsets[location.doc_id], location.start, location.end)
        pieces[location.question_id][location.piece].update((location.doc_id, page) for page in pages)
    return {question_id: [frozenset(piece) for piece in found] for question_id, found in pieces.items()}


def chunk_pages(chunks: Mapping[str, Sequence]) -> dict[str, frozenset[Page]]:
    """Chunk id -> its (document, page) pairs, from the chunk table (``chunk_id``, ``doc_id``, ``page``)."""
    return {
        chunk_id: frozenset((doc_id, page) for page in str(pages).split(PAGE_SEPARATOR) if page)
        for chunk_id, doc_id, pages in zip(chunks["chunk_id"], chunks["doc_id"], chunks["page"], strict=True)
    }


def page_recall_at(
    ranked: Sequence[str], pieces: Sequence[frozenset[Page]], pages: Mapping[str, frozenset[Page]], k: int
) -> float:
    """Share of the pieces with one of their pages among the pages of the top ``k`` chunks."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not pieces:
        raise ValueError("a question without evidence has no page recall")
    seen: set[Page] = set()
    for chunk_id in ranked[:k]:
        seen |= pages[chunk_id]
    return sum(1 for piece in pieces if piece & seen) / len(pieces)


def page_recall_rows(
    run: tuple[str, str, str],
    ranked: Mapping[str, Sequence[str]],
    relevance: Mapping[str, Relevance],
    pieces: EvidencePages,
    pages: Mapping[str, frozenset[Page]],
    ks: Sequence[int],
) -> list[dict]:
    """One row per k for one ranking: chunk and page recall, and how many questions each found whole.

    ``relevance`` and ``pieces`` hold the evaluated questions (the answerable ones).
    """
    rows = []
    for k in sorted(ks):
        chunk = [recall_at(list(ranked.get(qid, [])), relevance[qid], k) for qid in sorted(relevance)]
        page = [page_recall_at(list(ranked.get(qid, [])), pieces[qid], pages, k) for qid in sorted(relevance)]
        rows.append(
            dict(
                zip(PAGE_RECALL_COLUMNS[:3], run, strict=True),
                k=int(k),
                questions=len(chunk),
                chunk_found=sum(value == 1.0 for value in chunk),
                chunk_recall=round(sum(chunk) / len(chunk), DIGITS) if chunk else float("nan"),
                page_found=sum(value == 1.0 for value in page),
                page_recall=round(sum(page) / len(page), DIGITS) if page else float("nan"),
            )
        )
    return rows


def page_recall_table(rows: Sequence[dict]) -> pd.DataFrame:
    """The rows of :func:`page_recall_rows` as results/page_recall.csv, in the order given."""
    import pandas as pd

    return pd.DataFrame(list(rows), columns=PAGE_RECALL_COLUMNS)
