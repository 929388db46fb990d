"""The reader: signals, ranking of sentences, abstention, and the similarity hook."""

from __future__ import annotations

import itertools
import math

import pytest

from rag.answering.extractive import ABSTENTION_TEXT, extract_answer
from rag.answering.prompts import build_prompt
from rag.answering.reader import ReaderWeights, chunk_sentences, proximity, read, read_candidates
from rag.chunking import Chunk


def make_chunk(chunk_id: str, text: str, title: str, section: str = "") -> Chunk:
    return Chunk(chunk_id, title.lower(), title, section, 0, len(text), text)


TITAN = make_chunk(
    "s1",
    "Pioneer 11 measured the surface temperature of Titan in 1979. Titan is the largest moon of Saturn.",
    "Saturn",
    "Titan",
)
VENUS = make_chunk(
    "v1",
    "Venus is often called Earth's twin. The planet completes one circuit around the Sun every 224.7 "
    "Earth days. A year on Jupiter, the Year Star of old, is long.",
    "Venus",
    "Orbit",
)
IDF = {"surface": 1.0, "temperature": 1.5, "titan": 2.0, "year": 1.2, "venus": 1.4, "long": 0.8}


def brute_force_proximity(terms: list[str], question: list[str]) -> float:
    """Every window of the sentence, the shortest holding every matched question term."""
    wanted = set(question)
    present = wanted.intersection(terms)
    if not present:
        return 0.0
    shortest = min(
        end - start
        for start, end in itertools.combinations(range(len(terms) + 1), 2)
        if present <= set(terms[start:end])
    )
    return (len(present) / len(wanted)) * (len(present) / shortest)


@pytest.mark.parametrize(
    ("terms", "question"),
    [
        (["a", "b", "c"], ["a", "c"]),
        (["a", "x", "x", "b", "a", "b"], ["a", "b"]),
        (["x", "y"], ["a"]),
        (["a", "a", "a"], ["a", "b", "c"]),
        (["c", "x", "a", "x", "b", "c", "a", "b"], ["a", "b", "c"]),
    ],
)
def test_proximity_matches_brute_force(terms, question):
    assert proximity(terms, question) == pytest.approx(brute_force_proximity(terms, question))


def test_a_sentence_without_the_expected_type_is_penalised():
    prompt = build_prompt("What is the surface temperature of Titan?", [TITAN])
    measured, largest = read_candidates(prompt, IDF)
    assert not measured.typed
    weights = ReaderWeights()
    expected = round(
        weights.coverage * measured.coverage + weights.proximity * measured.proximity - weights.type_penalty,
        4,
    )
    assert measured.score == pytest.approx(expected, abs=2e-4)
    # The spec's generator quotes the sentence that repeats the question, with full coverage.
    spec = extract_answer(prompt, IDF, threshold=0.5)
    assert spec.sentence.startswith("Pioneer 11") and spec.coverage == pytest.approx(1.0)


def test_reader_prefers_the_sentence_with_the_answer_type():
    prompt = build_prompt("How long is a year on Venus?", [VENUS])
    reading = read(prompt, IDF, threshold=0.0)
    assert reading.answered
    assert "224.7 Earth days" in reading.best.sentence
    assert reading.text.endswith("[1].")


def test_reader_abstains_below_the_threshold_and_keeps_the_best_sentence():
    prompt = build_prompt("How long is a year on Venus?", [VENUS])
    best = read(prompt, IDF, threshold=-math.inf).best
    reading = read(prompt, IDF, threshold=best.score + 0.01)
    assert not reading.answered
    assert reading.text == ABSTENTION_TEXT
    assert reading.best == best


def test_similarity_is_added_with_its_weight_and_rounded():
    prompt = build_prompt("How long is a year on Venus?", [VENUS])
    calls = []

    def similarity(question, sentences):
        calls.append((question, list(sentences)))
        return [0.1234567 * (index + 1) for index in range(len(sentences))]

    plain = read_candidates(prompt, IDF)
    dense = read_candidates(prompt, IDF, similarity)
    assert calls == [("How long is a year on Venus?", chunk_sentences(VENUS))]
    for index, (without, with_similarity) in enumerate(zip(plain, dense, strict=True)):
        assert with_similarity.similarity == round(0.1234567 * (index + 1), 4)
        shift = ReaderWeights().similarity * with_similarity.similarity
        assert with_similarity.score == pytest.approx(without.score + shift, abs=2e-4)


def test_ties_go_to_the_earlier_source():
    twin = make_chunk("v2", VENUS.text, "Venus", "Orbit")
    prompt = build_prompt("How long is a year on Venus?", [VENUS, twin])
    assert read(prompt, IDF, threshold=0.0).best.source_number == 1


