"""A learned fusion for a view (a filter or a caller): refitted on what the view may read.

The unfiltered learned fusion (:func:`rag.evaluation.learned_fusion.learned_fusion`)
chooses its weights on the labels of the whole chunk set. For a view that
leaves chunks out, the choice is made again, by the same nested
cross-validation, on the view's prefiltered component rankings and on the
labels of the chunks (or, for document-level labels, the documents) the view
allows; labels of chunks outside it are dropped before anything is scored.
So neither a ranked chunk nor a chosen weight depends on text or labels the
view may not read. Refitting costs one weight-grid pass over the questions,
the same as the unfiltered fit.

A view whose labels leave no labelled question falls back to plain
reciprocal rank fusion, with a warning, as a fit on too few questions does.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np

from rag.evaluation.learned_fusion import FoldChoice, LearnedFusionSettings, chunk_relevance, learned_fusion
from rag.evaluation.metrics import QRELS_COLUMNS, Relevance
from rag.labels import Question
from rag.retrieval.filters import FilterError, restrict_ranking
from rag.retrieval.fusion import reciprocal_rank_fusion
from rag.retrieval.search import Ranking, chunk_id_order


def read_labels(
    qrels: str, questions: Sequence[Question], level: str, chunks: Mapping[str, Sequence[str]]
) -> tuple[dict[str, Relevance], dict[str, str] | None]:
    """The labels a learned fusion chooses on, as rule fuse_learned reads them, and the chunks' documents.

    ``level`` "document": a corpus's graded document qrels (BEIR), with each
    chunk's document (``chunks``' chunk_id and doc_id columns); otherwise the
    chunk set's evidence-span qrels, and None.
    """
    if level == "document":
        import pandas as pd

        from rag.evaluation.document_relevance import document_relevance
        from rag.question_tables import judgements_from_frame

        relevance = document_relevance(judgements_from_frame(pd.read_parquet(qrels)), questions)
        return relevance, dict(zip(chunks["chunk_id"], chunks["doc_id"], strict=True))
    from rag.formats.tables import read_columns

    return chunk_relevance(questions, read_columns(qrels, QRELS_COLUMNS)), None


def readable_units(
    chunk_ids: Sequence[str], allowed: np.ndarray, document_of: Mapping[str, str] | None = None
) -> frozenset[str]:
    """What labels may judge within the view: the allowed chunk ids, or their documents' ids."""
    if len(allowed) != len(chunk_ids):
        raise FilterError(f"the view's mask has {len(allowed)} entries for {len(chunk_ids)} chunks")
    kept = [chunk_id for chunk_id, keep in zip(chunk_ids, allowed, strict=True) if keep]
    return frozenset(kept if document_of is None else (document_of[chunk_id] for chunk_id in kept))


def labels_within(relevance: Mapping[str, Relevance], readable: Collection[str]) -> dict[str, Relevance]:
    """Each question's evidence pieces held to readable units (chunk ids, or document ids).

    A piece whose every unit lies outside the view is dropped (the fit must not
    learn that evidence exists where the view cannot look), and a question left
    with no piece is unlabelled. A piece that held nothing to begin with (a
    judged question with no relevant document) stays, as in the unfiltered fit.
    """
    within = {
        question_id: {
            piece: {unit: gain for unit, gain in units.items() if unit in readable}
            for piece, units in pieces.items()
        }
        for question_id, pieces in relevance.items()
    }
    kept = {
        question_id: {
            piece: units for piece, units in pieces.items() if units or not relevance[question_id][piece]
        }
        for question_id, pieces in within.items()
    }
    return {question_id: pieces for question_id, pieces in kept.items() if pieces}


def components_within(
    components: Sequence[Mapping[str, Ranking]], allowed: np.ndarray
) -> list[dict[str, Ranking]]:
    """The component rankings without chunks outside the view: a second guard on prefiltered inputs."""
    return [
        {question_id: restrict_ranking(ranking, allowed) for question_id, ranking in component.items()}
        for component in components
    ]


def learned_fusion_in_view(
    settings: LearnedFusionSettings,
    components: Sequence[Mapping[str, Ranking]],
    chunk_ids: Sequence[str],
    questions: Sequence[Question],
    relevance: Mapping[str, Relevance],
    allowed: np.ndarray,
    depth: int | None,
    holdout: Sequence[str] = (),
    document_of: Mapping[str, str] | None = None,
) -> tuple[dict[str, Ranking], list[FoldChoice], list[str]]:
    """The learned fusion of a view's component rankings, its weights chosen on the view's labels alone.

    Arguments as :func:`learned_fusion`, with ``allowed`` the view's mask over
    ``chunk_ids``. For a view that allows every chunk this is
    :func:`learned_fusion` itself.
    """
    allowed = np.asarray(allowed, dtype=bool)
    labels = labels_within(relevance, readable_units(chunk_ids, allowed, document_of))
    within = components_within(components, allowed)
    ranked = set().union(*within)
    answerable = {question.question_id for question in questions if question.answerable}
    if any(question_id in answerable and question_id in ranked for question_id in labels):
        return learned_fusion(settings, within, chunk_ids, questions, labels, depth, holdout, document_of)
    tie_order = chunk_id_order(chunk_ids)
    rankings = {
        question_id: reciprocal_rank_fusion(
            [component[question_id] for component in within], settings.constant, depth, tie_order
        )
        for question_id in sorted(ranked)
    }
    warning = (
        "learned fusion: the view leaves no labelled question to choose weights on; "
        f"fusing by plain RRF (constant {settings.constant:g})"
    )
    return rankings, [], [warning]
