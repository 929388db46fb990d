"""The sources a language model may be given for one caller: its ranking, checked against its view.

The ranking was searched within the caller's view already (a prefilter,
``work/filtered/.../{caller}/...``); :func:`caller_top_chunks` is the second
guard and fails closed. :func:`read_caller_sources` reads what an answer job
needs for that: the chunks, the caller's view over them, the ranking with
its scores (for the traces) and the versions of the index and ranker.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from rag.chunking import Chunk
from rag.retrieval.filters import Caller, allowed_by_config, caller_from_view, parse_filter


class UnreadableChunk(ValueError):
    """A ranking offered a chunk its caller may not read: no prompt is built from it."""


def caller_top_chunks(
    ranked_ids: Sequence[str], chunks: Mapping[str, Chunk], k: int, readable: Collection[str], caller: str
) -> list[Chunk]:
    """The first ``k`` chunks of a ranking for the prompt of ``caller``, who may read ``readable``.

    A chunk outside the view stops the job instead of being skipped: a
    ranking that holds one was made for someone else. The error names
    counts, never the chunk.
    """
    chosen = list(ranked_ids[:k])
    unreadable = sum(chunk_id not in readable for chunk_id in chosen)
    if unreadable:
        raise UnreadableChunk(
            f"{unreadable} of the top {len(chosen)} chunks are outside the view of caller {caller!r}; "
            "the ranking was not searched for this caller, so no prompt is built from it"
        )
    return [chunks[chunk_id] for chunk_id in chosen]


def named_caller(encoded: str) -> tuple[Caller, dict]:
    """The caller and its view from a rule's ``caller`` parameter ({"name", "view"} as JSON)."""
    named = json.loads(encoded)
    caller = caller_from_view(named["name"], parse_filter(named["view"], named["name"]))
    if caller is None:
        raise ValueError(f"caller {named['name']!r}: its view names no tenant and groups")
    return caller, named["view"]


@dataclass(frozen=True)
class CallerSources:
    """One caller's chunks, the ones it may read, its rankings (ids, scores) and the versions read."""

    caller: Caller
    chunks: Mapping[str, Chunk]
    readable: frozenset[str]
    rankings: Mapping[str, tuple[list[str], list[float]]]
    versions: Mapping[str, object]

    def top_chunks(self, question_id: str, k: int) -> list[Chunk]:
        ranked = self.rankings[question_id][0]
        return caller_top_chunks(ranked, self.chunks, k, self.readable, self.caller.name)


def read_caller_sources(
    chunk_list: Sequence[Chunk],
    chunks_path: str,
    ranking_path: str,
    caller: Caller,
    view: Mapping,
    question_ids: Sequence[str],
    retriever: str,
) -> CallerSources:
    """The caller's sources from the chunk table and its ranking file (see :class:`CallerSources`)."""
    from rag.formats.tables import read_columns, read_provenance
    from rag.retrieval.filters import METADATA_COLUMNS
    from rag.retrieval.ranking_files import read_rankings

    chunk_ids = [chunk.chunk_id for chunk in chunk_list]
    allowed = allowed_by_config(read_columns(chunks_path, list(METADATA_COLUMNS)), view, caller.name)
    rankings = {
        question_id: ([chunk_ids[p] for p in ranking.positions], ranking.scores.tolist())
        for question_id, ranking in read_rankings(ranking_path, chunk_ids, question_ids).items()
    }
    versions = {
        "index": read_provenance(chunks_path),
        "ranker": {retriever: read_provenance(ranking_path).get("retriever")},
    }
    return CallerSources(
        caller,
        {chunk.chunk_id: chunk for chunk in chunk_list},
        frozenset(chunk_id for chunk_id, kept in zip(chunk_ids, allowed, strict=True) if kept),
        rankings,
        versions,
    )


def named_caller_sources(
    encoded_caller: str,
    chunk_list: Sequence[Chunk],
    chunks_path: str,
    ranking_path: str,
    question_ids: Sequence[str],
    retriever: str,
) -> CallerSources:
    """:func:`read_caller_sources` for the caller a rule's ``caller`` parameter names."""
    caller, view = named_caller(encoded_caller)
    return read_caller_sources(chunk_list, chunks_path, ranking_path, caller, view, question_ids, retriever)


def sources_and_evidence(
    chunks_path: str,
    ranking_path: str,
    parsed_path: str,
    caller: Caller,
    view: Mapping,
    questions: Sequence,
    retriever: str,
) -> tuple[CallerSources, dict]:
    """An answer job's caller sources and each question's evidence chunks (for evidence_in_prompt)."""
    import pandas as pd

    from rag.answering.answers import evidence_chunks
    from rag.chunk_tables import chunks_from_frame
    from rag.corpus.document_tables import documents_from_frame
    from rag.evaluation.chunk_judging import judge_chunks
    from rag.labels import locate_spans

    chunk_list = chunks_from_frame(pd.read_parquet(chunks_path))
    ids = [question.question_id for question in questions]
    sources = read_caller_sources(chunk_list, chunks_path, ranking_path, caller, view, ids, retriever)
    documents = documents_from_frame(pd.read_parquet(parsed_path))
    evidence = evidence_chunks(judge_chunks(questions, locate_spans(questions, documents), list(chunk_list)))
    return sources, evidence


def readable_documents(documents: Sequence, caller: Caller) -> list:
    """The documents ``caller`` may read (level, tenant, ACL and its ``as_of``): what a prompt of
    whole documents (the lead summaries) may hold, by the one rule
    (:func:`rag.retrieval.filters.readable_document`)."""
    from rag.retrieval.filters import readable_document

    return [doc for doc in documents if readable_document(caller, doc)]
