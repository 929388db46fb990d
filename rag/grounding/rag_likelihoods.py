"""RAG-Sequence and RAG-Token likelihoods (Lewis et al., 2020), and the grounding experiments.

Both formulations treat the retrieved chunk as a hidden variable z with the
retriever's prior p(z), a softmax of the retrieval scores at temperature tau.
With ``a[z, i]`` the generator's probability of answer token i given chunk z:

* RAG-Sequence picks one chunk for the whole answer:
  ``P = sum_z p(z) prod_i a[z, i]``.
* RAG-Token may pick a different chunk for every token:
  ``P = prod_i sum_z p(z) a[z, i]``.

Written as a product of ratios ``P_m = prod_i P_i / P_(i-1)``, RAG-Sequence's
i-th factor is ``sum_z w[z, i-1] a[z, i]`` where ``w[:, i]`` is the posterior
over chunks after i tokens (Bayes' rule): it commits to the chunks that explain
the answer so far, while RAG-Token keeps the prior at every token. That is why
RAG-Token can combine facts from several chunks, and also attach a fact from
one chunk to the subject of another.

Products of token probabilities underflow quickly (twenty tokens at 1e-16 are
1e-320), so everything is computed in log space and sums of exponentials
factor out their largest term.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rag.grounding.trigram import (
    COMPLETION_TOKENS,
    SOURCE_DISCOUNT,
    SOURCE_WEIGHT,
    LanguageModel,
    SentenceCompletion,
    complete_sentence,
    condition,
    score,
    token_probabilities,
)

# --------------------------------------------------------------------------
# Log-space arithmetic and the retrieval prior
# --------------------------------------------------------------------------


def log_sum_exp(values: np.ndarray, axis: int | None = None) -> np.ndarray | float:
    """log(sum(exp(values))) with the largest term factored out, so nothing overflows or underflows.

    An all ``-inf`` slice (every term zero) gives ``-inf`` rather than NaN.
    """
    values = np.asarray(values, dtype=float)
    peak = np.max(values, axis=axis, keepdims=True)
    safe_peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        total = np.log(np.sum(np.exp(values - safe_peak), axis=axis, keepdims=True)) + safe_peak
    total = np.where(np.isneginf(peak), -np.inf, total)
    if axis is None:
        return float(total.reshape(()))
    return np.squeeze(total, axis=axis)


def _scores_array(scores: Sequence[float] | np.ndarray, temperature: float) -> np.ndarray:
    if not (np.isfinite(temperature) and temperature > 0.0):
        raise ValueError(f"temperature must be positive, got {temperature}")
    values = np.asarray(scores, dtype=float)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"retrieval scores must be a non-empty vector, got shape {values.shape}")
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise ValueError(f"retrieval score {bad[0]} is {values[bad[0]]}")
    return values


def log_retrieval_prior(scores: Sequence[float] | np.ndarray, temperature: float) -> np.ndarray:
    """Log of the softmax of ``scores / temperature``, the retriever's distribution over chunks.

    The temperature sets how sharply the retriever trusts its ranking: small
    values concentrate the prior on the top chunk, large ones flatten it.
    """
    logits = _scores_array(scores, temperature) / temperature
    shifted = logits - logits.max()  # the largest logit becomes 0, so exp cannot overflow
    return shifted - np.log(np.sum(np.exp(shifted)))


def retrieval_prior(scores: Sequence[float] | np.ndarray, temperature: float) -> np.ndarray:
    """Softmax of ``scores / temperature``: the probability p(z) of each retrieved chunk."""
    return np.exp(log_retrieval_prior(scores, temperature))


def _log_inputs(
    prior: Sequence[float] | np.ndarray, token_probabilities: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    weights = np.asarray(prior, dtype=float)
    table = np.asarray(token_probabilities, dtype=float)
    if weights.ndim != 1 or weights.size == 0:
        raise ValueError(f"prior must be a non-empty vector, got shape {weights.shape}")
    if table.ndim != 2 or table.shape[0] != weights.size:
        raise ValueError(
            f"token_probabilities must have shape (chunks={weights.size}, tokens), got {table.shape}"
        )
    for name, values in (("prior", weights), ("token_probabilities", table)):
        bad = np.argwhere(~((values >= 0.0) & (values <= 1.0)))
        if bad.size:
            where = tuple(int(index) for index in bad[0])
            raise ValueError(f"{name}{list(where)} is {values[where]}, not a probability")
    if abs(weights.sum() - 1.0) > 1e-6:
        raise ValueError(f"prior sums to {weights.sum()}, not 1")
    with np.errstate(divide="ignore"):
        return np.log(weights), np.log(table)


# --------------------------------------------------------------------------
# Likelihoods
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class RagLikelihood:
    """An answer's likelihood under one formulation, and its per-token factors.

    ``likelihood`` may underflow to 0 where ``log_likelihood`` stays exact.
    The factors multiply to the likelihood: for RAG-Token each is the mixture
    of one token's probabilities under the prior; for RAG-Sequence each is the
    ratio ``P_i / P_(i-1)``, the same mixture under the running posterior.
    """

    log_likelihood: float
    likelihood: float
    log_token_factors: tuple[float, ...]

    @property
    def token_factors(self) -> tuple[float, ...]:
        return tuple(float(np.exp(value)) for value in self.log_token_factors)


@dataclass(frozen=True, eq=False)
class SequencePosteriors:
    """RAG-Sequence unrolled token by token.

    ``weights[i]`` is the distribution over chunks after the first i tokens
    (``weights[0]`` is the prior); ``log_factors[i]`` is the log of the
    probability of token i + 1 under ``weights[i]``. After a token that no
    chunk can produce, the posterior is undefined and its rows are NaN.
    """

    weights: np.ndarray  # (tokens + 1, chunks)
    log_factors: np.ndarray  # (tokens,)

    @property
    def factors(self) -> np.ndarray:
        return np.exp(self.log_factors)


def rag_sequence_posteriors(
    prior: Sequence[float] | np.ndarray, token_probabilities: np.ndarray
) -> SequencePosteriors:
    """Update the chunk weights by Bayes' rule after every token of the answer.

    The update is done step by step, independently of the direct sum in
    :func:`rag_sequence_likelihood`, so the product of the factors checks it.
    """
    log_prior, log_table = _log_inputs(prior, token_probabilities)
    chunk_count, token_count = log_table.shape
    log_weights = np.full((token_count + 1, chunk_count), np.nan)
    log_factors = np.empty(token_count)
    log_weights[0] = log_prior
    for position in range(token_count):
        joint = log_weights[position] + log_table[:, position]
        log_factors[position] = log_sum_exp(joint)
        if np.isneginf(log_factors[position]):
            log_factors[position + 1 :] = -np.inf
            break
        log_weights[position + 1] = joint - log_factors[position]
    return SequencePosteriors(weights=np.exp(log_weights), log_factors=log_factors)


def _result(log_likelihood: float, log_factors: np.ndarray) -> RagLikelihood:
    return RagLikelihood(
        log_likelihood=float(log_likelihood),
        likelihood=float(np.exp(log_likelihood)),
        log_token_factors=tuple(float(value) for value in log_factors),
    )


def rag_sequence_likelihood(
    prior: Sequence[float] | np.ndarray, token_probabilities: np.ndarray
) -> RagLikelihood:
    """``sum_z p(z) prod_i a[z, i]``: one chunk explains the whole answer.

    ``token_probabilities`` has one row per chunk and one column per token.
    """
    log_prior, log_table = _log_inputs(prior, token_probabilities)
    log_likelihood = log_sum_exp(log_prior + log_table.sum(axis=1))
    return _result(log_likelihood, rag_sequence_posteriors(prior, token_probabilities).log_factors)


def rag_token_likelihood(
    prior: Sequence[float] | np.ndarray, token_probabilities: np.ndarray
) -> RagLikelihood:
    """``prod_i sum_z p(z) a[z, i]``: every token may come from a different chunk."""
    log_prior, log_table = _log_inputs(prior, token_probabilities)
    log_factors = np.asarray(log_sum_exp(log_prior[:, None] + log_table, axis=0), dtype=float).reshape(-1)
    return _result(float(np.sum(log_factors)), log_factors)


# --------------------------------------------------------------------------
# Grounding experiments with the trigram generator
# --------------------------------------------------------------------------


def per_chunk_models(
    memory: LanguageModel,
    chunk_texts: Sequence[str],
    source_weight: float = SOURCE_WEIGHT,
    source_discount: float = SOURCE_DISCOUNT,
) -> list[LanguageModel]:
    """Memory conditioned on each chunk alone: the generator given chunk z, for every z."""
    if isinstance(chunk_texts, str) or not chunk_texts:
        raise ValueError("chunk_texts must be a non-empty sequence of chunk texts")
    return [condition(memory, [text], source_weight, source_discount) for text in chunk_texts]


def chunk_token_probabilities(
    chunk_models: Sequence[LanguageModel], prompt: str, answer: str, end_of_sentence: bool = True
) -> np.ndarray:
    """The table ``a[z, i]``: each answer token's probability under the generator given chunk z."""
    if not chunk_models:
        raise ValueError("chunk_models is empty")
    table = np.vstack([token_probabilities(model, prompt, answer, end_of_sentence) for model in chunk_models])
    if not table.shape[1]:
        raise ValueError(f"answer {answer!r} has no tokens to score")
    return table


