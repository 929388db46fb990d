"""A stronger offline reader: quote the sentence that answers, not the one that repeats the question.

The spec's extractive generator (:mod:`rag.answering.extractive`) scores a sentence by
the share of the question's idf weight it covers. That picks sentences that
restate the question: asked for the surface temperature of Titan, it quotes
the sentence saying a probe measured it. This reader keeps the quotation (an
answer is still one verbatim sentence of the sources, so it cannot invent a
number) but scores each candidate by four signals:

* **coverage**: the share of the question's idf weight found in the sentence
  or in its source's title and section, as in the extractive generator, so a
  sentence that never names its subject can still win;
* **proximity**: how close together the question's terms sit in the sentence
  (matched terms over the shortest window holding them, times the share of
  the question matched), so a sentence that mentions them in passing loses
  to one built around them;
* **type**: whether the sentence holds a value of the kind the question asks
  for (:mod:`rag.answering.answer_types`); a sentence without one is penalised;
* **similarity** (optional): the cosine between MiniLM embeddings of the
  question and the sentence, which sees paraphrase that term overlap cannot.
  It needs the ``dense`` extra and is given as a function, so this module
  stays pure; :class:`CachedSentenceEmbedder` is the edge that provides it
  through the embedding cache.

The reader answers when the best score reaches a threshold and abstains
otherwise. The threshold is not a guess: :func:`rag.measuring.thresholds.cross_validated_thresholds`
picks it on labelled questions, maximising correct minus wrong answers.
Scores are rounded to :data:`SCORE_DECIMALS` decimals before they are
compared, and ties go to the earlier source, then the earlier sentence, so a
BLAS kernel that moves the similarity in the seventh decimal cannot change
which sentence is quoted.
"""

from __future__ import annotations

import csv
import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.answering.answer_types import TIME, AnswerType, expected_type, has_expected_value
from rag.answering.extractive import ABSTENTION_TEXT, BestSentence, cite, default_unknown_idf, question_terms
from rag.answering.prompts import Prompt
from rag.chunking import Chunk
from rag.text import analyze, split_sentences, tokenize

# Weights of the four signals. Chosen on the bundled corpus's labelled
# questions (sentences100, top 5 chunks) and then frozen; see docs/answers.md.
COVERAGE_WEIGHT = 1.0
PROXIMITY_WEIGHT = 0.1
SIMILARITY_WEIGHT = 0.6
TYPE_PENALTY = 1.0
TOPIC_WEIGHT = 0.3
ENTITY_BOOST = 2.0
# A question term found only in the source's title or section counts this
# much. Full weight measured best on the bundled questions (0.5 and 0.7
# lost 1 to 6 correct answers per retriever): the label is often the only
# place a sentence's subject is named.
LABEL_WEIGHT = 1.0
_DURATION_FRAME = frozenset({"take", "takes", "need", "needs", "last", "lasts"})
# Three rules were removed after they were measured one at a time on the
# development and the held-out questions (results/reader_rules.csv): general
# synonym groups ("discover" met by "notice", "hot" by "temperature", ...),
# the adjective after "how" as a question term, and dropping the time units
# after numbers. Each raised correct minus wrong answers on the development
# questions, on which they had been chosen, and on none of the held-out files
# on the whole (docs/answers.md).
# Only in a question that asks for a duration is a year a span of time, so
# that "how long is a year on Venus" is answered by one "circuit" of the Sun
# while "in what year" is not answered by an orbit.
DURATION_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (("year", "circuit", "revolution"),)
# A sentence that opens with one of these words is about what the sentence
# before it names ("It made its closest approach on 24 Jan. 1986"): the
# previous sentence's terms count for it as the source's label does.
_REFERRING_OPENERS = frozenset("it its they their this these he she his her".split())
SCORE_DECIMALS = 4
# Which rows of results/reader_thresholds.csv give ``rag ask`` and the frozen
# reader of answers_heldout their thresholds: the pipeline's cross-validation
# over all development questions on the bundled corpus's sentences100 chunks,
# top 5, ranked by minilm (by the baseline bm25 in a grid without minilm), one
# row per reader (reader_minilm adds the MiniLM similarity, whose scores run
# higher). The values are read from that table (:func:`chosen_thresholds`),
# never restated here.
CHOSEN_THRESHOLD_ROWS = {"corpus": "solar_system", "chunker": "sentences100", "fold": "all"}
CHOSEN_THRESHOLD_RETRIEVERS = ("minilm", "bm25")


