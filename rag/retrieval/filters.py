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
    acme_engineering: {tenant: acme, groups: [engineering], access: [public, internal]}

Every condition given must hold (they are combined with AND); a filter with
no condition allows every chunk. ``as_of`` keeps the chunks of documents
updated on or before that date; a document without a date is left out,
because nothing shows it existed in that state by then. ``tenant`` keeps the
chunks of documents of that tenant and the shared ones (tenant ""); ``groups``
keeps the chunks of documents whose ACL is empty or names one of the groups
(``groups: []`` is a member of no group: it reads documents without an ACL).

A *caller* (the ``callers:`` section, :class:`Caller`) is the same thing seen
from the other side: a tenant, the groups it belongs to, the access levels it
may read and optionally an ``as_of`` date. Its view (:meth:`Caller.view`) is a
filter with ``tenant`` and ``groups`` always set, so a document is readable by
a caller iff its access level is among the caller's levels, its tenant is
shared or the caller's, and its ACL is empty or meets the caller's groups
(:func:`readable`, the one-document form every mask is tested against).
Without a named caller, a model answers as :data:`PUBLIC_CALLER`.

Post-filtering is implemented too, only as the ablation it is measured
against (:func:`postfilter` here; the comparison is
:func:`rag.evaluation.ablations.compare_filtering`).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rag.documents.access_metadata import ACCESS_LEVELS, PRINCIPAL_NAME
from rag.retrieval.search import Ranking, check_allowed

