"""Checking and canonicalizing the pipeline's configuration: the plan and the order of its checks.

The JSON schema catches misspelled keys and wrong types; the checks add
what a schema cannot say well (which parameters belong to which kind, that an
overlap is smaller than its window, that a fusion names existing retrievers)
and turn every grid entry into a canonical form with its defaults filled in.
Rules compare parameters in that canonical form, so reordering or restating a
default in ``config.yaml`` never re-runs anything.

Each stage's checks sit beside that stage (``rag/<stage>/config_checks.py``:
corpus, retrieval, evaluation, answering, grounding); this module reads the
YAML, validates the schema, runs those checks in order, checks what crosses
stages (an experiment naming a corpus, a chunker and a retriever) and builds
the :class:`Plan`.
"""

from __future__ import annotations

import copy
import functools
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath

import jsonschema
import yaml

from rag.answering.config_checks import (
    CLOSED_BOOK,
    LLM_ROLE,
    canonical_answers,
    canonical_generators,
    port_problem,
    prune_unavailable_generators,
    role_of,
)
from rag.chunking import ChunkingError, spec_from_config
from rag.corpus.config_checks import (
    BEIR_COMPONENT_DEPTH,
    BEIR_DEFAULTS,
    check_corpus_entry,
    corpus_level,
    corpus_problems,
)
from rag.corpus.folders import folder_files, skipped_setting
from rag.corpus.source_kinds import FOLDER_SOURCES, SOURCES
from rag.evaluation.config_checks import (
    IVF_TRADEOFF_PARAMETERS,
    canonical_ivf_synthetic,
    canonical_settings,
    check_ablations,
)
from rag.formats.files import MERGE_TAG, UniqueKeyLoader, read_unique_yaml  # noqa: F401
from rag.grounding.cases import swap_values
from rag.grounding.config_checks import canonical_grounding
from rag.kinds import (
    CHUNKER_KINDS,
    RETRIEVER_KINDS,
    ConfigError,
    canonical_entry,
    check_names,
    kinds_with,
    model_kinds,
)
from rag.kinds import defaults as kind_defaults
from rag.labels import LabelError, parse_questions
from rag.pipeline.experiments import (
    figures_corpus,
    grounding_corpus,
    ivf_tradeoff_warning,
    unlabelled_corpora,
)
from rag.retrieval.config_checks import (
    RETRIEVER_PARAMETERS,
    canonical_filters,
    check_dense_retriever,
    check_distinct_components,
    check_funnels,
    check_ivf_entry,
    check_learned,
    check_optional_entries,
    check_optional_packages,
    check_retriever_graph,
    check_runs_on,
    chunkers_of,
    prune_unavailable,
)


def schema_errors(config: Mapping, schema: Mapping, fill_defaults: bool = False) -> list[str]:
    """Every schema violation as one line that starts with the key path.

    With ``fill_defaults`` the same pass fills in the schema's ``default``
    values, as Snakemake's ``validate`` does.
    """
    validator = (_default_filling_validator if fill_defaults else jsonschema.Draft202012Validator)(schema)
    messages = []
    for error in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        path = "config" + "".join(
            f"[{part!r}]" if isinstance(part, str) else f"[{part}]" for part in error.absolute_path
        )
        if error.validator == "additionalProperties":
            allowed = sorted(error.schema.get("properties", {}))
            extra = sorted(set(error.instance) - set(allowed))
            for key in extra:
                hint = f"; allowed keys: {', '.join(allowed)}" if allowed else ""
                messages.append(f"{path}[{key!r}]: unknown key {key!r}{hint}")
        else:
            messages.append(f"{path}: {error.message}")
    return messages


# Kind -> parameter -> default (None for required), read from the table of kinds.
CHUNKER_PARAMETERS: dict[str, dict[str, object]] = kind_defaults(CHUNKER_KINDS)


# --------------------------------------------------------------------------
# The plan: the whole configuration checked and canonicalized in one pass
# --------------------------------------------------------------------------

# Names become parts of file names and wildcard values.
MAX_NAME_LENGTH = 100


# The loader that refuses a key given twice lives with the other file readers (rag ask reads with it too).
_UniqueKeyLoader = UniqueKeyLoader


def check_duplicate_keys(paths: Iterable[str | Path]) -> None:
    """Re-read config files with a loader that refuses duplicate keys.

    Snakemake loads ``config.yaml`` itself, with a loader that lets a later
    key override an earlier one, so the duplicate can only be found by
    reading the file again.
    """
    for path in paths:
        path = Path(path)
        if path.suffix.lower() not in (".yaml", ".yml") or not path.is_file():
            continue
        loader = _UniqueKeyLoader(path.read_text(encoding="utf-8"))
        loader.path = str(path)
        try:
            loader.get_single_data()
        except yaml.YAMLError as error:
            raise ConfigError(f"{path}: {' '.join(str(error).split())}") from None
        finally:
            loader.dispose()


def _default_filling_validator(schema: Mapping) -> jsonschema.protocols.Validator:
    base = jsonschema.Draft202012Validator
    check_properties = base.VALIDATORS["properties"]

    def properties_with_defaults(validator, properties, instance, schema_part):
        if isinstance(instance, dict):
            for key, subschema in properties.items():
                if isinstance(subschema, dict) and "default" in subschema:
                    instance.setdefault(key, copy.deepcopy(subschema["default"]))
        yield from check_properties(validator, properties, instance, schema_part)

    return jsonschema.validators.extend(base, {"properties": properties_with_defaults})(schema)


