# Citation accuracy and the citation check held to the claim-level hand labels
# (resources/answer_labels/claims.csv; rag/measuring/citation_accuracy.py):
# per model and setting, the share of citation markers whose source supports
# their claim and the share of answers whose every claim a cited source
# supports, and the check's precision and recall at flagging answers with an
# unsupported claim (held-out labels for the figures, development ones the
# check was designed on).


if llm_answer_files():

    rule citation_tables:
        input:
            judged=TABLE("llm_answers_judged.csv"),
            chunks=llm_chunk_files(),
            questions=lambda wildcards: sorted(set(llm_question_files().values())),
            labels=claim_label_files(),
        output:
            accuracy=TABLE("citation_accuracy.csv"),
            check=TABLE("citation_check.csv"),
        log:
            "logs/citation_tables.log",
        conda:
            "../envs/rag.yaml"
        params:
            question_files=lambda wildcards: llm_question_files(),
            code=script_digest("citation_tables.py"),
        script:
            "../scripts/citation_tables.py"
