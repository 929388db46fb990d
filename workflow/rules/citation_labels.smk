# Citation accuracy and the citation check held to the claim-level hand labels
# (resources/answer_labels/claims.csv; rag/answering/citation_accuracy.py):
# per model and setting, the share of citation markers whose source supports
# their claim and the share of answers whose every claim a cited source
# supports, and the check's precision and recall at flagging answers with an
# unsupported claim (held-out labels for the figures, development ones the
# check was designed on).


# The labels are the project's, read from every working directory: only the
# labelled answers that are rows of this run's table count (the others are left
# out). A copy of the workflow without them measures from the check alone.
CLAIM_LABELS = PROJECT_ROOT / "resources" / "answer_labels"


def claim_label_files():
    """The claim labels (answers, then claims), or none when the project holds none."""
    files = [CLAIM_LABELS / "claim_answers.csv", CLAIM_LABELS / "claims.csv"]
    return [str(path) for path in files] if all(path.exists() for path in files) else []


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
