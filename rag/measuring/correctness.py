"""Is a free-text answer correct? A judge against the labels' reference answers.

The extractive generator and the reader quote sentences, so their answers are
judged by whether the quote holds labelled evidence
(:func:`rag.answering.answers.quoted_piece`). A language model writes its own
words, so it is judged against the question's reference ``answer`` instead,
mechanically and without a second model:

- the answer *matches* the reference when, after normalisation (case,
  punctuation, articles, hedges such as "about", number formats such as
  "1,000" and "1000" or "five" and "5", the unicode minus, "°C" and "degrees
  Celsius", month abbreviations), the normalised reference occurs in it; or
- the answer holds every number and every name (capitalised word) of a
  reference that is a value or a name (at most ``MAX_OTHER_WORDS`` other
  content words), as whole tokens. This is what lets "approximately 224.7 days"
  or "14 December 1962" count, and what refuses "Hellas Planitia ... 2,300
  km" for the diameter of Mars and "Galileo Galilei" for the discoverer of
  Neptune: the wrong number and the wrong name are simply not the reference's.

Four refinements, each where the two rules above erred on read answers:

- *units*: a reference quantity ("500 m/s", "38 mm", "176 Earth days") is
  matched by the same quantity in any unit of its dimension ("3.8 cm",
  "4,224 hours"), and refused when the answer gives the reference's dimension
  only with another value ("500 km/h"); see :data:`UNITS`;
- *comparisons and negation*: a name counts only where the answer asserts it,
  not on the other side of a comparison ("... more steeply than Pluto's") or
  right after a negation ("not Pluto");
- *synonyms and negated amounts*: "natural satellites" are "moons", and "no",
  "zero", "0" and "does not have any" say the same amount (:data:`SYNONYMS`);
- *self-contradiction*: an answer that gives two disagreeing values of the
  reference's dimension ("1.52 Earth days, ... or about 30 minutes") is wrong
  even when one of them is the reference's, unless it compares them.

A reference with neither numbers nor names (e.g. "carbon dioxide") can only be
matched by the first rule, so a paraphrase of a long explanatory reference
counts as wrong: the judge is strict where it cannot be sure. The same test,
applied to the sources of a prompt instead of an answer, says whether the
reference's content reached the prompt at all (:func:`content_in_text`), which
is how an answer given from memory is told from one read from the sources.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

# Outcomes of one answer, in the order the tables count them.
CORRECT = "correct"  # answerable, answered, matches the reference
WRONG = "wrong"  # answerable, answered, does not match
ABSTAINED = "abstained"  # answerable, no answer given
REFUSED = "refused"  # unanswerable, no answer given (the right outcome)
ANSWERED_UNANSWERABLE = "answered_unanswerable"  # unanswerable, answered anyway
NOT_JUDGED = "not_judged"  # answerable and answered, but the labels give no reference answer
OUTCOMES: tuple[str, ...] = (CORRECT, WRONG, ABSTAINED, REFUSED, ANSWERED_UNANSWERABLE, NOT_JUDGED)

_ARTICLES = frozenset({"a", "an", "the"})
# Words that hedge a value without changing it; dropped from both sides.
_HEDGES = frozenset(
    {"about", "approx", "approximately", "roughly", "nearly", "around", "some", "ca", "almost"}
)
# Capitalised words that are not names: sentence openers and function words.
_NOT_NAMES = frozenset(
    {"the", "a", "an", "it", "its", "in", "on", "at", "of", "and", "or", "by", "to", "about", "approx"}
)
# A capitalised word right before one of these is part of a unit ("Earth days"), not a name.
_UNIT_WORDS = frozenset(
    {"day", "days", "year", "years", "hour", "hours", "mass", "masses", "radii", "radius"}
)
_MONTHS = {
    "jan": "january",
    "feb": "february",
    "mar": "march",
    "apr": "april",
    "jun": "june",
    "jul": "july",
    "aug": "august",
    "sep": "september",
    "sept": "september",
    "oct": "october",
    "nov": "november",
    "dec": "december",
}
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
# Characters written for a minus sign, and for the spaces inside "1 000".
_MINUS = {"\u2212": "-", "\u2013": "-", "\u2012": "-", "\ufe63": "-", "\uff0d": "-"}
_THIN_SPACES = {"\u2009", "\u202f", "\u00a0"}
# A number: an optional sign (only where it cannot be a hyphen), digits with
# thousands separators, an optional decimal part.
_NUMBER = re.compile(r"(?<![\w.])(-)?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\d])")
_TOKEN = re.compile(r"[a-z]+|-?\d+(?:\.\d+)?")
# Function words that say nothing about a value; a reference may hold a few of them.
_FUNCTION_WORDS = _ARTICLES | frozenset(
    {
        "that",
        "this",
        "at",
        "on",
        "in",
        "of",
        "by",
        "to",
        "for",
        "from",
        "with",
        "and",
        "or",
        "as",
        "its",
        "it",
    }
)
# The numbers-and-names rule judges values and names ("116.75 Earth days", "G. P. Kuiper"):
# a reference with more other content words than this is an explanation, whose one
# incidental name ("... pointed at Earth") must not make any answer naming it correct.
MAX_OTHER_WORDS = 3


def _canonical_number(sign: str | None, whole: str, fraction: str | None) -> str:
    """'1,000' -> '1000', '2.50' -> '2.5', '-0' -> '0': one spelling per value."""
    text = (sign or "") + whole.replace(",", "") + (fraction or "")
    try:
        value = Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern only matches numbers
        return text
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


# Phrases said two ways, written one way before comparing (lower case, whole words).
SYNONYMS: tuple[tuple[str, str], ...] = (
    (r"natural satellites", "moons"),
    (r"natural satellite", "moon"),
    (r"(?:does|do|did) not have any", "has no"),
    (r"(?:does|do|did) not have", "has no"),
    (r"doesn't have any|don't have any|has not any|have not any", "has no"),
    (r"\bzero\b", "no"),
    (r"(?<![\d.,])0 (?=[a-z])", "no "),
    (r"\bnone\b", "no"),
)
# Words after which a name is not asserted: the other side of a comparison, or negated.
_NOT_ASSERTED_AFTER = frozenset({"than", "unlike", "not", "never", "neither", "nor", "without"})
_NOT_ASSERTED_PHRASES = (("compared", "to"), ("compared", "with"), ("instead", "of"), ("rather", "than"))
# How many words after such a word are the other side ("than Pluto's orbit" -> two).
_OTHER_SIDE_WORDS = 3
# Words that show an answer compares values rather than contradicting itself.
_CONTRAST_WORDS = frozenset(
    {
        "than",
        "while",
        "whereas",
        "but",
        "compared",
        "unlike",
        "longer",
        "shorter",
        "larger",
        "smaller",
        "more",
        "less",
        "fewer",
        "greater",
        "higher",
        "lower",
        "versus",
        "vs",
        "between",
        "from",
        "to",
        "and",
        "both",
        "each",
        "respectively",
        "range",
        "ranges",
        "varies",
        "vary",
    }
)


def _unify(text: str) -> str:
    """Unicode forms, minus signs, spaced thousands, degree signs and percent written one way."""
    for space in _THIN_SPACES:  # before NFKC, which turns them into plain spaces
        text = re.sub(rf"(\d){space}(\d{{3}})", r"\1,\2", text)
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
    text = re.sub(r"'s\b", "", text)
    text = re.sub(r"\[\d+(?:\s*[,;]\s*\d+)*\]", " ", text)  # citation markers are not numbers of the answer
    for character, replacement in _MINUS.items():
        text = text.replace(character, replacement)
    text = re.sub(r"\s*°\s*C\b", " degrees Celsius", text)
    text = re.sub(r"\s*°\s*F\b", " degrees Fahrenheit", text)
    text = re.sub(r"\s*°", " degrees", text)
    text = re.sub(r"\bdegrees C\b", "degrees Celsius", text)
    return text.replace("%", " percent")


def _tokens(text: str) -> list[str]:
    """Lower-case word and canonical number tokens, months spelled out, number words as digits."""
    text = _unify(text)
    text = _NUMBER.sub(lambda match: " " + _canonical_number(*match.groups()) + " ", text)
    tokens = []
    for token in _TOKEN.findall(text.lower()):
        token = _MONTHS.get(token, token)
        tokens.append(_NUMBER_WORDS.get(token, token))
    return tokens


def _synonyms(text: str) -> str:
    lowered = text.lower()
    for pattern, replacement in SYNONYMS:
        lowered = re.sub(rf"\b(?:{pattern})", replacement, lowered)
    return lowered


def normalize_answer(text: str) -> str:
    """The text as the judge compares it: tokens without articles and hedges, one space apart."""
    tokens = _tokens(_synonyms(_unify(text)))
    return " ".join(token for token in tokens if token not in _ARTICLES and token not in _HEDGES)


def asserted_tokens(text: str) -> list[str]:
    """The answer's tokens less those it does not assert: the other side of a comparison, or negated.

    "Mercury's orbit is tilted more steeply than Pluto's" asserts Mercury, not
    Pluto; "not Pluto but Eris" asserts Eris. Up to :data:`_OTHER_SIDE_WORDS`
    words after "than", "unlike", "not", "compared to/with", ... are left out,
    up to the next punctuation mark.
    """
    kept: list[str] = []
    for clause in re.split(r"[.,;:!?()]", _synonyms(_unify(text))):
        tokens = _tokens(clause)
        skip = 0
        for position, token in enumerate(tokens):
            pair = (tokens[position - 1], token) if position else ("", token)
            if skip:
                skip -= 1
                continue
            if token in _NOT_ASSERTED_AFTER or pair in _NOT_ASSERTED_PHRASES:
                skip = _OTHER_SIDE_WORDS
            kept.append(token)
    return kept


# --------------------------------------------------------------------------
# Quantities: a number and its unit, converted to the dimension's base unit
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """A unit: its dimension, and base = value * scale + offset."""

    dimension: str
    scale: float
    offset: float = 0.0


_DAY = 86_400.0
_YEAR = 365.25 * _DAY
# Unit spellings after _unify, lower case; "earth" before a time unit is dropped first.
UNITS: dict[str, Unit] = {
    **dict.fromkeys(["mm", "millimetre", "millimetres", "millimeter", "millimeters"], Unit("length", 1e-3)),
    **dict.fromkeys(["cm", "centimetre", "centimetres", "centimeter", "centimeters"], Unit("length", 1e-2)),
    **dict.fromkeys(["m", "metre", "metres", "meter", "meters"], Unit("length", 1.0)),
    **dict.fromkeys(["km", "kilometre", "kilometres", "kilometer", "kilometers"], Unit("length", 1e3)),
    **dict.fromkeys(["mile", "miles"], Unit("length", 1609.344)),
    **dict.fromkeys(["au"], Unit("length", 1.495978707e11)),
    **dict.fromkeys(["m/s", "metres per second", "meters per second"], Unit("speed", 1.0)),
    **dict.fromkeys(["km/s", "kilometres per second", "kilometers per second"], Unit("speed", 1e3)),
    **dict.fromkeys(
        ["km/h", "kph", "kilometres per hour", "kilometers per hour", "km per hour"],
        Unit("speed", 1e3 / 3600),
    ),
    **dict.fromkeys(["mph", "miles per hour"], Unit("speed", 1609.344 / 3600)),
    **dict.fromkeys(
        ["cm per year", "cm each year", "cm a year", "centimetres per year", "centimeters per year"],
        Unit("speed", 1e-2 / _YEAR),
    ),
    **dict.fromkeys(["mm per year", "mm each year", "mm a year"], Unit("speed", 1e-3 / _YEAR)),
    **dict.fromkeys(["s", "sec", "second", "seconds"], Unit("time", 1.0)),
    **dict.fromkeys(["min", "minute", "minutes"], Unit("time", 60.0)),
    **dict.fromkeys(["h", "hr", "hrs", "hour", "hours"], Unit("time", 3600.0)),
    **dict.fromkeys(["day", "days"], Unit("time", _DAY)),
    **dict.fromkeys(["week", "weeks"], Unit("time", 7 * _DAY)),
    **dict.fromkeys(["year", "years"], Unit("time", _YEAR)),
    **dict.fromkeys(["g", "gram", "grams"], Unit("mass", 1e-3)),
    **dict.fromkeys(["kg", "kilogram", "kilograms"], Unit("mass", 1.0)),
    **dict.fromkeys(["tonne", "tonnes"], Unit("mass", 1e3)),
    **dict.fromkeys(["k", "kelvin", "kelvins"], Unit("temperature", 1.0)),
    "degrees celsius": Unit("temperature", 1.0, 273.15),
    "degrees fahrenheit": Unit("temperature", 5 / 9, 273.15 - 32 * 5 / 9),
    **dict.fromkeys(["percent", "per cent"], Unit("ratio", 0.01)),
    **dict.fromkeys(["times"], Unit("ratio", 1.0)),
}
_MULTIPLIERS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_UNIT_PATTERN = "|".join(sorted((re.escape(unit) for unit in UNITS), key=len, reverse=True))
_QUANTITY = re.compile(
    rf"(?<![\w.])(-?\d+(?:\.\d+)?)\s*(?:({'|'.join(_MULTIPLIERS)})\s+)?(?:earth\s+)?({_UNIT_PATTERN})(?![\w/])"
)
_UNIT_TOKENS = frozenset(word for unit in UNITS for word in re.findall(r"[a-z]+", unit))
# Two quantities in different units agree when their base values differ by at most
# this share (a converted value is rounded); in the same unit they must be equal.
QUANTITY_TOLERANCE = 0.005


@dataclass(frozen=True)
class Quantity:
    """A number with its unit, in its dimension's base unit (metres, seconds, kelvin, ...)."""

    dimension: str
    base: float
    unit: Unit | None = None


