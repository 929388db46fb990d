import hashlib
import os
import sys
from pathlib import Path

from snakemake.utils import validate

# The rag package sits next to the Snakefile; make it importable even when the
# project has not been pip-installed.
PROJECT_ROOT = Path(workflow.basedir)
sys.path.insert(0, str(PROJECT_ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))
# Jobs run in parallel already; a multi-threaded BLAS inside each of them
# oversubscribes the cores (a small SVD took seconds instead of milliseconds).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
# The pipeline runs offline: the embedder reads its weights from an installed
# package, and any attempt to reach the Hugging Face hub must fail at once.
for _variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ[_variable] = "1"

from rag.config import (  # noqa: E402
    CHUNKER_PARAMETERS,
    IVF_SYNTHETIC_PARAMETERS,
    IVF_TRADEOFF_PARAMETERS,
    RETRIEVER_PARAMETERS,
    ConfigError,
    canonical_answers,
    canonical_entry,
    canonical_grounding,
    canonical_json,
    canonical_settings,
    check_dense_retriever,
    check_ivf_entry,
    check_names,
    check_optional_packages,
    schema_errors,
)
from rag.retrievers import APPROXIMATE_KINDS, DENSE_KINDS, PRETRAINED_KINDS  # noqa: E402
from rag.chunking import ChunkingError, spec_from_config  # noqa: E402
from rag.grounding import swap_values  # noqa: E402
from rag.io import read_yaml  # noqa: E402
from rag.labels import LabelError, parse_questions  # noqa: E402

SCHEMA = "../schemas/config.schema.yaml"

# A precise, one-line-per-problem check before Snakemake's own validation, so a
# misspelled key is reported with its path before any job runs.
_problems = schema_errors(config, read_yaml(PROJECT_ROOT / "workflow/schemas/config.schema.yaml"))
if _problems:
    raise ConfigError("invalid config.yaml:\n  " + "\n  ".join(_problems))
validate(config, schema=SCHEMA)


def _canonical_grid():
    chunkers, retrievers = {}, {}
    for name, entry in config["chunkers"].items():
        chunkers[name] = canonical_entry(CHUNKER_PARAMETERS, entry, f"config['chunkers'][{name!r}]")
        try:
            spec_from_config(chunkers[name])
        except ChunkingError as error:
            raise ConfigError(f"config['chunkers'][{name!r}]: {error}") from None
    for name, entry in config["retrievers"].items():
        where = f"config['retrievers'][{name!r}]"
        retrievers[name] = canonical_entry(RETRIEVER_PARAMETERS, entry, where)
        check_names(entry.get("chunkers", []), config["chunkers"], f"{where}['chunkers']", "chunker")
        components = entry.get("components", [])
        check_names(components, config["retrievers"], f"{where}['components']", "retriever")
        if name in components:
            raise ConfigError(f"{where}['components']: a retriever cannot fuse itself")
        check_optional_packages(name, retrievers[name], PRETRAINED_KINDS)
    for name, entry in retrievers.items():
        if entry["kind"] in APPROXIMATE_KINDS:
            check_ivf_entry(name, entry, retrievers, DENSE_KINDS)
    for k in config["evaluation"]["ks"]:
        if k > config["evaluation"]["depth"]:
            raise ConfigError(
                f"config['evaluation']['ks']: k = {k} is deeper than depth = {config['evaluation']['depth']}"
            )
    return chunkers, retrievers


# Grid entries in name order, so that reordering config.yaml changes nothing.
CHUNKERS, RETRIEVERS = (dict(sorted(grid.items())) for grid in _canonical_grid())
CORPORA = {name: entry for name, entry in sorted(config["corpora"].items()) if entry.get("enabled", True)}
if not CORPORA:
    raise ConfigError("config['corpora']: every corpus is disabled")
for _name, _entry in CORPORA.items():
    _needed = {"markdown": ["documents"], "wikipedia": ["titles", "as_of"]}[_entry["source"]]
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
    results = [
        "results/corpus_statistics.csv",
        "results/questions_by_type.csv",
        "results/chunk_statistics.csv",
        "results/evidence_cuts.csv",
        "results/metrics.csv",
        "results/figures/recall_at_k.png",
        *GROUNDING_RESULTS,
        *vector_search_results(),
    ]
    if ANSWERS is not None:
        results += [
            "results/answers.csv",
            "results/answers_summary.csv",
            "results/abstention.csv",
            "results/figures/abstention.png",
            "results/summaries.csv",
            "results/routing.csv",
            "results/routing_metrics.csv",
        ]
    return results


FUSION_KINDS = ("rrf", "score_sum")


def is_fusion(retriever):
    return RETRIEVERS[retriever]["kind"] in FUSION_KINDS


def retriever_chunkers(retriever):
    """The chunkers a retriever runs on: its own list, or its components' common ones."""
    entry = RETRIEVERS[retriever]
    allowed = set(entry.get("chunkers") or CHUNKERS)
    for component in entry.get("components", []):
        allowed &= set(retriever_chunkers(component))
    if "base" in entry:
        allowed &= set(retriever_chunkers(entry["base"]))
    return sorted(allowed)


