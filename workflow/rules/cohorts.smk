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


# Recall by caller and by tenant, beside the filter's correctness, from the
# filtered rankings of every caller (common.smk, measured_callers).
if answer_pairs():

    rule caller_cohorts:
        input:
            rankings=[row[-1] for row in caller_grid()],
            other=[path for paths in caller_grid_inputs().values() for path in paths.values()],
        output:
            f"{RESULTS}/metrics_by_caller.csv",
        log:
            "logs/caller_cohorts.log",
        conda:
            "../envs/rag.yaml"
        params:
            grid=canonical_json(caller_grid()),
            callers=canonical_json({name: CALLERS[name] for name in measured_callers()}),
            inputs=canonical_json(caller_grid_inputs()),
            k=COHORTS["k"],
            code=script_digest("caller_cohorts.py"),
        script:
            "../scripts/caller_cohorts.py"
