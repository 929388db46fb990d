"""The one gate to every model: a request carrying document text passes here or is not sent.

Every path that sends document text to a model (the ``llm`` generators'
answers, the judges, the grounding cases' served model, ``rag ask``, and any
future reranker or query rewriter) opens a :class:`Gate` with
:func:`open_gate`, whose arguments are keyword-only and have no defaults: the
caller the text is read for, the model entry it goes to, and the access
metadata of the chunks it may carry. The gate checks

* **at planning** (:func:`planning_problem`, called by rag.pipeline.config and
  ``rag ask``) and again when it is opened, that an endpoint which is not on
  this machine *by the address connected to* may receive every access level
  the caller reads (its entry's ``may_receive``);
* **at request time** (:meth:`Gate.admit`), that every chunk of the request
  is readable by the caller, through the one view function
  (:func:`rag.retrieval.filters.allowed_chunks` over ``caller.view()``:
  access level, tenant, groups and ``as_of``), and that its levels are ones
  the endpoint may receive;
* **when the request is sent** (:meth:`Gate.route`, read by
  :func:`rag.models.client.post_json`): the host is resolved once, the
  endpoint is loopback only when *every* address it resolves to is, and the
  connection goes to that resolved address, so a ``localhost`` mapped to
  another machine is judged by where it leads, not by its name. A request
  without a gate is sent only to an address that is loopback in that sense.

The resolver and the loopback test are injectable (:func:`resolving`), so a
test can map a name to another address, or let a stub on 127.0.0.1 stand in
for a machine elsewhere.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from rag.documents.access_metadata import ACCESS_LEVELS
from rag.models.client import GateError
from rag.models.routes import Route, planning_route, resolving, route_of
from rag.retrieval.filters import Caller, ChunkMetadata, allowed_chunks

__all__ = [
    "ChunkAccess",
    "Gate",
    "GateError",
    "ModelEntry",
    "Route",
    "open_gate",
    "planning_problem",
    "resolving",
    "route_of",
]


@dataclass(frozen=True)
class ModelEntry:
    """A model entry as the gate sees it: its name, its role, where it is and what it may receive."""

    name: str
    role: str
    base_url: str
    may_receive: frozenset[str]

    @property
    def where(self) -> str:
        return f"config['generators'][{self.name!r}]"


def model_entry(name: str, entry: Mapping, role: str) -> ModelEntry:
    """The gate's view of a canonical ``llm`` or ``judge`` entry (``may_receive`` public by default)."""
    return ModelEntry(name, role, str(entry["base_url"]), frozenset(entry.get("may_receive") or ("public",)))


def _levels(levels: Sequence[str] | frozenset[str]) -> str:
    return ", ".join(level for level in ACCESS_LEVELS if level in levels) or "none"


def receives_too_much(caller: Caller, entry: ModelEntry, route: Route) -> str | None:
    """Why ``caller``'s text may not go to ``entry`` at ``route``, or None (loopback receives anything)."""
    unknown = sorted(set(entry.may_receive) - set(ACCESS_LEVELS))
    if unknown:
        return (
            f"{entry.where}['may_receive']: {unknown[0]!r} is not an access level; "
            f"the levels are {', '.join(ACCESS_LEVELS)}"
        )
    if route.loopback:
        return None
    above = [level for level in ACCESS_LEVELS if level in caller.access and level not in entry.may_receive]
    if not above:
        return None
    return (
        f"caller {caller.name!r} reads {_levels(caller.access)} documents, but {entry.role} {entry.name!r} "
        f"sends its requests off this machine (to {route.where()}) and may receive only "
        f"{_levels(entry.may_receive)}; declare may_receive in {entry.where} if that endpoint may receive "
        f"{', '.join(above)} text, or answer as a caller who reads less"
    )


def planning_problem(*, caller: Caller, entry: ModelEntry) -> str | None:
    """The planning check of one (caller, entry): None, or one line naming the caller and the levels."""
    return receives_too_much(caller, entry, planning_route(entry.base_url))


