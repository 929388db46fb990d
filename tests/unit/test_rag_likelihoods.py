"""RAG-Sequence and RAG-Token: the worked example, identities, brute force, log-space stability."""

from __future__ import annotations

import itertools
from decimal import Decimal, getcontext

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from rag.grounding.rag_likelihoods import (
    candidate_likelihoods,
    chunk_token_probabilities,
    grounding_comparison,
    log_retrieval_prior,
    log_sum_exp,
    per_chunk_models,
    rag_sequence_likelihood,
    rag_sequence_posteriors,
    rag_token_likelihood,
    retrieval_prior,
)
from rag.grounding.trigram import score, train

# The worked example: BM25 scores of d1 and d2, tau = 0.5, and a two-token answer.
SCORES = [1.0875, 0.5225]
TEMPERATURE = 0.5
TOKENS = np.array([[0.5, 0.6], [0.7, 0.05]])


def _random_case(rng: np.random.Generator, chunks: int, tokens: int) -> tuple[np.ndarray, np.ndarray]:
    prior = rng.dirichlet(np.ones(chunks))
    table = rng.uniform(0.01, 1.0, size=(chunks, tokens))
    return prior, table


# --------------------------------------------------------------------------
# The worked example
# --------------------------------------------------------------------------


def test_worked_example_prior() -> None:
    prior = retrieval_prior(SCORES, TEMPERATURE)
    assert prior == pytest.approx([0.7558, 0.2442], abs=5e-5)
    np.testing.assert_allclose(prior, softmax(np.array(SCORES) / TEMPERATURE), rtol=1e-12)
    assert np.log(prior[0] / prior[1]) == pytest.approx(1.1300, abs=5e-5)


def test_worked_example_rag_sequence() -> None:
    result = rag_sequence_likelihood(retrieval_prior(SCORES, TEMPERATURE), TOKENS)
    assert result.likelihood == pytest.approx(0.2353, abs=5e-5)
    assert result.log_likelihood == pytest.approx(np.log(result.likelihood))
    assert result.token_factors == pytest.approx((0.5488, 0.4287), abs=5e-5)


def test_worked_example_rag_token() -> None:
    result = rag_token_likelihood(retrieval_prior(SCORES, TEMPERATURE), TOKENS)
    assert result.token_factors == pytest.approx((0.5488, 0.4657), abs=5e-5)
    assert result.likelihood == pytest.approx(0.2556, abs=5e-5)


def test_worked_example_posteriors() -> None:
    posteriors = rag_sequence_posteriors(retrieval_prior(SCORES, TEMPERATURE), TOKENS)
    assert posteriors.weights[0] == pytest.approx([0.7558, 0.2442], abs=5e-5)
    assert posteriors.weights[1] == pytest.approx([0.6886, 0.3114], abs=5e-5)  # d2 gains weight
    assert posteriors.factors == pytest.approx([0.5488, 0.4287], abs=5e-5)
    assert float(np.prod(posteriors.factors)) == pytest.approx(0.2353, abs=5e-5)


# --------------------------------------------------------------------------
# Identities and brute force
# --------------------------------------------------------------------------


@pytest.mark.parametrize(("chunks", "tokens"), [(1, 1), (2, 3), (3, 5), (5, 8), (7, 2)])
def test_product_of_ratios_equals_the_direct_sum(chunks: int, tokens: int) -> None:
    rng = np.random.default_rng(chunks * 100 + tokens)
    for _ in range(10):
        prior, table = _random_case(rng, chunks, tokens)
        direct = rag_sequence_likelihood(prior, table)
        posteriors = rag_sequence_posteriors(prior, table)
        assert float(np.sum(posteriors.log_factors)) == pytest.approx(direct.log_likelihood, rel=1e-12)
        # Each posterior is the prior times the tokens so far, renormalised.
        for position in range(tokens + 1):
            joint = prior * np.prod(table[:, :position], axis=1)
            np.testing.assert_allclose(posteriors.weights[position], joint / joint.sum(), rtol=1e-10)
            # P_i / P_(i-1) is the i-th factor.
            if position:
                previous = prior @ np.prod(table[:, : position - 1], axis=1)
                assert posteriors.factors[position - 1] == pytest.approx(joint.sum() / previous, rel=1e-10)


def test_rag_token_equals_rag_sequence_with_one_chunk_or_identical_chunks() -> None:
    rng = np.random.default_rng(5)
    row = rng.uniform(0.01, 1.0, size=6)
    single = np.array([1.0])
    expected = float(np.sum(np.log(row)))
    assert rag_token_likelihood(single, row[None, :]).log_likelihood == pytest.approx(expected, rel=1e-12)
    assert rag_sequence_likelihood(single, row[None, :]).log_likelihood == pytest.approx(expected, rel=1e-12)

    prior = rng.dirichlet(np.ones(4))
    identical = np.tile(row, (4, 1))
    assert rag_token_likelihood(prior, identical).log_likelihood == pytest.approx(expected, rel=1e-12)
    assert rag_sequence_likelihood(prior, identical).log_likelihood == pytest.approx(expected, rel=1e-12)