@dataclass
class Plan:
    """The configuration as the workflow uses it: canonical entries in name order and what follows from them.

    Built once by :func:`build_plan` before any job runs; every field is
    already checked, so rules and scripts receive values they need not check
    again.
    """

    config: dict
    chunkers: dict[str, dict]
    retrievers: dict[str, dict]
    corpora: dict[str, dict]
    depth: int
    ks: list[int]
    levels: dict[str, str] = field(default_factory=dict)
    retriever_chunkers: dict[str, list[str]] = field(default_factory=dict)
    figures: dict = field(default_factory=dict)
    grounding: dict | None = None
    ivf_tradeoff: dict | None = None
    ivf_synthetic: dict | None = None
    answers: dict | None = None
    generators: dict[str, dict] = field(default_factory=dict)
    filters: dict[str, dict] = field(default_factory=dict)
    # Who the models answer for: each caller's view, also in ``filters`` under its name.
    callers: dict[str, dict] = field(default_factory=dict)
    # The caller each answering path answers for: answers, llm, grounding.
    answer_callers: dict[str, str] = field(default_factory=dict)
    # The revocation experiment (rag.ask.revocation), or None.
    revocation: dict | None = None
    cohorts: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # The folder of the result tables and figures (config key ``results``), so
    # an experiment of one's own leaves the committed tables alone.
    results_folder: str = "results"
    # Tables an ablation folder reuses from the default results folder (their
    # settings are those of config.yaml's): group of TABLE_GROUPS -> that folder.
    shared_tables: dict[str, str] = field(default_factory=dict)

    # Which corpora are evaluated how. A corpus without questions is
    # unlabelled: parsed, chunked and indexed, never evaluated.
    @property
    def unlabelled_corpora(self) -> list[str]:
        return unlabelled_corpora(self.corpora)

    @property
    def labelled_corpora(self) -> list[str]:
        return [name for name in self.corpora if name not in self.unlabelled_corpora]

    @property
    def span_corpora(self) -> list[str]:
        return [name for name in self.labelled_corpora if self.corpora[name]["source"] != "beir"]

    @property
    def chunk_level_corpora(self) -> list[str]:
        return [name for name in self.labelled_corpora if self.levels[name] == "chunk"]

    @property
    def paged_corpora(self) -> list[str]:
        """The chunk-level corpora whose source has pages (the table of sources' ``paged``)."""
        return [name for name in self.chunk_level_corpora if SOURCES[self.corpora[name]["source"]].paged]

    @property
    def document_level_corpora(self) -> list[str]:
        return [name for name in self.labelled_corpora if self.levels[name] == "document"]

    def corpora_of_source(self, *sources: str) -> list[str]:
        return [name for name, entry in self.corpora.items() if entry["source"] in sources]

    @property
    def document_ks(self) -> list[int]:
        """BEIR reports nDCG@10 and recall@100; document-level tables add them to evaluation.ks."""
        return sorted(set(self.ks) | {10, 100})

    def ranking_depth(self, corpus: str) -> int:
        """Chunks ranked per question: the corpus's own depth, or evaluation.depth."""
        return int(self.corpora[corpus].get("depth", self.depth))

    def component_depth(self, corpus: str) -> int:
        """Chunks a fusion reads of each component per question: never fewer than the ranking depth.

        The corpus's own ``component_depth``, else evaluation.component_depth,
        else :data:`rag.corpus.config_checks.BEIR_COMPONENT_DEPTH` for a BEIR
        corpus (the depth peers fuse at) and the ranking depth for any other. A depth beyond the
        chunk set is the whole chunk set: a ranking holds at most every chunk.
        """
        entry, evaluation = self.corpora[corpus], self.config.get("evaluation", {})
        default = BEIR_COMPONENT_DEPTH if entry["source"] == "beir" else 0
        asked = entry.get("component_depth", evaluation.get("component_depth", default))
        return max(int(asked), self.ranking_depth(corpus))

    def holdout(self, corpus: str) -> float:
        """The share of a corpus's labelled questions no choice is made on (rag.evaluation.holdout)."""
        evaluation = self.config.get("evaluation", {})
        return float(self.corpora[corpus].get("holdout", evaluation.get("holdout", 0.0)))

    @property
    def holdouts(self) -> dict[str, float]:
        """Each labelled corpus's holdout share, for the jobs that choose or report."""
        return {corpus: self.holdout(corpus) for corpus in self.labelled_corpora}

    def reads_deeper(self, corpus: str, retriever: str) -> bool:
        """Whether a fusion reads this component from a ranking of its own, ranked deeper.

        Only components ranked straight from the chunks (rules rank and
        rank_embedder) are ranked again deeper, when the corpus's component
        depth exceeds its ranking depth; a fused, approximate or funnel
        component is read at the ranking depth. The workflow names the two
        files (COMPONENT_RANKING, RANKING).
        """
        deep = self.component_depth(corpus) > self.ranking_depth(corpus)
        return deep and self.rule(retriever) in ("rank", "rank_embedder")

    def role(self, retriever: str) -> str:
        return RETRIEVER_KINDS[self.retrievers[retriever]["kind"]].role

    def retrievers_of(self, *roles: str) -> list[str]:
        """The retrievers whose kind has one of these roles (see :class:`rag.kinds.Kind`)."""
        return [name for name in self.retrievers if self.role(name) in roles]

    def retrievers_ranked_by(self, *rules: str) -> list[str]:
        """The retrievers whose rankings these workflow rules make (each kind's ``rule``, rag/kinds.py)."""
        return [name for name in self.retrievers if self.rule(name) in rules]

    def rule(self, retriever: str) -> str | None:
        """The workflow rule that makes a retriever's rankings, as its kind names it (None: no rankings)."""
        return RETRIEVER_KINDS[self.retrievers[retriever]["kind"]].rule

    def ranked(self, retriever: str) -> bool:
        """Whether a retriever has rankings of its own (a rerank-only kind has none)."""
        return self.rule(retriever) is not None

    def grid(self, corpora: Iterable[str] | None = None) -> list[tuple[str, str, str]]:
        """Every (corpus, chunker, retriever) the configuration asks for (labelled corpora by default)."""
        return [
            (corpus, chunker, retriever)
            for corpus in (self.labelled_corpora if corpora is None else corpora)
            for retriever in self.retrievers
            if self.ranked(retriever)
            for chunker in self.retriever_chunkers[retriever]
        ]

    @property
    def baseline(self) -> str:
        """evaluation.baseline, what significance tests against: default bm25, else the first by name."""
        name = self.config["evaluation"].get("baseline")
        if name is not None:
            return name
        return "bm25" if "bm25" in self.retrievers else next(iter(self.retrievers))

    @property
    def prompt_budget(self) -> int:
        """evaluation.prompt_budget: the words of retrieved text results/README.md chooses k for."""
        from rag.evaluation.recommendation import DEFAULT_PROMPT_BUDGET

        return int(self.config["evaluation"].get("prompt_budget", DEFAULT_PROMPT_BUDGET))

    def table(self, name: str) -> str:
        """Where the result file ``name`` (relative to a results folder) is written and read.

        In this plan's results folder, unless its group is shared: an ablation
        sent to a folder of its own reads a table whose settings equal those
        of config.yaml's default folder from that folder, so it is never
        computed twice (:func:`shared_table_groups`).
        """
        for group, folder in self.shared_tables.items():
            if name in TABLE_GROUPS[group]:
                return f"{folder}/{name}"
        return f"{self.results_folder}/{name}"

    def table_fingerprints(self) -> dict[str, str]:
        """Per group of TABLE_GROUPS, everything its tables are made from, as canonical JSON.

        Two plans whose fingerprints of a group are equal make the same tables
        of that group (same settings, same named entries, same corpora), so an
        ablation folder can reuse them.
        """

        def retrievers(names: Iterable[str]) -> dict:
            """The entries of these retrievers and of every retriever they read, at any depth."""
            used: dict = {}
            waiting = [name for name in names if name in self.retrievers]
            while waiting:
                name = waiting.pop()
                if name in used:
                    continue
                used[name] = entry = self.retrievers[name]
                read = [entry.get(key) for key in ("base", "first", "rerank")] + list(
                    entry.get("components") or []
                )
                waiting += [other for other in read if isinstance(other, str) and other in self.retrievers]
            return dict(sorted(used.items()))

        def chunkers(names: Iterable[str]) -> dict:
            return {name: self.chunkers[name] for name in names if name in self.chunkers}

        def corpora(names: Iterable[str]) -> dict:
            return {name: self.corpus_settings(name) for name in names if name in self.corpora}

        common = {"evaluation": self.config.get("evaluation"), "holdouts": self.holdouts}
        found: dict[str, object] = {"corpus_statistics": {"corpora": corpora(self.corpora)}}
        found["ivf_synthetic"] = {"settings": self.ivf_synthetic}
        if self.ivf_tradeoff:
            tradeoff = self.ivf_tradeoff
            found["ivf_tradeoff"] = {
                "settings": tradeoff,
                "chunkers": chunkers([tradeoff["chunker"]]),
                "retrievers": retrievers([tradeoff["retriever"]]),
                "corpora": corpora([tradeoff["corpus"]]),
                **common,
            }
        found["ivf_figure"] = {key: found.get(key) for key in ("ivf_tradeoff", "ivf_synthetic")}
        if self.grounding:
            grounding = self.grounding
            found["grounding"] = {
                "settings": grounding,
                "chunkers": chunkers([grounding["chunker"]]),
                "retrievers": retrievers([grounding["retriever"]]),
                "corpora": corpora([grounding["corpus"]]),
                "generators": {name: self.generators.get(name) for name in grounding["generators"]},
                **common,
            }
        if self.answers is not None:
            answers = self.answers
            pairs = [*answers["pairs"], *answers["llm"]["settings"]]
            pairs += [[setup["chunker"], setup["retriever"]] for setup in answers["llm"].get("setups", [])]
            pairs += [
                [answers[key]["chunker"], answers[key]["retriever"]] for key in ("abstention", "summaries")
            ]
            found["answers"] = {
                "settings": answers,
                "chunkers": chunkers(chunker for chunker, _ in pairs),
                "retrievers": retrievers(retriever for _, retriever in pairs),
                "corpora": corpora(self.span_corpora),
                **common,
            }
        for section in ("filter_ablation", "diversity_ablation"):
            settings = self.config.get(section)
            if settings:
                found[section] = {
                    "settings": settings,
                    "filters": self.filters if section == "filter_ablation" else None,
                    "chunkers": chunkers([settings["chunker"]]),
                    "retrievers": retrievers(settings["retrievers"]),
                    "corpora": corpora(self.span_corpora),
                    **common,
                }
        from rag.models.response_cache import canonical_json

        return {group: canonical_json(value) for group, value in found.items()}

    def trec_run_files(self, corpora: Iterable[str]) -> list[str]:
        """Every ranking of these corpora as a TREC run file (rag.evaluation.trec)."""
        return [f"{self.results_folder}/runs/{c}/{ch}/{r}.run.gz" for c, ch, r in self.grid(corpora)]

    def learned_grid(self) -> list[tuple[str, str, str]]:
        """(corpus, chunker, retriever) of every learned fusion's ranking (each has a table of weights)."""
        learned = set(self.retrievers_of("learned"))
        return [(c, ch, r) for c, ch, r in self.grid() if r in learned]

    @property
    def evaluation_name(self) -> str:
        """The name of the folder the per-question values of this results folder live in.

        One folder per results folder: an ablation sent to a folder of its own
        (``--config results=...``) keeps its own values, so running it never
        re-runs the jobs of the committed ``results/`` (README.md, "Add an ablation").
        """
        return "_".join(part for part in PurePosixPath(self.results_folder).parts if part != "/") or "root"

    def comparison_results(self) -> list[str]:
        """Intervals, significance, summary, README and TREC runs: every labelled corpus, at either level."""
        out, results = self.results_folder, self.trec_run_files(self.document_level_corpora)
        results += self.trec_run_files(self.chunk_level_corpora)
        if self.labelled_corpora:
            results += [f"{out}/metrics_ci.csv", f"{out}/significance.csv", f"{out}/summary.csv"]
            results += [f"{out}/README.md", f"{out}/README.html", f"{out}/report_metadata.yaml"]
            results += [f"{out}/learned_fusion.csv"] if self.retrievers_of("learned") else []
        return results

    def index_grid(self) -> list[tuple[str, str, str]]:
        """(corpus, chunker, retriever) of every fitted or encoded index, unlabelled corpora included."""
        plain = [name for name in self.retrievers if RETRIEVER_KINDS[self.retrievers[name]["kind"]].plain]
        return [triple for triple in self.grid(list(self.corpora)) if triple[2] in plain]

    def index_benchmark(self, corpus: str, chunker: str, retriever: str) -> str:
        """The benchmark file of the job that built an index (rule rank or rank_embedder)."""
        rule = self.rule(retriever)
        return f"benchmarks/logs/{rule}/{corpus}/{chunker}/{retriever}.tsv"

    def corpus_settings(self, corpus: str, evaluation_keys: Iterable[str] = ()) -> dict:
        """A corpus entry as its parse job receives it: defaults filled in, evaluation-only keys left out."""
        entry = self.corpora[corpus]
        if entry["source"] == "beir":
            entry = {**BEIR_DEFAULTS, **entry}
        if entry["source"] in FOLDER_SOURCES:  # what the parser skips, its source's default filled in
            entry = {**entry, "skip": list(skipped_setting(entry, f"config['corpora'][{corpus!r}]"))}
        return {key: value for key, value in entry.items() if key not in set(evaluation_keys)}

    def corpus_files(self, corpus: str) -> list[str]:
        """The document files of a folder corpus, in name order: removing a document changes this list."""
        entry = self.corpora[corpus]
        return [str(path) for path in folder_files(entry["documents"], entry["source"])]

    def rerank_entries(self, funnel: str) -> dict[str, dict]:
        """The entries a funnel's reranker is built from: itself, or a fusion and its components."""
        rerank = self.retrievers[funnel]["rerank"]
        if rerank is None:
            return {}
        return {
            name: self.retrievers[name] for name in [rerank, *self.retrievers[rerank].get("components", [])]
        }

    def answer_pairs(self) -> list[tuple[str, str, str]]:
        """Every (corpus, chunker, retriever) whose questions are answered."""
        if self.answers is None:
            return []
        return [
            (corpus, chunker, retriever)
            for corpus in self.span_corpora
            for chunker, retriever in self.answers["pairs"]
        ]

    def llm_answer_settings(self, questions: str = "development") -> list[dict[str, str]]:
        """Every llm generator in every setting of answers.llm: the names of one answer file each."""
        if self.answers is None:
            return []
        llm = self.answers["llm"]
        product = [(generator, c, r) for generator in llm["generators"] for c, r in llm["settings"]]
        extra = [
            (generator, setup["chunker"], setup["retriever"])
            for setup in llm.get("setups", [])
            if questions == "development" or setup["heldout"]
            for generator in setup["generators"]
        ]
        return [
            {"corpus": corpus, "questions": questions, "generator": generator, "chunker": c, "retriever": r}
            for corpus in self.span_corpora
            for generator, c, r in [*product, *extra]
        ]

    def llm_k(self, chunker: str, retriever: str) -> int:
        """The k an llm answers from for one (chunker, retriever): its setup's, else answers.k."""
        for setup in (self.answers or {}).get("llm", {}).get("setups", []):
            if (setup["chunker"], setup["retriever"]) == (chunker, retriever):
                return setup["k"]
        return self.answers["generation"]["k"]

    def filter_ablation_grid(self) -> list[tuple[str, str, str]]:
        """(corpus, retriever, filter) of the filter ablation, on its one chunker."""
        section = self.config.get("filter_ablation")
        if not section:
            return []
        return [
            (corpus, retriever, filter_name)
            for corpus in self.span_corpora
            for retriever in sorted(section["retrievers"])
            for filter_name in sorted(section["filters"])
        ]

    def results(self) -> list[str]:
        """Every table and figure the configuration asks for: the input of the default target."""
        config, chunk_level, span = self.config, self.chunk_level_corpora, self.span_corpora
        out = self.results_folder
        results = [
            f"{out}/corpus_statistics.csv",
            f"{out}/questions_by_type.csv",
            f"{out}/chunk_statistics.csv",
            f"{out}/index_statistics.csv",
        ]
        results += [f"{out}/evidence_cuts.csv"] if span else []
        if chunk_level:
            results += [
                f"{out}/metrics.csv",
                f"{out}/figures/recall_at_k.png",
                f"{out}/metrics_by_document.csv",
            ]
            results += [f"{out}/weakest_cohorts.csv", f"{out}/figures/cohorts.png"]
            results += [f"{out}/page_recall.csv"] if self.paged_corpora else []
        if self.document_level_corpora:
            results += [f"{out}/document_metrics.csv", f"{out}/beir_metrics.csv"]
        if self.grounding:
            results += [f"{out}/{name}.csv" for name in ("grounding", "grounding_cases", "grounding_swap")]
            results.append(f"{out}/figures/grounding.png")
        results += [f"{out}/ivf_tradeoff.csv"] if self.ivf_tradeoff else []
        results += [f"{out}/ivf_synthetic.csv"] if self.ivf_synthetic else []
        results += [f"{out}/figures/ivf_tradeoff.png"] if self.ivf_tradeoff and self.ivf_synthetic else []
        results.append(f"{out}/provenance.csv")
        # The filter and diversity ablations read chunk qrels from evidence spans;
        # the funnel ablation reads the chunk-level metrics.
        results += [f"{out}/filter_ablation.csv"] if config.get("filter_ablation") and span else []
        results += [f"{out}/revocation.csv"] if self.revocation is not None else []
        results += [f"{out}/metrics_by_caller.csv"] if self.answer_pairs() else []
        results += [f"{out}/diversity_ablation.csv"] if config.get("diversity_ablation") and span else []
        if self.retrievers_of("funnel") and "funnel_ablation" in config and chunk_level:
            results.append(f"{out}/funnel_ablation.csv")
        if self.answers is not None:
            results += [
                f"{out}/{name}.csv" for name in ("answers", "answers_summary", "abstention", "summaries")
            ]
            results += [
                f"{out}/figures/abstention.png",
                f"{out}/routing.csv",
                f"{out}/routing_metrics.csv",
                f"{out}/reader_thresholds.csv",
            ]
            results += [f"{out}/answers_heldout.csv"] if self.answers["heldout"] is not None else []
            results.append(f"{out}/answers.md")
            results += [f"{out}/llm_answers.csv"] if self.answers["llm"]["generators"] else []
            # The measurements of issue 26: the reader's rules, and the language models' answers judged.
            results += [f"{out}/reader_rules.csv"] if self.answers["heldout"] is not None else []
            if self.answers["llm"]["generators"]:
                names = ("llm_answers_judged", "llm_answers_summary", "llm_closed_book", "citation_check")
                results += [f"{out}/{name}.csv" for name in (*names, "verdicts", "citation_accuracy")]
            if self.judges:
                results.append(f"{out}/judge_calibration.csv")
        # A table an ablation folder shares with the default folder is listed where it is.
        results = [self.table(path.removeprefix(f"{out}/")) for path in results]
        return results + self.comparison_results()

    @property
    def judges(self) -> dict[str, dict]:
        """The ``judge`` entries of config['generators'] calibrated here (rag.measuring.judging)."""
        from rag.measuring.judging import LABELLED_CHUNKER, LABELLED_CORPUS

        if LABELLED_CORPUS not in self.corpora or LABELLED_CHUNKER not in self.chunkers:
            return {}
        return {name: entry for name, entry in self.generators.items() if entry["kind"] == "judge"}