def quantities(text: str) -> list[Quantity]:
    """Every number of ``text`` followed by a known unit (:data:`UNITS`), converted."""
    unified = _NUMBER.sub(lambda match: _canonical_number(*match.groups()), _unify(text)).lower()
    found = []
    for match in _QUANTITY.finditer(unified):
        value = float(match.group(1)) * _MULTIPLIERS.get(match.group(2) or "", 1.0)
        unit = UNITS[match.group(3)]
        found.append(Quantity(unit.dimension, value * unit.scale + unit.offset, unit))
    return found


def _agree(first: Quantity, second: Quantity) -> bool:
    if first.dimension != second.dimension:
        return False
    tolerance = 1e-9 if first.unit == second.unit else QUANTITY_TOLERANCE
    return abs(first.base - second.base) <= tolerance * max(abs(first.base), abs(second.base))


# A second value of the reference's dimension contradicts it when it differs by more
# than this share: "about 940 km" beside "939.4 km" rounds, "30 minutes" beside
# "1.52 days" contradicts.
CONTRADICTION_SHARE = 0.1


def _contradicts(first: Quantity, second: Quantity) -> bool:
    return abs(first.base - second.base) > CONTRADICTION_SHARE * max(abs(first.base), abs(second.base))


def _quantity_verdict(text: str, reference: str, contradictions: bool) -> bool | None:
    """True when every reference quantity is in the answer in some unit; False when the answer
    gives a reference dimension only with other values, or contradicts itself; None otherwise.
    """
    wanted = quantities(reference)
    if not wanted:
        return None
    given = quantities(text)
    words = set(_tokens(text))
    verdicts = []
    for quantity in wanted:
        same = [other for other in given if other.dimension == quantity.dimension]
        if not same:
            verdicts.append(None)
            continue
        matched = any(_agree(quantity, other) for other in same)
        disagreeing = [other for other in same if _contradicts(quantity, other)]
        # Self-contradiction: the reference's value and another of its dimension, not compared.
        if contradictions and matched and disagreeing and len(wanted) == 1 and not words & _CONTRAST_WORDS:
            return False
        verdicts.append(matched)
    if any(verdict is False for verdict in verdicts):
        return False
    if all(verdict is True for verdict in verdicts):
        return True
    return None


