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

from rag import code_digest, job_errors
from rag.escaping import visible
from rag.config import BEIR_DEFAULTS, ConfigError, build_plan, canonical_json
from rag.corpus.folders import FOLDER_SOURCES
from rag.corpus.beir_files import beir_files
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
UNLABELLED_CORPORA = PLAN.unlabelled_corpora
LEVELS, DOCUMENT_KS = PLAN.levels, PLAN.document_ks
SPAN_CORPORA, CHUNK_LEVEL_CORPORA = PLAN.span_corpora, PLAN.chunk_level_corpora
DOCUMENT_LEVEL_CORPORA = PLAN.document_level_corpora
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
# Per-ranking pieces of the whole-grid tables (metrics, intervals, tests, TREC
# runs), named by digests of what they are computed from: a whole-grid job
# computes only the pieces of new or changed rankings (rag.evaluation.pieces).
# Outside the DAG too; deleting it costs only time.
PIECES = "work/pieces"
# Every metric of every question of one results folder, chunk-level and
# document-level (BEIR) apart; each results folder keeps its own (Plan.evaluation_folder).
QUESTION_VALUES = f"{PLAN.evaluation_folder}/question_values.parquet"
DOCUMENT_QUESTION_VALUES = f"{PLAN.evaluation_folder}/document_question_values.parquet"
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
    """Digest of a rule's script and its whole rag import closure (rag.code_digest)."""
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
# A ranking ranked deeper for fusion, and its index (rag.config.Plan.component_ranking).
COMPONENT_RANKING = "work/component_rankings/{corpus}/{chunker}/{retriever}.parquet"
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
# MiniLM vectors of a chunk set's sentences and questions, for the reader's similarity.
PROMPT_VECTORS = "work/prompt_vectors/{corpus}/{chunker}.npz"
# The same for the texts of the held-out check (rule ask_vectors).
ASK_VECTORS = "work/ask_vectors.npz"
SUMMARY_ANSWER_STEM = "work/answers/{corpus}/lead_summaries"
# A language model's answers (rag.config.Plan.llm_answer_files).
LLM_ANSWER = "work/llm_answers/{corpus}/{questions}/{generator}/{chunker}/{retriever}.parquet"
# Its per-request traces, one JSON line per answer (docs/trace.md).
LLM_TRACE = "work/traces/llm_answers/{corpus}/{questions}/{generator}/{chunker}/{retriever}.jsonl"


def ranking_depth_of(wildcards):
    return PLAN.ranking_depth(wildcards.corpus)


def component_depth_of(wildcards):
    return PLAN.component_depth(wildcards.corpus)


# Lists that follow from the plan (rag/config.py), under the names the rules use.
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


# Question sets and the language models' answer files (workflow/rules/llm_answers.smk).


def heldout_question_sets():
    """The stems of the held-out question files (answers.heldout.questions)."""
    heldout = (ANSWERS or {}).get("heldout") or {"questions": []}
    return [Path(path).stem for path in heldout["questions"]]


def question_set_ranking(corpus, questions, chunker, retriever):
    """Where one question set's ranking is: the grid's for development, rank_question_set's otherwise.

    The llm generator's inputs call this, so a held-out set is answered from
    the same retriever entry and index as the development questions.
    """
    names = {"corpus": corpus, "chunker": chunker, "retriever": retriever}
    if questions == "development":
        return caller_ranking(corpus, chunker, retriever, PLAN.answer_callers["llm"])
    return QUESTION_SET_RANKING.format(questions=questions, **names)


def question_set_indexes(wildcards):
    """The saved indexes of the base retrievers a (possibly fused) retriever ranks with."""
    from rag.retrieval.question_sets import base_components

    names = base_components(wildcards.retriever, RETRIEVERS)
    return [
        INDEX.format(corpus=wildcards.corpus, chunker=wildcards.chunker, retriever=name) for name in names
    ]


def question_set_entries(wildcards):
    """The retriever entries a question set's ranking reads: its own and its components'."""
    from rag.retrieval.question_sets import entries_used

    return canonical_json(entries_used(wildcards.retriever, RETRIEVERS))


def llm_answer_files():
    """The llm generators' answer files: the development questions of every corpus, and each
    held-out file of the held-out corpus, answered with the same settings."""
    files = PLAN.llm_answer_files()
    heldout = ANSWERS["heldout"] if ANSWERS is not None else None
    for questions in heldout_question_sets():
        prefix = LLM_ANSWER.split("{questions}")[0].format(corpus=heldout["corpus"])
        files += [path for path in PLAN.llm_answer_files(questions) if path.startswith(prefix)]
    return files


