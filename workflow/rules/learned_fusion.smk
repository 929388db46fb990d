# Learned fusion (kind learned): component rankings fused with weights chosen
# by nested cross-validation on the labelled questions (evidence spans, or a
# document-level corpus's graded qrels), so that every question is ranked
# with weights chosen without its labels (rag/evaluation/learned_fusion.py).
# Each fold's choice and held-out scores are gathered in results/learned_fusion.csv.


rule fuse_learned:
    input:
        components=fusion_inputs,
        chunks=CHUNKS,
        qrels=learned_labels,
        questions=questions_file,
    output:
        ranking=RANKING,
        weights=LEARNED_WEIGHTS,
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
        level=lambda wildcards: LEVELS[wildcards.corpus],
        holdout=lambda wildcards: PLAN.holdout(wildcards.corpus),
        code=script_digest("fuse_learned.py"),
    script:
        "../scripts/fuse_learned.py"


rule learned_fusion_table:
    input:
        [LEARNED_WEIGHTS.format(corpus=c, chunker=ch, retriever=r) for c, ch, r in PLAN.learned_grid()],
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
