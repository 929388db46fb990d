# Rankings to metrics: every question at every k, then the tidy tables and the
# figures users read. One job evaluates the whole grid: per-ranking jobs would
# cost more in start-up than in work. It keeps each ranking's values as a part
# (TABLE_PARTS), so adding a retriever scores only its own rankings before the
# merge. Changing evaluation.ks re-runs only these rules, never the rankings. Chunk-level corpora (evidence spans) and
# document-level ones (BEIR qrels, or spans mapped to documents) have a rule
# each, so adding a BEIR corpus never re-evaluates the bundled one.


rule evaluate:
    input:
        rankings=[RANKING.format(corpus=c, chunker=ch, retriever=r) for c, ch, r in grid(CHUNK_LEVEL_CORPORA)],
        qrels=[QRELS.format(corpus=c, chunker=ch) for c, ch in corpus_chunker_pairs(CHUNK_LEVEL_CORPORA)],
        chunks=[CHUNKS.format(corpus=c, chunker=ch) for c, ch in corpus_chunker_pairs(CHUNK_LEVEL_CORPORA)],
        questions=[questions_path(corpus) for corpus in CHUNK_LEVEL_CORPORA],
    output:
        metrics=f"{RESULTS}/metrics.csv",
        per_question=f"{RESULTS}/per_question.csv",
        by_type=f"{RESULTS}/metrics_by_type.csv",
        by_document=f"{RESULTS}/metrics_by_document.csv",
        question_values=QUESTION_VALUES,
    log:
        "logs/evaluate.log",
    benchmark:
        "benchmarks/logs/evaluate.tsv"
    conda:
        "../envs/rag.yaml"
    resources:
        mem_mb=lambda wildcards, input: 1000 + 10 * int(input.size_mb),
    params:
        grid=grid(CHUNK_LEVEL_CORPORA),
        pairs=corpus_chunker_pairs(CHUNK_LEVEL_CORPORA),
        corpora=CHUNK_LEVEL_CORPORA,
        ks=sorted(config["evaluation"]["ks"]),
        parts=TABLE_PARTS,
        code=script_digest("evaluate.py"),
    script:
        "../scripts/evaluate.py"


rule evaluate_documents:
    input:
        rankings=[
            RANKING.format(corpus=c, chunker=ch, retriever=r) for c, ch, r in grid(DOCUMENT_LEVEL_CORPORA)
        ],
        chunks=[CHUNKS.format(corpus=c, chunker=ch) for c, ch in corpus_chunker_pairs(DOCUMENT_LEVEL_CORPORA)],
        qrels=expand(DOCUMENT_QRELS, corpus=DOCUMENT_LEVEL_CORPORA),
        questions=[questions_path(corpus) for corpus in DOCUMENT_LEVEL_CORPORA],
    output:
        metrics=f"{RESULTS}/document_metrics.csv",
        beir=f"{RESULTS}/beir_metrics.csv",
        question_values=DOCUMENT_QUESTION_VALUES,
    log:
        "logs/evaluate_documents.log",
    benchmark:
        "benchmarks/logs/evaluate_documents.tsv"
    conda:
        "../envs/rag.yaml"
    resources:
        mem_mb=lambda wildcards, input: 1000 + 10 * int(input.size_mb),
    params:
        grid=grid(DOCUMENT_LEVEL_CORPORA),
        pairs=corpus_chunker_pairs(DOCUMENT_LEVEL_CORPORA),
        corpora=DOCUMENT_LEVEL_CORPORA,
        ks=DOCUMENT_KS,
        code=script_digest("evaluate_documents.py"),
    script:
        "../scripts/evaluate_documents.py"


rule plot_retrieval:
    input:
        metrics=f"{RESULTS}/metrics.csv",
        per_question=f"{RESULTS}/per_question.csv",
        intervals=f"{RESULTS}/metrics_ci.csv",
    output:
        recall=report(
            f"{RESULTS}/figures/recall_at_k.png",
            caption="../report/recall_at_k.rst",
            category="1. Retrieval",
            subcategory="Figures",
        ),
        prompt_words=report(
            f"{RESULTS}/figures/recall_vs_prompt_words.png",
            caption="../report/recall_vs_prompt_words.rst",
            category="1. Retrieval",
            subcategory="Figures",
        ),
        scatter=report(
            f"{RESULTS}/figures/rank_scatter.png",
            caption="../report/rank_scatter.rst",
            category="1. Retrieval",
            subcategory="Figures",
        ),
        overview=report(
            f"{RESULTS}/figures/overview.png",
            caption="../report/overview.rst",
            category="1. Retrieval",
            subcategory="Figures",
        ),
    log:
        "logs/plot_retrieval.log",
    conda:
        "../envs/rag.yaml"
    params:
        figures=canonical_json(FIGURES),
        depth=lambda wildcards: PLAN.ranking_depth(FIGURES["corpus"]),
        baseline=PLAN.baseline,
        code=script_digest("plot_retrieval.py"),
    script:
        "../scripts/plot_retrieval.py"


# Page-level recall beside chunk recall, for the corpora whose source has pages
# (a PDF's blocks keep their page; rag.evaluation.pages).
rule page_recall:
    input:
        rankings=[RANKING.format(corpus=c, chunker=ch, retriever=r) for c, ch, r in grid(PAGED_CORPORA)],
        qrels=[QRELS.format(corpus=c, chunker=ch) for c, ch in corpus_chunker_pairs(PAGED_CORPORA)],
        chunks=[CHUNKS.format(corpus=c, chunker=ch) for c, ch in corpus_chunker_pairs(PAGED_CORPORA)],
        parsed=[PARSED.format(corpus=corpus) for corpus in PAGED_CORPORA],
        questions=[questions_path(corpus) for corpus in PAGED_CORPORA],
    output:
        f"{RESULTS}/page_recall.csv",
    log:
        "logs/page_recall.log",
    conda:
        "../envs/rag.yaml"
    params:
        grid=grid(PAGED_CORPORA),
        pairs=corpus_chunker_pairs(PAGED_CORPORA),
        corpora=PAGED_CORPORA,
        ks=sorted(config["evaluation"]["ks"]),
        code=script_digest("page_recall.py"),
    script:
        "../scripts/page_recall.py"
