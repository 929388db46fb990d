"""Retrievers as named in the configuration: one entry, one fitted index.

The workflow and the ``rag`` command build and query every kind through these
functions, so a retriever behaves the same in a batch experiment and in an
interactive question.

Most kinds are fitted on the chunk texts. The ``embedder`` kind is not fitted
at all: a pretrained encoder embeds chunks and queries alike, and the workflow
passes it chunk vectors from its embedding cache (:func:`embedder_retriever`).
The ``ivf`` kind files the chunk embeddings of a dense *base* retriever (an
LSA or embedder entry) in the lists of an inverted-file index and embeds
queries exactly as that base does, so its rankings differ from the base's only
by what the probed lists leave out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rag.kinds import RETRIEVER_KINDS, behaviour, kinds_with, resolve
from rag.progress import Progress, in_slices, progress_line

# The fitted kinds' modules, which rag.kinds names by dotted path and resolves
# lazily: imported here so that the ranking rules' code digests
# (rag.pipeline.code_digest reads imports) follow every module a ranking runs.
from rag.retrieval import bm25, lsa, tfidf  # noqa: F401
from rag.retrieval.dense.sentence_embeddings import TEXT_COLUMNS, EmbeddingIndex
from rag.retrieval.ivf import IVFIndex, build_ivf, rank_probed_lists
from rag.retrieval.search import Ranking
from rag.text import analyze

# Kind tuples read from the table of kinds (rag/kinds.py): kinds that index
# the chunk texts themselves, kinds whose chunks and queries are vectors in one
# space (what an IVF index can hold), kinds whose chunk vectors come from the
# embedding cache (rule rank_embedder), and kinds built from another
# retriever's index instead of the chunk texts.
SPARSE_AND_DENSE_KINDS = kinds_with(plain=True)
DENSE_KINDS = kinds_with(dense=True)
PRETRAINED_KINDS = kinds_with(rule="rank_embedder")
APPROXIMATE_KINDS = kinds_with("approximate")


class RetrieverError(ValueError):
    """A retriever that cannot be built; the message names it."""


@dataclass(frozen=True)
class Retriever:
    """A fitted retriever: its configuration entry and its index."""

    entry: Mapping
    index: object  # the class the table of kinds names as the kind's index

    @property
    def kind(self) -> str:
        return self.entry["kind"]

    def analyze(self, text: str) -> list[str]:
        return analyze(text, stem=bool(self.entry.get("stem", False)))


@dataclass(frozen=True, eq=False)
class ApproximateIndex:
    """An IVF index over a dense base retriever's chunk embeddings.

    The base stays attached because it embeds the queries and holds the
    float64 embeddings that the probed lists are scored with.
    """

    base: Retriever
    lists: IVFIndex

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The IVF arrays only: the base saves its own index."""
        return self.lists.to_arrays()


def chunk_embeddings(retriever: Retriever) -> np.ndarray:
    """The chunk vectors of a dense retriever, one unit-length row per chunk."""
    if retriever.kind in DENSE_KINDS:
        return retriever.index.chunk_embeddings
    raise RetrieverError(
        f"a {retriever.kind!r} retriever has no chunk embeddings; dense kinds: {DENSE_KINDS}"
    )


def query_embeddings(retriever: Retriever, query_texts: Sequence[str]) -> np.ndarray:
    """Query vectors of a dense retriever, in its chunks' space (zeros for a query with no known term)."""
    if retriever.kind not in DENSE_KINDS:
        raise RetrieverError(
            f"a {retriever.kind!r} retriever does not embed queries; dense kinds: {DENSE_KINDS}"
        )
    return behaviour(retriever.kind, "embed")(retriever.index, retriever.entry, query_texts)


def build_ivf_retriever(entry: Mapping, base: Retriever, name: str = "retriever") -> Retriever:
    """File the base's chunk embeddings in ``entry['lists']`` lists by seeded spherical k-means.

    Reusing the fitted base (rather than refitting it from the texts) keeps the
    vectors identical to the ones exact search ranks, which is what makes the
    two comparable.
    """
    if base.kind not in DENSE_KINDS:
        raise RetrieverError(
            f"retriever {name!r}: its base {entry['base']!r} is a {base.kind!r} retriever; "
            f"an IVF index needs a dense one ({', '.join(DENSE_KINDS)})"
        )
    vectors = chunk_embeddings(base)
    if entry["lists"] > len(vectors):
        raise RetrieverError(
            f"retriever {name!r}: {entry['lists']} lists but the chunk set has only {len(vectors)} chunks; "
            "use at most one list per chunk"
        )
    return Retriever(entry, ApproximateIndex(base, build_ivf(vectors, entry["lists"], seed=entry["seed"])))


def chunk_text_column(entry: Mapping) -> str:
    """The chunk table's column a retriever reads: its ``text`` choice, else the indexed text."""
    return TEXT_COLUMNS[entry["text"]] if "text" in entry else "indexed_text"


def embedder_retriever(entry: Mapping, chunk_embeddings: np.ndarray, name: str = "retriever") -> Retriever:
    """A retriever of the embedding cache (rule rank_embedder) over chunk vectors encoded elsewhere."""
    if entry["kind"] not in PRETRAINED_KINDS:
        raise RetrieverError(f"retriever {name!r}: kind {entry['kind']!r} is not an embedder")
    if len(chunk_embeddings) == 0:
        raise RetrieverError(f"retriever {name!r}: the chunk set is empty")
    return Retriever(
        entry,
        EmbeddingIndex(entry["model"], entry["max_tokens"], entry["batch_size"], chunk_embeddings),
    )


