"""Checking and canonicalizing the pipeline's configuration.

The JSON schema catches misspelled keys and wrong types; this module adds
what a schema cannot say well (which parameters belong to which kind, that an
overlap is smaller than its window, that a fusion names existing retrievers)
and turns every grid entry into a canonical form with its defaults filled in.
Rules compare parameters in that canonical form, so reordering or restating a
default in ``config.yaml`` never re-runs anything.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import jsonschema


class ConfigError(ValueError):
    """A configuration mistake; the message starts with the key path."""


def schema_errors(config: Mapping, schema: Mapping) -> list[str]:
    """Every schema violation as one line that starts with the key path."""
    validator = jsonschema.Draft202012Validator(schema)
    messages = []
    for error in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        path = "config" + "".join(
            f"[{part!r}]" if isinstance(part, str) else f"[{part}]" for part in error.absolute_path
        )
        if error.validator == "additionalProperties":
            allowed = sorted(error.schema.get("properties", {}))
            extra = sorted(set(error.instance) - set(allowed))
            for key in extra:
                hint = f"; allowed keys: {', '.join(allowed)}" if allowed else ""
                messages.append(f"{path}[{key!r}]: unknown key {key!r}{hint}")
        else:
            messages.append(f"{path}: {error.message}")
    return messages


CHUNKER_PARAMETERS: dict[str, dict[str, object]] = {
    "fixed": {"words": None, "overlap": 0, "header": True},
    "sentences": {"max_words": None, "header": True},
    "sections": {"header": True},
}

RETRIEVER_PARAMETERS: dict[str, dict[str, object]] = {
    "bm25": {"k1": 1.5, "b": 0.75, "idf": "lucene", "stem": False},
    "tfidf": {"normalize": True, "sublinear": True, "stem": False},
    "lsa": {"dimensions": 128, "min_df": 2, "stem": False},
    "rrf": {"components": None, "constant": 60},
    "score_sum": {"components": None},
    "funnel": {"first": None, "rerank": None, "candidates": 30, "diversity": None},
}

# Parameters whose null is a setting ("no reranking", "no cap"), not a missing value.
NULLABLE_PARAMETERS: dict[str, frozenset[str]] = {"funnel": frozenset({"rerank", "diversity"})}


def canonical_entry(kind_parameters: Mapping[str, Mapping[str, object]], entry: Mapping, where: str) -> dict:
    """The entry with defaults filled in; unknown or missing parameters are errors."""
    kind = entry.get("kind")
    if kind not in kind_parameters:
        raise ConfigError(
            f"{where}['kind']: unknown kind {kind!r}; expected one of {sorted(kind_parameters)}"
        )
    allowed = kind_parameters[kind]
    canonical: dict[str, object] = {"kind": kind}
    for key in entry:
        if key not in allowed and key not in ("kind", "chunkers"):
            raise ConfigError(
                f"{where}[{key!r}]: not a parameter of kind {kind!r}; allowed: {sorted(allowed)}"
            )
    for key, default in allowed.items():
        value = entry.get(key, default)
        if value is None and key not in NULLABLE_PARAMETERS.get(kind, ()):
            raise ConfigError(f"{where}[{key!r}]: required for kind {kind!r}")
        canonical[key] = value
    if "chunkers" in entry:
        canonical["chunkers"] = sorted(entry["chunkers"])
    return canonical


def canonical_json(value: object) -> str:
    """A byte-stable rendering: keys sorted, no whitespace variation."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def check_names(names: Iterable[str], known: Iterable[str], where: str, what: str) -> None:
    known_set = set(known)
    for name in names:
        if name not in known_set:
            raise ConfigError(f"{where}: unknown {what} {name!r}; known: {sorted(known_set)}")


def retriever_dependencies(entry: Mapping) -> list[str]:
    """The retrievers an entry reads: a fusion's components, a funnel's first stage and reranker."""
    names = list(entry.get("components") or [])
    for key in ("first", "rerank"):
        if entry.get(key) is not None:
            names.append(entry[key])
    return names


def check_retriever_graph(retrievers: Mapping[str, Mapping], where: str = "config['retrievers']") -> None:
    """Every named dependency exists and no retriever depends on itself, directly or not."""
    for name, entry in retrievers.items():
        check_names(retriever_dependencies(entry), retrievers, f"{where}[{name!r}]", "retriever")
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "open":
            cycle = " -> ".join([*path[path.index(name) :], name])
            raise ConfigError(f"{where}[{path[-1]!r}]: retrievers depend on each other in a cycle: {cycle}")
        state[name] = "open"
        for dependency in retriever_dependencies(retrievers[name]):
            visit(dependency, [*path, name])
        state[name] = "done"

    for name in sorted(retrievers):
        visit(name, [])
