"""The grounding experiments as records: cases, their measurements and tidy rows.

A case is a prompt with a true continuation and a wrong one that the corpus
states for another body, the kind of fact a model answering from memory mixes
up. For each case the trigram model of the corpus as the grounding caller may
read it (memory; :func:`rag.grounding.experiment.memory_texts`, so a document
the caller may not read never trains it) and the same model conditioned on the
retrieved chunks (sources) each complete the prompt and score both
continuations; the support check then judges both completions against the
same chunks. The swap experiment scores a comparison sentence and the same
sentence with its two values exchanged under RAG-Sequence and RAG-Token.

The numbers come from :mod:`rag.grounding.rag_likelihoods` and :mod:`rag.answering.verification`; this
module only names the cases, runs them and lays the results out as rows, so
the workflow script stays file glue.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rag.answering.verification import ClaimCheck, check_claim
from rag.grounding.rag_likelihoods import (
    CandidateLikelihood,
    GroundingComparison,
    candidate_likelihoods,
    grounding_comparison,
)
from rag.grounding.trigram import LanguageModel

if TYPE_CHECKING:
    import pandas as pd


# The models of grounding_comparison, from memory alone to one chunk per token.
MODELS = ("memory", "sources", "rag_sequence", "rag_token")
# The generator column's value for the trigram stand-in; a served model's rows carry its entry name.
TRIGRAM = "trigram"
SWAP_MODELS = ("rag_sequence", "rag_token")
ANSWER_KINDS = ("true", "wrong")

_LOG_10 = float(np.log(10.0))


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class GroundingCase:
    """A prompt, the continuation the sources support and one stated for another body.

    ``wrong_from`` names the document that states the wrong continuation, so a
    case cannot pit the truth against an invented value: the wrong answer must
    be something the corpus, and hence memory, has actually seen.
    """

    name: str
    question_id: str
    prompt: str
    true_answer: str
    wrong_answer: str
    wrong_from: str


@dataclass(frozen=True)
class SwapCase:
    """A comparison sentence whose two values can be exchanged between its subjects."""

    question_id: str
    correct: str
    values: tuple[str, str]

    @property
    def swapped(self) -> str:
        return swap_values(self.correct, *self.values)


def case_from_config(entry: Mapping) -> GroundingCase:
    return GroundingCase(
        name=entry["name"],
        question_id=entry["question"],
        prompt=entry["prompt"],
        true_answer=entry["true_answer"],
        wrong_answer=entry["wrong_answer"],
        wrong_from=entry["wrong_from"],
    )


def swap_from_config(entry: Mapping) -> SwapCase:
    first, second = entry["values"]
    return SwapCase(question_id=entry["question"], correct=entry["correct"], values=(first, second))


def _value_pattern(value: str) -> str:
    # A value is matched whole: "95" must not match inside "1995" or "2.95".
    return rf"(?<!\w)(?<!\d[.,]){re.escape(value)}(?!\w)(?![.,]\d)"


def swap_values(sentence: str, first: str, second: str) -> str:
    """``sentence`` with ``first`` and ``second`` exchanged; each must occur exactly once.

    Once, because with two occurrences it would be unclear which one belongs
    to which subject, and the swapped sentence would not be the intended one.
    """
    if first == second:
        raise ValueError(f"the two values to swap are the same: {first!r}")
    for value in (first, second):
        count = len(re.findall(_value_pattern(value), sentence))
        if count != 1:
            raise ValueError(f"{value!r} occurs {count} times in {sentence!r}; a swap needs it exactly once")
    pattern = re.compile(f"{_value_pattern(first)}|{_value_pattern(second)}")
    return pattern.sub(lambda match: second if match.group() == first else first, sentence)


# --------------------------------------------------------------------------
# Support checks
# --------------------------------------------------------------------------


def source_claim(prompt: str, continuation: str, source_count: int) -> str:
    """The sentence ``prompt continuation`` citing every one of ``source_count`` sources.

    Citing all retrieved chunks asks the most lenient question the check can
    ask: is this supported by anything the retriever found?
    """
    if source_count < 1:
        raise ValueError("a claim needs at least one source to cite")
    labels = ", ".join(str(number) for number in range(1, source_count + 1))
    return f"{prompt.strip()} {continuation.strip()} [{labels}]"


def check_against_sources(prompt: str, continuation: str, chunk_texts: Sequence[str]) -> ClaimCheck:
    """The support check of ``prompt continuation`` against the retrieved chunks, numbered from 1."""
    sources = {number: text for number, text in enumerate(chunk_texts, start=1)}
    return check_claim(source_claim(prompt, continuation, len(sources)), sources)


def check_wrong_answer_source(case: GroundingCase, document_text: str) -> None:
    """Fail unless the document ``case.wrong_from`` states the wrong answer (terms and numbers).

    Uses the same lexical check as for answers, so "stated" means what the
    support check would accept.
    """
    check = check_claim(f"{case.wrong_answer} [1]", {1: document_text})
    if not check.supported:
        problems = []
        if check.unsupported_numbers:
            problems.append(f"numbers {list(check.unsupported_numbers)} do not occur in it")
        if check.matched_terms < check.term_count:
            problems.append(f"only {check.matched_terms} of its {check.term_count} terms occur in it")
        raise ValueError(
            f"case {case.name!r}: document {case.wrong_from!r} does not state the wrong answer "
            f"{case.wrong_answer!r}: {'; '.join(problems) or 'it has no terms to check'}"
        )


# --------------------------------------------------------------------------
# Running the experiments
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class RetrievedChunks:
    """The top chunks of one question's ranking, best first, with their retrieval scores."""

    chunk_ids: tuple[str, ...]
    texts: tuple[str, ...]
    scores: tuple[float, ...]


