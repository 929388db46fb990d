# Learned fusion (kind learned): component rankings fused with weights chosen
# by cross-validation on the labelled questions, so that every question is
# ranked with weights chosen without its labels (rag/learned_fusion.py). The
# weights chosen for each fold are gathered in results/learned_fusion.csv.


def _check_learned():
    for name in LEARNED_RETRIEVERS:
        where = f"config['retrievers'][{name!r}]"
        entry = RETRIEVERS[name]
        unlabelled = [corpus for corpus in CORPORA if corpus not in SPAN_CORPORA]
        if unlabelled:
            raise ConfigError(
                f"{where}: learned fusion chooses weights on evidence spans; corpus {unlabelled[0]!r} has none (disable it or the entry)"
            )
        if entry["objective_k"] > config["evaluation"]["depth"]:
            raise ConfigError(
                f"{where}['objective_k']: {entry['objective_k']} is deeper than evaluation.depth = {config['evaluation']['depth']}"
            )
    for name in FUNNEL_RETRIEVERS:
        if RETRIEVERS[name]["rerank"] in LEARNED_RETRIEVERS:
            raise ConfigError(
                f"config['retrievers'][{name!r}]['rerank']: a learned fusion cannot rescore candidates; use it as 'first' or rerank with an rrf fusion"
            )


_check_learned()


def learned_weight_files():
    return [
        f"work/learned/{c}/{ch}/{r}.csv" for c, ch, r in grid(CHUNK_LEVEL_CORPORA) if r in LEARNED_RETRIEVERS
    ]


rule fuse_learned:
    input:
        components=fusion_inputs,
        chunks="work/chunks/{corpus}/{chunker}.parquet",
        qrels="work/qrels/{corpus}/{chunker}.parquet",
        questions=questions_file,
    output:
        ranking="work/rankings/{corpus}/{chunker}/{retriever}.parquet",
        weights="work/learned/{corpus}/{chunker}/{retriever}.csv",
    log:
        "logs/fuse_learned/{corpus}/{chunker}/{retriever}.log",
    benchmark:
        "benchmarks/logs/fuse_learned/{corpus}/{chunker}/{retriever}.tsv"
    wildcard_constraints:
        retriever=alternatives(LEARNED_RETRIEVERS),
    threads: 1
    params:
        retriever=retriever_params,
        depth=ranking_depth_of,
        code=rag_digest("learned_fusion", "fusion", "metrics", "labels", "search", "provenance"),
    script:
        "../scripts/fuse_learned.py"


rule learned_fusion_table:
    input:
        learned_weight_files(),
    output:
        report(
            "results/learned_fusion.csv",
            caption="../report/learned_fusion.rst",
            category="2. Comparisons",
            subcategory="Tables",
        ),
    log:
        "logs/learned_fusion_table.log",
    script:
        "../scripts/learned_fusion_table.py"
