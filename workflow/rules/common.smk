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
    BEIR_DEFAULTS,
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
    check_corpus,
    check_dense_retriever,
    check_ivf_entry,
    check_names,
    check_retriever_graph,
    corpus_level,
    retriever_dependencies,
    check_optional_packages,
    prune_unavailable,
    schema_errors,
)
from rag.retrievers import APPROXIMATE_KINDS, DENSE_KINDS, PRETRAINED_KINDS  # noqa: E402
from rag.chunking import ChunkingError, spec_from_config  # noqa: E402
from rag.grounding import swap_values  # noqa: E402
from rag.io import beir_files, read_yaml  # noqa: E402
from rag.labels import LabelError, parse_questions  # noqa: E402
from rag.documents import DocumentError  # noqa: E402
from rag.experiments import (  # noqa: E402
    figures_corpus,
    grounding_corpus,
    ivf_tradeoff_warning,
    unlabelled_corpora,
)
from rag.folders import FOLDER_SOURCES, folder_files, skipped_setting  # noqa: E402
from rag.questions import corpus_question_problems  # noqa: E402

SCHEMA = "../schemas/config.schema.yaml"

# A precise, one-line-per-problem check before Snakemake's own validation, so a
# misspelled key is reported with its path before any job runs.
_problems = schema_errors(config, read_yaml(PROJECT_ROOT / "workflow/schemas/config.schema.yaml"))
if _problems:
    raise ConfigError("invalid config.yaml:\n  " + "\n  ".join(_problems))
validate(config, schema=SCHEMA)
for _warning in prune_unavailable(config, PRETRAINED_KINDS):
    print(f"WARNING: {_warning}", file=sys.stderr)

# Issue 16: the folder of the result tables and figures (config key results,
# default results/), so an experiment of one's own leaves the committed tables alone.
RESULTS = config.get("results", "results").rstrip("/") or "."


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
        check_names(
            entry.get("chunkers", []),
            config["chunkers"],
            f"{where}['chunkers']",
            "chunker",
        )
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
    check_corpus(_entry, f"config['corpora'][{_name!r}]")
    try:  # issue 16: what the parser skips is a per-corpus setting
        skipped_setting(_entry, f"config['corpora'][{_name!r}]")
    except DocumentError as error:
        raise ConfigError(str(error)) from None

# Issue 16: every question file is checked against its schema while the DAG is
# built, and every problem is reported at once (rag.questions).
_question_problems = corpus_question_problems(
    CORPORA, read_yaml(PROJECT_ROOT / "workflow/schemas/questions.schema.yaml"), read_yaml
)
if _question_problems:
    raise ConfigError(
        f"{len(_question_problems)} problem(s) in the question files:\n  " + "\n  ".join(_question_problems)
    )
# Issue 16: a corpus without questions is parsed, chunked and indexed only.
UNLABELLED_CORPORA = unlabelled_corpora(CORPORA)
LABELLED_CORPORA = [name for name in CORPORA if name not in UNLABELLED_CORPORA]


def ranking_depth(corpus):
    """Chunks ranked per question: the corpus's own depth, or evaluation.depth."""
    return CORPORA[corpus].get("depth", config["evaluation"]["depth"])


# Evidence spans label chunks; BEIR qrels (or spans mapped to their documents)
# label documents. Each corpus is evaluated at one level.
LEVELS = {name: corpus_level(CORPORA[name]) for name in LABELLED_CORPORA}
SPAN_CORPORA = [name for name in LABELLED_CORPORA if CORPORA[name]["source"] != "beir"]
CHUNK_LEVEL_CORPORA = [name for name in LABELLED_CORPORA if LEVELS[name] == "chunk"]
DOCUMENT_LEVEL_CORPORA = [name for name in LABELLED_CORPORA if LEVELS[name] == "document"]
# BEIR reports nDCG@10 and recall@100; document-level tables add them to evaluation.ks.
DOCUMENT_KS = sorted(set(config["evaluation"]["ks"]) | {10, 100})
for _name in LABELLED_CORPORA:
    _where = (
        f"config['corpora'][{_name!r}]['depth']"
        if "depth" in CORPORA[_name]
        else "config['evaluation']['depth']"
    )
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
    if entry["source"] in FOLDER_SOURCES:  # issue 16: the skip setting, default filled in
        entry = {**entry, "skip": list(skipped_setting(entry, wildcards.corpus))}
    return canonical_json({key: value for key, value in entry.items() if key not in EVALUATION_KEYS})


def corpus_documents(wildcards):
    """The input files of a corpus: removing a document changes this list."""
    entry = CORPORA[wildcards.corpus]
    if entry["source"] in FOLDER_SOURCES:
        folder = Path(entry["documents"])
        where = f"config['corpora'][{wildcards.corpus!r}]['documents']"
        if not folder.is_dir():
            raise ConfigError(f"{where}: no such folder {folder}")
        files = [str(path) for path in folder_files(folder, entry["source"])]
        if not files:
            endings = " or ".join(f"*{ending}" for ending in FOLDER_SOURCES[entry["source"]])
            raise ConfigError(f"{where}: no {endings} files in {folder}")
        return files
    return [wikipedia_lock(wildcards.corpus)]


