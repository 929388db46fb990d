"""Evidence spans, relevance by containment, cut pieces and label errors."""

from __future__ import annotations

import pytest

from rag.chunking import Chunk, ChunkerSpec, chunk_document
from rag.documents.blocks import Block, Document
from rag.evaluation.chunk_judging import evidence_cuts, judge_chunks
from rag.labels import LabelError, locate_spans, parse_questions

DOCUMENT = Document(
    "mars",
    "Mars",
    "1",
    (
        Block((), "Mars has two small moons, Phobos and Deimos. Its day lasts 24.6 hours."),
        Block(("Moons",), "Phobos orbits Mars faster than Mars rotates. Deimos is the smaller moon."),
    ),
)


def questions(data):
    return parse_questions(data, "questions.yaml")


def chunk(start, end, chunk_id="c", doc_id="mars"):
    return Chunk(chunk_id, doc_id, "Mars", "", start, end, DOCUMENT.full_text[start:end])


def test_containment_not_overlap_decides_relevance():
    [question] = questions([{"id": "q", "question": "Moons?", "evidence": [{"spans": ["two small moons"]}]}])
    locations = locate_spans([question], [DOCUMENT])
    [location] = locations
    inside = chunk(location.start - 4, location.end + 2, "inside")
    exact = chunk(location.start, location.end, "exact")
    cut = chunk(location.start, location.end - 1, "cut")
    judgements = judge_chunks([question], locations, [inside, exact, cut])
    assert [j.chunk_id for j in judgements] == ["exact", "inside"]


def test_alternatives_and_gains():
    data = [
        {
            "id": "q",
            "question": "How many moons?",
            "evidence": [
                {
                    "spans": [{"text": "two small moons", "document": "mars"}, "Deimos is the smaller moon"],
                    "gain": 2,
                }
            ],
        }
    ]
    [question] = questions(data)
    chunks = chunk_document(DOCUMENT, ChunkerSpec("sentences", 10))
    judgements = judge_chunks([question], locate_spans([question], [DOCUMENT]), chunks)
    texts = {c.chunk_id: c.text for c in chunks}
    assert sorted(texts[j.chunk_id] for j in judgements) == [
        "Deimos is the smaller moon.",
        "Mars has two small moons, Phobos and Deimos.",
    ]
    assert {j.gain for j in judgements} == {2.0}


def test_a_piece_is_cut_only_when_every_alternative_is():
    data = [
        {"id": "one", "question": "?", "evidence": [{"spans": ["Its day lasts 24.6 hours"]}]},
        {
            "id": "two",
            "question": "?",
            "evidence": [{"spans": ["Its day lasts 24.6 hours", "Phobos orbits Mars faster"]}],
        },
    ]
    parsed = questions(data)
    text = DOCUMENT.full_text
    day = text.index("Its day")
    chunks = [chunk(0, day + 8, "a"), chunk(day + 8, len(text), "b")]  # cuts the day span
    locations = locate_spans(parsed, [DOCUMENT])
    cuts = evidence_cuts(parsed, locations, judge_chunks(parsed, locations, chunks), window=(10, 0))
    assert [(c.question_id, c.cut) for c in cuts] == [("one", True), ("two", False)]
    # Five words: 4/10 for one span; both alternatives (5 and 4 words) cut: 0.4 * 0.3.
    assert cuts[0].expected_cut == pytest.approx(0.4)
    assert cuts[1].expected_cut == pytest.approx(0.4 * 0.3)


def test_missing_span_names_question_and_span():
    data = [{"id": "lost", "question": "?", "evidence": [{"spans": ["three large moons"]}]}]
    with pytest.raises(LabelError, match=r"'lost'.*'three large moons'"):
        locate_spans(questions(data), [DOCUMENT])


def test_unknown_document_is_named():
    data = [{"id": "q", "question": "?", "evidence": [{"spans": [{"text": "moons", "document": "venus"}]}]}]
    with pytest.raises(LabelError, match="unknown document 'venus'"):
        locate_spans(questions(data), [DOCUMENT])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([{"id": "q", "question": "?"}], "needs evidence"),
        (
            [{"id": "q", "question": "?", "answerable": False, "evidence": [{"spans": ["x"]}]}],
            "must not have",
        ),
        # Any text is a type (the user's own cohort label), but it must be text.
        ([{"id": "q", "question": "?", "type": 3, "answerable": False}], "'type' must be a label"),
        ([{"id": "q", "question": "?", "answerable": False}] * 2, "duplicate id"),
        ([{"id": "q", "question": "?", "evidnce": []}], "unknown key 'evidnce'"),
        ([{"id": "q", "question": "?", "evidence": [{"spans": []}]}], "at least one span"),
        ([{"id": "q", "question": "?", "evidence": [{"spans": ["x"], "gain": 0}]}], "positive number"),
        ({"items": []}, "expected a list"),
    ],
)
def test_malformed_questions_are_named(data, message):
    with pytest.raises(LabelError, match=message) as error:
        questions(data)
    assert "questions.yaml" in str(error.value)
