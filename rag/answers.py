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
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from rag.bm25 import bm25_idf
from rag.chunking import Chunk
from rag.extractive import ExtractiveAnswer, extract_answer
from rag.labels import Judgement, Question, SpanLocation
from rag.prompts import PromptBudgetError, build_prompt
from rag.search import count_terms
from rag.text import analyze
from rag.tokens import TokenCounter, count_word_and_punctuation
from rag.verification import check_answer

SINGLE_DOCUMENT = "single_document"
MULTI_DOCUMENT = "multi_document"
UNANSWERABLE = "unanswerable"
ANSWERABLE = "answerable"
ALL = "all"
# Rows of the summary tables: every question, then the cohorts that behave differently.
GROUPS: tuple[str, ...] = (ALL, ANSWERABLE, SINGLE_DOCUMENT, MULTI_DOCUMENT, UNANSWERABLE)
DOCUMENT_SEPARATOR = ";"


@dataclass(frozen=True)
class GenerationSettings:
    """How a prompt is built and answered: the top ``k`` chunks, within ``budget`` tokens
    as measured by ``count_tokens``, answered when the best coverage reaches ``threshold``."""

    k: int = 5
    threshold: float = 0.5
    budget: int | None = None
    count_tokens: TokenCounter = count_word_and_punctuation

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"k must be a positive integer, got {self.k!r}")
        if not isinstance(self.threshold, int | float) or math.isnan(self.threshold):
            raise ValueError(f"the coverage threshold must be a number, got {self.threshold!r}")


@dataclass(frozen=True)
class AnswerRecord:
    """One question answered from one ranking.

    ``best_*`` describe the best-covering sentence of the prompt whether or
    not it was given (None when the prompt holds no sentence at all);
    ``answer`` is what the generator actually said. ``coverage`` is the best
    sentence's coverage, NaN without one. ``citation_passed`` and ``support``
    (the lowest support over the answer's claims) are None for abstentions,
    which cite nothing. ``pieces_in_prompt`` counts the evidence pieces that
    some source contains whole.
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
    coverage: float
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
    counts = count_terms([analyze(text, stem=stem) for text in indexed_texts])
    weights = bm25_idf(counts.document_frequency, len(indexed_texts))
    return dict(zip(counts.vocabulary.tolist(), weights.tolist(), strict=True))


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


def answer_question(
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
    cl100k_base tokens as well.
    """
    try:
        prompt = build_prompt(
            question.text, list(ranked_chunks[: settings.k]), settings.count_tokens, settings.budget
        )
    except PromptBudgetError as error:
        raise PromptBudgetError(f"question {question.question_id!r}: {error}") from None
    given = extract_answer(prompt, idf, threshold=settings.threshold)
    best = extract_answer(prompt, idf, threshold=-math.inf)  # the sentence the threshold judges
    prompt_chunks = {chunk.chunk_id for chunk in prompt.sources.values()}
    pieces = pieces or {}
    in_prompt = sum(1 for chunks in pieces.values() if prompt_chunks.intersection(chunks))

    found = isinstance(best, ExtractiveAnswer)
    best_chunk = prompt.sources[best.source_number] if found else None
    best_piece = quoted_piece(best.sentence, best_chunk.doc_id, question) if found else None
    answered = isinstance(given, ExtractiveAnswer)
    passed: bool | None = None
    support: float | None = None
    if answered:
        check = check_answer(given.text, prompt.source_texts)
        passed = check.supported
        support = min(claim.support for claim in check.claims) if check.claims else 0.0
    return AnswerRecord(
        question_id=question.question_id,
        type=question.type,
        answerable=question.answerable,
        group=question_group(question, documents),
        evidence_documents=tuple(documents),
        evidence_pieces=len(question.evidence),
        sources=len(prompt.sources),
        omitted=prompt.omitted,
        pieces_in_prompt=in_prompt,
        answered=answered,
        coverage=best.coverage if found else math.nan,
        answer=given.text,
        cited_source=given.source_number if answered else None,
        quotes_evidence=answered and best_piece is not None,
        best_sentence=best.sentence if found else None,
        best_source=best.source_number if found else None,
        best_chunk_id=best_chunk.chunk_id if found else None,
        best_document=best_chunk.doc_id if found else None,
        best_quoted_piece=best_piece,
        citation_passed=passed,
        support=support,
        prompt_tokens=count_word_and_punctuation(prompt.text),
        prompt_tokens_cl100k=count_cl100k(prompt.text) if count_cl100k else None,
    )


