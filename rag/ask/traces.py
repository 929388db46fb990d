"""The trace of one ``rag ask`` request (rag.answering.trace, docs/trace.md), from its report."""

from __future__ import annotations

from collections.abc import Mapping

from rag.answering.trace import abstention_reason, answer_trace, canonical_digest
from rag.answering.verification import parse_citations
from rag.ask.index import AnswerReport, QuestionIndex
from rag.retrieval.filters import Caller


def index_version(index: QuestionIndex) -> str:
    """The index a request searched: its options and chunk ids (the chunk ids digest the text)."""
    return canonical_digest(
        {"options": index.options.as_dict(), "chunks": [c.chunk_id for c in index.chunks]}
    )


def report_trace(
    report: AnswerReport,
    index: QuestionIndex,
    caller: Caller,
    question: str,
    generator: str,
    latency: Mapping[str, float | None],
    cache: str = "none",
    include_text: bool = False,
    question_id: str | None = None,
) -> dict:
    """One request of ``rag ask`` as a trace: its fused candidates, prompt sources and cited chunks.

    ``question_id`` names a labelled question (the pipeline's measurement of
    ``rag ask``); None for a question typed at the command line.
    """
    selected = [chunk.chunk_id for chunk in report.prompt.sources.values()]
    numbers = [number for number in parse_citations(report.answer)[0] if number in report.prompt.sources]
    chosen = report.retrieval.chosen
    entries = index.entries
    text = None
    if include_text:
        text = {
            "question": question,
            "sources": [chunk.text for chunk in report.prompt.sources.values()],
            "answer": report.answer,
        }
    return answer_trace(
        caller=caller,
        query=question,
        question_id=question_id,
        index_version=index_version(index),
        candidates=[retrieved.chunk.chunk_id for retrieved in chosen],
        scores=[retrieved.fused_score for retrieved in chosen],
        ranker_versions={
            "lexical": canonical_digest(entries.lexical),
            "fused": canonical_digest(entries.fused),
        },
        selected=selected,
        citations=[report.prompt.sources[number].chunk_id for number in numbers],
        generator={"name": generator},
        tokens={"prompt": int(report.prompt.tokens), "completion": len(report.answer.split())},
        latency=latency,
        cache=cache,
        abstention=abstention_reason(report.abstained, False, selected),
        text=text,
    )
