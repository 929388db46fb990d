"""The correctness judge of free-text answers: hand-written cases, traps included."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.answering.correctness import (
    ABSTAINED,
    ANSWERED_UNANSWERABLE,
    CORRECT,
    NOT_JUDGED,
    REFUSED,
    WRONG,
    content_in_text,
    judge_answer,
    normalize_answer,
    reference_names,
    reference_numbers,
)
from rag.formats.files import read_yaml
from rag.labels import parse_questions

BUNDLED = Path(__file__).resolve().parents[3] / "resources" / "solar_system"


@pytest.mark.parametrize(
    ("answer", "reference"),
    [
        ("Approximately 224.7 Earth days.", "224.7 Earth days"),
        ("224.7 days", "224.7 Earth days"),  # "Earth" qualifies the unit: not a name to insist on
        ("It measures 1550 km across.", "1,550 km"),
        ("about 1\u202f550 km", "1,550 km"),  # a narrow no-break space as thousands separator
        ("The Caloris Basin is roughly 1,550 kilometres wide", "1,550 km"),
        ("December 14, 1962", "Dec. 14, 1962"),
        ("on 14 December 1962 [1]", "Dec. 14, 1962"),
        ("−224 °C at the tropopause", "-224 degrees Celsius"),
        ("minus sign: \u2212224 degrees C", "-224 degrees Celsius"),
        ("G. P. Kuiper found it in 1949 [2].", "G. P. Kuiper"),
        ("Gerard Kuiper", "G. P. Kuiper"),
        ("It is mostly carbon dioxide.", "carbon dioxide"),
        ("Five.", "5"),
        ("the field is 1.1% as strong", "1.1 percent"),
        ("about 1.5 times Earth's sea-level pressure", "about 1.5 times that at sea level on Earth"),
        ("July 1, 2004", "1 July 2004"),
        ("2.50 bar", "2.5 bar"),
    ],
)
def test_answers_that_state_the_reference_are_correct(answer, reference):
    assert judge_answer(answer, reference, answerable=True, abstained=False).outcome == CORRECT


@pytest.mark.parametrize(
    ("answer", "reference"),
    [
        # The traps: a value of the right type, but not the asked one.
        ("Hellas Planitia, an impact basin roughly 2,300 km in diameter", "6,779 km"),
        ("Galileo Galilei recorded it in his notebooks in Dec. 1612", "J. G. Galle"),
        ("about 2 years", "6.387 Earth days"),
        ("-182.16 Celsius", "-179 degrees Celsius"),
        # A sign, a digit and a word boundary each matter.
        ("224 degrees Celsius", "-224 degrees Celsius"),
        ("10000 km", "1,000 km"),
        ("100 km", "1,000 km"),
        ("224.75 Earth days", "224.7 Earth days"),
        ("Galleon", "J. G. Galle"),
        # Names are all required.
        ("Gassendi", "Pierre Gassendi"),
        ("December 1962", "Dec. 14, 1962"),
        ("14 November 1962", "Dec. 14, 1962"),
        # A long explanatory reference is not matched by its one incidental name.
        ("Earth", "the spacecraft ran out of the hydrazine needed to keep its antenna pointed at Earth"),
        ("carbon monoxide", "carbon dioxide"),
        # A citation marker is not a number of the answer.
        ("It arrived in July 2004 [1].", "1 July 2004"),
    ],
)
def test_answers_that_do_not_state_the_reference_are_wrong(answer, reference):
    assert judge_answer(answer, reference, answerable=True, abstained=False).outcome == WRONG


def test_abstentions_refusals_and_unjudged_answers():
    assert judge_answer("", "1,550 km", answerable=True, abstained=True).outcome == ABSTAINED
    assert judge_answer("I don't know.", None, answerable=False, abstained=True).outcome == REFUSED
    answered = judge_answer("About -180 degrees Celsius", None, answerable=False, abstained=False)
    assert answered.outcome == ANSWERED_UNANSWERABLE and not answered.correct
    # Even an answer that happens to hold the words is not correct when the question is unanswerable.
    assert not judge_answer("1,550 km", "1,550 km", answerable=False, abstained=False).correct
    assert judge_answer("Saturn", None, answerable=True, abstained=False).outcome == NOT_JUDGED
    assert judge_answer("1,550 km", "1,550 km", answerable=True, abstained=False).correct


def test_normalisation_and_the_parts_of_a_reference():
    assert normalize_answer("The Caloris Basin: about 1,550 km!") == "caloris basin 1550 km"
    assert normalize_answer("An −8.0 °C reading") == "-8 degrees celsius reading"
    assert reference_numbers("between 2.55 AU and 2.98 AU, 1,000 km") == {"2.55", "2.98", "1000"}
    assert reference_numbers("18-28 degrees") == {"18", "28"}  # a hyphen in a range is not a minus
    assert reference_names("G. P. Kuiper") == {"kuiper"}
    assert reference_names("116.75 Earth days") == frozenset()
    assert reference_names("Dec. 14, 1962") == {"december"}
    assert reference_names("The Cassini Division") == {"cassini", "division"}


def test_content_in_text_finds_the_reference_in_sources():
    sources = "[1] Neptune's moon Nereid, was spotted by G. P. Kuiper in 1949 and follows ..."
    assert content_in_text(sources, "G. P. Kuiper")
    assert not content_in_text(sources, "W. Lassell")
    assert not content_in_text(sources, "")
    assert not content_in_text("", "G. P. Kuiper")


@pytest.mark.parametrize(
    "name",
    [
        "questions.yaml",
        "heldout_questions.yaml",
        "heldout_questions_round3.yaml",
        "heldout_questions_round4.yaml",
    ],
)
def test_every_reference_answer_is_found_in_itself_and_in_its_evidence(name):
    """An independent check of the judge on the labels: each reference answer was written from
    its evidence span, so the span (written separately) must state it, and so must the answer itself."""
    questions = parse_questions(read_yaml(BUNDLED / name), name)
    judged = [question for question in questions if question.answerable and question.answer]
    assert judged
    missing = []
    for question in judged:
        spans = " ".join(span.text for evidence in question.evidence for span in evidence.spans)
        if not content_in_text(question.answer, question.answer):
            missing.append((question.question_id, "itself"))
        # One reference is longer than its span (it finishes the sentence), so only its own form counts.
        if question.question_id != "heldout3-mars-why-huge-volcanoes" and not content_in_text(
            spans, question.answer
        ):
            missing.append((question.question_id, "evidence"))
    assert not missing