def top_chunks(
    ranked: Sequence[tuple[int, str, float]], chunk_texts: Mapping[str, str], k: int, question_id: str
) -> RetrievedChunks:
    """The ``k`` best of ``(rank, chunk id, score)`` rows; fewer if the ranking is shorter.

    An empty ranking is an error: with no sources there is nothing to condition on.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    best = sorted(ranked)[:k]
    if not best:
        raise ValueError(f"question {question_id!r} has no retrieved chunks")
    missing = [chunk_id for _, chunk_id, _ in best if chunk_id not in chunk_texts]
    if missing:
        raise ValueError(f"question {question_id!r}: ranked chunk {missing[0]!r} is not in the chunk set")
    return RetrievedChunks(
        chunk_ids=tuple(chunk_id for _, chunk_id, _ in best),
        texts=tuple(chunk_texts[chunk_id] for _, chunk_id, _ in best),
        scores=tuple(float(score) for _, _, score in best),
    )


@dataclass(frozen=True)
class CaseResult:
    """Everything measured on one case.

    ``log10_odds[model]`` is log10 P(true) / P(wrong) under that model:
    positive when it prefers the true answer. ``completion_check`` judges
    memory's completion, ``sources_completion_check`` the completion with the
    sources, both against the retrieved chunks.
    """

    case: GroundingCase
    retrieved: RetrievedChunks
    comparison: GroundingComparison
    log10_odds: Mapping[str, float]
    completion_check: ClaimCheck
    sources_completion_check: ClaimCheck
    true_check: ClaimCheck
    wrong_check: ClaimCheck
    generator: str = TRIGRAM


def log10_odds_by_model(comparison: GroundingComparison) -> dict[str, float]:
    """log10 of P(true answer) / P(wrong answer) under each model of the comparison."""
    log_likelihood = {(row.answer_kind, row.model): row.log_likelihood for row in comparison.answers}
    return {
        model: (log_likelihood["true", model] - log_likelihood["wrong", model]) / _LOG_10 for model in MODELS
    }


def run_case(
    memory: LanguageModel,
    case: GroundingCase,
    retrieved: RetrievedChunks,
    temperature: float,
    max_tokens: int,
) -> CaseResult:
    """Complete the prompt from memory and with the sources, score both answers, check both completions."""
    comparison = grounding_comparison(
        memory,
        list(retrieved.texts),
        list(retrieved.scores),
        case.prompt,
        case.true_answer,
        case.wrong_answer,
        temperature=temperature,
        max_tokens=max_tokens,
    )
    return CaseResult(
        case=case,
        retrieved=retrieved,
        comparison=comparison,
        log10_odds=log10_odds_by_model(comparison),
        completion_check=check_against_sources(
            case.prompt, comparison.memory_completion.text, retrieved.texts
        ),
        sources_completion_check=check_against_sources(
            case.prompt, comparison.sources_completion.text, retrieved.texts
        ),
        true_check=check_against_sources(case.prompt, case.true_answer, retrieved.texts),
        wrong_check=check_against_sources(case.prompt, case.wrong_answer, retrieved.texts),
    )


@dataclass(frozen=True)
class SwapResult:
    """The comparison sentence and its swapped twin under RAG-Sequence and RAG-Token."""

    swap: SwapCase
    retrieved: RetrievedChunks
    correct: CandidateLikelihood
    swapped: CandidateLikelihood
    generator: str = TRIGRAM


def run_swap(
    memory: LanguageModel, swap: SwapCase, retrieved: RetrievedChunks, temperature: float
) -> SwapResult:
    correct, swapped = candidate_likelihoods(
        memory,
        list(retrieved.texts),
        list(retrieved.scores),
        [swap.correct, swap.swapped],
        temperature=temperature,
    )
    return SwapResult(swap=swap, retrieved=retrieved, correct=correct, swapped=swapped)


# --------------------------------------------------------------------------
# Tidy rows
# --------------------------------------------------------------------------

ANSWER_COLUMNS = [
    "case",
    "question_id",
    "generator",
    "model",
    "answer_kind",
    "answer",
    "token_count",
    "log_likelihood",
    "log10_likelihood",
    "geometric_mean",
    "note",
]

CASE_COLUMNS = [
    "case",
    "question_id",
    "generator",
    "prompt",
    "true_answer",
    "wrong_answer",
    "wrong_from",
    "chunk_ids",
    "memory_completion",
    "completion_finished",
    "completion_tokens",
    "completion_log_likelihood",
    "completion_geometric_mean",
    "sources_completion",
    "sources_completion_finished",
    "sources_completion_tokens",
    *(f"{model}_log10_odds" for model in MODELS),
    "completion_support",
    "completion_unsupported_numbers",
    "completion_supported",
    "sources_completion_support",
    "sources_completion_unsupported_numbers",
    "sources_completion_supported",
    "true_supported",
    "wrong_unsupported_numbers",
    "wrong_supported",
    "note",
]

SWAP_COLUMNS = [
    "question_id",
    "generator",
    "candidate",
    "sentence",
    "model",
    "token_count",
    "log_likelihood",
    "log10_likelihood",
    "geometric_mean",
    "log10_ratio_to_correct",
    "ratio_to_correct",
    "log10_ratio_to_rag_sequence",
    "ratio_to_rag_sequence",
    "chunk_ids",
    "note",
]


def answer_rows(result: CaseResult) -> list[dict]:
    """One row per (model, answer kind): true before wrong, models from memory to RAG-Token."""
    by_key = {(row.answer_kind, row.model): row for row in result.comparison.answers}
    rows = []
    for model in MODELS:
        for answer_kind in ANSWER_KINDS:
            row = by_key[answer_kind, model]
            rows.append(
                {
                    "case": result.case.name,
                    "question_id": result.case.question_id,
                    "generator": result.generator,
                    "model": model,
                    "answer_kind": answer_kind,
                    "answer": row.answer,
                    "token_count": row.token_count,
                    "log_likelihood": row.log_likelihood,
                    "log10_likelihood": row.log_likelihood / _LOG_10,
                    "geometric_mean": row.geometric_mean,
                    "note": row.note,
                }
            )
    return rows


def _numbers(check: ClaimCheck) -> str:
    return " ".join(check.unsupported_numbers)


def _case_note(result: CaseResult) -> str:
    """The answers' notes, once each, with the models they concern."""
    models_by_note: dict[str, list[str]] = {}
    for row in result.comparison.answers:
        if row.note and row.model not in models_by_note.setdefault(row.note, []):
            models_by_note[row.note].append(row.model)
    return "; ".join(f"{', '.join(models)}: {note}" for note, models in models_by_note.items())


