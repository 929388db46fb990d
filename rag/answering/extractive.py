"""The offline extractive generator: answer with one quoted sentence of the sources.

It needs no model and no network, so the whole pipeline runs and is measured
anywhere. Each sentence of the prompt's sources is scored by how much of the
question's idf weight it covers, the best one is returned verbatim with its
citation, and the generator abstains when even the best covers too little.
A quotation can never invent a number, but it can quote the wrong sentence,
and coverage says nothing about whether the sentence really answers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rag.answering.prompts import Prompt
from rag.kinds import EXTRACTIVE_THRESHOLD
from rag.text import analyze, numbers_in, split_sentences, tokenize

DEFAULT_COVERAGE_THRESHOLD = EXTRACTIVE_THRESHOLD
NUMBER_PENALTY = 0.5
ABSTENTION_TEXT = "The sources are insufficient to answer the question."

# "how long", "how many": the word after "how" names the kind of answer and
# rarely occurs in the sentence that gives it.
_HOW = "how"
_NUMERIC_HOW = frozenset({"many", "long"})
_WHEN = "when"


@dataclass(frozen=True)
class ScoredSentence:
    """A candidate sentence: which source holds it, where, and its coverage."""

    source_number: int
    position: int
    sentence: str
    coverage: float


@dataclass(frozen=True)
class ExtractiveAnswer:
    """A quoted sentence with its citation inserted, e.g. "... Deimos [1]." """

    text: str
    source_number: int
    sentence: str
    coverage: float
    abstained: bool = False


@dataclass(frozen=True)
class BestSentence:
    """The sentence an offline generator would answer a prompt with at any threshold.

    What every offline kind's ``read`` behaviour returns (rag.kinds): the
    sentence, the number of its source, the ``score`` its threshold is
    compared with and the question's idf ``coverage`` (for the extractive
    generator the two are the same).
    """

    sentence: str
    source_number: int
    score: float
    coverage: float


@dataclass(frozen=True)
class Abstention:
    """The generator declined: no sentence covered ``threshold`` of the question."""

    best_coverage: float
    threshold: float
    text: str = ABSTENTION_TEXT
    abstained: bool = True


def question_terms(question: str, stem: bool = False) -> list[str]:
    """Distinct analysed question terms, without the word that follows "how"."""
    tokens = tokenize(question)
    kept = [token for index, token in enumerate(tokens) if not (index > 0 and tokens[index - 1] == _HOW)]
    return list(dict.fromkeys(analyze(" ".join(kept), stem=stem)))


def expects_number(question: str) -> bool:
    """Whether the question asks "how many", "how long" or "when"."""
    tokens = tokenize(question)
    follows_how = any(
        first == _HOW and second in _NUMERIC_HOW for first, second in zip(tokens, tokens[1:], strict=False)
    )
    return follows_how or _WHEN in tokens


def default_unknown_idf(idf: Mapping[str, float]) -> float:
    """The weight of a question term the idf table does not know: the largest known weight.

    A term missing from the collection is at least as rare as its rarest
    term, so it should weigh at least as much; since no source contains it,
    it lowers every sentence's coverage, which is what pushes questions about
    things the collection never mentions towards abstention. With an empty
    table every term weighs 1.
    """
    return max(idf.values(), default=1.0)


def score_sentences(
    prompt: Prompt,
    idf: Mapping[str, float],
    unknown_idf: float | None = None,
    stem: bool = False,
) -> list[ScoredSentence]:
    """Coverage of every sentence of the prompt's sources, in source then sentence order.

    Coverage is the idf weight of the distinct question terms found in the
    sentence or in its source's label (title and section), divided by the
    weight of all question terms; minus 0.5 when a question that expects a
    number meets a sentence without one. A question with no terms left gives
    every sentence coverage 0.
    """
    weights = _question_weights(prompt.question, idf, unknown_idf, stem)
    total = sum(weights.values())
    penalize = expects_number(prompt.question)
    scored: list[ScoredSentence] = []
    for number, chunk in prompt.sources.items():
        label_terms = set(analyze(chunk.label, stem=stem))
        for position, (start, end) in enumerate(split_sentences(chunk.text)):
            sentence = " ".join(chunk.text[start:end].split())
            present = label_terms | set(analyze(sentence, stem=stem))
            covered = sum(weight for term, weight in weights.items() if term in present)
            coverage = covered / total if total > 0 else 0.0
            if penalize and not numbers_in(sentence):
                coverage -= NUMBER_PENALTY
            scored.append(ScoredSentence(number, position, sentence, coverage))
    return scored


def _question_weights(
    question: str, idf: Mapping[str, float], unknown_idf: float | None, stem: bool
) -> dict[str, float]:
    fallback = default_unknown_idf(idf) if unknown_idf is None else unknown_idf
    weights: dict[str, float] = {}
    for term in question_terms(question, stem=stem):
        weight = idf.get(term, fallback)
        if weight < 0:
            raise ValueError(f"idf of question term {term!r} is negative ({weight}); use a positive idf")
        weights[term] = weight
    return weights


def cite(sentence: str, source_number: int) -> str:
    """Insert " [n]" before the sentence's final punctuation, or append it."""
    body = sentence.rstrip()
    stripped = body.rstrip(".!?")
    return f"{stripped} [{source_number}]{body[len(stripped) :]}"


def extract_answer(
    prompt: Prompt,
    idf: Mapping[str, float],
    threshold: float = DEFAULT_COVERAGE_THRESHOLD,
    unknown_idf: float | None = None,
    stem: bool = False,
) -> ExtractiveAnswer | Abstention:
    """The best-covering sentence with its citation, or an abstention below ``threshold``.

    ``idf`` maps analysed terms to weights, normally the BM25 idf of the
    collection; ``unknown_idf`` overrides :func:`default_unknown_idf`. Ties go
    to the earlier source, then the earlier sentence.
    """
    if not isinstance(threshold, int | float) or threshold != threshold:
        raise ValueError(f"coverage threshold must be a number, got {threshold!r}")
    best: ScoredSentence | None = None
    for candidate in score_sentences(prompt, idf, unknown_idf=unknown_idf, stem=stem):
        if best is None or candidate.coverage > best.coverage:
            best = candidate
    if best is None or best.coverage < threshold:
        return Abstention(best_coverage=best.coverage if best else 0.0, threshold=threshold)
    return ExtractiveAnswer(
        text=cite(best.sentence, best.source_number),
        source_number=best.source_number,
        sentence=best.sentence,
        coverage=best.coverage,
    )


def best_sentence(prompt: Prompt, idf: Mapping[str, float], similarity: object = None) -> BestSentence | None:
    """The extractive generator's ``read`` (rag.kinds): its best-covering sentence, None without one.

    It takes no similarity; :class:`rag.answering.answers.GenerationSettings` refuses one.
    """
    found = extract_answer(prompt, idf, threshold=-math.inf)
    if not isinstance(found, ExtractiveAnswer):
        return None
    return BestSentence(found.sentence, found.source_number, found.coverage, found.coverage)


def extractive_generator(
    idf: Mapping[str, float],
    threshold: float = DEFAULT_COVERAGE_THRESHOLD,
    unknown_idf: float | None = None,
    stem: bool = False,
) -> Callable[[Prompt], str]:
    """The extractive generator as a plain prompt-to-text function, like the hosted one."""

    def generate(prompt: Prompt) -> str:
        return extract_answer(prompt, idf, threshold=threshold, unknown_idf=unknown_idf, stem=stem).text

    return generate
