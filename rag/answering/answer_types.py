"""What kind of value a question asks for, and whether a sentence holds one.

A sentence can share every word of a question and still not answer it: asked
for the surface temperature of Titan, a sentence saying that a probe measured
the temperature of Titan repeats the question without giving a temperature.
Coverage cannot see that; the question's wording can. "Who" asks for a name,
"when" for a date or a year, "how many" for a count, "how hot" or "what is
the temperature" for a number with a temperature unit, and so on. This module
reads the expected type from the question (:func:`expected_type`) and finds
values of that type in a sentence (:func:`has_expected_value`), so that the
reader can penalise sentences without one and the answer check can say
whether an answer is *responsive*, not only faithful.

The rules are deliberately small and lexical: a unit lexicon per kind of
quantity, patterns for names, dates and counts. They err towards accepting
(any number with a time unit is a duration), because a wrongly refused answer
costs as much as a wrongly accepted one and the type is only one signal.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from rag.text import STOPWORDS, analyze, normalize_text

# Kinds of answer. A quantity kind is satisfied by a number followed by a unit
# of that kind; several kinds may be acceptable ("how long": time or length).
NAME = "name"
DATE = "date"
COUNT = "count"
NUMBER = "number"
NOUN_PHRASE = "noun_phrase"
DESCRIPTION = "description"
TIME = "time"
LENGTH = "length"
TEMPERATURE = "temperature"
MASS = "mass"
SPEED = "speed"
ANGLE = "angle"
PERCENT = "percent"
DENSITY = "density"
ACCELERATION = "acceleration"
AREA = "area"
MONEY = "money"
RATIO = "ratio"

# Unit words (lowercased, as they follow a number) for each quantity kind.
UNITS: dict[str, frozenset[str]] = {
    TIME: frozenset(
        "s sec second seconds min minute minutes h hr hrs hour hours day days week weeks month months "
        "year years yr yrs sol sols century centuries decade decades millennia millennium".split()
    ),
    LENGTH: frozenset(
        "km kilometre kilometres kilometer kilometers m metre metres meter meters cm centimetre centimetres "
        "mm millimetre millimetres mile miles au ly light-year light-years radii radius diameters".split()
    ),
    TEMPERATURE: frozenset("°c °f °k c k kelvin kelvins celsius fahrenheit".split()),
    MASS: frozenset("kg kilogram kilograms g gram grams tonne tonnes ton tons masses".split()),
    SPEED: frozenset("km/s km/h m/s mph kph km/hr".split()),
    ANGLE: frozenset("° degree degrees deg arcsec arcseconds".split()),
    PERCENT: frozenset("% percent per-cent".split()),
    DENSITY: frozenset("g/cm3 g/cm³ kg/m3 kg/m³".split()),
    ACCELERATION: frozenset("m/s2 m/s² g".split()),
    AREA: frozenset("km2 km² m2 m² square".split()),
    MONEY: frozenset("$ € £ dollars euros pounds usd eur".split()),
    RATIO: frozenset("times".split()),
}


def _by_word(rows: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """Word -> acceptable kinds, from rows of space-separated words that ask for the same kinds.

    A row names its kinds once for all its words, so words that ask for the
    same thing stand together; the dict keeps the words in row order.
    """
    return {word: kinds for words, kinds in rows.items() for word in words.split()}


# What "how <word>" asks for.
HOW_KINDS: dict[str, tuple[str, ...]] = _by_word(
    {
        "many": (COUNT,),
        "much": (NUMBER,),
        "long": (TIME, LENGTH),
        "far high tall deep wide thick": (LENGTH,),
        "big large small": (LENGTH, AREA, MASS, PERCENT, RATIO),
        "heavy massive": (MASS, RATIO),
        "old": (TIME,),
        "hot cold warm": (TEMPERATURE,),
        "fast quickly slowly": (SPEED, TIME),
        "strong bright": (NUMBER,),
        "dense": (DENSITY, NUMBER),
        "often": (TIME, COUNT),
    }
)

# Words that make "how long" a question about time ("how long is a year",
# "how long does it take"), not about length.
DURATION_NOUNS = frozenset(
    "year years day days sol sols orbit orbits rotation rotate rotates take takes last lasts trip journey "
    "mission period revolution spin".split()
)

# Nouns that name a measured quantity: "what is the mean radius of ...".
MEASURE_KINDS: dict[str, tuple[str, ...]] = _by_word(
    {
        "temperature temperatures": (TEMPERATURE,),
        "distance radius diameter height altitude depth width thickness circumference": (LENGTH,),
        "length": (LENGTH, TIME),
        "size": (LENGTH, AREA),
        "area": (AREA,),
        "mass weight": (MASS,),
        "speed velocity": (SPEED,),
        "period duration age lifetime": (TIME,),
        "tilt inclination obliquity angle": (ANGLE,),
        "percentage percent share": (PERCENT,),
        "fraction proportion": (PERCENT, NUMBER),
        "density": (DENSITY, NUMBER),
        "acceleration": (ACCELERATION,),
        "gravity": (ACCELERATION, NUMBER),
        "cost price budget": (MONEY,),
        "number": (COUNT,),
        "magnitude eccentricity albedo pressure": (NUMBER,),
        "year date day": (DATE,),
    }
)

# Question words after "which"/"what" that ask for a person.
PERSON_NOUNS = frozenset(
    """
    astronomer astronomers scientist scientists person people child girl boy man woman director
    mathematician physicist observer discoverer engineer explorer student schoolgirl schoolboy
    """.split()
)

MONTHS = frozenset(
    """
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec
    """.split()
)

NUMBER_WORDS = frozenset(
    """
    one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen
    seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand
    million billion dozen dozens hundreds thousands millions billions single pair twice thrice
    """.split()
)
SCALE_WORDS = frozenset("thousand million billion trillion".split())
_AUXILIARIES = frozenset("is was are were does did do has have had will would can could".split())
_WH_WORDS = frozenset("who whom whose when where which what why how".split())

# A number as written in prose: "1,550", "224.7", "-4.9", "4.87 x 10^24".
_NUMBER = re.compile(r"(?<![\w.])[-−]?\d+(?:[.,]\d+)*(?:\s*[x×]\s*10\^?[-−]?\d+)?")
# A word as unit candidate: letters with optional "/", digits, superscripts, degree sign.
_UNIT_TOKEN = re.compile(r"°[CFKcfk]?|[%$€£]|[^\W\d_][\w/²³°-]*|\d+(?=\s)")
_YEAR = re.compile(r"(?<![\w.,])(1[0-9]\d\d|20\d\d)(?![\w,]|\.\d)")
# A decade ("the 1850s"): a date, not 1850 seconds.
_DECADE = re.compile(r"(?<![\w.,])1[0-9]\d0s\b|(?<![\w.,])20\d0s\b")
_CENTURY = re.compile(r"\b(?:\d+(?:st|nd|rd|th)|[a-z]+th)\s+century\b", re.IGNORECASE)
# A personal name: an initial and a surname ("W. Herschel", "J. G. Galle"), or two capitalised words.
_INITIAL_NAME = re.compile(r"\b(?:[A-Z]\.\s*){1,3}[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)*")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)*\b")


@dataclass(frozen=True)
class AnswerType:
    """What a question asks for: one or more acceptable ``kinds`` and the words that said so."""

    kinds: tuple[str, ...]
    cue: str

    @property
    def is_quantity(self) -> bool:
        return any(kind in UNITS for kind in self.kinds)

    @property
    def constrains(self) -> bool:
        """Whether the type can rule a sentence out (a description or noun phrase hardly can)."""
        return not set(self.kinds) <= {NOUN_PHRASE, DESCRIPTION}


def _words(question: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:[-'][a-z0-9]+)*", normalize_text(question).lower())


def expected_type(question: str) -> AnswerType:
    """The kind of value the question asks for, read from its wording.

    Checked in order: "how <adjective>", "when" and "what year/date",
    "who" and "which astronomer", a measured quantity named near the start
    ("what is the mean radius ...", "what temperature ..."), then "which"
    or "what" (a noun phrase). Anything else ("why", "how did ...") asks for
    a description and constrains nothing.
    """
    words = _words(question)
    for index, word in enumerate(words[:-1]):
        if word == "how":
            following = words[index + 1]
            if following == "long" and DURATION_NOUNS.intersection(words):
                return AnswerType((TIME,), "how long ... " + sorted(DURATION_NOUNS.intersection(words))[0])
            if following in HOW_KINDS:
                return AnswerType(HOW_KINDS[following], f"how {following}")
    if "when" in words[:3] or "when" == (words[0] if words else ""):
        return AnswerType((DATE,), "when")
    wh_positions = [index for index, word in enumerate(words) if word in _WH_WORDS]
    if not wh_positions:
        return AnswerType((DESCRIPTION,), "")
    start = wh_positions[0]
    wh = words[start]
    if wh in {"who", "whom", "whose"}:
        return AnswerType((NAME,), wh)
    if wh in {"which", "what"}:
        # The head of the question: up to five words after the wh-word, past
        # auxiliaries, articles and adjectives, until "of" or a verb-like stop.
        window = []
        for word in words[start + 1 : start + 7]:
            if word in {"of", "in", "on", "at", "did", "does", "do", "was", "were"} and window:
                break
            if word in _AUXILIARIES or word in {"the", "a", "an"}:
                continue
            window.append(word)
        for word in window:
            if word in PERSON_NOUNS:
                return AnswerType((NAME,), f"{wh} {word}")
            if word in MEASURE_KINDS:
                return AnswerType(MEASURE_KINDS[word], f"{wh} ... {word}")
        return AnswerType((NOUN_PHRASE,), wh)
    if wh == "where":
        return AnswerType((NOUN_PHRASE,), wh)
    return AnswerType((DESCRIPTION,), wh)


def _units_after(text: str, end: int) -> list[str]:
    """Up to four lowercase tokens after a number: the unit may follow "million" or "Earth"."""
    return [token.lower() for token in _UNIT_TOKEN.findall(text[end : end + 40])][:4]


def quantities(text: str) -> list[tuple[str, str]]:
    """(number, kind) pairs of the numbers in ``text`` followed by a known unit.

    A unit may come after a scale word and one qualifier ("108 million km",
    "224.7 Earth days", "5.24 g/cm3"); a number before "percent" or "%" is
    a percentage. Numbers without a unit are not listed here.
    """
    normalized = text.replace("−", "-")
    found: list[tuple[str, str]] = []
    for match in _NUMBER.finditer(normalized):
        if _DECADE.match(normalized, match.start()):
            continue
        following = _units_after(normalized, match.end())
        skipped = 0
        for position, token in enumerate(following):
            kinds = [kind for kind, units in UNITS.items() if token in units]
            after = following[position + 1] if position + 1 < len(following) else ""
            if token in {"degree", "degrees", "°"} and after in UNITS[TEMPERATURE]:
                kinds = [TEMPERATURE]  # "465 degrees Celsius"
            if kinds:
                found.extend((match.group(), kind) for kind in kinds)
                break
            if token in SCALE_WORDS or (skipped < 1 and token not in STOPWORDS and token.isalpha()):
                skipped += token not in SCALE_WORDS
                continue
            break
    return found


def has_number(text: str) -> bool:
    """Any number written in digits, or a count word ("two moons")."""
    if _NUMBER.search(text):
        return True
    return any(word in NUMBER_WORDS for word in _words(text))


def has_date(text: str) -> bool:
    """A year (1000-2099), a decade ("the 1850s"), a month name, or a century."""
    if _YEAR.search(text) or _DECADE.search(text) or _CENTURY.search(text):
        return True
    return any(word.lower() in MONTHS for word in re.findall(r"\b[A-Z][a-z]+\b", text))


def names_in(text: str, excluded: frozenset[str] = frozenset()) -> list[str]:
    """Personal names: initials and a surname ("J. G. Galle"), or two capitalised words in a
    row ("Galileo Galilei") of which neither is in ``excluded`` (lowercased words of the
    question and the source label), a month or a stopword.

    A lone capitalised word is not taken for a name: in prose about places and
    bodies ("the Sun", "Saturn") it is far more often something else.
    """
    names = [match.group() for match in _INITIAL_NAME.finditer(text)]
    words = list(_CAPITALISED.finditer(text))
    for first, second in zip(words, words[1:], strict=False):
        between = text[first.end() : second.start()]
        if between.strip():
            continue
        pair = (first.group().lower(), second.group().lower())
        if any(word in excluded or word in MONTHS or word in STOPWORDS for word in pair):
            continue
        names.append(f"{first.group()} {second.group()}")
    return names


@functools.lru_cache(maxsize=1 << 16)
def has_expected_value(sentence: str, answer_type: AnswerType, question: str = "", label: str = "") -> bool:
    """Whether ``sentence`` holds a value of the type the question asks for.

    Cached: the reader asks it of the same pooled sentences for every
    setting it measures, and it was a quarter of an answer's time.

    ``question`` and ``label`` (the source's title and section) hold words that
    do not count as the answer: a name or noun the question already gives is
    not a new value. A description is satisfied by any sentence that adds a
    content word to the question's.
    """
    for value_type in answer_type.kinds:
        if value_type in UNITS:
            if any(found == value_type for _, found in quantities(sentence)):
                return True
        elif value_type == NAME:
            if names_in(sentence, _word_set(question) | _word_set(label)):
                return True
        elif value_type == DATE:
            if has_date(sentence):
                return True
        elif value_type in {COUNT, NUMBER}:
            if has_number(sentence):
                return True
        else:  # a noun phrase or a description: something the question does not already say
            if set(analyze(sentence)) - _term_set(question) - _term_set(label):
                return True
    return False


# A question and a source label are asked about with every sentence of a prompt:
# their words and terms are read once.
@functools.lru_cache(maxsize=1 << 12)
def _word_set(text: str) -> frozenset[str]:
    return frozenset(_words(text))


@functools.lru_cache(maxsize=1 << 12)
def _term_set(text: str) -> frozenset[str]:
    return frozenset(analyze(text))
