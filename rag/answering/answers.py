"""Answer experiments: the extractive generator over retrieved chunks, judged by the labels.

Retrieval metrics say whether the evidence reached the prompt; these records
say what the generator then made of it. Each question gets a prompt of its
top k chunks, one extractive answer (or an abstention), a citation check of
that answer, and a verdict against the labelled evidence. Keeping the best
sentence even when the generator withholds it lets the abstention trade-off
be computed for any threshold from a single run.

What counts as correct is deliberately narrow and mechanical, so that it can
be computed without a judge: the answer must quote labelled evidence (see
:func:`quoted_piece`). A sentence that states the right fact in other words
counts as wrong, and a question whose evidence has several pieces (a
comparison across two documents) is correct when any one piece is quoted,
because a single quoted sentence can hold at most one of them.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag.answering.extractive import ABSTENTION_TEXT, DEFAULT_COVERAGE_THRESHOLD, BestSentence, cite
from rag.answering.prompts import Prompt, PromptBudgetError, build_prompt
from rag.answering.reader import Similarity
from rag.answering.tokens import TokenCounter, count_word_and_punctuation
from rag.answering.verification import check_answer, check_responsive
from rag.chunking import Chunk
from rag.documents.blocks import Document
from rag.evaluation.chunk_judging import Judgement, judge_chunks
from rag.kinds import GENERATOR_KINDS, behaviour
from rag.labels import Question, SpanLocation, locate_spans
from rag.text import analyze

SINGLE_DOCUMENT = "single_document"
MULTI_DOCUMENT = "multi_document"
UNANSWERABLE = "unanswerable"
ANSWERABLE = "answerable"
ALL = "all"
# Rows of the summary tables: every question, then the cohorts that behave differently.
GROUPS: tuple[str, ...] = (ALL, ANSWERABLE, SINGLE_DOCUMENT, MULTI_DOCUMENT, UNANSWERABLE)
DOCUMENT_SEPARATOR = ";"
# An offline kind's threshold policy (rag.kinds.Kind.threshold) whose threshold is the answers section's.
CONFIGURED_THRESHOLD = "configured"
CROSS_VALIDATED_THRESHOLD = "cross_validated"
# The rule of the offline kind whose answer file is the stem's own ({stem}.parquet).
OWN_FILE_RULE = "answer"


def offline_kinds() -> tuple[str, ...]:
    """The generator kinds that pick a sentence of the prompt (their ``read``), in table order."""
    return tuple(name for name, kind in GENERATOR_KINDS.items() if kind.read is not None)


@dataclass(frozen=True)
class GenerationSettings:
    """How a prompt is built and answered: the top ``k`` chunks, within ``budget`` tokens
    as measured by ``count_tokens``, read by ``reader`` (an offline generator kind of
    the table of kinds: the spec's ``extractive`` generator, the ``reader`` of
    :mod:`rag.answering.reader`, optionally with a MiniLM ``similarity``, ...),
    answered when the best score reaches ``threshold``."""

    k: int = 5
    threshold: float = DEFAULT_COVERAGE_THRESHOLD
    budget: int | None = None
    count_tokens: TokenCounter = count_word_and_punctuation
    reader: str = "extractive"
    similarity: Similarity | None = None

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"k must be a positive integer, got {self.k!r}")
        if not isinstance(self.threshold, int | float) or math.isnan(self.threshold):
            raise ValueError(f"the coverage threshold must be a number, got {self.threshold!r}")
        offline = offline_kinds()
        if self.reader not in offline:
            raise ValueError(f"unknown reader {self.reader!r}; choose one of {list(offline)}")
        if self.similarity is not None and "similarity" not in GENERATOR_KINDS[self.reader].parameters:
            raise ValueError(f"the {self.reader} generator takes no similarity")


@dataclass(frozen=True)
class AnswerRecord:
    """One question answered from one ranking.

    ``best_*`` describe the best sentence of the prompt whether or not it
    was given (None when the prompt holds no sentence at all); ``answer`` is
    what the reader actually said. ``score`` is the best sentence's score,
    the number ``threshold`` is compared with (NaN without a sentence); for
    the extractive generator it is its coverage, for the reader the combined
    score of :mod:`rag.answering.reader`, whose ``coverage`` is then one of its parts.
    ``citation_passed`` (the same verdict as ``faithful``), ``support`` (the
    lowest support over the answer's claims) and ``responsive`` (the answer
    holds a value of the ``expected_type``) are None for abstentions, which
    say nothing; the ``best_*`` verdicts judge the best sentence regardless,
    so that another threshold can be applied later without answering again.
    ``pieces_in_prompt`` counts the evidence pieces that some source
    contains whole.
    """

    question_id: str
    type: str
    answerable: bool
    group: str
    evidence_documents: tuple[str, ...]
    evidence_pieces: int
    sources: int
    omitted: int
    pieces_in_prompt: int
    answered: bool
    threshold: float
    score: float
    coverage: float
    expected_type: str
    answer: str
    cited_source: int | None
    quotes_evidence: bool
    best_sentence: str | None
    best_source: int | None
    best_chunk_id: str | None
    best_document: str | None
    best_quoted_piece: int | None
    citation_passed: bool | None
    support: float | None
    faithful: bool | None
    responsive: bool | None
    best_faithful: bool | None
    best_support: float | None
    best_responsive: bool | None
    prompt_tokens: int
    prompt_tokens_cl100k: int | None

    @property
    def abstained(self) -> bool:
        return not self.answered


def collection_idf(indexed_texts: Sequence[str], stem: bool = False) -> dict[str, float]:
    """The positive (Lucene) BM25 idf of every term of a collection.

    The extractive generator weighs question terms by how rare they are in
    the collection the sources come from, the same weights BM25 ranks with.
    """
    if not indexed_texts:
        raise ValueError("cannot compute an idf over an empty collection")
    # rag.retrieval.bm25.bm25_idf (its lucene variant) over the document frequencies,
    # both written out here: the BM25 module and its term matrix import scipy, which
    # costs an answer job a fifth of a second. tests/unit/answering/test_answers.py checks they agree.
    frequency = Counter(term for text in indexed_texts for term in set(analyze(text, stem=stem)))
    vocabulary = sorted(frequency)
    document_frequency = np.array([frequency[term] for term in vocabulary], dtype=np.float64)
    n_chunks = len(indexed_texts)
    weights = np.log1p((n_chunks - document_frequency + 0.5) / (document_frequency + 0.5))
    return dict(zip(vocabulary, weights.tolist(), strict=True))


def evidence_documents(questions: Iterable[Question], locations: Iterable[SpanLocation]) -> dict[str, tuple]:
    """The documents holding each question's evidence, in id order (empty when unanswerable)."""
    found: dict[str, set[str]] = {question.question_id: set() for question in questions}
    for location in locations:
        if location.question_id in found:
            found[location.question_id].add(location.doc_id)
    return {question_id: tuple(sorted(documents)) for question_id, documents in found.items()}