@dataclass(frozen=True)
class ChunkAccess:
    """The access metadata of a chunk table: chunk id -> position in ``metadata``."""

    positions: Mapping[str, int]
    metadata: ChunkMetadata

    @classmethod
    def from_columns(cls, columns: Mapping[str, Sequence]) -> ChunkAccess:
        """From a chunk table's ``chunk_id`` and metadata columns (rag.retrieval.filters.METADATA_COLUMNS)."""
        from rag.retrieval.filters import METADATA_COLUMNS

        metadata = ChunkMetadata.from_columns(*(columns.get(column) for column in METADATA_COLUMNS))
        ids = [str(chunk_id) for chunk_id in columns["chunk_id"]]
        return cls({chunk_id: position for position, chunk_id in enumerate(ids)}, metadata)


@dataclass
class Gate:
    """One caller's requests to one model entry; made by :func:`open_gate` only."""

    caller: Caller
    entry: ModelEntry
    table: ChunkAccess
    _readable: np.ndarray = field(repr=False)
    _routes: dict[str, Route] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    admitted: int = 0

    def admit(self, chunk_ids: Sequence[str]) -> None:
        """Refuse (GateError) a request holding a chunk the caller may not read, or of a level too high.

        Counts only in the message: a chunk id or text must not reach a log the caller may read.
        """
        positions = [self.table.positions.get(chunk_id) for chunk_id in chunk_ids]
        unknown = sum(position is None for position in positions)
        unreadable = sum(position is not None and not self._readable[position] for position in positions)
        if unknown or unreadable:
            raise GateError(
                f"{self.entry.role} {self.entry.name!r}: {unknown + unreadable} of the {len(chunk_ids)} "
                f"chunks of a request are outside the view of caller {self.caller.name!r}"
                + (f" ({unknown} not in the chunk table)" if unknown else "")
                + "; nothing was sent"
            )
        levels = {self.table.metadata.access[position] for position in positions}
        route = self.route(self.entry.base_url)
        if not route.loopback and not levels <= self.entry.may_receive:
            raise GateError(
                f"{self.entry.role} {self.entry.name!r}: a request for caller {self.caller.name!r} holds "
                f"{_levels(levels)} text, but the endpoint is off this machine (at {route.where()}) and may "
                f"receive only {_levels(self.entry.may_receive)}; nothing was sent"
            )
        with self._lock:
            self.admitted += 1

    def route(self, base_url: str) -> Route:
        """The route of ``base_url``, resolved once per gate; refused when the caller reads too much."""
        with self._lock:
            found = self._routes.get(base_url)
        if found is None:
            found = planning_route(base_url)
            with self._lock:
                found = self._routes.setdefault(base_url, found)
        problem = receives_too_much(self.caller, self.entry, found)
        if problem:
            raise GateError(problem)
        return found


def open_gate(*, caller: Caller, entry: ModelEntry, table: ChunkAccess) -> Gate:
    """The gate of ``caller``'s requests to ``entry``; refused at once when the planning check fails."""
    if not (isinstance(caller, Caller) and isinstance(entry, ModelEntry) and isinstance(table, ChunkAccess)):
        raise TypeError("open_gate needs a Caller, a ModelEntry and a ChunkAccess")
    problem = planning_problem(caller=caller, entry=entry)
    if problem:
        raise GateError(problem)
    readable = allowed_chunks(caller.view(), table.metadata)
    return Gate(caller, entry, table, readable)


def chunk_access(path: str) -> ChunkAccess:
    """The access metadata of a chunk table file (its ``chunk_id`` and metadata columns)."""
    from rag.formats.tables import read_columns
    from rag.retrieval.filters import METADATA_COLUMNS

    return ChunkAccess.from_columns(read_columns(path, ["chunk_id", *METADATA_COLUMNS]))


def table_gate(*, caller: Caller, name: str, entry: Mapping, role: str, chunks: str | None) -> Gate:
    """:func:`open_gate` for a config entry and a chunk table file (None: requests carry no chunks)."""
    table = empty_table() if chunks is None else chunk_access(chunks)
    return open_gate(caller=caller, entry=model_entry(name, entry, role), table=table)


def empty_table() -> ChunkAccess:
    """A chunk table with no chunks: a gate over it admits requests that carry no document text."""
    return ChunkAccess({}, ChunkMetadata((), (), (), ()))