def test_both_agree_with_brute_force_sums_over_chunks() -> None:
    rng = np.random.default_rng(17)
    for chunks, tokens in [(2, 2), (3, 4), (4, 3), (2, 6)]:
        prior, table = _random_case(rng, chunks, tokens)
        sequence = sum(prior[z] * np.prod(table[z]) for z in range(chunks))
        # RAG-Token as a sum over every assignment of a chunk to each token.
        token = sum(
            np.prod([prior[z] * table[z, i] for i, z in enumerate(assignment)])
            for assignment in itertools.product(range(chunks), repeat=tokens)
        )
        assert rag_sequence_likelihood(prior, table).likelihood == pytest.approx(sequence, rel=1e-12)
        assert rag_token_likelihood(prior, table).likelihood == pytest.approx(token, rel=1e-12)


def test_zero_probabilities_are_handled() -> None:
    prior = np.array([0.5, 0.5])
    one_chunk_fails = np.array([[0.5, 0.0], [0.5, 0.4]])
    assert rag_sequence_likelihood(prior, one_chunk_fails).likelihood == pytest.approx(0.5 * 0.5 * 0.4)
    assert rag_sequence_posteriors(prior, one_chunk_fails).weights[2] == pytest.approx([0.0, 1.0])
    impossible = np.array([[0.5, 0.0], [0.5, 0.0]])
    assert rag_sequence_likelihood(prior, impossible).log_likelihood == -np.inf
    assert rag_token_likelihood(prior, impossible).log_likelihood == -np.inf
    assert np.all(np.isnan(rag_sequence_posteriors(prior, impossible).weights[2]))
    # A chunk with prior zero contributes nothing.
    assert rag_sequence_likelihood([1.0, 0.0], np.array([[0.2], [0.9]])).likelihood == pytest.approx(0.2)


# --------------------------------------------------------------------------
# Log space
# --------------------------------------------------------------------------


def test_log_sum_exp_matches_scipy() -> None:
    rng = np.random.default_rng(23)
    values = rng.normal(scale=300.0, size=(4, 7))
    values[1, 2] = -np.inf
    assert log_sum_exp(values) == pytest.approx(logsumexp(values), rel=1e-12)
    np.testing.assert_allclose(log_sum_exp(values, axis=0), logsumexp(values, axis=0), rtol=1e-12)
    np.testing.assert_allclose(log_sum_exp(values, axis=1), logsumexp(values, axis=1), rtol=1e-12)
    assert log_sum_exp(np.array([-np.inf, -np.inf])) == -np.inf


def test_tiny_probabilities_stay_exact_in_log_space() -> None:
    # Ten tokens at 1e-40 to 1e-32 per chunk: products of 1e-400 to 1e-320 underflow in float64.
    prior = np.array([0.6, 0.3, 0.1])
    table = np.array([[1e-40] * 10, [1e-36] * 10, [1e-32] * 10])
    assert float(np.prod(table[0])) == 0.0  # the naive product is lost

    getcontext().prec = 60
    exact_prior = [Decimal("0.6"), Decimal("0.3"), Decimal("0.1")]
    exact_table = [[Decimal(f"1e-{power}")] * 10 for power in (40, 36, 32)]
    exact_sequence = sum(
        weight * np.prod(row, dtype=object) for weight, row in zip(exact_prior, exact_table, strict=True)
    )
    exact_token = np.prod(
        [sum(exact_prior[z] * exact_table[z][i] for z in range(3)) for i in range(10)], dtype=object
    )

    sequence = rag_sequence_likelihood(prior, table)
    token = rag_token_likelihood(prior, table)
    assert sequence.log_likelihood == pytest.approx(float(exact_sequence.ln()), rel=1e-12)
    assert token.log_likelihood == pytest.approx(float(exact_token.ln()), rel=1e-12)
    assert np.isfinite(sequence.log_likelihood) and np.isfinite(token.log_likelihood)
    posteriors = rag_sequence_posteriors(prior, table)
    assert np.all(np.isfinite(posteriors.weights))
    assert float(np.sum(posteriors.log_factors)) == pytest.approx(sequence.log_likelihood, rel=1e-12)


def test_prior_is_stable_for_huge_scores() -> None:
    prior = retrieval_prior([1e4, 1e4 - 1.0, -1e4], 0.01)
    assert np.all(np.isfinite(prior))
    assert prior.sum() == pytest.approx(1.0)
    assert prior[0] == pytest.approx(1.0) and prior[2] == 0.0
    np.testing.assert_allclose(
        log_retrieval_prior([3.0, 1.0, 2.0], 2.0), np.log(softmax(np.array([1.5, 0.5, 1.0]))), rtol=1e-12
    )