def _check_finite(node: object, path: str = "config") -> None:
    """NaN and infinity pass a schema's bounds (every comparison with NaN is false), so refuse them first."""
    if isinstance(node, float) and not math.isfinite(node):
        raise ConfigError(f"{path}: must be a finite number, got {node!r}")
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        _check_finite(value, f"{path}[{key!r}]")


def _check_url_ports(config: Mapping) -> None:
    """Every URL of the config (an llm's base_url, a Wikipedia api) with a port from 1 to 65535."""
    for section, key in (("generators", "base_url"), ("corpora", "api")):
        entries = config.get(section)
        for name, entry in entries.items() if isinstance(entries, dict) else ():
            problem = port_problem(entry.get(key)) if isinstance(entry, dict) else None
            if problem:
                raise ConfigError(f"config[{section!r}][{name!r}][{key!r}]: {problem}")


def _check_name_lengths(config: Mapping) -> None:
    for section in ("corpora", "chunkers", "retrievers", "filters"):
        names = config.get(section)
        for name in names if isinstance(names, dict) else ():
            if isinstance(name, str) and len(name) > MAX_NAME_LENGTH:
                raise ConfigError(
                    f"config[{section!r}][{name[:20]!r}...]: a name of {len(name)} characters; "
                    f"names become file names, so at most {MAX_NAME_LENGTH}"
                )


