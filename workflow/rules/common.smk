import os
import sys
from pathlib import Path

# The rag package sits next to the Snakefile; jobs import it through PYTHONPATH,
# declared so that Snakemake passes it on to jobs on other machines.
PROJECT_ROOT = Path(workflow.basedir)
sys.path.insert(0, str(PROJECT_ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))


envvars:
    "PYTHONPATH",


# Jobs run in parallel already; a multi-threaded BLAS inside each of them
# oversubscribes the cores (a small SVD took seconds instead of milliseconds).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
# The pipeline runs offline: the embedder reads its weights from an installed
# package, and any attempt to reach the Hugging Face hub must fail at once.
for _variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ[_variable] = "1"

from rag.pipeline import code_digest, job_errors
from rag.escaping import visible
from rag.pipeline.config import BEIR_DEFAULTS, ConfigError, build_plan
from rag.models.response_cache import COMMITTED_CACHE, canonical_json  # the one byte-stable JSON
from rag.corpus.source_kinds import FOLDER_SOURCES
from rag.corpus.beir_files import beir_files
from rag.corpus.manifest import content_digest
from rag.formats.files import read_yaml

# The whole configuration, checked before any job runs: every mistake is one line
# naming its key (docs/configuration.md). Grid entries are in name order.
# A ConfigError is the user's mistake: its one line, escaped, and exit status 1,
# instead of Snakemake's report with the frames of the planning code.
try:
    PLAN = build_plan(
        config,
        read_yaml(PROJECT_ROOT / "workflow/schemas/config.schema.yaml"),
        config_files=workflow.configfiles,
        questions_schema=read_yaml(PROJECT_ROOT / "workflow/schemas/questions.schema.yaml"),
        project_root=PROJECT_ROOT,
        # The default run's config: an ablation sent to a folder of its own reuses
        # that run's tables whose settings it shares (rag.pipeline.config.shared_table_groups).
        base_config=read_yaml("config.yaml") if Path("config.yaml").is_file() else None,
    )
except Exception as _error:
    if not job_errors.is_user_error(_error):
        raise
    print(f"Error: {job_errors.one_line(_error)}", file=sys.stderr)
    sys.exit(job_errors.EXIT_USER_ERROR)
for _warning in PLAN.warnings:
    print(f"WARNING: {visible(_warning, keep_newlines=False)}", file=sys.stderr)
CORPORA, CHUNKERS, RETRIEVERS = PLAN.corpora, PLAN.chunkers, PLAN.retrievers
# The folder of the tables and figures (config key results); unlabelled corpora
# (no questions) are parsed, chunked and indexed only.
RESULTS, LABELLED_CORPORA = PLAN.results_folder, PLAN.labelled_corpora
# A table that does not depend on the whole grid: in RESULTS, or in the default
# folder when this is an ablation's folder that shares its settings (Plan.table).
TABLE = PLAN.table
UNLABELLED_CORPORA = PLAN.unlabelled_corpora
LEVELS, DOCUMENT_KS = PLAN.levels, PLAN.document_ks
SPAN_CORPORA, CHUNK_LEVEL_CORPORA = PLAN.span_corpora, PLAN.chunk_level_corpora
DOCUMENT_LEVEL_CORPORA = PLAN.document_level_corpora
PAGED_CORPORA = PLAN.paged_corpora
# Retrievers grouped by the rule that makes their rankings, which each kind
# names in the table of kinds (rag/kinds.py, Kind.rule): rank, rank_embedder,
# fuse, rank_ivf, funnel and fuse_learned (learned_fusion.smk). A kind that
# only reranks a funnel's candidates names none and has no rankings.
FITTED_RETRIEVERS = PLAN.retrievers_ranked_by("rank")
EMBEDDER_RETRIEVERS = PLAN.retrievers_ranked_by("rank_embedder")
BASE_RETRIEVERS = PLAN.retrievers_ranked_by("rank", "rank_embedder")
FUSED_RETRIEVERS, IVF_RETRIEVERS = PLAN.retrievers_ranked_by("fuse"), PLAN.retrievers_ranked_by("rank_ivf")
FUNNEL_RETRIEVERS = PLAN.retrievers_ranked_by("funnel")
LEARNED_RETRIEVERS = PLAN.retrievers_ranked_by("fuse_learned")
FIGURES, GROUNDING, ANSWERS, FILTERS = PLAN.figures, PLAN.grounding, PLAN.answers, PLAN.filters
IVF_TRADEOFF, IVF_SYNTHETIC = PLAN.ivf_tradeoff, PLAN.ivf_synthetic
FILTER_ABLATION, DIVERSITY_ABLATION = config.get("filter_ablation"), config.get("diversity_ablation")
COHORTS = PLAN.cohorts
# Embeddings by text digest, shared by every embedder job and kept across runs
# (see docs/embedder.md). It lies outside the DAG: a job reads it and adds to
# it, so no rule could declare it as both input and output.
EMBEDDING_CACHE = "cache/embeddings"
# Per-ranking parts of the whole-grid tables (metrics, intervals, tests, TREC
# runs), named by digests of what they are computed from: a whole-grid job
# computes only the parts of new or changed rankings (rag.evaluation.table_parts).
# Outside the DAG too; deleting it costs only time.
TABLE_PARTS = "work/table_parts"
# Every metric of every question of one results folder, chunk-level and
# document-level (BEIR) apart; each results folder keeps its own (Plan.evaluation_name).
EVALUATION_FOLDER = f"work/evaluation/{PLAN.evaluation_name}"
QUESTION_VALUES = f"{EVALUATION_FOLDER}/question_values.parquet"
DOCUMENT_QUESTION_VALUES = f"{EVALUATION_FOLDER}/document_question_values.parquet"
# Corpus keys that only steer evaluation: changing them must not re-parse.
EVALUATION_KEYS = ("level", "depth", "component_depth", "holdout")


