# The candidate funnel: a first stage's N best chunks, rescored by a reranker,
# capped per document and cut to depth. A funnel is a retriever entry, so its
# rankings flow through the same evaluation as every other retriever.


rule funnel:
    input:
        first=lambda wildcards: RANKING.format(
            corpus=wildcards.corpus,
            chunker=wildcards.chunker,
            retriever=RETRIEVERS[wildcards.retriever]["first"],
        ),
        rerank=funnel_rerank_indexes,
        chunks=CHUNKS,
        questions=questions_file,
    output:
        ranking=RANKING,
    log:
        "logs/funnel/{corpus}/{chunker}/{retriever}.log",
    benchmark:
        "benchmarks/logs/funnel/{corpus}/{chunker}/{retriever}.tsv"
    wildcard_constraints:
        retriever=alternatives(FUNNEL_RETRIEVERS),
    conda:
        "../envs/rag.yaml"
    params:
        retriever=retriever_params,
        rerank=funnel_rerank_params,
        depth=ranking_depth_of,
        code=script_digest("funnel.py"),
    script:
        "../scripts/funnel.py"