def grid(corpora=None):
    """Every (corpus, chunker, retriever) the configuration asks for."""
    return [
        (corpus, chunker, retriever)
        for corpus in (corpora or CORPORA)
        for retriever in RETRIEVERS
        for chunker in retriever_chunkers(retriever)
    ]


def is_approximate(retriever):
    return RETRIEVERS[retriever]["kind"] in APPROXIMATE_KINDS


# Retrievers ranking the chunks themselves: fitted on their texts (rule rank)
# or encoding them with a pretrained model (rule rank_embedder); fusions (rule
# fuse) and IVF indexes over another retriever's embeddings (rule rank_ivf).
BASE_RETRIEVERS = [name for name in RETRIEVERS if not is_fusion(name) and not is_approximate(name)]
EMBEDDER_RETRIEVERS = [name for name in BASE_RETRIEVERS if RETRIEVERS[name]["kind"] in PRETRAINED_KINDS]
FITTED_RETRIEVERS = [name for name in BASE_RETRIEVERS if name not in EMBEDDER_RETRIEVERS]
FUSED_RETRIEVERS = [name for name in RETRIEVERS if is_fusion(name)]
IVF_RETRIEVERS = [name for name in RETRIEVERS if is_approximate(name)]

# Embeddings by text digest, shared by every embedder job and kept across runs
# (see docs/embedder.md). It lies outside the DAG: a job reads it and adds to
# it, so no rule could declare it as both input and output.
EMBEDDING_CACHE = "cache/embeddings"


def retriever_params(wildcards):
    return canonical_json(RETRIEVERS[wildcards.retriever])


def ivf_base(wildcards):
    return RETRIEVERS[wildcards.retriever]["base"]


def ivf_base_index(wildcards):
    """The saved index of an ivf entry's base: its embeddings are reused, not refitted."""
    return f"work/indexes/{wildcards.corpus}/{wildcards.chunker}/{ivf_base(wildcards)}.npz"


def ivf_base_params(wildcards):
    return canonical_json(RETRIEVERS[ivf_base(wildcards)])


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
    figures.setdefault("compare", list(RETRIEVERS)[:2] * (2 if len(RETRIEVERS) == 1 else 1))
    check_names([figures["corpus"]], CORPORA, "config['figures']['corpus']", "corpus")
    check_names([figures["chunker"]], CHUNKERS, "config['figures']['chunker']", "chunker")
    check_names([figures["retriever"], *figures["compare"]], RETRIEVERS, "config['figures']", "retriever")
    return figures


FIGURES = _figures()


def _question_ids(corpus, where):
    path = CORPORA[corpus]["questions"]
    try:
        return {
            question.question_id for question in parse_questions(read_yaml(path), path)
        }
    except FileNotFoundError:
        raise ConfigError(
            f"{where}: the questions file {path} of corpus {corpus!r} does not exist"
        ) from None
    except (LabelError, ValueError) as error:
        raise ConfigError(f"{where}: {error}") from None


def _grounding():
    """The canonical grounding section, its names and question ids checked; None when absent."""
    if "grounding" not in config:
        return None
    where = "config['grounding']"
    grounding = canonical_grounding(config["grounding"], where)
    grounding["corpus"] = grounding.get("corpus", next(iter(CORPORA)))
    check_names([grounding["corpus"]], CORPORA, f"{where}['corpus']", "enabled corpus")
    check_names([grounding["chunker"]], CHUNKERS, f"{where}['chunker']", "chunker")
    check_names(
        [grounding["retriever"]],
        BASE_RETRIEVERS + FUSED_RETRIEVERS,
        f"{where}['retriever']",
        "retriever",
    )
    if grounding["chunker"] not in retriever_chunkers(grounding["retriever"]):
        raise ConfigError(
            f"{where}: retriever {grounding['retriever']!r} does not run on chunker {grounding['chunker']!r}"
        )
    depth = config["evaluation"]["depth"]
    if grounding["k"] > depth:
        raise ConfigError(
            f"{where}['k']: k = {grounding['k']} is deeper than evaluation.depth = {depth}"
        )
    known = _question_ids(grounding["corpus"], f"{where}['corpus']")
    questions = [
        (f"{where}['cases'][{case['name']!r}]['question']", case["question"])
        for case in grounding["cases"]
    ]
    questions.append((f"{where}['swap']['question']", grounding["swap"]["question"]))
    for key, question_id in questions:
        if question_id not in known:
            raise ConfigError(
                f"{key}: unknown question {question_id!r} in {CORPORA[grounding['corpus']]['questions']}"
            )
    swap = grounding["swap"]
    try:
        swap_values(swap["correct"], *swap["values"])
    except ValueError as error:
        raise ConfigError(f"{where}['swap']: {error}") from None
    return grounding