def _canonical_grid(config: Mapping, pretrained_kinds: tuple[str, ...]) -> tuple[dict, dict]:
    chunkers, retrievers = {}, {}
    for name, entry in config["chunkers"].items():
        where = f"config['chunkers'][{name!r}]"
        chunkers[name] = canonical_entry(CHUNKER_PARAMETERS, entry, where)
        try:
            spec_from_config(chunkers[name])
        except ChunkingError as error:
            raise ConfigError(f"{where}: {error}") from None
    for name, entry in config["retrievers"].items():
        where = f"config['retrievers'][{name!r}]"
        retrievers[name] = canonical_entry(RETRIEVER_PARAMETERS, entry, where)
        if entry.get("chunkers") == []:
            raise ConfigError(
                f"{where}['chunkers']: an empty list runs this retriever on no chunker; list at least "
                "one, or leave the key out to run it on every chunker"
            )
        check_names(entry.get("chunkers", []), config["chunkers"], f"{where}['chunkers']", "chunker")
        if name in (entry.get("components") or []):
            raise ConfigError(f"{where}['components']: a retriever cannot fuse itself")
        check_optional_packages(name, retrievers[name], pretrained_kinds)
    check_retriever_graph(retrievers)
    dense = kinds_with(dense=True)
    for name, entry in retrievers.items():
        if RETRIEVER_KINDS[entry["kind"]].role == "approximate":
            check_ivf_entry(name, entry, retrievers, dense)
    return dict(sorted(chunkers.items())), dict(sorted(retrievers.items()))


