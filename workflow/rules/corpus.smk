# Sources to parsed parquet: one row per text block, offsets into each
# document's full text.


rule parse_markdown:
    input:
        corpus_documents,
    output:
        "work/parsed/{corpus}.parquet",
    log:
        "logs/parse/{corpus}.log",
    wildcard_constraints:
        corpus=alternatives(corpora_of_source("markdown")),
    params:
        corpus=corpus_params,
        code=rag_digest("documents", "text", "provenance"),
    script:
        "../scripts/parse_markdown.py"


rule lock_wikipedia:
    output:
        "resources/{corpus}/wikipedia.lock.yaml",
    log:
        "logs/lock_wikipedia/{corpus}.log",
    wildcard_constraints:
        corpus=alternatives(corpora_of_source("wikipedia")),
    resources:
        wikipedia=1,
    params:
        pins=lambda wildcards: canonical_json(
            {key: CORPORA[wildcards.corpus][key] for key in ("titles", "as_of")}
        ),
        code=rag_digest("wikipedia", "articles", "documents"),
    script:
        "../scripts/lock_wikipedia.py"


rule parse_wikipedia:
    input:
        lock="resources/{corpus}/wikipedia.lock.yaml",
    output:
        "work/parsed/{corpus}.parquet",
    log:
        "logs/parse/{corpus}.log",
    wildcard_constraints:
        corpus=alternatives(corpora_of_source("wikipedia")),
    resources:
        wikipedia=1,
    params:
        corpus=corpus_params,
        code=rag_digest("wikipedia", "articles", "documents", "provenance"),
    script:
        "../scripts/parse_wikipedia.py"


rule corpus_statistics:
    input:
        parsed=expand("work/parsed/{corpus}.parquet", corpus=CORPORA),
        questions=[CORPORA[corpus]["questions"] for corpus in CORPORA],
    output:
        documents="results/corpus_statistics.csv",
        questions="results/questions_by_type.csv",
    log:
        "logs/corpus_statistics.log",
    params:
        corpora=list(CORPORA),
        code=rag_digest("labels", "documents", "statistics"),
    script:
        "../scripts/corpus_statistics.py"