def question_group(question: Question, documents: Collection[str]) -> str:
    """unanswerable, single_document or multi_document: the cohorts that answer differently."""
    if not question.answerable:
        return UNANSWERABLE
    return SINGLE_DOCUMENT if len(documents) <= 1 else MULTI_DOCUMENT


def evidence_chunks(judgements: Iterable[Judgement]) -> dict[str, dict[int, set[str]]]:
    """question id -> piece -> the chunks that contain the piece whole."""
    pieces: dict[str, dict[int, set[str]]] = {}
    for judgement in judgements:
        pieces.setdefault(judgement.question_id, {}).setdefault(judgement.piece, set()).add(
            judgement.chunk_id
        )
    return pieces


def _spacing(text: str) -> str:
    return " ".join(text.split())


def quoted_piece(sentence: str, document: str, question: Question) -> int | None:
    """The first evidence piece that ``sentence``, taken from ``document``, quotes; None otherwise.

    A sentence quotes a piece when, after collapsing runs of whitespace, it
    contains one of the piece's alternative spans or is contained in one
    (spans may be part of a sentence or run over several), and the span is
    labelled in the same document (a span without a document matches any).
    The comparison is exact and case-sensitive: the generator quotes
    verbatim, so anything looser would credit sentences that merely share
    words with the evidence.
    """
    quote = _spacing(sentence)
    if not quote:
        return None
    for piece, evidence in enumerate(question.evidence):
        for span in evidence.spans:
            if span.document is not None and span.document != document:
                continue
            text = _spacing(span.text)
            if text in quote or quote in text:
                return piece
    return None


