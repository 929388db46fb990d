"""Provenance: what made an artifact, recorded with it and digested for comparison.

Every stage writes a record into its parquet file's metadata (see
:func:`rag.io.write_parquet`) and passes it downstream: the parser version
and the documents' versions, the chunker spec and its digest, the analyzer
and stopword digests, the retriever's parameters and embedding model, any
filter, and the package version. A ranking's record therefore says everything
that could change it, and :func:`record_digest` turns that into one short id.
Two runs that differ in any of these get different ids; two runs that agree
get the same one, because records hold no timestamps or paths.

The records are plain JSON-compatible dictionaries: a ranking of a fusion or
a funnel nests the records of the rankings it was made from, and
:func:`provenance_row` flattens any of them into one table row.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping

from rag.text import analyzer_digest, stopwords_digest

# Keys under which a record nests the records it was derived from.
NESTED_KEYS = ("components", "first", "rerank")
# Upstream facts carried unchanged from stage to stage.
CARRIED_KEYS = (
    "parser_version",
    "source",
    "lock",
    "document_count",
    "documents_digest",
    "chunker",
    "chunker_digest",
)


def record_digest(record: object) -> str:
    """A short, order-independent digest of JSON-compatible data."""
    canonical = json.dumps(record, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def documents_record(versions: Mapping[str, str]) -> dict:
    """The corpus as provenance: each document's version, their count and a digest of both.

    A removed, added or re-versioned document changes the digest.
    """
    ordered = {str(doc_id): str(versions[doc_id]) for doc_id in sorted(versions)}
    return {"documents": ordered, "document_count": len(ordered), "documents_digest": record_digest(ordered)}


def carried(upstream: Mapping) -> dict:
    """The upstream facts a derived artifact keeps.

    The bulky per-document map stays behind (its digest and count travel),
    and so does the package version: each record states the version that
    wrote it.
    """
    return {key: upstream[key] for key in CARRIED_KEYS if key in upstream}


def embedding_model(entry: Mapping) -> str | None:
    """The model that embeds queries and chunks for a retriever entry; None for sparse kinds.

    LSA is fitted on the chunk set itself, so its identity is its parameters
    together with the chunk set (recorded beside it); a pretrained encoder
    names its model in the entry.
    """
    if entry.get("kind") == "lsa":
        settings = ", ".join(f"{key}={entry.get(key)}" for key in ("dimensions", "min_df", "stem"))
        return f"lsa({settings})"
    model = entry.get("model")
    return None if model is None else str(model)


def retriever_record(entry: Mapping) -> dict:
    """The retriever's part of a ranking's provenance."""
    return {
        "retriever": dict(entry),
        "retriever_digest": record_digest(entry),
        "analyzer": analyzer_digest(bool(entry.get("stem", False))),
        "stopwords": stopwords_digest(),
        "embedding_model": embedding_model(entry),
    }


def filter_record(filter_config: Mapping | None) -> dict:
    """The filter's part of a ranking's provenance (empty for an unfiltered ranking)."""
    if filter_config is None:
        return {}
    return {"filter": dict(filter_config), "filter_digest": record_digest(filter_config)}


def _walk(record: Mapping) -> Iterator[Mapping]:
    yield record
    for key in NESTED_KEYS:
        nested = record.get(key)
        if isinstance(nested, Mapping):
            children = nested.values() if key == "components" else [nested]
            for child in children:
                if isinstance(child, Mapping):
                    yield from _walk(child)


def _distinct(record: Mapping, key: str) -> str:
    values = sorted({str(part[key]) for part in _walk(record) if part.get(key) is not None})
    return "+".join(values)


def provenance_row(record: Mapping) -> dict:
    """One flat row of a (possibly nested) ranking record, for results/provenance.csv.

    Values that nested records may disagree on (analyzer, embedding model)
    list every distinct value joined by "+"; ``provenance`` is the digest of
    the whole record.
    """
    return {
        "rag_version": _distinct(record, "rag_version"),
        "parser_version": _distinct(record, "parser_version"),
        "document_count": _distinct(record, "document_count"),
        "documents_digest": _distinct(record, "documents_digest"),
        "chunker_digest": _distinct(record, "chunker_digest"),
        "analyzer": _distinct(record, "analyzer"),
        "stopwords": _distinct(record, "stopwords"),
        "retriever_digest": record.get("retriever_digest", ""),
        "embedding_model": _distinct(record, "embedding_model"),
        "filter_digest": record.get("filter_digest", ""),
        "provenance": record_digest(record),
    }
