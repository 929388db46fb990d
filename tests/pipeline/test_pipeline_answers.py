"""The answer rules end to end on the tiny corpus: tables, hand-checked values, re-runs."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.workdir import (
    make_workdir,
    planned_jobs,
    planned_outputs,
    read_config,
    snakemake,
    write_config,
)

ANSWERS = {
    "chunkers": ["sentences20"],
    "retrievers": ["bm25"],
    "k": 3,
    "threshold": 0.5,
    "abstention": {"thresholds": [0.0, 0.5, 1.0]},
    "summaries": {"window": 1000},
    "reader": {"similarity": "none"},
    "caller": "everyone",  # beta is restricted: the public caller would not read it
}
RESULTS = [
    "results/answers.csv",
    "results/answers_summary.csv",
    "results/reader_thresholds.csv",
    "results/abstention.csv",
    "results/figures/abstention.png",
    "results/summaries.csv",
    "results/routing.csv",
    "results/routing_metrics.csv",
]
TARGETS = [*RESULTS, "results/metrics.csv"]


@pytest.fixture(scope="module")
def built(build_pipeline):
    def prepare(workdir):
        config = read_config(workdir)
        config["answers"] = ANSWERS
        write_config(workdir, config)

    # Only what the answers need (and metrics.csv to compare formats): the rest of the DAG is
    # covered by test_pipeline_incremental.py.
    build = build_pipeline("answers", prepare=prepare, targets=TARGETS)
    return build.project, build.workdir


def read(workdir, name: str, reader: str | None = "extractive") -> pd.DataFrame:
    """One results table, by default only the spec generator's rows of the answer tables."""
    table = pd.read_csv(workdir / "results" / name)
    if reader is not None and "reader" in table.columns:
        table = table[table["reader"] == reader].reset_index(drop=True)
    return table


def test_every_table_is_written_and_nothing_is_left_to_do(built):
    project, workdir = built
    for path in RESULTS:
        assert (workdir / path).stat().st_size > 0, path
    result = snakemake(workdir, "-n", *TARGETS, snakefile=project / "Snakefile")
    assert "Nothing to be done" in result.stdout + result.stderr


def test_answers_table_has_a_row_per_question_and_prompt(built):
    _, workdir = built
    answers = read(workdir, "answers.csv")
    for column in (
        "corpus",
        "chunker",
        "retriever",
        "question_id",
        "type",
        "answerable",
        "answered",
        "abstained",
        "coverage",
        "answer",
        "cited_source",
        "quotes_evidence",
        "citation_passed",
        "support",
        "prompt_tokens",
        "prompt_tokens_cl100k",
    ):
        assert column in answers.columns, column
    # Five questions from the one ranked pair and five from the summary prompt.
    assert len(answers) == 10
    assert set(answers["chunker"]) == {"sentences20", "(lead summaries)"}
    assert (answers["answered"] != answers["abstained"]).all()
    assert (answers.loc[answers.answered, "citation_passed"]).all()  # verbatim quotes pass the check
    assert answers.loc[answers.abstained, "cited_source"].isna().all()


def test_hand_checked_answers(built):
    _, workdir = built
    answers = read(workdir, "answers.csv").set_index(["chunker", "question_id"])
    # "How many moons does Beta have?" keeps the terms moons and beta and wants a number.
    # Only sentences naming Beta's 42 moons (both labelled alternatives) hold all of that, so
    # the coverage is 1 and the answer quotes the evidence, whichever of them ranks first.
    ranked = answers.loc[("sentences20", "beta-moons")]
    assert ranked.answered and ranked.quotes_evidence and ranked.coverage == pytest.approx(1.0)
    assert "42 known moons" in ranked.answer
    # The summary prompt numbers the documents in id order: alpha is [1], beta [2].
    summary = answers.loc[("(lead summaries)", "beta-moons")]
    assert summary.answer == "Beta is a giant world of gas with 42 known moons [2]."
    assert summary.quotes_evidence and summary.sources == 2


def test_summary_table_counts_groups(built):
    _, workdir = built
    summary = read(workdir, "answers_summary.csv")
    ranked = summary[summary.chunker == "sentences20"].set_index("group")
    assert ranked.loc["all", "questions"] == 5
    assert ranked.loc["multi_document", "questions"] == 1  # alpha-vs-beta
    assert ranked.loc["single_document", "questions"] == 3
    assert ranked.loc["unanswerable", "questions"] == 1
    assert ranked.loc["all", "answered"] + ranked.loc["all", "abstained"] == 5
    leads = summary[summary.chunker == "(lead summaries)"].set_index("group")
    # Only alpha-orbit and beta-moons have every piece of evidence inside a lead.
    assert leads.loc["answerable", "all_evidence_in_prompt"] == 2


