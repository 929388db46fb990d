# Sources to parsed parquet: one row per text block, offsets into each
# document's full text. A BEIR corpus also yields its queries as questions
# and its qrels as document judgements.


# A folder of Markdown, plain text or HTML files (FOLDER_SOURCES); the rule
# keeps its historical name. The parquet's metadata records, per document,
# the lines (or elements) the reader skipped.
rule parse_markdown:
    input:
        corpus_documents,
    output:
        PARSED,
    log:
        "logs/parse/{corpus}.log",
    wildcard_constraints:
        corpus=alternatives(corpora_of_source(*FOLDER_SOURCES)),
    conda:
        "../envs/rag.yaml"
    params:
        corpus=corpus_params,
        code=script_digest("parse_markdown.py"),
        content=corpus_content,
    script:
        "../scripts/parse_markdown.py"


rule lock_wikipedia:
    output:
        "resources/{corpus}/wikipedia.lock.yaml",
    log:
        "logs/lock_wikipedia/{corpus}.log",
    wildcard_constraints:
        corpus=alternatives(corpora_of_source("wikipedia")),
    conda:
        "../envs/rag.yaml"
    resources:
        wikipedia=1,
    params:
        pins=lambda wildcards: canonical_json(
            {key: CORPORA[wildcards.corpus][key] for key in ("titles", "as_of")}
        ),
        code=script_digest("lock_wikipedia.py"),
    script:
        "../scripts/lock_wikipedia.py"


rule parse_wikipedia:
    input:
        lock="resources/{corpus}/wikipedia.lock.yaml",
    output:
        PARSED,
    log:
        "logs/parse/{corpus}.log",
    wildcard_constraints:
        corpus=alternatives(corpora_of_source("wikipedia")),
    conda:
        "../envs/rag.yaml"
    resources:
        wikipedia=1,
    params:
        corpus=corpus_params,
        code=script_digest("parse_wikipedia.py"),
        content=corpus_content,
    script:
        "../scripts/parse_wikipedia.py"


rule parse_beir:
    input:
        unpack(beir_inputs),
    output:
        parsed=PARSED,
        questions=QUESTIONS,
        qrels=DOCUMENT_QRELS,
    log:
        "logs/parse/{corpus}.log",
    benchmark:
        "benchmarks/logs/parse/{corpus}.tsv"
    wildcard_constraints:
        corpus=alternatives(corpora_of_source("beir")),
    conda:
        "../envs/rag.yaml"
    resources:
        mem_mb=2000,
    params:
        corpus=corpus_params,
        code=script_digest("parse_beir.py"),
        content=corpus_content,
    script:
        "../scripts/parse_beir.py"


rule corpus_statistics:
    input:
        parsed=expand(PARSED, corpus=CORPORA),
        questions=[questions_path(corpus) for corpus in LABELLED_CORPORA],
    output:
        documents=TABLE("corpus_statistics.csv"),
        questions=TABLE("questions_by_type.csv"),
    log:
        "logs/corpus_statistics.log",
    conda:
        "../envs/rag.yaml"
    params:
        corpora=list(CORPORA),
        labelled=LABELLED_CORPORA,
        code=script_digest("corpus_statistics.py"),
    script:
        "../scripts/corpus_statistics.py"