def chosen_thresholds(rows: Iterable[Mapping[str, str]], where: str) -> dict[str, float]:
    """Reader -> threshold from the rows of a reader_thresholds.csv (``where`` names it in errors)."""
    rows = [row for row in rows if all(row.get(key) == value for key, value in CHOSEN_THRESHOLD_ROWS.items())]
    for retriever in CHOSEN_THRESHOLD_RETRIEVERS:
        chosen = {row["reader"]: float(row["threshold"]) for row in rows if row.get("retriever") == retriever}
        if chosen:
            return chosen
    wanted = ", ".join(f"{key} {value}" for key, value in CHOSEN_THRESHOLD_ROWS.items())
    raise ValueError(
        f"{where}: no cross-validated reader threshold for {wanted} and retriever "
        f"{' or '.join(CHOSEN_THRESHOLD_RETRIEVERS)}"
    )


def read_chosen_thresholds(path: str | Path) -> dict[str, float]:
    """:func:`chosen_thresholds` of a reader_thresholds.csv file."""
    with open(path, newline="", encoding="utf-8") as table:
        return chosen_thresholds(csv.DictReader(table), str(path))


READER_NAMES = ("extractive", "reader")

# Similarity of a question to each of a list of sentences, in order.
Similarity = Callable[[str, Sequence[str]], Sequence[float]]


@dataclass(frozen=True)
class ReaderWeights:
    """How much each signal counts, and which of the reader's rules apply.

    ``type_penalty`` is subtracted when the type is missing. Each rule can
    be switched off so that its effect can be measured on the development
    and the held-out questions alike (:mod:`rag.ask.reader_rules`):
    ``duration_synonyms`` (:data:`DURATION_SYNONYM_GROUPS`),
    ``referring_context`` (a sentence opening with "it" is read with the
    sentence before), ``duration_frame`` (a duration question's
    "take"/"last" is not a term); ``entity_boost`` and ``label`` are the
    weights of named things and of terms found in a source's label.
    """

    coverage: float = COVERAGE_WEIGHT
    proximity: float = PROXIMITY_WEIGHT
    similarity: float = SIMILARITY_WEIGHT
    type_penalty: float = TYPE_PENALTY
    topic: float = TOPIC_WEIGHT
    entity_boost: float = ENTITY_BOOST
    label: float = LABEL_WEIGHT
    duration_synonyms: bool = True
    referring_context: bool = True
    duration_frame: bool = True


# The reader as it answers: every signal at its frozen weight, every rule on.
DEFAULT_WEIGHTS = ReaderWeights()


@dataclass(frozen=True)
class Candidate:
    """One sentence of the prompt's sources with its signals and its combined ``score``.

    ``similarity`` is None when no similarity function was given.
    """

    source_number: int
    position: int
    sentence: str
    label: str
    coverage: float
    proximity: float
    typed: bool
    similarity: float | None
    score: float

    @property
    def text(self) -> str:
        """The sentence with its citation inserted."""
        return cite(self.sentence, self.source_number)


@dataclass(frozen=True)
class Reading:
    """What the reader made of a prompt: the best candidate (None when the prompt has no
    sentence), whether it reached ``threshold``, and the question's expected type."""

    best: Candidate | None
    threshold: float
    answer_type: AnswerType

    @property
    def answered(self) -> bool:
        return self.best is not None and self.best.score >= self.threshold

    @property
    def text(self) -> str:
        return self.best.text if self.answered else ABSTENTION_TEXT


def chunk_sentences(chunk: Chunk) -> list[str]:
    """The sentences of a chunk as the readers quote them: whitespace collapsed."""
    return list(_sentences_of(chunk.text))


@functools.lru_cache(maxsize=1 << 14)
def _sentences_of(text: str) -> tuple[str, ...]:
    return tuple(" ".join(text[start:end].split()) for start, end in split_sentences(text))


def proximity(sentence_terms: Sequence[str], question: Sequence[str]) -> float:
    """Share of the question's terms in the sentence times their density in the shortest window
    holding all of them: 1 when every term occurs and they stand side by side."""
    wanted = set(question)
    if not wanted:
        return 0.0
    present = wanted.intersection(sentence_terms)
    if not present:
        return 0.0
    # Shortest window containing every present term (two pointers over positions).
    counts: dict[str, int] = {}
    covered, best, left = 0, len(sentence_terms), 0
    for right, term in enumerate(sentence_terms):
        if term in present:
            counts[term] = counts.get(term, 0) + 1
            covered += counts[term] == 1
        while covered == len(present):
            best = min(best, right - left + 1)
            leaving = sentence_terms[left]
            if leaving in present:
                counts[leaving] -= 1
                covered -= counts[leaving] == 0
            left += 1
    return (len(present) / len(wanted)) * (len(present) / best)


