"""Citation and support checks for a drafted answer.

Models follow the citation format far more reliably than they follow the
sources, so every sentence of an answer is checked against the sources it
cites. The check is lexical, a stand-in for entailment: it catches citations
of sources that do not exist, claims whose words are not in the cited
sources, and numbers that appear in none of them (the typical symptom of an
answer from parametric memory). It cannot see negation or paraphrase, and it
says nothing about whether the claim answers the question.

Given the question, the check also holds each claim to the place its words
come from (:func:`anchored`): words scattered over a source about something
else ("the launch mass of Juno was 318 Earth masses [3]", citing Jupiter's
mass) are not support. The claim's own value (its numbers and the words the
question does not already hold) must sit in one sentence of one cited source,
or that sentence and the one before it, and the question's subject (its names)
must be in that passage or in the source's title. Words the claim repeats from
the question and citation phrases ("as stated in [1]") are not asked of the
source. The rule was designed on the development questions' hand labels
(resources/answer_labels/claims.csv, items 301-420) only.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rag.text import analyze, numbers_in, split_sentences

DEFAULT_SUPPORT_THRESHOLD = 0.75

# "[1]", "[1, 2]", "[1; 3]": one marker may cite several sources.
_CITATION = re.compile(r"\s*\[\s*(\d+(?:\s*[,;]\s*\d+)*)\s*\]")
_ONLY_CITATIONS = re.compile(rf"(?:{_CITATION.pattern})+\s*[.!?]?")
# A marker glued to the end of a sentence ("Deimos.[1] Phobos ...") would hide
# the sentence boundary from the splitter.
_GLUED_CITATION = re.compile(r"([.!?])(\[\s*\d)")
# Phrases that point at a source instead of saying something about the world:
# "as stated in [1]", "(source [1])", "This information is found in source [4]."
_CITATION_PHRASE = re.compile(
    r"\(?\b(?:(?:as\s+)?(?:stated|found|given|mentioned|shown|reported)\s+in|according\s+to|"
    r"(?:this|the)\s+information\s+(?:is|can\s+be)\s+found\s+in)?\s*(?:source|sources)?\s*"
    r"(?=\[\s*\d)",
    re.IGNORECASE,
)
# A name in a question: a capitalized word that does not open it ("Ceres",
# "Chang'e", "Juno"); the subject an answer's source must be about.
_NAME = re.compile(r"(?<!^)(?<![.?!]\s)\b[A-Z][\w'’-]*")


@dataclass(frozen=True)
class ClaimCheck:
    """The verdict on one sentence of an answer.

    ``support`` is the share of the claim's terms, counting repeats, found in
    the sources it cites that exist (``matched_terms`` of ``term_count``).
    A claim without terms has support 0: there is nothing to verify.
    """

    sentence: str
    cited: tuple[int, ...]
    missing_citations: tuple[int, ...]
    support: float
    term_count: int
    matched_terms: int
    unsupported_numbers: tuple[str, ...]
    supported: bool
    anchored: bool = True


@dataclass(frozen=True)
class AnswerCheck:
    """Every claim of an answer and the verdict on the whole.

    The answer is supported when it has at least one claim and every claim
    is supported; one unsupported sentence is enough to distrust it.
    """

    claims: tuple[ClaimCheck, ...]
    supported: bool
    supported_claims: int
    supported_share: float
    missing_citations: tuple[int, ...]
    unsupported_numbers: tuple[str, ...]


def parse_citations(sentence: str) -> tuple[tuple[int, ...], str]:
    """The source numbers a sentence cites (first mention order) and the sentence without markers."""
    cited: list[int] = []
    for match in _CITATION.finditer(sentence):
        for part in re.split(r"[,;]", match.group(1)):
            number = int(part)
            if number not in cited:
                cited.append(number)
    return tuple(cited), _CITATION.sub("", sentence).strip()


def split_claims(answer: str) -> list[str]:
    """The sentences of an answer, each keeping the citation markers that belong to it.

    A citation placed after the period ("... Deimos. [1]") belongs to the
    sentence before it, not to a sentence of its own.
    """
    text = _GLUED_CITATION.sub(r"\1 \2", answer)
    claims: list[str] = []
    for start, end in split_sentences(text):
        sentence = text[start:end]
        leading = _ONLY_CITATIONS.match(sentence)
        if leading and claims:
            claims[-1] = f"{claims[-1]} {leading.group().strip()}"
            sentence = sentence[leading.end() :].strip()
        if sentence:
            claims.append(sentence)
    return claims


def _validate_sources(sources: Mapping[int, str]) -> None:
    for number, text in sources.items():
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ValueError(f"source label {number!r} is not a positive integer")
        if not isinstance(text, str):
            raise ValueError(f"source [{number}] must be text, got {type(text).__name__}")


@dataclass(frozen=True)
class SupportRule:
    """When a claim counts as supported: at least ``threshold`` of its terms occur in the
    sources it cites, comparing terms stemmed or not as ``stem`` says.

    One record, so that :func:`check_claim` and :func:`check_answer` share
    the rule and its defaults instead of each repeating them. ``stem`` must
    match the analyzer of retrieval; a threshold outside [0, 1] is refused
    here, before any claim is judged by it.
    """

    threshold: float = DEFAULT_SUPPORT_THRESHOLD
    stem: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"support threshold {self.threshold!r} is outside [0, 1]")


DEFAULT_SUPPORT_RULE = SupportRule()


@dataclass(frozen=True)
class _SourceTerms:
    terms: frozenset[str]
    numbers: frozenset[str]
    # The terms (numbers included) of each passage: a sentence and the one before it.
    passages: tuple[frozenset[str], ...] = ()


@dataclass(frozen=True)
class _Question:
    """What the anchoring rule needs of a question: its terms and its names' terms."""

    terms: frozenset[str]
    subject: frozenset[str]
    # Stemmed, so that "takes" restates "take": never compared with a source.
    stems: frozenset[str] = frozenset()

    def restates(self, term: str) -> bool:
        """Whether a claim's term is one of the question's words (or the same word stemmed)."""
        return term in self.terms or (_stem(term) in self.stems)