def alternatives(names):
    """A wildcard regex matching exactly these names (and nothing when empty)."""
    return "|".join(names) if names else "(?!x)x"


wildcard_constraints:
    corpus=alternatives(CORPORA),
    chunker=alternatives(CHUNKERS),
    retriever=alternatives(RETRIEVERS),
    filter_name=alternatives(FILTERS),


# Which modules each source imports is kept between runs, keyed by the source's digest.
code_digest.use_import_cache(Path(".snakemake") / "rag" / "import_cache.json")
PACKAGE_FILES = code_digest.PackageFiles(PROJECT_ROOT / "rag")


def script_digest(script):
    """Digest of a rule's script and its whole rag import closure (rag.pipeline.code_digest)."""
    return code_digest.script_digest(
        PROJECT_ROOT / "workflow" / "scripts" / script, PROJECT_ROOT / "rag", PACKAGE_FILES
    )


# Paths written once; rules and input functions fill them in.
PARSED = "work/parsed/{corpus}.parquet"
CHUNKS = "work/chunks/{corpus}/{chunker}.parquet"
QRELS = "work/qrels/{corpus}/{chunker}.parquet"
INDEX = "work/indexes/{corpus}/{chunker}/{retriever}.npz"
RANKING = "work/rankings/{corpus}/{chunker}/{retriever}.parquet"
FILTERED = "work/filtered/{corpus}/{chunker}/{filter_name}/{retriever}.parquet"
# A ranking ranked deeper for fusion, and its index (rag.pipeline.config.Plan.component_ranking).
COMPONENT_RANKING = "work/component_rankings/{corpus}/{chunker}/{retriever}.parquet"
# The weights a learned fusion chose per fold (rule fuse_learned).
LEARNED_WEIGHTS = "work/learned/{corpus}/{chunker}/{retriever}.csv"
COMPONENT_INDEX = "work/component_indexes/{corpus}/{chunker}/{retriever}.npz"
# A BEIR corpus's questions and document qrels; a chunk set's evidence cuts.
QUESTIONS = "work/questions/{corpus}.parquet"
DOCUMENT_QRELS = "work/document_qrels/{corpus}.parquet"
CUTS = "work/cuts/{corpus}/{chunker}.parquet"
# A held-out question set's ranking (question_set_ranking).
QUESTION_SET_RANKING = "work/question_sets/{corpus}/{questions}/{chunker}/{retriever}.parquet"
# Answer files without their endings: ".parquet" for the extractive generator,
# ".{reader}.parquet" for a reader (answer_files).
ANSWER_STEM = "work/answers/{corpus}/{chunker}/{retriever}"
# Their per-request traces, named the same way with ".jsonl" (docs/trace.md).
ANSWER_TRACE_STEM = "work/traces/answers/{corpus}/{chunker}/{retriever}"
# MiniLM vectors of a chunk set's sentences and questions, for the reader's similarity.
PROMPT_VECTORS = "work/prompt_vectors/{corpus}/{chunker}.npz"
# The same for the texts of the held-out check (rule ask_vectors).
ASK_VECTORS = "work/ask_vectors.npz"
SUMMARY_ANSWER_STEM = "work/answers/{corpus}/lead_summaries"
SUMMARY_ANSWER_TRACE_STEM = "work/traces/answers/{corpus}/lead_summaries"
# A language model's answers (rag.pipeline.config.Plan.llm_answer_settings).
LLM_ANSWER = "work/llm_answers/{corpus}/{questions}/{generator}/{chunker}/{retriever}.parquet"
# Its per-request traces, one JSON line per answer (docs/trace.md).
LLM_TRACE = "work/traces/llm_answers/{corpus}/{questions}/{generator}/{chunker}/{retriever}.jsonl"