def _check_corpora(plan: Plan, root: Path, questions_schema: Mapping | None) -> None:
    if not plan.corpora:
        raise ConfigError("config['corpora']: every corpus is disabled")
    for name, entry in plan.corpora.items():
        check_corpus_entry(entry, root, f"config['corpora'][{name!r}]")
    # Every question file against its schema, and every document of a folder corpus with
    # every evidence span located in it: every problem reported at once.
    if questions_schema is not None:
        problems, warnings = corpus_problems(
            plan.corpora, root, questions_schema, lambda path: read_unique_yaml(root / path)
        )
        plan.warnings += warnings
        if problems:
            raise ConfigError(
                f"{len(problems)} problem(s) in the question files and documents:\n  " + "\n  ".join(problems)
            )
    for name in plan.labelled_corpora:
        plan.levels[name] = corpus_level(plan.corpora[name])
    for k in plan.ks:
        if k > plan.depth:
            raise ConfigError(f"config['evaluation']['ks']: k = {k} is deeper than depth = {plan.depth}")
    for name in plan.labelled_corpora:
        key = (
            f"config['corpora'][{name!r}]['depth']"
            if "depth" in plan.corpora[name]
            else "config['evaluation']['depth']"
        )
        deepest = max(plan.document_ks if plan.levels[name] == "document" else plan.ks)
        if deepest > plan.ranking_depth(name):
            raise ConfigError(
                f"{key}: corpus {name!r} is evaluated at k = {deepest} ({plan.levels[name]} level) "
                f"but ranks only {plan.ranking_depth(name)} chunks"
            )


def _known_corpus(plan: Plan, name: str | None, where: str) -> None:
    """A corpus an experiment names must be in the config; only a disabled or unlabelled one degrades."""
    if name is not None:
        check_names([name], plan.config["corpora"], where, "corpus")


def _figures(plan: Plan) -> dict:
    """What the figures draw; they show chunk-level metrics, so only chunk-level corpora qualify."""
    figures = dict(plan.config.get("figures", {}))
    corpora, retrievers = plan.chunk_level_corpora, list(plan.retrievers)
    if not corpora:
        return figures
    # A named corpus that is off gives way to the first chunk-level one, with a
    # warning; a name that is nowhere in the config is a mistake.
    _known_corpus(plan, figures.get("corpus"), "config['figures']['corpus']")
    figures["corpus"], warning = figures_corpus(figures.get("corpus"), corpora, plan.config["corpora"])
    plan.warnings += [warning] if warning else []
    figures.setdefault("chunker", next(iter(plan.chunkers)))
    # Defaults among the retrievers ranked on the figures' chunker (an entry may run on other chunkers only).
    drawn = [
        name
        for name in retrievers
        if plan.ranked(name) and figures["chunker"] in plan.retriever_chunkers.get(name, [])
    ] or retrievers
    figures.setdefault("retriever", drawn[0])
    figures.setdefault("compare", drawn[:2] * (2 if len(drawn) == 1 else 1))
    check_names([figures["corpus"]], corpora, "config['figures']['corpus']", "chunk-level corpus")
    check_names([figures["chunker"]], plan.chunkers, "config['figures']['chunker']", "chunker")
    check_names([figures["retriever"], *figures["compare"]], retrievers, "config['figures']", "retriever")
    check_names(figures.get("curves", []), retrievers, "config['figures']['curves']", "retriever")
    return figures


@functools.lru_cache(maxsize=8)
def _cached_question_ids(path: Path, label: str, modified: int, size: int) -> frozenset[str]:
    from rag.formats.files import read_yaml

    return frozenset(question.question_id for question in parse_questions(read_yaml(path), label))


def _question_ids(plan: Plan, root: Path, corpus: str, where: str) -> frozenset[str]:
    path = plan.corpora[corpus]["questions"]
    try:
        status = (root / path).stat()
        return _cached_question_ids(root / path, path, status.st_mtime_ns, status.st_size)
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(
            f"{where}: cannot read the questions file {path} of corpus {corpus!r}: {error}"
        ) from None
    except (LabelError, ValueError, yaml.YAMLError) as error:
        raise ConfigError(f"{where}: {str(error).splitlines()[0]}") from None


def _grounding(plan: Plan, root: Path) -> dict | None:
    """The canonical grounding section, its names and question ids checked; None when absent."""
    if "grounding" not in plan.config:
        return None
    where = "config['grounding']"
    grounding = canonical_grounding(plan.config["grounding"], where)
    # The cases name labelled questions: only span-labelled corpora have them.
    # Without such a corpus the experiment is left out with a warning.
    needed = [case["question"] for case in grounding["cases"]] + [grounding["swap"]["question"]]
    _known_corpus(plan, grounding.get("corpus"), f"{where}['corpus']")
    grounding["corpus"], warning = grounding_corpus(
        grounding.get("corpus"),
        plan.span_corpora,
        plan.config["corpora"],
        needed,
        lambda corpus: _question_ids(plan, root, corpus, f"{where}['corpus']"),
    )
    if warning:
        plan.warnings.append(warning)
        return None
    check_names([grounding["chunker"]], plan.chunkers, f"{where}['chunker']", "chunker")
    ranked = plan.retrievers_of("fitted", "pretrained", "fused")
    check_names([grounding["retriever"]], ranked, f"{where}['retriever']", "retriever")
    check_runs_on(plan.retriever_chunkers, grounding["retriever"], grounding["chunker"], where)
    if grounding["k"] > plan.depth:
        raise ConfigError(
            f"{where}['k']: k = {grounding['k']} is deeper than evaluation.depth = {plan.depth}"
        )
    known = _question_ids(plan, root, grounding["corpus"], f"{where}['corpus']")
    questions = [
        (f"{where}['cases'][{case['name']!r}]['question']", case["question"]) for case in grounding["cases"]
    ]
    questions.append((f"{where}['swap']['question']", grounding["swap"]["question"]))
    for key, question_id in questions:
        if question_id not in known:
            path = plan.corpora[grounding["corpus"]]["questions"]
            raise ConfigError(f"{key}: unknown question {question_id!r} in {path}")
    swap = grounding["swap"]
    try:
        swap_values(swap["correct"], *swap["values"])
    except ValueError as error:
        raise ConfigError(f"{where}['swap']: {error}") from None
    check_names(grounding["generators"], plan.generators, f"{where}['generators']", "generator")
    for name in grounding["generators"]:
        if role_of(plan.generators[name]) != LLM_ROLE:
            raise ConfigError(
                f"{where}['generators']: {name!r} is a generator of kind {plan.generators[name]['kind']!r}; "
                "the grounding cases need an llm generator (scored by its token log-probabilities)"
            )
    return grounding


def _ivf_synthetic(plan: Plan) -> dict | None:
    """The synthetic half of the approximate-search experiment, or None when not configured."""
    if "ivf_synthetic" not in plan.config:
        return None
    return canonical_ivf_synthetic(plan.config["ivf_synthetic"])


