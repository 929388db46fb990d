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


# What each corpus source needs, the keys that belong to it alone, and the
# levels its labels can be evaluated at: evidence spans judge chunks (and,
# through the chunks' documents, documents); BEIR qrels judge only documents.
# The first level is the default. (The schema's defaults, such as a
# wikipedia entry's ``strict``, are filled into every entry, so only keys
# without a schema default can be checked for belonging to another source.)
CORPUS_SOURCES: dict[str, dict[str, tuple[str, ...]]] = {
    "markdown": {
        "required": ("documents", "questions"),
        "own": ("documents",),
        "levels": ("chunk", "document"),
    },
    "wikipedia": {
        "required": ("titles", "as_of", "questions"),
        "own": ("titles", "as_of"),
        "levels": ("chunk", "document"),
    },
    "beir": {"required": ("folder",), "own": ("folder", "split"), "levels": ("document",)},
}

BEIR_DEFAULTS: dict[str, object] = {"split": "test"}


def check_corpus(entry: Mapping, where: str) -> None:
    """Keys a corpus entry's source needs or does not take, and a level it supports."""
    source = entry["source"]
    rules = CORPUS_SOURCES[source]
    for key in rules["required"]:
        if key not in entry:
            raise ConfigError(f"{where}[{key!r}]: required for source {source!r}")
    for other, other_rules in CORPUS_SOURCES.items():
        for key in other_rules["own"]:
            if other != source and key in entry:
                raise ConfigError(f"{where}[{key!r}]: a key of source {other!r}, not of {source!r}")
    if source == "beir" and "questions" in entry:
        raise ConfigError(f"{where}['questions']: a beir corpus takes its questions from queries.jsonl")
    level = entry.get("level", rules["levels"][0])
    if level not in rules["levels"]:
        raise ConfigError(
            f"{where}['level']: source {source!r} has labels only at the level(s) {list(rules['levels'])}, "
            f"not {level!r}"
        )


def corpus_level(entry: Mapping) -> str:
    """``chunk`` or ``document``: what the corpus's labels are evaluated on."""
    return str(entry.get("level", CORPUS_SOURCES[entry["source"]]["levels"][0]))
