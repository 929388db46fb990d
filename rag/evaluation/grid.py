"""Evaluating the grid: every ranking scored against its chunk set's labels, then the tables users read.

One evaluation job scores the ranking of every (corpus, chunker, retriever)
of the grid, so that all of results/metrics.csv and its companions come from
one long table of per-question values (:func:`rag.evaluation.metrics.evaluate_rankings`).
A chunk set's labels, word counts and evidence documents are read once and
shared by every retriever that ranked it. The tables keep the grid's order
wherever they do not sort.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from rag.evaluation import metric_registry
from rag.evaluation.cohorts import document_cohorts
from rag.evaluation.metrics import (
    QRELS_COLUMNS,
    WHOLE_LIST,
    Relevance,
    evaluate_rankings,
    relevance_by_question,
)
from rag.evaluation.significance import RUN_KEYS, question_values
from rag.evaluation.statistics import aggregate_metrics, per_question_table
from rag.labels import Question

# The chunk columns the evaluation reads: word counts (prompt_words) and documents (duplicate sources).
EVALUATED_CHUNK_COLUMNS = ["chunk_id", "n_words", "doc_id"]


@dataclass(frozen=True)
class ChunkSetLabels:
    """What scoring a ranking of one chunk set needs: each question's relevance, every
    chunk's words and document, and the (question_id, document) pairs of the cohorts."""

    relevance: dict[str, Relevance]
    words: dict[str, int]
    documents: dict[str, str]
    cohorts: pd.DataFrame


def chunk_set_labels(
    questions: Sequence[Question], qrels: Mapping[str, Sequence], chunks: Mapping[str, Sequence]
) -> ChunkSetLabels:
    """The labels of one (corpus, chunker), from its qrels (``QRELS_COLUMNS``) and chunk columns
    (``EVALUATED_CHUNK_COLUMNS``); ``questions`` are the ones evaluated (the answerable ones).

    Built once per chunk set, not per ranking: every retriever of the grid
    that ranked the chunk set is scored against the same labels.
    """
    table = pd.DataFrame({name: qrels[name] for name in QRELS_COLUMNS})
    documents = dict(zip(chunks["chunk_id"], chunks["doc_id"], strict=True))
    return ChunkSetLabels(
        relevance=relevance_by_question(questions, table),
        words=dict(zip(chunks["chunk_id"], chunks["n_words"], strict=True)),
        documents=documents,
        cohorts=document_cohorts(questions, table, documents),
    )


def evaluate_run(
    ranked: Mapping[str, Sequence[str]],
    questions: Sequence[Question],
    labels: ChunkSetLabels,
    ks: Sequence[int],
) -> pd.DataFrame:
    """One ranking's per-question values (question_id, type, metric, k, value).

    The question type goes in beside the id, so that the metrics can also be
    split by type (results/metrics_by_type.csv).
    """
    frame = evaluate_rankings(ranked, labels.relevance, ks, labels.words, labels.documents)
    extras = registered_extras(ranked, labels.relevance, ks, set(frame["metric"]))
    if len(extras):
        frame = pd.concat([frame, extras], ignore_index=True)
    # Mapped through a Series: a dict makes pandas look up each of the ~5,000 arrow strings in Python.
    types = pd.Series({question.question_id: question.type for question in questions}, dtype="str")
    frame.insert(1, "type", frame["question_id"].map(types))
    return frame


def registered_extras(
    ranked: Mapping[str, Sequence[str]], relevance: Mapping[str, Relevance], ks: Sequence[int], computed: set
) -> pd.DataFrame:
    """Rows of the registry's metrics that :func:`evaluate_rankings`' one pass does not compute,
    from each metric's per-question function: a metric added to the registry needs nothing else."""
    records = []
    for entry in metric_registry.metrics():
        if entry.name in computed or entry.function is None:
            continue
        for k in ks if entry.at_k else [WHOLE_LIST]:
            depth = k if entry.at_k else max(ks)
            for question_id in sorted(relevance):
                value = entry.function(list(ranked[question_id]), relevance[question_id], depth)
                records.append((question_id, entry.name, int(k), float(value)))
    frame = pd.DataFrame.from_records(records, columns=["question_id", "metric", "k", "value"])
    return frame.astype({"question_id": str, "metric": str, "k": "int64", "value": "float64"})


