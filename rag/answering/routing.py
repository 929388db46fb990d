"""Routing: pick a question's document by its summary, then search only that document.

Summaries that are too many for one prompt still make a cheap first stage:
index them, send each question to the document whose summary matches best,
and rank chunks of that document only. The first stage decides the ceiling
of the second: a question routed to the wrong document cannot retrieve its
evidence, and a question whose evidence spans two documents can at best
retrieve the half that lies in the chosen one.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rag.answering.summaries import LeadSummary
from rag.retrieval.retrievers import Retriever, build_retriever, search
from rag.retrieval.search import Ranking, chunk_id_order


@dataclass(frozen=True)
class Route:
    """The document a question is sent to (None when no summary shares a term with it),
    its score, and the runner-up, which shows how close the call was."""

    document: str | None
    score: float
    runner_up: str | None
    runner_up_score: float


def summary_index_text(summary: LeadSummary) -> str:
    """What the router indexes: the title, which a lead need not repeat, and the lead."""
    return f"{summary.title}\n{summary.text}"


def route_questions(
    question_texts: Sequence[str], summaries: Sequence[LeadSummary], entry: Mapping
) -> list[Route]:
    """Rank the summaries for every question with the retriever ``entry`` describes.

    The index's statistics (idf, average length) are those of the summaries,
    since they are the collection being searched; ties go to the lower
    document id.
    """
    indexed = [summary for summary in summaries if summary.text]
    if not indexed:
        raise ValueError("no document has a lead section to route by")
    retriever = build_retriever(entry, [summary_index_text(summary) for summary in indexed], "summary router")
    documents = [summary.doc_id for summary in indexed]
    rankings = search(retriever, list(question_texts), 2, chunk_id_order(documents))
    routes = []
    for ranking in rankings:
        names = [documents[position] for position in ranking.positions]
        scores = ranking.scores.tolist()
        routes.append(
            Route(
                document=names[0] if names else None,
                score=scores[0] if scores else math.nan,
                runner_up=names[1] if len(names) > 1 else None,
                runner_up_score=scores[1] if len(scores) > 1 else math.nan,
            )
        )
    return routes


def within_document(
    ranking: Ranking, chunk_documents: Sequence[str], document: str | None, depth: int
) -> Ranking:
    """The ranking restricted to the chunks of ``document``, order kept, cut to ``depth``.

    Filtering a ranking of the whole collection keeps the collection's
    statistics, so the routed list differs from the unrouted one only by the
    documents it leaves out. A question routed nowhere gets an empty ranking.
    """
    if depth < 0:
        raise ValueError(f"depth must not be negative, got {depth}")
    if document is None:
        return Ranking.empty()
    keep = np.array([chunk_documents[position] == document for position in ranking.positions], dtype=bool)
    positions = ranking.positions[keep] if len(keep) else ranking.positions
    scores = ranking.scores[keep] if len(keep) else ranking.scores
    return Ranking(positions[:depth], scores[:depth])


def routed_right(route: Route, evidence_documents: Collection[str]) -> bool | None:
    """Whether the route picked a document holding evidence; None for questions without evidence."""
    if not evidence_documents:
        return None
    return route.document in evidence_documents


def routing_accuracy(routes: Sequence[Route], evidence: Sequence[Collection[str]]) -> tuple[int, int]:
    """(right, total) over the questions that have evidence."""
    verdicts = [routed_right(route, documents) for route, documents in zip(routes, evidence, strict=True)]
    judged = [verdict for verdict in verdicts if verdict is not None]
    return sum(judged), len(judged)


def route_and_rank(
    question_texts: Sequence[str],
    summaries: Sequence[LeadSummary],
    entry: Mapping,
    retriever: Retriever,
    chunk_documents: Sequence[str],
    depth: int,
    tie_order: np.ndarray,
) -> tuple[list[Route], list[Ranking]]:
    """Route every question by the summaries, then rank the chunks of its routed document only.

    ``retriever`` is the collection's fitted retriever (``entry``'s kind):
    the whole collection is ranked and then restricted, so the collection's
    statistics stay and only the other documents go.
    """
    routes = route_questions(question_texts, summaries, entry)
    full = search(retriever, list(question_texts), len(chunk_documents), tie_order)
    routed = [
        within_document(ranking, chunk_documents, route.document, depth)
        for route, ranking in zip(routes, full, strict=True)
    ]
    return routes, routed


def accuracy_row(routes: Sequence[Route], evidence: Sequence[Collection[str]], **names: object) -> dict:
    """The routing_accuracy row of the routing metrics table: ``names`` (corpus, chunker,
    retriever), then the share routed to an evidence document over the questions with evidence."""
    right, judged = routing_accuracy(routes, evidence)
    value = right / judged if judged else math.nan
    return {**names, "metric": "routing_accuracy", "k": None, "value": value, "questions": judged}


def route_row(route: Route, evidence_documents: Collection[str], routed: Ranking) -> dict:
    """A question's route as a row of the routing table (after its corpus and question columns)."""
    return {
        "routed_document": route.document,
        "score": route.score,
        "runner_up": route.runner_up,
        "runner_up_score": route.runner_up_score,
        "routed_right": routed_right(route, evidence_documents),
        "routed_chunks": len(routed),
    }
