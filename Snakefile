# A declarative experiment pipeline for retrieval-augmented generation.
# Every result in results/ is rebuilt by `snakemake --cores 4`; the grid lives
# in config.yaml and the stages in workflow/rules/.

from snakemake.utils import min_version

min_version("9.0")


# `snakemake --configfile my.yaml` runs my.yaml alone, never merged into the
# bundled grid: config.yaml is read only when no config file is given on the
# command line (README.md, "Your own corpus").
if not workflow.config_settings.configfiles:

    configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/snakemake_patches.smk"
include: "workflow/rules/corpus.smk"
include: "workflow/rules/chunking.smk"
include: "workflow/rules/labels.smk"
include: "workflow/rules/retrieval_common.smk"
include: "workflow/rules/callers_common.smk"
include: "workflow/rules/retrieval.smk"
include: "workflow/rules/learned_fusion.smk"
include: "workflow/rules/evaluation.smk"
include: "workflow/rules/comparisons.smk"
include: "workflow/rules/grounding.smk"
include: "workflow/rules/vector_search.smk"
include: "workflow/rules/answers_common.smk"
include: "workflow/rules/answers.smk"
include: "workflow/rules/llm_answers.smk"
include: "workflow/rules/citation_labels.smk"
include: "workflow/rules/reranking.smk"
include: "workflow/rules/filtering.smk"
include: "workflow/rules/ablations.smk"
include: "workflow/rules/cohorts.smk"
include: "workflow/rules/provenance.smk"


# `snakemake --report` opens on the results summary (README.html, rendered from
# README.md) when there is one; the rule graph comes last (docs/comparisons.md).
if PLAN.labelled_corpora:

    report: "workflow/report/workflow.rst"


rule all:
    default_target: True
    input:
        all_results(),
