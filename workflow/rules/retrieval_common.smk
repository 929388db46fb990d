# Input functions of the retrieval rules (retrieval.smk, learned_fusion.smk,
# reranking.smk, filtering.smk): which rankings and indexes a fused, approximate,
# learned or funnel entry reads. Included after common.smk, before the rules.


def ivf_base(wildcards):
    return RETRIEVERS[wildcards.retriever]["base"]


def ivf_base_index(wildcards):
    """The saved index of an ivf entry's base: its embeddings are reused, not refitted."""
    return INDEX.format(corpus=wildcards.corpus, chunker=wildcards.chunker, retriever=ivf_base(wildcards))


def ivf_base_params(wildcards):
    return canonical_json(RETRIEVERS[ivf_base(wildcards)])


def fusion_inputs(wildcards):
    """The components' rankings, read at the corpus's component depth (rag.pipeline.config.Plan.reads_deeper)."""
    return [
        (COMPONENT_RANKING if PLAN.reads_deeper(wildcards.corpus, component) else RANKING).format(
            corpus=wildcards.corpus, chunker=wildcards.chunker, retriever=component
        )
        for component in RETRIEVERS[wildcards.retriever]["components"]
    ]


def learned_labels(wildcards):
    """What a learned fusion chooses on: the chunk set's qrels, or the corpus's document qrels."""
    if LEVELS[wildcards.corpus] == "document":
        return DOCUMENT_QRELS.format(corpus=wildcards.corpus)
    return QRELS.format(corpus=wildcards.corpus, chunker=wildcards.chunker)


def funnel_rerank_params(wildcards):
    return canonical_json(PLAN.rerank_entries(wildcards.retriever))


def funnel_rerank_indexes(wildcards):
    """The fitted indexes of the plain retrievers a funnel reranks with."""
    return [
        INDEX.format(corpus=wildcards.corpus, chunker=wildcards.chunker, retriever=name)
        for name in PLAN.rerank_entries(wildcards.retriever)
        if name in BASE_RETRIEVERS
    ]


def filtered_ranking(corpus, chunker, filter_name, retriever):
    return FILTERED.format(corpus=corpus, chunker=chunker, filter_name=filter_name, retriever=retriever)