@dataclass(frozen=True)
class AnswerLikelihood:
    """One answer scored by one model; ``geometric_mean`` is the per-token probability.

    ``note`` says why a score is missing (NaN) or approximate, e.g. when a
    served model gives no per-token log-probabilities; empty otherwise.
    """

    answer_kind: str  # "true" or "wrong"
    answer: str
    model: str  # "memory", "sources", "rag_sequence" or "rag_token"
    log_likelihood: float
    geometric_mean: float
    token_count: int
    note: str = ""


@dataclass(frozen=True)
class GroundingComparison:
    """What memory and the sources say, and how they rate a true and a wrong answer.

    The two greedy completions compare memory against the sources where no
    answer is given; the odds are log10 of P(true answer) / P(wrong answer):
    negative means the model prefers the wrong answer.
    """

    prompt: str
    memory_completion: SentenceCompletion
    sources_completion: SentenceCompletion
    answers: tuple[AnswerLikelihood, ...]
    memory_log10_odds: float
    sources_log10_odds: float


# One model's score of an answer: model, log-likelihood, geometric mean, token
# count; with the answer's kind and text in front, the fields of AnswerLikelihood.
ModelScore = tuple[str, float, float, int]


def _rag_scores(log_prior: np.ndarray, table: np.ndarray) -> list[ModelScore]:
    """RAG-Sequence and RAG-Token on one answer's token table, which fixes the token count."""
    prior = np.exp(log_prior)
    return [
        (
            model,
            likelihood.log_likelihood,
            float(np.exp(likelihood.log_likelihood / table.shape[1])),
            table.shape[1],
        )
        for model, likelihood in (
            ("rag_sequence", rag_sequence_likelihood(prior, table)),
            ("rag_token", rag_token_likelihood(prior, table)),
        )
    ]


