# One row per ranking of the grid (and per filtered ranking of the filter
# ablation): what made it, read back from the parquet files' metadata.


rule provenance:
    input:
        rankings=[RANKING.format(corpus=c, chunker=ch, retriever=r) for c, ch, r in grid()],
        filtered=[
            filtered_ranking(corpus, FILTER_ABLATION["chunker"], filter_name, retriever)
            for corpus, retriever, filter_name in filter_ablation_grid()
        ],
    output:
        f"{RESULTS}/provenance.csv",
    log:
        "logs/provenance.log",
    conda:
        "../envs/rag.yaml"
    params:
        grid=grid(),
        filtered=filter_ablation_grid(),
        chunker=FILTER_ABLATION["chunker"] if FILTER_ABLATION else None,
        code=script_digest("provenance_table.py"),
    script:
        "../scripts/provenance_table.py"