FILTER_KEYS: tuple[str, ...] = ("access", "tags_any", "tags_all", "doc_ids", "as_of", "tenant", "groups")
CALLER_KEYS: tuple[str, ...] = ("tenant", "groups", "access", "as_of")


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
    ``tenant``: the chunk's document is shared (tenant "") or of this tenant.
    ``groups``: the chunk's document has no ACL, or its ACL names one of these.
    """

    access: frozenset[str] | None = None
    tags_any: frozenset[str] | None = None
    tags_all: frozenset[str] | None = None
    doc_ids: frozenset[str] | None = None
    as_of: datetime.date | None = None
    tenant: str | None = None
    groups: frozenset[str] | None = None

    def to_config(self) -> dict:
        """The filter as canonical configuration data (sorted lists, ISO date)."""
        config: dict[str, object] = {}
        for key in FILTER_KEYS:
            value = getattr(self, key)
            if value is None:
                continue
            if key == "as_of":
                config[key] = value.isoformat()
            elif key == "tenant":
                config[key] = value
            else:
                config[key] = sorted(value)
        return config


@dataclass(frozen=True)
class ChunkMetadata:
    """The filterable metadata of a chunk set, one entry per chunk position."""

    doc_ids: tuple[str, ...]
    access: tuple[str, ...]
    tags: tuple[tuple[str, ...], ...]
    updated: tuple[str | None, ...]
    # Shared ("") unless the document names a tenant; no ACL unless it names groups.
    tenant: tuple[str, ...] = ()
    acl: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        if not self.tenant and not self.acl and self.doc_ids:
            object.__setattr__(self, "tenant", ("",) * len(self.doc_ids))
            object.__setattr__(self, "acl", ((),) * len(self.doc_ids))
        lengths = (self.doc_ids, self.access, self.tags, self.updated, self.tenant, self.acl)
        if len({len(column) for column in lengths}) != 1:
            raise FilterError(
                f"chunk metadata columns differ in length: {len(self.doc_ids)} doc ids, "
                f"{len(self.access)} access levels, {len(self.tags)} tag lists, {len(self.updated)} dates, "
                f"{len(self.tenant)} tenants, {len(self.acl)} ACLs"
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
        tenant: Iterable[str | None] | None = None,
        acl: Iterable[Iterable[str] | None] | None = None,
    ) -> ChunkMetadata:
        """The metadata from table columns; without tenant and ACL columns every chunk is shared and open."""
        return cls(
            tuple(str(doc_id) for doc_id in doc_ids),
            tuple(str(level) for level in access),
            tuple(tuple(str(tag) for tag in chunk_tags) for chunk_tags in tags),
            tuple(None if _missing(date) else str(date) for date in updated),
            () if tenant is None else tuple("" if _missing(name) else str(name) for name in tenant),
            ()
            if acl is None
            else tuple(
                tuple(str(group) for group in (groups if groups is not None else ())) for groups in acl
            ),
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


PRINCIPAL_RULE = "letters, digits, _ . : @ + / -; no spaces, commas or control characters"


def principal_problem(value: object, what: str) -> str | None:
    """Why ``value`` is not a tenant or group name as documents write them (PRINCIPAL_NAME), or None.

    One rule for the pipeline's callers and filters and ``rag ask``'s flags:
    a name a document could never carry ("acme corp", "a,b") would match
    nothing, so it is refused rather than read as a view of nothing.
    """
    if not isinstance(value, str) or not PRINCIPAL_NAME.fullmatch(value):
        shown = value if not isinstance(value, str) else value.encode("unicode_escape").decode("ascii")
        return f"{shown!r} is not a {what} name ({PRINCIPAL_RULE})"
    return None


def _groups(value: object, where: str) -> frozenset[str]:
    """Group names; unlike other lists an empty one means something: a member of no group."""
    if isinstance(value, list | tuple) and not value:
        return frozenset()
    groups = _names(value, where)
    for group in sorted(groups):
        problem = principal_problem(group, "group")
        if problem:
            raise FilterError(f"{where}: {problem}")
    return groups


def _tenant(value: object, where: str) -> str:
    """A tenant name; "" is the shared tenant (a caller of no tenant reads shared documents only)."""
    if value == "":
        return value
    problem = principal_problem(value, "tenant")
    if problem:
        raise FilterError(f'{where}: expected a tenant name ("" for shared only): {problem}')
    return value


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
    if "tenant" in entry:
        values["tenant"] = _tenant(entry["tenant"], f"{where}['tenant']")
    if "groups" in entry:
        values["groups"] = _groups(entry["groups"], f"{where}['groups']")
    return ChunkFilter(**values)


def allowed_chunks(chunk_filter: ChunkFilter, metadata: ChunkMetadata) -> np.ndarray:
    """The prefilter mask: True for every chunk position the filter allows."""
    allowed = np.ones(len(metadata), dtype=bool)
    if chunk_filter.doc_ids is not None:
        allowed &= np.array([doc_id in chunk_filter.doc_ids for doc_id in metadata.doc_ids], dtype=bool)
    if chunk_filter.tags_any is not None:
        wanted = chunk_filter.tags_any
        allowed &= np.array([not wanted.isdisjoint(tags) for tags in metadata.tags], dtype=bool)
    if chunk_filter.tags_all is not None:
        wanted = chunk_filter.tags_all
        allowed &= np.array([wanted.issubset(tags) for tags in metadata.tags], dtype=bool)
    if any(getattr(chunk_filter, key) is not None for key in ("access", "as_of", "tenant", "groups")):
        # The caller conditions, by the one rule (view_allows), once per distinct document metadata.
        decided: dict[tuple, bool] = {}
        mask = np.empty(len(metadata), dtype=bool)
        columns = zip(metadata.access, metadata.tenant, metadata.acl, metadata.updated, strict=True)
        for position, key in enumerate(columns):
            if key not in decided:
                access, tenant, acl, updated = key
                decided[key] = view_allows(chunk_filter, access, tenant, acl, updated)
            mask[position] = decided[key]
        allowed &= mask
    return allowed


@dataclass(frozen=True)
class Caller:
    """Who a request runs as: a tenant, its groups (principals), the access levels it may read.

    ``tenant`` "" is no tenant (shared documents only); ``groups`` empty is a
    member of no group (documents without an ACL only). ``as_of``, when set,
    is the date the caller's principals were taken at: documents updated
    after it are left out, as a filter's ``as_of`` does.
    """

    name: str
    tenant: str = ""
    groups: frozenset[str] = frozenset()
    access: frozenset[str] = frozenset({"public"})
    as_of: datetime.date | None = None

    def view(self) -> ChunkFilter:
        """The caller as a filter: tenant and groups always set, so every condition applies."""
        return ChunkFilter(access=self.access, tenant=self.tenant, groups=self.groups, as_of=self.as_of)

    def levels(self) -> list[str]:
        """The access levels the caller reads, lowest first."""
        return [level for level in ACCESS_LEVELS if level in self.access]


# Who a model answers for when nothing names a caller: public documents that
# are shared and open to everyone, nothing else.
PUBLIC_CALLER = Caller("public_caller")


def parse_caller(name: str, entry: Mapping, where: str = "caller") -> Caller:
    """A Caller from configuration data (the ``callers:`` section); errors name ``where`` and the key."""
    if not isinstance(entry, Mapping):
        raise FilterError(f"{where}: a caller must be a mapping with {', '.join(CALLER_KEYS)}, got {entry!r}")
    unknown = sorted(set(entry) - set(CALLER_KEYS), key=str)
    if unknown:
        raise FilterError(f"{where}[{unknown[0]!r}]: unknown caller key; allowed: {list(CALLER_KEYS)}")
    view = parse_filter({"access": ["public"], "tenant": "", "groups": [], **entry}, where)
    return Caller(name, view.tenant or "", view.groups or frozenset(), view.access or frozenset(), view.as_of)


def caller_from_view(name: str, chunk_filter: ChunkFilter) -> Caller | None:
    """The caller a filter is the view of, or None when it does not name tenant and groups (not a caller)."""
    if chunk_filter.tenant is None or chunk_filter.groups is None or chunk_filter.access is None:
        return None
    return Caller(name, chunk_filter.tenant, chunk_filter.groups, chunk_filter.access, chunk_filter.as_of)


class _Undated:
    """The date of a document a consumer did not pass (refused for a dated caller)."""

    def __repr__(self) -> str:
        return "UNDATED"


UNDATED = _Undated()


def view_allows(
    view: ChunkFilter, access: str, tenant: str, acl: Iterable[str], updated: object = UNDATED
) -> bool:
    """Whether a view's caller conditions (access, tenant, groups, as_of) allow one document.

    The one rule every consumer of "may this caller read this" goes through:
    rankings' masks (:func:`allowed_chunks`), lead summaries, prompts of whole
    documents, ``rag ask``, the revocation measurement, judges and traces
    (:func:`readable` is its one-caller form). A condition that is None is no
    condition. With ``as_of`` set, a document updated after it, or without a
    date, is not readable, and ``updated`` must be given: leaving it out is a
    programming error (TypeError), never "readable".
    """
    acl = tuple(acl)
    if view.access is not None and access not in view.access:
        return False
    if view.tenant is not None and tenant not in ("", view.tenant):
        return False
    if view.groups is not None and acl and view.groups.isdisjoint(acl):
        return False
    if view.as_of is not None:
        if updated is UNDATED:
            raise TypeError("a view with as_of needs the document's updated date (None when it has none)")
        if _missing(updated) or _parse_date(updated, "updated") > view.as_of:
            return False
    return True


def readable(
    caller: Caller, access: str, tenant: str = "", acl: Iterable[str] = (), updated: object = UNDATED
) -> bool:
    """Whether one document (access level, tenant, ACL, date updated) is readable by ``caller``.

    :func:`view_allows` of the caller's view: its tenant, groups, levels and
    ``as_of``. ``updated`` is the document's ISO date (None when it has none);
    a dated caller needs it (TypeError without it).
    """
    return view_allows(caller.view(), access, tenant, acl, updated)


def readable_document(caller: Caller, document: object) -> bool:
    """:func:`readable` of an object with ``access``, ``tenant``, ``acl`` and ``updated`` (a Document)."""
    return readable(
        caller,
        document.access,
        getattr(document, "tenant", ""),
        getattr(document, "acl", ()),
        updated=getattr(document, "updated", None),
    )


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
METADATA_COLUMNS = ("doc_id", "access", "tags", "updated", "tenant", "acl")


def allowed_by_config(columns: Mapping[str, Sequence], filter_config: Mapping, name: str) -> np.ndarray:
    """The mask of chunks a configured filter allows, from the chunk table's metadata columns.

    A table without ``tenant`` and ``acl`` columns (written before documents
    had them) is shared and open: its other conditions still hold.
    """
    metadata = ChunkMetadata.from_columns(*(columns.get(column) for column in METADATA_COLUMNS))
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


def filter_warnings(columns: Mapping[str, Sequence], filter_config: Mapping, name: str) -> list[str]:
    """:func:`absent_values` of a configured filter over a chunk table's columns, escaped for a terminal."""
    from rag.escaping import visible

    metadata = ChunkMetadata.from_columns(*(columns.get(column) for column in METADATA_COLUMNS))
    warnings = absent_values(parse_filter(filter_config, name), metadata, name)
    return [visible(warning, keep_newlines=False) for warning in warnings]  # tags and ids are the user's text
