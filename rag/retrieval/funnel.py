"""A candidate funnel: a cheap first stage, a stronger reranker, then the final k.

A first stage (BM25, say) is fast enough to search the whole collection but
scores crudely. A reranker can afford a more expensive scorer because it
only sees the first stage's N best candidates. The funnel is therefore three
steps: take N candidates, rescore them, and select the final list (keeping
at most ``max_per_document`` chunks per document when asked). N is the
funnel's main knob: too few and the evidence never reaches the reranker, too
many and the reranker's mistakes have more room.

A reranker is any callable ``(query text, candidate positions) -> scores``
(:class:`Reranker`): a cross-encoder, a pretrained embedder, or a retriever
of this package restricted to the candidates. The last one is built by
:func:`retriever_reranker`, which runs the retriever's ordinary search with
the candidates as its prefilter (``allowed``), so it works for every kind
whose search takes a prefilter, including kinds added later. Rank fusion of
several rerankers over the candidates is :func:`fused_reranker`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from rag.kinds import RETRIEVER_KINDS, behaviour
from rag.retrieval.diversity import cap_ranking
from rag.retrieval.fusion import reciprocal_rank_fusion
from rag.retrieval.retrievers import Retriever, search
from rag.retrieval.search import Ranking, top_k_among

NO_SCORE = -np.inf


class Reranker(Protocol):
    """Rescores the candidates of one query.

    Returns one score per candidate, in the candidates' order, higher is
    better; ``-inf`` means the reranker has no opinion on that candidate
    (for a lexical scorer: it shares no term with the query).
    """

    def __call__(self, query: str, candidates: np.ndarray) -> np.ndarray: ...


def _candidate_mask(candidates: np.ndarray, n_chunks: int) -> np.ndarray:
    if len(candidates) and (candidates.min() < 0 or candidates.max() >= n_chunks):
        raise ValueError(
            f"candidate positions must lie in [0, {n_chunks}), got {candidates.min()}..{candidates.max()}"
        )
    mask = np.zeros(n_chunks, dtype=bool)
    mask[candidates] = True
    return mask


def _scores_of(candidates: np.ndarray, ranking: Ranking) -> np.ndarray:
    """The ranking's scores laid out in candidate order, NO_SCORE where it has none."""
    index = {int(position): row for row, position in enumerate(candidates)}
    scores = np.full(len(candidates), NO_SCORE)
    for position, score in zip(ranking.positions, ranking.scores, strict=True):
        scores[index[int(position)]] = score
    return scores


def retriever_reranker(retriever: Retriever, n_chunks: int, tie_order: np.ndarray | None = None) -> Reranker:
    """A reranker that scores the candidates with a fitted retriever of this package.

    The retriever's search runs with the candidates as its prefilter, so it
    scores exactly those chunks (its index and idf stay the collection's).
    """

    def rerank(query: str, candidates: np.ndarray) -> np.ndarray:
        candidates = np.asarray(candidates, dtype=np.int64)
        if len(candidates) == 0:
            return np.empty(0)
        mask = _candidate_mask(candidates, n_chunks)
        (ranking,) = search(retriever, [query], len(candidates), tie_order, allowed=mask)
        return _scores_of(candidates, ranking)

    return rerank


def _ranking_among(candidates: np.ndarray, scores: np.ndarray, tie_order: np.ndarray | None) -> Ranking:
    scored = np.isfinite(scores)
    return top_k_among(candidates[scored], scores[scored], int(scored.sum()), tie_order)


def fused_reranker(
    rerankers: Sequence[Reranker], constant: float = 60.0, tie_order: np.ndarray | None = None
) -> Reranker:
    """Reciprocal rank fusion of several rerankers, ranked among the candidates only."""
    if not rerankers:
        raise ValueError("fusion needs at least one reranker")

    def rerank(query: str, candidates: np.ndarray) -> np.ndarray:
        candidates = np.asarray(candidates, dtype=np.int64)
        rankings = [
            _ranking_among(candidates, _checked(reranker(query, candidates), candidates), tie_order)
            for reranker in rerankers
        ]
        return _scores_of(candidates, reciprocal_rank_fusion(rankings, constant, None, tie_order))

    return rerank