def best_sentence(
    prompt: Prompt, idf: Mapping[str, float], settings: GenerationSettings
) -> BestSentence | None:
    """The sentence the reader would quote at any threshold; None when the prompt has none.

    The reader's kind is resolved through the table of kinds (its ``read``
    behaviour, rag.kinds), so an offline generator kind is one module and one entry there.
    """
    return behaviour(settings.reader, "read")(prompt, idf, settings.similarity)


def answer_and_judge(
    question: Question,
    ranked_chunks: Sequence[Chunk],
    idf: Mapping[str, float],
    settings: GenerationSettings,
    pieces: Mapping[int, Collection[str]] | None = None,
    documents: Sequence[str] = (),
    count_cl100k: TokenCounter | None = None,
) -> AnswerRecord:
    """Build the prompt from the top ``settings.k`` chunks, answer it and judge the answer.

    ``pieces`` maps each evidence piece to the chunks containing it (to count
    the evidence that reached the prompt), ``documents`` are the documents
    holding the evidence, and ``count_cl100k`` optionally counts the prompt's
    cl100k_base tokens as well. For the extractive generator the answer is
    exactly :func:`rag.answering.extractive.extract_answer`'s at ``settings.threshold``.
    """
    return answer_question_by_readers(
        question, ranked_chunks, idf, [settings], pieces, documents, count_cl100k
    )[0]


def _shared_prompt_settings(readers: Sequence[GenerationSettings]) -> GenerationSettings:
    """The settings that build the prompt, which every reader of one job must share."""
    if not readers:
        raise ValueError("answering needs at least one reader's settings")
    first = readers[0]
    for other in readers[1:]:
        if (other.k, other.budget, other.count_tokens) != (first.k, first.budget, first.count_tokens):
            raise ValueError(
                "readers answered together must share k, budget and token counter: "
                f"{first.reader} has {(first.k, first.budget)}, {other.reader} {(other.k, other.budget)}"
            )
    return first


