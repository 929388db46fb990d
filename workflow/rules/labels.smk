# Evidence spans to relevant chunks (qrels) per (corpus, chunker), the
# pieces of evidence each chunker cuts, and, for span-labelled corpora
# evaluated at the document level, the documents holding the evidence.
# BEIR corpora bring their own document judgements (rule parse_beir).


rule label:
    input:
        parsed=PARSED,
        chunks=CHUNKS,
        questions=questions_file,
    output:
        qrels=QRELS,
        cuts=CUTS,
    log:
        "logs/label/{corpus}/{chunker}.log",
    wildcard_constraints:
        corpus=alternatives(SPAN_CORPORA),
    conda:
        "../envs/rag.yaml"
    params:
        chunker=chunker_params,
        code=script_digest("label.py"),
    script:
        "../scripts/label.py"


rule evidence_cuts:
    input:
        [
            CUTS.format(corpus=corpus, chunker=chunker)
            for corpus, chunker in corpus_chunker_pairs(SPAN_CORPORA)
        ],
    output:
        f"{RESULTS}/evidence_cuts.csv",
    log:
        "logs/evidence_cuts.log",
    conda:
        "../envs/rag.yaml"
    params:
        pairs=corpus_chunker_pairs(SPAN_CORPORA),
        code=script_digest("evidence_cuts.py"),
    script:
        "../scripts/evidence_cuts.py"


rule document_qrels:
    input:
        parsed=PARSED,
        questions=questions_file,
    output:
        DOCUMENT_QRELS,
    log:
        "logs/document_qrels/{corpus}.log",
    wildcard_constraints:
        corpus=alternatives([name for name in SPAN_CORPORA if LEVELS[name] == "document"]),
    conda:
        "../envs/rag.yaml"
    params:
        code=script_digest("document_qrels.py"),
    script:
        "../scripts/document_qrels.py"