def _checked(scores: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != candidates.shape:
        raise ValueError(f"the reranker returned {scores.shape} scores for {candidates.shape} candidates")
    if np.isnan(scores).any() or np.isposinf(scores).any():
        raise ValueError("the reranker returned NaN or +inf; use -inf for a candidate it cannot score")
    return scores


def funnel_ranking(
    first: Ranking,
    query: str,
    reranker: Reranker | None,
    candidates: int,
    depth: int,
    tie_order: np.ndarray | None = None,
    chunk_documents: Sequence[Hashable] | None = None,
    max_per_document: int | None = None,
) -> Ranking:
    """The final list of one query: N candidates, reranked, capped per document, cut to depth.

    ``first`` is the first stage's ranking. Without a reranker the order is
    the first stage's (the "no reranking" ablation). With one, the candidates
    it scores come first by its score, ties broken by ``tie_order``; the
    candidates it cannot score (-inf) follow in first-stage order rather than
    being dropped, because the first stage did find them. ``chunk_documents``
    (the document of every chunk position) is needed for the cap.
    """
    if isinstance(candidates, bool) or not isinstance(candidates, int | np.integer) or candidates < 1:
        raise ValueError(f"the number of candidates must be a positive integer, got {candidates!r}")
    pool = Ranking(first.positions[:candidates], first.scores[:candidates])
    if reranker is not None and len(pool):
        scores = _checked(reranker(query, pool.positions), pool.positions)
        scored = _ranking_among(pool.positions, scores, tie_order)
        unscored = ~np.isfinite(scores)
        pool = Ranking(
            np.concatenate((scored.positions, pool.positions[unscored])),
            np.concatenate((scored.scores, scores[unscored])),
        )
    if max_per_document is not None:
        if chunk_documents is None:
            raise ValueError("a per-document cap needs the document of every chunk")
        return cap_ranking(pool, chunk_documents, max_per_document, depth)
    return Ranking(pool.positions[:depth], pool.scores[:depth])


def funnel_summary(
    metrics: pd.DataFrame, funnels: Mapping[str, Mapping], wanted: Sequence[tuple[str, int | None]]
) -> pd.DataFrame:
    """One row per (corpus, chunker, funnel): its settings and its metrics, side by side.

    ``metrics`` is the evaluation's table (corpus, chunker, retriever,
    metric, k, value, questions); ``funnels`` maps funnel names to their
    entries; ``wanted`` names the (metric, k) columns, in order (None for a
    whole-list metric): the evaluation's metric registry chooses them
    (``rag.evaluation.metric_registry.funnel_columns``).
    """
    if not wanted:
        raise ValueError("give at least one metric column")
    rows = []
    chosen = metrics[metrics["retriever"].isin(list(funnels))]
    for (corpus, chunker, retriever), group in chosen.groupby(["corpus", "chunker", "retriever"], sort=True):
        entry = funnels[retriever]
        row = {
            "corpus": corpus,
            "chunker": chunker,
            "retriever": retriever,
            "first": entry["first"],
            "rerank": entry["rerank"] or "none",
            "candidates": entry["candidates"],
            "max_per_document": entry["diversity"],
        }
        for metric, k in wanted:
            match = group[(group["metric"] == metric) & (group["k"].isna() if k is None else group["k"] == k)]
            name = metric if k is None else f"{metric}_at_{k}"
            row[name] = float(match["value"].iloc[0]) if len(match) else float("nan")
        rows.append(row)
    import pandas as pd  # only the summary tables need it; the pipeline's funnel jobs do not

    table = pd.DataFrame(rows)
    if len(table):
        table["max_per_document"] = table["max_per_document"].astype("Int64")
    return table


def configured_reranker(
    entry: Mapping,
    rerank_entries: Mapping[str, Mapping],
    indexes: Mapping[str, Mapping[str, np.ndarray]],
    n_chunks: int,
    tie_order: np.ndarray | None = None,
    chunk_texts: Callable[[str], Sequence[str]] | None = None,
) -> tuple[Reranker | None, dict | None]:
    """A funnel entry's reranker and its provenance record, as the table of kinds says.

    ``rerank_entries`` holds the reranker's entry (and a fusion's components)
    by name, ``indexes`` the saved arrays of each plain retriever among them.
    A kind with a ``rerank`` behaviour (rag/kinds.py) builds its own reranker
    from the chunk texts (``chunk_texts(column)`` reads a column of the chunk
    table); a fused kind fuses its components' rerankers; a plain kind
    reranks with its own loaded index.
    """
    from rag.provenance import record_digest, retriever_record
    from rag.retrieval.retrievers import chunk_text_column, load_retriever

    name = entry["rerank"]
    if name is None:
        return None, None
    rerank_entry = rerank_entries[name]
    kind = RETRIEVER_KINDS[rerank_entry["kind"]]

    def plain(part: str) -> Reranker:
        return retriever_reranker(load_retriever(rerank_entries[part], indexes[part]), n_chunks, tie_order)

    if kind.rerank is not None:
        if chunk_texts is None:
            raise ValueError(f"the reranker {name!r} scores chunk texts; pass chunk_texts")
        texts = chunk_texts(chunk_text_column(rerank_entry))
        return behaviour(kind.name, "rerank")(rerank_entry, texts, tie_order), retriever_record(rerank_entry)
    if kind.fuse is None:
        return plain(name), retriever_record(rerank_entry)
    parts = rerank_entry["components"]
    record = {
        "retriever": rerank_entry,
        "retriever_digest": record_digest(rerank_entry),
        "components": {part: retriever_record(rerank_entries[part]) for part in parts},
    }
    return fused_reranker([plain(part) for part in parts], rerank_entry["constant"], tie_order), record


def funnel_rankings(
    first: Mapping[str, Ranking],
    questions: Sequence[tuple[str, str]],
    reranker: Reranker | None,
    entry: Mapping,
    depth: int,
    tie_order: np.ndarray | None,
    chunk_documents: Sequence[Hashable],
    allowed: np.ndarray | None = None,
) -> tuple[list[Ranking], int]:
    """Every question's final list, and how many first-stage candidates a filter removed.

    ``questions`` are (question id, text) pairs. With ``allowed`` (the rule
    funnel_filtered) the first stage is already prefiltered, and its
    candidates are checked against the filter once more before the reranker
    sees any of them; the count removed must be 0.
    """
    from rag.retrieval.filters import restrict_ranking

    rankings, removed = [], 0
    for question_id, text in questions:
        candidates = first[question_id]
        if allowed is not None:
            kept = restrict_ranking(candidates, allowed)
            removed += len(candidates) - len(kept)
            candidates = kept
        rankings.append(
            funnel_ranking(
                candidates,
                text,
                reranker,
                entry["candidates"],
                depth,
                tie_order,
                chunk_documents,
                entry["diversity"],
            )
        )
    return rankings, removed


def describe_funnel(name: str, entry: Mapping, rankings: Sequence[Ranking]) -> str:
    """One log line of a funnel job: its settings and the mean length of the final lists.

    A mean below the depth shows where candidates ran out (too few
    first-stage candidates, or a per-document cap) before any metric does.
    """
    mean = float(np.mean([len(ranking) for ranking in rankings])) if rankings else 0.0
    return (
        f"funnel {name}: first {entry['first']}, rerank {entry['rerank']}, "
        f"{entry['candidates']} candidates, cap {entry['diversity']}; "
        f"{len(rankings)} questions, mean list length {mean:.1f}"
    )
