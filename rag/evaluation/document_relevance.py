"""Relevance at the document level: what BEIR-style collections label.

Collections such as those of the BEIR benchmark judge whole documents, not
passages, so a chunk ranking has to become a document ranking before it can be
scored. A document is as good as its best chunk: walking down the chunk
ranking and keeping the first chunk of each document orders documents by their
best chunk's score, with the chunk ranking's own tie-breaking (chunk id), so
the result is as deterministic as the ranking it comes from.

Judgements carry BEIR's graded scores. A score of 0 means "judged and not
relevant", exactly like a document that was never judged; every score above
0 is relevant and is used as the gain of nDCG. Expressing each relevant
document as its own evidence piece lets the chunk-level metrics of
:mod:`rag.evaluation.metrics` compute the document-level ones unchanged: recall becomes
relevant documents retrieved over relevant documents (trec_eval's and
ir-measures' ``R@k``) and nDCG uses the linear gains and log2 discount of
trec_eval's ``ndcg_cut``, its ideal ranking built from every judged relevant
document of the collection.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from rag.evaluation.metrics import WHOLE_LIST, Relevance
from rag.labels import DocumentJudgement, Question

# The cut-offs BEIR's tables report: nDCG@10 and recall@100.
BEIR_NDCG_K = 10
BEIR_RECALL_K = 100


def collapse_to_documents(ranked_chunks: Sequence[str], document_of: Mapping[str, str]) -> list[str]:
    """The documents of a chunk ranking, each at the rank of its best chunk.

    A chunk the mapping does not know is a wiring error (a ranking of another
    chunk set), not something to skip silently.
    """
    documents: list[str] = []
    seen: set[str] = set()
    for chunk_id in ranked_chunks:
        try:
            doc_id = document_of[chunk_id]
        except KeyError:
            raise ValueError(f"chunk {chunk_id!r} belongs to no known document") from None
        if doc_id not in seen:
            seen.add(doc_id)
            documents.append(doc_id)
    return documents


# The piece of a question whose judged documents all scored 0.
NOTHING_RELEVANT = "(no relevant document)"


def document_relevance(
    judgements: Iterable[DocumentJudgement], questions: Sequence[Question]
) -> dict[str, Relevance]:
    """Each listed question's relevant documents as pieces of :mod:`rag.evaluation.metrics`.

    Every document with a positive gain is a piece of its own, found by
    exactly that document, so recall counts documents. A listed question
    whose judgements are all 0 gets one piece that no document holds: its
    recall, nDCG and reciprocal rank are 0, which is how trec_eval (and so
    BEIR and ir-measures) scores it, instead of dropping it from the mean.
    """
    wanted = {question.question_id for question in questions}
    relevance: dict[str, dict[str, dict[str, float]]] = {question_id: {} for question_id in wanted}
    for judgement in judgements:
        if judgement.question_id in wanted and judgement.gain > 0:
            relevance[judgement.question_id][judgement.doc_id] = {judgement.doc_id: float(judgement.gain)}
    for pieces in relevance.values():
        if not pieces:
            pieces[NOTHING_RELEVANT] = {}
    return relevance


def beir_summary(evaluation: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """BEIR's headline numbers: mean nDCG@10 and recall@100 over the evaluated questions.

    ``evaluation`` is the tidy (question_id, metric, k, value) table of
    :func:`rag.evaluation.metrics.evaluate_rankings` at least at k = 10 and k = 100, plus
    the ``keys`` columns; ``documents_ranked`` is the mean length of the
    document rankings, which shows when the chunk depth left fewer than 100
    documents to score.
    """
    wanted = {("ndcg", BEIR_NDCG_K): "ndcg_at_10", ("recall", BEIR_RECALL_K): "recall_at_100"}
    rows = []
    for values, group in evaluation.groupby(list(keys), sort=True):
        row = dict(zip(keys, values, strict=True))
        row["questions"] = group["question_id"].nunique()
        for (metric, k), column in wanted.items():
            picked = group[(group["metric"] == metric) & (group["k"] == k)]["value"]
            if picked.empty:
                raise ValueError(f"{row}: no {metric} at k = {k} to summarize")
            row[column] = float(picked.mean())
        ranked = group[(group["metric"] == "documents_ranked") & (group["k"] == WHOLE_LIST)]["value"]
        row["documents_ranked"] = float(ranked.mean()) if not ranked.empty else float("nan")
        rows.append(row)
    columns = [*keys, "questions", "ndcg_at_10", "recall_at_100", "documents_ranked"]
    return pd.DataFrame(rows, columns=columns)
