"""The extractive generator, against the worked example and its own rules."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from rag.answering.extractive import (
    ABSTENTION_TEXT,
    Abstention,
    ExtractiveAnswer,
    cite,
    default_unknown_idf,
    expects_number,
    extract_answer,
    extractive_generator,
    question_terms,
    score_sentences,
)
from rag.answering.prompts import build_prompt
from rag.answering.verification import check_answer
from rag.chunking import Chunk
from rag.text import analyze


def make_chunk(chunk_id: str, text: str, title: str = "Mars", section: str = "") -> Chunk:
    return Chunk(chunk_id, chunk_id, title, section, 0, len(text), text)


D1 = make_chunk("d1", "Mars has two small moons, Phobos and Deimos.")
D2 = make_chunk("d2", "Phobos orbits Mars faster than Mars rotates.")
D3 = make_chunk("d3", "Jupiter has dozens of moons, including four large moons.", title="Jupiter")
D4 = make_chunk("d4", "The red colour of Mars comes from iron oxide dust.")
QUESTION = "What moons does Mars have?"


def bm25_idf(chunks: list[Chunk]) -> dict[str, float]:
    """The positive BM25 idf, ln(1 + (N - n + 0.5) / (n + 0.5)), over the chunk texts."""
    document_frequency = Counter(term for chunk in chunks for term in set(analyze(chunk.text)))
    total = len(chunks)
    return {
        term: math.log(1 + (total - count + 0.5) / (count + 0.5))
        for term, count in document_frequency.items()
    }


IDF = bm25_idf([D1, D2, D3, D4])


def test_worked_example_idf():
    assert IDF["moons"] == pytest.approx(0.6931, abs=5e-5)
    assert IDF["mars"] == pytest.approx(0.3567, abs=5e-5)


def test_worked_example_coverages_and_answer():
    prompt = build_prompt(QUESTION, [D1, D2])
    first, second = score_sentences(prompt, IDF)
    assert first.coverage == pytest.approx(1.0)
    assert second.coverage == pytest.approx(0.3397, abs=5e-5)
    assert second.coverage == pytest.approx(IDF["mars"] / (IDF["mars"] + IDF["moons"]))

    answer = extract_answer(prompt, IDF)
    assert isinstance(answer, ExtractiveAnswer)
    assert not answer.abstained
    assert answer.text == "Mars has two small moons, Phobos and Deimos [1]."
    assert answer.source_number == 1
    assert answer.coverage == pytest.approx(1.0)


def test_extractive_answer_passes_the_citation_check():
    prompt = build_prompt(QUESTION, [D1, D2])
    report = check_answer(extract_answer(prompt, IDF).text, prompt.source_texts)
    assert report.supported


def test_abstains_below_threshold_and_answers_at_it():
    prompt = build_prompt(QUESTION, [D2])  # the best sentence covers only 0.3397
    coverage = IDF["mars"] / (IDF["mars"] + IDF["moons"])
    refused = extract_answer(prompt, IDF, threshold=0.5)
    assert isinstance(refused, Abstention)
    assert refused.abstained
    assert refused.best_coverage == pytest.approx(coverage)
    assert refused.text == ABSTENTION_TEXT
    answered = extract_answer(prompt, IDF, threshold=coverage)
    assert answered.text == "Phobos orbits Mars faster than Mars rotates [1]."


def test_abstains_without_sources():
    prompt = build_prompt(QUESTION, [])
    assert extract_answer(prompt, IDF, threshold=0.0).abstained


def test_word_after_how_is_dropped():
    assert question_terms("How long is a year on Venus?") == ["year", "venus"]
    assert question_terms("How many moons does Mars have?") == ["moons", "mars"]
    assert "long" in analyze("How long is a year on Venus?")  # the analyzer alone keeps it


def test_word_after_how_does_not_count_towards_coverage():
    sentences = make_chunk("v", "A long year on Venus is a long day. A year on Venus lasts 224.7 Earth days.")
    prompt = build_prompt("How long is a year on Venus?", [sentences])
    idf = {"year": 1.0, "venus": 1.0, "long": 5.0}
    long_day, lasts = score_sentences(prompt, idf)
    # Had "long" stayed in Q it would carry 5 of the 7 weight units and the first sentence would win
    # (1 - 0.5 against 2/7); without it both cover year and venus and the number penalty decides.
    assert long_day.coverage == pytest.approx(1.0 - 0.5)
    assert lasts.coverage == pytest.approx(1.0)
    assert extract_answer(prompt, idf).text == "A year on Venus lasts 224.7 Earth days [1]."


@pytest.mark.parametrize(
    "question, expected",
    [
        ("How many moons does Mars have?", True),
        ("How long is a day on Mars?", True),
        ("When was Phobos discovered?", True),
        ("What moons does Mars have?", False),
        ("How big is Phobos?", False),
    ],
)
def test_questions_that_expect_a_number(question, expected):
    assert expects_number(question) is expected


def test_number_penalty_prefers_the_sentence_with_a_number():
    chunk = make_chunk("p", "Phobos was discovered by Asaph Hall. Phobos was discovered in 1877.")
    idf = {"phobos": 1.0, "discovered": 1.0}
    when = build_prompt("When was Phobos discovered?", [chunk])
    without_number, with_number = score_sentences(when, idf)
    assert without_number.coverage == pytest.approx(0.5)
    assert with_number.coverage == pytest.approx(1.0)
    assert extract_answer(when, idf).text == "Phobos was discovered in 1877 [1]."
    # Without a numeric question there is no penalty, and the tie goes to the earlier sentence.
    who = build_prompt("Who discovered Phobos?", [chunk])
    assert [scored.coverage for scored in score_sentences(who, idf)] == [1.0, 1.0]
    assert extract_answer(who, idf).text == "Phobos was discovered by Asaph Hall [1]."


def test_penalty_can_push_every_sentence_below_threshold():
    prompt = build_prompt("How many moons does Jupiter have?", [D3])
    idf = {"moons": 1.0, "jupiter": 1.0}
    result = extract_answer(prompt, idf, threshold=0.6)
    assert result.abstained
    assert result.best_coverage == pytest.approx(0.5)


def test_ties_go_to_the_earlier_source():
    twin = make_chunk("twin", D1.text)
    prompt = build_prompt(QUESTION, [D2, twin, D1])
    answer = extract_answer(prompt, IDF)
    assert answer.source_number == 2
    assert answer.text == "Mars has two small moons, Phobos and Deimos [2]."


def test_label_terms_count_towards_coverage():
    chunk = make_chunk("v", "It completes an orbit every 224.7 days.", title="Venus", section="Orbit")
    prompt = build_prompt("How long is a year on Venus?", [chunk])
    (scored,) = score_sentences(prompt, {"year": 1.0, "venus": 3.0})
    assert scored.coverage == pytest.approx(0.75)  # venus from the title, year nowhere


def test_unknown_question_terms_get_the_largest_known_idf():
    prompt = build_prompt("What moons does Neptune have?", [D1])
    (scored,) = score_sentences(prompt, IDF)
    largest = max(IDF.values())
    assert default_unknown_idf(IDF) == largest
    assert scored.coverage == pytest.approx(IDF["moons"] / (IDF["moons"] + largest))
    (explicit,) = score_sentences(prompt, IDF, unknown_idf=IDF["moons"])
    assert explicit.coverage == pytest.approx(0.5)


def test_question_without_terms_abstains():
    prompt = build_prompt("What is it?", [D1])
    result = extract_answer(prompt, IDF, threshold=0.1)
    assert result.abstained
    assert result.best_coverage == 0.0


def test_negative_idf_is_rejected_with_the_term():
    prompt = build_prompt(QUESTION, [D1])
    with pytest.raises(ValueError, match="'mars'"):
        extract_answer(prompt, {"moons": 0.0, "mars": -0.8473})


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("Mars has two small moons, Phobos and Deimos.", "Mars has two small moons, Phobos and Deimos [1]."),
        ("Is Phobos falling?", "Is Phobos falling [1]?"),
        ("Phobos is doomed!", "Phobos is doomed [1]!"),
        ("A heading without a period", "A heading without a period [1]"),
    ],
)
def test_citation_goes_before_the_final_punctuation(sentence, expected):
    assert cite(sentence, 1) == expected


def test_generator_function_returns_text():
    generate = extractive_generator(IDF, threshold=0.5)
    assert generate(build_prompt(QUESTION, [D1, D2])) == "Mars has two small moons, Phobos and Deimos [1]."
    assert generate(build_prompt(QUESTION, [D4])) == ABSTENTION_TEXT