def wikipedia_lock(corpus):
    """Resolved revisions and digests; commit it so later runs fetch the same text."""
    return f"resources/{corpus}/wikipedia.lock.yaml"


def corpora_of_source(*sources):
    return [name for name, entry in CORPORA.items() if entry["source"] in sources]


def questions_path(corpus):
    """A corpus's questions: its labelled YAML file, or the table its BEIR queries become."""
    if CORPORA[corpus]["source"] == "beir":
        return f"work/questions/{corpus}.parquet"
    return CORPORA[corpus].get("questions", [])  # issue 16: none for an unlabelled corpus


def questions_file(wildcards):
    return questions_path(wildcards.corpus)


def corpus_chunker_pairs(corpora=None):
    return [(corpus, chunker) for corpus in (CORPORA if corpora is None else corpora) for chunker in CHUNKERS]


def all_results():
    results = [
        RESULTS + "/corpus_statistics.csv",
        RESULTS + "/questions_by_type.csv",
        RESULTS + "/chunk_statistics.csv",
        RESULTS + "/index_statistics.csv",
    ]
    if SPAN_CORPORA:
        results.append(RESULTS + "/evidence_cuts.csv")
    if CHUNK_LEVEL_CORPORA:
        results += [RESULTS + "/metrics.csv", RESULTS + "/figures/recall_at_k.png"]
    if DOCUMENT_LEVEL_CORPORA:
        results += [RESULTS + "/document_metrics.csv", RESULTS + "/beir_metrics.csv"]
    results += [*GROUNDING_RESULTS, *vector_search_results(), *contract_results()]
    if ANSWERS is not None:
        results += [
            RESULTS + "/answers.csv",
            RESULTS + "/answers_summary.csv",
            RESULTS + "/abstention.csv",
            RESULTS + "/figures/abstention.png",
            RESULTS + "/summaries.csv",
            RESULTS + "/routing.csv",
            RESULTS + "/routing_metrics.csv",
        ]
    return results


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
    """Every (corpus, chunker, retriever) the configuration asks for (labelled corpora by default)."""
    return [
        (corpus, chunker, retriever)
        for corpus in (LABELLED_CORPORA if corpora is None else corpora)
        for retriever in RETRIEVERS
        for chunker in retriever_chunkers(retriever)
    ]


def index_grid():
    """(corpus, chunker, retriever) of every fitted or encoded index, unlabelled corpora included."""
    return [triple for triple in grid(list(CORPORA)) if triple[2] in BASE_RETRIEVERS]


def index_benchmark(corpus, chunker, retriever):
    """The benchmark file of the job that built an index (rule rank or rank_embedder)."""
    rule_name = "rank_embedder" if retriever in EMBEDDER_RETRIEVERS else "rank"
    return f"benchmarks/logs/{rule_name}/{corpus}/{chunker}/{retriever}.tsv"


def is_approximate(retriever):
    return RETRIEVERS[retriever]["kind"] in APPROXIMATE_KINDS


# Retrievers ranking the chunks themselves: fitted on their texts (rule rank)
# or encoding them with a pretrained model (rule rank_embedder); fusions (rule
# fuse), IVF indexes over another retriever's embeddings (rule rank_ivf) and
# funnels (rule funnel).
BASE_RETRIEVERS = [
    name for name in RETRIEVERS if not (is_fusion(name) or is_funnel(name) or is_approximate(name))
]
EMBEDDER_RETRIEVERS = [name for name in BASE_RETRIEVERS if RETRIEVERS[name]["kind"] in PRETRAINED_KINDS]
FITTED_RETRIEVERS = [name for name in BASE_RETRIEVERS if name not in EMBEDDER_RETRIEVERS]
FUSED_RETRIEVERS = [name for name in RETRIEVERS if is_fusion(name)]
IVF_RETRIEVERS = [name for name in RETRIEVERS if is_approximate(name)]
FUNNEL_RETRIEVERS = [name for name in RETRIEVERS if is_funnel(name)]

# Embeddings by text digest, shared by every embedder job and kept across runs
# (see docs/embedder.md). It lies outside the DAG: a job reads it and adds to
# it, so no rule could declare it as both input and output.
EMBEDDING_CACHE = "cache/embeddings"


def retriever_params(wildcards):
    return canonical_json(RETRIEVERS[wildcards.retriever])


def ranking_depth_of(wildcards):
    return ranking_depth(wildcards.corpus)


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
    """What the figures draw; they show chunk-level metrics, so only chunk-level corpora qualify."""
    figures = dict(config.get("figures", {}))
    if not CHUNK_LEVEL_CORPORA:
        return figures
    # Issue 16: a named corpus that is off gives way to the first chunk-level one.
    figures["corpus"], _warning = figures_corpus(
        figures.get("corpus"), CHUNK_LEVEL_CORPORA, config["corpora"]
    )
    if _warning:
        print(f"WARNING: {_warning}", file=sys.stderr)
    figures.setdefault("chunker", next(iter(CHUNKERS)))
    figures.setdefault("retriever", next(iter(RETRIEVERS)))
    figures.setdefault("compare", list(RETRIEVERS)[:2] * (2 if len(RETRIEVERS) == 1 else 1))
    check_names(
        [figures["corpus"]],
        CHUNK_LEVEL_CORPORA,
        "config['figures']['corpus']",
        "chunk-level corpus",
    )
    check_names([figures["chunker"]], CHUNKERS, "config['figures']['chunker']", "chunker")
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


