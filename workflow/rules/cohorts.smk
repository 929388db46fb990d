# The weakest cohort beside the mean: by question type and by evidence
# document, for every retriever, from the evaluation's cohort tables.


rule cohorts:
    input:
        metrics="results/metrics.csv",
        by_type="results/metrics_by_type.csv",
        by_document="results/metrics_by_document.csv",
    output:
        table="results/weakest_cohorts.csv",
        figure=report(
            "results/figures/cohorts.png",
            caption="../report/cohorts.rst",
            category="1. Retrieval",
            subcategory="Figures",
        ),
    log:
        "logs/cohorts.log",
    conda:
        "../envs/rag.yaml"
    params:
        cohorts=canonical_json(COHORTS),
        figures=canonical_json({key: FIGURES.get(key) for key in ("corpus", "chunker")}),
        code=script_digest("cohorts.py"),
    script:
        "../scripts/cohorts.py"
