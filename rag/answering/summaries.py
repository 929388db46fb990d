"""Document summaries as context: every document's lead section in place of retrieval.

A small collection can skip search: put a summary of every document into the
prompt and let the generator find the answer. The lead section of an
encyclopedic document (the paragraphs before its first heading) is such a
summary, written once and before any question was known. This module measures
what that costs in prompt tokens and which questions it can serve at all: a
question whose evidence lies outside the leads cannot be answered from them,
however good the generator.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from rag.answering.tokens import TokenCounter, count_word_and_punctuation
from rag.chunking import Chunk
from rag.documents.blocks import BLOCK_SEPARATOR, Document
from rag.evaluation.chunk_judging import judge_chunks
from rag.labels import Question, SpanLocation
from rag.text import count_words

SUMMARY_SUFFIX = "#lead"


@dataclass(frozen=True)
class LeadSummary:
    """The lead of one document: its first ``blocks`` paragraphs, which carry no heading.

    The lead always starts at offset 0 of the document's full text, so
    evidence spans located in the document can be checked against it by
    position.
    """

    doc_id: str
    title: str
    text: str
    blocks: int


def lead_summary(document: Document) -> LeadSummary:
    """The paragraphs before the document's first heading (empty when it opens with one)."""
    lead = []
    for block in document.blocks:
        if block.section:
            break
        lead.append(block.text)
    return LeadSummary(document.doc_id, document.title, BLOCK_SEPARATOR.join(lead), len(lead))


def lead_summaries(documents: Iterable[Document]) -> list[LeadSummary]:
    """The lead of every document, in document id order."""
    return sorted((lead_summary(document) for document in documents), key=lambda summary: summary.doc_id)


def summary_chunk(summary: LeadSummary) -> Chunk:
    """A summary as a prompt source: labelled with its document's title, covering offsets 0 to its end."""
    return Chunk(
        chunk_id=f"{summary.doc_id}{SUMMARY_SUFFIX}",
        doc_id=summary.doc_id,
        title=summary.title,
        section="",
        start=0,
        end=len(summary.text),
        text=summary.text,
        header=summary.title,
    )


def summary_chunks(summaries: Iterable[LeadSummary]) -> list[Chunk]:
    """Prompt sources for the summaries that have any text."""
    return [summary_chunk(summary) for summary in summaries if summary.text]


def pieces_in_summaries(
    questions: Sequence[Question], locations: Iterable[SpanLocation], summaries: Iterable[LeadSummary]
) -> dict[str, set[int]]:
    """question id -> the evidence pieces that some summary contains whole.

    Containment is the labels' own rule (a chunk contains a span when its
    character range covers the span's), applied to the summaries as chunks.
    """
    inside: dict[str, set[int]] = {question.question_id: set() for question in questions}
    for judgement in judge_chunks(questions, locations, summary_chunks(summaries)):
        inside[judgement.question_id].add(judgement.piece)
    return inside


def fully_inside(questions: Sequence[Question], inside: Mapping[str, set[int]]) -> list[str]:
    """Answerable questions whose every evidence piece lies in some summary."""
    return [
        question.question_id
        for question in questions
        if question.answerable and len(inside.get(question.question_id, ())) == len(question.evidence)
    ]


def summary_statistics(
    summaries: Sequence[LeadSummary],
    questions: Sequence[Question],
    locations: Sequence[SpanLocation],
    window: int,
    count_cl100k: TokenCounter | None = None,
) -> pd.DataFrame:
    """Per summary: size in words and tokens, evidence inside it; then a total row.

    ``window_share`` is the part of a ``window``-token context the summary
    takes (word-and-punctuation tokens); on the total row it is how many
    such windows all summaries together fill, and ``summaries_per_window``
    how many summaries of the mean size one window holds. Evidence counts are
    pieces with a span located in the document, and those lying in its lead.
    """
    if window < 1:
        raise ValueError(f"the context window must be a positive number of tokens, got {window!r}")
    located: dict[str, set[tuple[str, int]]] = {}
    for location in locations:
        located.setdefault(location.doc_id, set()).add((location.question_id, location.piece))
    inside = judge_chunks(questions, locations, summary_chunks(summaries))
    in_summary: dict[str, set[tuple[str, int]]] = {}
    for judgement in inside:
        document = judgement.chunk_id.removesuffix(SUMMARY_SUFFIX)
        in_summary.setdefault(document, set()).add((judgement.question_id, judgement.piece))

    rows = []
    for summary in summaries:
        tokens = count_word_and_punctuation(summary.text)
        rows.append(
            {
                "doc_id": summary.doc_id,
                "title": summary.title,
                "blocks": summary.blocks,
                "words": count_words(summary.text),
                "tokens": tokens,
                "tokens_cl100k": count_cl100k(summary.text) if count_cl100k else None,
                "window_share": tokens / window,
                "summaries_per_window": math.nan,
                "evidence_pieces": len(located.get(summary.doc_id, ())),
                "evidence_pieces_in_summary": len(in_summary.get(summary.doc_id, ())),
            }
        )
    frame = pd.DataFrame(rows)
    total_tokens = int(frame["tokens"].sum()) if rows else 0
    total = {
        "doc_id": "(all)",
        "title": f"{len(rows)} documents",
        "blocks": int(frame["blocks"].sum()) if rows else 0,
        "words": int(frame["words"].sum()) if rows else 0,
        "tokens": total_tokens,
        "tokens_cl100k": int(frame["tokens_cl100k"].sum()) if count_cl100k and rows else None,
        "window_share": total_tokens / window,
        "summaries_per_window": window / (total_tokens / len(rows)) if total_tokens else math.nan,
        "evidence_pieces": len(set().union(*located.values())) if located else 0,
        "evidence_pieces_in_summary": len({(j.question_id, j.piece) for j in inside}),
    }
    frame = pd.concat([frame, pd.DataFrame([total])], ignore_index=True)
    return frame.astype({"tokens_cl100k": "Int64"})
