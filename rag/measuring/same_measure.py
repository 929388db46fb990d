"""Offline answers judged as the language models' are: the same questions, the same judge, one denominator.

The offline tables count an answer right when it quotes the evidence; the
language models' when the deterministic judge (:func:`rag.measuring.correctness.judge_answer`)
finds the reference answer's content in it. To put both side by side (the
opening of results/README.md), the offline answers of the development
questions are judged here by that same judge, against the reference answers
the language models' judged table holds, on its questions only.
"""

from __future__ import annotations

import pandas as pd

from rag.measuring.correctness import judge_answer
from rag.measuring.llm_tables import with_reference

# The columns of the judged offline rows: the llm judged table's names, the reader as the generator.
SAME_MEASURE_COLUMNS = ("corpus", "generator", "chunker", "retriever", "question_id", "answerable", "correct")


def offline_judged(answers: pd.DataFrame, judged: pd.DataFrame) -> pd.DataFrame:
    """The offline answers of the judged table's development questions, judged by the models' judge.

    ``answers`` is results' answers.csv (one row per corpus, chunker,
    retriever, reader and question); ``judged`` the language models'
    llm_answers_judged.csv. Only questions that the judged table counts
    (answerable, with a reference answer, development) are kept, each with
    that reference answer, so both are measured over the same denominator.
    A reader is named as ``generator``.
    """
    if answers is None or judged is None or answers.empty or judged.empty:
        return pd.DataFrame(columns=list(SAME_MEASURE_COLUMNS))
    development = judged[(judged["questions"] == "development") & with_reference(judged)]
    references = development.drop_duplicates(["corpus", "question_id"]).set_index(["corpus", "question_id"])[
        "reference_answer"
    ]
    keys = pd.MultiIndex.from_frame(answers[["corpus", "question_id"]])
    counted = answers[keys.isin(references.index)]
    rows = []
    for row in counted.itertuples(index=False):
        reference = str(references[(row.corpus, row.question_id)])
        answer = row.answer if isinstance(row.answer, str) else ""
        verdict = judge_answer(answer, reference, bool(row.answerable), bool(row.abstained))
        rows.append(
            {
                "corpus": row.corpus,
                "generator": row.reader,
                "chunker": row.chunker,
                "retriever": row.retriever,
                "question_id": row.question_id,
                "answerable": bool(row.answerable),
                "correct": bool(verdict.correct),
            }
        )
    return pd.DataFrame(rows, columns=list(SAME_MEASURE_COLUMNS))


def same_measure_tables(
    judged: pd.DataFrame, answers: pd.DataFrame | None
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The models' judged rows of the questions with a reference answer, and the offline ones judged alike.

    The two inputs of the opening of results/README.md
    (:func:`rag.evaluation.opening.opening_lines`); without offline answers
    the second is None.
    """
    counted = judged[with_reference(judged)]
    return counted, (None if answers is None else offline_judged(answers, counted))
