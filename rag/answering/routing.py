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
import pandas as pd

from rag.answering.answers import DOCUMENT_SEPARATOR, evidence_documents, question_group
from rag.answering.summaries import LeadSummary, lead_summaries
from rag.corpus.document_tables import documents_from_frame
from rag.evaluation.metrics import evaluate_rankings, relevance_from_columns
from rag.evaluation.statistics import aggregate_metrics
from rag.labels import Question, locate_spans
from rag.provenance import record_digest
from rag.retrieval.retrievers import Retriever, build_retriever, load_retriever, search
from rag.retrieval.search import Ranking, chunk_id_order, ranked_ids


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


# --------------------------------------------------------------------------
# The route job: every corpus routed, evaluated and laid out as two tables
# --------------------------------------------------------------------------

ROUTE_COLUMNS = [
    "corpus",
    "question_id",
    "type",
    "group",
    "evidence_documents",
    "routed_document",
    "score",
    "runner_up",
    "runner_up_score",
    "routed_right",
    "routed_chunks",
]
ROUTING_KEYS = ["corpus", "chunker", "retriever"]


@dataclass(frozen=True)
class RoutingSetup:
    """How the route job routes: the retriever ``entry`` (of the summaries and the collection),
    the answers section's ``routing`` settings (chunker and retriever names), the ranking
    ``depth`` and the cut-offs ``ks`` the routed rankings are evaluated at."""

    entry: Mapping
    routing: Mapping
    depth: int
    ks: Sequence[int]

    @property
    def names(self) -> dict[str, str]:
        """The chunker and retriever columns of the metrics rows: the routed retriever is its own."""
        return {"chunker": self.routing["chunker"], "retriever": f"{self.routing['retriever']}_routed"}


@dataclass(frozen=True)
class CorpusRoutes:
    """One corpus routed: its rows of the routing table, its routed rankings evaluated per
    question (as for results/metrics.csv), its routing_accuracy row and the digest of what
    made them (the chunk set and the routing settings), like every metrics row carries."""

    corpus: str
    routes: list[dict]
    evaluation: pd.DataFrame
    accuracy: dict
    provenance: str


def describe_routes(routes: CorpusRoutes) -> str:
    """The route job's log line of one corpus: how often routing picked an evidence document."""
    accuracy = routes.accuracy
    return (
        f"{routes.corpus}: routing accuracy {accuracy['value']:.3f} over {accuracy['questions']:d} questions"
    )


def without_leads(corpus: str) -> str:
    """The warning for a corpus routing has to leave out (issue 16): it has no summary to route by."""
    return (
        f"corpus {corpus!r}: routing left out, it needs lead sections "
        "(text before a document's first section heading), and no document has one"
    )


def route_corpus(
    corpus: str,
    questions: Sequence[Question],
    blocks: Mapping[str, Sequence],
    chunks: Mapping[str, Sequence],
    qrels: Mapping[str, Sequence],
    index: Mapping[str, np.ndarray],
    chunk_set: Mapping,
    setup: RoutingSetup,
    source: str = "",
) -> CorpusRoutes | None:
    """Route one corpus's questions by the lead summaries and evaluate the routed rankings.

    ``blocks``, ``chunks`` (chunk_id, doc_id, n_words) and ``qrels`` are the
    corpus's tables as columns, ``index`` the collection's saved retriever
    arrays, ``chunk_set`` the chunk file's provenance and ``source`` the
    questions file (named in label errors). None when no document has a
    lead: routing by leads then has nothing to route by, which is not an
    error (see :func:`without_leads`). Only answerable questions are
    evaluated; every question gets a row of the routing table.
    """
    documents = documents_from_frame(pd.DataFrame(blocks))
    summaries = lead_summaries(documents)
    if not any(summary.text.strip() for summary in summaries):
        return None
    holding = evidence_documents(questions, locate_spans(questions, documents, source))
    chunk_ids = list(chunks["chunk_id"])
    routes, routed = route_and_rank(
        [question.text for question in questions],
        summaries,
        setup.entry,
        load_retriever(setup.entry, index),
        list(chunks["doc_id"]),
        setup.depth,
        chunk_id_order(chunk_ids),
    )
    rows = []
    for question, route, ranking in zip(questions, routes, routed, strict=True):
        evidence = holding[question.question_id]
        rows.append(
            {
                "corpus": corpus,
                "question_id": question.question_id,
                "type": question.type,
                "group": question_group(question, evidence),
                "evidence_documents": DOCUMENT_SEPARATOR.join(evidence),
                **route_row(route, evidence, ranking),
            }
        )
    ranked = {
        q.question_id: ranked_ids(ranking, chunk_ids) for q, ranking in zip(questions, routed, strict=True)
    }
    answerable = [question for question in questions if question.answerable]
    words = dict(zip(chunks["chunk_id"], chunks["n_words"], strict=True))
    evaluation = evaluate_rankings(
        {question.question_id: ranked[question.question_id] for question in answerable},
        relevance_from_columns(answerable, qrels),
        setup.ks,
        words,
    )
    held = [holding[question.question_id] for question in questions]
    return CorpusRoutes(
        corpus=corpus,
        routes=rows,
        evaluation=evaluation.assign(corpus=corpus, **setup.names),
        accuracy=accuracy_row(routes, held, corpus=corpus, **setup.names),
        provenance=record_digest({"chunks": chunk_set, "routing": setup.routing, "retriever": setup.entry}),
    )


def routing_tables(routed: Sequence[CorpusRoutes]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """results/routing.csv and results/routing_metrics.csv from the routed corpora, in their order.

    The metrics are aggregated exactly like results/metrics.csv, followed by
    each corpus's routing_accuracy row; with no corpus routed both tables
    keep their columns and have no rows.
    """
    if routed:
        metrics = aggregate_metrics(
            pd.concat([part.evaluation for part in routed], ignore_index=True), ROUTING_KEYS
        )
        metrics = pd.concat([metrics, pd.DataFrame([part.accuracy for part in routed])], ignore_index=True)
    else:
        metrics = pd.DataFrame(columns=[*ROUTING_KEYS, "metric", "k", "value", "questions"])
    metrics["provenance"] = metrics["corpus"].map({part.corpus: part.provenance for part in routed})
    rows = [row for part in routed for row in part.routes]
    routes = pd.DataFrame(rows, columns=ROUTE_COLUMNS).astype({"routed_right": "boolean"})
    return routes, metrics