# Nullable dtypes, so that "not applicable" stays empty in the CSV instead of 0 or False.
_DTYPES = {
    "answerable": "boolean",
    "answered": "boolean",
    "quotes_evidence": "boolean",
    "citation_passed": "boolean",
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


def answers_frame(records: Sequence[AnswerRecord], **keys: str) -> pd.DataFrame:
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


def _members(frame: pd.DataFrame, group: str) -> pd.DataFrame:
    if group == ALL:
        return frame
    if group == ANSWERABLE:
        return frame[frame["answerable"].astype(bool)]
    return frame[frame["group"] == group]


def _mean(values: pd.Series) -> float:
    values = values.dropna()
    return float(values.mean()) if len(values) else math.nan


def summarize_answers(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Counts per ``keys`` and question group: what was answered, correct and refused.

    correct counts answers that quote labelled evidence; evidence_in_prompt
    counts answerable questions with at least one piece in some source (the
    ceiling for correct), all_evidence_in_prompt those with every piece;
    citation_pass_rate is over answered questions. Empty groups are left out.
    """
    rows = []
    for values, rows_of_key in frame.groupby(list(keys), sort=True):
        for group in GROUPS:
            members = _members(rows_of_key, group)
            if members.empty:
                continue
            answerable = members["answerable"].astype(bool)
            answered = members["answered"].astype(bool)
            pieces_in = members["pieces_in_prompt"]
            rows.append(
                {
                    **dict(zip(keys, values, strict=True)),
                    "group": group,
                    "questions": len(members),
                    "answered": int(answered.sum()),
                    "correct": int(members["quotes_evidence"].astype(bool).sum()),
                    "abstained": int((~answered).sum()),
                    "refused_unanswerable": int((~answered & ~answerable).sum()),
                    "evidence_in_prompt": int((answerable & (pieces_in > 0)).sum()),
                    "all_evidence_in_prompt": int(
                        (answerable & (pieces_in == members["evidence_pieces"])).sum()
                    ),
                    "correct_share": float(members["quotes_evidence"].astype(bool).mean()),
                    "citation_passed": int(members["citation_passed"].fillna(False).astype(bool).sum()),
                    "citation_pass_rate": (
                        float(members.loc[answered, "citation_passed"].astype(bool).mean())
                        if answered.any()
                        else math.nan
                    ),
                    "mean_prompt_tokens": _mean(members["prompt_tokens"].astype("float64")),
                    "mean_prompt_tokens_cl100k": _mean(members["prompt_tokens_cl100k"].astype("float64")),
                }
            )
    return pd.DataFrame(rows)


ABSTENTION_GROUPS: tuple[str, ...] = (ANSWERABLE, SINGLE_DOCUMENT, MULTI_DOCUMENT, UNANSWERABLE)


def abstention_tradeoff(
    frame: pd.DataFrame, thresholds: Sequence[float], keys: Sequence[str]
) -> pd.DataFrame:
    """What each threshold answers, gets right and refuses, per ``keys`` and question group.

    A question is answered at threshold t when its prompt has a best sentence
    whose coverage is at least t, exactly the generator's rule; the answer is
    that sentence whatever t is, so one run serves every threshold. For the
    unanswerable group, ``abstained`` is the number of refusals the threshold
    gets right.
    """
    if not len(thresholds):
        raise ValueError("give at least one threshold")
    rows = []
    for values, rows_of_key in frame.groupby(list(keys), sort=True):
        for threshold in sorted(thresholds):
            for group in ABSTENTION_GROUPS:
                members = _members(rows_of_key, group)
                if members.empty:
                    continue
                answered = members["coverage"].to_numpy(dtype=float) >= threshold  # NaN: never answered
                quotes = members["best_quoted_piece"].notna().to_numpy()
                rows.append(
                    {
                        **dict(zip(keys, values, strict=True)),
                        "threshold": float(threshold),
                        "group": group,
                        "questions": len(members),
                        "answered": int(answered.sum()),
                        "correct": int((answered & quotes).sum()),
                        "abstained": int((~answered).sum()),
                    }
                )
    return pd.DataFrame(rows)
