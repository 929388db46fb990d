"""Judges of answers against the hand labels: kappa, the verdict rule, the label file, a stub judge."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.answering.judging import (
    CORRECTNESS_LABELS,
    LABEL_COLUMNS,
    SUPPORT_LABELS,
    UNREAD,
    LabelError,
    calibration_table,
    cohen_kappa,
    deterministic_verdicts,
    judge_conversations,
    judge_from_entry,
    model_verdicts,
    read_labels,
    read_verdict,
)
from rag.kinds import GENERATOR_KINDS, defaults
from rag.models.client import Completion

LABELS = Path(__file__).resolve().parents[3] / "resources" / "answer_labels" / "labels.csv"
FUZZ = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
JUDGE = judge_from_entry("stub", {**defaults(GENERATOR_KINDS)["judge"], "base_url": "http://127.0.0.1:9/v1"})


def always(text: str):
    def complete(conversations):
        return [Completion(text, 10, 1, 0.1, cached=False) for _ in conversations]

    return complete


@pytest.mark.parametrize("seed", range(5))
def test_kappa_matches_scikit_learn(seed):
    from sklearn import metrics

    rng = np.random.default_rng(seed)
    first = rng.random(60) < 0.4
    second = np.where(rng.random(60) < 0.7, first, rng.random(60) < 0.5)
    assert cohen_kappa(first, second) == pytest.approx(metrics.cohen_kappa_score(first, second))


def test_the_verdict_is_the_first_verdict_word():
    assert read_verdict("Yes.") == "yes"
    assert read_verdict("No, it is wrong") == "no"
    assert read_verdict("The answer is correct") == "yes"
    assert read_verdict("incorrect") == "no"
    assert read_verdict("Maybe") == UNREAD
    assert read_verdict("") == UNREAD


def test_the_committed_labels_cover_what_the_issue_asks():
    labels = read_labels(LABELS)
    assert len(labels) >= 200
    assert labels["generator"].nunique() >= 3
    assert {"none"} < set(labels["retriever"])  # closed book and with sources
    assert "development" in set(labels["questions"]) and labels["questions"].nunique() >= 3
    assert labels["reason"].str.strip().ne("").all()
    assert labels["correctness"].nunique() == len(CORRECTNESS_LABELS)
    # Answers that cite nothing cannot be supported by what they cite.
    assert (labels.loc[labels["cited"].str.strip() == "", "supported"] == "no").all()


def test_a_stub_judge_that_always_says_correct_has_kappa_near_zero():
    labels = read_labels(LABELS)
    verdicts = model_verdicts(labels, JUDGE, {}, always("Yes"))
    row = (
        calibration_table(labels, {"always": verdicts})
        .set_index(["task", "answers_of"])
        .loc[("correct", "all")]
    )
    assert row.judge_yes == len(labels) and row.kappa == pytest.approx(0.0, abs=1e-9)
    # It agrees as often as the labels say "correct", and no more.
    assert row.agreement == pytest.approx((labels["correctness"] == "correct").mean())
    assert row.kappa_low <= 0.0 <= row.kappa_high


def test_a_judge_that_copies_the_labels_has_kappa_one_and_a_contrary_one_below_zero():
    labels = read_labels(LABELS)
    copy = pd.DataFrame(
        {
            "item": labels["item"],
            "correct": np.where(labels["correctness"] == "correct", "yes", "no"),
            "supported": labels["supported"],
        }
    )
    contrary = copy.assign(correct=np.where(copy["correct"] == "yes", "no", "yes"))
    table = calibration_table(labels, {"copy": copy, "contrary": contrary}).set_index(
        ["judge", "task", "answers_of"]
    )
    assert table.loc[("copy", "correct", "all"), "kappa"] == pytest.approx(1.0)
    assert table.loc[("copy", "correct", "all"), "judge_yes_label_no"] == 0
    assert table.loc[("contrary", "correct", "all"), "kappa"] < 0
    counts = table.loc[("contrary", "correct", "all")]
    assert counts.both_yes + counts.judge_yes_label_no + counts.judge_no_label_yes + counts.both_no == len(
        labels
    )


def test_only_citing_answers_are_asked_about_support_and_unread_replies_count_as_no():
    labels = read_labels(LABELS)
    conversations, keys = judge_conversations(labels, JUDGE, {})
    citing = int((labels["cited"].str.strip() != "").sum())
    assert len(conversations) == len(labels) + citing
    verdicts = model_verdicts(labels, JUDGE, {}, always("hmm"))
    assert (verdicts["correct"] == UNREAD).all() and (verdicts["supported"] == UNREAD).sum() == citing
    row = calibration_table(labels, {"x": verdicts}).set_index(["task", "answers_of"]).loc[("correct", "all")]
    assert row.unread == len(labels) and row.judge_yes == 0


def test_the_deterministic_judge_reads_the_cited_chunks():
    labels = pd.DataFrame(
        [
            {
                **dict.fromkeys(LABEL_COLUMNS, ""),
                "item": "1",
                "generator": "g",
                "question": "How long?",
                "reference": "6.4 Earth days",
                "answer": "A day lasts 6.4 Earth days [1].",
                "cited": "1",
                "cited_chunks": "c1",
                "correctness": "correct",
                "supported": "yes",
                "reason": "r",
            },
            {
                **dict.fromkeys(LABEL_COLUMNS, ""),
                "item": "2",
                "generator": "g",
                "question": "How long?",
                "reference": "6.4 Earth days",
                "answer": "A day lasts 9 Earth days [1].",
                "cited": "1",
                "cited_chunks": "c1",
                "correctness": "wrong",
                "supported": "no",
                "reason": "r",
            },
        ]
    )
    verdicts = deterministic_verdicts(labels, {"c1": "A day on Pluto lasts 6.4 Earth days."})
    assert list(verdicts["correct"]) == ["yes", "no"] and list(verdicts["supported"]) == ["yes", "no"]


def test_label_file_mistakes_are_one_line_naming_the_line(tmp_path):
    frame = read_labels(LABELS).head(3).copy()
    frame.loc[1, "correctness"] = "right"
    path = tmp_path / "labels.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(LabelError, match=r"line 3: correctness 'right'"):
        read_labels(path)
    frame.drop(columns=["reason"]).to_csv(path, index=False)
    with pytest.raises(LabelError, match="missing column 'reason'"):
        read_labels(path)


@FUZZ
@given(
    correctness=st.lists(st.sampled_from([*CORRECTNESS_LABELS, "x", ""]), min_size=1, max_size=6),
    supported=st.sampled_from([*SUPPORT_LABELS, "maybe"]),
    junk=st.text(max_size=30),
)
def test_any_label_file_is_read_or_refused_in_one_line(tmp_path_factory, correctness, supported, junk):
    rows = [
        {**dict.fromkeys(LABEL_COLUMNS, junk), "item": str(n), "correctness": c, "supported": supported}
        for n, c in enumerate(correctness)
    ]
    path = tmp_path_factory.mktemp("labels") / "labels.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    try:
        labels = read_labels(path)
    except LabelError as error:
        assert "\n" not in str(error) and str(path) in str(error)
    else:
        assert set(labels["correctness"]) <= set(CORRECTNESS_LABELS)


def test_a_judge_entry_takes_its_kinds_defaults_and_a_misspelled_key_is_one_line():
    from rag.answering.config_checks import canonical_generators
    from rag.config import ConfigError

    entry = canonical_generators(
        {"generators": {"j": {"kind": "judge", "base_url": "http://127.0.0.1:9/v1"}}}
    )["j"]
    judge = judge_from_entry("j", entry)
    assert (
        judge.sampling.max_tokens == 4
        and "{reference}" in judge.correct_user
        and "{sources}" in judge.supported_user
    )
    with pytest.raises(ConfigError, match=r"\['correct_prompt'\]: not a parameter of kind 'judge'"):
        canonical_generators({"generators": {"j": {"kind": "judge", "correct_prompt": "x"}}})


@FUZZ
@given(
    entry=st.dictionaries(
        st.sampled_from(
            ["base_url", "model", "max_tokens", "temperature", "correct_user", "timeout", "bogus"]
        ),
        st.one_of(st.integers(-5, 50), st.text(max_size=12), st.none(), st.floats(allow_nan=False)),
        max_size=4,
    )
)
def test_any_judge_entry_is_canonical_or_one_line_error(entry):
    from rag.answering.config_checks import canonical_generators
    from rag.config import ConfigError

    try:
        canonical = canonical_generators({"generators": {"j": {"kind": "judge", **entry}}})["j"]
    except ConfigError as error:
        assert "\n" not in str(error) and str(error).startswith("config['generators']['j']")
    else:
        assert canonical["kind"] == "judge" and judge_from_entry("j", canonical).name == "j"


def test_a_judge_prompt_with_a_wrong_placeholder_is_refused_naming_the_key():
    from rag.answering.config_checks import canonical_generators
    from rag.config import ConfigError

    with pytest.raises(ConfigError, match=r"\['correct_user'\]: must hold exactly the placeholders"):
        canonical_generators({"generators": {"j": {"kind": "judge", "correct_user": "{question} {answr}"}}})
    with pytest.raises(ConfigError, match=r"\['system'\]: not a template"):
        canonical_generators({"generators": {"j": {"kind": "judge", "system": "a { b"}}})