def _entity_terms(question: str) -> set[str]:
    """Terms of the capitalised words after the question's first: the things it is about."""
    words = re.findall(r"[^\W\d_]+", question)
    return {term for word in words[1:] if word[0].isupper() for term in analyze(word)}


def _question_terms(question: str, weights: ReaderWeights = ReaderWeights()) -> list[str]:
    """The extractive generator's question terms, less the frame words of a duration question
    ("how long does it take"): any duration takes."""
    terms = question_terms(question)
    answer_type = expected_type(question)
    if weights.duration_frame and TIME in answer_type.kinds:
        terms = [term for term in terms if term not in _DURATION_FRAME]
    return terms


def _weights(
    question: str, idf: Mapping[str, float], weights: ReaderWeights = ReaderWeights()
) -> dict[str, float]:
    """idf weight of each question term; named things ("Ceres", "Voyager") count ENTITY_BOOST
    times, because a sentence about another body answers a different question."""
    fallback = default_unknown_idf(idf)
    entities = _entity_terms(question)
    return {
        term: max(idf.get(term, fallback), 0.0) * (weights.entity_boost if term in entities else 1.0)
        for term in _question_terms(question, weights)
    }


def _stems(terms: Sequence[str]) -> list[str]:
    return list(_text_stems(" ".join(terms)))


@functools.lru_cache(maxsize=1 << 16)
def _text_stems(text: str) -> tuple[str, ...]:
    """A sentence's or label's stemmed terms. Cached: the reader scores the
    same pooled sentences for every question, and stemming was a third of its time."""
    return tuple(analyze(text, stem=True))


def _synonym_stems(table: Sequence[Sequence[str]]) -> dict[str, frozenset[str]]:
    """stem -> the stems of its group (itself included)."""
    groups: dict[str, frozenset[str]] = {}
    for group in table:
        stems = frozenset(_stems(group))
        for stem in stems:
            groups[stem] = groups.get(stem, frozenset()) | stems
    return groups


_DURATION_SYNONYMS = _synonym_stems(DURATION_SYNONYM_GROUPS)


def _aliases(
    question_stems: Sequence[str], answer_type: AnswerType, weights: ReaderWeights = ReaderWeights()
) -> dict[str, str]:
    """Sentence stem -> the question stem it stands for, for the question's terms with synonyms."""
    table = _DURATION_SYNONYMS if weights.duration_synonyms and TIME in answer_type.kinds else {}
    aliases: dict[str, str] = {}
    for stem in question_stems:
        for synonym in sorted(table.get(stem, ())):
            if synonym not in question_stems:
                aliases.setdefault(synonym, stem)
    return aliases


@functools.lru_cache(maxsize=1 << 16)
def _opens_with_reference(sentence: str) -> bool:
    words = tokenize(sentence)
    return bool(words) and words[0] in _REFERRING_OPENERS


@functools.lru_cache(maxsize=512)
def _scored_sentences(terms: tuple) -> dict[tuple[str, str, str], tuple[float, float]]:
    """(sentence, label, context) -> coverage and proximity, for one reading's weighted
    stems, aliases and label weight (``terms``): everything those two scores depend on.
    512 readings cover a question set read by two readers in turn, in tens of megabytes."""
    return {}


