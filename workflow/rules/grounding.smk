# The grounding experiments: a trigram model of the documents grounding.caller
# may read (its view of the corpus) answers from memory, the same model
# conditioned on one ranking's top k chunks answers from the sources (all at
# once, RAG-Sequence and RAG-Token), and the support check judges memory's answer. The llm generators of grounding.generators run the
# same cases from the token log-probabilities their server returns, through the
# response cache (the bundled server starts only at the first reply it lacks).
# Scheduled only when config.yaml has a grounding section; one job runs every case.


rule grounding:
    input:
        unpack(grounding_inputs),
    output:
        answers=TABLE("grounding.csv"),
        cases=TABLE("grounding_cases.csv"),
        swap=TABLE("grounding_swap.csv"),
    log:
        job="logs/grounding.log",
        server="logs/llm_server/grounding.log",
    benchmark:
        "benchmarks/logs/grounding.tsv"
    conda:
        "../envs/rag.yaml"
    # The bundled model's server computes with the job's threads (RAG_LLM_THREADS).
    threads: 2
    params:
        grounding=canonical_json(GROUNDING),
        # A function: the prompt templates hold {question}, which is no wildcard.
        generators=lambda wildcards: canonical_json(
            {name: PLAN.generators[name] for name in GROUNDING["generators"]} if GROUNDING else {}
        ),
        cache=LLM_CACHE,
        # Memory is trained on what the grounding caller may read: its view.
        caller=lambda wildcards: PLAN.answer_callers["grounding"],
        view=lambda wildcards: canonical_json(FILTERS[PLAN.answer_callers["grounding"]]),
        code=script_digest("grounding.py"),
    script:
        "../scripts/grounding.py"


rule plot_grounding:
    input:
        answers=TABLE("grounding.csv"),
        swap=TABLE("grounding_swap.csv"),
    output:
        report(
            TABLE("figures/grounding.png"),
            caption="../report/grounding.rst",
            category="4. Grounding",
            subcategory="Figures",
        ),
    log:
        "logs/plot_grounding.log",
    conda:
        "../envs/rag.yaml"
    params:
        setting=canonical_json(
            {key: GROUNDING[key] for key in ("corpus", "chunker", "retriever", "k", "temperature")}
            if GROUNDING
            else None
        ),
        code=script_digest("plot_grounding.py"),
    script:
        "../scripts/plot_grounding.py"