def build_retriever(entry: Mapping, indexed_texts: Sequence[str], name: str = "retriever") -> Retriever:
    """Fit (or encode) the index a config entry describes over the chunks' texts.

    The texts are those of :func:`chunk_text_column`: the indexed texts, or
    the plain ones for an embedder entry with ``text: plain``. The kind's
    ``build`` behaviour (rag/kinds.py) does the work; an embedder encodes
    here, without a cache.
    """
    kind = entry["kind"]
    if not indexed_texts:
        raise RetrieverError(f"retriever {name!r}: the chunk set is empty")
    if kind not in SPARSE_AND_DENSE_KINDS:
        raise RetrieverError(f"retriever {name!r}: kind {kind!r} is not built from chunk texts")
    return Retriever(entry, behaviour(kind, "build")(entry, indexed_texts))


def build_with_progress(
    entry: Mapping, indexed_texts: Sequence[str], name: str, report: Callable[[str], object]
) -> Retriever:
    """:func:`build_retriever`, then one progress line through ``report`` with the chunks indexed per second.

    Fitting is a single call with no progress of its own; the line at its end
    still times the index in the job's log, whatever the kind.
    """
    started = time.perf_counter()
    retriever = build_retriever(entry, indexed_texts, name)
    count = len(indexed_texts)
    report(progress_line(f"indexed chunks of {name}", count, count, time.perf_counter() - started))
    return retriever


# Queries searched between two progress lines of :func:`search_with_progress`.
SEARCH_SLICE = 500


def search_with_progress(
    retriever: Retriever,
    query_texts: Sequence[str],
    depth: int,
    tie_order: np.ndarray | None,
    name: str,
    report: Callable[[str], object],
) -> list[Ranking]:
    """:func:`search` in slices of :data:`SEARCH_SLICE` queries, reporting progress between them.

    Tens of thousands of queries (a BEIR split) take minutes; a line between
    slices tells a slow job from a stuck one. Each slice is one ordinary
    :func:`search` call.
    """
    progress = Progress(f"ranked questions with {name}", len(query_texts), report)
    return [
        ranking
        for part in in_slices(query_texts, SEARCH_SLICE, progress)
        for ranking in search(retriever, part, depth, tie_order)
    ]


def describe_rankings(
    name: str, chunk_count: int, question_ids: Sequence[str], rankings: Sequence[Ranking]
) -> str:
    """One log line: chunks, questions, and which questions got an empty ranking.

    A question with no term the index knows finds nothing; naming those
    questions (ids only, never chunk text) shows an analyzer or stopword
    problem in the log rather than as a low score.
    """
    empty = [qid for qid, ranking in zip(question_ids, rankings, strict=True) if len(ranking) == 0]
    return (
        f"{name}: {chunk_count} chunks, {len(question_ids)} questions, "
        f"{len(empty)} with an empty ranking {empty}"
    )


def search(
    retriever: Retriever,
    query_texts: Sequence[str],
    depth: int,
    tie_order: np.ndarray | None,
    allowed: np.ndarray | None = None,
) -> list[Ranking]:
    """Rank the chunks for every query; a query with no known term gets an empty ranking.

    ``allowed``, a boolean mask over the chunks (see :mod:`rag.retrieval.filters`), is
    a prefilter applied inside the search of every kind: chunks outside it
    are never scored, so they can never be ranked.
    """
    if RETRIEVER_KINDS[retriever.kind].search is None:
        raise RetrieverError(f"retriever kind {retriever.kind!r} cannot search chunk texts directly")
    search_kind = behaviour(retriever.kind, "search")
    return search_kind(retriever.index, retriever.entry, query_texts, depth, tie_order, allowed)


def approximate_search(
    index: ApproximateIndex,
    entry: Mapping,
    query_texts: Sequence[str],
    depth: int,
    tie_order: np.ndarray | None,
    allowed: np.ndarray | None = None,
) -> list[Ranking]:
    """The ivf kind's search: the base embeds the queries, the probed lists hold the candidates."""
    base = index.base
    return rank_probed_lists(
        index.lists,
        chunk_embeddings(base),
        query_embeddings(base, query_texts),
        entry["probes"],
        depth,
        tie_order,
        allowed=allowed,
    )


def load_retriever(
    entry: Mapping, arrays: Mapping[str, np.ndarray], base: Retriever | None = None
) -> Retriever:
    """A retriever from the arrays its ranking rule saved, without refitting.

    An ``ivf`` retriever also needs its loaded ``base``, which embeds the queries.
    """
    if entry["kind"] in APPROXIMATE_KINDS and base is None:
        raise RetrieverError(f"loading a {entry['kind']!r} retriever needs its base retriever")
    index = resolve(RETRIEVER_KINDS[entry["kind"]].index).from_arrays(arrays)
    if entry["kind"] in APPROXIMATE_KINDS:
        return Retriever(entry, ApproximateIndex(base, index))
    return Retriever(entry, index)


def search_saved(
    entry: Mapping,
    arrays: Mapping[str, np.ndarray],
    query_texts: Sequence[str],
    depth: int,
    tie_order: np.ndarray | None,
    allowed: np.ndarray | None = None,
    base: tuple[Mapping, Mapping[str, np.ndarray]] | None = None,
) -> list[Ranking]:
    """:func:`search` with a retriever loaded from the arrays its ranking rule saved.

    ``base`` is (entry, arrays) of an ``ivf`` entry's base, which embeds the queries.
    """
    loaded_base = None if base is None else load_retriever(base[0], base[1])
    return search(load_retriever(entry, arrays, loaded_base), list(query_texts), depth, tie_order, allowed)
