# The grounding experiments: a trigram model of the whole corpus answers from
# memory, the same model conditioned on one ranking's top k chunks answers from
# the sources (all at once, RAG-Sequence and RAG-Token), and the support check
# judges memory's answer. Scheduled only when config.yaml has a grounding
# section; one job runs every case, as each takes well under a second.


rule grounding:
    input:
        unpack(grounding_inputs),
    output:
        answers=RESULTS + "/grounding.csv",
        cases=RESULTS + "/grounding_cases.csv",
        swap=RESULTS + "/grounding_swap.csv",
    log:
        "logs/grounding.log",
    benchmark:
        "benchmarks/logs/grounding.tsv"
    params:
        grounding=canonical_json(GROUNDING),
        code=rag_digest("grounding", "rag_models", "trigram", "verification", "text"),
    script:
        "../scripts/grounding.py"


rule plot_grounding:
    input:
        answers=RESULTS + "/grounding.csv",
        swap=RESULTS + "/grounding_swap.csv",
    output:
        RESULTS + "/figures/grounding.png",
    log:
        "logs/plot_grounding.log",
    params:
        setting=canonical_json(
            {key: GROUNDING[key] for key in ("corpus", "chunker", "retriever", "k", "temperature")}
            if GROUNDING
            else None
        ),
        code=rag_digest("plotting"),
    script:
        "../scripts/plot_grounding.py"