def _stem(term: str) -> str:
    return analyze(term, stem=True)[0] if term and not term[0].isdigit() else term


def _source_terms(sources: Mapping[int, str], stem: bool) -> dict[int, _SourceTerms]:
    return {number: _terms_of_source(text, stem) for number, text in sources.items()}


@functools.lru_cache(maxsize=1 << 14)
def _terms_of_source(text: str, stem: bool) -> _SourceTerms:
    """A source's terms, numbers and passages. Cached: the jobs that measure ``rag ask``
    check answers against the same retrieved chunks for every generator and setting."""
    sentences = [frozenset(analyze(text[start:end], stem=stem)) for start, end in split_sentences(text)]
    passages = tuple(
        sentence | (sentences[index - 1] if index else frozenset())
        for index, sentence in enumerate(sentences)
    )
    return _SourceTerms(frozenset(analyze(text, stem=stem)), frozenset(numbers_in(text)), passages)


def question_terms(question: str, stem: bool = False) -> _Question:
    """The question's terms and its subject: the terms of the names it holds (capitalized
    words other than its first); no names, no subject to ask for."""
    names = " ".join(match.group() for match in _NAME.finditer(question.strip()))
    return _Question(
        frozenset(analyze(question, stem=stem)),
        frozenset(analyze(names, stem=stem)),
        frozenset(analyze(question, stem=True)),
    )


def _plain_claim(sentence: str) -> str:
    """The claim without its markers and without the phrases that point at them."""
    return parse_citations(_CITATION_PHRASE.sub(" ", sentence))[1]


