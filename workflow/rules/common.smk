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
    CHUNKER_PARAMETERS,
    RETRIEVER_PARAMETERS,
    ConfigError,
    canonical_answers,
    canonical_entry,
    canonical_json,
    check_names,
    schema_errors,
)
from rag.chunking import ChunkingError, spec_from_config  # noqa: E402
from rag.io import read_yaml  # noqa: E402

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
    return chunkers, retrievers


# Grid entries in name order, so that reordering config.yaml changes nothing.
CHUNKERS, RETRIEVERS = (dict(sorted(grid.items())) for grid in _canonical_grid())
CORPORA = {
    name: entry for name, entry in sorted(config["corpora"].items()) if entry.get("enabled", True)
}
if not CORPORA:
    raise ConfigError("config['corpora']: every corpus is disabled")
for _name, _entry in CORPORA.items():
    _needed = {"markdown": ["documents"], "wikipedia": ["titles", "as_of"]}[_entry["source"]]
    for _key in _needed:
        if _key not in _entry:
            raise ConfigError(f"config['corpora'][{_name!r}][{_key!r}]: required for source {_entry['source']!r}")


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
            raise ConfigError(f"config['corpora'][{wildcards.corpus!r}]['documents']: no *.md files in {folder}")
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
    return sorted(allowed)


def grid(corpora=None):
    """Every (corpus, chunker, retriever) the configuration asks for."""
    return [
        (corpus, chunker, retriever)
        for corpus in (corpora or CORPORA)
        for retriever in RETRIEVERS
        for chunker in retriever_chunkers(retriever)
    ]


BASE_RETRIEVERS = [name for name in RETRIEVERS if not is_fusion(name)]
FUSED_RETRIEVERS = [name for name in RETRIEVERS if is_fusion(name)]


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
    figures.setdefault("compare", list(RETRIEVERS)[:2] * (2 if len(RETRIEVERS) == 1 else 1))
    check_names([figures["corpus"]], CORPORA, "config['figures']['corpus']", "corpus")
    check_names([figures["chunker"]], CHUNKERS, "config['figures']['chunker']", "chunker")
    check_names([figures["retriever"], *figures["compare"]], RETRIEVERS, "config['figures']", "retriever")
    return figures


FIGURES = _figures()


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
