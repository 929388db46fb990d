# The weakest cohort beside the mean: by question type and by evidence
# document, for every retriever, from the evaluation's cohort tables.


rule cohorts:
    input:
        metrics=f"{RESULTS}/metrics.csv",
        by_type=f"{RESULTS}/metrics_by_type.csv",
        by_document=f"{RESULTS}/metrics_by_document.csv",
    output:
        table=f"{RESULTS}/weakest_cohorts.csv",
        figure=report(
            f"{RESULTS}/figures/cohorts.png",
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
