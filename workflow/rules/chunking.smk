# Parsed documents to one chunk set per (corpus, chunker).


rule chunk:
    input:
        "work/parsed/{corpus}.parquet",
    output:
        "work/chunks/{corpus}/{chunker}.parquet",
    log:
        "logs/chunk/{corpus}/{chunker}.log",
    params:
        chunker=chunker_params,
        code=rag_digest("chunking", "documents", "text", "provenance"),
    script:
        "../scripts/chunk.py"


rule chunk_statistics:
    input:
        [f"work/chunks/{corpus}/{chunker}.parquet" for corpus, chunker in corpus_chunker_pairs()],
    output:
        RESULTS + "/chunk_statistics.csv",
    log:
        "logs/chunk_statistics.log",
    params:
        pairs=corpus_chunker_pairs(),
        code=rag_digest("statistics"),
    script:
        "../scripts/chunk_statistics.py"
