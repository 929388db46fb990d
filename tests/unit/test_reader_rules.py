"""The reader's rules, each switchable: what switching one off changes, and which only help development."""

from __future__ import annotations

import dataclasses

from rag.answering.prompts import build_prompt
from rag.answering.reader import DEFAULT_WEIGHTS, read_candidates
from rag.ask.reader_rules import ALL_RULES, RULES, development_only_rules
from rag.chunking import Chunk

VENUS = Chunk(
    "v1",
    "venus",
    "Venus",
    "Orbit",
    0,
    75,
    "Venus is bright. The planet completes one circuit around the Sun every 224.7 Earth days.",
)
IDF = {"year": 1.0, "venus": 1.0, "long": 0.5}


def test_each_rule_switches_off_exactly_one_setting():
    defaults = dataclasses.asdict(DEFAULT_WEIGHTS)
    for rule, weights in RULES.items():
        changed = [name for name, value in dataclasses.asdict(weights).items() if value != defaults[name]]
        assert changed == [rule], rule


def test_switching_the_duration_synonyms_off_loses_the_sentence_that_says_circuit():
    prompt = build_prompt("How long is a year on Venus?", [VENUS])
    with_rule = read_candidates(prompt, IDF)
    without = read_candidates(prompt, IDF, weights=RULES["duration_synonyms"])
    # The second sentence answers with "circuit", which stands for "year" in a duration question.
    assert with_rule[1].coverage > without[1].coverage
    assert with_rule[0].coverage == without[0].coverage  # the first has no synonym to lose


def rows(helps: dict[str, dict[str, int]]) -> list[dict]:
    table = [
        {"rule_off": ALL_RULES, "questions_file": name, "helps": 0} for name in ("development", "round3")
    ]
    for rule, by_file in helps.items():
        table += [
            {"rule_off": rule, "questions_file": name, "helps": value} for name, value in by_file.items()
        ]
    return table


def test_development_only_rules_help_development_and_not_the_heldout_files():
    table = rows(
        {
            "fits_development": {"development": 3, "round3": 0},
            "hurts_heldout": {"development": 2, "round3": -1},
            "general": {"development": 2, "round3": 1},
            "useless": {"development": 0, "round3": 0},
            "heldout_only": {"development": -1, "round3": 2},
        }
    )
    assert development_only_rules(table) == ["fits_development", "hurts_heldout"]