def _check_columns(prefix: str, check: ClaimCheck) -> dict:
    """One completion's support check as columns; the prefix tells memory's from the sources' apart."""
    return {
        f"{prefix}support": check.support,
        f"{prefix}unsupported_numbers": _numbers(check),
        f"{prefix}supported": check.supported,
    }


def case_row(result: CaseResult) -> dict:
    """The case, both completions, the odds under every model and the support checks."""
    case, completion = result.case, result.comparison.memory_completion
    with_sources = result.comparison.sources_completion
    return {
        "case": case.name,
        "question_id": case.question_id,
        "generator": result.generator,
        "prompt": case.prompt,
        "true_answer": case.true_answer,
        "wrong_answer": case.wrong_answer,
        "wrong_from": case.wrong_from,
        "chunk_ids": " ".join(result.retrieved.chunk_ids),
        "memory_completion": completion.text,
        "completion_finished": completion.finished,
        "completion_tokens": len(completion.tokens),
        "completion_log_likelihood": completion.log_likelihood,
        "completion_geometric_mean": completion.geometric_mean,
        "sources_completion": with_sources.text,
        "sources_completion_finished": with_sources.finished,
        "sources_completion_tokens": len(with_sources.tokens),
        **{f"{model}_log10_odds": result.log10_odds[model] for model in MODELS},
        **_check_columns("completion_", result.completion_check),
        **_check_columns("sources_completion_", result.sources_completion_check),
        "true_supported": result.true_check.supported,
        "wrong_unsupported_numbers": _numbers(result.wrong_check),
        "wrong_supported": result.wrong_check.supported,
        "note": _case_note(result),
    }


