# Chunk sets to rankings: one parquet per (corpus, chunker, retriever), kept to
# evaluation.depth ranks. Fusion entries read their components' rankings, so
# those are computed once and reused.


rule rank:
    input:
        chunks="work/chunks/{corpus}/{chunker}.parquet",
        questions=questions_file,
    output:
        ranking="work/rankings/{corpus}/{chunker}/{retriever}.parquet",
        index="work/indexes/{corpus}/{chunker}/{retriever}.npz",
    log:
        "logs/rank/{corpus}/{chunker}/{retriever}.log",
    benchmark:
        "benchmarks/logs/rank/{corpus}/{chunker}/{retriever}.tsv"
    wildcard_constraints:
        retriever=alternatives(BASE_RETRIEVERS),
    params:
        retriever=retriever_params,
        depth=config["evaluation"]["depth"],
        code=rag_digest(
            "retrievers",
            "search",
            "bm25",
            "tfidf",
            "lsa",
            "text",
            "labels",
            "provenance",
        ),
    script:
        "../scripts/rank.py"


rule fuse:
    input:
        components=fusion_inputs,
        chunks="work/chunks/{corpus}/{chunker}.parquet",
    output:
        ranking="work/rankings/{corpus}/{chunker}/{retriever}.parquet",
    log:
        "logs/fuse/{corpus}/{chunker}/{retriever}.log",
    wildcard_constraints:
        retriever=alternatives(FUSED_RETRIEVERS),
    params:
        retriever=retriever_params,
        depth=config["evaluation"]["depth"],
        code=rag_digest("fusion", "search", "provenance"),
    script:
        "../scripts/fuse.py"
