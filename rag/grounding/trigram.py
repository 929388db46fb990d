"""A trigram language model: the stand-in generator of the grounding experiments.

A model that answers "from memory" is a trigram model trained on the whole
corpus; a model that answers "from the sources" is the same memory interpolated
with a trigram model trained on the retrieved chunks only. Comparing the two on
a true and a remembered-but-wrong answer shows why fluency and token
probability say nothing about support.

Smoothing is interpolated Kneser-Ney (Chen and Goodman, 1998) with one absolute
discount per order, estimated from the count-of-counts as
``D = n1 / (n1 + 2 n2)`` and clipped to ``[MINIMUM_DISCOUNT, MAXIMUM_DISCOUNT]``
so that a small corpus (nearly every count 1, hence D near 1) keeps some trust
in its trigrams. The model of a few retrieved chunks uses a fixed discount
instead (``SOURCE_DISCOUNT``), since the estimate means nothing there. The
highest order uses raw counts; the lower orders use continuation counts
(the number of distinct left neighbours), because a word that follows many
different histories is a better guess for an unseen history than a word that
is frequent after one fixed phrase. The unigram level is interpolated with a
uniform distribution over the vocabulary and the unknown token, so every token
has a positive probability and, for any history, the next-token distribution
sums to one over the vocabulary plus ``<unk>``.

Sentences are padded with two ``<s>`` and one ``</s>``; ``<s>`` is only ever a
history and gets probability zero as a prediction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rag.text import normalize_text, split_sentences

# The longest greedy completion of the grounding cases, from memory and with the
# sources: the default of config['grounding']['max_tokens'], which replaces an llm
# generator's own max_tokens in those cases (rag.grounding.served_model).
COMPLETION_TOKENS = 30

UNKNOWN = "<unk>"
SENTENCE_START = "<s>"
SENTENCE_END = "</s>"
UNKNOWN_ID, START_ID, END_ID = 0, 1, 2
SPECIAL_TOKENS: tuple[str, str, str] = (UNKNOWN, SENTENCE_START, SENTENCE_END)

MINIMUM_DISCOUNT = 0.1
MAXIMUM_DISCOUNT = 0.9

# Weight of the sources' model when memory is conditioned on retrieved chunks.
# A generator that reads its sources copies from them wherever they have
# something to say; memory keeps a tenth of the weight so that the words the
# sources lack stay fluent. A remembered value the sources contradict loses
# about a factor ten per token against the sources' value; 0.99 would make it
# a hundred, and also make every word the sources lack a hundred times rarer.
SOURCE_WEIGHT = 0.9
# The sources' model should copy what a few sentences state; half of each seen
# continuation's mass is kept and half is passed to the shorter history.
SOURCE_DISCOUNT = 0.5

# Packed n-gram keys are (u * V + v) * V + w in int64, so V**3 must fit.
_MAXIMUM_VOCABULARY = 2_000_000

# Numbers stay whole (6.387, 81,296): split at the period, a decimal would look
# like a sentence end followed by a new number. A clitic after a word ('s, 't)
# is one token. Otherwise every run of word characters and every punctuation
# mark is a token, as in rag.text.word_and_punctuation_tokens.
_MODEL_TOKEN = re.compile(r"(?:\d+[.,])+\d+|(?<=\w)['’]\w+|\w+|[^\w\s]")
_NO_SPACE_BEFORE = frozenset(".,;:!?)]}%'’”")
_NO_SPACE_AFTER = frozenset("([{$“‘")


# --------------------------------------------------------------------------
# Tokens
# --------------------------------------------------------------------------


def text_tokens(text: str) -> list[str]:
    """Tokens of the normalized text: words, whole numbers and punctuation marks."""
    return _MODEL_TOKEN.findall(normalize_text(text))


def sentence_tokens(text: str) -> list[list[str]]:
    """Tokens of each sentence of ``text``, split before normalizing.

    The sentence splitter needs the original capitals to find boundaries.
    """
    sentences = (text_tokens(text[start:end]) for start, end in split_sentences(text))
    return [tokens for tokens in sentences if tokens]


def detokenize(tokens: Sequence[str]) -> str:
    """Join tokens into readable text: no space before a closing mark or after an opening one."""
    pieces: list[str] = []
    for token in tokens:
        if token in SPECIAL_TOKENS:
            continue
        attaches = token in _NO_SPACE_BEFORE or token[0] in "'’"
        if pieces and not attaches and pieces[-1] not in _NO_SPACE_AFTER:
            pieces.append(" ")
        pieces.append(token)
    return "".join(pieces)


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TrigramModel:
    """Interpolated Kneser-Ney counts, packed for vectorised look-ups.

    Ids 0, 1, 2 are ``<unk>``, ``<s>``, ``</s>``; the other tokens follow in
    sorted order, so the model does not depend on the order of the texts.
    N-gram keys are sorted packed integers, so every continuation of one
    history is a contiguous slice, located with the ``*_starts`` offsets.
    """

    vocabulary: tuple[str, ...]
    token_ids: Mapping[str, int]
    discounts: tuple[float, float, float]  # unigram, bigram, trigram
    unigram_probabilities: np.ndarray  # (V,) the interpolated unigram level
    bigram_keys: np.ndarray  # sorted v * V + w
    bigram_continuations: np.ndarray  # distinct u before (v, w)
    bigram_history_totals: np.ndarray  # (V,) continuation total of history v
    bigram_history_types: np.ndarray  # (V,) distinct w after history v
    bigram_history_starts: np.ndarray  # (V + 1,) slice of bigram_keys per v
    trigram_keys: np.ndarray  # sorted (u * V + v) * V + w
    trigram_counts: np.ndarray
    trigram_history_keys: np.ndarray  # sorted u * V + v
    trigram_history_totals: np.ndarray
    trigram_history_types: np.ndarray
    trigram_history_starts: np.ndarray  # (H + 1,) slice of trigram_keys per history
    sentence_count: int
    token_count: int


@dataclass(frozen=True, eq=False)
class MixtureModel:
    """A linear interpolation of language models over the union of their vocabularies.

    A component that does not know a token of the union gives it an equal
    share of its own ``<unk>`` probability (shared with the remaining unknown
    class), so each component stays a proper distribution over the union and
    so does the mixture.
    """

    components: tuple[LanguageModel, ...]
    weights: tuple[float, ...]
    vocabulary: tuple[str, ...]
    token_ids: Mapping[str, int]
    component_ids: tuple[np.ndarray, ...]  # per component: its id of each union token (<unk> if unknown)
    component_divisors: tuple[np.ndarray, ...]  # per component: 1, or the number of tokens sharing <unk>


LanguageModel = TrigramModel | MixtureModel


def _discount(counts: np.ndarray) -> float:
    ones = int(np.count_nonzero(counts == 1))
    twos = int(np.count_nonzero(counts == 2))
    estimate = ones / (ones + 2 * twos) if ones else MINIMUM_DISCOUNT
    return float(min(max(estimate, MINIMUM_DISCOUNT), MAXIMUM_DISCOUNT))


def train(texts: Iterable[str], discount: float | None = None) -> TrigramModel:
    """Count the trigrams of ``texts`` (split into sentences) and smooth them.

    ``discount`` fixes the absolute discount of every order instead of
    estimating it from the count-of-counts, which means nothing on a handful
    of sentences (every count is 1, so the estimate is 1).
    """
    if discount is not None and not 0.0 < discount < 1.0:
        raise ValueError(f"discount {discount} is outside (0, 1)")
    sentences: list[list[str]] = []
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"training text {index} is a {type(text).__name__}, not a string")
        sentences.extend(sentence_tokens(text))
    if not sentences:
        raise ValueError("the training texts contain no tokens")

    words = sorted({token for sentence in sentences for token in sentence})
    vocabulary = (*SPECIAL_TOKENS, *words)
    size = len(vocabulary)
    if size > _MAXIMUM_VOCABULARY:
        raise ValueError(f"vocabulary of {size} tokens is too large to pack trigrams into int64")
    token_ids = {token: position for position, token in enumerate(vocabulary)}

    stream: list[int] = []
    for sentence in sentences:
        stream += [START_ID, START_ID, *(token_ids[token] for token in sentence), END_ID]
    ids = np.asarray(stream, dtype=np.int64)
    first, second, third = ids[:-2], ids[1:-1], ids[2:]
    within_sentence = third != START_ID  # the only trigrams that straddle two sentences end in <s>
    packed = (first[within_sentence] * size + second[within_sentence]) * size + third[within_sentence]

    trigram_keys, trigram_counts = np.unique(packed, return_counts=True)
    trigram_history_keys, history_starts, trigram_history_types = np.unique(
        trigram_keys // size, return_index=True, return_counts=True
    )
    trigram_history_totals = np.add.reduceat(trigram_counts, history_starts)

    # Every bigram inside a padded sentence ends some trigram, so the distinct
    # trigrams give each bigram's number of distinct left neighbours.
    bigram_keys, bigram_continuations = np.unique(trigram_keys % (size * size), return_counts=True)
    bigram_histories = bigram_keys // size
    bigram_history_types = np.bincount(bigram_histories, minlength=size)
    bigram_history_totals = np.bincount(bigram_histories, weights=bigram_continuations, minlength=size)
    unigram_continuations = np.bincount(bigram_keys % size, minlength=size)

    if discount is None:
        discounts = (
            _discount(unigram_continuations),
            _discount(bigram_continuations),
            _discount(trigram_counts),
        )
    else:
        discounts = (float(discount),) * 3
    unigram_discount = discounts[0]
    predictable = size - 1  # every token but <s>
    unigram_total = float(unigram_continuations.sum())
    seen_types = np.count_nonzero(unigram_continuations)
    unigram_probabilities = (
        np.maximum(unigram_continuations - unigram_discount, 0.0)
        + unigram_discount * seen_types / predictable
    ) / unigram_total
    unigram_probabilities[START_ID] = 0.0

    return TrigramModel(
        vocabulary=vocabulary,
        token_ids=token_ids,
        discounts=discounts,
        unigram_probabilities=unigram_probabilities,
        bigram_keys=bigram_keys,
        bigram_continuations=bigram_continuations,
        bigram_history_totals=bigram_history_totals,
        bigram_history_types=bigram_history_types,
        bigram_history_starts=np.concatenate([[0], np.cumsum(bigram_history_types)]),
        trigram_keys=trigram_keys,
        trigram_counts=trigram_counts,
        trigram_history_keys=trigram_history_keys,
        trigram_history_totals=trigram_history_totals,
        trigram_history_types=trigram_history_types,
        trigram_history_starts=np.append(history_starts, len(trigram_keys)),
        sentence_count=len(sentences),
        token_count=sum(len(sentence) for sentence in sentences),
    )


def mix(models: Sequence[LanguageModel], weights: Sequence[float]) -> MixtureModel:
    """Interpolate language models with fixed weights (non-negative, summing to one)."""
    if not models:
        raise ValueError("a mixture needs at least one model")
    if len(weights) != len(models):
        raise ValueError(f"{len(weights)} weights for {len(models)} models")
    for position, weight in enumerate(weights):
        if not (np.isfinite(weight) and weight >= 0.0):
            raise ValueError(f"mixture weight {position} is {weight}; weights must be non-negative")
    if abs(sum(weights) - 1.0) > 1e-9:
        raise ValueError(f"mixture weights sum to {sum(weights)}, not 1")

    vocabulary = list(models[0].vocabulary)
    token_ids = dict(models[0].token_ids)
    for model in models[1:]:
        for token in model.vocabulary:
            if token not in token_ids:
                token_ids[token] = len(vocabulary)
                vocabulary.append(token)

    component_ids, component_divisors = [], []
    for model in models:
        ids = np.fromiter(
            (model.token_ids.get(token, UNKNOWN_ID) for token in vocabulary),
            dtype=np.int64,
            count=len(vocabulary),
        )
        unknown = ids == UNKNOWN_ID  # includes <unk> itself
        component_ids.append(ids)
        component_divisors.append(np.where(unknown, float(np.count_nonzero(unknown)), 1.0))

    return MixtureModel(
        components=tuple(models),
        weights=tuple(float(weight) for weight in weights),
        vocabulary=tuple(vocabulary),
        token_ids=token_ids,
        component_ids=tuple(component_ids),
        component_divisors=tuple(component_divisors),
    )


def condition(
    memory: LanguageModel,
    source_texts: Sequence[str],
    source_weight: float = SOURCE_WEIGHT,
    source_discount: float = SOURCE_DISCOUNT,
) -> MixtureModel:
    """Memory interpolated with a trigram model of the sources, the sources weighted ``source_weight``.

    This stands in for a generator that reads retrieved chunks in its prompt:
    what the sources state becomes overwhelmingly likely, while memory still
    supplies the words they do not contain.
    """
    if not 0.0 <= source_weight <= 1.0:
        raise ValueError(f"source_weight {source_weight} is not a probability")
    if isinstance(source_texts, str):
        raise ValueError("source_texts must be a sequence of texts, not one string")
    sources = train(source_texts, discount=source_discount)
    return mix([memory, sources], [1.0 - source_weight, source_weight])


# --------------------------------------------------------------------------
# Probabilities
# --------------------------------------------------------------------------


def _count(keys: np.ndarray, values: np.ndarray, key: int) -> float:
    position = int(np.searchsorted(keys, key))
    if position < len(keys) and keys[position] == key:
        return float(values[position])
    return 0.0


def _trigram_history(model: TrigramModel, first: int, second: int) -> int | None:
    key = first * len(model.vocabulary) + second
    position = int(np.searchsorted(model.trigram_history_keys, key))
    if position < len(model.trigram_history_keys) and model.trigram_history_keys[position] == key:
        return position
    return None


def _trigram_probability(model: TrigramModel, history: tuple[str, str], token: str) -> float:
    size = len(model.vocabulary)
    first, second = (model.token_ids.get(item, UNKNOWN_ID) for item in history)
    word = model.token_ids.get(token, UNKNOWN_ID)
    _, bigram_discount, trigram_discount = model.discounts

    probability = float(model.unigram_probabilities[word])
    total = model.bigram_history_totals[second]
    if total > 0:
        continuation = _count(model.bigram_keys, model.bigram_continuations, second * size + word)
        probability = (
            max(continuation - bigram_discount, 0.0)
            + bigram_discount * model.bigram_history_types[second] * probability
        ) / total
    position = _trigram_history(model, first, second)
    if position is not None:
        count = _count(model.trigram_keys, model.trigram_counts, (first * size + second) * size + word)
        probability = (
            max(count - trigram_discount, 0.0)
            + trigram_discount * model.trigram_history_types[position] * probability
        ) / model.trigram_history_totals[position]
    return float(probability)


def _trigram_distribution(model: TrigramModel, history: tuple[str, str]) -> np.ndarray:
    size = len(model.vocabulary)
    first, second = (model.token_ids.get(item, UNKNOWN_ID) for item in history)
    _, bigram_discount, trigram_discount = model.discounts

    distribution = model.unigram_probabilities.copy()
    total = model.bigram_history_totals[second]
    if total > 0:
        low, high = model.bigram_history_starts[second], model.bigram_history_starts[second + 1]
        distribution *= bigram_discount * model.bigram_history_types[second] / total
        distribution[model.bigram_keys[low:high] % size] += (
            np.maximum(model.bigram_continuations[low:high] - bigram_discount, 0.0) / total
        )
    position = _trigram_history(model, first, second)
    if position is not None:
        total = model.trigram_history_totals[position]
        low, high = model.trigram_history_starts[position], model.trigram_history_starts[position + 1]
        distribution *= trigram_discount * model.trigram_history_types[position] / total
        distribution[model.trigram_keys[low:high] % size] += (
            np.maximum(model.trigram_counts[low:high] - trigram_discount, 0.0) / total
        )
    return distribution


def _probability(model: LanguageModel, history: tuple[str, str], token: str) -> float:
    if isinstance(model, TrigramModel):
        return _trigram_probability(model, history, token)
    position = model.token_ids.get(token, UNKNOWN_ID)
    probability = 0.0
    for component, weight, ids, divisors in zip(
        model.components, model.weights, model.component_ids, model.component_divisors, strict=True
    ):
        if weight > 0.0:
            own_token = component.vocabulary[ids[position]]
            probability += weight * _probability(component, history, own_token) / divisors[position]
    return probability


def _distribution(model: LanguageModel, history: tuple[str, str]) -> np.ndarray:
    if isinstance(model, TrigramModel):
        return _trigram_distribution(model, history)
    distribution = np.zeros(len(model.vocabulary))
    for component, weight, ids, divisors in zip(
        model.components, model.weights, model.component_ids, model.component_divisors, strict=True
    ):
        if weight > 0.0:
            distribution += weight * _distribution(component, history)[ids] / divisors
    return distribution


def _padded_history(history: Sequence[str]) -> tuple[str, str]:
    padded = [SENTENCE_START, SENTENCE_START, *history]
    return padded[-2], padded[-1]


def next_token_distribution(model: LanguageModel, history: Sequence[str]) -> np.ndarray:
    """Probability of every token of ``model.vocabulary`` after ``history``.

    ``history`` holds model tokens of the current sentence (see
    :func:`text_tokens`); it is padded with ``<s>``, so an empty history asks
    for the first token of a sentence. Entry ``<unk>`` is the probability of
    any token outside the vocabulary, and the vector sums to one.
    """
    return _distribution(model, _padded_history(history))


def token_probabilities(
    model: LanguageModel, context: str, continuation: str, end_of_sentence: bool = False
) -> np.ndarray:
    """Probability of each token of ``continuation`` given ``context`` and the tokens before it.

    ``context`` is read as the start of a sentence. With ``end_of_sentence``
    the probability that the sentence ends there is appended, so complete
    sentences of different lengths are compared fairly.
    """
    history = [SENTENCE_START, SENTENCE_START, *text_tokens(context)]
    targets = text_tokens(continuation) + ([SENTENCE_END] if end_of_sentence else [])
    probabilities = np.empty(len(targets))
    for position, token in enumerate(targets):
        probabilities[position] = _probability(model, (history[-2], history[-1]), token)
        history.append(token)
    return probabilities


@dataclass(frozen=True)
class Score:
    """How likely a continuation is; the geometric mean is the per-token probability."""

    tokens: tuple[str, ...]
    probabilities: tuple[float, ...]
    log_likelihood: float
    geometric_mean: float


def score(model: LanguageModel, context: str, continuation: str, end_of_sentence: bool = False) -> Score:
    """Log-likelihood and geometric-mean token probability of ``continuation`` after ``context``."""
    tokens = text_tokens(continuation) + ([SENTENCE_END] if end_of_sentence else [])
    if not tokens:
        raise ValueError(f"continuation {continuation!r} has no tokens to score")
    probabilities = token_probabilities(model, context, continuation, end_of_sentence)
    log_likelihood = float(np.sum(np.log(probabilities)))
    return Score(
        tokens=tuple(tokens),
        probabilities=tuple(float(value) for value in probabilities),
        log_likelihood=log_likelihood,
        geometric_mean=float(np.exp(log_likelihood / len(tokens))),
    )


# --------------------------------------------------------------------------
# SentenceCompletion
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SentenceCompletion:
    """A generated continuation of a prompt.

    ``log_likelihood`` and ``geometric_mean`` include the sentence end when
    ``finished``; ``text`` and ``tokens`` do not contain it.
    """

    prompt: str
    tokens: tuple[str, ...]
    text: str
    log_likelihood: float
    geometric_mean: float
    finished: bool


def _top_tokens(distribution: np.ndarray, count: int) -> np.ndarray:
    # Highest probability first, ties broken by token id.
    order = np.lexsort((np.arange(len(distribution)), -distribution))
    return order[:count]


def complete_sentence(
    model: LanguageModel, prompt: str, max_tokens: int = COMPLETION_TOKENS, beam_width: int = 1
) -> SentenceCompletion:
    """Continue ``prompt`` until the sentence ends: greedy for ``beam_width`` 1, beam search otherwise.

    Beam search keeps the ``beam_width`` most likely prefixes among all
    extensions; a prefix that ends the sentence leaves the beam, and the search
    stops once no open prefix is more likely than the best finished sentence
    (adding tokens only lowers a probability). ``<unk>`` is never generated. If
    no sentence ends within ``max_tokens`` the most likely open prefix is
    returned with ``finished`` false.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    if beam_width < 1:
        raise ValueError(f"beam_width must be at least 1, got {beam_width}")
    history = [SENTENCE_START, SENTENCE_START, *text_tokens(prompt)]
    beams: list[tuple[tuple[str, ...], float]] = [((), 0.0)]
    finished: list[tuple[tuple[str, ...], float]] = []

    for _ in range(max_tokens):
        candidates: list[tuple[tuple[str, ...], float]] = []
        for generated, log_probability in beams:
            distribution = _distribution(model, _padded_history(history + list(generated)))
            distribution[[UNKNOWN_ID, START_ID]] = 0.0
            for token_id in _top_tokens(distribution, beam_width):
                if distribution[token_id] > 0.0:
                    candidates.append(
                        (
                            (*generated, model.vocabulary[token_id]),
                            log_probability + float(np.log(distribution[token_id])),
                        )
                    )
        candidates.sort(key=lambda candidate: -candidate[1])  # stable: earlier beams and ids win ties
        beams = []
        for generated, log_probability in candidates[:beam_width]:
            (finished if generated[-1] == SENTENCE_END else beams).append((generated, log_probability))
        if finished:
            best_finished = max(log_probability for _, log_probability in finished)
            beams = [beam for beam in beams if beam[1] > best_finished]
        if not beams:
            break

    pool = finished or beams
    best_tokens, best_log_probability = max(pool, key=lambda hypothesis: hypothesis[1])
    is_finished = bool(finished)
    text_part = best_tokens[:-1] if is_finished else best_tokens
    return SentenceCompletion(
        prompt=prompt,
        tokens=text_part,
        text=detokenize(text_part),
        log_likelihood=best_log_probability,
        geometric_mean=float(np.exp(best_log_probability / len(best_tokens))),
        finished=is_finished,
    )
