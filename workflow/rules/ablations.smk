# Compact ablation tables: the per-document cap with and without it, and the
# candidate funnel with and without reranking at several candidate counts.


rule diversity_ablation:
    input:
        rankings=(
            [
                RANKING.format(corpus=corpus, chunker=DIVERSITY_ABLATION["chunker"], retriever=retriever)
                for corpus in SPAN_CORPORA
                for retriever in sorted(DIVERSITY_ABLATION["retrievers"])
            ]
            if DIVERSITY_ABLATION
            else []
        ),
        qrels=(
            expand(QRELS, corpus=SPAN_CORPORA, chunker=DIVERSITY_ABLATION["chunker"])
            if DIVERSITY_ABLATION
            else []
        ),
        chunks=(
            expand(CHUNKS, corpus=SPAN_CORPORA, chunker=DIVERSITY_ABLATION["chunker"])
            if DIVERSITY_ABLATION
            else []
        ),
        questions=[CORPORA[corpus]["questions"] for corpus in SPAN_CORPORA],
    output:
        TABLE("diversity_ablation.csv"),
    log:
        "logs/diversity_ablation.log",
    conda:
        "../envs/rag.yaml"
    params:
        ablation=canonical_json(DIVERSITY_ABLATION),
        corpora=SPAN_CORPORA,
        code=script_digest("diversity_ablation.py"),
    script:
        "../scripts/diversity_ablation.py"


rule funnel_ablation:
    input:
        metrics=f"{RESULTS}/metrics.csv",
    output:
        f"{RESULTS}/funnel_ablation.csv",
    log:
        "logs/funnel_ablation.log",
    conda:
        "../envs/rag.yaml"
    params:
        funnels=canonical_json({name: RETRIEVERS[name] for name in FUNNEL_RETRIEVERS}),
        ks=sorted(config.get("funnel_ablation", {}).get("ks", [])),
        code=script_digest("funnel_ablation.py"),
    script:
        "../scripts/funnel_ablation.py"