GROUNDING = _grounding()
GROUNDING_RESULTS = (
    [
        "results/grounding.csv",
        "results/grounding_cases.csv",
        "results/grounding_swap.csv",
        "results/figures/grounding.png",
    ]
    if GROUNDING
    else []
)


def grounding_inputs(wildcards):
    """The parsed corpus (memory), the chunk set and the ranking the grounding cases read."""
    if GROUNDING is None:
        raise ConfigError(
            "config['grounding']: the grounding results need a grounding section in config.yaml"
        )
    corpus, chunker, retriever = (
        GROUNDING[key] for key in ("corpus", "chunker", "retriever")
    )
    return {
        "parsed": f"work/parsed/{corpus}.parquet",
        "chunks": f"work/chunks/{corpus}/{chunker}.parquet",
        "ranking": f"work/rankings/{corpus}/{chunker}/{retriever}.parquet",
    }
def _ivf_tradeoff():
    """The collection half of the approximate-search experiment, or None when not configured."""
    if "ivf_tradeoff" not in config:
        return None
    where = "config['ivf_tradeoff']"
    settings = dict(config["ivf_tradeoff"])
    settings.setdefault("corpus", next(iter(CORPORA)))
    settings = canonical_settings(IVF_TRADEOFF_PARAMETERS, settings, where)
    check_names([settings["corpus"]], CORPORA, f"{where}['corpus']", "enabled corpus")
    check_names([settings["chunker"]], CHUNKERS, f"{where}['chunker']", "chunker")
    check_dense_retriever(settings["retriever"], RETRIEVERS, DENSE_KINDS, f"{where}['retriever']")
    if settings["chunker"] not in retriever_chunkers(settings["retriever"]):
        raise ConfigError(
            f"{where}['chunker']: retriever {settings['retriever']!r} does not run on chunker {settings['chunker']!r}"
        )
    return settings


def _ivf_synthetic():
    """The synthetic half of the approximate-search experiment, or None when not configured."""
    if "ivf_synthetic" not in config:
        return None
    where = "config['ivf_synthetic']"
    settings = canonical_settings(IVF_SYNTHETIC_PARAMETERS, config["ivf_synthetic"], where)
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


IVF_TRADEOFF = _ivf_tradeoff()
IVF_SYNTHETIC = _ivf_synthetic()


def vector_search_results():
    """What the approximate-search experiments add to rule all (only the configured halves)."""
    results = []
    if IVF_TRADEOFF:
        results.append("results/ivf_tradeoff.csv")
    if IVF_SYNTHETIC:
        results.append("results/ivf_synthetic.csv")
    if IVF_TRADEOFF and IVF_SYNTHETIC:
        results.append("results/figures/ivf_tradeoff.png")
    return results


def _answers():
    """The answers section in canonical form, or None when the config has none (no answer jobs)."""
    entry = config.get("answers")
    if entry is None:
        return None
    pairs = [(chunker, retriever) for _, chunker, retriever in grid()]
    kinds = {name: retriever["kind"] for name, retriever in RETRIEVERS.items()}
    return canonical_answers(entry, pairs, kinds, config["evaluation"]["depth"])


ANSWERS = _answers()


def answer_pairs():
    """Every (corpus, chunker, retriever) whose questions are answered."""
    if ANSWERS is None:
        return []
    return [
        (corpus, chunker, retriever)
        for corpus in CORPORA
        for chunker, retriever in ANSWERS["pairs"]
    ]


def answers_section(name, *keys):
    """One part of the canonical answers section as JSON: the params of the rules that use it."""

    def params(wildcards):
        section = ANSWERS[name]
        return canonical_json({key: section[key] for key in keys} if keys else section)

    return params


def abstention_inputs():
    """The answers of the abstention sweep's (chunker, retriever), one file per corpus."""
    if ANSWERS is None:
        return []
    chunker, retriever = (
        ANSWERS["abstention"]["chunker"],
        ANSWERS["abstention"]["retriever"],
    )
    return [
        f"work/answers/{corpus}/{chunker}/{retriever}.parquet" for corpus in CORPORA
    ]


def routing_inputs(kind):
    """Per corpus, the chunk set, its qrels or its saved index that routing searches within."""
    if ANSWERS is None:
        return []
    chunker, retriever = (
        ANSWERS["summaries"]["chunker"],
        ANSWERS["summaries"]["retriever"],
    )
    pattern = {
        "chunks": "work/chunks/{corpus}/{chunker}.parquet",
        "qrels": "work/qrels/{corpus}/{chunker}.parquet",
        "index": "work/indexes/{corpus}/{chunker}/{retriever}.npz",
    }[kind]
    return [
        pattern.format(corpus=corpus, chunker=chunker, retriever=retriever)
        for corpus in CORPORA
    ]


ANSWER_CODE = (
    "answers",
    "prompts",
    "extractive",
    "verification",
    "tokens",
    "text",
    "bm25",
    "search",
    "labels",
)
