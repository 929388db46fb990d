# Sources to parsed parquet: one row per text block, offsets into each
# document's full text.


rule parse_markdown:
    input:
        corpus_documents,
    output:
        "work/parsed/{corpus}.parquet",
    params:
        corpus=corpus_params,
        code=rag_digest("documents", "text"),
    log:
        "logs/parse/{corpus}.log",
    script:
        "../scripts/parse_markdown.py"


rule corpus_statistics:
    input:
        parsed=expand("work/parsed/{corpus}.parquet", corpus=CORPORA),
        questions=[CORPORA[corpus]["questions"] for corpus in CORPORA],
    output:
        documents="results/corpus_statistics.csv",
        questions="results/questions_by_type.csv",
    params:
        corpora=list(CORPORA),
        code=rag_digest("labels", "documents", "statistics"),
    log:
        "logs/corpus_statistics.log",
    script:
        "../scripts/corpus_statistics.py"
