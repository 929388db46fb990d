"""Per-source diversity: cap the chunks one document may place in the final list.

A long document cut into many chunks can fill the whole prompt with near
copies of itself and crowd out the one chunk from another document that
holds the decisive evidence. The cap is a selection after ranking: walk down
the ranked list in order and skip a chunk once its document already has
``max_per_document`` chunks in the selection. Order is kept, so the cap never
moves a chunk above one that outranked it.

The duplicate-source rate at k (:func:`rag.metrics.duplicate_source_rate_at`)
measures the problem the cap addresses: the share of the top k whose
document already appeared higher up.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from rag.metrics import Relevance, evaluate_rankings
from rag.search import Ranking


def _check_cap(max_per_document: int | None) -> None:
    if max_per_document is None:
        return
    if isinstance(max_per_document, bool) or not isinstance(max_per_document, int | np.integer):
        raise ValueError(f"max_per_document must be a positive integer or None, got {max_per_document!r}")
    if max_per_document < 1:
        raise ValueError(f"max_per_document must be at least 1, got {max_per_document}")


def select_per_document(
    documents: Sequence[Hashable], max_per_document: int | None, limit: int | None = None
) -> list[int]:
    """Indices into a ranked list kept by the cap, best first, at most ``limit`` of them.

    ``documents`` gives the document of each ranked item in rank order; None
    as the cap keeps everything (up to ``limit``).
    """
    _check_cap(max_per_document)
    if limit is not None and limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")
    kept: list[int] = []
    seen: dict[Hashable, int] = {}
    for index, document in enumerate(documents):
        if limit is not None and len(kept) >= limit:
            break
        if max_per_document is not None and seen.get(document, 0) >= max_per_document:
            continue
        seen[document] = seen.get(document, 0) + 1
        kept.append(index)
    return kept


def cap_ranking(
    ranking: Ranking,
    chunk_documents: Sequence[Hashable],
    max_per_document: int | None,
    depth: int | None = None,
) -> Ranking:
    """The ranking after the per-document cap; ``chunk_documents`` is indexed by chunk position."""
    documents = [chunk_documents[position] for position in ranking.positions]
    kept = np.array(select_per_document(documents, max_per_document, depth), dtype=np.int64)
    return Ranking(ranking.positions[kept], ranking.scores[kept])


def cap_ids(
    ranked: Sequence[str], document_of: Mapping[str, Hashable], max_per_document: int | None
) -> list[str]:
    """The cap applied to a ranked list of chunk ids."""
    kept = select_per_document([document_of[chunk_id] for chunk_id in ranked], max_per_document)
    return [ranked[index] for index in kept]


def diversity_ablation(
    rankings: Mapping[str, Sequence[str]],
    relevance: Mapping[str, Relevance],
    document_of: Mapping[str, Hashable],
    caps: Sequence[int | None],
    ks: Sequence[int],
) -> pd.DataFrame:
    """Metrics of the same rankings without and with each per-document cap.

    One row per (cap, k): the means over questions of recall, nDCG and the
    duplicate-source rate at k, and the MRR of the capped list (the same on
    every row of a cap). ``caps`` may contain None for the uncapped list.
    """
    rows = []
    for cap in caps:
        capped = {question: cap_ids(list(ranked), document_of, cap) for question, ranked in rankings.items()}
        frame = evaluate_rankings(capped, relevance, ks, chunk_documents=document_of)
        means = frame.groupby(["metric", "k"])["value"].mean()
        for k in ks:
            rows.append(
                {
                    "max_per_document": cap,
                    "k": int(k),
                    "recall": means["recall", k],
                    "ndcg": means["ndcg", k],
                    "duplicate_source_rate": means["duplicate_source_rate", k],
                    "mrr": means["reciprocal_rank", 0],
                    "questions": len(relevance),
                }
            )
    import pandas as pd  # only the summary tables need it; the pipeline's funnel jobs do not

    table = pd.DataFrame(rows)
    table["max_per_document"] = table["max_per_document"].astype("Int64")
    return table
