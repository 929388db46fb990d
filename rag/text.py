"""The analyzer and the sentence splitter shared by every stage.

Retrieval, labels, verification and generation must agree on what a term is,
otherwise a claim's support or a question's coverage would be measured with a
different ruler than the ranking. Everything that turns text into terms goes
through :func:`analyze`.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

# A documented English stopword list: function words only. Number words
# ("two", "four") and verbs such as "including" or "comes" stay, because
# questions about counts and the worked example need them.
STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during
    each few for from further had has have having he her here hers herself him
    himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same
    she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when
    where which while who whom why will with would you your yours yourself
    yourselves s t d ll m o re ve y
    """.split()
)

_NUMBER = r"\d+(?:[.,]\d+)*"
_WORD = r"[^\W\d_]+"
_TOKEN = re.compile(rf"{_NUMBER}|{_WORD}")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_WORD_OR_PUNCTUATION = re.compile(r"\w+|[^\w\s]")


_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def _without_combining(match: re.Match) -> str:
    return "".join(ch for ch in match.group() if not unicodedata.combining(ch))


def normalize_text(text: str) -> str:
    """Lowercase and strip accents, so "Saturn" and "Sáturn" are one term.

    ASCII text has nothing to decompose or strip, and in other text only the
    non-ASCII runs are looked at character by character: analysis runs over
    every chunk in every ranking job, so it should cost little more than the
    lowercasing.
    """
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    return _NON_ASCII.sub(_without_combining, unicodedata.normalize("NFKD", lowered))


def _split_number(token: str) -> list[str]:
    # "81,296" is one number; "3,4" in a list is two.
    if "," not in token:
        return [token]
    if _THOUSANDS.fullmatch(token):
        return [token.replace(",", "")]
    return [part for part in token.split(",") if part]


def tokenize(text: str) -> list[str]:
    """Words and numbers of the normalized text, decimals kept whole (224.7)."""
    tokens: list[str] = []
    for match in _TOKEN.finditer(normalize_text(text)):
        token = match.group()
        if token[0].isdigit():
            tokens.extend(_split_number(token))
        else:
            tokens.append(token)
    return tokens


@lru_cache(maxsize=4)
def _stemmer(language: str):  # pragma: no cover - trivial factory
    import Stemmer  # PyStemmer: Snowball stemmers compiled in C

    return Stemmer.Stemmer(language)


def analyze(text: str, stem: bool = False) -> list[str]:
    """Terms of a text: tokens without stopwords, optionally Snowball-stemmed.

    Repeats are kept: term frequencies and claim support count them.
    """
    terms = [token for token in tokenize(text) if token not in STOPWORDS]
    if stem:
        stemmer = _stemmer("english")
        terms = [term if term[0].isdigit() else stemmer.stemWord(term) for term in terms]
    return terms


def analyze_entry(texts: Sequence[str], entry: Mapping) -> list[list[str]]:
    """The terms of each text as a retriever entry analyzes them (its ``stem`` setting)."""
    stem = bool(entry.get("stem", False))
    return [analyze(text, stem=stem) for text in texts]


def numbers_in(text: str) -> list[str]:
    """The numeric terms of a text, in the analyzer's normal form."""
    return [token for token in tokenize(text) if token[0].isdigit()]


def word_and_punctuation_tokens(text: str) -> list[str]:
    """The simple prompt-budget tokenizer: every word and every punctuation mark."""
    return _WORD_OR_PUNCTUATION.findall(text)


def count_words(text: str) -> int:
    """Whitespace-separated words, the unit of chunk sizes and prompt words."""
    return len(text.split())


def analyzer_digest(stem: bool = False) -> str:
    """A fingerprint of the analyzer's behaviour, recorded as provenance."""
    payload = "\n".join(sorted(STOPWORDS)) + f"\nstem={stem}\n{_TOKEN.pattern}"
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def stopwords_digest() -> str:
    """A fingerprint of the stopword list alone.

    :func:`analyzer_digest` already changes with the list; recording this one
    beside it tells a reader which part of the analyzer changed between runs.
    """
    return hashlib.sha256("\n".join(sorted(STOPWORDS)).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------
# Sentences
# --------------------------------------------------------------------------

# Abbreviations after which a period does not end a sentence. Lowercased,
# without the final period.
ABBREVIATIONS: frozenset[str] = frozenset(
    """
    e.g i.e etc approx ca cf dr mr mrs ms prof st mt ft vs jan feb mar apr jun jul
    aug sep sept oct nov dec fig figs eq no nos vol vols ed eds al u.s u.k e.v
    inc ltd co corp jr sr gen lt col capt sgt rev est min max dept univ ave
    """.split()
)

# A candidate boundary: terminal punctuation, optional closing quotes or
# brackets, whitespace, then something that can start a sentence.
_BOUNDARY = re.compile(r"[.!?][\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")


def _word_before(text: str, end: int) -> str:
    start = end
    while start > 0 and not text[start - 1].isspace() and text[start - 1] not in "([\"'“":
        start -= 1
    return text[start:end]


def _is_abbreviation(text: str, period: int) -> bool:
    word = _word_before(text, period)
    if not word:
        return False
    if len(word) == 1 and word.isupper():
        return True  # an initial: "A. Hall", "J. G. Galle"
    lowered = word.lower()
    if lowered == "no":
        # "No. 2" abbreviates number; "... was no. The" would be rare.
        return text[period + 1 : period + 3].strip()[:1].isdigit()
    return lowered in ABBREVIATIONS or bool(re.fullmatch(r"(?:[a-z]\.)+[a-z]", lowered))


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character ranges of the sentences of ``text``.

    Ranges are returned rather than strings so that chunkers keep exact offsets
    into the document. Leading and trailing whitespace is excluded from each
    range. A period after an abbreviation or an initial, or inside a decimal
    number, does not end a sentence.
    """
    ranges: list[tuple[int, int]] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if text[match.start()] == "." and _is_abbreviation(text, match.start()):
            continue
        end = match.end()
        _append_trimmed(ranges, text, start, end)
        start = end
    _append_trimmed(ranges, text, start, len(text))
    return ranges


def _append_trimmed(ranges: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        ranges.append((start, end))


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character ranges of the whitespace-separated words of ``text``."""
    return [(match.start(), match.end()) for match in re.finditer(r"\S+", text)]


def contains_phrase(haystack: Iterable[str], needle: Iterable[str]) -> bool:
    """Whether the term sequence ``needle`` occurs contiguously in ``haystack``."""
    hay, pin = list(haystack), list(needle)
    if not pin:
        return True
    return any(hay[i : i + len(pin)] == pin for i in range(len(hay) - len(pin) + 1))
