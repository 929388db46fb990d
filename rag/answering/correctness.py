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


def normalize_answer(text: str) -> str:
    """The text as the judge compares it: tokens without articles and hedges, one space apart."""
    return " ".join(token for token in _tokens(text) if token not in _ARTICLES and token not in _HEDGES)


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


def content_in_text(text: str, reference: str) -> bool:
    """Whether ``text`` states the reference: its normalised form, or all its numbers and names.

    A reference without numbers or names needs its normalised form; an empty
    reference is never found (there is nothing to find).
    """
    wanted = normalize_answer(reference)
    if not wanted:
        return False
    said = normalize_answer(text)
    if f" {wanted} " in f" {said} ":
        return True
    required = reference_numbers(reference) | reference_names(reference)
    others = set(wanted.split()) - required - _FUNCTION_WORDS
    if not required or len(others) > MAX_OTHER_WORDS:
        return False
    return required <= set(_tokens(text))


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
    return Judged(CORRECT if content_in_text(answer, reference) else WRONG)
