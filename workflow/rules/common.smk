import hashlib
import os
import sys
from pathlib import Path

from snakemake.utils import validate

# The rag package sits next to the Snakefile; make it importable even when the
# project has not been pip-installed.
PROJECT_ROOT = Path(workflow.basedir)
sys.path.insert(0, str(PROJECT_ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")])
)

from rag.config import (  # noqa: E402
    CHUNKER_PARAMETERS,
    RETRIEVER_PARAMETERS,
    ConfigError,
    canonical_entry,
    canonical_json,
    check_names,
    check_retriever_graph,
    retriever_dependencies,
    schema_errors,
)
from rag.chunking import ChunkingError, spec_from_config  # noqa: E402
from rag.io import read_yaml  # noqa: E402

SCHEMA = "../schemas/config.schema.yaml"

# A precise, one-line-per-problem check before Snakemake's own validation, so a
# misspelled key is reported with its path before any job runs.
_problems = schema_errors(
    config, read_yaml(PROJECT_ROOT / "workflow/schemas/config.schema.yaml")
)
if _problems:
    raise ConfigError("invalid config.yaml:\n  " + "\n  ".join(_problems))
validate(config, schema=SCHEMA)


def _canonical_grid():
    chunkers, retrievers = {}, {}
    for name, entry in config["chunkers"].items():
        chunkers[name] = canonical_entry(
            CHUNKER_PARAMETERS, entry, f"config['chunkers'][{name!r}]"
        )
        try:
            spec_from_config(chunkers[name])
        except ChunkingError as error:
            raise ConfigError(f"config['chunkers'][{name!r}]: {error}") from None
    for name, entry in config["retrievers"].items():
        where = f"config['retrievers'][{name!r}]"
        retrievers[name] = canonical_entry(RETRIEVER_PARAMETERS, entry, where)
        check_names(
            entry.get("chunkers", []),
            config["chunkers"],
            f"{where}['chunkers']",
            "chunker",
        )
        components = entry.get("components", [])
        check_names(
            components, config["retrievers"], f"{where}['components']", "retriever"
        )
        if name in components:
            raise ConfigError(f"{where}['components']: a retriever cannot fuse itself")
    for k in config["evaluation"]["ks"]:
        if k > config["evaluation"]["depth"]:
            raise ConfigError(
                f"config['evaluation']['ks']: k = {k} is deeper than depth = {config['evaluation']['depth']}"
            )
    return chunkers, retrievers


# Grid entries in name order, so that reordering config.yaml changes nothing.
CHUNKERS, RETRIEVERS = (dict(sorted(grid.items())) for grid in _canonical_grid())
CORPORA = {
    name: entry
    for name, entry in sorted(config["corpora"].items())
    if entry.get("enabled", True)
}
if not CORPORA:
    raise ConfigError("config['corpora']: every corpus is disabled")
for _name, _entry in CORPORA.items():
    _needed = {"markdown": ["documents"], "wikipedia": ["titles", "as_of"]}[
        _entry["source"]
    ]
    for _key in _needed:
        if _key not in _entry:
            raise ConfigError(
                f"config['corpora'][{_name!r}][{_key!r}]: required for source {_entry['source']!r}"
            )


wildcard_constraints:
    corpus="|".join(CORPORA),
    chunker="|".join(CHUNKERS),
    retriever="|".join(RETRIEVERS) if RETRIEVERS else "[a-z][a-z0-9_]*",


def rag_digest(*modules):
    """Digest of the rag modules a rule calls: editing one re-runs its rules."""
    digest = hashlib.sha256()
    for module in sorted(set(modules) | {"io", "config"}):
        digest.update((PROJECT_ROOT / "rag" / f"{module}.py").read_bytes())
    return digest.hexdigest()[:16]


def chunker_params(wildcards):
    return canonical_json(CHUNKERS[wildcards.chunker])


def corpus_params(wildcards):
    return canonical_json(CORPORA[wildcards.corpus])


def corpus_documents(wildcards):
    """The input files of a corpus: removing a document changes this list."""
    entry = CORPORA[wildcards.corpus]
    if entry["source"] == "markdown":
        folder = Path(entry["documents"])
        files = sorted(str(path) for path in folder.glob("*.md"))
        if not files:
            raise ConfigError(
                f"config['corpora'][{wildcards.corpus!r}]['documents']: no *.md files in {folder}"
            )
        return files
    return [wikipedia_lock(wildcards.corpus)]


def wikipedia_lock(corpus):
    """Resolved revisions and digests; commit it so later runs fetch the same text."""
    return f"resources/{corpus}/wikipedia.lock.yaml"


def corpora_of_source(source):
    return [name for name, entry in CORPORA.items() if entry["source"] == source]


def questions_file(wildcards):
    return CORPORA[wildcards.corpus]["questions"]


def corpus_chunker_pairs():
    return [(corpus, chunker) for corpus in CORPORA for chunker in CHUNKERS]


def all_results():
    return [
        "results/corpus_statistics.csv",
        "results/questions_by_type.csv",
        "results/chunk_statistics.csv",
        "results/evidence_cuts.csv",
        "results/metrics.csv",
        "results/figures/recall_at_k.png",
        *contract_results(),
    ]


FUSION_KINDS = ("rrf", "score_sum")
FUNNEL_KINDS = ("funnel",)


def is_fusion(retriever):
    return RETRIEVERS[retriever]["kind"] in FUSION_KINDS


def is_funnel(retriever):
    return RETRIEVERS[retriever]["kind"] in FUNNEL_KINDS


def retriever_chunkers(retriever):
    """The chunkers a retriever runs on: its own list, or its components' common ones."""
    entry = RETRIEVERS[retriever]
    allowed = set(entry.get("chunkers") or CHUNKERS)
    for dependency in retriever_dependencies(entry):
        allowed &= set(retriever_chunkers(dependency))
    return sorted(allowed)


def grid(corpora=None):
    """Every (corpus, chunker, retriever) the configuration asks for."""
    return [
        (corpus, chunker, retriever)
        for corpus in (corpora or CORPORA)
        for retriever in RETRIEVERS
        for chunker in retriever_chunkers(retriever)
    ]


BASE_RETRIEVERS = [
    name for name in RETRIEVERS if not is_fusion(name) and not is_funnel(name)
]
FUSED_RETRIEVERS = [name for name in RETRIEVERS if is_fusion(name)]
FUNNEL_RETRIEVERS = [name for name in RETRIEVERS if is_funnel(name)]


def retriever_params(wildcards):
    return canonical_json(RETRIEVERS[wildcards.retriever])


def fusion_inputs(wildcards):
    return [
        f"work/rankings/{wildcards.corpus}/{wildcards.chunker}/{component}.parquet"
        for component in RETRIEVERS[wildcards.retriever]["components"]
    ]


def alternatives(names):
    """A wildcard regex matching exactly these names (and nothing when empty)."""
    return "|".join(names) if names else "(?!x)x"


def _figures():
    figures = dict(config.get("figures", {}))
    figures.setdefault("corpus", next(iter(CORPORA)))
    figures.setdefault("chunker", next(iter(CHUNKERS)))
    figures.setdefault("retriever", next(iter(RETRIEVERS)))
    figures.setdefault(
        "compare", list(RETRIEVERS)[:2] * (2 if len(RETRIEVERS) == 1 else 1)
    )
    check_names([figures["corpus"]], CORPORA, "config['figures']['corpus']", "corpus")
    check_names(
        [figures["chunker"]], CHUNKERS, "config['figures']['chunker']", "chunker"
    )
    check_names(
        [figures["retriever"], *figures["compare"]],
        RETRIEVERS,
        "config['figures']",
        "retriever",
    )
    check_names(
        figures.get("curves", []),
        RETRIEVERS,
        "config['figures']['curves']",
        "retriever",
    )
    return figures


FIGURES = _figures()


# --------------------------------------------------------------------------
# Production contracts: funnels, filters, diversity, cohorts, provenance.
# Each ablation section is optional; its results are scheduled only when
# config.yaml has it.
# --------------------------------------------------------------------------

from rag.filters import FilterError, parse_filter  # noqa: E402

check_retriever_graph(config["retrievers"])


def _check_funnels():
    depth = config["evaluation"]["depth"]
    for name in FUNNEL_RETRIEVERS:
        entry, where = RETRIEVERS[name], f"config['retrievers'][{name!r}]"
        if entry["candidates"] > depth:
            raise ConfigError(
                f"{where}['candidates']: {entry['candidates']} candidates, but rankings keep only depth = {depth}"
            )
        rerank = entry["rerank"]
        if rerank is None:
            continue
        if is_funnel(rerank):
            raise ConfigError(
                f"{where}['rerank']: {rerank!r} is a funnel; a reranker scores candidates, so name a retriever or a fusion of retrievers"
            )
        if RETRIEVERS[rerank]["kind"] == "score_sum":
            raise ConfigError(
                f"{where}['rerank']: {rerank!r} adds raw scores; rerank with a retriever or an rrf fusion"
            )
        for part in RETRIEVERS[rerank].get("components", []):
            if part not in BASE_RETRIEVERS:
                raise ConfigError(
                    f"{where}['rerank']: the fusion {rerank!r} reranks with its components, which must be plain retrievers; {part!r} is not"
                )


def _canonical_filters():
    filters = {}
    for name, entry in sorted(config.get("filters", {}).items()):
        try:
            filters[name] = parse_filter(
                entry, f"config['filters'][{name!r}]"
            ).to_config()
        except FilterError as error:
            raise ConfigError(str(error)) from None
    return filters


def _check_section_names(section, key, known, what):
    if section in config:
        names = config[section][key]
        check_names(
            [names] if isinstance(names, str) else names,
            known,
            f"config[{section!r}][{key!r}]",
            what,
        )


def _check_ablations():
    depth, ks = config["evaluation"]["depth"], config["evaluation"]["ks"]
    for section in ("filter_ablation", "diversity_ablation"):
        if section not in config:
            continue
        _check_section_names(section, "chunker", CHUNKERS, "chunker")
        _check_section_names(section, "retrievers", RETRIEVERS, "retriever")
        chunker = config[section]["chunker"]
        for retriever in config[section]["retrievers"]:
            if chunker not in retriever_chunkers(retriever):
                raise ConfigError(
                    f"config[{section!r}]['retrievers']: {retriever!r} does not run on chunker {chunker!r}"
                )
    _check_section_names("filter_ablation", "filters", FILTERS, "filter")
    for section, key in (("filter_ablation", "k"), ("diversity_ablation", "ks")):
        values = config.get(section, {}).get(key, [])
        for k in [values] if isinstance(values, int) else values:
            if k > depth:
                raise ConfigError(
                    f"config[{section!r}][{key!r}]: k = {k} is deeper than depth = {depth}"
                )
    # These tables read results/metrics.csv, so their k must be evaluated there.
    for section, key in (("funnel_ablation", "ks"), ("cohorts", "k")):
        values = config.get(section, {}).get(key, [])
        for k in [values] if isinstance(values, int) else values:
            if k not in ks:
                raise ConfigError(
                    f"config[{section!r}][{key!r}]: k = {k} is not one of evaluation.ks {sorted(ks)}"
                )


_check_funnels()
FILTERS = _canonical_filters()
_check_ablations()
FILTER_ABLATION = config.get("filter_ablation")
DIVERSITY_ABLATION = config.get("diversity_ablation")
COHORTS = {
    "k": 5 if 5 in config["evaluation"]["ks"] else min(config["evaluation"]["ks"]),
    "min_questions": 3,
    **config.get("cohorts", {}),
}


wildcard_constraints:
    filter_name=alternatives(FILTERS),


def contract_results():
    results = [
        "results/metrics_by_document.csv",
        "results/weakest_cohorts.csv",
        "results/figures/cohorts.png",
        "results/provenance.csv",
    ]
    if FILTER_ABLATION:
        results.append("results/filter_ablation.csv")
    if DIVERSITY_ABLATION:
        results.append("results/diversity_ablation.csv")
    if FUNNEL_RETRIEVERS and "funnel_ablation" in config:
        results.append("results/funnel_ablation.csv")
    return results


def funnel_rerank_entries(retriever):
    """The entries a funnel's reranker is built from: itself, or a fusion and its components."""
    rerank = RETRIEVERS[retriever]["rerank"]
    if rerank is None:
        return {}
    names = [rerank, *RETRIEVERS[rerank].get("components", [])]
    return {name: RETRIEVERS[name] for name in names}


def funnel_rerank_params(wildcards):
    return canonical_json(funnel_rerank_entries(wildcards.retriever))


def funnel_rerank_indexes(wildcards):
    """The fitted indexes of the plain retrievers a funnel reranks with."""
    return [
        f"work/indexes/{wildcards.corpus}/{wildcards.chunker}/{name}.npz"
        for name in funnel_rerank_entries(wildcards.retriever)
        if name in BASE_RETRIEVERS
    ]


def filter_params(wildcards):
    return canonical_json(FILTERS[wildcards.filter_name])


def filtered_ranking(corpus, chunker, filter_name, retriever):
    return f"work/filtered/{corpus}/{chunker}/{filter_name}/{retriever}.parquet"


def filter_ablation_grid():
    """(corpus, retriever, filter) of the filter ablation, on its one chunker."""
    if not FILTER_ABLATION:
        return []
    return [
        (corpus, retriever, filter_name)
        for corpus in CORPORA
        for retriever in sorted(FILTER_ABLATION["retrievers"])
        for filter_name in sorted(FILTER_ABLATION["filters"])
    ]
