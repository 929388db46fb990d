"""The grounding cases with a served language model, scored from the token log-probabilities it returns.

The trigram stand-in of :mod:`rag.grounding.trigram` is conditioned on the
chunks by mixing counts; a real model is conditioned by reading them. So each
model of the comparison becomes a prompt, and the server scores the answer
after it (``/completions`` echoing the prompt with ``logprobs``, through
:func:`rag.models.client.continuation_logprobs` and its cache):

* **memory**: the prompt alone (closed book);
* **sources**: the question's top k chunks, numbered, before the prompt;
* **rag_sequence**, **rag_token**: one request per chunk, that chunk alone
  before the prompt, giving the table ``log a[z, i]`` of each answer token's
  log-probability given chunk z; mixed with the retrieval prior exactly as
  for the trigram model (:mod:`rag.grounding.rag_likelihoods`).

Beside the scores, the model completes the prompt greedily twice: alone
(memory) and after the numbered chunks (sources). Completions need no echo,
so they compare memory with the sources even where the scores are missing.

What the server cannot give is said in the rows' ``note`` instead of being
guessed: a server that does not echo per-token log-probabilities (chat-only
APIs) leaves every score NaN; an answer tokenised into a different number of
tokens after different chunks has no per-token mixture, so RAG-Token is NaN
while RAG-Sequence, which needs only each chunk's total, is still exact.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag.grounding.cases import (
    CaseResult,
    GroundingCase,
    RetrievedChunks,
    SwapCase,
    SwapResult,
    check_against_sources,
    log10_odds_by_model,
)
from rag.grounding.rag_likelihoods import (
    AnswerLikelihood,
    CandidateLikelihood,
    GroundingComparison,
    log_retrieval_prior,
    log_sum_exp,
    rag_sequence_likelihood,
    rag_token_likelihood,
)
from rag.grounding.trigram import SentenceCompletion
from rag.models.client import (
    Endpoint,
    Sampling,
    TextCompletion,
    complete_text,
    completion_request,
    continuation_logprobs,
    continuation_request,
)
from rag.models.response_cache import ResponseCache

if TYPE_CHECKING:
    from rag.answering.llm_answers import LlmGenerator
    from rag.models.gate import Gate
    from rag.retrieval.filters import Caller

NO_LOG_PROBABILITIES = "the server gives no per-token log-probabilities of an echoed prompt"
# llama-cpp-python 0.3.36 reports, for each echoed prompt token, the log-probability
# of that token under the distribution *after* it (Llama._create_completion pairs
# token i with logits row i instead of i - 1): checked against the same model's
# logits in-process (tests/unit/grounding/test_grounding_served_model.py). Its completions
# are not affected, since they are offset by the prompt length minus one.
MISALIGNED_ECHO = (
    "the bundled llama-cpp-python server misaligns echoed log-probabilities by one token, "
    "so they are not used"
)
TOKENS_DIFFER = "the answer has a different number of tokens after different chunks, so no per-token mixture"

# (prefix, continuation) -> the log-probability of each token of the continuation, or None.
Scorer = Callable[[str, str], "tuple[float, ...] | None"]


@dataclass(frozen=True)
class ServedModel:
    """A served language model as the grounding cases use it: named, scoring and completing text."""

    name: str
    score: Scorer
    complete: Callable[[str], TextCompletion]
    # Why a score is missing when ``score`` returns None.
    unscored: str = NO_LOG_PROBABILITIES


COMPLETION_STOP = ("\n",)


def served_model(
    name: str,
    endpoint: Endpoint,
    cache: ResponseCache | None,
    max_tokens: int,
    start: Callable[[], Endpoint] | None = None,
    sampling: Sampling | None = None,
) -> ServedModel:
    """The model at ``endpoint``: completions of at most ``max_tokens``, every request cached.

    With ``start``, ``endpoint`` only names the model for the cache, and
    ``start`` (called once, at the first reply the cache lacks) returns the
    live endpoint: a bundled server is started only when something must be
    asked, so a re-run and the reproduction check need no model. The
    completion uses ``sampling``'s temperature and seed (default greedy, 0).
    """
    sampling = dataclasses.replace(sampling or Sampling(temperature=0.0, seed=0), max_tokens=max_tokens)
    live: list[Endpoint] = []

    def reach(request: dict) -> Endpoint:
        if start is None or (cache is not None and cache.get(request) is not None):
            return endpoint
        if not live:
            live.append(start())
        return live[0]

    def score(prefix: str, continuation: str) -> tuple[float, ...] | None:
        asked = reach(continuation_request(endpoint, prefix, continuation))
        return continuation_logprobs(asked, prefix, continuation, cache)

    def complete(prompt: str) -> TextCompletion:
        asked = reach(completion_request(endpoint, prompt, sampling, COMPLETION_STOP))
        return complete_text(asked, prompt, sampling, cache, COMPLETION_STOP)

    return ServedModel(name=name, score=score, complete=complete)


def generator_model(
    generator: LlmGenerator,
    cache: ResponseCache | None,
    max_tokens: int,
    server_log: str | Path,
    stack: contextlib.ExitStack,
    gate: Gate | None = None,
) -> ServedModel:
    """An ``llm`` generator entry as a served model; the bundled server is started on the first cache miss.

    The bundled server is started with ``logits_all`` (the log-probability
    of every prompt token, which echoed scoring needs) and stopped when
    ``stack`` closes; another endpoint is asked where it is. Every request
    goes where ``gate`` (rag.models.gate, opened for the grounding caller) routes it.
    """
    from rag.answering.llm_answers import endpoint_identity

    identity = endpoint_identity(generator)
    if not generator.bundled:
        endpoint = generator.endpoint(None, identity, gate)
        return served_model(generator.name, endpoint, cache, max_tokens, sampling=generator.sampling)

    def start() -> Endpoint:
        from rag.models import local_server

        base_url = stack.enter_context(local_server.running(server_log, logprobs=True, alias=generator.model))
        return generator.endpoint(base_url, identity, gate)

    named = generator.endpoint("http://127.0.0.1/v1", identity, gate)
    model = served_model(generator.name, named, cache, max_tokens, start=start, sampling=generator.sampling)
    return dataclasses.replace(model, score=lambda prefix, continuation: None, unscored=MISALIGNED_ECHO)


def gated_models(
    entries: Mapping[str, Mapping],
    caller: Caller,
    chunks_path: str,
    cache: ResponseCache | None,
    max_tokens: int,
    server_log: str | Path,
    stack: contextlib.ExitStack,
) -> tuple[list[ServedModel], Callable[[Sequence[str]], None]]:
    """Each llm entry as a served model whose requests pass its gate (rag.models.gate), and ``admit``.

    ``admit`` checks a question's chunk ids with every entry's gate (the
    caller's view over the chunk table), before any case is run with them.
    """
    from rag.answering.llm_answers import generator_from_entry
    from rag.models.gate import table_gate

    gates = [
        table_gate(caller=caller, name=name, entry=entry, role="generator", chunks=chunks_path)
        for name, entry in entries.items()
    ]
    served = [
        generator_model(generator_from_entry(name, entry), cache, max_tokens, server_log, stack, gate)
        for (name, entry), gate in zip(entries.items(), gates, strict=True)
    ]

    def admit(chunk_ids: Sequence[str]) -> None:
        for gate in gates:
            gate.admit(chunk_ids)

    return served, admit


# --------------------------------------------------------------------------
# Prompts
# --------------------------------------------------------------------------


def sources_prefix(chunk_texts: Sequence[str], prompt: str) -> str:
    """The chunks numbered from 1, one per line, then ``prompt``: what "reading the sources" means here."""
    numbered = "\n".join(f"[{number}] {text}" for number, text in enumerate(chunk_texts, start=1))
    return f"Sources:\n{numbered}\n\n{prompt}"


def continuation_after(prefix: str, text: str) -> str:
    """``text`` as the server should see it after ``prefix``: one space between words.

    The space belongs to the continuation, so the boundary token is the
    answer's own first word and not a piece straddling the prompt.
    """
    if not prefix or prefix[-1].isspace():
        return text
    return " " + text


# --------------------------------------------------------------------------
# Scores
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenScores:
    """One answer after one prefix: its tokens' log-probabilities, or None with the reason."""

    values: tuple[float, ...] | None

    @property
    def log_likelihood(self) -> float:
        return math.fsum(self.values) if self.values else math.nan

    @property
    def token_count(self) -> int:
        return len(self.values) if self.values else 0


def score_after(model: ServedModel, prefix: str, text: str) -> TokenScores:
    """Each token of ``text`` after ``prefix``: its log-probability, capped at 0 (rounding)."""
    values = model.score(prefix, continuation_after(prefix, text))
    return TokenScores(None if values is None else tuple(min(value, 0.0) for value in values))


@dataclass(frozen=True)
class MixtureScores:
    """RAG-Sequence and RAG-Token log-likelihoods from per-chunk token scores, with why one is missing."""

    token_count: int
    rag_sequence: float
    rag_token: float
    rag_sequence_note: str
    rag_token_note: str


def mixture_scores(
    log_prior: np.ndarray, per_chunk: Sequence[TokenScores], unscored: str = NO_LOG_PROBABILITIES
) -> MixtureScores:
    """Mix the chunks' token scores with the retrieval prior.

    With one token count for every chunk, the same functions as for the
    trigram model; RAG-Sequence otherwise from the chunks' totals,
    ``log sum_z p(z) prod_i a[z, i]``, which needs no token alignment.
    """
    if any(scores.values is None for scores in per_chunk):
        return MixtureScores(0, math.nan, math.nan, unscored, unscored)
    counts = {scores.token_count for scores in per_chunk}
    if len(counts) > 1:
        totals = np.array([scores.log_likelihood for scores in per_chunk])
        sequence = float(log_sum_exp(log_prior + totals))
        return MixtureScores(per_chunk[0].token_count, sequence, math.nan, "", TOKENS_DIFFER)
    prior = np.exp(log_prior)
    prior = prior / prior.sum()
    table = np.exp(np.array([scores.values for scores in per_chunk], dtype=float))
    return MixtureScores(
        token_count=table.shape[1],
        rag_sequence=rag_sequence_likelihood(prior, table).log_likelihood,
        rag_token=rag_token_likelihood(prior, table).log_likelihood,
        rag_sequence_note="",
        rag_token_note="",
    )


def _geometric_mean(log_likelihood: float, token_count: int) -> float:
    return (
        math.exp(log_likelihood / token_count) if token_count and math.isfinite(log_likelihood) else math.nan
    )


def _answer(
    kind: str, answer: str, model: str, log_likelihood: float, count: int, note: str
) -> AnswerLikelihood:
    return AnswerLikelihood(
        kind, answer, model, log_likelihood, _geometric_mean(log_likelihood, count), count, note
    )


def answer_likelihoods(
    model: ServedModel, retrieved: RetrievedChunks, prompt: str, kind: str, answer: str, temperature: float
) -> list[AnswerLikelihood]:
    """One answer under memory, sources, RAG-Sequence and RAG-Token: 2 + k requests."""
    rows = []
    for name, prefix in (("memory", prompt), ("sources", sources_prefix(retrieved.texts, prompt))):
        scores = score_after(model, prefix, answer)
        note = "" if scores.values is not None else model.unscored
        rows.append(_answer(kind, answer, name, scores.log_likelihood, scores.token_count, note))
    per_chunk = [score_after(model, sources_prefix([text], prompt), answer) for text in retrieved.texts]
    mixed = mixture_scores(log_retrieval_prior(retrieved.scores, temperature), per_chunk, model.unscored)
    for name in ("rag_sequence", "rag_token"):
        log_likelihood, note = getattr(mixed, name), getattr(mixed, f"{name}_note")
        rows.append(_answer(kind, answer, name, log_likelihood, mixed.token_count, note))
    return rows


def greedy_completion(model: ServedModel, prompt: str) -> SentenceCompletion:
    """The model's greedy continuation of ``prompt``, in the trigram model's record."""
    reply = model.complete(prompt)
    values = reply.logprobs
    log_likelihood = math.fsum(values) if values else math.nan
    return SentenceCompletion(
        prompt=prompt,
        tokens=reply.tokens,
        text=reply.text.strip(),
        log_likelihood=log_likelihood,
        geometric_mean=_geometric_mean(log_likelihood, len(values or ())),
        finished=reply.finished,
    )


# --------------------------------------------------------------------------
# Cases and the swap
# --------------------------------------------------------------------------


def run_served_case(
    model: ServedModel, case: GroundingCase, retrieved: RetrievedChunks, temperature: float
) -> CaseResult:
    """The grounding case with the served model: both answers scored, the prompt completed twice.

    Once from memory, once with the sources; the latter continues the same
    text the "sources" scores read (:func:`sources_prefix`), so the two agree
    on what reading the sources means.
    """
    answers = [
        row
        for kind, answer in (("true", case.true_answer), ("wrong", case.wrong_answer))
        for row in answer_likelihoods(model, retrieved, case.prompt, kind, answer, temperature)
    ]
    completion = greedy_completion(model, case.prompt)
    with_sources = greedy_completion(model, sources_prefix(retrieved.texts, case.prompt))
    partial = GroundingComparison(case.prompt, completion, with_sources, tuple(answers), math.nan, math.nan)
    odds = log10_odds_by_model(partial)
    comparison = dataclasses.replace(
        partial, memory_log10_odds=odds["memory"], sources_log10_odds=odds["sources"]
    )
    return CaseResult(
        case=case,
        retrieved=retrieved,
        comparison=comparison,
        log10_odds=odds,
        completion_check=check_against_sources(case.prompt, completion.text, retrieved.texts),
        sources_completion_check=check_against_sources(case.prompt, with_sources.text, retrieved.texts),
        true_check=check_against_sources(case.prompt, case.true_answer, retrieved.texts),
        wrong_check=check_against_sources(case.prompt, case.wrong_answer, retrieved.texts),
        generator=model.name,
    )


def candidate_likelihood(
    model: ServedModel, retrieved: RetrievedChunks, sentence: str, temperature: float
) -> CandidateLikelihood:
    """A whole sentence after each chunk alone, mixed as RAG-Sequence and RAG-Token."""
    per_chunk = [score_after(model, sources_prefix([text], ""), sentence) for text in retrieved.texts]
    mixed = mixture_scores(log_retrieval_prior(retrieved.scores, temperature), per_chunk, model.unscored)
    return CandidateLikelihood(
        candidate=sentence,
        token_count=mixed.token_count,
        rag_sequence_log_likelihood=mixed.rag_sequence,
        rag_token_log_likelihood=mixed.rag_token,
        rag_sequence_note=mixed.rag_sequence_note,
        rag_token_note=mixed.rag_token_note,
    )


def run_served_swap(
    model: ServedModel, swap: SwapCase, retrieved: RetrievedChunks, temperature: float
) -> SwapResult:
    return SwapResult(
        swap=swap,
        retrieved=retrieved,
        correct=candidate_likelihood(model, retrieved, swap.correct, temperature),
        swapped=candidate_likelihood(model, retrieved, swap.swapped, temperature),
        generator=model.name,
    )
