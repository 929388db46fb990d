"""The first_sentence generator kind: the top chunk's first sentence, cited, whatever was asked."""

from __future__ import annotations

import pytest

from rag.answering.answers import answer_and_judge, reader_outputs, settings_from_config
from rag.answering.config_checks import GENERATION_DEFAULTS, canonical_answers, canonical_generators
from rag.answering.first_sentence import best_sentence
from rag.chunking import Chunk
from rag.kinds import GENERATOR_KINDS, ConfigError, behaviour
from rag.labels import Question

FIRST = "Titan is the largest moon of Saturn. It is wrapped in a thick haze."
SECOND = "Pioneer 11 measured the temperature of Titan in 1979."
CHUNKS = [
    Chunk("c1", "saturn", "Saturn", "Moons", 0, len(FIRST), FIRST),
    Chunk("c2", "saturn", "Saturn", "Probes", 0, len(SECOND), SECOND),
]
IDF = {"titan": 2.0, "temperature": 1.5, "pioneer": 1.0, "largest": 1.0}


def _settings():
    """The settings the pipeline's read_answers job gives the kind, from a checked answers section."""
    generators = canonical_generators({"generators": {"first_sentence": {"kind": "first_sentence"}}})
    answers = canonical_answers({}, [("x", "bm25")], {"bm25": "bm25"}, 10, generators=generators)
    (reader,) = answers["readers"]
    return reader, settings_from_config({**GENERATION_DEFAULTS, "k": 2}, reader)[0]


def test_the_kind_is_resolved_through_the_table():
    assert GENERATOR_KINDS["first_sentence"].role == "offline"
    assert behaviour("first_sentence", "read") is best_sentence


def test_it_answers_with_the_top_chunks_first_sentence_and_cites_it_whatever_was_asked():
    _, settings = _settings()
    for text in ("What temperature did Pioneer 11 measure on Titan?", "Who wrote Hamlet?"):
        question = Question("q", text, "single_document", True, ())
        record = answer_and_judge(question, CHUNKS, IDF, settings)
        assert record.answered and record.cited_source == 1
        # Independently: the text up to its first full stop, with [1] before the stop.
        assert record.answer == FIRST.split(". ")[0] + " [1]."


def test_a_prompt_without_a_sentence_is_an_abstention():
    _, settings = _settings()
    question = Question("q", "Who wrote Hamlet?", "unanswerable", False, ())
    record = answer_and_judge(question, [], IDF, settings)
    assert not record.answered and record.cited_source is None


def test_its_rows_are_named_after_the_kind_and_its_threshold_is_never_chosen():
    reader, settings = _settings()
    assert reader["name"] == "first_sentence" and reader["rule"] == "read_answers"
    assert reader["threshold"] is None and settings.threshold == -float("inf")
    path = "work/answers/c/x/bm25.first_sentence.parquet"
    assert reader_outputs([reader], [path]) == [path]


def test_it_takes_no_parameters():
    with pytest.raises(ConfigError, match=r"config\['generators'\]\['first'\]\['k'\]: not a parameter"):
        canonical_generators({"generators": {"first": {"kind": "first_sentence", "k": 3}}})
