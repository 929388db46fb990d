"""Retrieval metrics over evidence pieces and graded chunk gains.

Labels are independent of the chunker: a question has pieces of evidence, and
each piece maps to the chunks that contain it (any of its alternative spans)
with a gain. Recall counts pieces, not chunks, so a fact that happens to be
split over three overlapping chunks is found once, not three times. nDCG's
ideal ranking is built from every relevant chunk in the collection, never from
the retrieved list: dividing by the retrieved list's own ideal would reward a
retriever for missing relevant chunks.

Questions without evidence (unanswerable ones) have no recall; excluding them
is the caller's job, and passing one is an error rather than a silent zero.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from rag.labels import Question

# piece id -> {chunk id: gain}
Relevance = Mapping[str, Mapping[str, float]]

# Metrics that look at the whole ranked list carry this k.
WHOLE_LIST = 0

# The columns of a qrels table (work/qrels/<corpus>/<chunker>.parquet), as the label rule writes them.
QRELS_COLUMNS = ["question_id", "piece", "chunk_id", "gain"]


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def _check_ranking(ranked: Sequence[str]) -> None:
    seen: set[str] = set()
    for chunk_id in ranked:
        if chunk_id in seen:
            raise ValueError(f"chunk {chunk_id!r} appears twice in one ranking")
        seen.add(chunk_id)


def _check_relevance(relevance: Relevance) -> None:
    if not relevance:
        raise ValueError("the question has no evidence pieces; leave unanswerable questions out")
    for piece, chunks in relevance.items():
        for chunk_id, gain in chunks.items():
            if not np.isfinite(gain) or gain < 0:
                raise ValueError(f"piece {piece!r}: chunk {chunk_id!r} has invalid gain {gain!r}")


def chunk_gains(relevance: Relevance) -> dict[str, float]:
    """Each relevant chunk's gain: the largest over the pieces it contains."""
    gains: dict[str, float] = {}
    for chunks in relevance.values():
        for chunk_id, gain in chunks.items():
            gains[chunk_id] = max(gains.get(chunk_id, 0.0), float(gain))
    return gains


def recall_at(ranked: Sequence[str], relevance: Relevance, k: int) -> float:
    """Share of evidence pieces with at least one of their chunks in the top k.

    A piece that no chunk contains (its span was cut by the chunker) counts
    as missed: no ranking can recover it.
    """
    _check_k(k)
    _check_relevance(relevance)
    return _recall(set(ranked[:k]), relevance)


def _recall(top: set[str], relevance: Relevance) -> float:
    found = sum(1 for chunks in relevance.values() if top.intersection(chunks))
    return found / len(relevance)


def first_relevant_rank(ranked: Sequence[str], relevance: Relevance) -> int | None:
    """1-based rank of the first chunk that contains any evidence, None when none is ranked."""
    _check_relevance(relevance)
    relevant = chunk_gains(relevance)
    for rank, chunk_id in enumerate(ranked, start=1):
        if chunk_id in relevant:
            return rank
    return None


def reciprocal_rank(ranked: Sequence[str], relevance: Relevance) -> float:
    """1 / rank of the first relevant chunk, 0 when none is ranked."""
    rank = first_relevant_rank(ranked, relevance)
    return 0.0 if rank is None else 1.0 / rank


def _discount_terms(gains: Sequence[float]) -> list[float]:
    """Each gain over log2(rank + 1), in rank order: DCG@k is the sum of the first k."""
    return [gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1)]


def _discounted(gains: Sequence[float]) -> float:
    return float(sum(_discount_terms(gains)))


def dcg_at(ranked: Sequence[str], relevance: Relevance, k: int) -> float:
    """Sum over the top k of gain / log2(rank + 1)."""
    _check_k(k)
    _check_relevance(relevance)
    gains = chunk_gains(relevance)
    return _discounted([gains.get(chunk_id, 0.0) for chunk_id in ranked[:k]])


