"""Answer types: what a question asks for, and whether a sentence holds it."""

from __future__ import annotations

import pytest

from rag.answering.answer_types import (
    AREA,
    COUNT,
    DATE,
    DESCRIPTION,
    LENGTH,
    NAME,
    NOUN_PHRASE,
    PERCENT,
    SPEED,
    TEMPERATURE,
    TIME,
    expected_type,
    has_date,
    has_expected_value,
    names_in,
    quantities,
)


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("Who discovered Uranus?", (NAME,)),
        ("Which child picked the name for the ninth planet?", (NAME,)),
        ("Which astronomer at the Berlin Observatory received the position?", (NAME,)),
        ("When did Juno enter a polar orbit around Jupiter?", (DATE,)),
        ("On what date did Apollo 11 land?", (DATE,)),
        ("In what year was the far side first photographed?", (DATE,)),
        ("How many confirmed moons does Jupiter have?", (COUNT,)),
        ("How long is a year on Venus?", (TIME,)),
        ("How long is the Valles Marineris system of canyons?", (TIME, LENGTH)),
        ("How far above the north pole did Voyager 2 pass?", (LENGTH,)),
        ("How hot does the ground get on Venus?", (TEMPERATURE,)),
        ("How old is Ceres?", (TIME,)),
        ("How fast is the Moon drifting away?", (SPEED, TIME)),
        ("What is the surface temperature of Titan?", (TEMPERATURE,)),
        ("What is the mean radius of Venus?", (LENGTH,)),
        ("What wind speed did Venera 13 measure?", (SPEED,)),
        ("What percentage of the surface did Magellan map?", (PERCENT,)),
        ("What lander reached the surface of Saturn's biggest satellite?", (NOUN_PHRASE,)),
        ("Which has more known moons, Saturn or Jupiter?", (NOUN_PHRASE,)),
        ("Why is Pluto not a planet?", (DESCRIPTION,)),
        ("How did Galle locate Neptune?", (DESCRIPTION,)),
    ],
)
def test_expected_type(question, kinds):
    assert expected_type(question).kinds == kinds


def test_only_descriptions_and_noun_phrases_constrain_nothing():
    assert not expected_type("Why is Pluto not a planet?").constrains
    assert not expected_type("What lander reached Titan?").constrains
    assert expected_type("How big is Ceres?").constrains
    assert AREA in expected_type("How big is Ceres?").kinds


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("By the 1850s dozens were known", []),  # a decade, not 1850 seconds
        ("it lasts 30s", [("30", TIME)]),
        ("every 224.7 Earth days", [("224.7", TIME)]),
        ("about 108 million km from the Sun", [("108", LENGTH)]),
        ("approx. 465 degrees Celsius", [("465", TEMPERATURE)]),
        ("a tilt of 177.4 degrees", [("177.4", "angle")]),
        ("it falls to -224 °C at the tropopause", [("-224", TEMPERATURE)]),
        ("winds of almost 600 m/s", [("600", SPEED)]),
        ("about 95 percent of Earth's", [("95", PERCENT)]),
        ("a mass of 4.87 x 10^24 kg", [("4.87 x 10^24", "mass")]),
        ("the 12 moons and the 3 rings", []),
    ],
)
def test_quantities(text, expected):
    assert quantities(text) == expected


def test_dates_and_names():
    assert has_date("It arrived on 24 Jan. 1986.")
    assert has_date("in the 7th century BC")
    assert not has_date("It is 2,376.6 km across.")
    assert has_date("By the 1850s dozens were known.")
    assert names_in("The musician W. Herschel noticed it.") == ["W. Herschel"]
    assert names_in("Galileo Galilei recorded it.", frozenset({"neptune"})) == ["Galileo Galilei"]
    # Two capitalised words the question already names are not a new name.
    assert names_in("It passed the Great Red Spot.", frozenset({"great", "red", "spot"})) == []


def test_titan_sentence_is_not_a_temperature():
    question = "What is the surface temperature of Titan?"
    answer_type = expected_type(question)
    quoted = "Pioneer 11 measured the temperature of Titan in 1979."
    assert not has_expected_value(quoted, answer_type, question)
    assert has_expected_value("Its surface is about -179 °C.", answer_type, question)


def test_a_name_the_question_gives_is_not_an_answer():
    question = "Who met Galileo Galilei?"
    assert not has_expected_value("Galileo Galilei looked at it.", expected_type(question), question)
    assert has_expected_value("Johannes Kepler met him.", expected_type(question), question)
