# Chunk sets to rankings: one parquet per (corpus, chunker, retriever), kept to
# evaluation.depth ranks (or the corpus's own depth). Fusion entries read
# their components' rankings, so those are computed once and reused. Every
# job is independent of the others of its rule; memory grows with the chunk
# set, so it is requested in proportion to the input's size.


rule rank:
    input:
        chunks=CHUNKS,
        questions=questions_file,
    output:
        ranking=RANKING,
        index=INDEX,
    log:
        "logs/rank/{corpus}/{chunker}/{retriever}.log",
    benchmark:
        "benchmarks/logs/rank/{corpus}/{chunker}/{retriever}.tsv"
    wildcard_constraints:
        retriever=alternatives(FITTED_RETRIEVERS),
    conda:
        "../envs/rag.yaml"
    threads: 1
    resources:
        mem_mb=lambda wildcards, input: 1000 + 40 * int(input.size_mb),
    params:
        retriever=retriever_params,
        depth=ranking_depth_of,
        code=script_digest("rank.py"),
    script:
        "../scripts/rank.py"


# A pretrained sentence embedder (kind embedder). Chunk and question texts are
# looked up by digest in the embedding cache, and only the misses are encoded
# and added to it: a re-run, or another chunker with some of the same texts,
# encodes nothing it has encoded before. The log counts the cache hits and
# reports the encoding rate in texts per second.
rule rank_embedder:
    input:
        chunks=CHUNKS,
        questions=questions_file,
    output:
        ranking=RANKING,
        index=INDEX,
    log:
        "logs/rank_embedder/{corpus}/{chunker}/{retriever}.log",
    benchmark:
        "benchmarks/logs/rank_embedder/{corpus}/{chunker}/{retriever}.tsv"
    wildcard_constraints:
        retriever=alternatives(EMBEDDER_RETRIEVERS),
    # The longest jobs of a build with a cold embedding cache: started first,
    # they overlap the many short ranking jobs instead of trailing them.
    priority: 1
    conda:
        "../envs/rag.yaml"
    # One thread: Snakemake starts a job only when all its threads are free at
    # once, so a two-thread job waited behind the short one-thread jobs and the
    # four ran last, one at a time. Each job encodes one batch per thread
    # (rag.retrieval.dense.embedder.encode); a cluster profile may give more.
    threads: 1
    params:
        retriever=retriever_params,
        depth=ranking_depth_of,
        cache=EMBEDDING_CACHE,
        code=script_digest("rank_embedder.py"),
    script:
        "../scripts/rank_embedder.py"


rule fuse:
    input:
        components=fusion_inputs,
        chunks=CHUNKS,
    output:
        ranking=RANKING,
    log:
        "logs/fuse/{corpus}/{chunker}/{retriever}.log",
    wildcard_constraints:
        retriever=alternatives(FUSED_RETRIEVERS),
    conda:
        "../envs/rag.yaml"
    threads: 1
    resources:
        mem_mb=lambda wildcards, input: 500 + 10 * int(input.size_mb),
    params:
        retriever=retriever_params,
        depth=ranking_depth_of,
        code=script_digest("fuse.py"),
    script:
        "../scripts/fuse.py"


# Fusions read each component at the corpus's component depth (default 1,000
# on a BEIR corpus, as peers fuse), deeper than the rankings evaluated: the
# same jobs as rank and rank_embedder, ranking deeper into files of their own,
# so the evaluated rankings, their tables and TREC runs are unchanged. Only
# scheduled when a corpus's component depth exceeds its ranking depth.
use rule rank as rank_component with:
    output:
        ranking=COMPONENT_RANKING,
        index=COMPONENT_INDEX,
    log:
        "logs/rank_component/{corpus}/{chunker}/{retriever}.log",
    benchmark:
        "benchmarks/logs/rank_component/{corpus}/{chunker}/{retriever}.tsv"
    params:
        retriever=retriever_params,
        depth=component_depth_of,
        code=script_digest("rank.py"),


use rule rank_embedder as rank_embedder_component with:
    output:
        ranking=COMPONENT_RANKING,
        index=COMPONENT_INDEX,
    log:
        "logs/rank_embedder_component/{corpus}/{chunker}/{retriever}.log",
    benchmark:
        "benchmarks/logs/rank_embedder_component/{corpus}/{chunker}/{retriever}.tsv"
    params:
        retriever=retriever_params,
        depth=component_depth_of,
        cache=EMBEDDING_CACHE,
        code=script_digest("rank_embedder.py"),


# An IVF index over a dense retriever's chunk embeddings. It reads the base's
# saved index instead of refitting it, so the base is fitted once and the
# approximate ranking uses exactly the vectors the exact one ranks.
rule rank_ivf:
    input:
        base_index=ivf_base_index,
        chunks=CHUNKS,
        questions=questions_file,
    output:
        ranking=RANKING,
        index=INDEX,
    log:
        "logs/rank_ivf/{corpus}/{chunker}/{retriever}.log",
    benchmark:
        "benchmarks/logs/rank_ivf/{corpus}/{chunker}/{retriever}.tsv"
    wildcard_constraints:
        retriever=alternatives(IVF_RETRIEVERS),
    conda:
        "../envs/rag.yaml"
    threads: 1
    resources:
        mem_mb=lambda wildcards, input: 1000 + 40 * int(input.size_mb),
    params:
        retriever=retriever_params,
        base=ivf_base_params,
        depth=ranking_depth_of,
        code=script_digest("rank_ivf.py"),
    script:
        "../scripts/rank_ivf.py"


# Issue 16: the size of every fitted index and the time and memory its job
# took (from the job's benchmark file), for every corpus, labelled or not.
# The time and memory measure the machine and vary from run to run, so they
# go to the timings folder, which git and the reproduction check ignore.
rule index_statistics:
    input:
        indexes=[INDEX.format(corpus=c, chunker=ch, retriever=r) for c, ch, r in index_grid()],
        benchmarks=[index_benchmark(c, ch, r) for c, ch, r in index_grid()],
    output:
        sizes=f"{RESULTS}/index_statistics.csv",
        timings=f"{RESULTS}/timings/index_statistics.csv",
    log:
        "logs/index_statistics.log",
    conda:
        "../envs/rag.yaml"
    params:
        grid=index_grid(),
        code=script_digest("index_statistics.py"),
    script:
        "../scripts/index_statistics.py"
