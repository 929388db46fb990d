# Citation accuracy and the citation check held to the claim-level hand labels
# (resources/answer_labels/claims.csv; rag/answering/citation_accuracy.py):
# per model and setting, the share of citation markers whose source supports
# their claim and the share of answers whose every claim a cited source
# supports, and the check's precision and recall at flagging answers with an
# unsupported claim (held-out labels for the figures, development ones the
# check was designed on).


def llm_question_files():
    """Every question set the llm answer files answer, by corpus and name: their question file."""
    pairs = sorted({tuple(Path(path).parts[2:4]) for path in llm_answer_files()})
    return {f"{corpus}/{questions}": llm_questions_path(corpus, questions) for corpus, questions in pairs}


if llm_answer_files():

    rule citation_tables:
        input:
            judged=TABLE("llm_answers_judged.csv"),
            chunks=llm_chunk_files(),
            questions=lambda wildcards: sorted(set(llm_question_files().values())),
            answers="resources/answer_labels/claim_answers.csv",
            claims="resources/answer_labels/claims.csv",
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
