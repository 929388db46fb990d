"""Citation and support checks, against the worked example and the spec's pitfalls."""

from __future__ import annotations

import pytest

from rag.answering.verification import SupportRule, check_answer, check_claim, parse_citations, split_claims

SOURCES = {
    1: "Mars has two small moons, Phobos and Deimos.",
    2: "Phobos orbits Mars faster than Mars rotates.",
}
DRAFT = (
    "Mars has two moons, Phobos and Deimos [1]. "
    "Phobos circles Mars every 8 hours [2]. "
    "Deimos is the smaller moon [3]."
)


def test_worked_example_draft():
    report = check_answer(DRAFT, SOURCES)
    first, second, third = report.claims

    assert first.sentence == "Mars has two moons, Phobos and Deimos [1]."
    assert first.cited == (1,)
    assert (first.matched_terms, first.term_count) == (5, 5)
    assert first.support == 1.0
    assert first.unsupported_numbers == ()
    assert first.supported

    assert second.cited == (2,)
    assert (second.matched_terms, second.term_count) == (2, 6)
    assert second.support == pytest.approx(0.3333, abs=5e-5)
    assert second.unsupported_numbers == ("8",)
    assert not second.supported

    assert third.cited == (3,)
    assert third.missing_citations == (3,)
    assert third.support == 0.0
    assert not third.supported

    assert not report.supported
    assert report.supported_claims == 1
    assert report.supported_share == pytest.approx(1 / 3)
    assert report.missing_citations == (3,)
    assert report.unsupported_numbers == ("8",)


def test_fully_supported_answer():
    report = check_answer("Mars has two small moons [1]. Phobos orbits Mars [2].", SOURCES)
    assert report.supported
    assert report.supported_share == 1.0


def test_invented_number_in_well_matched_claim_is_caught_only_by_the_number_check():
    sources = {1: "Pluto rotates once every 6.387 Earth days."}
    claim = check_claim("Pluto rotates every 176 days [1].", sources)
    assert claim.support == pytest.approx(0.8)  # 4 of pluto, rotates, every, 176, days
    assert claim.unsupported_numbers == ("176",)
    assert not claim.supported
    assert check_claim("Pluto rotates every 6.387 days [1].", sources).supported


def test_number_must_be_in_a_cited_source_not_just_any_source():
    sources = {1: "Phobos orbits Mars in 7.65 hours.", 2: "Deimos orbits Mars in 30.3 hours."}
    assert check_claim("Phobos orbits Mars in 7.65 hours [1].", sources).supported
    wrong = check_claim("Phobos orbits Mars in 7.65 hours [2].", sources)
    assert wrong.unsupported_numbers == ("7.65",)
    assert not wrong.supported


def test_threshold_is_a_parameter():
    sources = {1: "Phobos orbits Mars."}
    claim = "Phobos orbits Mars quickly [1]."  # 3 of 4 terms
    assert check_claim(claim, sources).support == 0.75
    assert check_claim(claim, sources).supported  # at the threshold passes
    assert not check_claim(claim, sources, SupportRule(threshold=0.8)).supported
    assert check_claim("Phobos orbits Mars very fast [1].", sources, SupportRule(threshold=0.6)).supported


def test_uncited_claim_fails_even_with_full_overlap():
    claim = check_claim("Mars has two small moons.", SOURCES)
    assert claim.cited == ()
    assert claim.support == 0.0
    assert not claim.supported


def test_one_existing_citation_is_enough_and_missing_ones_are_reported():
    claim = check_claim("Mars has two small moons [1][7].", SOURCES)
    assert claim.cited == (1, 7)
    assert claim.missing_citations == (7,)
    assert claim.supported


def test_support_counts_repeats():
    sources = {1: "Mars is red."}
    claim = check_claim("Mars, Mars, Mars and Jupiter [1].", sources)
    assert (claim.matched_terms, claim.term_count) == (3, 4)


def test_terms_of_several_cited_sources_are_pooled():
    claim = check_claim("Deimos rotates faster [1, 2].", SOURCES)
    assert claim.cited == (1, 2)
    assert claim.support == 1.0


def test_claim_without_terms_is_not_supported():
    claim = check_claim("It is so [1].", SOURCES)
    assert claim.term_count == 0
    assert claim.support == 0.0
    assert not claim.supported


def test_citation_markers_are_not_numbers_of_the_claim():
    cited, text = parse_citations("Mars has two moons [1, 2]; see [12].")
    assert cited == (1, 2, 12)
    assert text == "Mars has two moons; see."
    assert check_claim("Mars has two small moons [2] [1].", SOURCES).unsupported_numbers == ()


def test_markers_after_the_period_belong_to_the_sentence_before():
    answer = "Mars has two small moons. [1] Phobos orbits Mars.[2] Deimos is small [1]."
    assert split_claims(answer) == [
        "Mars has two small moons. [1]",
        "Phobos orbits Mars. [2]",
        "Deimos is small [1].",
    ]
    report = check_answer(answer, SOURCES)
    assert [claim.cited for claim in report.claims] == [(1,), (2,), (1,)]
    assert report.supported


def test_decimal_and_abbreviation_do_not_split_claims():
    assert split_claims("Phobos orbits in 7.65 hours, e.g. fast [1]. It is small [1].") == [
        "Phobos orbits in 7.65 hours, e.g. fast [1].",
        "It is small [1].",
    ]


def test_empty_answer_is_not_supported():
    report = check_answer("", SOURCES)
    assert report.claims == ()
    assert not report.supported
    assert report.supported_share == 0.0


def test_stemming_matches_inflections_when_asked():
    sources = {1: "Phobos orbits Mars."}
    assert not check_claim("Phobos orbited Mars [1].", sources).supported
    assert check_claim("Phobos orbited Mars [1].", sources, SupportRule(stem=True)).supported


@pytest.mark.parametrize("threshold", [-0.1, 1.5])
def test_threshold_outside_unit_interval_is_rejected(threshold):
    with pytest.raises(ValueError, match=str(threshold)):
        check_answer(DRAFT, SOURCES, SupportRule(threshold=threshold))


@pytest.mark.parametrize("label", [0, -1, "1"])
def test_invalid_source_label_is_named(label):
    with pytest.raises(ValueError, match=repr(label)):
        check_answer(DRAFT, {label: "Mars."})


def test_non_text_source_is_named():
    with pytest.raises(ValueError, match=r"\[2\]"):
        check_claim("Mars [1].", {1: "Mars.", 2: None})


def test_non_string_answer_is_rejected():
    with pytest.raises(ValueError, match="answer"):
        check_answer(None, SOURCES)