def _question_ids(corpus, where):
    path = CORPORA[corpus]["questions"]
    try:
        return {question.question_id for question in parse_questions(read_yaml(path), path)}
    except FileNotFoundError:
        raise ConfigError(f"{where}: the questions file {path} of corpus {corpus!r} does not exist") from None
    except (LabelError, ValueError) as error:
        raise ConfigError(f"{where}: {error}") from None


def _grounding():
    """The canonical grounding section, its names and question ids checked; None when absent."""
    if "grounding" not in config:
        return None
    where = "config['grounding']"
    grounding = canonical_grounding(config["grounding"], where)
    # The cases name labelled questions: only span-labelled corpora have them.
    # Issue 16: without such a corpus the experiment is left out with a warning.
    needed = [case["question"] for case in grounding["cases"]] + [grounding["swap"]["question"]]
    grounding["corpus"], _warning = grounding_corpus(
        grounding.get("corpus"),
        SPAN_CORPORA,
        config["corpora"],
        needed,
        lambda corpus: _question_ids(corpus, f"{where}['corpus']"),
    )
    if _warning:
        print(f"WARNING: {_warning}", file=sys.stderr)
        return None
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
        raise ConfigError(f"{where}['k']: k = {grounding['k']} is deeper than evaluation.depth = {depth}")
    known = _question_ids(grounding["corpus"], f"{where}['corpus']")
    questions = [
        (f"{where}['cases'][{case['name']!r}]['question']", case["question"]) for case in grounding["cases"]
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
        RESULTS + "/grounding.csv",
        RESULTS + "/grounding_cases.csv",
        RESULTS + "/grounding_swap.csv",
        RESULTS + "/figures/grounding.png",
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
    corpus, chunker, retriever = (GROUNDING[key] for key in ("corpus", "chunker", "retriever"))
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
    _warning = ivf_tradeoff_warning(settings.get("corpus"), SPAN_CORPORA, config["corpora"])
    if _warning:  # issue 16: left out when its corpus is off
        print(f"WARNING: {_warning}", file=sys.stderr)
        return None
    settings.setdefault("corpus", next(iter(SPAN_CORPORA), None))
    settings = canonical_settings(IVF_TRADEOFF_PARAMETERS, settings, where)
    check_names([settings["corpus"]], SPAN_CORPORA, f"{where}['corpus']", "enabled span-labelled corpus")
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
        results.append(RESULTS + "/ivf_tradeoff.csv")
    if IVF_SYNTHETIC:
        results.append(RESULTS + "/ivf_synthetic.csv")
    if IVF_TRADEOFF and IVF_SYNTHETIC:
        results.append(RESULTS + "/figures/ivf_tradeoff.png")
    return results


def _answers():
    """The answers section in canonical form, or None when the config has none (no answer jobs)."""
    entry = config.get("answers")
    if entry is None or not SPAN_CORPORA:  # answers are judged against evidence spans
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
        (corpus, chunker, retriever) for corpus in SPAN_CORPORA for chunker, retriever in ANSWERS["pairs"]
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
    return [f"work/answers/{corpus}/{chunker}/{retriever}.parquet" for corpus in SPAN_CORPORA]


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
    return [pattern.format(corpus=corpus, chunker=chunker, retriever=retriever) for corpus in SPAN_CORPORA]


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
            filters[name] = parse_filter(entry, f"config['filters'][{name!r}]").to_config()
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
                raise ConfigError(f"config[{section!r}][{key!r}]: k = {k} is deeper than depth = {depth}")
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
    results = [RESULTS + "/provenance.csv"]
    # The cohorts and the funnel ablation read the chunk-level metrics; the
    # filter and diversity ablations read chunk qrels from evidence spans.
    if CHUNK_LEVEL_CORPORA:
        results += [
            RESULTS + "/metrics_by_document.csv",
            RESULTS + "/weakest_cohorts.csv",
            RESULTS + "/figures/cohorts.png",
        ]
    if FILTER_ABLATION and SPAN_CORPORA:
        results.append(RESULTS + "/filter_ablation.csv")
    if DIVERSITY_ABLATION and SPAN_CORPORA:
        results.append(RESULTS + "/diversity_ablation.csv")
    if FUNNEL_RETRIEVERS and "funnel_ablation" in config and CHUNK_LEVEL_CORPORA:
        results.append(RESULTS + "/funnel_ablation.csv")
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
        for corpus in SPAN_CORPORA
        for retriever in sorted(FILTER_ABLATION["retrievers"])
        for filter_name in sorted(FILTER_ABLATION["filters"])
    ]
