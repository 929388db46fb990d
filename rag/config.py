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
}


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
        if value is None:
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


# The grounding experiments: which ranking feeds the generator, how many
# chunks it reads, how sharply the retrieval prior trusts the ranking, and how
# long memory may talk. The cases and the swap are data without defaults.
GROUNDING_PARAMETERS: dict[str, object] = {
    "chunker": "sentences100",
    "retriever": "bm25",
    "k": 5,
    "temperature": 0.5,
    "max_tokens": 30,
}


def canonical_grounding(entry: Mapping, where: str = "config['grounding']") -> dict:
    """The grounding section with defaults filled in and its cases in name order.

    Sorting the cases means reordering them in ``config.yaml`` re-runs nothing;
    a repeated name is an error, since the name identifies a case's rows.
    """
    canonical: dict[str, object] = {
        key: entry.get(key, default) for key, default in GROUNDING_PARAMETERS.items()
    }
    if "corpus" in entry:
        canonical["corpus"] = entry["corpus"]
    seen: set[str] = set()
    for index, case in enumerate(entry["cases"]):
        if case["name"] in seen:
            raise ConfigError(f"{where}['cases'][{index}]['name']: duplicate case name {case['name']!r}")
        seen.add(case["name"])
    canonical["cases"] = sorted((dict(case) for case in entry["cases"]), key=lambda case: case["name"])
    canonical["swap"] = dict(entry["swap"])
    return canonical