def test_title_and_section_count_for_coverage():
    subjectless = make_chunk("v3", "It lasts 224.7 Earth days.", "Venus", "Year")
    elsewhere = make_chunk("m1", "It lasts 687 Earth days.", "Mars", "Orbit")
    prompt = build_prompt("How long is a year on Venus?", [elsewhere, subjectless])
    assert read(prompt, IDF, threshold=0.0).best.sentence == "It lasts 224.7 Earth days."


def test_nan_threshold_is_refused():
    prompt = build_prompt("How long is a year on Venus?", [VENUS])
    with pytest.raises(ValueError, match="threshold"):
        read(prompt, IDF, threshold=math.nan)


def _coverage_of(question: str, chunk: Chunk, idf: dict[str, float]) -> dict[str, float]:
    prompt = build_prompt(question, [chunk])
    return {candidate.sentence: candidate.coverage for candidate in read_candidates(prompt, idf)}


DISCOVERY = make_chunk(
    "u1",
    "W. Herschel noticed an object with a small disc. "
    "The element uranium was identified by M. H. Klaproth. "
    "J. E. Bode argued for the name.",
    "Uranus",
    "Recognition",
)
DISCOVERY_IDF = {"discovered": 2.0, "uranus": 1.0}


def test_general_synonyms_were_removed_so_noticed_is_not_discovered():
    # The synonym groups helped only the development questions (results/reader_rules.csv):
    # "noticed" no longer stands for "discovered", so all three sentences cover the same terms.
    coverage = _coverage_of("Who discovered Uranus?", DISCOVERY, DISCOVERY_IDF)
    noticed, identified, argued = (coverage[sentence] for sentence in chunk_sentences(DISCOVERY))
    assert noticed == identified == argued < 1.0


def test_a_year_is_a_circuit_only_when_the_question_asks_for_a_duration():
    chunk = make_chunk(
        "v4", "The planet completes one circuit around the Sun every 224.7 Earth days.", "Venus"
    )
    idf = {"year": 1.0, "venus": 1.0, "circuit": 1.0}
    duration = _coverage_of("How long is a year on Venus?", chunk, idf)
    date = _coverage_of("In what year did Venus complete its circuit?", chunk, idf)
    assert list(duration.values()) == [1.0]
    # Asked for a date, "year" is not matched by "circuit": only venus and circuit are.
    assert list(date.values())[0] < 1.0


def test_a_sentence_opening_with_a_pronoun_borrows_the_previous_sentences_terms():
    chunk = make_chunk(
        "n1",
        "Voyager 2 flew past the planet. It made its closest approach on 24 Jan. 1986.",
        "Uranus",
        "Exploration",
    )
    detached = make_chunk(
        "n2", "Clouds drift. It made its closest approach on 24 Jan. 1986.", "Uranus", "Exploration"
    )
    idf = {"voyager": 2.0, "closest": 1.0, "approach": 1.0, "uranus": 1.0}
    question = "When did Voyager 2 make its closest approach to Uranus?"
    with_context = _coverage_of(question, chunk, idf)["It made its closest approach on 24 Jan. 1986."]
    without = _coverage_of(question, detached, idf)["It made its closest approach on 24 Jan. 1986."]
    assert with_context > without


def test_rag_asks_default_thresholds_are_read_from_the_pipelines_cross_validation():
    """The thresholds are the rows of results/reader_thresholds.csv, read, not restated."""
    from pathlib import Path

    import pandas as pd

    from rag.answering.reader import read_chosen_thresholds

    path = Path(__file__).parents[3] / "results" / "reader_thresholds.csv"
    table = pd.read_csv(path, dtype={"fold": str})
    selected = table[
        (table["corpus"] == "solar_system")
        & (table["chunker"] == "sentences100")
        & (table["retriever"] == "minilm")
        & (table["fold"] == "all")
    ]
    assert set(selected["reader"]) == {"reader", "reader_minilm"}
    assert read_chosen_thresholds(path) == dict(zip(selected.reader, selected.threshold, strict=True))


def test_chosen_thresholds_fall_back_to_the_baseline_and_name_the_file_when_absent():
    from rag.answering.reader import chosen_thresholds

    def row(retriever, reader, threshold, chunker="sentences100", fold="all"):
        return {
            "corpus": "solar_system",
            "chunker": chunker,
            "retriever": retriever,
            "reader": reader,
            "fold": fold,
            "threshold": threshold,
        }

    rows = [row("bm25", "reader", "0.700000"), row("bm25", "reader", "0.9", fold="0")]
    assert chosen_thresholds(rows, "t.csv") == {"reader": 0.7}
    assert chosen_thresholds([*rows, row("minilm", "reader", "0.85")], "t.csv") == {"reader": 0.85}
    absent = r"^t.csv: no cross-validated reader threshold for corpus solar_system"
    with pytest.raises(ValueError, match=absent):
        chosen_thresholds([row("tfidf", "reader", "0.8"), row("bm25", "reader", "0.8", chunker="x")], "t.csv")
