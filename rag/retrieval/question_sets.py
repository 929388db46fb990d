"""Rank another question set with the grid's retrievers, from the indexes the grid already saved.

The rankings of the grid are made for a corpus's own questions. A held-out
question file must be answered with exactly the same retrieval (the same
retriever entry over the same chunk set and index) for its answers to be
comparable with the development questions'; refitting would be slower and,
for a fitted kind, could only give the same index. So each base retriever
is loaded from the arrays its ranking rule saved and searched with the new
question texts, and a fused entry fuses its components' rankings of them,
as the ``fuse`` rule does for the corpus's questions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from rag.kinds import RETRIEVER_KINDS
from rag.retrieval.fusion import fuse

# Kinds whose rankings can be made for a new question set here: the ones
# loaded from a saved index (fitted, pretrained) and the fusions of those.
SUPPORTED_ROLES = ("fitted", "pretrained", "fused")


def base_components(name: str, entries: Mapping[str, Mapping]) -> list[str]:
    """The base retrievers a (possibly fused) entry's rankings come from, each once, in order."""
    used = entries_used(name, entries)
    return [entry for entry in used if RETRIEVER_KINDS[used[entry]["kind"]].role != "fused"]


def entries_used(name: str, entries: Mapping[str, Mapping]) -> dict[str, Mapping]:
    """The entry of ``name`` and of every component it fuses, at any depth: all a ranking reads.

    The job's parameters hold only these, so adding an unrelated retriever to
    the grid never re-ranks a question set (nor re-asks the models that read it).
    """
    used = {name: entries[name]}
    if RETRIEVER_KINDS[entries[name]["kind"]].role == "fused":
        for component in entries[name]["components"]:
            used.update(entries_used(component, entries))
    return used


def rank_question_set(
    name: str,
    entries: Mapping[str, Mapping],
    question_texts: Sequence[str],
    depth: int,
    tie_order: np.ndarray,
    saved_index: Callable[[str], Mapping[str, np.ndarray]],
    allowed: np.ndarray | None = None,
) -> list:
    """The rankings of ``question_texts`` by the retriever ``name`` of ``entries``.

    ``allowed`` (a boolean mask over the chunks: the caller's view) is the
    prefilter of every base search; a mask that allows every chunk is no
    filter, so it searches exactly as without one.

    ``saved_index(base)`` gives the arrays a base retriever's ranking rule
    saved for the chunk set. A kind that cannot be loaded this way (an IVF,
    learned or funnel entry) is an error naming it, never a silently
    different retriever.
    """
    entry = entries[name]
    role = RETRIEVER_KINDS[entry["kind"]].role
    if role not in SUPPORTED_ROLES:
        raise ValueError(
            f"retriever {name!r} ({entry['kind']}): a question set outside the corpus can be ranked "
            f"only by {', '.join(SUPPORTED_ROLES)} retrievers"
        )
    if role == "fused":
        components = [
            rank_question_set(component, entries, question_texts, depth, tie_order, saved_index, allowed)
            for component in entry["components"]
        ]
        return [
            fuse(entry, [component[position] for component in components], depth, tie_order)
            for position in range(len(question_texts))
        ]
    # Imported here: the workflow reads ``entries_used`` on every start, and
    # the retrievers bring scipy, a sixth of a no-op run's time.
    from rag.retrieval.retrievers import load_retriever, search

    retriever = load_retriever(entry, saved_index(name))
    if allowed is not None and np.asarray(allowed).all():
        allowed = None
    return search(retriever, list(question_texts), depth, tie_order, allowed=allowed)


def ranking_provenance(name: str, entries: Mapping[str, Mapping]) -> dict:
    """The retriever part of the ranking's record: a fused entry's record nests its components'."""
    from rag.provenance import composite_record, retriever_record

    entry = entries[name]
    if RETRIEVER_KINDS[entry["kind"]].role != "fused":
        return retriever_record(entry)
    components = {component: ranking_provenance(component, entries) for component in entry["components"]}
    return composite_record(entry, components=components)
