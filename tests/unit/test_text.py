"""The analyzer and the sentence splitter."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.text import (
    analyze,
    normalize_text,
    numbers_in,
    split_sentences,
    tokenize,
    word_and_punctuation_tokens,
)


def sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in split_sentences(text)]


def test_analyzer_on_the_worked_example():
    assert analyze("Mars has two small moons, Phobos and Deimos.") == [
        "mars",
        "two",
        "small",
        "moons",
        "phobos",
        "deimos",
    ]
    assert analyze("Phobos orbits Mars faster than Mars rotates.") == [
        "phobos",
        "orbits",
        "mars",
        "faster",
        "mars",
        "rotates",
    ]
    assert analyze("What moons does Mars have?") == ["moons", "mars"]


def test_numbers_and_accents():
    assert tokenize("Venus: 224.7 days, 81,296 words; Ångström") == [
        "venus",
        "224.7",
        "days",
        "81296",
        "words",
        "angstrom",
    ]
    assert numbers_in("It takes 6.387 Earth days, not 176.") == ["6.387", "176"]
    assert tokenize("In 1877.") == ["in", "1877"]


def test_stemming_is_optional():
    assert analyze("orbits orbiting", stem=False) == ["orbits", "orbiting"]
    assert analyze("orbits orbiting", stem=True) == ["orbit", "orbit"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Phobos was found by A. Hall in 1877. It is small.",
            ["Phobos was found by A. Hall in 1877.", "It is small."],
        ),
        ("J. G. Galle saw it first. Then others did.", ["J. G. Galle saw it first.", "Then others did."]),
        (
            "Its year lasts 224.7 days. Its day is longer.",
            ["Its year lasts 224.7 days.", "Its day is longer."],
        ),
        (
            "Probes, e.g. Mariner 10, visited it. Dr. Smith of the U.S. Navy agreed.",
            ["Probes, e.g. Mariner 10, visited it.", "Dr. Smith of the U.S. Navy agreed."],
        ),
        ("It is approx. 58 km wide. See No. 2 below.", ["It is approx. 58 km wide.", "See No. 2 below."]),
        ("Is it cold? Yes! Very cold.", ["Is it cold?", "Yes!", "Very cold."]),
        ('He said "it spins." Then left.', ['He said "it spins."', "Then left."]),
        ("Ends without a period", ["Ends without a period"]),
        ("", []),
        ("  padded.   Text.  ", ["padded.", "Text."]),
    ],
)
def test_sentence_splitter_edge_cases(text, expected):
    assert sentences(text) == expected


def test_sentence_ranges_slice_back():
    text = "One. Two three.  Four five 6.5 six."
    for start, end in split_sentences(text):
        assert text[start:end] == text[start:end].strip()


def test_word_and_punctuation_tokens():
    assert word_and_punctuation_tokens("Mars has [1].") == ["Mars", "has", "[", "1", "]", "."]


def reference_normalization(text: str) -> str:
    """Lowercase, decompose, drop every combining mark: the definition, one character at a time."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(ch))


@pytest.mark.parametrize(
    "text",
    [
        "Plain ASCII, 224.7 days.",
        "Sáturn és Ñandú",
        "İstanbul",
        "ﬁrst ½ °C",
        "e\u0301\u0327",
        "日本語 km²",
        "",
    ],
)
def test_normalization_matches_its_definition(text):
    assert normalize_text(text) == reference_normalization(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_normalization_matches_its_definition_on_any_text(text):
    assert normalize_text(text) == reference_normalization(text)