def llm_chunk_files():
    """The chunk sets the llm answer files drew their sources from (closed book has none)."""
    chunkers = sorted({Path(path).parent.name for path in llm_answer_files()} - {"none"})
    corpora = sorted({Path(path).parts[2] for path in llm_answer_files()})
    return [CHUNKS.format(corpus=corpus, chunker=chunker) for corpus in corpora for chunker in chunkers]


def ivf_base(wildcards):
    return RETRIEVERS[wildcards.retriever]["base"]


def ivf_base_index(wildcards):
    """The saved index of an ivf entry's base: its embeddings are reused, not refitted."""
    return INDEX.format(corpus=wildcards.corpus, chunker=wildcards.chunker, retriever=ivf_base(wildcards))


def ivf_base_params(wildcards):
    return canonical_json(RETRIEVERS[ivf_base(wildcards)])


def fusion_inputs(wildcards):
    """The components' rankings, read at the corpus's component depth (rag.config.Plan.component_ranking)."""
    return [
        PLAN.component_ranking(wildcards.corpus, wildcards.chunker, component)
        for component in RETRIEVERS[wildcards.retriever]["components"]
    ]


def learned_labels(wildcards):
    """What a learned fusion chooses on: the chunk set's qrels, or the corpus's document qrels."""
    if LEVELS[wildcards.corpus] == "document":
        return DOCUMENT_QRELS.format(corpus=wildcards.corpus)
    return QRELS.format(corpus=wildcards.corpus, chunker=wildcards.chunker)


def funnel_rerank_params(wildcards):
    return canonical_json(PLAN.rerank_entries(wildcards.retriever))


def funnel_rerank_indexes(wildcards):
    """The fitted indexes of the plain retrievers a funnel reranks with."""
    return [
        INDEX.format(corpus=wildcards.corpus, chunker=wildcards.chunker, retriever=name)
        for name in PLAN.rerank_entries(wildcards.retriever)
        if name in BASE_RETRIEVERS
    ]


def filtered_ranking(corpus, chunker, filter_name, retriever):
    return FILTERED.format(corpus=corpus, chunker=chunker, filter_name=filter_name, retriever=retriever)


# Callers (rag/retrieval/filters.py, Caller): every path to a model reads the
# rankings of the caller it answers for, searched inside retrieval within the
# caller's view (a filter of the caller's name). A view that allows every
# chunk of a chunk set gives exactly the unfiltered ranking (filtering.smk).
CALLERS = PLAN.callers


def caller_ranking(corpus, chunker, retriever, caller):
    return filtered_ranking(corpus, chunker, caller, retriever)


def answer_ranking(wildcards):
    """The ranking the offline generators answer from: answers.caller's."""
    return caller_ranking(
        wildcards.corpus, wildcards.chunker, wildcards.retriever, PLAN.answer_callers["answers"]
    )


# The callers of results/metrics_by_caller.csv, made by caller_cohorts: every
# caller of the callers section and every caller an answer path runs as, over
# the answered (chunker, retriever) pairs.
def measured_callers():
    named = set(PLAN.config.get("callers") or {})
    if ANSWERS is not None:
        named |= {PLAN.answer_callers["answers"], PLAN.answer_callers["llm"]}
    return sorted(named)


def caller_grid():
    return [
        [corpus, chunker, retriever, caller, caller_ranking(corpus, chunker, retriever, caller)]
        for corpus, chunker, retriever in answer_pairs()
        for caller in measured_callers()
    ]


def caller_grid_inputs():
    pairs = sorted({(corpus, chunker) for corpus, chunker, _ in answer_pairs()})
    return {
        f"{corpus}/{chunker}": {
            "questions": questions_path(corpus),
            "qrels": QRELS.format(corpus=corpus, chunker=chunker),
            "chunks": CHUNKS.format(corpus=corpus, chunker=chunker),
        }
        for corpus, chunker in pairs
    }


def caller_params(caller):
    """A caller's name and view as the params of a rule that answers for it."""
    return canonical_json({"name": caller, "view": CALLERS[caller]})