def anchored(
    claim: str,
    sources: Sequence[_SourceTerms],
    labels: Sequence[str],
    question: _Question,
    rule: SupportRule,
) -> bool:
    """Whether the claim's value sits in one passage of one cited source, beside the subject.

    The value is the claim's numbers and the terms the question does not hold
    (a claim that only restates the question's words, as the answer to "which
    is farther, Ceres or Mars?" does, has none and passes). At least
    ``rule.threshold`` of the value terms, and every number, must be in one
    passage; the question's subject, if it names one, in that passage or in
    the source's label (its title and section).
    """
    terms = analyze(claim, stem=rule.stem)
    value = [term for term in terms if not question.restates(term)]
    numbers = set(numbers_in(claim))
    if not value:
        return True
    for source, label in zip(sources, labels, strict=True):
        label_terms = frozenset(analyze(label, stem=rule.stem))
        for passage in source.passages:
            share = sum(term in passage for term in value) / len(value)
            if share < rule.threshold or not numbers <= passage:
                continue
            if not question.subject or question.subject & (passage | label_terms):
                return True
    return False


def _check(
    sentence: str,
    indexed: Mapping[int, _SourceTerms],
    rule: SupportRule,
    question: _Question | None = None,
    labels: Mapping[int, str] | None = None,
) -> ClaimCheck:
    cited, claim = parse_citations(sentence)
    existing = [number for number in cited if number in indexed]
    missing = tuple(number for number in cited if number not in indexed)
    source_terms = frozenset().union(*(indexed[number].terms for number in existing))
    source_numbers = frozenset().union(*(indexed[number].numbers for number in existing))

    if question is not None:
        # Words that restate the question or point at a source are not asked of it.
        plain = _plain_claim(sentence)
        terms = [term for term in analyze(plain, stem=rule.stem) if not question.restates(term)]
        terms = terms or analyze(plain, stem=rule.stem)
    else:
        terms = analyze(claim, stem=rule.stem)
    matched = sum(term in source_terms for term in terms)
    support = matched / len(terms) if terms else 0.0
    unsupported_numbers = tuple(
        dict.fromkeys(number for number in numbers_in(claim) if number not in source_numbers)
    )
    is_anchored = True
    if question is not None and existing:
        labels = labels or {}
        is_anchored = anchored(
            _plain_claim(sentence),
            [indexed[number] for number in existing],
            [labels.get(number, "") for number in existing],
            question,
            rule,
        )
    return ClaimCheck(
        sentence=sentence,
        cited=cited,
        missing_citations=missing,
        support=support,
        term_count=len(terms),
        matched_terms=matched,
        unsupported_numbers=unsupported_numbers,
        supported=bool(existing) and support >= rule.threshold and not unsupported_numbers and is_anchored,
        anchored=is_anchored,
    )


def check_claim(
    sentence: str,
    sources: Mapping[int, str],
    rule: SupportRule = DEFAULT_SUPPORT_RULE,
    question: str | None = None,
    labels: Mapping[int, str] | None = None,
) -> ClaimCheck:
    """Check one sentence against the sources, given as label number to text.

    It passes when it cites at least one existing source, at least
    ``rule.threshold`` of its terms occur in the cited sources, and each of
    its numbers occurs in them. Given the ``question`` (and the sources'
    ``labels``, title and section), the claim must also be :func:`anchored`,
    and the words it repeats from the question are not counted.
    """
    _validate_sources(sources)
    asked = None if question is None else question_terms(question, rule.stem)
    return _check(sentence, _source_terms(sources, rule.stem), rule, asked, labels)


def check_answer(
    answer: str,
    sources: Mapping[int, str],
    rule: SupportRule = DEFAULT_SUPPORT_RULE,
    question: str | None = None,
    labels: Mapping[int, str] | None = None,
) -> AnswerCheck:
    """Check every sentence of ``answer``; see :func:`check_claim` for the rule."""
    if not isinstance(answer, str):
        raise ValueError(f"the answer must be a string, got {type(answer).__name__}")
    _validate_sources(sources)
    if question is not None and not isinstance(question, str):
        raise ValueError(f"the question must be a string, got {type(question).__name__}")
    indexed = _source_terms(sources, rule.stem)
    asked = None if question is None else question_terms(question, rule.stem)
    claims = tuple(_check(sentence, indexed, rule, asked, labels) for sentence in split_claims(answer))
    supported_claims = sum(claim.supported for claim in claims)
    return AnswerCheck(
        claims=claims,
        supported=bool(claims) and supported_claims == len(claims),
        supported_claims=supported_claims,
        supported_share=supported_claims / len(claims) if claims else 0.0,
        missing_citations=tuple(
            dict.fromkeys(number for claim in claims for number in claim.missing_citations)
        ),
        unsupported_numbers=tuple(
            dict.fromkeys(number for claim in claims for number in claim.unsupported_numbers)
        ),
    )


