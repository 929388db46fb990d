"""The bundled corpus and its questions hold what the experiments rely on."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from rag.corpus.documents import parse_markdown
from rag.formats.files import read_yaml
from rag.labels import QUESTION_TYPES, locate_spans, parse_questions
from rag.text import analyze, count_words

ROOT = Path(__file__).resolve().parents[3] / "resources" / "solar_system"
BODIES = {"mercury", "venus", "mars", "jupiter", "saturn", "uranus", "neptune", "pluto", "moon", "ceres"}


@pytest.fixture(scope="module")
def documents():
    return [parse_markdown(path.read_text(), path.name) for path in sorted((ROOT / "documents").glob("*.md"))]


@pytest.fixture(scope="module")
def questions():
    return parse_questions(read_yaml(ROOT / "questions.yaml"), "questions.yaml")


def test_ten_documents_of_the_right_size(documents):
    assert {document.doc_id for document in documents} == BODIES
    words = {document.doc_id: count_words(document.full_text) for document in documents}
    for doc_id, count in words.items():
        assert 1500 <= count <= 3000, (doc_id, count)
    assert sum(words.values()) >= 18000


def test_sections_front_matter_and_summaries(documents):
    for document in documents:
        top_level = {block.section[0] for block in document.blocks if block.section}
        assert len(top_level) >= 6, document.doc_id
        assert document.version and document.updated and document.tags, document.doc_id
        assert document.blocks[0].section == (), f"{document.doc_id} has no lead to serve as its summary"
    assert any(len(block.section) == 2 for document in documents for block in document.blocks)


def test_markdown_quirks_are_present():
    sources = {path.stem: path.read_text() for path in (ROOT / "documents").glob("*.md")}
    with_table = [name for name, text in sources.items() if "\n|" in text]
    with_list = [name for name, text in sources.items() if "\n- " in text.split("## References")[0]]
    assert len(with_table) >= 3 and len(with_list) >= 3
    assert all("## References" in text or "## Further reading" in text for text in sources.values())
    everything = " ".join(sources.values())
    for abbreviation in ("e.g.", "i.e.", "approx.", "Dr.", "U.S."):
        assert abbreviation in everything


def test_every_span_occurs_exactly_once(documents, questions):
    texts = {document.doc_id: document.full_text for document in documents}
    problems = []
    for question in questions:
        for evidence in question.evidence:
            for span in evidence.spans:
                assert span.document is not None, f"{question.question_id}: spans name their document"
                occurrences = texts[span.document].count(span.text)
                if occurrences != 1:
                    problems.append(f"{question.question_id}: {span.text!r} occurs {occurrences} times")
    assert not problems, "\n".join(problems)
    locate_spans(questions, documents)  # raises, naming the span, if any is missing


def test_evidence_and_answerability_agree(questions):
    for question in questions:
        if question.answerable:
            assert question.evidence, question.question_id
            assert question.type != "unanswerable", question.question_id
        else:
            assert not question.evidence and question.type == "unanswerable", question.question_id
        if question.answer is not None:
            assert question.answer in question.evidence[0].spans[0].text, question.question_id


def test_ids_unique_and_types_documented(questions):
    ids = [question.question_id for question in questions]
    assert len(ids) == len(set(ids))
    assert {question.type for question in questions} <= set(QUESTION_TYPES)


def test_counts_per_type(questions):
    counts = Counter(question.type for question in questions)
    assert sum(question.answerable for question in questions) >= 64
    assert counts["unanswerable"] >= 4
    assert counts["fact"] >= 15
    assert counts["paraphrase"] >= 10
    assert counts["comparison"] >= 6
    assert counts["subjectless"] >= 6
    assert counts["long_span"] >= 6
    assert counts["restated"] >= 4


def test_type_definitions_hold(questions, documents):
    for question in questions:
        spans = [span for evidence in question.evidence for span in evidence.spans]
        if question.type == "paraphrase":
            asked = set(analyze(question.text))
            for span in spans:
                shared = asked & set(analyze(span.text))
                assert len(shared) <= 1, (question.question_id, shared)
        elif question.type == "comparison":
            assert len(question.evidence) >= 2, question.question_id
            documents_per_piece = [
                {span.document for span in evidence.spans} for evidence in question.evidence
            ]
            assert len(set.union(*documents_per_piece)) >= 2, question.question_id
        elif question.type == "long_span":
            assert any(20 <= count_words(span.text) <= 40 for span in spans), question.question_id
        elif question.type == "restated":
            assert any(len(evidence.spans) >= 2 for evidence in question.evidence), question.question_id
        elif question.type == "subjectless":
            for span in spans:
                assert span.document not in analyze(span.text), question.question_id
        for span in spans:
            assert count_words(span.text) <= 40, (question.question_id, span.text)


def test_an_unanswerable_question_whose_topic_is_mentioned(questions, documents):
    titan = [q for q in questions if not q.answerable and "Titan" in q.text]
    assert titan, "the Titan temperature question is part of the set"
    saturn = next(document for document in documents if document.doc_id == "saturn").full_text
    assert "Titan" in saturn and "temperature" in saturn