def test_summaries_table_counts_words_by_hand(built):
    _, workdir = built
    table = read(workdir, "summaries.csv").set_index("doc_id")
    # "Alpha is a small rocky world close to its star. It completes one orbit every 88.2 days."
    assert table.loc["alpha", "words"] == 17
    # "Beta is a giant world of gas with 42 known moons. Its day lasts 10.7 hours."
    assert table.loc["beta", "words"] == 16
    assert table.loc["(all)", "words"] == 33
    # alpha-orbit, one alternative of beta-moons and Beta's day in the comparison.
    assert table.loc["(all)", "evidence_pieces_in_summary"] == 3
    assert table.loc["(all)", "window_share"] == pytest.approx(table.loc["(all)", "tokens"] / 1000)


def test_routing_tables(built):
    _, workdir = built
    routing = read(workdir, "routing.csv").set_index("question_id")
    # Each answerable question names its planet, and only that planet's lead names it.
    answerable = routing[routing.group != "unanswerable"]
    assert answerable["routed_right"].all()
    assert routing.loc["beta-moons", "routed_document"] == "beta"
    assert pd.isna(routing.loc["beta-core", "routed_right"])
    metrics = read(workdir, "routing_metrics.csv")
    assert list(metrics.columns) == list(read(workdir, "metrics.csv").columns)
    assert set(metrics["retriever"]) == {"bm25_routed"}
    accuracy = metrics[metrics.metric == "routing_accuracy"]
    assert accuracy["value"].tolist() == [1.0] and accuracy["questions"].tolist() == [4]
    recall = metrics[(metrics.metric == "recall")].set_index("k")["value"]
    # The comparison needs two documents, and routing reads one: its recall is at most 1/2.
    per_question_ceiling = (3 + 0.5) / 4
    assert (recall <= per_question_ceiling + 1e-9).all()


def test_abstention_table(built):
    _, workdir = built
    table = read(workdir, "abstention.csv")
    assert sorted(table["threshold"].unique()) == [0.0, 0.5, 1.0]
    assert set(table["group"]) == {"answerable", "single_document", "multi_document", "unanswerable"}
    answerable = table[table.group == "answerable"].sort_values("threshold")
    assert answerable["answered"].is_monotonic_decreasing
    assert (answerable["correct"] <= answerable["answered"]).all()
    answers = read(workdir, "answers.csv")
    ranked = answers[(answers.chunker == "sentences20") & answers.answerable]
    at_half = answerable.set_index("threshold").loc[0.5]
    assert at_half["answered"] == ranked["answered"].sum()  # the configured threshold is 0.5
    assert at_half["correct"] == ranked["quotes_evidence"].sum()


def test_changing_the_threshold_reruns_only_the_answers(built):
    project, workdir = built
    original = (workdir / "config.yaml").read_text()
    config = read_config(workdir)
    config["answers"]["threshold"] = 0.4
    try:
        write_config(workdir, config)
        jobs = planned_jobs(workdir, project / "Snakefile")
        # The reader's jobs do not take the extractive threshold: its own is cross-validated.
        answer_jobs = {"answer": 1, "answer_from_summaries": 1, "answer_tables": 1, "abstention": 1}
        assert {rule: count for rule, count in jobs.items() if rule in answer_jobs} == answer_jobs
        # Nothing upstream of the answers, and none of the other answer experiments.
        assert not {"parse_markdown", "chunk", "label", "rank", "route", "summaries"} & set(jobs)
        assert not {"read_answers", "read_answers_from_summaries"} & set(jobs)
    finally:
        (workdir / "config.yaml").write_text(original)


def test_without_an_answers_section_nothing_is_answered(built, tmp_path):
    project, _ = built
    plain = make_workdir(tmp_path / "plain")
    outputs = planned_outputs(plain, project / "Snakefile")
    assert outputs and not any("answers" in path or "routing" in path for path in outputs)


def test_the_reader_rows_and_their_cross_validated_thresholds(built):
    _, workdir = built
    answers = read(workdir, "answers.csv", reader=None)
    assert sorted(answers["reader"].unique()) == ["extractive", "reader"]
    reader = answers[answers["reader"] == "reader"]
    assert len(reader) == 10
    # Each answer's threshold is its fold's; answered exactly when the score reaches it.
    assert ((reader["score"] >= reader["threshold"]) == reader["answered"]).all()
    assert (reader.loc[reader["answered"], "faithful"]).all()  # verbatim quotes are faithful
    thresholds = pd.read_csv(workdir / "results" / "reader_thresholds.csv")
    assert set(thresholds["reader"]) == {"reader"}
    assert (thresholds["fold"] == "all").sum() == 2  # sentences20/bm25 and the lead summaries
    summary = read(workdir, "answers_summary.csv", reader="reader").set_index(["chunker", "group"])
    for column in ("correct_share", "wrong_share", "abstained_share"):
        row = summary.loc[("sentences20", "all")]
        assert row[f"{column}_low"] <= row[column] <= row[f"{column}_high"]
