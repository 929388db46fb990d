# Metadata filters inside retrieval (prefilter) against filtering the global
# ranking afterwards (post-filter). Filtered rankings mirror the unfiltered
# ones: plain retrievers (and IVF indexes) search their saved index within the
# allowed chunks, fusions fuse their components' filtered rankings, funnels
# rerank their first stage's filtered candidates. A caller's view is a filter
# of the caller's name (common.smk, caller_ranking): the answers read these.
# A filter that allows every chunk of the chunk set gives the unfiltered
# ranking itself (each rule reads it), so a caller who may read everything
# answers from exactly the grid's rankings.


rule rank_filtered:
    input:
        index=INDEX,
        chunks=CHUNKS,
        questions=questions_file,
        unfiltered=RANKING,
    output:
        ranking=FILTERED,
    log:
        "logs/rank_filtered/{corpus}/{chunker}/{filter_name}/{retriever}.log",
    wildcard_constraints:
        retriever=alternatives(BASE_RETRIEVERS),
    conda:
        "../envs/rag.yaml"
    params:
        retriever=retriever_params,
        filter=filter_params,
        depth=ranking_depth_of,
        code=script_digest("rank_filtered.py"),
    script:
        "../scripts/rank_filtered.py"


rule fuse_filtered:
    input:
        components=lambda wildcards: [
            filtered_ranking(wildcards.corpus, wildcards.chunker, wildcards.filter_name, component)
            for component in RETRIEVERS[wildcards.retriever]["components"]
        ],
        chunks=CHUNKS,
        unfiltered=RANKING,
    output:
        ranking=FILTERED,
    log:
        "logs/fuse_filtered/{corpus}/{chunker}/{filter_name}/{retriever}.log",
    wildcard_constraints:
        retriever=alternatives(FUSED_RETRIEVERS),
    conda:
        "../envs/rag.yaml"
    params:
        retriever=retriever_params,
        filter=filter_params,
        depth=ranking_depth_of,
        code=script_digest("fuse.py"),
    script:
        "../scripts/fuse.py"


rule funnel_filtered:
    input:
        first=lambda wildcards: filtered_ranking(
            wildcards.corpus,
            wildcards.chunker,
            wildcards.filter_name,
            RETRIEVERS[wildcards.retriever]["first"],
        ),
        rerank=funnel_rerank_indexes,
        chunks=CHUNKS,
        questions=questions_file,
        unfiltered=RANKING,
    output:
        ranking=FILTERED,
    log:
        "logs/funnel_filtered/{corpus}/{chunker}/{filter_name}/{retriever}.log",
    wildcard_constraints:
        retriever=alternatives(FUNNEL_RETRIEVERS),
    conda:
        "../envs/rag.yaml"
    params:
        retriever=retriever_params,
        rerank=funnel_rerank_params,
        filter=filter_params,
        depth=ranking_depth_of,
        code=script_digest("funnel.py"),
    script:
        "../scripts/funnel.py"


rule rank_ivf_filtered:
    input:
        index=INDEX,
        base_index=ivf_base_index,
        chunks=CHUNKS,
        questions=questions_file,
        unfiltered=RANKING,
    output:
        ranking=FILTERED,
    log:
        "logs/rank_filtered/{corpus}/{chunker}/{filter_name}/{retriever}.log",
    wildcard_constraints:
        retriever=alternatives(IVF_RETRIEVERS),
    conda:
        "../envs/rag.yaml"
    params:
        retriever=retriever_params,
        base=ivf_base_params,
        filter=filter_params,
        depth=ranking_depth_of,
        code=script_digest("rank_filtered.py"),
    script:
        "../scripts/rank_filtered.py"


# A learned fusion for a view: its weights chosen again, by the same nested
# cross-validation, on the view's prefiltered component rankings and the
# labels of the chunks the view allows (rag/evaluation/learned_views.py). A
# view that allows every chunk gives the unfiltered learned ranking.
rule learned_filtered:
    input:
        components=lambda wildcards: [
            filtered_ranking(wildcards.corpus, wildcards.chunker, wildcards.filter_name, component)
            for component in RETRIEVERS[wildcards.retriever]["components"]
        ],
        chunks=CHUNKS,
        qrels=learned_labels,
        questions=questions_file,
        unfiltered=RANKING,
    output:
        ranking=FILTERED,
    log:
        "logs/learned_filtered/{corpus}/{chunker}/{filter_name}/{retriever}.log",
    wildcard_constraints:
        retriever=alternatives(LEARNED_RETRIEVERS),
    conda:
        "../envs/rag.yaml"
    params:
        retriever=retriever_params,
        filter=filter_params,
        depth=ranking_depth_of,
        level=lambda wildcards: LEVELS[wildcards.corpus],
        holdout=lambda wildcards: PLAN.holdout(wildcards.corpus),
        code=script_digest("learned_filtered.py"),
    script:
        "../scripts/learned_filtered.py"


rule filter_ablation:
    input:
        rankings=[
            RANKING.format(corpus=corpus, chunker=FILTER_ABLATION["chunker"], retriever=retriever)
            for corpus, retriever, _ in filter_ablation_grid()
        ],
        filtered=[
            filtered_ranking(corpus, FILTER_ABLATION["chunker"], filter_name, retriever)
            for corpus, retriever, filter_name in filter_ablation_grid()
        ],
        qrels=(
            expand(QRELS, corpus=SPAN_CORPORA, chunker=FILTER_ABLATION["chunker"]) if FILTER_ABLATION else []
        ),
        chunks=(
            expand(CHUNKS, corpus=SPAN_CORPORA, chunker=FILTER_ABLATION["chunker"])
            if FILTER_ABLATION
            else []
        ),
        questions=[CORPORA[corpus]["questions"] for corpus in SPAN_CORPORA],
    output:
        TABLE("filter_ablation.csv"),
    log:
        "logs/filter_ablation.log",
    conda:
        "../envs/rag.yaml"
    params:
        grid=filter_ablation_grid(),
        corpora=SPAN_CORPORA,
        chunker=FILTER_ABLATION["chunker"] if FILTER_ABLATION else None,
        filters=(
            canonical_json({name: FILTERS[name] for name in FILTER_ABLATION["filters"]})
            if FILTER_ABLATION
            else None
        ),
        k=FILTER_ABLATION["k"] if FILTER_ABLATION else None,
        code=script_digest("filter_ablation.py"),
    script:
        "../scripts/filter_ablation.py"


# Revocation measured (rag/ask/revocation.py): two runs of one corpus, a group
# removed from one document's ACL and another document deleted between them;
# every path to a reader is counted for every caller.
if PLAN.revocation is not None:

    rule revocation:
        input:
            documents=PLAN.corpus_files(PLAN.revocation["corpus"]),
            questions=CORPORA[PLAN.revocation["corpus"]]["questions"],
        output:
            f"{RESULTS}/revocation.csv",
        log:
            "logs/revocation.log",
        conda:
            "../envs/rag.yaml"
        params:
            revocation=canonical_json(PLAN.revocation),
            folder=lambda wildcards, input: str(Path(input.documents[0]).parent),
            code=script_digest("revocation.py"),
            content=content_digest(PLAN.corpus_files(PLAN.revocation["corpus"])),
        script:
            "../scripts/revocation.py"