def reference_numbers(reference: str) -> frozenset[str]:
    """The reference's numbers, canonically spelled (see :func:`normalize_answer`)."""
    return frozenset(token for token in _tokens(reference) if token[0].isdigit() or token[0] == "-")


def reference_names(reference: str) -> frozenset[str]:
    """The reference's names: capitalised words (lower-cased), less initials, openers and units.

    "G. P. Kuiper" gives {"kuiper"} (initials are too short to insist on),
    "116.75 Earth days" gives nothing ("Earth" qualifies the unit), and
    "Dec. 14, 1962" gives {"december"}.
    """
    words = re.findall(r"[^\W\d_][\w'-]*", _unify(reference))
    names = set()
    for position, word in enumerate(words):
        following = words[position + 1] if position + 1 < len(words) else ""
        if not word[0].isupper() or len(word) < 2 or word.lower() in _NOT_NAMES:
            continue
        if following.lower() in _UNIT_WORDS and following[0].islower():
            continue
        for token in _tokens(word):
            names.add(token)
    return frozenset(names)


def content_in_text(text: str, reference: str, contradictions: bool = False) -> bool:
    """Whether ``text`` states the reference: its normalised form, or all its numbers and names.

    A reference without numbers or names needs its normalised form; an empty
    reference is never found (there is nothing to find). Quantities are
    compared in any unit of their dimension, and a name only where the text
    asserts it (:func:`asserted_tokens`); see the module's four refinements.
    ``contradictions`` refuses a text that also gives another value of the
    reference's dimension (an answer's self-contradiction); sources, which
    hold many values, are read without it.
    """
    wanted = normalize_answer(reference)
    if not wanted:
        return False
    by_quantity = _quantity_verdict(text, reference, contradictions)
    if by_quantity is False:
        return False
    numbers = reference_numbers(reference)
    # A name counts only where the text asserts it; values and statements are compared as given.
    names_only = (
        not numbers and reference_names(reference) and not _NOT_ASSERTED_AFTER & set(_tokens(reference))
    )
    said_tokens = asserted_tokens(text) if names_only else _tokens(_synonyms(_unify(text)))
    said = " ".join(token for token in said_tokens if token not in _ARTICLES and token not in _HEDGES)
    if f" {wanted} " in f" {said} ":
        return True
    required = numbers | reference_names(reference)
    others = set(wanted.split()) - required - _FUNCTION_WORDS
    if not required or len(others) > MAX_OTHER_WORDS:
        return False
    if by_quantity is True:
        # Every reference quantity is there in some unit: its numbers and units need not be spelled alike.
        required = required - numbers - _UNIT_TOKENS
    return required <= set(said_tokens)


@dataclass(frozen=True)
class Judged:
    """One answer's outcome (one of :data:`OUTCOMES`) and whether it is correct."""

    outcome: str

    @property
    def correct(self) -> bool:
        return self.outcome == CORRECT


def judge_answer(answer: str, reference: str | None, answerable: bool, abstained: bool) -> Judged:
    """The outcome of one answer: correct, wrong or abstained; refused or answered if unanswerable.

    An answered question whose labels give no reference answer (the bundled
    comparisons and explanations) is ``not_judged``: the labels, not the
    judge, must say what is right, and the tables count such answers apart.
    """
    if not answerable:
        return Judged(REFUSED if abstained else ANSWERED_UNANSWERABLE)
    if abstained:
        return Judged(ABSTAINED)
    if reference is None or not reference.strip():
        return Judged(NOT_JUDGED)
    return Judged(CORRECT if content_in_text(answer, reference, contradictions=True) else WRONG)