def _ivf_tradeoff(plan: Plan) -> dict | None:
    """The collection half of the approximate-search experiment, or None when not configured."""
    if "ivf_tradeoff" not in plan.config:
        return None
    where = "config['ivf_tradeoff']"
    settings = dict(plan.config["ivf_tradeoff"])
    _known_corpus(plan, settings.get("corpus"), f"{where}['corpus']")
    warning = ivf_tradeoff_warning(settings.get("corpus"), plan.span_corpora, plan.config["corpora"])
    if warning:  # left out when its corpus is off
        plan.warnings.append(warning)
        return None
    settings.setdefault("corpus", next(iter(plan.span_corpora), None))
    settings = canonical_settings(IVF_TRADEOFF_PARAMETERS, settings, where)
    check_names([settings["corpus"]], plan.span_corpora, f"{where}['corpus']", "enabled span-labelled corpus")
    check_names([settings["chunker"]], plan.chunkers, f"{where}['chunker']", "chunker")
    check_dense_retriever(
        settings["retriever"], plan.retrievers, kinds_with(dense=True), f"{where}['retriever']"
    )
    check_runs_on(plan.retriever_chunkers, settings["retriever"], settings["chunker"], f"{where}['chunker']")
    return settings


def _answers(plan: Plan, root: Path = Path(".")) -> dict | None:
    """The answers section in canonical form, or None when the config has none (no answer jobs)."""
    entry = plan.config.get("answers")
    if entry is None or not plan.span_corpora:  # answers are judged against evidence spans
        return None
    pairs = [(chunker, retriever) for _, chunker, retriever in plan.grid()]
    kinds = {name: retriever["kind"] for name, retriever in plan.retrievers.items()}
    answers = canonical_answers(entry, pairs, kinds, plan.depth, generators=plan.generators)
    heldout = answers["heldout"]
    if heldout is not None:
        where = "config['answers']['heldout']"
        copied = heldout["corpus"] not in plan.config["corpora"] and not any(
            (root / path).is_file() for path in heldout["questions"]
        )
        if copied:
            # A section copied from the bundled config.yaml, naming a corpus and
            # question files this project does not have: a side experiment left out.
            plan.warnings.append(
                f"{where}: left out, it names corpus {heldout['corpus']!r} and question files "
                f"this config does not have (copied from the bundled config.yaml?)"
            )
            return {**answers, "heldout": None}
        _known_corpus(plan, heldout["corpus"], f"{where}['corpus']")
        if heldout["corpus"] not in plan.labelled_corpora:
            # Like the other side experiments, left out when its corpus is off or unlabelled.
            state = "is disabled" if heldout["corpus"] not in plan.corpora else "has no questions"
            needs = f"it needs the labelled markdown corpus {heldout['corpus']!r}"
            plan.warnings.append(f"{where}: left out, {needs}, which {state}")
            return {**answers, "heldout": None}
        if plan.corpora[heldout["corpus"]]["source"] != "markdown":
            raise ConfigError(f"{where}['corpus']: {heldout['corpus']!r} is not a markdown corpus")
        names = [Path(path).stem for path in heldout["questions"]]
        if len(set(names)) < len(names) or "development" in names:
            raise ConfigError(
                f"{where}['questions']: each file is reported under its name, so the names must "
                f"differ from each other and from 'development', got {names}"
            )
        _check_heldout_apart(plan, heldout, root, where)
        _check_heldout_reader(plan, answers, heldout)
    return answers


def _check_heldout_apart(plan: Plan, heldout: Mapping, root: Path, where: str) -> None:
    """A held-out file is never a corpus's development question file (by whatever path it is named)."""
    development = {
        _resolved(root / entry["questions"]): name
        for name, entry in plan.corpora.items()
        if isinstance(entry.get("questions"), str)
    }
    for path in heldout["questions"]:
        corpus = development.get(_resolved(root / path))
        if corpus is not None:
            raise ConfigError(
                f"{where}['questions']: {path} is the development question file of corpus {corpus!r}; "
                "held-out questions must be questions the reader was never tuned on"
            )


def _check_heldout_reader(plan: Plan, answers: Mapping, heldout: Mapping) -> None:
    """The held-out check freezes the reader at the threshold cross-validated on one answered setting."""
    from rag.answering.reader import CHOSEN_THRESHOLD_RETRIEVERS, CHOSEN_THRESHOLD_ROWS

    if not answers["reader"]["names"]:
        raise ConfigError(
            "config['answers']['generators']: the held-out check (answers.heldout) freezes the reader at "
            "its cross-validated threshold, so list the reader, or remove answers.heldout"
        )
    corpus, chunker = CHOSEN_THRESHOLD_ROWS["corpus"], CHOSEN_THRESHOLD_ROWS["chunker"]
    answered = {(chunker_name, retriever) for chunker_name, retriever in answers["pairs"]}
    pairs = [(chunker, retriever) for retriever in CHOSEN_THRESHOLD_RETRIEVERS]
    if corpus not in plan.span_corpora or not answered & set(pairs):
        wanted = " or ".join(f"{chunker} + {retriever}" for chunker, retriever in pairs)
        raise ConfigError(
            f"config['answers']['heldout']: the held-out check reads the reader's threshold chosen on "
            f"corpus {corpus!r} with {wanted}, which this config does not answer"
        )


def build_plan(
    config: dict,
    schema: Mapping,
    root: str | Path = ".",
    config_files: Iterable[str | Path] = (),
    questions_schema: Mapping | None = None,
    project_root: str | Path | None = None,
    base_config: Mapping | None = None,
) -> Plan:
    """Check and canonicalize the whole configuration; the first mistake is one ConfigError naming its key.

    ``config`` is changed in place as Snakemake's own validation would: the
    schema's defaults are filled in and optional retrievers whose extra is
    missing are pruned (see :func:`rag.retrieval.config_checks.prune_unavailable`;
    the warnings are in ``plan.warnings``). ``root`` is the folder relative paths start from (the
    working directory of the run) and ``config_files`` the YAML files the
    config was read from, re-read to catch a key given twice.
    ``questions_schema`` (workflow/schemas/questions.schema.yaml), when
    given, checks every question file while the plan is built.
    ``project_root`` is the folder of the Snakefile (default ``root``): its
    ``resources/`` and ``docs/`` are inputs no output folder may overlap.
    ``base_config`` (the working folder's config.yaml, as the default run reads
    it) lets a plan whose results folder differs from the base's reuse the
    base folder's tables whose settings are the same (:func:`shared_table_groups`).
    """
    root = Path(root)
    check_duplicate_keys(config_files)
    if not isinstance(config, dict):
        raise ConfigError(f"config: the configuration must be a mapping, got {type(config).__name__}")
    _check_finite(config)
    _check_url_ports(config)
    _check_name_lengths(config)
    problems = schema_errors(config, schema, fill_defaults=True)
    if problems:
        raise ConfigError("invalid config.yaml: " + "; ".join(problems))
    pretrained = model_kinds()
    check_optional_entries(config)
    warnings = prune_unavailable(config, pretrained) + prune_unavailable_generators(config)
    chunkers, retrievers = _canonical_grid(config, pretrained)
    corpora = {name: entry for name, entry in sorted(config["corpora"].items()) if entry.get("enabled", True)}
    plan = Plan(
        config=config,
        chunkers=chunkers,
        retrievers=retrievers,
        corpora=corpora,
        depth=config["evaluation"]["depth"],
        ks=list(config["evaluation"]["ks"]),
        warnings=warnings,
        results_folder=results_folder(config.get("results", "results")),
    )
    check_distinct_components(retrievers)
    for section, names in (("chunkers", chunkers), ("retrievers", retrievers)):
        if CLOSED_BOOK in names:
            raise ConfigError(
                f"config[{section!r}][{CLOSED_BOOK!r}]: the name {CLOSED_BOOK!r} is the closed book "
                "(answers without sources); choose another"
            )
    plan.generators = canonical_generators(config)
    plan.retriever_chunkers = chunkers_of(retrievers, chunkers)
    _check_corpora(plan, root, questions_schema)
    plan.figures = _figures(plan)
    plan.grounding = _grounding(plan, root)
    plan.ivf_tradeoff = _ivf_tradeoff(plan)
    plan.ivf_synthetic = _ivf_synthetic(plan)
    plan.answers = _answers(plan, root)
    check_funnels(retrievers, plan.depth)
    check_learned(retrievers, plan.depth, plan.baseline)
    plan.filters = canonical_filters(config)
    check_ablations(config, chunkers, retrievers, plan.retriever_chunkers, plan.filters, plan.depth, plan.ks)
    _callers(plan)
    plan.revocation = _revocation(plan)
    plan.cohorts = {"k": 5 if 5 in plan.ks else min(plan.ks), "min_questions": 3, **config.get("cohorts", {})}
    if base_config is not None:
        plan.shared_tables = shared_table_groups(plan, base_config, schema, root)
    check_outputs_apart(plan, root, config_files, project_root)
    return plan