# --------------------------------------------------------------------------
# Responsiveness: does the answer give what the question asks for?
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdicts:
    """The two separate verdicts on an answer.

    ``faithful`` is the citation check above: every claim cites an existing
    source that holds its words and numbers. ``responsive`` asks whether the
    answer holds a value of the kind the question asks for (``expected``,
    e.g. "temperature" or "name"). An answer can be faithful and still not
    answer the question; "supported" alone would hide that.
    """

    faithful: bool
    responsive: bool
    expected: tuple[str, ...]


def check_responsive(answer: str, question: str, labels: Mapping[int, str] | None = None) -> bool:
    """Whether ``answer`` (citation markers removed) holds a value of the question's expected type.

    ``labels`` are the title and section of the sources the answer may cite;
    words of the cited ones, like the question's own words, do not count as
    a new name or noun phrase.
    """
    from rag.answering.answer_types import expected_type, has_expected_value

    labels = labels or {}
    cited: list[int] = []
    plain: list[str] = []
    for claim in split_claims(answer):
        numbers, text = parse_citations(claim)
        cited.extend(numbers)
        plain.append(text)
    label = " ".join(labels[number] for number in dict.fromkeys(cited) if number in labels)
    return has_expected_value(" ".join(plain), expected_type(question), question, label)


def verdicts(
    check: AnswerCheck, answer: str, question: str, labels: Mapping[int, str] | None = None
) -> Verdicts:
    """Both verdicts on an answer whose citation check is ``check``."""
    from rag.answering.answer_types import expected_type

    return Verdicts(
        faithful=check.supported,
        responsive=check_responsive(answer, question, labels),
        expected=expected_type(question).kinds,
    )


_KIND_WORDS = {
    "name": "a name",
    "date": "a date or a year",
    "count": "a count",
    "number": "a number",
    "noun_phrase": "a thing or a place",
    "description": "an explanation",
    "time": "a duration",
    "length": "a length or distance",
    "temperature": "a temperature",
    "mass": "a mass",
    "speed": "a speed",
    "angle": "an angle",
    "percent": "a percentage",
    "density": "a density",
    "acceleration": "an acceleration",
    "area": "an area",
    "money": "an amount of money",
    "ratio": "a ratio",
}


def expected_in_words(kinds: tuple[str, ...]) -> str:
    """The expected answer type in words: "a duration or a length or distance"."""
    return " or ".join(_KIND_WORDS.get(kind, kind) for kind in kinds)


# What the two checks measure, in the words rag ask and the tables use for them:
# never "faithful: yes", which a reader takes for "right".
SOURCE_CHECK = "the cited source contains the answer's words and numbers"
TYPE_CHECK = "the answer holds a value of the asked type"


def describe_verdicts(result: Verdicts) -> list[str]:
    """The two checks in plain words, one line each, saying what each measured.

    A pass says what it did not check: measured against reference answers
    (results/verdicts.csv), answers passing both checks are often wrong, so
    neither line may read as "correct".
    """
    wanted = expected_in_words(result.expected)
    source = (
        f"Source check passed: {SOURCE_CHECK} (not checked: that the source is about what was asked, "
        "or that the answer is right)."
        if result.faithful
        else "Source check FAILED: the answer says something its cited source does not contain."
    )
    kind = (
        f"Type check passed: {TYPE_CHECK} (it asks for {wanted}; not checked: that it is the one asked for)."
        if result.responsive
        else f"Type check FAILED: the question asks for {wanted} and the answer holds none: "
        "it does not answer the question."
    )
    return [source, kind]
