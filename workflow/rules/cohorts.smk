# The weakest cohort beside the mean: by question type and by evidence
# document, for every retriever, from the evaluation's cohort tables.


rule cohorts:
    input:
        metrics=RESULTS + "/metrics.csv",
        by_type=RESULTS + "/metrics_by_type.csv",
        by_document=RESULTS + "/metrics_by_document.csv",
    output:
        table=RESULTS + "/weakest_cohorts.csv",
        figure=RESULTS + "/figures/cohorts.png",
    log:
        "logs/cohorts.log",
    params:
        cohorts=canonical_json(COHORTS),
        figures=canonical_json({key: FIGURES.get(key) for key in ("corpus", "chunker")}),
        code=rag_digest("cohorts", "plotting"),
    script:
        "../scripts/cohorts.py"