# Result files that depend on no grid-wide merge, grouped by what they are made
# from (Plan.table_fingerprints): an ablation folder reuses a group whose
# fingerprint equals the default folder's instead of computing it again.
TABLE_GROUPS: dict[str, tuple[str, ...]] = {
    "corpus_statistics": ("corpus_statistics.csv", "questions_by_type.csv"),
    # The timings (rag.timing.TIMINGS_FOLDER) go with the table or figure of the same job.
    "ivf_synthetic": ("ivf_synthetic.csv", "timings/ivf_synthetic.csv"),
    "ivf_tradeoff": ("ivf_tradeoff.csv",),
    "ivf_figure": ("figures/ivf_tradeoff.png", "timings/ivf_query_time.png"),
    "grounding": ("grounding.csv", "grounding_cases.csv", "grounding_swap.csv", "figures/grounding.png"),
    "answers": (
        "answers.csv",
        "answers_summary.csv",
        "reader_thresholds.csv",
        "abstention.csv",
        "figures/abstention.png",
        "summaries.csv",
        "routing.csv",
        "routing_metrics.csv",
        "answers_heldout.csv",
        "reader_rules.csv",
        "answers.md",
        "llm_answers.csv",
        "llm_answers_judged.csv",
        "llm_answers_summary.csv",
        "llm_closed_book.csv",
        "citation_check.csv",
        "citation_accuracy.csv",
        "verdicts.csv",
    ),
    "filter_ablation": ("filter_ablation.csv",),
    "diversity_ablation": ("diversity_ablation.csv",),
}


def shared_table_groups(plan: Plan, base_config: Mapping, schema: Mapping, root: Path) -> dict[str, str]:
    """The groups of TABLE_GROUPS ``plan`` takes from the base config's results folder, and that folder.

    Only when the two results folders differ and the base plans cleanly; a
    group is shared when its fingerprint is the same in both plans, so every
    table it holds would come out the same. Nothing is shared with a base
    that is itself not valid: the ablation then computes everything.
    """
    try:
        if results_folder(base_config.get("results", "results")) == plan.results_folder:
            return {}
        base = build_plan(copy.deepcopy(dict(base_config)), schema, root)
    except Exception:  # noqa: BLE001 (a base that does not plan shares nothing; its own run reports why)
        return {}
    if base.results_folder == plan.results_folder:
        return {}
    mine, theirs = plan.table_fingerprints(), base.table_fingerprints()
    return {
        group: base.results_folder
        for group in TABLE_GROUPS
        if group in mine and mine[group] == theirs.get(group)
    }


# --------------------------------------------------------------------------
# Callers: who every path to a model answers for (issue 41).
# --------------------------------------------------------------------------


def _callers(plan: Plan) -> None:
    """The callers section, the caller of every answering path, and what each endpoint may receive.

    Each caller's view joins ``plan.filters`` under the caller's name (one
    model: a caller is a filter that always names its tenant and groups), so
    its rankings are the filtered rankings of that name. The answer paths
    (``answers``, ``answers.llm``, ``grounding``) name their caller; without
    one they answer as the public caller (``plan.answer_callers``). Then every llm generator whose
    endpoint is off this machine is checked against the callers it serves.
    """
    from rag.models.may_receive import endpoint_receives_too_much
    from rag.retrieval.filters import PUBLIC_CALLER, FilterError, parse_caller

    callers = {}
    for name, entry in sorted((plan.config.get("callers") or {}).items()):
        where = f"config['callers'][{name!r}]"
        if name in plan.filters:
            raise ConfigError(
                f"{where}: a filter of the same name exists (config['filters'][{name!r}]); a caller's "
                "view is a filter of its name, so choose another name"
            )
        try:
            callers[name] = parse_caller(name, entry, where).view().to_config()
        except FilterError as error:
            raise ConfigError(str(error)) from None
    if PUBLIC_CALLER.name in plan.filters or PUBLIC_CALLER.name in callers:
        raise ConfigError(
            f"config: the name {PUBLIC_CALLER.name!r} is the public caller (who answers when no caller is "
            "named); choose another"
        )
    callers[PUBLIC_CALLER.name] = PUBLIC_CALLER.view().to_config()
    plan.callers = callers
    plan.filters = {**plan.filters, **callers}

    def chosen(value: object, where: str, default: str = PUBLIC_CALLER.name) -> str:
        name = default if value is None else value
        check_names([name], callers, where, "caller")
        return name

    generators_served: list[tuple[str, str, str]] = []  # (generator, caller, where)
    if plan.answers is not None:
        entry = plan.config.get("answers") or {}
        caller = chosen(entry.get("caller"), "config['answers']['caller']")
        llm_caller = chosen(
            (entry.get("llm") or {}).get("caller"), "config['answers']['llm']['caller']", caller
        )
        plan.answer_callers |= {"answers": caller, "llm": llm_caller}
        where = "config['answers']['llm']"
        generators_served += [(name, llm_caller, where) for name in plan.answers["llm"]["generators"]]
    if plan.grounding is not None:
        where = "config['grounding']"
        caller = chosen(plan.config["grounding"].get("caller"), f"{where}['caller']")
        plan.answer_callers["grounding"] = caller
        generators_served += [(name, caller, where) for name in plan.grounding["generators"]]
    # A judge answers as the caller of the answers it judges (the llm answers'), so it receives
    # what that caller reads: checked like a generator (rag.models.gate), naming the caller.
    judge_caller = plan.answer_callers.get("llm", PUBLIC_CALLER.name)
    if plan.judges:
        plan.answer_callers["judge"] = judge_caller
    served = [(name, caller, where, "generator") for name, caller, where in generators_served]
    served += [(name, judge_caller, f"config['generators'][{name!r}]", "judge") for name in plan.judges]
    for generator, caller, where, role in served:
        problem = endpoint_receives_too_much(
            generator, plan.generators[generator], caller, callers[caller], role
        )
        if problem:
            raise ConfigError(f"{where}: {problem}")