def answer_question_by_readers(
    question: Question,
    ranked_chunks: Sequence[Chunk],
    idf: Mapping[str, float],
    readers: Sequence[GenerationSettings],
    pieces: Mapping[int, Collection[str]] | None = None,
    documents: Sequence[str] = (),
    count_cl100k: TokenCounter | None = None,
) -> list[AnswerRecord]:
    """:func:`answer_and_judge` for several readers of one prompt, one record per reader.

    The readers differ only in how they read (reader, similarity, threshold):
    the prompt, its token counts and the evidence it holds are computed once,
    and a best sentence two readers both pick is checked once.
    """
    from rag.answering.answer_types import expected_type

    shared = _shared_prompt_settings(readers)
    try:
        prompt = build_prompt(
            question.text, list(ranked_chunks[: shared.k]), shared.count_tokens, shared.budget
        )
    except PromptBudgetError as error:
        raise PromptBudgetError(f"question {question.question_id!r}: {error}") from None
    prompt_chunks = {chunk.chunk_id for chunk in prompt.sources.values()}
    pieces = pieces or {}
    in_prompt = sum(1 for chunks in pieces.values() if prompt_chunks.intersection(chunks))
    common = dict(
        question_id=question.question_id,
        type=question.type,
        answerable=question.answerable,
        group=question_group(question, documents),
        evidence_documents=tuple(documents),
        evidence_pieces=len(question.evidence),
        sources=len(prompt.sources),
        omitted=prompt.omitted,
        pieces_in_prompt=in_prompt,
        expected_type="|".join(expected_type(question.text).kinds),
        prompt_tokens=count_word_and_punctuation(prompt.text),
        prompt_tokens_cl100k=count_cl100k(prompt.text) if count_cl100k else None,
    )
    checks: dict[tuple[str, int], tuple] = {}

    def judge(best: BestSentence) -> tuple:
        """The best sentence's quoted piece and its checks: faithful, support, responsive."""
        key = (best.sentence, best.source_number)
        if key not in checks:
            chunk = prompt.sources[best.source_number]
            quoted = cite(best.sentence, best.source_number)
            check = check_answer(quoted, prompt.source_texts)
            support = min(claim.support for claim in check.claims) if check.claims else 0.0
            labels = {number: source.label for number, source in prompt.sources.items()}
            responsive = check_responsive(quoted, question.text, labels)
            checks[key] = (
                quoted_piece(best.sentence, chunk.doc_id, question),
                check.supported,
                support,
                responsive,
            )
        return checks[key]

    return [
        _reader_record(prompt, best_sentence(prompt, idf, settings), settings, judge, common)
        for settings in readers
    ]


def _reader_record(
    prompt: Prompt, best: BestSentence | None, settings: GenerationSettings, judge: Callable, common: dict
) -> AnswerRecord:
    """One reader's record of a prompt: its best sentence, answered at its threshold, and the verdicts."""
    found = best is not None
    best_chunk = prompt.sources[best.source_number] if found else None
    best_piece, best_faithful, best_support, best_responsive = (
        judge(best) if found else (None, None, None, None)
    )
    answered = found and best.score >= settings.threshold
    return AnswerRecord(
        **common,
        answered=answered,
        threshold=float(settings.threshold),
        score=best.score if found else math.nan,
        coverage=best.coverage if found else math.nan,
        answer=cite(best.sentence, best.source_number) if answered else ABSTENTION_TEXT,
        cited_source=best.source_number if answered else None,
        quotes_evidence=answered and best_piece is not None,
        best_sentence=best.sentence if found else None,
        best_source=best.source_number if found else None,
        best_chunk_id=best_chunk.chunk_id if found else None,
        best_document=best_chunk.doc_id if found else None,
        best_quoted_piece=best_piece,
        citation_passed=best_faithful if answered else None,
        support=best_support if answered else None,
        faithful=best_faithful if answered else None,
        responsive=best_responsive if answered else None,
        best_faithful=best_faithful,
        best_support=best_support,
        best_responsive=best_responsive,
    )


def answer_questions(
    questions: Sequence[Question],
    documents: Sequence[Document],
    prompt_chunks: Callable[[Question], Sequence[Chunk]],
    judged_chunks: Sequence[Chunk],
    idf: Mapping[str, float],
    settings: GenerationSettings,
    count_cl100k: TokenCounter | None = None,
) -> list[AnswerRecord]:
    """Answer every question from the chunks ``prompt_chunks`` gives it, judged by the labels.

    The one loop behind both answer scripts: the ranked chunks of a
    retriever and the lead summaries differ only in which chunks reach the
    prompt. ``judged_chunks`` are the chunks evidence is looked for in (to
    count the evidence pieces each prompt holds). A prompt that cannot fit
    the budget is an error naming config['answers']['budget'].
    """
    return answer_questions_by_readers(
        questions, documents, prompt_chunks, judged_chunks, idf, [settings], count_cl100k
    )[0]


