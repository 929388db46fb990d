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


# Recall by caller and by tenant, beside the filter's correctness: every
# caller of the callers section and every caller an answer path runs as, over
# the answered (chunker, retriever) pairs, from the caller's filtered rankings.
def measured_callers():
    named = set(PLAN.config.get("callers") or {})
    if ANSWERS is not None:
        named |= {ANSWERS["caller"], ANSWERS["llm"]["caller"]}
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
