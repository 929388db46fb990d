# Rankings to answers: the extractive generator reads the top k chunks of a
# ranking, its answer is checked against the sources it cites and judged
# against the labelled evidence. Beside the chunk rankings, the lead sections
# of the documents serve as context (all in one prompt) and as a router to a
# single document. Nothing here runs unless config.yaml has an answers section.


rule answer:
    input:
        chunks="work/chunks/{corpus}/{chunker}.parquet",
        ranking="work/rankings/{corpus}/{chunker}/{retriever}.parquet",
        parsed="work/parsed/{corpus}.parquet",
        questions=questions_file,
    output:
        "work/answers/{corpus}/{chunker}/{retriever}.parquet",
    log:
        "logs/answer/{corpus}/{chunker}/{retriever}.log",
    benchmark:
        "benchmarks/logs/answer/{corpus}/{chunker}/{retriever}.tsv"
    params:
        generation=answers_section("generation"),
        code=rag_digest(*ANSWER_CODE, "chunking", "documents"),
    script:
        "../scripts/answer.py"


rule answer_from_summaries:
    input:
        parsed="work/parsed/{corpus}.parquet",
        questions=questions_file,
    output:
        "work/answers/{corpus}/lead_summaries.parquet",
    log:
        "logs/answer_from_summaries/{corpus}.log",
    benchmark:
        "benchmarks/logs/answer_from_summaries/{corpus}.tsv"
    params:
        generation=answers_section("generation", "threshold", "token_counter", "budget"),
        code=rag_digest(*ANSWER_CODE, "summaries", "chunking", "documents"),
    script:
        "../scripts/answer_from_summaries.py"


rule answer_tables:
    input:
        ranked=[f"work/answers/{c}/{ch}/{r}.parquet" for c, ch, r in answer_pairs()],
        summaries=[f"work/answers/{corpus}/lead_summaries.parquet" for corpus in SPAN_CORPORA],
    output:
        answers=RESULTS + "/answers.csv",
        summary=RESULTS + "/answers_summary.csv",
    log:
        "logs/answer_tables.log",
    params:
        code=rag_digest("answers"),
    script:
        "../scripts/answer_tables.py"


rule abstention:
    input:
        abstention_inputs(),
    output:
        table=RESULTS + "/abstention.csv",
        figure=RESULTS + "/figures/abstention.png",
    log:
        "logs/abstention.log",
    params:
        thresholds=answers_section("abstention", "thresholds"),
        threshold=lambda wildcards: ANSWERS["generation"]["threshold"],
        corpus=FIGURES.get("corpus", SPAN_CORPORA[0] if SPAN_CORPORA else None),
        code=rag_digest("answers", "plotting"),
    script:
        "../scripts/abstention.py"


rule summaries:
    input:
        parsed=expand("work/parsed/{corpus}.parquet", corpus=SPAN_CORPORA),
        questions=[CORPORA[corpus]["questions"] for corpus in SPAN_CORPORA],
    output:
        RESULTS + "/summaries.csv",
    log:
        "logs/summaries.log",
    params:
        corpora=SPAN_CORPORA,
        window=answers_section("summaries", "window"),
        code=rag_digest("summaries", "labels", "tokens", "text", "chunking", "documents"),
    script:
        "../scripts/summaries.py"


rule route:
    input:
        parsed=expand("work/parsed/{corpus}.parquet", corpus=SPAN_CORPORA),
        questions=[CORPORA[corpus]["questions"] for corpus in SPAN_CORPORA],
        chunks=routing_inputs("chunks"),
        qrels=routing_inputs("qrels"),
        index=routing_inputs("index"),
    output:
        routing=RESULTS + "/routing.csv",
        metrics=RESULTS + "/routing_metrics.csv",
    log:
        "logs/route.log",
    benchmark:
        "benchmarks/logs/route.tsv"
    params:
        corpora=SPAN_CORPORA,
        routing=answers_section("summaries", "chunker", "retriever"),
        retriever=lambda wildcards: canonical_json(RETRIEVERS[ANSWERS["summaries"]["retriever"]]),
        depth=config["evaluation"]["depth"],
        ks=sorted(config["evaluation"]["ks"]),
        code=rag_digest(
            "routing",
            "summaries",
            "retrievers",
            "metrics",
            "statistics",
            "answers",
            "labels",
            "bm25",
            "search",
            "text",
            "documents",
        ),
    script:
        "../scripts/route.py"