def answer_questions_by_readers(
    questions: Sequence[Question],
    documents: Sequence[Document],
    prompt_chunks: Callable[[Question], Sequence[Chunk]],
    judged_chunks: Sequence[Chunk],
    idf: Mapping[str, float],
    readers: Sequence[GenerationSettings],
    count_cl100k: TokenCounter | None = None,
) -> list[list[AnswerRecord]]:
    """:func:`answer_questions` for several readers at once: per reader, its records.

    One job answers a ranking with every reader (workflow rule read_answers),
    so the evidence is located, and each prompt built and counted, once for all of them.
    """
    shared = _shared_prompt_settings(readers)
    locations = locate_spans(questions, documents)
    holding = evidence_documents(questions, locations)
    pieces = evidence_chunks(judge_chunks(questions, locations, list(judged_chunks)))
    try:
        per_question = [
            answer_question_by_readers(
                question,
                prompt_chunks(question),
                idf,
                readers,
                pieces.get(question.question_id, {}),
                holding[question.question_id],
                count_cl100k,
            )
            for question in questions
        ]
    except PromptBudgetError as error:
        raise PromptBudgetError(f"config['answers']['budget'] = {shared.budget}: {error}") from None
    return [[records[index] for records in per_question] for index in range(len(readers))]


# Nullable dtypes, so that "not applicable" stays empty in the CSV instead of 0 or False.
_DTYPES = {
    "answerable": "boolean",
    "answered": "boolean",
    "quotes_evidence": "boolean",
    "citation_passed": "boolean",
    "faithful": "boolean",
    "responsive": "boolean",
    "best_faithful": "boolean",
    "best_responsive": "boolean",
    "best_support": "float64",
    "score": "float64",
    "threshold": "float64",
    "cited_source": "Int64",
    "best_source": "Int64",
    "best_quoted_piece": "Int64",
    "prompt_tokens": "Int64",
    "prompt_tokens_cl100k": "Int64",
    "coverage": "float64",
    "support": "float64",
}
ANSWER_COLUMNS: list[str] = [field.name for field in dataclasses.fields(AnswerRecord)]
ANSWER_COLUMNS.insert(ANSWER_COLUMNS.index("answered") + 1, "abstained")


def reader_answers_frame(records: Sequence[AnswerRecord], **keys: str) -> pd.DataFrame:
    """Records as a table, led by constant ``keys`` columns (corpus, chunker, retriever)."""
    rows = []
    for record in records:
        row = dataclasses.asdict(record)
        row["abstained"] = record.abstained
        row["evidence_documents"] = DOCUMENT_SEPARATOR.join(record.evidence_documents)
        rows.append(row)
    frame = pd.DataFrame(rows, columns=ANSWER_COLUMNS).astype(_DTYPES | {"abstained": "boolean"})
    for position, (name, value) in enumerate(keys.items()):
        frame.insert(position, name, value)
    return frame


# --------------------------------------------------------------------------
# Settings from the pipeline's canonical answers section
# --------------------------------------------------------------------------