@dataclass(frozen=True)
class EvaluationTables:
    """The evaluation job's outputs: results/metrics.csv, metrics_by_type.csv,
    metrics_by_document.csv, per_question.csv, and the per-question values the
    confidence intervals and paired tests read."""

    metrics: pd.DataFrame
    by_type: pd.DataFrame
    by_document: pd.DataFrame
    per_question: pd.DataFrame
    question_values: pd.DataFrame


def evaluation_tables(
    runs: Mapping[tuple[str, str, str], pd.DataFrame],
    made_by: Mapping[tuple[str, str, str], str],
    labels: Mapping[tuple[str, str], ChunkSetLabels],
) -> EvaluationTables:
    """The tables of the grid's evaluated rankings.

    ``runs`` maps each (corpus, chunker, retriever) to :func:`evaluate_run`'s
    frame, ``made_by`` to the digest of its ranking's provenance, and
    ``labels`` each (corpus, chunker) to its :func:`chunk_set_labels`.
    """
    keys = list(RUN_KEYS)
    evaluation = pd.concat(
        [frame.assign(**dict(zip(keys, run, strict=True))) for run, frame in runs.items()], ignore_index=True
    )
    # Each metrics row names the run that made its ranking (see results/provenance.csv).
    provenance = pd.DataFrame(
        [(*run, digest) for run, digest in made_by.items()], columns=[*keys, "provenance"]
    )
    metrics = aggregate_metrics(evaluation, keys).merge(provenance, on=keys, how="left")
    # A question with evidence in several documents counts for each of them (rag.evaluation.cohorts).
    cohorts = pd.concat(
        [
            chunk_set.cohorts.assign(corpus=corpus, chunker=chunker)
            for (corpus, chunker), chunk_set in labels.items()
        ],
        ignore_index=True,
    )
    by_document = evaluation.merge(cohorts, on=["corpus", "chunker", "question_id"])
    return EvaluationTables(
        metrics=metrics,
        by_type=aggregate_metrics(evaluation, [*keys, "type"]),
        by_document=aggregate_metrics(by_document, [*keys, "document"]),
        per_question=per_question_table(evaluation, keys),
        question_values=question_values(evaluation),
    )


def evaluate_runs_from_parts(
    rankings: Mapping[tuple[str, str, str], str],
    questions: Mapping[str, Sequence[Question]],
    labels: Mapping[tuple[str, str], ChunkSetLabels],
    label_digests: Mapping[tuple[str, str], object],
    ks: Sequence[int],
    store,
    code: str,
    report=None,
) -> tuple[dict, str]:
    """:func:`evaluate_run` of every ranking file of ``rankings`` ((corpus, chunker, retriever) -> path),
    each a part of ``store`` (:class:`rag.evaluation.table_parts.PartStore`).

    A part's key is ``code``, ``ks``, its chunk set's ``label_digests`` (the
    digests of the questions, qrels and chunk files) and the ranking file's
    bytes: a ranking that did not change is not read again. Returns the runs
    in the order of ``rankings`` and a line saying how many were reused.
    """
    from rag.evaluation.table_parts import describe, file_digest, part_key, reuse_or_compute
    from rag.progress import Progress
    from rag.retrieval.ranking_files import read_ranked_chunk_ids

    keys = {
        run: part_key(code, list(ks), label_digests[run[:2]], file_digest(path))
        for run, path in rankings.items()
    }

    def compute(missing):
        scored = {}
        progress = Progress("scored rankings", len(missing), report or (lambda line: None))
        for done, run in enumerate(missing, start=1):
            corpus, chunker = run[:2]
            ranked = read_ranked_chunk_ids(rankings[run], [q.question_id for q in questions[corpus]])
            scored[run] = evaluate_run(ranked, questions[corpus], labels[corpus, chunker], ks)
            progress.update(done)
        return scored

    runs, computed = reuse_or_compute(store, "evaluate", keys, compute)
    return runs, describe("evaluated rankings", len(keys), computed)