def read_candidates(
    prompt: Prompt,
    idf: Mapping[str, float],
    similarity: Similarity | None = None,
    weights: ReaderWeights = ReaderWeights(),
) -> list[Candidate]:
    """Every sentence of the prompt's sources, scored; in source then sentence order.

    Terms are weighed by ``idf`` (the analyser's plain terms, as retrieval
    indexes them) but matched by their Snowball stems, so "discovered" in
    the question finds "Discovery" in a section title and "rotate" finds
    "rotates".
    """
    question = prompt.question
    plain_weights = _weights(question, idf, weights)
    term_weights: dict[str, float] = {}
    for term, weight in plain_weights.items():
        stems = _stems([term])
        if stems:
            term_weights[stems[0]] = max(term_weights.get(stems[0], 0.0), weight)
    total = sum(term_weights.values())
    answer_type = expected_type(question)
    entity_stems = set(_stems(sorted(_entity_terms(question))))
    title_of = {number: chunk.title for number, chunk in prompt.sources.items()}
    aliases = _aliases(list(term_weights), answer_type, weights)

    # A chunk's label and each sentence's context (the sentence before it) recur
    # for every sentence of the chunk: their stems are looked up once per call.
    known: dict[str, list[str]] = {}

    def stems_of(text: str) -> list[str]:
        found = known.get(text)
        if found is None:
            found = known[text] = [aliases.get(term, term) for term in _text_stems(text)]
        return found

    def coverage_and_proximity(sentence: str, label: str, context: str) -> tuple[float, float]:
        sentence_terms = stems_of(sentence)
        in_sentence = set(sentence_terms)
        in_label = set(stems_of(label)) | set(stems_of(context))
        covered = sum(
            weight * (1.0 if term in in_sentence else weights.label)
            for term, weight in term_weights.items()
            if term in in_sentence or term in in_label
        )
        coverage = covered / total if total > 0 else 0.0
        return coverage, proximity(sentence_terms, list(term_weights))

    # The same sentence is read again for the same terms: in the pool and then in
    # the prompt of rag ask's reader, by the reader with and without MiniLM.
    scored = _scored_sentences((tuple(term_weights.items()), tuple(aliases.items()), weights.label))

    entries: list[tuple[int, int, str, str, str]] = []
    for number, chunk in prompt.sources.items():
        previous = ""
        for position, sentence in enumerate(chunk_sentences(chunk)):
            context = previous if weights.referring_context and _opens_with_reference(sentence) else ""
            entries.append((number, position, sentence, chunk.label, context))
            previous = sentence
    similarities: list[float | None] = [None] * len(entries)
    if similarity is not None and entries:
        values = similarity(question, [sentence for _, _, sentence, _, _ in entries])
        similarities = [round(float(value), SCORE_DECIMALS) for value in values]
    candidates = []
    for (number, position, sentence, label, context), similar in zip(entries, similarities, strict=True):
        key = (sentence, label, context)
        found = scored.get(key)
        if found is None:
            found = scored[key] = coverage_and_proximity(sentence, label, context)
        coverage, near = found
        typed = has_expected_value(sentence, answer_type, question, label)
        on_topic = bool(entity_stems) and bool(entity_stems & set(_text_stems(title_of[number])))
        score = weights.coverage * coverage + weights.proximity * near + weights.topic * on_topic
        if similar is not None:
            score += weights.similarity * similar
        if answer_type.constrains and not typed:
            score -= weights.type_penalty
        candidates.append(
            Candidate(
                source_number=number,
                position=position,
                sentence=sentence,
                label=label,
                coverage=round(coverage, SCORE_DECIMALS),
                proximity=round(near, SCORE_DECIMALS),
                typed=typed,
                similarity=similar,
                score=round(score, SCORE_DECIMALS),
            )
        )
    return candidates


def read(
    prompt: Prompt,
    idf: Mapping[str, float],
    threshold: float,
    similarity: Similarity | None = None,
    weights: ReaderWeights = ReaderWeights(),
) -> Reading:
    """The best-scoring sentence, answered when its score reaches ``threshold``.

    Ties go to the earlier source, then the earlier sentence.
    """
    if not isinstance(threshold, int | float) or threshold != threshold:
        raise ValueError(f"reader threshold must be a number, got {threshold!r}")
    best: Candidate | None = None
    for candidate in read_candidates(prompt, idf, similarity, weights):
        if best is None or candidate.score > best.score:
            best = candidate
    return Reading(best=best, threshold=float(threshold), answer_type=expected_type(prompt.question))


def best_sentence(
    prompt: Prompt, idf: Mapping[str, float], similarity: Similarity | None = None
) -> BestSentence | None:
    """The reader's ``read`` (rag.kinds): its best-scoring sentence at any threshold, None without one."""
    best = read(prompt, idf, -math.inf, similarity).best
    if best is None:
        return None
    return BestSentence(best.sentence, best.source_number, best.score, best.coverage)


# --------------------------------------------------------------------------
# The similarity through the embedding cache (the dense extra)
# --------------------------------------------------------------------------

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# The embedder entries' default token limit: the same namespace as the
# pipeline's minilm retriever, so the two share cached vectors.
DEFAULT_MAX_TOKENS = 256