def ideal_dcg_at(relevance: Relevance, k: int) -> float:
    """DCG of the best possible ranking of the whole collection: every relevant chunk, highest gain first."""
    _check_k(k)
    _check_relevance(relevance)
    best = sorted(chunk_gains(relevance).values(), reverse=True)[:k]
    return _discounted(best)


def ndcg_at(ranked: Sequence[str], relevance: Relevance, k: int) -> float:
    """DCG@k over the collection's ideal DCG@k; 0 when no chunk has any gain."""
    ideal = ideal_dcg_at(relevance, k)
    return dcg_at(ranked, relevance, k) / ideal if ideal > 0 else 0.0


def duplicate_source_rate_at(ranked: Sequence[str], document_of: Mapping[str, str], k: int) -> float:
    """Share of the top k whose document already appeared higher up in the list.

    It needs no labels: it measures how much of the prompt repeats a source.
    The share is over the chunks actually present, so a list shorter than k
    is not rewarded or penalized for its missing places; an empty list has
    nothing to count and gives NaN, which means over questions skip.
    """
    _check_k(k)
    return _repeat_share(_looked_up(ranked[:k], document_of, "no document for chunk"))


def _repeat_share(documents: Sequence[str]) -> float:
    return (len(documents) - len(set(documents))) / len(documents) if documents else math.nan


def prompt_words_at(ranked: Sequence[str], chunk_words: Mapping[str, int], k: int) -> int:
    """Words the top k chunks put into a prompt: the cost side of recall at k."""
    _check_k(k)
    return int(sum(_looked_up(ranked[:k], chunk_words, "no word count for chunk")))


def _looked_up(chunk_ids: Sequence[str], values: Mapping[str, object] | None, missing: str) -> list | None:
    if values is None:
        return None
    absent = [chunk_id for chunk_id in chunk_ids if chunk_id not in values]
    if absent:
        raise ValueError(f"{missing} {absent[0]!r}")
    return [values[chunk_id] for chunk_id in chunk_ids]


def question_metrics(
    ranked: Sequence[str],
    relevance: Relevance,
    ks: Sequence[int],
    chunk_words: Mapping[str, int] | None = None,
    chunk_documents: Mapping[str, str] | None = None,
) -> list[tuple[str, int, float]]:
    """(metric, k, value) rows of one question; whole-list metrics carry k = 0.

    Metric names are those of :mod:`rag.evaluation.metric_registry` (one
    question's reciprocal rank is its ``mrr``), plus ``dcg`` and
    ``first_relevant_rank``, which only per_question.csv shows.

    ``first_relevant_rank`` is NaN when no relevant chunk is ranked, so that a
    mean over questions skips it instead of counting it as some rank. With
    ``chunk_documents`` (chunk id -> document id) the duplicate-source rate is
    reported at every k.
    """
    _check_ranking(ranked)
    _check_relevance(relevance)
    for k in ks:
        _check_k(k)
    # The same values as the single-metric functions (recall_at, dcg_at,
    # ndcg_at, prompt_words_at, duplicate_source_rate_at), with every lookup
    # done once per question instead of once per metric and k: the evaluation
    # job computes them for every question of every ranking of the grid.
    top = ranked[: max(ks, default=0)]
    gains = chunk_gains(relevance)
    discounted = _discount_terms([gains.get(chunk_id, 0.0) for chunk_id in top])
    ideal_gains = sorted(gains.values(), reverse=True)
    words = _looked_up(top, chunk_words, "no word count for chunk")
    documents = _looked_up(top, chunk_documents, "no document for chunk")
    rows: list[tuple[str, int, float]] = []
    for k in ks:
        dcg = float(sum(discounted[:k]))
        ideal = _discounted(ideal_gains[:k])
        rows.append(("recall", int(k), _recall(set(ranked[:k]), relevance)))
        rows.append(("dcg", int(k), dcg))
        rows.append(("ndcg", int(k), dcg / ideal if ideal > 0 else 0.0))
        if words is not None:
            rows.append(("prompt_words", int(k), float(int(sum(words[:k])))))
        if documents is not None:
            rows.append(("duplicate_source_rate", int(k), _repeat_share(documents[:k])))
    rank = first_relevant_rank(ranked, relevance)
    rows.append(("mrr", WHOLE_LIST, 0.0 if rank is None else 1.0 / rank))
    rows.append(("first_relevant_rank", WHOLE_LIST, math.nan if rank is None else float(rank)))
    return rows