def ranking_depth_of(wildcards):
    return PLAN.ranking_depth(wildcards.corpus)


def component_depth_of(wildcards):
    return PLAN.component_depth(wildcards.corpus)


# Lists that follow from the plan (rag/pipeline/config.py), under the names the rules use.
grid, index_grid, index_benchmark = PLAN.grid, PLAN.index_grid, PLAN.index_benchmark
answer_pairs, filter_ablation_grid, all_results = PLAN.answer_pairs, PLAN.filter_ablation_grid, PLAN.results
corpora_of_source = PLAN.corpora_of_source


def corpus_chunker_pairs(corpora=None):
    return [(corpus, chunker) for corpus in (CORPORA if corpora is None else corpora) for chunker in CHUNKERS]


def chunker_params(wildcards):
    return canonical_json(CHUNKERS[wildcards.chunker])


def retriever_params(wildcards):
    return canonical_json(RETRIEVERS[wildcards.retriever])


def filter_params(wildcards):
    return canonical_json(FILTERS[wildcards.filter_name])


def corpus_params(wildcards):
    return canonical_json(PLAN.corpus_settings(wildcards.corpus, EVALUATION_KEYS))


def corpus_documents(wildcards):
    """The input files of a corpus: removing a document changes this list."""
    if CORPORA[wildcards.corpus]["source"] in FOLDER_SOURCES:
        return PLAN.corpus_files(wildcards.corpus)
    return [wikipedia_lock(wildcards.corpus)]


def corpus_content(wildcards):
    """SHA-256 over a corpus's input files (rag.corpus.manifest): as a parameter, it reruns the
    parse job when a document's bytes change, even when its modification time went back (cp -p).
    A function of the wildcards only: Snakemake does not compare parameters derived from input."""
    if CORPORA[wildcards.corpus]["source"] == "beir":
        return content_digest(beir_inputs(wildcards).values())
    return content_digest(corpus_documents(wildcards))


def wikipedia_lock(corpus):
    """Resolved revisions and digests; commit it so later runs fetch the same text."""
    return f"resources/{corpus}/wikipedia.lock.yaml"


def beir_inputs(wildcards):
    """corpus.jsonl, queries.jsonl and the split's qrels (the plan checked that they exist)."""
    entry = CORPORA[wildcards.corpus]
    files = beir_files(entry["folder"], entry.get("split", BEIR_DEFAULTS["split"]))
    return {role: str(path) for role, path in files.items()}


def questions_path(corpus):
    """A corpus's questions: its labelled YAML file, or the table its BEIR queries become."""
    if CORPORA[corpus]["source"] == "beir":
        return QUESTIONS.format(corpus=corpus)
    return CORPORA[corpus].get("questions", [])  # none for an unlabelled corpus


def questions_file(wildcards):
    return questions_path(wildcards.corpus)


# Language-model replies by request digest (rag/models/response_cache.py),
# committed so that a fresh clone rebuilds the LLM answer tables without a model.
# Like the embedding cache it lies outside the DAG: jobs read and add to it.
LLM_CACHE = COMMITTED_CACHE
