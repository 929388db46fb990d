"""The grounding glue: swaps, support checks of memory's answer, odds and tidy rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from rag.answering.verification import parse_citations
from rag.grounding.cases import (
    ANSWER_COLUMNS,
    CASE_COLUMNS,
    MODELS,
    SWAP_COLUMNS,
    GroundingCase,
    RetrievedChunks,
    SwapCase,
    answer_rows,
    case_row,
    check_against_sources,
    check_wrong_answer_source,
    describe_case,
    log10_odds_by_model,
    run_case,
    run_swap,
    source_claim,
    swap_rows,
    swap_values,
    top_chunks,
)
from rag.grounding.config_checks import GROUNDING_PARAMETERS, canonical_grounding
from rag.grounding.rag_likelihoods import candidate_likelihoods
from rag.grounding.trigram import score, train
from rag.kinds import ConfigError

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"

# A memory that has read Mercury's "lasts about 176 Earth days" and Pluto in
# other sentences, but never the length of Pluto's day.
MEMORY_TEXTS = [
    "A solar day on Mercury lasts about 176 Earth days.",
    "Mercury's day lasts about 176 Earth days, longer than its year.",
    "A day on Pluto is long and cold.",
    "Pluto is a dwarf planet beyond Neptune. Pluto has five known moons.",
    "Saturn has many known moons. Jupiter has many known moons.",
]
PLUTO = GroundingCase(
    name="pluto-day",
    question_id="pluto-rotation-period",
    prompt="A day on Pluto lasts",
    true_answer="6.387 Earth days.",
    wrong_answer="about 176 Earth days.",
    wrong_from="mercury",
)
PLUTO_CHUNKS = RetrievedChunks(
    chunk_ids=("pluto-1", "pluto-2"),
    texts=(
        "A day on Pluto lasts 6.387 Earth days.",
        "Pluto has five known moons, and Charon is the largest.",
    ),
    scores=(3.0, 1.0),
)
MOONS = SwapCase(
    question_id="saturn-vs-jupiter-moons",
    correct="Saturn has 274 known moons and Jupiter has 95.",
    values=("274", "95"),
)
MOON_CHUNKS = RetrievedChunks(
    chunk_ids=("saturn", "jupiter"),
    texts=("Saturn has 274 known moons.", "Jupiter has 95 confirmed moons."),
    scores=(5.0, 4.6),
)


@pytest.fixture(scope="module")
def memory():
    return train(MEMORY_TEXTS)


# --------------------------------------------------------------------------
# Swaps
# --------------------------------------------------------------------------


def test_swap_exchanges_the_two_values_and_is_its_own_inverse() -> None:
    assert MOONS.swapped == "Saturn has 95 known moons and Jupiter has 274."
    assert swap_values(MOONS.swapped, "274", "95") == MOONS.correct
    # Values may be phrases, and the order of the two does not matter.
    sentence = "Alpha turns in 58.6 days and Beta in 10.7 hours."
    swapped = "Alpha turns in 10.7 hours and Beta in 58.6 days."
    assert swap_values(sentence, "58.6 days", "10.7 hours") == swapped
    assert swap_values(sentence, "10.7 hours", "58.6 days") == swapped


def test_swap_matches_whole_values_only() -> None:
    # "95" inside "1995" or "2.95" is not the value 95.
    sentence = "In 1995 Jupiter had 2.95 moons per year, now 95 and Saturn 274."
    assert (
        swap_values(sentence, "95", "274")
        == "In 1995 Jupiter had 2.95 moons per year, now 274 and Saturn 95."
    )


@pytest.mark.parametrize(
    ("sentence", "values", "message"),
    [
        ("Saturn has 274 moons.", ("274", "95"), "'95' occurs 0 times"),
        ("Saturn has 95 moons and Jupiter 95 and 274.", ("274", "95"), "'95' occurs 2 times"),
        ("Saturn has 274 moons.", ("274", "274"), "the same"),
    ],
)
def test_swap_rejects_ambiguous_values(sentence: str, values: tuple[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        swap_values(sentence, *values)


# --------------------------------------------------------------------------
# Support checks
# --------------------------------------------------------------------------


def test_source_claim_cites_every_source() -> None:
    claim = source_claim("A day on Pluto lasts", " about 176 Earth days. ", 3)
    assert claim == "A day on Pluto lasts about 176 Earth days. [1, 2, 3]"
    assert parse_citations(claim) == ((1, 2, 3), "A day on Pluto lasts about 176 Earth days.")
    with pytest.raises(ValueError, match="at least one source"):
        source_claim("A", "b", 0)


def test_remembered_number_is_flagged_and_the_stated_one_passes() -> None:
    wrong = check_against_sources(PLUTO.prompt, PLUTO.wrong_answer, PLUTO_CHUNKS.texts)
    assert wrong.cited == (1, 2)
    assert wrong.unsupported_numbers == ("176",)
    assert not wrong.supported
    true = check_against_sources(PLUTO.prompt, PLUTO.true_answer, PLUTO_CHUNKS.texts)
    assert true.supported and true.support == 1.0 and not true.unsupported_numbers
    # The number sits in the second chunk only: every retrieved chunk counts.
    swapped_order = check_against_sources(PLUTO.prompt, PLUTO.true_answer, PLUTO_CHUNKS.texts[::-1])
    assert swapped_order.supported


def test_wrong_answer_must_be_stated_by_its_document() -> None:
    check_wrong_answer_source(PLUTO, "A solar day on Mercury lasts about 176 Earth days.")
    with pytest.raises(ValueError, match=r"'pluto-day'.*'mercury'.*\['176'\]"):
        check_wrong_answer_source(PLUTO, "A solar day on Mercury lasts about 175 Earth days.")
    with pytest.raises(ValueError, match="terms occur"):
        check_wrong_answer_source(PLUTO, "Mercury: 176.")


# --------------------------------------------------------------------------
# Retrieved chunks
# --------------------------------------------------------------------------


def test_top_chunks_follow_the_ranks_and_stop_at_k() -> None:
    texts = {"a": "alpha", "b": "beta", "c": "gamma"}
    ranked = [(3, "c", 0.5), (1, "b", 2.0), (2, "a", 1.0)]
    top = top_chunks(ranked, texts, 2, "q")
    assert top == RetrievedChunks(("b", "a"), ("beta", "alpha"), (2.0, 1.0))
    assert top_chunks(ranked, texts, 10, "q").chunk_ids == ("b", "a", "c")
    with pytest.raises(ValueError, match="'q' has no retrieved chunks"):
        top_chunks([], texts, 2, "q")
    with pytest.raises(ValueError, match="'z' is not in the chunk set"):
        top_chunks([(1, "z", 1.0)], texts, 2, "q")


# --------------------------------------------------------------------------
# Cases and rows
# --------------------------------------------------------------------------


def test_case_rows_hold_every_model_and_the_odds_match_independent_scores(memory) -> None:
    result = run_case(memory, PLUTO, PLUTO_CHUNKS, temperature=0.5, max_tokens=20)
    # Memory has read Mercury's sentence only, so it completes Pluto's day with it.
    assert result.comparison.memory_completion.text == "about 176 earth days."
    assert result.completion_check.unsupported_numbers == ("176",)
    assert not result.completion_check.supported
    assert result.true_check.supported and not result.wrong_check.supported

    expected_memory_odds = (
        score(memory, PLUTO.prompt, PLUTO.true_answer, end_of_sentence=True).log_likelihood
        - score(memory, PLUTO.prompt, PLUTO.wrong_answer, end_of_sentence=True).log_likelihood
    ) / np.log(10.0)
    assert result.log10_odds["memory"] == pytest.approx(expected_memory_odds, rel=1e-12)
    assert result.log10_odds == pytest.approx(log10_odds_by_model(result.comparison))
    # Memory prefers the remembered 176; every conditioned model flips to 6.387.
    assert result.log10_odds["memory"] < 0.0
    assert all(result.log10_odds[model] > 0.0 for model in MODELS[1:])

    rows = answer_rows(result)
    assert [list(row) for row in rows] == [ANSWER_COLUMNS] * 8
    assert [(row["model"], row["answer_kind"]) for row in rows] == [
        (model, kind) for model in MODELS for kind in ("true", "wrong")
    ]
    for row in rows:
        assert row["log10_likelihood"] == pytest.approx(row["log_likelihood"] / np.log(10.0))
        assert row["geometric_mean"] == pytest.approx(np.exp(row["log_likelihood"] / row["token_count"]))

    summary = case_row(result)
    assert list(summary) == CASE_COLUMNS
    assert summary["chunk_ids"] == "pluto-1 pluto-2"
    assert summary["completion_unsupported_numbers"] == "176"
    assert summary["wrong_unsupported_numbers"] == "176"
    assert summary["memory_log10_odds"] == result.log10_odds["memory"]


def test_the_completion_with_sources_says_what_they_state_where_memory_does_not(memory) -> None:
    result = run_case(memory, PLUTO, PLUTO_CHUNKS, temperature=0.5, max_tokens=20)
    # The sources state Pluto's 6.387 days, so the conditioned model completes with it, same prompt.
    with_sources = result.comparison.sources_completion
    assert with_sources.prompt == PLUTO.prompt
    assert with_sources.text == "6.387 earth days." != result.comparison.memory_completion.text
    assert with_sources.finished
    check = result.sources_completion_check
    assert check.supported and check.support == 1.0 and not check.unsupported_numbers
    assert not result.completion_check.supported

    summary = case_row(result)
    assert summary["sources_completion"] == "6.387 earth days."
    assert summary["sources_completion_finished"] and summary["sources_completion_tokens"] == 4
    assert summary["sources_completion_supported"] and summary["sources_completion_support"] == 1.0
    assert summary["sources_completion_unsupported_numbers"] == ""
    assert summary["completion_unsupported_numbers"] == "176" and not summary["completion_supported"]
    # Each completion's columns sit after the memory completion's, both before the odds.
    memory_end = CASE_COLUMNS.index("completion_geometric_mean")
    assert CASE_COLUMNS[memory_end + 1 : memory_end + 4] == [
        "sources_completion",
        "sources_completion_finished",
        "sources_completion_tokens",
    ]
    check_end = CASE_COLUMNS.index("completion_supported")
    assert CASE_COLUMNS[check_end + 1 : check_end + 4] == [
        "sources_completion_support",
        "sources_completion_unsupported_numbers",
        "sources_completion_supported",
    ]


def test_the_log_line_names_both_completions_and_their_verdicts(memory) -> None:
    line = describe_case(run_case(memory, PLUTO, PLUTO_CHUNKS, temperature=0.5, max_tokens=20))
    assert "memory says 'about 176 earth days.'" in line
    assert "with the sources '6.387 earth days.'" in line
    assert line.endswith("completion supported: False, sources completion supported: True")


def test_swap_rows_hold_the_ratios_of_independent_likelihoods(memory) -> None:
    result = run_swap(memory, MOONS, MOON_CHUNKS, temperature=0.5)
    correct, swapped = candidate_likelihoods(
        memory,
        list(MOON_CHUNKS.texts),
        list(MOON_CHUNKS.scores),
        [MOONS.correct, MOONS.swapped],
        temperature=0.5,
    )
    rows = {(row["candidate"], row["model"]): row for row in swap_rows(result)}
    assert all(list(row) == SWAP_COLUMNS for row in rows.values())
    assert set(rows) == {(c, m) for c in ("correct", "swapped") for m in ("rag_sequence", "rag_token")}
    log10 = np.log(10.0)
    for model in ("rag_sequence", "rag_token"):
        expected = (
            getattr(swapped, f"{model}_log_likelihood") - getattr(correct, f"{model}_log_likelihood")
        ) / log10
        assert rows["swapped", model]["log10_ratio_to_correct"] == pytest.approx(expected, rel=1e-12)
        assert rows["swapped", model]["ratio_to_correct"] == pytest.approx(10.0**expected, rel=1e-9)
        assert rows["correct", model]["ratio_to_correct"] == 1.0
    assert rows["correct", "rag_token"]["log10_ratio_to_rag_sequence"] == pytest.approx(
        correct.log10_token_over_sequence, rel=1e-12
    )
    # Each number sits in its own chunk: RAG-Token rates the correct sentence
    # above RAG-Sequence, which must explain it with one chunk.
    assert rows["correct", "rag_token"]["ratio_to_rag_sequence"] > 10.0
    assert rows["swapped", "rag_token"]["sentence"] == "Saturn has 95 known moons and Jupiter has 274."


# --------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------


def _case(name: str) -> dict:
    return {
        "name": name,
        "question": "q",
        "prompt": "p",
        "true_answer": "t",
        "wrong_answer": "w",
        "wrong_from": "d",
    }


def test_canonical_grounding_fills_defaults_and_sorts_cases() -> None:
    swap = {"question": "q", "correct": "a 1 b 2", "values": ["1", "2"]}
    canonical = canonical_grounding({"k": 3, "cases": [_case("b"), _case("a")], "swap": swap})
    assert canonical["k"] == 3
    assert canonical["chunker"] == GROUNDING_PARAMETERS["chunker"] == "sentences100"
    assert (canonical["retriever"], canonical["temperature"]) == ("bm25", 0.5)
    assert [case["name"] for case in canonical["cases"]] == ["a", "b"]
    with pytest.raises(ConfigError, match=r"\['cases'\]\[1\]\['name'\]: duplicate case name 'a'"):
        canonical_grounding({"cases": [_case("a"), _case("a")], "swap": swap})


def test_schema_defaults_match_the_parameter_table() -> None:
    schema = yaml.safe_load(SCHEMA.read_text())
    properties = schema["properties"]["grounding"]["properties"]
    assert {key: properties[key]["default"] for key in GROUNDING_PARAMETERS} == GROUNDING_PARAMETERS
