# Parsed documents to one chunk set per (corpus, chunker).


rule chunk:
    input:
        PARSED,
    output:
        CHUNKS,
    log:
        "logs/chunk/{corpus}/{chunker}.log",
    benchmark:
        "benchmarks/logs/chunk/{corpus}/{chunker}.tsv"
    conda:
        "../envs/rag.yaml"
    params:
        chunker=chunker_params,
        code=script_digest("chunk.py"),
    script:
        "../scripts/chunk.py"


rule chunk_statistics:
    input:
        [CHUNKS.format(corpus=corpus, chunker=chunker) for corpus, chunker in corpus_chunker_pairs()],
    output:
        f"{RESULTS}/chunk_statistics.csv",
    log:
        "logs/chunk_statistics.log",
    conda:
        "../envs/rag.yaml"
    params:
        pairs=corpus_chunker_pairs(),
        code=script_digest("chunk_statistics.py"),
    script:
        "../scripts/chunk_statistics.py"