def swap_rows(result: SwapResult) -> list[dict]:
    """One row per (candidate, model), with its ratio to the correct sentence and to RAG-Sequence."""
    candidates = {"correct": result.correct, "swapped": result.swapped}
    sentences = {"correct": result.swap.correct, "swapped": result.swap.swapped}

    def log_likelihood(candidate: str, model: str) -> float:
        return getattr(candidates[candidate], f"{model}_log_likelihood")

    rows = []
    for candidate, likelihood in candidates.items():
        for model in SWAP_MODELS:
            value = log_likelihood(candidate, model)
            to_correct = (value - log_likelihood("correct", model)) / _LOG_10
            to_sequence = (value - log_likelihood(candidate, "rag_sequence")) / _LOG_10
            rows.append(
                {
                    "question_id": result.swap.question_id,
                    "generator": result.generator,
                    "candidate": candidate,
                    "sentence": sentences[candidate],
                    "model": model,
                    "token_count": likelihood.token_count,
                    "log_likelihood": value,
                    "log10_likelihood": value / _LOG_10,
                    "geometric_mean": float(np.exp(value / likelihood.token_count))
                    if likelihood.token_count
                    else float("nan"),
                    "log10_ratio_to_correct": to_correct,
                    "ratio_to_correct": 10.0**to_correct,
                    "log10_ratio_to_rag_sequence": to_sequence,
                    "ratio_to_rag_sequence": 10.0**to_sequence,
                    "chunk_ids": " ".join(result.retrieved.chunk_ids),
                    "note": getattr(likelihood, f"{model}_note"),
                }
            )
    return rows


# --------------------------------------------------------------------------
# From the workflow's tables and the canonical grounding section
# --------------------------------------------------------------------------


def document_texts(doc_ids: Sequence[str], block_texts: Sequence[str]) -> dict[str, str]:
    """Each document's text: its parsed blocks in order, joined as the parser joins them."""
    from rag.documents.blocks import BLOCK_SEPARATOR

    blocks: dict[str, list[str]] = {}
    for doc_id, text in zip(doc_ids, block_texts, strict=True):
        blocks.setdefault(doc_id, []).append(text)
    return {doc_id: BLOCK_SEPARATOR.join(blocks[doc_id]) for doc_id in sorted(blocks)}


def configured_cases(settings: Mapping, texts: Mapping[str, str]) -> list[GroundingCase]:
    """The section's cases, each checked against the document its wrong answer is taken from.

    The config plan checks names and question ids; which document states the
    wrong answer needs the parsed corpus, so it is checked here, naming the key.
    """
    cases = []
    for entry in settings["cases"]:
        case = case_from_config(entry)
        if case.wrong_from not in texts:
            raise ValueError(
                f"config['grounding']['cases'][{case.name!r}]['wrong_from']: no document "
                f"{case.wrong_from!r} in corpus {settings['corpus']!r}; known: {sorted(texts)}"
            )
        check_wrong_answer_source(case, texts[case.wrong_from])
        cases.append(case)
    return cases


def ranked_rows(
    question_ids: Sequence[str], ranks: Sequence[int], chunk_ids: Sequence[str], scores: Sequence[float]
) -> dict[str, list[tuple[int, str, float]]]:
    """(rank, chunk id, score) rows by question, the input of :func:`top_chunks`."""
    rows: dict[str, list[tuple[int, str, float]]] = {}
    for question_id, rank, chunk_id, score in zip(question_ids, ranks, chunk_ids, scores, strict=True):
        rows.setdefault(question_id, []).append((rank, chunk_id, score))
    return rows


def describe_case(result: CaseResult) -> str:
    """The grounding job's log line of one case: what memory and the sources say, which answer each prefers.

    Both completions are named with their verdicts, because for the bundled
    model the odds are NaN and the two completions are the only comparison.
    """
    completion, with_sources = result.comparison.memory_completion, result.comparison.sources_completion
    odds = {model: round(value, 2) for model, value in result.log10_odds.items()}
    return (
        f"{result.case.name} ({result.generator}): memory says {completion.text!r} "
        f"(geometric mean {completion.geometric_mean:.3f}), with the sources {with_sources.text!r}; "
        f"log10 odds true:wrong {odds}; completion supported: {result.completion_check.supported}, "
        f"sources completion supported: {result.sources_completion_check.supported}"
    )


def grounding_tables(
    results: Sequence[CaseResult], swaps: Sequence[SwapResult]
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """results/grounding.csv, grounding_cases.csv and grounding_swap.csv, in their fixed columns."""
    import pandas as pd  # here: rag.pipeline.config imports this module, and it must load without pandas

    answers = [row for result in results for row in answer_rows(result)]
    return (
        pd.DataFrame(answers, columns=ANSWER_COLUMNS),
        pd.DataFrame([case_row(result) for result in results], columns=CASE_COLUMNS),
        pd.DataFrame([row for swap in swaps for row in swap_rows(swap)], columns=SWAP_COLUMNS),
    )
