"""Descriptive tables of corpora, question sets and chunk sets."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from rag.corpus.documents import SKIPPABLE
from rag.evaluation import metric_registry
from rag.evaluation.chunk_judging import PieceCut
from rag.labels import QUESTION_TYPES, Question


def corpus_statistics(
    blocks: pd.DataFrame, corpus: str, skipped: Mapping[str, Mapping[str, int]] | None = None
) -> pd.DataFrame:
    """Per document: sections, paragraphs and words, with a total row.

    ``skipped`` maps a document id to the lines (HTML: elements) its reader
    left out, by kind (:data:`rag.corpus.documents.SKIPPABLE`); each kind is a
    ``skipped_<kind>`` column, zero for sources that record none, so no text
    is lost without a count.
    """
    skipped = skipped or {}
    rows = []
    for doc_id, group in blocks.groupby("doc_id", sort=True):
        rows.append(
            {
                "corpus": corpus,
                "doc_id": doc_id,
                "title": group["title"].iloc[0],
                "sections": group.loc[group["section"] != "", "section"].nunique(),
                "paragraphs": len(group),
                "words": int(group["text"].str.split().str.len().sum()),
                **{f"skipped_{kind}": int(skipped.get(doc_id, {}).get(kind, 0)) for kind in SKIPPABLE},
            }
        )
    frame = pd.DataFrame(rows)
    total = {
        "corpus": corpus,
        "doc_id": "(all)",
        "title": f"{len(frame)} documents",
        "sections": int(frame["sections"].sum()),
        "paragraphs": int(frame["paragraphs"].sum()),
        "words": int(frame["words"].sum()),
        **{f"skipped_{kind}": int(frame[f"skipped_{kind}"].sum()) for kind in SKIPPABLE},
    }
    return pd.concat([frame, pd.DataFrame([total])], ignore_index=True)


def questions_by_type(questions: Sequence[Question], corpus: str) -> pd.DataFrame:
    """Questions and evidence pieces per type: the bundled types in their order, then the rest by name."""
    counts = Counter(question.type for question in questions)
    pieces = Counter()
    for question in questions:
        pieces[question.type] += len(question.evidence)
    rows = [
        {"corpus": corpus, "type": kind, "questions": counts[kind], "evidence_pieces": pieces[kind]}
        for kind in [*QUESTION_TYPES, *sorted(set(counts) - set(QUESTION_TYPES))]
        if counts[kind]
    ]
    answerable = sum(question.answerable for question in questions)
    answerable_pieces = sum(len(q.evidence) for q in questions if q.answerable)
    rows.append(
        {
            "corpus": corpus,
            "type": "(answerable)",
            "questions": answerable,
            "evidence_pieces": answerable_pieces,
        }
    )
    rows.append(
        {
            "corpus": corpus,
            "type": "(all)",
            "questions": len(questions),
            "evidence_pieces": sum(pieces.values()),
        }
    )
    return pd.DataFrame(rows)


def chunk_statistics(chunks: pd.DataFrame, corpus: str, chunker: str) -> dict:
    words = chunks["n_words"].to_numpy()
    return {
        "corpus": corpus,
        "chunker": chunker,
        "chunks": len(chunks),
        "mean_words": float(words.mean()),
        "median_words": float(np.median(words)),
        "max_words": int(words.max()),
        "total_words": int(words.sum()),
    }


def cut_summary(cuts: Sequence[PieceCut], corpus: str, chunker: str) -> dict:
    expected = np.array([cut.expected_cut for cut in cuts], dtype=float)
    return {
        "corpus": corpus,
        "chunker": chunker,
        "evidence_pieces": len(cuts),
        "cut": sum(cut.cut for cut in cuts),
        "expected_cut": float(expected.sum()) if len(expected) and not np.isnan(expected).any() else np.nan,
        "mean_span_words": float(np.mean([cut.shortest_span_words for cut in cuts])) if cuts else np.nan,
    }


def aggregate_metrics(evaluation: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Each registry metric's aggregate over questions (:mod:`rag.evaluation.metric_registry`);
    ``k`` is empty for metrics of the whole list (MRR). Rows of metrics the registry does not
    name (dcg, first_relevant_rank) are left out."""
    registry = {entry.name: entry for entry in metric_registry.metrics()}
    rows = evaluation[evaluation["metric"].isin(list(registry))]
    parts = []
    for name, part in rows.groupby("metric", sort=True):
        grouped = part.groupby([*keys, "metric", "k"], sort=True)["value"]
        parts.append(grouped.agg(value=registry[name].aggregate, questions="count").reset_index())
    columns = [*keys, "metric", "k", "value", "questions"]
    if not parts:
        return pd.DataFrame(columns=columns)
    table = pd.concat(parts, ignore_index=True).sort_values([*keys, "metric", "k"], ignore_index=True)
    table["k"] = table["k"].astype("Int64").where(table["k"] > 0)
    return table[columns]


