"""What an endpoint may receive: the access levels whose text may leave this machine for a model.

An ``llm`` generator or ``judge`` entry declares ``may_receive`` (public by
default). An endpoint on this machine (the bundled model, or a host every
address of which is loopback: :mod:`rag.models.gate` decides by the address
connected to, never by the name) receives anything: the text never leaves.
One off the machine receives only what its entry declares, and a caller who
reads more is refused before any request, at planning (rag.pipeline.config) and in
``rag ask``, by the same check the gate makes again at request time.
"""

from __future__ import annotations

from collections.abc import Mapping


def loopback_endpoint(base_url: str) -> bool:
    """Whether an entry's endpoint runs on this machine: bundled, or every address it resolves to loopback."""
    from rag.models.routes import planning_route

    return planning_route(base_url).loopback


def endpoint_receives_too_much(
    name: str, entry: Mapping, caller: str, view: Mapping, role: str = "generator"
) -> str | None:
    """Why ``caller``'s text (its ``view``, a filter's configuration) may not go to entry ``name``, or None.

    The planning check of :mod:`rag.models.gate` for a caller given by name and view.
    """
    from rag.models.gate import model_entry, planning_problem
    from rag.retrieval.filters import Caller

    # What may leave depends on the levels the caller reads only.
    who = Caller(caller, access=frozenset(view.get("access") or ("public",)))
    return planning_problem(caller=who, entry=model_entry(name, entry, role))
