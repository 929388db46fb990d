"""The checks of the evaluation experiments of config.yaml: the approximate-search settings and the ablations.

Beside the evaluation so that changing an experiment changes one package; the
config plan (:mod:`rag.pipeline.config`) runs these checks in its order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rag.kinds import ConfigError, check_names
from rag.retrieval.config_checks import as_list, check_runs_on
from rag.retrieval.synthetic import DEFAULT_CENTRES, DEFAULT_SPREAD

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


def canonical_ivf_synthetic(section: Mapping, where: str = "config['ivf_synthetic']") -> dict:
    """The synthetic half of the approximate-search experiment with its defaults, its sizes checked."""
    settings = canonical_settings(IVF_SYNTHETIC_PARAMETERS, section, where)
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


def check_ablations(
    config: Mapping,
    chunkers: Iterable[str],
    retrievers: Iterable[str],
    retriever_chunkers: Mapping[str, list[str]],
    filters: Iterable[str],
    depth: int,
    ks: list[int],
) -> None:
    """The ablation sections name configured chunkers, retrievers and filters, at depths that are ranked.

    ``retriever_chunkers`` is what each retriever runs on
    (:func:`rag.retrieval.config_checks.chunkers_of`), ``ks`` evaluation.ks.
    """
    for section in ("filter_ablation", "diversity_ablation"):
        if section not in config:
            continue
        chunker, named = config[section]["chunker"], config[section]["retrievers"]
        check_names([chunker], chunkers, f"config[{section!r}]['chunker']", "chunker")
        check_names(named, retrievers, f"config[{section!r}]['retrievers']", "retriever")
        for retriever in named:
            check_runs_on(retriever_chunkers, retriever, chunker, f"config[{section!r}]['retrievers']")
    if "filter_ablation" in config:
        check_names(
            config["filter_ablation"]["filters"],
            filters,
            "config['filter_ablation']['filters']",
            "filter",
        )
    for section, key in (("filter_ablation", "k"), ("diversity_ablation", "ks")):
        for k in as_list(config.get(section, {}).get(key, [])):
            if k > depth:
                raise ConfigError(f"config[{section!r}][{key!r}]: k = {k} is deeper than depth = {depth}")
    # These tables read results/metrics.csv, so their k must be evaluated there.
    for section, key in (("funnel_ablation", "ks"), ("cohorts", "k")):
        for k in as_list(config.get(section, {}).get(key, [])):
            if k not in ks:
                raise ConfigError(
                    f"config[{section!r}][{key!r}]: k = {k} is not one of evaluation.ks {sorted(ks)}"
                )