def _check_chunks(chunk_texts: Sequence[str], retrieval_scores: Sequence[float]) -> None:
    if isinstance(chunk_texts, str) or not chunk_texts:
        raise ValueError("chunk_texts must be a non-empty sequence of chunk texts")
    if len(chunk_texts) != len(retrieval_scores):
        raise ValueError(f"{len(chunk_texts)} chunks but {len(retrieval_scores)} retrieval scores")


def grounding_comparison(
    memory: LanguageModel,
    chunk_texts: Sequence[str],
    retrieval_scores: Sequence[float],
    prompt: str,
    true_answer: str,
    wrong_answer: str,
    temperature: float = 1.0,
    source_weight: float = SOURCE_WEIGHT,
    source_discount: float = SOURCE_DISCOUNT,
    max_tokens: int = COMPLETION_TOKENS,
) -> GroundingComparison:
    """Score a true and a remembered-but-wrong answer from memory and from the retrieved chunks.

    "sources" conditions memory on all chunks at once, as a prompt holding
    every source would; "rag_sequence" and "rag_token" condition on one chunk
    at a time and mix with the retrieval prior. Answers are scored as the end
    of the sentence that ``prompt`` starts; memory and "sources" also complete
    ``prompt`` greedily, so what each says unprompted can be checked too.
    """
    _check_chunks(chunk_texts, retrieval_scores)
    log_prior = log_retrieval_prior(retrieval_scores, temperature)
    grounded = condition(memory, list(chunk_texts), source_weight, source_discount)
    chunk_models = per_chunk_models(memory, chunk_texts, source_weight, source_discount)
    rows: list[AnswerLikelihood] = []
    log_likelihoods: dict[tuple[str, str], float] = {}
    for answer_kind, answer in (("true", true_answer), ("wrong", wrong_answer)):
        scores: list[ModelScore] = []
        for model_name, model in (("memory", memory), ("sources", grounded)):
            result = score(model, prompt, answer, end_of_sentence=True)
            log_likelihoods[answer_kind, model_name] = result.log_likelihood
            scores.append((model_name, result.log_likelihood, result.geometric_mean, len(result.tokens)))
        table = chunk_token_probabilities(chunk_models, prompt, answer)
        scores.extend(_rag_scores(log_prior, table))
        rows.extend(AnswerLikelihood(answer_kind, answer, *model_score) for model_score in scores)

    def log10_odds(model_name: str) -> float:
        difference = log_likelihoods["true", model_name] - log_likelihoods["wrong", model_name]
        return float(difference / np.log(10.0))

    return GroundingComparison(
        prompt=prompt,
        memory_completion=complete_sentence(memory, prompt, max_tokens=max_tokens),
        sources_completion=complete_sentence(grounded, prompt, max_tokens=max_tokens),
        answers=tuple(rows),
        memory_log10_odds=log10_odds("memory"),
        sources_log10_odds=log10_odds("sources"),
    )


