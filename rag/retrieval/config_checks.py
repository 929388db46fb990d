"""The checks of config.yaml's retrievers and filters: entries, their graph, funnels, learned fusions, extras.

Beside the retrievers so that adding a kind or a role changes one package; the
config plan (:mod:`rag.pipeline.config`) runs these checks in its order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rag.kinds import RETRIEVER_KINDS, ConfigError, canonical_entry, check_names
from rag.kinds import defaults as kind_defaults
from rag.retrieval.filters import FilterError, parse_filter

# Kind -> parameter -> default (None for required), read from the table of kinds.
RETRIEVER_PARAMETERS: dict[str, dict[str, object]] = kind_defaults(RETRIEVER_KINDS)


def as_list(value: object) -> list:
    """A retriever name or a number, or a list of them, as a list."""
    return [value] if isinstance(value, (int, str)) else list(value)


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
                check_names(as_list(value), retrievers, f"{where}[{name!r}][{key!r}]", "retriever")
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


def chunkers_of(retrievers: Mapping[str, Mapping], chunkers: Iterable[str]) -> dict[str, list[str]]:
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


def check_runs_on(
    retriever_chunkers: Mapping[str, list[str]], retriever: str, chunker: str, where: str
) -> None:
    """An experiment's retriever must run on its chunker (``retriever_chunkers``: :func:`chunkers_of`)."""
    if chunker not in retriever_chunkers[retriever]:
        raise ConfigError(f"{where}: retriever {retriever!r} does not run on chunker {chunker!r}")


def _role(retrievers: Mapping[str, Mapping], name: str) -> str:
    return RETRIEVER_KINDS[retrievers[name]["kind"]].role


def _of_role(retrievers: Mapping[str, Mapping], role: str) -> list[str]:
    return [name for name in retrievers if _role(retrievers, name) == role]


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


def check_rerank_only(retrievers: Mapping[str, Mapping]) -> None:
    """A kind without rankings of its own (a reranker) can only be a funnel's ``rerank``."""
    for name, entry in retrievers.items():
        for key in ("first", "base", "components"):
            named = entry.get(key)
            for part in named if isinstance(named, list) else [named] if named else []:
                if part in retrievers and RETRIEVER_KINDS[retrievers[part]["kind"]].rule is None:
                    raise ConfigError(
                        f"config['retrievers'][{name!r}][{key!r}]: {part!r} only reranks a funnel's "
                        "candidates and has no rankings; name it as a funnel's 'rerank'"
                    )


def check_funnels(retrievers: Mapping[str, Mapping], depth: int) -> None:
    """A funnel keeps at most the ranked depth and reranks with a retriever or an rrf fusion."""
    check_rerank_only(retrievers)
    for name in _of_role(retrievers, "funnel"):
        entry, where = retrievers[name], f"config['retrievers'][{name!r}]"
        if entry["candidates"] > depth:
            raise ConfigError(
                f"{where}['candidates']: {entry['candidates']} candidates, "
                f"but rankings keep only depth = {depth}"
            )
        rerank = entry["rerank"]
        if rerank is None:
            continue
        role = _role(retrievers, rerank)
        if role == "funnel":
            raise ConfigError(
                f"{where}['rerank']: {rerank!r} is a funnel; a reranker scores candidates, "
                "so name a retriever or a fusion of retrievers"
            )
        if role == "fused" and retrievers[rerank]["kind"] != "rrf":
            raise ConfigError(
                f"{where}['rerank']: {rerank!r} adds raw scores; rerank with a retriever or an rrf fusion"
            )
        kind = RETRIEVER_KINDS[retrievers[rerank]["kind"]]
        if role == "approximate":
            raise ConfigError(
                f"{where}['rerank']: {rerank!r} is an approximate index that scores only the chunks of "
                f"the lists it probes; rerank with its base {retrievers[rerank]['base']!r}, which scores "
                "every candidate"
            )
        if not (kind.plain or kind.rerank is not None or role in ("fused", "learned")):
            raise ConfigError(
                f"{where}['rerank']: {rerank!r} (kind {kind.name!r}) cannot rescore candidates; rerank "
                "with a plain retriever, a reranker or an rrf fusion"
            )
        for part in retrievers[rerank].get("components", []):
            if not RETRIEVER_KINDS[retrievers[part]["kind"]].plain:
                raise ConfigError(
                    f"{where}['rerank']: the fusion {rerank!r} reranks with its components, "
                    f"which must be plain retrievers; {part!r} is not"
                )


def check_learned(retrievers: Mapping[str, Mapping], depth: int, baseline: str) -> None:
    """A learned fusion scores choices within the ranked depth and reranks nothing.

    It chooses on any labels, evidence spans or a BEIR corpus's graded qrels;
    on an unlabelled corpus it is never scheduled (the grid is labelled corpora).
    ``baseline`` (evaluation.baseline, what significance tests against) must be a retriever.
    """
    check_names([baseline], retrievers, "config['evaluation']['baseline']", "retriever")
    for name in _of_role(retrievers, "learned"):
        where, entry = f"config['retrievers'][{name!r}]", retrievers[name]
        if entry["objective_k"] > depth:
            raise ConfigError(
                f"{where}['objective_k']: {entry['objective_k']} is deeper than evaluation.depth = {depth}"
            )
    for name in _of_role(retrievers, "funnel"):
        if (
            retrievers[name]["rerank"] is not None
            and _role(retrievers, retrievers[name]["rerank"]) == "learned"
        ):
            raise ConfigError(
                f"config['retrievers'][{name!r}]['rerank']: a learned fusion cannot rescore candidates; "
                "use it as 'first' or rerank with an rrf fusion"
            )


def canonical_filters(config: Mapping) -> dict[str, dict]:
    """The filters section, each filter parsed and in canonical form, in name order."""
    filters = {}
    for name, entry in sorted(config.get("filters", {}).items()):
        try:
            filters[name] = parse_filter(entry, f"config['filters'][{name!r}]").to_config()
        except FilterError as error:
            raise ConfigError(str(error)) from None
    return filters