def _revocation(plan: Plan) -> dict | None:
    """The revocation section with its corpus checked: a labelled Markdown folder (rag ask's path)."""
    entry = plan.config.get("revocation")
    if entry is None:
        return None
    where = "config['revocation']"
    corpus = entry.get("corpus") or (plan.span_corpora[0] if plan.span_corpora else None)
    if corpus is None:
        plan.warnings.append(f"{where}: no labelled corpus is enabled; the revocation experiment is left out")
        return None
    _known_corpus(plan, corpus, f"{where}['corpus']")
    source = plan.corpora[corpus]
    if source["source"] != "markdown" or "questions" not in source:
        raise ConfigError(f"{where}['corpus']: {corpus!r} must be a Markdown folder with questions")
    groups = list(dict.fromkeys(entry["groups"]))
    if entry["group"] not in groups or len(groups) < 2:
        raise ConfigError(
            f"{where}['group']: {entry['group']!r} must be one of at least two groups {groups}, so that "
            "one group still reads the revoked document"
        )
    if entry["revoke"] == entry["delete"]:
        raise ConfigError(f"{where}: 'revoke' and 'delete' name the same document {entry['revoke']!r}")
    if entry.get("copied") in (entry["revoke"], entry["delete"]):
        raise ConfigError(f"{where}['copied']: {entry['copied']!r} is already 'revoke' or 'delete'")
    return {**entry, "groups": groups, "corpus": corpus}


# --------------------------------------------------------------------------
# Checks that keep every mistake before any job (issue 27) and belong to no
# one stage; each stage's own checks are in its config_checks module.
# --------------------------------------------------------------------------


def results_folder(value: object) -> str:
    """``results:`` as a relative folder inside the working folder; anything else is an error.

    An absolute path, or one climbing out with ``..``, would write tables
    outside the run (``/`` used to become ``.`` silently).
    """
    where = "config['results']"
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: must be a folder name relative to the working folder, got {value!r:.60}")
    path = PurePosixPath(value.replace("\\", "/"))
    if path.is_absolute() or PureWindowsPath(value).drive:
        raise ConfigError(f"{where}: {value!r:.60} is absolute; give a folder relative to the working folder")
    if ".." in path.parts:
        raise ConfigError(f"{where}: {value!r:.60} leaves the working folder ('..'); give a folder inside it")
    return path.as_posix()


# --------------------------------------------------------------------------
# Outputs never overlap inputs (issue 42): a results folder that is, holds or
# sits inside an input would overwrite it or be read back as one.
# --------------------------------------------------------------------------

# Folders of the project that hold inputs (relative to the project root and to the working folder).
INPUT_FOLDERS = ("resources", "docs", "workflow", "rag", "tests", "config", "benchmarks")
# Folders the pipeline itself writes outside the results folder; a results folder there would mix them.
PIPELINE_FOLDERS = ("work", "logs", "cache", ".snakemake")


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def overlap_problem(output: Path, inputs: Iterable[tuple[str, Path, bool]]) -> str | None:
    """Why the output folder ``output`` overlaps one of ``inputs``, or None.

    ``inputs`` are (what it is, resolved path, whether an output may not sit
    inside it). Paths are resolved already, so a link is judged by where it
    leads. A pure function: the planning check gathers the inputs.
    """
    for label, path, no_inside in inputs:
        if output == path:
            return f"is {label}"
        if output in path.parents:
            return f"contains {label}"
        if no_inside and path in output.parents:
            return f"sits inside {label}"
    return None


def _resolved(path: Path) -> Path:
    return Path(os.path.realpath(path))


def output_folder_inputs(
    plan: Plan, root: Path, config_files: Iterable[str | Path] = (), project_root: Path | None = None
) -> list[tuple[str, Path, bool]]:
    """Every input an output folder must keep apart from: (what it is, resolved path, no output inside)."""
    working = _resolved(root)
    inputs: list[tuple[str, Path, bool]] = [("the working folder", working, False)]
    bases = [working]
    if project_root is not None and _resolved(Path(project_root)) != working:
        bases.append(_resolved(Path(project_root)))
        inputs.append(("the project root", bases[-1], False))
    generic = [
        (f"{name}/, an input of the project", base / name, True) for base in bases for name in INPUT_FOLDERS
    ]
    generic += [
        (f"{name}/, a folder the pipeline writes apart from the results", working / name, True)
        for name in PIPELINE_FOLDERS
    ]
    for name, entry in plan.config.get("corpora", {}).items():
        if not isinstance(entry, dict):
            continue
        for key in ("documents", "folder", "questions"):
            if isinstance(entry.get(key), str):
                what = "question file" if key == "questions" else "documents folder"
                inputs.append(
                    (f"the {what} of corpus {name!r} ({entry[key]})", _resolved(root / entry[key]), True)
                )
    heldout = (plan.answers or {}).get("heldout") or {}
    for path in heldout.get("questions", []):
        inputs.append((f"the held-out question file {path}", _resolved(root / path), True))
    for path in config_files:
        inputs.append((f"the config file {path}", _resolved(root / path), True))
    return inputs + generic


def check_outputs_apart(
    plan: Plan, root: Path, config_files: Iterable[str | Path] = (), project_root: str | Path | None = None
) -> None:
    """Refuse an output folder that overlaps an input, or that a link leads out of the working folder.

    The output folders are ``results`` and each Wikipedia corpus's download
    ``cache``; every file the plan writes into the results folder is resolved
    too, so a link inside it (``results/figures`` leading elsewhere) is caught.
    """
    root = Path(root)
    working = _resolved(root)
    project = Path(project_root) if project_root is not None else None
    inputs = output_folder_inputs(plan, root, config_files, project)
    folders = [("config['results']", plan.results_folder)]
    for name, entry in plan.corpora.items():
        if entry.get("source") == "wikipedia":
            cache = entry.get("cache", "cache/wikipedia")
            folders.append((f"config['corpora'][{name!r}]['cache']", cache))
    for key, folder in folders:
        output, results = _resolved(root / folder), key == "config['results']"
        # The results folder lies inside the working folder (results_folder refused '..' and
        # absolute paths); a download cache may be a shared store elsewhere, but never an input.
        if results and not _inside(output, working):
            raise ConfigError(
                f"{key}: {folder!r:.60} leads through a link out of the working folder; "
                "give a plain folder inside it"
            )
        own = [item for item in inputs if results or item[1] != working / "cache"]
        problem = overlap_problem(output, own)
        if problem:
            example = "results_ablation" if results else "cache/wikipedia"
            raise ConfigError(
                f"{key}: {folder!r:.60} {problem}; outputs never overlap inputs, "
                f"so give a folder of its own (for example {example})"
            )
    folders = {plan.results_folder, *plan.shared_tables.values()}
    for path in plan.results():
        folder = next(name for name in sorted(folders, key=len, reverse=True) if path.startswith(f"{name}/"))
        if not _inside(_resolved(root / path), _resolved(root / folder)):
            raise ConfigError(
                f"config['results']: {path} leads through a link out of the results folder {folder}; "
                "remove the link"
            )
