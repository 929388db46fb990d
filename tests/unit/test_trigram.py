"""The trigram generator: Kneser-Ney probabilities, normalisation, conditioning, completion."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest

from rag.grounding import trigram
from rag.grounding.trigram import (
    END_ID,
    MAXIMUM_DISCOUNT,
    MINIMUM_DISCOUNT,
    SENTENCE_END,
    SENTENCE_START,
    START_ID,
    UNKNOWN,
    complete_sentence,
    condition,
    mix,
    next_token_distribution,
    score,
    sentence_tokens,
    text_tokens,
    token_probabilities,
    train,
)

# A memory that has seen "lasts about 176 earth days" about Mercury, and Pluto
# in other sentences, but never Pluto's day.
MEMORY_TEXTS = [
    "A solar day on Mercury lasts about 176 Earth days.",
    "Mercury's day lasts about 176 Earth days, longer than its year.",
    "A day on Mars lasts about 24.6 hours.",
    "A day on Pluto is long and cold.",
    "Pluto is a dwarf planet beyond Neptune. Pluto has five known moons.",
    "Charon is the largest moon of Pluto, and it rotates in 6.387 Earth days.",
    "The year of Mercury lasts 88 Earth days.",
]
PLUTO_CHUNKS = [
    "A day on Pluto lasts 6.387 Earth days.",
    "Pluto has five known moons, and Charon is the largest of them.",
]
PLUTO_PROMPT = "A day on Pluto lasts"


@pytest.fixture(scope="module")
def memory() -> trigram.TrigramModel:
    return train(MEMORY_TEXTS)


# --------------------------------------------------------------------------
# An independent, loop-based interpolated Kneser-Ney written from the formulas
# --------------------------------------------------------------------------


def _reference_discount(counts: list[int]) -> float:
    ones, twos = counts.count(1), counts.count(2)
    estimate = ones / (ones + 2 * twos) if ones else MINIMUM_DISCOUNT
    return min(max(estimate, MINIMUM_DISCOUNT), MAXIMUM_DISCOUNT)


class ReferenceKneserNey:
    def __init__(self, sentences: list[list[str]]) -> None:
        self.trigrams: Counter[tuple[str, str, str]] = Counter()
        for sentence in sentences:
            padded = [SENTENCE_START, SENTENCE_START, *sentence, SENTENCE_END]
            for position in range(2, len(padded)):
                self.trigrams[tuple(padded[position - 2 : position + 1])] += 1
        left_of_bigram: dict[tuple[str, str], set[str]] = defaultdict(set)
        for first, second, third in self.trigrams:
            left_of_bigram[second, third].add(first)
        self.bigram_continuations = {key: len(value) for key, value in left_of_bigram.items()}
        left_of_word: dict[str, set[str]] = defaultdict(set)
        for second, third in self.bigram_continuations:
            left_of_word[third].add(second)
        self.word_continuations = {key: len(value) for key, value in left_of_word.items()}
        self.predictable = {UNKNOWN, SENTENCE_END} | {token for sentence in sentences for token in sentence}
        self.discounts = (
            _reference_discount(list(self.word_continuations.values())),
            _reference_discount(list(self.bigram_continuations.values())),
            _reference_discount(list(self.trigrams.values())),
        )

    def unigram(self, word: str) -> float:
        discount = self.discounts[0]
        total = sum(self.word_continuations.values())
        seen = len(self.word_continuations)
        count = self.word_continuations.get(word, 0)
        return (max(count - discount, 0) + discount * seen / len(self.predictable)) / total

    def bigram(self, history: str, word: str) -> float:
        discount = self.discounts[1]
        after = {
            third: count for (second, third), count in self.bigram_continuations.items() if second == history
        }
        if not after:
            return self.unigram(word)
        total = sum(after.values())
        return (max(after.get(word, 0) - discount, 0) + discount * len(after) * self.unigram(word)) / total

    def probability(self, first: str, second: str, word: str) -> float:
        if word not in self.predictable:
            word = UNKNOWN
        discount = self.discounts[2]
        after = {
            third: count
            for (one, two, third), count in self.trigrams.items()
            if (one, two) == (first, second)
        }
        if not after:
            return self.bigram(second, word)
        total = sum(after.values())
        return (
            max(after.get(word, 0) - discount, 0) + discount * len(after) * self.bigram(second, word)
        ) / total


HISTORIES = [
    (SENTENCE_START, SENTENCE_START),
    (SENTENCE_START, "a"),
    ("day", "on"),
    ("pluto", "lasts"),  # an unseen trigram history with a seen bigram history
    ("lasts", "about"),
    ("neptune", "saturn"),  # an unknown word as the last history token
    ("zebra", "quagga"),
]


def test_probabilities_match_an_independent_kneser_ney(memory: trigram.TrigramModel) -> None:
    sentences = [tokens for text in MEMORY_TEXTS for tokens in sentence_tokens(text)]
    reference = ReferenceKneserNey(sentences)
    assert memory.discounts == pytest.approx(reference.discounts)
    for history in HISTORIES:
        distribution = next_token_distribution(memory, list(history))
        for token, position in memory.token_ids.items():
            if token == SENTENCE_START:
                continue
            assert distribution[position] == pytest.approx(reference.probability(*history, token), rel=1e-12)


def test_discounts_are_estimated_from_count_of_counts_and_clipped() -> None:
    one_sentence = train(["The cat sat on the mat."])
    # Every count is 1, so n1 / (n1 + 2 n2) = 1, clipped to the maximum.
    assert one_sentence.discounts[2] == MAXIMUM_DISCOUNT
    assert train(["The cat sat."], discount=0.3).discounts == (0.3, 0.3, 0.3)


# --------------------------------------------------------------------------
# Proper distributions
# --------------------------------------------------------------------------


def _random_histories(model: trigram.LanguageModel, count: int, seed: int) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    tokens = [token for token in model.vocabulary if token != SENTENCE_START] + ["never-seen"]
    return [[tokens[index] for index in rng.integers(0, len(tokens), size=2)] for _ in range(count)]


def test_next_token_distributions_sum_to_one(memory: trigram.TrigramModel) -> None:
    grounded = condition(memory, PLUTO_CHUNKS)
    for model in (memory, grounded, train(PLUTO_CHUNKS, discount=0.5)):
        for history in [[], ["a"], *map(list, HISTORIES), *_random_histories(model, 25, seed=7)]:
            distribution = next_token_distribution(model, history)
            assert distribution.shape == (len(model.vocabulary),)
            assert distribution.sum() == pytest.approx(1.0, abs=1e-12)
            assert distribution[START_ID] == 0.0
            others = np.delete(distribution, START_ID)
            assert np.all(others > 0.0), f"a token has probability zero after {history}"


def test_scalar_probabilities_agree_with_the_distribution(memory: trigram.TrigramModel) -> None:
    grounded = condition(memory, PLUTO_CHUNKS)
    for model in (memory, grounded):
        for history in _random_histories(model, 5, seed=11):
            distribution = next_token_distribution(model, history)
            for token in [*model.vocabulary[2:], "never-seen"]:
                position = model.token_ids.get(token, model.token_ids[UNKNOWN])
                history_model = trigram._padded_history(history)
                assert trigram._probability(model, history_model, token) == pytest.approx(
                    distribution[position], rel=1e-12
                )


def test_mixture_of_a_model_with_itself_is_the_model(memory: trigram.TrigramModel) -> None:
    doubled = mix([memory, memory], [0.25, 0.75])
    assert doubled.vocabulary == memory.vocabulary
    for history in _random_histories(memory, 10, seed=3):
        np.testing.assert_allclose(
            next_token_distribution(doubled, history), next_token_distribution(memory, history), rtol=1e-12
        )


def test_unknown_mass_is_shared_with_the_tokens_a_component_lacks(memory: trigram.TrigramModel) -> None:
    sources = train(["Arrokoth is a contact binary."], discount=0.5)
    only_memory = mix([memory, sources], [1.0, 0.0])
    new_tokens = [token for token in only_memory.vocabulary if token not in memory.token_ids]
    assert "arrokoth" in new_tokens
    history = ["a", "day"]
    unknown = next_token_distribution(memory, history)[memory.token_ids[UNKNOWN]]
    distribution = next_token_distribution(only_memory, history)
    share = unknown / (len(new_tokens) + 1)
    for token in [*new_tokens, UNKNOWN]:
        assert distribution[only_memory.token_ids[token]] == pytest.approx(share, rel=1e-12)
    assert distribution[only_memory.token_ids["about"]] == pytest.approx(
        next_token_distribution(memory, history)[memory.token_ids["about"]], rel=1e-12
    )


# --------------------------------------------------------------------------
# Tokens, determinism, input checks
# --------------------------------------------------------------------------


def test_tokens_keep_numbers_whole_and_split_punctuation() -> None:
    assert text_tokens("A day on Pluto lasts 6.387 Earth days.") == [
        "a",
        "day",
        "on",
        "pluto",
        "lasts",
        "6.387",
        "earth",
        "days",
        ".",
    ]
    assert text_tokens("Pluto's 81,296 km, (Sáturn)") == [
        "pluto",
        "'s",
        "81,296",
        "km",
        ",",
        "(",
        "saturn",
        ")",
    ]
    assert sentence_tokens("It lasts 6.387 days. Dr. Tombaugh found it.") == [
        ["it", "lasts", "6.387", "days", "."],
        ["dr", ".", "tombaugh", "found", "it", "."],
    ]


def test_training_is_deterministic_and_independent_of_text_order() -> None:
    first = train(MEMORY_TEXTS)
    second = train(list(reversed(MEMORY_TEXTS)))
    assert first.vocabulary == second.vocabulary
    assert first.discounts == second.discounts
    for field in (
        "unigram_probabilities",
        "bigram_keys",
        "bigram_continuations",
        "trigram_keys",
        "trigram_counts",
    ):
        np.testing.assert_array_equal(getattr(first, field), getattr(second, field))
    beam = complete_sentence(first, PLUTO_PROMPT, beam_width=3)
    assert beam == complete_sentence(second, PLUTO_PROMPT, beam_width=3)


def test_bad_input_is_rejected_with_a_message_naming_it(memory: trigram.TrigramModel) -> None:
    with pytest.raises(ValueError, match="no tokens"):
        train(["", "   "])
    with pytest.raises(ValueError, match="training text 1"):
        train(["fine.", 42])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="discount"):
        train(["fine."], discount=1.5)
    with pytest.raises(ValueError, match="sum to"):
        mix([memory, memory], [0.5, 0.6])
    with pytest.raises(ValueError, match="weight 1"):
        mix([memory, memory], [1.5, -0.5])
    with pytest.raises(ValueError, match="beam_width"):
        complete_sentence(memory, "a", beam_width=0)
    with pytest.raises(ValueError, match="continuation"):
        score(memory, "a", "   ")
    with pytest.raises(ValueError, match="one string"):
        condition(memory, "A day on Pluto lasts 6.387 Earth days.")  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# Grounding: memory versus sources
# --------------------------------------------------------------------------


def test_conditioning_on_the_sources_overturns_a_remembered_value(memory: trigram.TrigramModel) -> None:
    remembered, stated = "about 176 Earth days.", "6.387 Earth days."
    from_memory = complete_sentence(memory, PLUTO_PROMPT)
    assert from_memory.text == "about 176 earth days."
    assert from_memory.finished

    memory_true = score(memory, PLUTO_PROMPT, stated, end_of_sentence=True)
    memory_wrong = score(memory, PLUTO_PROMPT, remembered, end_of_sentence=True)
    assert memory_wrong.log_likelihood > memory_true.log_likelihood  # memory prefers 176

    grounded = condition(memory, PLUTO_CHUNKS)
    grounded_true = score(grounded, PLUTO_PROMPT, stated, end_of_sentence=True)
    grounded_wrong = score(grounded, PLUTO_PROMPT, remembered, end_of_sentence=True)
    assert grounded_true.log_likelihood - grounded_wrong.log_likelihood > np.log(1e3)

    # The number token alone, right after the prompt.
    number_true = token_probabilities(grounded, PLUTO_PROMPT, "6.387")[0]
    number_wrong = token_probabilities(grounded, PLUTO_PROMPT + " about", "176")[0]
    assert number_true > 0.5 > number_wrong
    assert complete_sentence(grounded, PLUTO_PROMPT).text == "6.387 earth days."


def test_score_is_the_sum_of_log_token_probabilities(memory: trigram.TrigramModel) -> None:
    result = score(memory, PLUTO_PROMPT, "about 176 Earth days.", end_of_sentence=True)
    assert result.tokens == ("about", "176", "earth", "days", ".", SENTENCE_END)
    direct = token_probabilities(memory, PLUTO_PROMPT, "about 176 Earth days.", end_of_sentence=True)
    assert result.log_likelihood == pytest.approx(float(np.sum(np.log(direct))))
    assert result.geometric_mean == pytest.approx(float(np.prod(direct)) ** (1 / 6))
    # Teacher forcing: each probability is the distribution's entry after the true prefix.
    history = text_tokens(PLUTO_PROMPT) + ["about", "176"]
    distribution = next_token_distribution(memory, history)
    assert result.probabilities[2] == pytest.approx(distribution[memory.token_ids["earth"]])


# --------------------------------------------------------------------------
# Completion
# --------------------------------------------------------------------------


def test_greedy_completion_reproduces_a_training_sentence() -> None:
    model = train(["The cat sat on the mat.", "A dog ran in the park."])
    completion = complete_sentence(model, "The cat")
    assert completion.text == "sat on the mat."
    assert completion.finished
    assert completion.tokens == ("sat", "on", "the", "mat", ".")
    # Its log-likelihood is that of the completed sentence, end marker included.
    direct = score(model, "The cat", "sat on the mat.", end_of_sentence=True)
    assert completion.log_likelihood == pytest.approx(direct.log_likelihood)


def test_completion_stops_at_max_tokens_without_a_sentence_end() -> None:
    model = train(["one two three four five six seven eight."])
    completion = complete_sentence(model, "one", max_tokens=3)
    assert completion.tokens == ("two", "three", "four")
    assert not completion.finished


def test_beam_search_is_never_worse_than_greedy_and_can_be_better(memory: trigram.TrigramModel) -> None:
    # After "go", "a" is likelier than "b", but "a" spreads over six words while "b" ends at once.
    garden_path = train(
        [f"Go a {word}." for word in ("one", "two", "three", "four", "five", "six")] + ["Go b."] * 4
    )
    greedy = complete_sentence(garden_path, "Go")
    beam = complete_sentence(garden_path, "Go", beam_width=2)
    assert greedy.tokens[0] == "a"
    assert beam.text == "b."
    assert beam.log_likelihood > greedy.log_likelihood

    for model in (memory, condition(memory, PLUTO_CHUNKS)):
        for prompt in ("", PLUTO_PROMPT, "Pluto", "A day on"):
            greedy = complete_sentence(model, prompt)
            for width in (2, 4):
                beam = complete_sentence(model, prompt, beam_width=width)
                assert beam.finished
                assert beam.log_likelihood >= greedy.log_likelihood - 1e-12


def test_completion_never_generates_special_tokens(memory: trigram.TrigramModel) -> None:
    for width in (1, 3):
        completion = complete_sentence(memory, "Zebras quagga", beam_width=width)
        assert UNKNOWN not in completion.tokens
        assert SENTENCE_START not in completion.tokens
        assert SENTENCE_END not in completion.tokens
        assert completion.finished
    assert memory.vocabulary[END_ID] == SENTENCE_END
