# Comparisons users can trust: each mean over questions with a bootstrap
# confidence interval, paired tests of every retriever against the baseline
# (evaluation.baseline), the summary table and results/README.md written from
# them, and every ranking as a TREC run file for other tools (docs/comparisons.md).


BASELINE = PLAN.baseline
# Per-question values of every corpus, chunk-level and document-level (BEIR)
# alike, so each gets intervals, significance, the summary and its section.
ALL_QUESTION_VALUES = [QUESTION_VALUES] * bool(PLAN.chunk_level_corpora) + [DOCUMENT_QUESTION_VALUES] * bool(
    PLAN.document_level_corpora
)


rule significance:
    input:
        question_values=ALL_QUESTION_VALUES,
    output:
        intervals=report(
            f"{RESULTS}/metrics_ci.csv",
            caption="../report/metrics_ci.rst",
            category="2. Comparisons",
            subcategory="Tables",
        ),
        significance=report(
            f"{RESULTS}/significance.csv",
            caption="../report/significance.rst",
            category="2. Comparisons",
            subcategory="Tables",
        ),
    log:
        "logs/significance.log",
    benchmark:
        "benchmarks/logs/significance.tsv"
    conda:
        "../envs/rag.yaml"
    params:
        baseline=BASELINE,
        holdouts=PLAN.holdouts,
        parts=TABLE_PARTS,
        code=script_digest("significance.py"),
    script:
        "../scripts/significance.py"


rule summary:
    input:
        intervals=f"{RESULTS}/metrics_ci.csv",
        significance=f"{RESULTS}/significance.csv",
    output:
        report(
            f"{RESULTS}/summary.csv",
            caption="../report/summary.rst",
            category="2. Comparisons",
            subcategory="Tables",
        ),
    log:
        "logs/summary.log",
    conda:
        "../envs/rag.yaml"
    params:
        baseline=BASELINE,
        code=script_digest("summary.py"),
    script:
        "../scripts/summary.py"


rule results_readme:
    input:
        summary=f"{RESULTS}/summary.csv",
        significance=f"{RESULTS}/significance.csv",
        # Recall and prompt words at every k, for the k to use at the prompt budget.
        intervals=f"{RESULTS}/metrics_ci.csv",
        question_values=ALL_QUESTION_VALUES,
        # Read for the choices at the edge of their grid (rag.evaluation.summary.grid_edge_lines).
        thresholds=[TABLE("reader_thresholds.csv")] if ANSWERS else [],
        learned=[f"{RESULTS}/learned_fusion.csv"] if PLAN.retrievers_of("learned") else [],
        # The best answer setup per language model (rag.measuring.best_setup).
        # In RESULTS, or in the default folder when an ablation's folder shares the answer tables.
        llm_judged=([TABLE("llm_answers_judged.csv")] if ANSWERS and ANSWERS["llm"]["generators"] else []),
        # The offline answers, judged as the models' are for the opening (rag.measuring.same_measure).
        offline_answers=([TABLE("answers.csv")] if ANSWERS and ANSWERS["llm"]["generators"] else []),
    output:
        f"{RESULTS}/README.md",
    log:
        "logs/results_readme.log",
    conda:
        "../envs/rag.yaml"
    params:
        baseline=BASELINE,
        holdouts=PLAN.holdouts,
        prompt_budget=PLAN.prompt_budget,
        # The link to answers.md, relative to this README (absent without answers).
        answers_link=(os.path.relpath(TABLE("answers.md"), RESULTS) if ANSWERS else None),
        # The llm entries that answer with an explicit outcome (rag.measuring.refusal_choice).
        outcome_generators=lambda wildcards: outcome_generators(),
        code=script_digest("results_readme.py"),
    script:
        "../scripts/results_readme.py"


# The summary rendered to HTML, which the report's front page embeds
# (workflow/report/workflow.rst), and the numbers shown under it
# (snakemake --report ... --report-metadata results/report_metadata.yaml).
rule summary_page:
    input:
        readme=f"{RESULTS}/README.md",
        summary=f"{RESULTS}/summary.csv",
    output:
        page=f"{RESULTS}/README.html",
        metadata=f"{RESULTS}/report_metadata.yaml",
    log:
        "logs/summary_page.log",
    conda:
        "../envs/rag.yaml"
    params:
        code=script_digest("summary_page.py"),
    script:
        "../scripts/summary_page.py"


# Every ranking as a TREC run (documents for document-level corpora, as BEIR
# scores them), with the labels as qrels, for trec_eval, ir-measures or ranx.
rule trec_runs:
    input:
        rankings=[RANKING.format(corpus=c, chunker=ch, retriever=r) for c, ch, r in grid(CHUNK_LEVEL_CORPORA)],
        qrels=[QRELS.format(corpus=c, chunker=ch) for c, ch in corpus_chunker_pairs(CHUNK_LEVEL_CORPORA)],
        questions=[questions_path(corpus) for corpus in CHUNK_LEVEL_CORPORA],
    output:
        runs=PLAN.trec_run_files(CHUNK_LEVEL_CORPORA),
        qrels=[f"{RESULTS}/runs/{c}/{ch}/qrels.txt" for c, ch in corpus_chunker_pairs(CHUNK_LEVEL_CORPORA)],
        piece_qrels=[
            f"{RESULTS}/runs/{c}/{ch}/piece_qrels.txt" for c, ch in corpus_chunker_pairs(CHUNK_LEVEL_CORPORA)
        ],
    log:
        "logs/trec_runs.log",
    benchmark:
        "benchmarks/logs/trec_runs.tsv"
    conda:
        "../envs/rag.yaml"
    params:
        grid=grid(CHUNK_LEVEL_CORPORA),
        pairs=corpus_chunker_pairs(CHUNK_LEVEL_CORPORA),
        corpora=CHUNK_LEVEL_CORPORA,
        parts=TABLE_PARTS,
        code=script_digest("trec_runs.py"),
    script:
        "../scripts/trec_runs.py"


rule trec_document_runs:
    input:
        rankings=[
            RANKING.format(corpus=c, chunker=ch, retriever=r) for c, ch, r in grid(DOCUMENT_LEVEL_CORPORA)
        ],
        chunks=[CHUNKS.format(corpus=c, chunker=ch) for c, ch in corpus_chunker_pairs(DOCUMENT_LEVEL_CORPORA)],
        qrels=expand(DOCUMENT_QRELS, corpus=DOCUMENT_LEVEL_CORPORA),
        questions=[questions_path(corpus) for corpus in DOCUMENT_LEVEL_CORPORA],
    output:
        runs=PLAN.trec_run_files(DOCUMENT_LEVEL_CORPORA),
        qrels=[f"{RESULTS}/runs/{corpus}/qrels.txt" for corpus in DOCUMENT_LEVEL_CORPORA],
    log:
        "logs/trec_document_runs.log",
    benchmark:
        "benchmarks/logs/trec_document_runs.tsv"
    conda:
        "../envs/rag.yaml"
    params:
        grid=grid(DOCUMENT_LEVEL_CORPORA),
        pairs=corpus_chunker_pairs(DOCUMENT_LEVEL_CORPORA),
        corpora=DOCUMENT_LEVEL_CORPORA,
        code=script_digest("trec_document_runs.py"),
    script:
        "../scripts/trec_document_runs.py"