def per_question_table(evaluation: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """One row per question: first relevant rank, reciprocal rank and recall at each k."""
    whole = evaluation[evaluation["metric"].isin(["first_relevant_rank", "mrr"])]
    index = [*keys, "question_id", "type"]
    # unstack keeps a question's NaN rank (nothing relevant ranked) without
    # crossing every question with every type, as pivot_table(dropna=False) would.
    wide = whole.set_index([*index, "metric"])["value"].unstack("metric")
    recall = evaluation[evaluation["metric"] == "recall"].copy()
    recall["column"] = "recall_at_" + recall["k"].astype(str)
    recall_wide = recall.set_index([*index, "column"])["value"].unstack("column")
    ordered = sorted(recall_wide.columns, key=lambda name: int(name.rsplit("_", 1)[1]))
    table = wide.join(recall_wide[ordered]).reset_index()
    table["first_relevant_rank"] = table["first_relevant_rank"].astype("Int64")
    table.columns.name = None
    table = table.rename(columns=metric_registry.PER_QUESTION_COLUMN)
    return table[[*keys, "question_id", "type", "first_relevant_rank", "reciprocal_rank", *ordered]]


def index_statistics(
    index_bytes: int, benchmark: pd.DataFrame, corpus: str, chunker: str, retriever: str
) -> dict:
    """One fitted index: its size on disk, and the seconds and memory its job took.

    ``benchmark`` is the job's Snakemake benchmark table (columns ``s`` and
    ``max_rss`` in MB). The timing columns measure the machine and vary from
    run to run; the size does not.
    """
    first = benchmark.iloc[0] if len(benchmark) else {}
    seconds = pd.to_numeric(pd.Series([first.get("s", np.nan)]), errors="coerce").iloc[0]
    memory = pd.to_numeric(pd.Series([first.get("max_rss", np.nan)]), errors="coerce").iloc[0]
    return {
        "corpus": corpus,
        "chunker": chunker,
        "retriever": retriever,
        "index_bytes": int(index_bytes),
        "seconds": float(seconds),
        "max_rss_mb": float(memory),
    }


# Bootstrap settings of every interval in the summary: resamples of the
# questions, the coverage of the percentile interval, and the seed.
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_LEVEL = 0.95
BOOTSTRAP_SEED = 0


def bootstrap_interval(
    outcomes: Sequence[bool] | Sequence[float],
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = BOOTSTRAP_LEVEL,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``outcomes`` (questions resampled with replacement).

    The questions are a sample of the questions users ask; the interval says
    how far the share could move with another sample of the same size. NaN
    for no outcomes. Seeded, so the table is byte-identical from run to run.
    """
    import numpy as np

    values = np.asarray(outcomes, dtype=np.float64)
    if values.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, values.size, size=(resamples, values.size))
    means = values[draws].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return round(float(low), 6), round(float(high), 6)
