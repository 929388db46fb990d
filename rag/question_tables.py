"""Questions and document judgements as tables, and a corpus's questions read from YAML or parquet."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rag.formats.files import read_yaml
from rag.formats.tables import reading_table
from rag.labels import DocumentJudgement, Question, parse_questions

if TYPE_CHECKING:
    import pandas as pd


QUESTION_COLUMNS = ["question_id", "text", "type", "answerable"]


JUDGEMENT_COLUMNS = ["question_id", "doc_id", "gain"]


def questions_to_frame(questions: Sequence) -> pd.DataFrame:
    """Questions without evidence spans (BEIR queries) as a table."""
    import pandas as pd

    rows = [(q.question_id, q.text, q.type, bool(q.answerable)) for q in questions]
    frame = pd.DataFrame(rows, columns=QUESTION_COLUMNS)
    return frame.astype({"question_id": str, "text": str, "type": str, "answerable": bool})


def read_questions(path: str | os.PathLike) -> list:
    """The questions of a corpus: a labelled YAML file, or a parquet table of queries.

    Span-labelled corpora keep their questions in YAML; BEIR corpora get a
    table written by their parse rule, whose questions carry no spans (their
    labels are document judgements).
    """
    if str(path).endswith(".parquet"):
        import pandas as pd

        with reading_table(path):
            frame = pd.read_parquet(path, columns=QUESTION_COLUMNS)
        return [
            Question(str(row.question_id), str(row.text), str(row.type), bool(row.answerable))
            for row in frame.itertuples(index=False)
        ]
    return parse_questions(read_yaml(path), str(path))


def judgements_to_frame(judgements: Sequence) -> pd.DataFrame:
    import pandas as pd

    rows = [(j.question_id, j.doc_id, int(j.gain)) for j in judgements]
    frame = pd.DataFrame(rows, columns=JUDGEMENT_COLUMNS)
    return frame.astype({"question_id": str, "doc_id": str, "gain": "int64"})


def judgements_from_frame(frame: pd.DataFrame) -> list:
    return [
        DocumentJudgement(str(row.question_id), str(row.doc_id), int(row.gain))
        for row in frame[JUDGEMENT_COLUMNS].itertuples(index=False)
    ]
