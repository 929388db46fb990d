"""The language models' measurements end to end on the tiny corpus, with a stub endpoint.

The stub answers every question with the same sentence, which states the
reference answer of exactly one question ("88.2 days"): that question is
correct closed book (from memory) and from BM25's chunks (from the sources),
every other answerable one is wrong or unjudged, and the unanswerable one is
answered anyway.
"""

from __future__ import annotations

import pandas as pd
import pytest

from tests.pipeline.test_pipeline_llm import configure, stub
from tests.workdir import copy_project, make_workdir, snakemake

TABLES = [
    "llm_answers_judged",
    "llm_answers_summary",
    "llm_closed_book",
    "citation_check",
    "citation_accuracy",
    "verdicts",
]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    server = stub("Alpha orbits in 88.2 days [1].")
    root = tmp_path_factory.mktemp("llm-measure")
    project = copy_project(root / "project")
    workdir = make_workdir(root / "work")
    configure(workdir, {"kind": "llm", "base_url": server.url + "/v1", "model": "stub"})
    targets = [f"results/{name}.csv" for name in TABLES]
    snakemake(workdir, "--cores", "2", *targets, snakefile=project / "Snakefile")
    yield {name: pd.read_csv(workdir / f"results/{name}.csv") for name in TABLES}
    server.close()


def test_the_stub_is_judged_against_the_reference_answers(measured):
    judged = measured["llm_answers_judged"]
    orbit = judged[judged["reference_answer"] == "88.2 days"]
    assert len(orbit) == 2 and orbit["correct"].all()
    by_setting = orbit.set_index("retriever")
    assert by_setting.loc["none", "correct_from_memory"]  # closed book: from memory by definition
    assert (
        by_setting.loc["bm25", "reference_in_sources"] and not by_setting.loc["bm25", "correct_from_memory"]
    )
    unanswerable = judged[~judged["answerable"]]
    assert set(unanswerable["outcome"]) == {"answered_unanswerable"}
    assert not judged.loc[judged["answerable"] & (judged["reference_answer"] != "88.2 days"), "correct"].any()


def test_the_summary_comparison_citation_and_verdict_tables_agree(measured):
    summary = measured["llm_answers_summary"].set_index("retriever")
    judged = measured["llm_answers_judged"]
    for retriever, row in summary.iterrows():
        of_setting = judged[judged["retriever"] == retriever]
        assert row.correct == int(of_setting["correct"].sum()) == 1
        assert row.question_count == len(of_setting) and row.refused == 0
    comparisons = measured["llm_closed_book"].set_index("outcome")
    assert (
        comparisons.loc["correct", "difference"] == 0.0
        and comparisons.loc["correct", "p_randomization"] == 1.0
    )
    assert comparisons.loc["correct_from_memory", "difference"] < 0
    # No hand label is of this run's answers: the check is measured from the check alone.
    assert measured["citation_check"].empty
    accuracy = measured["citation_accuracy"].set_index("retriever")
    assert set(accuracy["source"]) == {"check"}
    assert accuracy.loc["bm25", "answers"] == len(judged[judged["retriever"] == "bm25"])
    # Closed book, the stub still cites [1]: a marker no source stands behind.
    assert accuracy.loc["none", "supporting_markers"] == 0 and accuracy.loc["none", "covered"] == 0
    verdicts = measured["verdicts"]
    assert set(verdicts["generator"]) == {"model"}
    assert (verdicts["faithful_and_responsive_correct"] <= verdicts["faithful_and_responsive"]).all()
