# Rankings to metrics: every question at every k, then the tidy tables and the
# figures users read. One job evaluates the whole grid: per-ranking jobs would
# cost more in start-up than in work. Changing evaluation.ks re-runs only
# these rules, never the rankings.


rule evaluate:
    input:
        rankings=[f"work/rankings/{c}/{ch}/{r}.parquet" for c, ch, r in grid()],
        qrels=[f"work/qrels/{c}/{ch}.parquet" for c, ch in corpus_chunker_pairs()],
        chunks=[f"work/chunks/{c}/{ch}.parquet" for c, ch in corpus_chunker_pairs()],
        questions=[CORPORA[corpus]["questions"] for corpus in CORPORA],
    output:
        metrics="results/metrics.csv",
        per_question="results/per_question.csv",
        by_type="results/metrics_by_type.csv",
        by_document="results/metrics_by_document.csv",
    log:
        "logs/evaluate.log",
    benchmark:
        "benchmarks/logs/evaluate.tsv"
    params:
        grid=grid(),
        pairs=corpus_chunker_pairs(),
        corpora=list(CORPORA),
        ks=sorted(config["evaluation"]["ks"]),
        code=rag_digest("metrics", "labels", "statistics", "cohorts", "provenance"),
    script:
        "../scripts/evaluate.py"


rule plot_retrieval:
    input:
        metrics="results/metrics.csv",
        per_question="results/per_question.csv",
    output:
        recall="results/figures/recall_at_k.png",
        prompt_words="results/figures/recall_vs_prompt_words.png",
        scatter="results/figures/rank_scatter.png",
    log:
        "logs/plot_retrieval.log",
    params:
        figures=canonical_json(FIGURES),
        depth=config["evaluation"]["depth"],
        code=rag_digest("plotting"),
    script:
        "../scripts/plot_retrieval.py"
