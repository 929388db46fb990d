"""Per-source diversity: cap the chunks one document may place in the final list.

A long document cut into many chunks can fill the whole prompt with near
copies of itself and crowd out the one chunk from another document that
holds the decisive evidence. The cap is a selection after ranking: walk down
the ranked list in order and skip a chunk once its document already has
``max_per_document`` chunks in the selection. Order is kept, so the cap never
moves a chunk above one that outranked it.

The duplicate-source rate at k (:func:`rag.evaluation.metrics.duplicate_source_rate_at`)
measures the problem the cap addresses: the share of the top k whose
document already appeared higher up.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from rag.retrieval.search import Ranking


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
