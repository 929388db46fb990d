"""Metadata filters as data, applied inside retrieval as a prefilter.

A filter is part of the query, not a cleanup pass. Retrieving globally and
dropping the disallowed chunks afterwards (post-filtering) returns fewer
results than asked whenever forbidden chunks took places in the top k, and
it has already scored, ranked and possibly logged or reranked text the caller
may not see. So a filter here becomes a boolean mask over the chunk
positions, and every search takes that mask *before* it compares scores
(``allowed`` in :func:`rag.retrieval.retrievers.search`): a filtered-out chunk is never
scored and can never be ranked.

Filters are plain data, written in the configuration::

    public_only: {access: [public]}
    outer_planets: {tags_any: [outer-system], access: [public]}
    as_of_mid_2026: {as_of: "2026-06-30"}

Every condition given must hold (they are combined with AND); a filter with
no condition allows every chunk. ``as_of`` keeps the chunks of documents
updated on or before that date; a document without a date is left out,
because nothing shows it existed in that state by then.

Post-filtering is implemented too, only as the ablation it is measured
against (:func:`postfilter` here; the comparison is
:func:`rag.evaluation.ablations.compare_filtering`).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rag.corpus.documents import ACCESS_LEVELS
from rag.retrieval.search import Ranking, check_allowed

FILTER_KEYS: tuple[str, ...] = ("access", "tags_any", "tags_all", "doc_ids", "as_of")


class FilterError(ValueError):
    """A filter that cannot be applied; the message names it and the key."""


@dataclass(frozen=True)
class ChunkFilter:
    """Conditions on chunk metadata; None means "no condition on this field".

    ``access``: the chunk's access level is one of these.
    ``tags_any``: the chunk has at least one of these tags.
    ``tags_all``: the chunk has every one of these tags.
    ``doc_ids``: the chunk belongs to one of these documents.
    ``as_of``: the chunk's document was updated on or before this ISO date.
    """

    access: frozenset[str] | None = None
    tags_any: frozenset[str] | None = None
    tags_all: frozenset[str] | None = None
    doc_ids: frozenset[str] | None = None
    as_of: datetime.date | None = None

    def to_config(self) -> dict:
        """The filter as canonical configuration data (sorted lists, ISO date)."""
        config: dict[str, object] = {}
        for key in FILTER_KEYS:
            value = getattr(self, key)
            if value is None:
                continue
            config[key] = value.isoformat() if key == "as_of" else sorted(value)
        return config


@dataclass(frozen=True)
class ChunkMetadata:
    """The filterable metadata of a chunk set, one entry per chunk position."""

    doc_ids: tuple[str, ...]
    access: tuple[str, ...]
    tags: tuple[tuple[str, ...], ...]
    updated: tuple[str | None, ...]

    def __post_init__(self) -> None:
        sizes = {len(self.doc_ids), len(self.access), len(self.tags), len(self.updated)}
        if len(sizes) != 1:
            raise FilterError(
                f"chunk metadata columns differ in length: {len(self.doc_ids)} doc ids, "
                f"{len(self.access)} access levels, {len(self.tags)} tag lists, {len(self.updated)} dates"
            )

    def __len__(self) -> int:
        return len(self.doc_ids)

    @classmethod
    def from_columns(
        cls,
        doc_ids: Iterable[str],
        access: Iterable[str],
        tags: Iterable[Iterable[str]],
        updated: Iterable[str | None],
    ) -> ChunkMetadata:
        return cls(
            tuple(str(doc_id) for doc_id in doc_ids),
            tuple(str(level) for level in access),
            tuple(tuple(str(tag) for tag in chunk_tags) for chunk_tags in tags),
            tuple(None if _missing(date) else str(date) for date in updated),
        )


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value)) or value == ""


def _parse_date(value: object, where: str) -> datetime.date:
    """An ISO date; a timestamp's date part counts ("2026-06-30T12:00:00Z" is 2026-06-30)."""
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    text = str(value).strip()
    try:
        return datetime.date.fromisoformat(text[:10])
    except ValueError:
        raise FilterError(f"{where}: {value!r} is not a date (YYYY-MM-DD)") from None


def _names(value: object, where: str) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, list | tuple | set | frozenset):
        raise FilterError(f"{where}: expected a list of names, got {value!r}")
    if not value:
        raise FilterError(f"{where}: an empty list would allow nothing; leave the key out instead")
    for name in value:
        if not isinstance(name, str) or not name:
            raise FilterError(f"{where}: {name!r} is not a name")
    return frozenset(value)


def _access_levels(value: object, where: str) -> frozenset[str]:
    """Names from :data:`ACCESS_LEVELS` only.

    Why: the levels are a closed set, so ``access: [Public]`` or ``[x]``
    could only ever allow nothing; refused at planning, it cannot give an
    empty ranking without a word.
    """
    levels = _names(value, where)
    for level in sorted(levels):
        if level not in ACCESS_LEVELS:
            hint = f"; did you mean {level.lower()!r}?" if level.lower() in ACCESS_LEVELS else ""
            raise FilterError(
                f"{where}: no document can have access {level!r}; the levels are "
                f"{', '.join(ACCESS_LEVELS)}{hint}"
            )
    return levels


