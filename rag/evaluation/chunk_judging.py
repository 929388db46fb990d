"""Chunk judging: which chunks hold a question's evidence, and which evidence a chunker cuts.

Relevance is defined once, on the documents (:mod:`rag.labels`); a chunk is
relevant to a piece of evidence when its character range wholly contains one
of the piece's spans, so the same labels judge every chunking strategy, and a
chunker that cuts a span is visibly penalised.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from rag.chunking import Chunk, cut_probability
from rag.labels import Question, SpanLocation


@dataclass(frozen=True)
class Judgement:
    """A relevant chunk: it contains a span of ``piece`` of ``question_id``."""

    question_id: str
    piece: int
    chunk_id: str
    gain: float


def judge_chunks(
    questions: Sequence[Question], locations: Iterable[SpanLocation], chunks: Sequence[Chunk]
) -> list[Judgement]:
    """The relevant chunks of every question, found by range containment."""
    gains = {
        (question.question_id, piece): evidence.gain
        for question in questions
        for piece, evidence in enumerate(question.evidence)
    }
    by_document: dict[str, tuple[np.ndarray, np.ndarray, list[str]]] = {}
    for doc_id in {chunk.doc_id for chunk in chunks}:
        members = [chunk for chunk in chunks if chunk.doc_id == doc_id]
        by_document[doc_id] = (
            np.array([chunk.start for chunk in members]),
            np.array([chunk.end for chunk in members]),
            [chunk.chunk_id for chunk in members],
        )
    judgements: dict[tuple[str, int, str], Judgement] = {}
    for location in locations:
        if location.doc_id not in by_document:
            continue
        starts, ends, ids = by_document[location.doc_id]
        containing = np.flatnonzero((starts <= location.start) & (ends >= location.end))
        for index in containing:
            key = (location.question_id, location.piece, ids[index])
            gain = gains[(location.question_id, location.piece)]
            judgements[key] = Judgement(location.question_id, location.piece, ids[index], gain)
    return sorted(judgements.values(), key=lambda j: (j.question_id, j.piece, j.chunk_id))


@dataclass(frozen=True)
class PieceCut:
    """Whether a chunker leaves a piece of evidence whole in some chunk."""

    question_id: str
    piece: int
    alternatives: int
    shortest_span_words: int
    cut: bool
    expected_cut: float  # chance all alternatives are cut by fixed windows; NaN otherwise


def evidence_cuts(
    questions: Sequence[Question],
    locations: Sequence[SpanLocation],
    judgements: Iterable[Judgement],
    window: tuple[int, int] | None,
) -> list[PieceCut]:
    """Pieces of evidence that no chunk contains whole, beside the expected count.

    ``window`` is (W, o) for fixed windows. A piece is cut only when every
    alternative is, so its expected probability is the product over
    alternatives of the single-span formula (windows at random offsets).
    """
    found = {(j.question_id, j.piece) for j in judgements}
    words: dict[tuple[str, int, int], int] = {}
    for location in locations:
        words[(location.question_id, location.piece, location.alternative)] = location.words
    cuts = []
    for question in questions:
        for piece, evidence in enumerate(question.evidence):
            lengths = [words[(question.question_id, piece, a)] for a in range(len(evidence.spans))]
            if window is None:
                expected = float("nan")
            else:
                expected = float(np.prod([cut_probability(length, *window) for length in lengths]))
            cuts.append(
                PieceCut(
                    question.question_id,
                    piece,
                    len(lengths),
                    min(lengths),
                    (question.question_id, piece) not in found,
                    expected,
                )
            )
    return cuts