def evaluate_rankings(
    rankings: Mapping[str, Sequence[str]],
    relevance: Mapping[str, Relevance],
    ks: Sequence[int],
    chunk_words: Mapping[str, int] | None = None,
    chunk_documents: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """A tidy table (question_id, metric, k, value) for many questions.

    ``rankings`` and ``relevance`` must cover the same questions: a ranked
    question without labels (or labels without a ranking) is a wiring error
    that would otherwise bias every mean.
    """
    if not ks:
        raise ValueError("give at least one k")
    unlabelled = sorted(set(rankings) - set(relevance))
    if unlabelled:
        raise ValueError(f"question {unlabelled[0]!r} is ranked but has no relevance labels")
    unranked = sorted(set(relevance) - set(rankings))
    if unranked:
        raise ValueError(f"question {unranked[0]!r} has relevance labels but no ranking")
    records: list[tuple[str, str, int, float]] = []
    for question_id in sorted(relevance):
        try:
            rows = question_metrics(
                rankings[question_id], relevance[question_id], ks, chunk_words, chunk_documents
            )
        except ValueError as error:
            raise ValueError(f"question {question_id!r}: {error}") from error
        records.extend((question_id, metric, k, value) for metric, k, value in rows)
    import pandas as pd  # here, so that filters and funnels can use the metrics without pandas

    frame = pd.DataFrame.from_records(records, columns=["question_id", "metric", "k", "value"])
    return frame.astype({"question_id": str, "metric": str, "k": np.int64, "value": np.float64})


def relevance_by_question(questions: Sequence[Question], qrels: pd.DataFrame) -> dict[str, Relevance]:
    """The labels of each question as piece -> {chunk id: gain}, from a qrels table.

    Pieces come from the questions, not from the qrels: a piece that no chunk
    contains has no qrels row, yet it must still count as missed by recall.
    ``qrels`` has the columns question_id, piece (index into the question's
    evidence), chunk_id and gain; rows of questions not listed are ignored, so
    the caller decides which questions (e.g. only answerable ones) are evaluated.
    """
    missing = sorted(set(QRELS_COLUMNS) - set(qrels.columns))
    if missing:
        raise ValueError(f"qrels lack the column {missing[0]!r}")
    relevance: dict[str, dict[str, dict[str, float]]] = {
        question.question_id: {str(piece): {} for piece in range(len(question.evidence))}
        for question in questions
    }
    for question_id, piece, chunk_id, gain in qrels[QRELS_COLUMNS].itertuples(index=False):
        pieces = relevance.get(question_id)
        if pieces is None:
            continue
        if str(piece) not in pieces:
            raise ValueError(f"qrels give question {question_id!r} a piece {piece!r} it does not have")
        pieces[str(piece)][chunk_id] = float(gain)
    return relevance


def relevance_from_columns(
    questions: Sequence[Question], qrels: Mapping[str, Sequence]
) -> dict[str, Relevance]:
    """The labels of each question, from a qrels table read as columns (``rag.formats.tables.read_columns``).

    Scripts read tables as plain columns, without pandas; this keeps one
    definition of how qrels become relevance (:func:`relevance_by_question`).
    """
    import pandas as pd

    return relevance_by_question(questions, pd.DataFrame({name: qrels[name] for name in QRELS_COLUMNS}))
