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

from rag.synthetic import DEFAULT_CENTRES, DEFAULT_SPREAD


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
    "ivf": {"base": None, "lists": 16, "probes": 4, "seed": 0},
    "funnel": {"first": None, "rerank": None, "candidates": 30, "diversity": None},
    # 256 tokens is the limit all-MiniLM-L6-v2 was trained with; text picks the
    # chunk with its "title › section" header (indexed) or without (plain).
    "embedder": {"model": "all-MiniLM-L6-v2", "batch_size": 32, "max_tokens": 256, "text": "indexed"},
}

# The two approximate-search experiments. ``None`` marks a required key.
IVF_TRADEOFF_PARAMETERS: dict[str, object] = {
    "corpus": None,
    "chunker": None,
    "retriever": None,
    "lists": 16,
    "k": 10,
    "labelled_k": 5,
    "seed": 0,
}
IVF_SYNTHETIC_PARAMETERS: dict[str, object] = {
    "vectors": 100_000,
    "dimensions": 64,
    "centres": DEFAULT_CENTRES,
    "spread": DEFAULT_SPREAD,
    "lists": 256,
    "probes": [1, 2, 4, 8, 16, 32, 64],
    "queries": 1_000,
    "k": 10,
    "seed": 0,
    "repeats": 3,
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
        if key not in allowed and key not in ("kind", "chunkers", "optional"):
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


def canonical_settings(parameters: Mapping[str, object], settings: Mapping, where: str) -> dict:
    """A settings section (not a named grid entry) with its defaults filled in.

    Lists of numbers are sorted, since the experiments treat them as sets:
    reordering them must not re-run anything.
    """
    for key in settings:
        if key not in parameters:
            raise ConfigError(f"{where}[{key!r}]: unknown key; allowed: {sorted(parameters)}")
    canonical: dict[str, object] = {}
    for key, default in parameters.items():
        value = settings.get(key, default)
        if value is None:
            raise ConfigError(f"{where}[{key!r}]: required")
        canonical[key] = sorted(value) if isinstance(value, list) else value
    return canonical


def check_ivf_entry(
    name: str, entry: Mapping, retrievers: Mapping[str, Mapping], dense_kinds: Iterable[str]
) -> None:
    """An ``ivf`` entry must index an existing dense retriever and probe no more lists than it has."""
    where = f"config['retrievers'][{name!r}]"
    check_dense_retriever(entry["base"], retrievers, dense_kinds, f"{where}['base']")
    if entry["probes"] > entry["lists"]:
        raise ConfigError(
            f"{where}['probes']: {entry['probes']} probes but only {entry['lists']} lists; "
            "probes must be at most lists"
        )


def check_dense_retriever(
    name: str, retrievers: Mapping[str, Mapping], dense_kinds: Iterable[str], where: str
) -> None:
    """``name`` must be a configured retriever whose chunks are vectors an IVF index can hold."""
    check_names([name], retrievers, where, "retriever")
    kinds = tuple(dense_kinds)
    kind = retrievers[name]["kind"]
    if kind not in kinds:
        raise ConfigError(
            f"{where}: retriever {name!r} is of kind {kind!r}, which has no chunk embeddings; "
            f"an IVF index needs a dense retriever (kind {', '.join(kinds)})"
        )


def check_optional_packages(name: str, entry: Mapping, pretrained_kinds: Iterable[str]) -> None:
    """A retriever that encodes with a pretrained model needs the dense extra installed.

    Checked while the configuration is read, so a missing package stops the
    run before any job starts, with the command that installs it.
    """
    if entry["kind"] not in tuple(pretrained_kinds):
        return
    from rag import sentence_embeddings

    missing = sentence_embeddings.missing_packages(entry["model"])
    if missing:
        raise ConfigError(
            f"config['retrievers'][{name!r}]: the {entry['kind']} retriever {name!r} (model "
            f"{entry['model']}) needs the optional packages {', '.join(missing)}; install them with "
            f"{sentence_embeddings.INSTALL_COMMAND}, or remove the retriever from the config"
        )


def prune_unavailable(config: dict, pretrained_kinds: Iterable[str]) -> list[str]:
    """Drop ``optional: true`` retrievers whose extra is missing, and everything built on them.

    A pretrained retriever needs the dense extra. Marked optional, it is left
    out of the grid on a machine without the extra (with a warning), together
    with the fusions, indexes and funnels that read it and every mention of
    it in the experiment sections; unmarked, the missing extra is an error.
    Returns warnings naming what was left out.
    """
    retrievers = config["retrievers"]
    unavailable: set[str] = set()
    warnings = []
    for name, entry in retrievers.items():
        if entry.get("optional") and entry.get("kind") in tuple(pretrained_kinds):
            try:
                check_optional_packages(name, {"model": "all-MiniLM-L6-v2", **entry}, pretrained_kinds)
            except ConfigError as error:
                unavailable.add(name)
                warnings.append(f"{error} (optional: left out of this run)")
    growing = True
    while growing:
        growing = False
        for name, entry in retrievers.items():
            dependencies = set(entry.get("components") or []) | {
                entry[key] for key in ("base", "first", "rerank") if entry.get(key)
            }
            if name not in unavailable and dependencies & unavailable:
                unavailable.add(name)
                warnings.append(
                    f"config['retrievers'][{name!r}]: left out, it reads {sorted(dependencies & unavailable)}"
                )
                growing = True
    for name in unavailable:
        del retrievers[name]

    def scrub(value: object) -> object:
        if isinstance(value, dict):
            return {key: scrub(item) for key, item in value.items()}
        if isinstance(value, list):
            return [scrub(item) for item in value if not (isinstance(item, str) and item in unavailable)]
        return value

    for section, value in list(config.items()):
        if section not in ("retrievers", "corpora", "chunkers"):
            config[section] = scrub(value)
    return warnings


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


# --------------------------------------------------------------------------
# The answers section: generation settings and the experiments built on them
# --------------------------------------------------------------------------

# Settings of the extractive generator and its prompt; every answer job carries them.
GENERATION_DEFAULTS: dict[str, object] = {
    "k": 5,
    "threshold": 0.5,
    "token_counter": "word_and_punctuation",
    "budget": None,
}
# Abstention thresholds 0, 0.05, ..., 1 (rounded, so the values print as written).
DEFAULT_ABSTENTION_THRESHOLDS: tuple[float, ...] = tuple(round(step * 0.05, 2) for step in range(21))
DEFAULT_CONTEXT_WINDOW = 128_000


def canonical_answers(
    entry: Mapping,
    pairs: Iterable[tuple[str, str]],
    retriever_kinds: Mapping[str, str],
    depth: int,
    where: str = "config['answers']",
) -> dict:
    """The answers section with its defaults, its names checked against the grid.

    ``pairs`` are the (chunker, retriever) combinations the grid ranks and
    ``retriever_kinds`` maps every retriever to its kind. Missing
    ``chunkers`` or ``retrievers`` mean all of them, so the whole grid is one
    deleted line away; listed names that the grid never combines (a retriever
    restricted to other chunkers) are left out, but every name must exist and
    take part in at least one pair. The abstention sweep defaults to the first
    answered pair and routing to the abstention pair; routing must use a BM25
    retriever, because it indexes the summaries with that entry's parameters.
    """
    grid = sorted(set(pairs))
    grid_chunkers = sorted({chunker for chunker, _ in grid})
    grid_retrievers = sorted({retriever for _, retriever in grid})
    chunkers = sorted(set(entry.get("chunkers") or grid_chunkers))
    retrievers = sorted(set(entry.get("retrievers") or grid_retrievers))
    check_names(chunkers, grid_chunkers, f"{where}['chunkers']", "chunker")
    check_names(retrievers, retriever_kinds, f"{where}['retrievers']", "retriever")
    chosen = [
        (chunker, retriever) for chunker, retriever in grid if chunker in chunkers and retriever in retrievers
    ]
    for name in retrievers:
        if not any(retriever == name for _, retriever in chosen):
            raise ConfigError(
                f"{where}['retrievers']: retriever {name!r} runs on none of the chunkers {chunkers}"
            )
    for name in chunkers:
        if not any(chunker == name for chunker, _ in chosen):
            raise ConfigError(
                f"{where}['chunkers']: none of the retrievers {retrievers} runs on chunker {name!r}"
            )

    generation = {key: entry.get(key, default) for key, default in GENERATION_DEFAULTS.items()}
    if generation["k"] > depth:
        raise ConfigError(f"{where}['k']: k = {generation['k']} is deeper than evaluation depth = {depth}")

    def pair(section: str, defaults: tuple[str, str]) -> tuple[str, str]:
        values = entry.get(section) or {}
        chunker, retriever = values.get("chunker", defaults[0]), values.get("retriever", defaults[1])
        check_names([chunker], grid_chunkers, f"{where}[{section!r}]['chunker']", "chunker")
        check_names([retriever], retriever_kinds, f"{where}[{section!r}]['retriever']", "retriever")
        if (chunker, retriever) not in grid:
            raise ConfigError(
                f"{where}[{section!r}]: retriever {retriever!r} does not run on chunker {chunker!r}"
            )
        return chunker, retriever

    abstention_chunker, abstention_retriever = pair("abstention", chosen[0])
    thresholds = (entry.get("abstention") or {}).get("thresholds", DEFAULT_ABSTENTION_THRESHOLDS)
    routing_chunker, routing_retriever = pair("summaries", (abstention_chunker, abstention_retriever))
    if retriever_kinds[routing_retriever] != "bm25":
        raise ConfigError(
            f"{where}['summaries']['retriever']: {routing_retriever!r} is of kind "
            f"{retriever_kinds[routing_retriever]!r}; routing over summaries needs a bm25 retriever"
        )
    return {
        "pairs": [list(item) for item in chosen],
        "generation": generation,
        "abstention": {
            "chunker": abstention_chunker,
            "retriever": abstention_retriever,
            "thresholds": sorted({float(value) for value in thresholds}),
        },
        "summaries": {
            "chunker": routing_chunker,
            "retriever": routing_retriever,
            "window": (entry.get("summaries") or {}).get("window", DEFAULT_CONTEXT_WINDOW),
        },
    }


def retriever_dependencies(entry: Mapping) -> list[str]:
    """The retrievers an entry reads: a fusion's components, an IVF index's base,
    a funnel's first stage and reranker."""
    names = list(entry.get("components") or [])
    for key in ("base", "first", "rerank"):
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


# What each corpus source needs, the keys that belong to it alone, and the
# levels its labels can be evaluated at: evidence spans judge chunks (and,
# through the chunks' documents, documents); BEIR qrels judge only documents.
# The first level is the default. (The schema's defaults, such as a
# wikipedia entry's ``strict``, are filled into every entry, so only keys
# without a schema default can be checked for belonging to another source.)
CORPUS_SOURCES: dict[str, dict[str, tuple[str, ...]]] = {
    # A corpus without questions is unlabelled: it is parsed, chunked and
    # indexed, but nothing is evaluated on it.
    "markdown": {"required": ("documents",), "own": ("documents",), "levels": ("chunk", "document")},
    "text": {"required": ("documents",), "own": ("documents",), "levels": ("chunk", "document")},
    "html": {"required": ("documents",), "own": ("documents",), "levels": ("chunk", "document")},
    "wikipedia": {
        "required": ("titles", "as_of"),
        "own": ("titles", "as_of"),
        "levels": ("chunk", "document"),
    },
    "beir": {"required": ("folder",), "own": ("folder", "split", "queries"), "levels": ("document",)},
}

BEIR_DEFAULTS: dict[str, object] = {"split": "test", "queries": "judged"}


def check_corpus(entry: Mapping, where: str) -> None:
    """Keys a corpus entry's source needs or does not take, and a level it supports."""
    source = entry["source"]
    rules = CORPUS_SOURCES[source]
    for key in rules["required"]:
        if key not in entry:
            raise ConfigError(f"{where}[{key!r}]: required for source {source!r}")
    for other, other_rules in CORPUS_SOURCES.items():
        for key in other_rules["own"]:
            if other != source and key in entry and key not in rules["own"]:
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
