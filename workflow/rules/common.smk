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
    return [f"work/raw/{wildcards.corpus}.parquet"]


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
    ]
