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

from rag.config import (  # noqa: E402
    BEIR_DEFAULTS,
    CHUNKER_PARAMETERS,
    RETRIEVER_PARAMETERS,
    ConfigError,
    canonical_entry,
    canonical_json,
    check_corpus,
    check_names,
    corpus_level,
    schema_errors,
)
from rag.chunking import ChunkingError, spec_from_config  # noqa: E402
from rag.io import beir_files, read_yaml  # noqa: E402

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
    for k in config["evaluation"]["ks"]:
        if k > config["evaluation"]["depth"]:
            raise ConfigError(f"config['evaluation']['ks']: k = {k} is deeper than depth = {config['evaluation']['depth']}")
    # (Per-corpus depths are checked once the corpora are known.)
    return chunkers, retrievers


# Grid entries in name order, so that reordering config.yaml changes nothing.
CHUNKERS, RETRIEVERS = (dict(sorted(grid.items())) for grid in _canonical_grid())
CORPORA = {
    name: entry for name, entry in sorted(config["corpora"].items()) if entry.get("enabled", True)
}
if not CORPORA:
    raise ConfigError("config['corpora']: every corpus is disabled")
for _name, _entry in CORPORA.items():
    check_corpus(_entry, f"config['corpora'][{_name!r}]")


def ranking_depth(corpus):
    """Chunks ranked per question: the corpus's own depth, or evaluation.depth."""
    return CORPORA[corpus].get("depth", config["evaluation"]["depth"])


# Evidence spans label chunks; BEIR qrels (or spans mapped to their documents)
# label documents. Each corpus is evaluated at one level.
LEVELS = {name: corpus_level(entry) for name, entry in CORPORA.items()}
SPAN_CORPORA = [name for name, entry in CORPORA.items() if entry["source"] != "beir"]
CHUNK_LEVEL_CORPORA = [name for name in CORPORA if LEVELS[name] == "chunk"]
DOCUMENT_LEVEL_CORPORA = [name for name in CORPORA if LEVELS[name] == "document"]
# BEIR reports nDCG@10 and recall@100; document-level tables add them to evaluation.ks.
DOCUMENT_KS = sorted(set(config["evaluation"]["ks"]) | {10, 100})
for _name in CORPORA:
    _where = f"config['corpora'][{_name!r}]['depth']" if "depth" in CORPORA[_name] else "config['evaluation']['depth']"
    _deepest = max(DOCUMENT_KS if LEVELS[_name] == "document" else config["evaluation"]["ks"])
    if _deepest > ranking_depth(_name):
        raise ConfigError(
            f"{_where}: corpus {_name!r} is evaluated at k = {_deepest} ({LEVELS[_name]} level) "
            f"but ranks only {ranking_depth(_name)} chunks"
        )


def beir_inputs(wildcards):
    """corpus.jsonl, queries.jsonl and the split's qrels; a missing one is a config error."""
    entry = CORPORA[wildcards.corpus]
    split = entry.get("split", BEIR_DEFAULTS["split"])
    files = beir_files(entry["folder"], split)
    for role, path in files.items():
        if not path.is_file():
            key = "split" if role == "qrels" and Path(entry["folder"]).is_dir() else "folder"
            raise ConfigError(f"config['corpora'][{wildcards.corpus!r}][{key!r}]: no such file {path}")
    return {role: str(path) for role, path in files.items()}


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


# Corpus keys that only steer evaluation: changing them must not re-parse.
EVALUATION_KEYS = ("level", "depth")


def corpus_params(wildcards):
    entry = CORPORA[wildcards.corpus]
    if entry["source"] == "beir":
        entry = {**BEIR_DEFAULTS, **entry}
    return canonical_json({key: value for key, value in entry.items() if key not in EVALUATION_KEYS})


def corpus_documents(wildcards):
    """The input files of a corpus: removing a document changes this list."""
    entry = CORPORA[wildcards.corpus]
    if entry["source"] == "markdown":
        folder = Path(entry["documents"])
        files = sorted(str(path) for path in folder.glob("*.md"))
        if not files:
            raise ConfigError(f"config['corpora'][{wildcards.corpus!r}]['documents']: no *.md files in {folder}")
        return files
    return [wikipedia_lock(wildcards.corpus)]


def wikipedia_lock(corpus):
    """Resolved revisions and digests; commit it so later runs fetch the same text."""
    return f"resources/{corpus}/wikipedia.lock.yaml"


def corpora_of_source(source):
    return [name for name, entry in CORPORA.items() if entry["source"] == source]


def questions_path(corpus):
    """A corpus's questions: its labelled YAML file, or the table its BEIR queries become."""
    if CORPORA[corpus]["source"] == "beir":
        return f"work/questions/{corpus}.parquet"
    return CORPORA[corpus]["questions"]


def questions_file(wildcards):
    return questions_path(wildcards.corpus)


def corpus_chunker_pairs(corpora=None):
    return [(corpus, chunker) for corpus in (CORPORA if corpora is None else corpora) for chunker in CHUNKERS]


def all_results():
    results = [
        "results/corpus_statistics.csv",
        "results/questions_by_type.csv",
        "results/chunk_statistics.csv",
    ]
    if SPAN_CORPORA:
        results.append("results/evidence_cuts.csv")
    if CHUNK_LEVEL_CORPORA:
        results += ["results/metrics.csv", "results/figures/recall_at_k.png"]
    if DOCUMENT_LEVEL_CORPORA:
        results += ["results/document_metrics.csv", "results/beir_metrics.csv"]
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
    return sorted(allowed)


def grid(corpora=None):
    """Every (corpus, chunker, retriever) the configuration asks for."""
    return [
        (corpus, chunker, retriever)
        for corpus in (CORPORA if corpora is None else corpora)
        for retriever in RETRIEVERS
        for chunker in retriever_chunkers(retriever)
    ]


BASE_RETRIEVERS = [name for name in RETRIEVERS if not is_fusion(name)]
FUSED_RETRIEVERS = [name for name in RETRIEVERS if is_fusion(name)]


def retriever_params(wildcards):
    return canonical_json(RETRIEVERS[wildcards.retriever])


def ranking_depth_of(wildcards):
    return ranking_depth(wildcards.corpus)


def fusion_inputs(wildcards):
    return [
        f"work/rankings/{wildcards.corpus}/{wildcards.chunker}/{component}.parquet"
        for component in RETRIEVERS[wildcards.retriever]["components"]
    ]


def alternatives(names):
    """A wildcard regex matching exactly these names (and nothing when empty)."""
    return "|".join(names) if names else "(?!x)x"


def _figures():
    """What the figures draw; they show chunk-level metrics, so only chunk-level corpora qualify."""
    figures = dict(config.get("figures", {}))
    if not CHUNK_LEVEL_CORPORA:
        return figures
    figures.setdefault("corpus", CHUNK_LEVEL_CORPORA[0])
    figures.setdefault("chunker", next(iter(CHUNKERS)))
    figures.setdefault("retriever", next(iter(RETRIEVERS)))
    figures.setdefault("compare", list(RETRIEVERS)[:2] * (2 if len(RETRIEVERS) == 1 else 1))
    check_names([figures["corpus"]], CHUNK_LEVEL_CORPORA, "config['figures']['corpus']", "chunk-level corpus")
    check_names([figures["chunker"]], CHUNKERS, "config['figures']['chunker']", "chunker")
    check_names([figures["retriever"], *figures["compare"]], RETRIEVERS, "config['figures']", "retriever")
    return figures


FIGURES = _figures()