def test_bad_input_is_rejected_with_a_message_naming_it() -> None:
    with pytest.raises(ValueError, match="temperature"):
        retrieval_prior([1.0, 2.0], 0.0)
    with pytest.raises(ValueError, match="retrieval score 1"):
        retrieval_prior([1.0, float("nan")], 1.0)
    with pytest.raises(ValueError, match="sums to"):
        rag_sequence_likelihood([0.5, 0.6], TOKENS)
    with pytest.raises(ValueError, match="shape"):
        rag_token_likelihood([1.0], TOKENS)
    with pytest.raises(ValueError, match=r"token_probabilities\[1, 0\]"):
        rag_token_likelihood([0.5, 0.5], np.array([[0.5, 0.6], [1.5, 0.1]]))
    with pytest.raises(ValueError, match=r"prior\[0\]"):
        rag_sequence_posteriors([-0.5, 1.5], TOKENS)


# --------------------------------------------------------------------------
# The grounding experiments with the trigram generator
# --------------------------------------------------------------------------

MOON_MEMORY = [
    "Saturn is the sixth planet from the Sun.",
    "Jupiter is the largest planet.",
    "Saturn has many known moons.",
    "Jupiter has many known moons.",
    "Saturn has more known moons than Jupiter.",
]
MOON_CHUNKS = ["Saturn has 146 known moons.", "Jupiter has 95 known moons."]
MOON_SCORES = [5.0, 4.6]
CORRECT = "Saturn has 146 known moons and Jupiter has 95."
SWAPPED = "Saturn has 95 known moons and Jupiter has 146."


def test_rag_token_combines_chunks_and_swaps_their_facts() -> None:
    memory = train(MOON_MEMORY)
    correct, swapped = candidate_likelihoods(memory, MOON_CHUNKS, MOON_SCORES, [CORRECT, SWAPPED])
    # Each number sits in a different chunk: RAG-Token takes each from its own chunk.
    assert correct.rag_token_log_likelihood > correct.rag_sequence_log_likelihood + np.log(10.0)
    assert correct.log10_token_over_sequence > 1.0
    # Nothing ties a number to its planet: RAG-Token rates the swapped sentence
    # within a factor of ten of the correct one, above RAG-Sequence's correct one.
    assert correct.rag_token_log_likelihood - swapped.rag_token_log_likelihood < np.log(10.0)
    assert swapped.rag_token_log_likelihood > correct.rag_sequence_log_likelihood


def test_candidate_likelihoods_mix_per_chunk_scores_with_the_prior() -> None:
    memory = train(MOON_MEMORY)
    (result,) = candidate_likelihoods(memory, MOON_CHUNKS, MOON_SCORES, [CORRECT], temperature=0.5)
    prior = retrieval_prior(MOON_SCORES, 0.5)
    chunk_models = per_chunk_models(memory, MOON_CHUNKS)
    per_chunk = [score(model, "", CORRECT, end_of_sentence=True).log_likelihood for model in chunk_models]
    assert result.rag_sequence_log_likelihood == pytest.approx(
        float(logsumexp(np.log(prior) + np.array(per_chunk))), rel=1e-12
    )
    table = chunk_token_probabilities(chunk_models, "", CORRECT)
    assert table.shape == (2, result.token_count) == (2, 11)  # ten tokens and the sentence end
    assert result.rag_token_log_likelihood == pytest.approx(float(np.sum(np.log(prior @ table))), rel=1e-12)


def test_grounding_comparison_reports_memory_and_sources() -> None:
    memory = train(
        [
            "A solar day on Mercury lasts about 176 Earth days.",
            "A day on Pluto is long and cold.",
            "Charon circles Pluto in 6.387 Earth days.",
        ]
    )
    chunks = ["A day on Pluto lasts 6.387 Earth days.", "Pluto has five known moons."]
    comparison = grounding_comparison(
        memory, chunks, [3.0, 1.0], "A day on Pluto lasts", "6.387 Earth days.", "about 176 Earth days."
    )
    assert comparison.memory_completion.text == "about 176 earth days."
    # Conditioned on the chunks, the same greedy decoding says what the first one states.
    assert comparison.sources_completion.text == "6.387 earth days."
    assert comparison.memory_log10_odds < 0.0 < 3.0 < comparison.sources_log10_odds
    rows = {(row.answer_kind, row.model): row for row in comparison.answers}
    assert set(rows) == {
        (kind, model)
        for kind in ("true", "wrong")
        for model in ("memory", "sources", "rag_sequence", "rag_token")
    }
    memory_wrong = rows["wrong", "memory"]
    assert memory_wrong.token_count == 6
    assert memory_wrong.geometric_mean == pytest.approx(np.exp(memory_wrong.log_likelihood / 6))
    for model in ("sources", "rag_sequence", "rag_token"):
        assert rows["true", model].log_likelihood > rows["wrong", model].log_likelihood
    with pytest.raises(ValueError, match="2 chunks but 1 retrieval scores"):
        grounding_comparison(memory, chunks, [1.0], "A day", "x.", "y.")