def dense_available(model: str = DEFAULT_MODEL) -> bool:
    """Whether the packages the MiniLM similarity needs can be imported."""
    from rag.retrieval.dense.sentence_embeddings import missing_packages

    return not missing_packages(model)


class CachedSentenceEmbedder:
    """MiniLM embeddings of texts, read from and added to the embedding cache in ``folder``.

    Vectors are kept by text digest under the encoder's namespace, exactly as
    the minilm retriever stores them, so a sentence encoded once is never
    encoded again by either. New vectors are written as one shard by
    :meth:`save`; until then they live in memory.
    """

    def __init__(
        self,
        folder: str | Path,
        model: str = DEFAULT_MODEL,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        report: Callable[[str], object] | None = None,
    ):
        """``report`` receives a progress line every few seconds of encoding (rag.progress)."""
        import importlib.metadata

        from rag.formats.bundles import source_digest
        from rag.retrieval.dense import embedder
        from rag.retrieval.dense.embedding_cache import EncoderSettings, encoder_fingerprint
        from rag.retrieval.dense.embedding_shards import read_embedding_shards

        self.model = model
        self.max_tokens = max_tokens
        self.report = report
        settings = EncoderSettings(
            model=model,
            max_tokens=max_tokens,
            fingerprint=encoder_fingerprint(
                source_digest([embedder]), importlib.metadata.version(embedder.MODEL_PACKAGES[model])
            ),
        )
        self.folder = Path(folder, *settings.namespace())
        self.cached, self.problems = read_embedding_shards(self.folder)
        self.fresh: dict = {}

    def _encode(self, texts: list[str]):
        from rag.retrieval.dense.sentence_embeddings import encode_texts

        if self.report is None:
            return encode_texts(self.model, texts, max_tokens=self.max_tokens, workers=1)
        from rag.progress import Progress

        progress = Progress(f"encoded texts with {self.model}", len(texts), self.report)
        return encode_texts(
            self.model, texts, max_tokens=self.max_tokens, workers=1, progress=progress.callback()
        )

    def embed(self, texts: Sequence[str]):
        """Unit float32 rows for ``texts``, encoding only the texts not cached yet."""
        from rag.retrieval.dense.embedding_cache import embed_with_cache

        vectors, fresh, _ = embed_with_cache(list(texts), {**self.cached, **self.fresh}, self._encode)
        self.fresh.update(fresh)
        return vectors

    def preload(self, path: str | Path) -> int:
        """Take the vectors of a file written by :func:`write_prompt_vectors` as cached; returns how many.

        They come from the same encoder (the file is built through this
        class's cache), so a text found there is never encoded again.
        """
        from rag.retrieval.dense.embedding_shards import read_embedding_file

        vectors = read_embedding_file(path)
        self.cached.update(vectors)
        return len(vectors)

    def similarity(self, question: str, sentences: Sequence[str]) -> list[float]:
        """Cosine of the question with each sentence (the vectors have unit length)."""
        if not sentences:
            return []
        vectors = self.embed([question, *sentences]).astype("float64")
        return (vectors[1:] @ vectors[0]).tolist()

    def save(self) -> Path | None:
        """Store the vectors encoded since loading as one new shard; None when there are none."""
        from rag.retrieval.dense.embedding_shards import write_embedding_shard

        path = write_embedding_shard(self.folder, self.fresh)
        self.cached.update(self.fresh)
        self.fresh = {}
        return path


def prompt_texts(questions: Sequence[str], chunks: Iterable[Chunk]) -> list[str]:
    """Every text the MiniLM similarity may be asked about for one chunk set, distinct and sorted.

    That is each question and each sentence of each chunk, as the reader
    quotes it. The answer jobs of one chunk set share most of their prompts'
    sentences; encoded once, ahead of them, no job encodes what another is
    encoding at the same moment.
    """
    texts = set(questions)
    for chunk in chunks:
        texts.update(chunk_sentences(chunk))
    return sorted(texts)


def write_prompt_vectors(embedder: CachedSentenceEmbedder, texts: Sequence[str], path: str | Path) -> int:
    """Embed ``texts`` through the cache, store the new vectors there and all of them at ``path``.

    Returns how many texts were encoded (not found in the cache).
    """
    from rag.retrieval.dense.embedding_cache import text_key
    from rag.retrieval.dense.embedding_shards import write_embedding_file

    vectors = embedder.embed(texts)
    encoded = len(embedder.fresh)
    embedder.save()
    write_embedding_file(path, {text_key(text): vector for text, vector in zip(texts, vectors, strict=True)})
    return encoded