def parse_filter(entry: Mapping, where: str = "filter") -> ChunkFilter:
    """A ChunkFilter from configuration data; errors name ``where`` and the key."""
    if not isinstance(entry, Mapping):
        raise FilterError(f"{where}: a filter must be a mapping of conditions, got {entry!r}")
    unknown = sorted(set(entry) - set(FILTER_KEYS))
    if unknown:
        raise FilterError(f"{where}[{unknown[0]!r}]: unknown filter key; allowed: {list(FILTER_KEYS)}")
    values: dict[str, object] = {}
    if "access" in entry:
        values["access"] = _access_levels(entry["access"], f"{where}['access']")
    for key in ("tags_any", "tags_all", "doc_ids"):
        if key in entry:
            values[key] = _names(entry[key], f"{where}[{key!r}]")
    if "as_of" in entry:
        values["as_of"] = _parse_date(entry["as_of"], f"{where}['as_of']")
    return ChunkFilter(**values)


def allowed_chunks(chunk_filter: ChunkFilter, metadata: ChunkMetadata) -> np.ndarray:
    """The prefilter mask: True for every chunk position the filter allows."""
    allowed = np.ones(len(metadata), dtype=bool)
    if chunk_filter.access is not None:
        allowed &= np.array([level in chunk_filter.access for level in metadata.access], dtype=bool)
    if chunk_filter.doc_ids is not None:
        allowed &= np.array([doc_id in chunk_filter.doc_ids for doc_id in metadata.doc_ids], dtype=bool)
    if chunk_filter.tags_any is not None:
        wanted = chunk_filter.tags_any
        allowed &= np.array([not wanted.isdisjoint(tags) for tags in metadata.tags], dtype=bool)
    if chunk_filter.tags_all is not None:
        wanted = chunk_filter.tags_all
        allowed &= np.array([wanted.issubset(tags) for tags in metadata.tags], dtype=bool)
    if chunk_filter.as_of is not None:
        cutoff = chunk_filter.as_of
        allowed &= np.array(
            [
                date is not None and _parse_date(date, f"chunk {position}: updated") <= cutoff
                for position, date in enumerate(metadata.updated)
            ],
            dtype=bool,
        )
    return allowed


def restrict_ranking(ranking: Ranking, allowed: np.ndarray) -> Ranking:
    """A ranking without its disallowed chunks, order kept.

    For a ranking that should already respect the filter (a reranker's
    candidates taken from a prefiltered first stage) this is a second guard,
    not the filter itself.
    """
    allowed = check_allowed(allowed, len(allowed))
    kept = allowed[ranking.positions]
    return Ranking(ranking.positions[kept], ranking.scores[kept])


def postfilter(ranked: Sequence[str], allowed_ids: Iterable[str] | set[str], k: int) -> list[str]:
    """The ablation: the global top k with the disallowed chunks dropped afterwards.

    The result is shorter than k whenever a forbidden chunk held one of the
    top k places; that shortfall is what a prefilter avoids.
    """
    allowed = allowed_ids if isinstance(allowed_ids, set | frozenset) else set(allowed_ids)
    return [chunk_id for chunk_id in ranked[:k] if chunk_id in allowed]


# The chunk table's columns a filter reads.
METADATA_COLUMNS = ("doc_id", "access", "tags", "updated")


def allowed_by_config(columns: Mapping[str, Sequence], filter_config: Mapping, name: str) -> np.ndarray:
    """The mask of chunks a configured filter allows, from the chunk table's metadata columns."""
    metadata = ChunkMetadata.from_columns(*(columns[column] for column in METADATA_COLUMNS))
    return allowed_chunks(parse_filter(filter_config, f"filter {name!r}"), metadata)


def absent_values(chunk_filter: ChunkFilter, metadata: ChunkMetadata, name: str) -> list[str]:
    """One warning per filter key naming the values no chunk has, and what is present.

    Why: planning cannot see the documents, so a tag or document id that no
    document carries (a typo, a renamed file) would narrow the ranking, or
    empty it, without a word; the job that reads the chunks says so. Present
    access levels and tags are named; document ids only counted, as the log
    may be read by people without access to every document.
    """
    tags = {tag for chunk_tags in metadata.tags for tag in chunk_tags}
    present = {"access": set(metadata.access), "tags_any": tags, "tags_all": tags}
    present["doc_ids"] = set(metadata.doc_ids)
    warnings = []
    for key, known in present.items():
        wanted = getattr(chunk_filter, key)
        missing = sorted(wanted - known) if wanted is not None else []
        if not missing:
            continue
        shown = f"{len(known)} documents" if key == "doc_ids" else ", ".join(sorted(known)) or "none"
        warnings.append(
            f"filter {name!r}[{key!r}]: no document has {', '.join(map(repr, missing))}; present: {shown}"
        )
    return warnings


def describe_filtered(name: str, filter_name: str, allowed: np.ndarray, rankings: Sequence[Ranking]) -> str:
    """One log line of a prefiltered ranking job: how many chunks the filter allows, how many lists are empty.

    Counts only: a chunk id or text, allowed or not, must never reach a log
    that people without access to the chunk may read.
    """
    empty = sum(len(ranking) == 0 for ranking in rankings)
    return (
        f"{name}, filter {filter_name!r}: {int(allowed.sum())} of {len(allowed)} chunks allowed; "
        f"{len(rankings)} questions, {empty} with an empty ranking"
    )
