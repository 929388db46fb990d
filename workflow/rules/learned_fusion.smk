# Learned fusion (kind learned): component rankings fused with weights chosen
# by cross-validation on the labelled questions, so that every question is
# ranked with weights chosen without its labels (rag/evaluation/learned_fusion.py). The
# weights chosen for each fold are gathered in results/learned_fusion.csv.


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
    conda:
        "../envs/rag.yaml"
    threads: 1
    params:
        retriever=retriever_params,
        depth=ranking_depth_of,
        code=script_digest("fuse_learned.py"),
    script:
        "../scripts/fuse_learned.py"


rule learned_fusion_table:
    input:
        PLAN.learned_weight_files(),
    output:
        report(
            f"{RESULTS}/learned_fusion.csv",
            caption="../report/learned_fusion.rst",
            category="2. Comparisons",
            subcategory="Tables",
        ),
    log:
        "logs/learned_fusion_table.log",
    conda:
        "../envs/rag.yaml"
    params:
        code=script_digest("learned_fusion_table.py"),
    script:
        "../scripts/learned_fusion_table.py"
