"""A MiniLM cosine reranker: a funnel's candidates rescored by their cosine with the question.

The ``embedder`` retriever encodes every chunk of a collection before it can
answer anything; a reranker only ever sees a first stage's few best
candidates, so it encodes just those, when it first meets them. Each text is
encoded alone, never in a padded batch, so a chunk's vector (and with it every
score) is a function of its text only, whatever the other candidates are and
whichever question reached it first. Vectors come out at unit length, so the
dot product is the cosine.

It is the table of kinds' ``rerank`` behaviour (rag/kinds.py, kind
``minilm_cosine``): ``rerank_entry(entry, chunk_texts, tie_order)`` returns a
:class:`rag.retrieval.funnel.Reranker`. It needs the optional ``dense`` extra,
like the embedder it shares its encoder with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from rag.retrieval.dense.sentence_embeddings import encode_texts

if TYPE_CHECKING:
    from rag.retrieval.funnel import Reranker


def rerank_entry(entry: Mapping, chunk_texts: Sequence[str], tie_order: np.ndarray | None = None) -> Reranker:
    """A reranker scoring candidates (chunk positions) by cosine with the query, in the entry's model.

    ``tie_order`` is not needed: the funnel breaks ties among the scores it
    returns. A chunk's vector is kept once encoded, so a candidate shared by
    many questions is encoded once.
    """
    model, max_tokens = entry["model"], entry["max_tokens"]
    vectors: dict[int, np.ndarray] = {}

    def encode_alone(text: str) -> np.ndarray:
        return encode_texts(model, [text], batch_size=1, max_tokens=max_tokens, workers=1)[0]

    def rerank(query: str, candidates: np.ndarray) -> np.ndarray:
        positions = [int(position) for position in np.asarray(candidates, dtype=np.int64)]
        if not positions:
            return np.empty(0)
        for position in positions:
            if position not in vectors:
                vectors[position] = encode_alone(chunk_texts[position])
        query_vector = encode_alone(query).astype(np.float64)
        # One dot product per candidate: a matrix product's sums would depend on the other rows.
        return np.array(
            [float(vectors[position].astype(np.float64) @ query_vector) for position in positions]
        )

    return rerank
