"""The checks' printed words and their measured rates (results/verdicts.csv) beside them."""

from __future__ import annotations

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.answering.verification import Verdicts, describe_verdicts
from rag.measuring.verdicts import (
    NO_RATE_FOR_OWN_DOCUMENTS,
    VERDICT_COLUMNS,
    measured_rate_lines,
    rag_ask_setup,
    read_verdicts,
)

FUZZ = settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def row(questions, passed, not_judged, correct, generator="reader", retriever="bm25_minilm"):
    judged = passed - not_judged
    share = correct / judged if judged else float("nan")
    return {
        "generator": generator,
        "questions": questions,
        "setup": rag_ask_setup(retriever),
        "answered": passed + 3,
        "faithful_and_responsive": passed,
        "faithful_and_responsive_not_judged": not_judged,
        "faithful_and_responsive_correct": correct,
        "verdicts_correct_share": share,
        "verdicts_correct_share_low": share - 0.1 if judged else float("nan"),
        "verdicts_correct_share_high": min(1.0, share + 0.1) if judged else float("nan"),
        "not_checked": "x",
    }


def test_no_check_reads_as_a_bare_yes_and_each_says_what_it_measured():
    for faithful in (True, False):
        for responsive in (True, False):
            lines = describe_verdicts(Verdicts(faithful, responsive, ("name",)))
            text = " ".join(lines)
            assert "yes" not in text.lower().split()
            assert "Faithful" not in text and "Responsive" not in text
            assert lines[0].startswith("Source check") and lines[1].startswith("Type check")
            assert ("cited source contains the answer's words and numbers" in lines[0]) == faithful
            assert ("holds a value of the asked type" in lines[1]) == responsive
            if faithful:
                assert "not checked" in lines[0] and "right" in lines[0]


def test_rates_come_from_the_held_out_files_only():
    table = pd.DataFrame(
        [
            row("heldout_questions_round3", 6, 0, 5),
            row("development", 78, 12, 53),
            row("heldout_questions", 17, 0, 15),
            row("development", 70, 10, 40, generator="extractive"),
            row("heldout_questions", 10, 0, 1, retriever="bm25_lsa_ivf"),
        ]
    )
    lines = measured_rate_lines(table, "reader", rag_ask_setup("bm25_minilm"))
    assert lines == [
        lines[0],
        lines[1],
    ] and lines[0].startswith("heldout_questions: right 15 of 17 (88 %")
    assert lines[1].startswith("heldout_questions_round3: right 5 of 6 (83 %")
    # The development questions, on which the thresholds were chosen, are never a rate.
    assert not any("development" in line or "53 of 66" in line for line in lines)
    only_development = measured_rate_lines(table, "extractive", rag_ask_setup("bm25_minilm"))
    assert len(only_development) == 1 and "not measured" in only_development[0]
    assert "right" not in only_development[0]


def test_on_a_users_own_documents_no_rate_is_printed_and_the_line_says_how_to_get_one():
    table = pd.DataFrame([row("heldout_questions", 17, 0, 15)])
    lines = measured_rate_lines(table, "reader", rag_ask_setup("bm25_minilm"), bundled=False)
    assert lines == [NO_RATE_FOR_OWN_DOCUMENTS]
    assert "no rate is measured for these documents" in lines[0]
    assert "labelled question file" in lines[0] and "pipeline" in lines[0]
    assert "right" not in lines[0].split(":")[0] and "15 of 17" not in lines[0]
    assert measured_rate_lines(None, "reader", "rag ask bm25", bundled=False) == [NO_RATE_FOR_OWN_DOCUMENTS]


def test_missing_table_setup_and_empty_files_say_so():
    assert "not there" in measured_rate_lines(None, "reader", "rag ask bm25")[0]
    table = pd.DataFrame([row("heldout_a", 0, 0, 0)])
    assert measured_rate_lines(table, "reader", rag_ask_setup("bm25_minilm")) == [
        "heldout_a: no answer passed both checks"
    ]
    assert "not measured for hosted" in measured_rate_lines(table, "hosted", rag_ask_setup("bm25_minilm"))[0]


def test_read_verdicts_refuses_a_file_that_is_not_the_table(tmp_path):
    assert read_verdicts(tmp_path / "missing.csv") is None
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    assert read_verdicts(tmp_path / "other.csv") is None
    pd.DataFrame([row("heldout_a", 5, 1, 3)])[VERDICT_COLUMNS].to_csv(tmp_path / "v.csv", index=False)
    assert measured_rate_lines(read_verdicts(tmp_path / "v.csv"), "reader", "rag ask bm25_minilm")[
        0
    ].startswith("heldout_a: right 3 of 4")


@FUZZ
@given(text=st.text(max_size=400))
def test_any_file_read_back_gives_a_table_or_none_and_lines_never_fail(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("verdicts") / "verdicts.csv"
    path.write_text(text, encoding="utf-8")
    table = read_verdicts(path)
    assert table is None or set(VERDICT_COLUMNS[:-1]) <= set(table.columns)
    lines = measured_rate_lines(table, "reader", "rag ask bm25_minilm")
    assert lines and all(isinstance(line, str) for line in lines)
