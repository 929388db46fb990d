# Evidence spans to relevant chunks (qrels) per (corpus, chunker), and the
# pieces of evidence each chunker cuts.


rule label:
    input:
        parsed="work/parsed/{corpus}.parquet",
        chunks="work/chunks/{corpus}/{chunker}.parquet",
        questions=questions_file,
    output:
        qrels="work/qrels/{corpus}/{chunker}.parquet",
        cuts="work/cuts/{corpus}/{chunker}.parquet",
    log:
        "logs/label/{corpus}/{chunker}.log",
    params:
        chunker=chunker_params,
        code=rag_digest("labels", "chunking", "documents", "text", "provenance"),
    script:
        "../scripts/label.py"


rule evidence_cuts:
    input:
        [
            f"work/cuts/{corpus}/{chunker}.parquet"
            for corpus, chunker in corpus_chunker_pairs()
        ],
    output:
        "results/evidence_cuts.csv",
    log:
        "logs/evidence_cuts.log",
    params:
        pairs=corpus_chunker_pairs(),
        code=rag_digest("statistics"),
    script:
        "../scripts/evidence_cuts.py"
