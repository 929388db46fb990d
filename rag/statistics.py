"""Descriptive tables of corpora, question sets and chunk sets."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd

from rag.labels import QUESTION_TYPES, PieceCut, Question


def corpus_statistics(blocks: pd.DataFrame, corpus: str) -> pd.DataFrame:
    """Per document: sections, paragraphs and words, with a total row."""
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
    }
    return pd.concat([frame, pd.DataFrame([total])], ignore_index=True)


def questions_by_type(questions: Sequence[Question], corpus: str) -> pd.DataFrame:
    counts = Counter(question.type for question in questions)
    pieces = Counter()
    for question in questions:
        pieces[question.type] += len(question.evidence)
    rows = [
        {"corpus": corpus, "type": kind, "questions": counts[kind], "evidence_pieces": pieces[kind]}
        for kind in QUESTION_TYPES
        if counts[kind]
    ]
    answerable = sum(question.answerable for question in questions)
    answerable_pieces = sum(len(q.evidence) for q in questions if q.answerable)
    rows.append({"corpus": corpus, "type": "(answerable)", "questions": answerable, "evidence_pieces": answerable_pieces})
    rows.append({"corpus": corpus, "type": "(all)", "questions": len(questions), "evidence_pieces": sum(pieces.values())})
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
