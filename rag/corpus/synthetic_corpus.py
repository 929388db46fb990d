"""Seeded synthetic BEIR collections with the statistics of real text, at any size.

The bundled corpora have a few hundred chunks; to see how every stage of the
pipeline grows to hundreds of thousands or millions of documents we need
collections that large, generated on the spot (nothing is downloaded) and
the same on every machine. What makes a text collection costly to index and
search is its statistics, not its meaning, so those are what is imitated:

- **Terms** follow Zipf's law: the word of frequency rank r is drawn with
  probability proportional to 1 / (r + 2.7)^1.07 (a Zipf–Mandelbrot law, as
  fitted to English), so a few words fill most positions and most words are
  rare. Frequent words are short, as in real languages: word r is spelled
  with the fewest consonant-vowel syllables that can number it. The
  vocabulary grows with the collection as Heaps' law says (about
  40 sqrt(tokens) distinct words).
- **Topics** give documents something to be relevant about: each document
  belongs to one topic (topics are Zipf-popular too) and takes about a third
  of its words from that topic's own small vocabulary of mid-frequency words.
- **Lengths** are log-normal (median 60 words, most between 25 and 150, a
  long tail), like abstracts and passages of the BEIR collections.
- **Queries and qrels**: a query names two to four terms of its topic plus
  one common word; its relevant documents (one to eight, geometrically
  distributed, the first with gain 2 and the rest with gain 1) are documents
  of that topic with the query's terms written into them, so a lexical
  retriever can find them but must rank them among topic neighbours that
  share some of the terms.

Everything is drawn from :class:`numpy.random.Generator` streams derived from
one seed and a block number, so a collection is byte-identical on every run,
and :func:`write_collection` writes the corpus block by block: memory stays
at one block's documents however large the collection is.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag.text import STOPWORDS

ZIPF_EXPONENT = 1.07
ZIPF_OFFSET = 2.7
TOPIC_SHARE = 0.35
TOPIC_WORDS = 300
MEDIAN_LENGTH = 60
LENGTH_SIGMA = 0.6
MIN_LENGTH = 8
MAX_LENGTH = 1_000
BLOCK_DOCUMENTS = 10_000
SPLIT = "test"

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
_SYLLABLES = [consonant + vowel for consonant in _CONSONANTS for vowel in _VOWELS]

# Stream numbers under the seed: one per purpose, and per block for documents.
_VOCABULARY_STREAM = 0
_TOPIC_STREAM = 1
_QUERY_STREAM = 2
_DOCUMENT_STREAM = 3


@dataclass(frozen=True)
class CorpusShape:
    """The size of a synthetic collection and the seed that fixes its content."""

    documents: int
    queries: int = 500
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("documents", "queries"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.queries > self.documents:
            raise ValueError(f"queries ({self.queries}) cannot exceed documents ({self.documents})")

    @property
    def vocabulary_size(self) -> int:
        """Heaps' law with K = 40, beta = 1/2 over the expected number of tokens."""
        tokens = self.documents * MEDIAN_LENGTH * np.exp(LENGTH_SIGMA**2 / 2)
        return max(1_000, int(40 * np.sqrt(tokens)))

    @property
    def topics(self) -> int:
        return max(1, self.documents // 200)


def spell_word(rank: int) -> str:
    """The word of frequency rank ``rank``: its number in base 70, one syllable per digit."""
    base = len(_SYLLABLES)
    syllables = [_SYLLABLES[rank % base]]
    rank //= base
    while rank:
        rank -= 1
        syllables.append(_SYLLABLES[rank % base])
        rank //= base
    return "".join(reversed(syllables))


def vocabulary(size: int) -> np.ndarray:
    """``size`` distinct words, most frequent first, none of them a stopword."""
    words = []
    rank = 0
    while len(words) < size:
        word = spell_word(rank)
        if word not in STOPWORDS:
            words.append(word)
        rank += 1
    return np.array(words, dtype=object)


def zipf_weights(count: int) -> np.ndarray:
    weights = 1.0 / (np.arange(count, dtype=np.float64) + ZIPF_OFFSET) ** ZIPF_EXPONENT
    return weights / weights.sum()


def _sampler(weights: np.ndarray):
    cumulative = np.cumsum(weights)
    cumulative[-1] = 1.0

    def sample(rng: np.random.Generator, size: int) -> np.ndarray:
        return np.searchsorted(cumulative, rng.random(size), side="right")

    return sample


@dataclass(frozen=True)
class _Plan:
    """What every block needs: the words, each topic's words, each document's topic, the queries."""

    words: np.ndarray
    topic_words: np.ndarray  # (topics, TOPIC_WORDS) word ranks
    document_topic: np.ndarray  # (documents,)
    queries: list[tuple[str, str]]  # (query id, text)
    judgements: list[tuple[str, int, int]]  # (query id, document number, gain)
    inserted: dict[int, list[str]]  # document number -> query terms written into it


def _document_id(number: int) -> str:
    return f"doc{number:08d}"


def _plan(shape: CorpusShape) -> _Plan:
    words = vocabulary(shape.vocabulary_size)
    rng = np.random.default_rng([shape.seed, _VOCABULARY_STREAM])
    # Topic words come from the middle of the frequency range: neither the
    # common words every document has nor the rarest, which barely occur.
    low = min(200, len(words) // 10)
    high = max(len(words) // 2, low + TOPIC_WORDS)
    topic_words = np.stack(
        [rng.choice(np.arange(low, high), size=TOPIC_WORDS, replace=False) for _ in range(shape.topics)]
    )
    topic_rng = np.random.default_rng([shape.seed, _TOPIC_STREAM])
    document_topic = _sampler(zipf_weights(shape.topics))(topic_rng, shape.documents)
    # Shuffle which topic is popular so topic number says nothing.
    document_topic = topic_rng.permutation(shape.topics)[document_topic]
    members = {topic: np.flatnonzero(document_topic == topic) for topic in np.unique(document_topic)}

    query_rng = np.random.default_rng([shape.seed, _QUERY_STREAM])
    topic_sample = _sampler(zipf_weights(TOPIC_WORDS))
    queries, judgements = [], []
    inserted: dict[int, list[str]] = {}
    targets = query_rng.choice(shape.documents, size=shape.queries, replace=False)
    for index, target in enumerate(targets.tolist()):
        topic = int(document_topic[target])
        term_count = int(query_rng.integers(2, 5))
        terms = list(dict.fromkeys(words[topic_words[topic][topic_sample(query_rng, term_count * 3)]]))[
            :term_count
        ]
        common = str(words[int(query_rng.integers(0, 50))])
        query_id = f"q{index:06d}"
        queries.append((query_id, " ".join([*terms, common])))
        neighbours = members[topic][members[topic] != target]
        extra = min(int(query_rng.geometric(0.5)) - 1, 7, len(neighbours))
        relevant = [target, *query_rng.choice(neighbours, size=extra, replace=False).tolist()]
        for rank, document in enumerate(relevant):
            judgements.append((query_id, document, 2 if rank == 0 else 1))
            # The target holds every term; the others most of them.
            kept = terms if rank == 0 else [term for term in terms if query_rng.random() < 0.7] or terms[:1]
            inserted.setdefault(document, []).extend(kept)
    return _Plan(words, topic_words, document_topic, queries, judgements, inserted)


def _documents(shape: CorpusShape, plan: _Plan) -> Iterator[tuple[str, str, str]]:
    """(id, title, text) of every document, generated one block at a time."""
    background = _sampler(zipf_weights(len(plan.words)))
    topical = _sampler(zipf_weights(TOPIC_WORDS))
    for block_start in range(0, shape.documents, BLOCK_DOCUMENTS):
        numbers = np.arange(block_start, min(block_start + BLOCK_DOCUMENTS, shape.documents))
        rng = np.random.default_rng([shape.seed, _DOCUMENT_STREAM, block_start // BLOCK_DOCUMENTS])
        lengths = np.clip(
            np.rint(rng.lognormal(np.log(MEDIAN_LENGTH), LENGTH_SIGMA, len(numbers))), MIN_LENGTH, MAX_LENGTH
        ).astype(np.int64)
        total = int(lengths.sum())
        from_topic = rng.random(total) < TOPIC_SHARE
        topics = np.repeat(plan.document_topic[numbers], lengths)
        ranks = background(rng, total)
        ranks[from_topic] = plan.topic_words[topics[from_topic], topical(rng, int(from_topic.sum()))]
        tokens = plan.words[ranks]
        title_ranks = plan.topic_words[plan.document_topic[numbers][:, None], topical(rng, (len(numbers), 3))]
        ends = np.cumsum(lengths)
        for position, number in enumerate(numbers.tolist()):
            body = tokens[ends[position] - lengths[position] : ends[position]].tolist()
            for term in plan.inserted.get(number, ()):
                body.insert(int(rng.integers(0, len(body) + 1)), term)
            title = " ".join(plan.words[title_ranks[position]].tolist()).capitalize()
            yield _document_id(number), title, " ".join(body)


def write_collection(folder: str | os.PathLike, shape: CorpusShape) -> dict[str, Path]:
    """Write corpus.jsonl, queries.jsonl and qrels/test.tsv; each file appears only when complete."""
    folder = Path(folder)
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    plan = _plan(shape)
    files = {
        "corpus": folder / "corpus.jsonl",
        "queries": folder / "queries.jsonl",
        "qrels": folder / "qrels" / f"{SPLIT}.tsv",
    }

    def write(path: Path, lines: Iterator[str]) -> None:
        partial = path.with_name(path.name + ".partial")
        with partial.open("w", encoding="utf-8", newline="\n") as handle:
            for line in lines:
                handle.write(line + "\n")
        partial.replace(path)

    write(
        files["corpus"],
        (
            json.dumps({"_id": doc_id, "title": title, "text": text}, ensure_ascii=False)
            for doc_id, title, text in _documents(shape, plan)
        ),
    )
    write(files["queries"], (json.dumps({"_id": qid, "text": text}) for qid, text in plan.queries))
    write(
        files["qrels"],
        iter(
            ["query-id\tcorpus-id\tscore"]
            + [f"{qid}\t{_document_id(number)}\t{gain}" for qid, number, gain in plan.judgements]
        ),
    )
    return files