def grounding_inputs(wildcards):
    """The parsed corpus (memory), the chunk set and the ranking the grounding cases read."""
    if GROUNDING is None:
        raise ConfigError("config['grounding']: these results need a grounding section in config.yaml")
    names = {key: GROUNDING[key] for key in ("corpus", "chunker", "retriever")}
    templates = {"parsed": PARSED, "chunks": CHUNKS}
    inputs = {role: template.format(**names) for role, template in templates.items()}
    return inputs | {"ranking": caller_ranking(**names, caller=PLAN.answer_callers["grounding"])}


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
    chunker, retriever = ANSWERS["abstention"]["chunker"], ANSWERS["abstention"]["retriever"]
    return [
        f"{ANSWER_STEM}.parquet".format(corpus=corpus, chunker=chunker, retriever=retriever)
        for corpus in SPAN_CORPORA
    ]


def routing_inputs(kind):
    """Per corpus, the chunk set, its qrels or its saved index that routing searches within."""
    if ANSWERS is None:
        return []
    names = dict(chunker=ANSWERS["summaries"]["chunker"], retriever=ANSWERS["summaries"]["retriever"])
    pattern = {"chunks": CHUNKS, "qrels": QRELS, "index": INDEX}[kind]
    return [pattern.format(corpus=corpus, **names) for corpus in SPAN_CORPORA]


# The reader (rag/answering/reader.py) beside the spec's extractive generator.
# The answer scripts take a list of readers: the extractive rules list one,
# the reader rules every reader name, answered together in one job.
EXTRACTIVE_READERS = canonical_json([{"name": "extractive"}])


def reader_names():
    """The reader names of answers.generators (reader, and reader_minilm with MiniLM similarity)."""
    return ANSWERS["reader"]["names"] if ANSWERS is not None else []


# Whether a reader uses the MiniLM similarity: then its texts are encoded ahead
# (rules prompt_vectors and ask_vectors) and the answer jobs read them.
MINILM_READER = "reader_minilm" in reader_names()


def prompt_vectors(wildcards):
    """The chunk set's prompt vectors when a reader uses the MiniLM similarity; otherwise nothing."""
    if not MINILM_READER:
        return []
    return [PROMPT_VECTORS.format(corpus=wildcards.corpus, chunker=wildcards.chunker)]


def reader_params(wildcards):
    """The reader section for each reader name, in order: the similarity is on for reader_minilm only."""
    return canonical_json(
        [
            {**ANSWERS["reader"], "name": name, "similarity": "minilm" if name == "reader_minilm" else "none"}
            for name in reader_names()
        ]
    )


def reader_answer_files(stem):
    """One answer file per reader name, in the order of reader_params: {stem}.{name}.parquet."""
    return [f"{stem}.{name}.parquet" for name in reader_names()]


def answer_files(stem):
    """One answer file per offline generator listed in answers.generators: the extractive one's, then each reader's."""
    if ANSWERS is None:
        return []
    extractive = [f"{stem}.parquet"] if "extractive" in ANSWERS["offline"] else []
    return [*extractive, *reader_answer_files(stem)]


def heldout_input(kind):
    """The held-out check's documents folder and its two question files (development, held-out)."""
    corpus, heldout = CORPORA[ANSWERS["heldout"]["corpus"]], ANSWERS["heldout"]["questions"]
    return {"documents": corpus["documents"], "development": corpus["questions"], "heldout": heldout}[kind]


# Language-model replies by request digest (rag/models/response_cache.py),
# committed so that a fresh clone rebuilds the LLM answer tables without a model.
# Like the embedding cache it lies outside the DAG: jobs read and add to it.
LLM_CACHE = "resources/llm_cache"
CLOSED_BOOK = "none"
LLM_GENERATORS = ANSWERS["llm"]["generators"] if ANSWERS is not None else []


def llm_questions_path(corpus, questions):
    """The question file of a set: ``development`` is the corpus's, another name a held-out file's stem."""
    if questions == "development":
        return questions_path(corpus)
    heldout = ANSWERS["heldout"] or {"questions": []}
    for path in heldout["questions"]:
        if Path(path).stem == questions:
            return path
    raise ConfigError(
        f"work/llm_answers: no question set {questions!r} (development or a held-out file's stem)"
    )


def llm_answer_inputs(wildcards):
    """The questions and, unless closed book, the chunks, ranking and parsed corpus of one setting."""
    inputs = {"questions": llm_questions_path(wildcards.corpus, wildcards.questions)}
    if wildcards.retriever != CLOSED_BOOK:
        names = {"corpus": wildcards.corpus, "chunker": wildcards.chunker}
        inputs |= {
            "chunks": CHUNKS.format(**names),
            "ranking": question_set_ranking(
                wildcards.corpus, wildcards.questions, wildcards.chunker, wildcards.retriever
            ),
            "parsed": PARSED.format(corpus=wildcards.corpus),
        }
    return inputs