def settings_from_config(
    generation: Mapping,
    reader: Mapping,
    embedding_cache: str | None = None,
    prompt_vectors: Sequence[str] = (),
) -> tuple[GenerationSettings, object | None]:
    """Generation settings for one reader, and the sentence embedder to save afterwards (or None).

    ``reader`` is one of the canonical answers section's ``readers``
    (:func:`rag.answering.config_checks.offline_readers`: its ``name``, its
    ``kind`` and its settings, the reader's from
    :func:`rag.answering.config_checks.canonical_reader`); a ``minilm`` similarity reads
    and extends the embedding cache in ``embedding_cache``. The reader's
    threshold here is only provisional: the tables apply the cross-validated
    one (:func:`rag.measuring.thresholds.cross_validated_thresholds`). ``prompt_vectors`` are files of
    :func:`rag.answering.reader.write_prompt_vectors` whose vectors the
    similarity takes as cached.
    """
    from rag.answering.tokens import get_token_counter

    similarity, embedder = None, None
    kind = GENERATOR_KINDS[reader["kind"]]
    if reader.get("similarity") == "minilm":
        from rag.answering.reader import CachedSentenceEmbedder

        embedder = CachedSentenceEmbedder(embedding_cache or "cache/embeddings")
        for path in prompt_vectors:
            embedder.preload(path)
        similarity = embedder.similarity
    # A cross-validated threshold is applied later by the tables; without one the reader always answers.
    configured = kind.threshold == CONFIGURED_THRESHOLD
    settings = GenerationSettings(
        k=generation.get("k", 1),
        threshold=generation["threshold"] if configured else -math.inf,
        budget=generation["budget"],
        count_tokens=get_token_counter(generation["token_counter"]),
        reader=kind.name,
        similarity=similarity,
    )
    return settings, embedder


def reader_frames(
    questions: Sequence[Question],
    documents: Sequence[Document],
    prompt_chunks: Callable[[Question], Sequence[Chunk]],
    judged_chunks: Sequence[Chunk],
    idf: Mapping[str, float],
    generation: Mapping,
    readers: Sequence[Mapping],
    embedding_cache: str | None = None,
    count_cl100k: TokenCounter | None = None,
    prompt_vectors: Sequence[str] = (),
    **keys: str,
) -> list[tuple[pd.DataFrame, object | None]]:
    """Each reader's answer table, led by ``keys`` and its name, and its sentence embedder to save.

    The answer jobs' one call: ``generation`` and each of ``readers`` are the
    rule's canonical params (:func:`settings_from_config`), answered together
    (:func:`answer_questions_by_readers`).
    """
    configured = [
        settings_from_config(generation, reader, embedding_cache, prompt_vectors) for reader in readers
    ]
    answered = answer_questions_by_readers(
        questions,
        documents,
        prompt_chunks,
        judged_chunks,
        idf,
        [settings for settings, _ in configured],
        count_cl100k,
    )
    return [
        (reader_answers_frame(records, **keys, reader=reader["name"]), embedder)
        for reader, (_, embedder), records in zip(readers, configured, answered, strict=True)
    ]


def reader_outputs(readers: Sequence[Mapping], outputs: Sequence[str], ending: str = "parquet") -> list[str]:
    """The file of each reader of a job, in the readers' order; a mismatch is an error.

    A reader's file is named after it (``{stem}.{name}.{ending}``: its answers,
    or its traces with ``ending`` jsonl); the extractive generator's, whose
    kind has its own rule (answer), is the stem's own (``{stem}.{ending}``).
    """
    names = [reader["name"] for reader in readers]
    if len(outputs) != len(names):
        raise ValueError(f"{len(names)} readers ({names}) for {len(outputs)} files ending in .{ending}")
    for reader, name, path in zip(readers, names, outputs, strict=True):
        own_file = GENERATOR_KINDS[reader["kind"]].rule == OWN_FILE_RULE
        if not own_file and not str(path).endswith(f".{name}.{ending}"):
            raise ValueError(f"reader {name!r}: its file must end in .{name}.{ending}, not {path!r}")
    return [str(path) for path in outputs]


def describe_answers(frame: pd.DataFrame, what: str) -> str:
    """The log line of an answer job: best sentences quoting evidence, evidence in the prompt."""
    answerable = frame["answerable"].astype(bool)
    return (
        f"{what}: {len(frame)} questions, the best sentence quotes the evidence for "
        f"{int(frame['best_quoted_piece'].notna().sum())}; some evidence in the prompt for "
        f"{int((answerable & (frame['pieces_in_prompt'] > 0)).sum())}, all of it for "
        f"{int((answerable & (frame['pieces_in_prompt'] == frame['evidence_pieces'])).sum())}"
    )