@dataclass(frozen=True)
class CandidateLikelihood:
    """A candidate sentence under both formulations, with per-chunk conditioned generators."""

    candidate: str
    token_count: int
    rag_sequence_log_likelihood: float
    rag_token_log_likelihood: float
    rag_sequence_note: str = ""
    rag_token_note: str = ""

    @property
    def log10_token_over_sequence(self) -> float:
        """How many orders of magnitude RAG-Token rates the candidate above RAG-Sequence."""
        return (self.rag_token_log_likelihood - self.rag_sequence_log_likelihood) / float(np.log(10.0))


def candidate_likelihoods(
    memory: LanguageModel,
    chunk_texts: Sequence[str],
    retrieval_scores: Sequence[float],
    candidates: Sequence[str],
    prompt: str = "",
    temperature: float = 1.0,
    source_weight: float = SOURCE_WEIGHT,
    source_discount: float = SOURCE_DISCOUNT,
) -> tuple[CandidateLikelihood, ...]:
    """RAG-Sequence and RAG-Token likelihoods of each candidate sentence (e.g. correct vs swapped numbers).

    RAG-Token may take each number from the chunk that states it, so it rates
    a sentence combining two chunks far above RAG-Sequence, and it cannot tell
    which subject each number belongs to, so a swapped sentence stays close.
    """
    _check_chunks(chunk_texts, retrieval_scores)
    if isinstance(candidates, str) or not candidates:
        raise ValueError("candidates must be a non-empty sequence of sentences")
    prior = retrieval_prior(retrieval_scores, temperature)
    chunk_models = per_chunk_models(memory, chunk_texts, source_weight, source_discount)
    results = []
    for candidate in candidates:
        table = chunk_token_probabilities(chunk_models, prompt, candidate)
        results.append(
            CandidateLikelihood(
                candidate=candidate,
                token_count=table.shape[1],
                rag_sequence_log_likelihood=rag_sequence_likelihood(prior, table).log_likelihood,
                rag_token_log_likelihood=rag_token_likelihood(prior, table).log_likelihood,
            )
        )
    return tuple(results)
