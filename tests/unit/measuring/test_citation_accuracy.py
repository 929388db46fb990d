"""Claim-level labels, citation accuracy and the citation check held to the labels."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from rag.answering.verification import check_answer
from rag.measuring.citation_accuracy import (
    ANSWER_COLUMNS,
    ClaimLabelError,
    ClaimLabels,
    Sources,
    answer_support,
    citation_accuracy_table,
    citation_check_table,
    labels_of_table,
    read_claim_labels,
    wilson_interval,
)
from rag.question_tables import read_questions

ROOT = Path(__file__).resolve().parents[3]
ANSWERS = ROOT / "resources" / "answer_labels" / "claim_answers.csv"
CLAIMS = ROOT / "resources" / "answer_labels" / "claims.csv"
QUESTION_FILES = {
    "development": "questions.yaml",
    "heldout_questions": "heldout_questions.yaml",
    "heldout_questions_round3": "heldout_questions_round3.yaml",
    "heldout_questions_round4": "heldout_questions_round4.yaml",
}


@pytest.fixture(scope="module")
def labels() -> ClaimLabels:
    return read_claim_labels(ANSWERS, CLAIMS)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return pd.read_csv(ROOT / "results" / "llm_answers_judged.csv", dtype=str, keep_default_na=False)


# --------------------------------------------------------------------------
# The committed labels
# --------------------------------------------------------------------------


def test_every_labelled_answer_is_its_table_row_word_for_word(labels, table):
    llm = table.set_index(["corpus", "questions", "generator", "chunker", "retriever", "k", "question_id"])
    readers = pd.read_csv(ROOT / "results" / "answers.csv", dtype=str, keep_default_na=False)
    readers = readers.set_index(["corpus", "reader", "chunker", "retriever", "sources", "question_id"])
    for answer in labels.answers.itertuples(index=False):
        if answer.table == "results/answers.csv":  # the offline readers, on the development questions
            assert answer.questions == "development"
            row = readers.loc[
                (
                    answer.corpus,
                    answer.generator,
                    answer.chunker,
                    answer.retriever,
                    answer.k,
                    answer.question_id,
                )
            ]
            assert row["answer"] == answer.answer and row["cited_source"] == answer.cited, answer.item
            assert row["answerable"] == answer.answerable, answer.item
            continue
        assert answer.table == "results/llm_answers_judged.csv", answer.item
        key = (
            answer.corpus,
            answer.questions,
            answer.generator,
            answer.chunker,
            answer.retriever,
            answer.k,
            answer.question_id,
        )
        row = llm.loc[key]
        assert row["answer"] == answer.answer, answer.item
        assert row["reference_answer"] == answer.reference, answer.item
        assert row["answerable"] == answer.answerable, answer.item
        assert row["cited_sources"] == answer.cited, answer.item
        prompt_ids = row["source_chunk_ids"].split()
        named = [prompt_ids[int(number) - 1] for number in answer.cited.split()]
        assert answer.cited_chunks.split() == named, answer.item


def test_every_earlier_label_has_its_claims():
    earlier = pd.read_csv(
        ROOT / "resources" / "answer_labels" / "labels.csv", dtype=str, keep_default_na=False
    )
    labels = read_claim_labels(ANSWERS, CLAIMS)
    answers = labels.answers.set_index("item")
    for row in earlier.itertuples(index=False):
        assert answers.loc[row.item, "answer"] == row.answer, row.item
        assert answers.loc[row.item, "cited_chunks"] == row.cited_chunks, row.item
    # labels.csv's supported is the claim readings' verdict: every claim supported by a cited source.
    covered = answer_support(labels).set_index("item")["covered"]
    read = earlier.set_index("item")["supported"] == "yes"
    assert (covered.loc[read.index] == read).all()


def test_every_labelled_question_is_its_files_question(labels):
    texts = {}
    for name, file in QUESTION_FILES.items():
        for question in read_questions(ROOT / "resources" / "solar_system" / file):
            texts[(name, question.question_id)] = question.text
    for answer in labels.answers.itertuples(index=False):
        assert texts[(answer.questions, answer.question_id)] == answer.question, answer.item


def test_the_labels_cover_what_was_asked(labels):
    answers = labels.answers
    qwen = answers[answers["generator"].isin(["qwen", "qwen_cited"])]
    assert len(qwen) >= 300
    assert set(qwen["generator"]) == {"qwen", "qwen_cited"}
    assert {"none", "bm25", "rrf_bm25_minilm"} <= set(qwen["retriever"])
    assert set(qwen["questions"]) == set(QUESTION_FILES)
    split = qwen["questions"].map(lambda name: "development" if name == "development" else "heldout")
    assert (split == qwen["split"]).all()
    # Every answer split into claims; every claim read for correctness.
    assert set(labels.claims["item"]) == set(answers["item"])


# --------------------------------------------------------------------------
# Reading the label files
# --------------------------------------------------------------------------


def _write(tmp_path, answers: list[dict], claims: list[dict]) -> tuple[Path, Path]:
    answer_path, claim_path = tmp_path / "answers.csv", tmp_path / "claims.csv"
    pd.DataFrame(answers, columns=list(ANSWER_COLUMNS)).to_csv(answer_path, index=False)
    pd.DataFrame(claims, columns=["item", "claim", "text", "correctness", "citations", "note"]).to_csv(
        claim_path, index=False
    )
    return answer_path, claim_path


def _answer(item="1", cited="1", split="heldout", retriever="bm25", answer="Deimos [1]") -> dict:
    return {
        "item": item,
        "split": split,
        "table": "t",
        "corpus": "c",
        "questions": "q",
        "generator": "g",
        "chunker": "sentences100" if retriever != "none" else "none",
        "retriever": retriever,
        "k": "5",
        "question_id": f"q{item}",
        "answerable": "True",
        "question": "Which moon?",
        "reference": "Deimos",
        "answer": answer,
        "cited": cited,
        "cited_chunks": " ".join(f"c{number}" for number in cited.split()),
        "correctness": "correct",
    }


def _claim(item="1", claim="1", correctness="correct", citations="1:supports") -> dict:
    return {
        "item": item,
        "claim": claim,
        "text": "t",
        "correctness": correctness,
        "citations": citations,
        "note": "",
    }


@pytest.mark.parametrize(
    ("claims", "message"),
    [
        ([_claim(correctness="right")], "correctness 'right'"),
        ([_claim(citations="2:supports")], "source [2] is not cited"),
        ([_claim(citations="1:maybe")], "citations: '1:maybe'"),
        ([_claim(item="9")], "item '9' is not in"),
        ([_claim(), _claim()], "claim '1' is not a new number"),
        ([_claim(citations="")], "marker [1] has no label"),
    ],
)
def test_a_bad_label_is_refused_in_one_line_naming_the_file(tmp_path, claims, message):
    answers, claim_path = _write(tmp_path, [_answer()], claims)
    with pytest.raises(ClaimLabelError) as error:
        read_claim_labels(answers, claim_path)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert str(tmp_path) in str(error.value)


def test_a_bad_split_and_a_missing_column_are_refused(tmp_path):
    answers, claims = _write(tmp_path, [_answer(split="test")], [_claim()])
    with pytest.raises(ClaimLabelError, match="line 2: split"):
        read_claim_labels(answers, claims)
    answers, claims = _write(tmp_path, [{**_answer(), "correctness": "right"}], [_claim()])
    with pytest.raises(ClaimLabelError, match="line 2: correctness"):
        read_claim_labels(answers, claims)
    pd.DataFrame({"item": ["1"]}).to_csv(answers, index=False)
    with pytest.raises(ClaimLabelError, match="missing column 'split'"):
        read_claim_labels(answers, claims)


_CELL = st.text(alphabet='0123:supotrelacdwng ,"\n', max_size=12)


@seed(50)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.lists(_CELL, min_size=6, max_size=6), max_size=4), raw=st.binary(max_size=60))
def test_any_claim_file_is_read_or_refused_in_one_line(tmp_path, rows, raw):
    answers, claims = _write(tmp_path, [_answer(), _answer(item="2", cited="1 2")], [])
    frame = pd.DataFrame(rows, columns=["item", "claim", "text", "correctness", "citations", "note"])
    for content in (frame.to_csv(index=False).encode(), raw):
        claims.write_bytes(content)
        try:
            read_claim_labels(answers, claims)
        except ClaimLabelError as error:
            assert "\n" not in str(error) and str(claims) in str(error)


# --------------------------------------------------------------------------
# What the labels say
# --------------------------------------------------------------------------


def _labels(answers: list[dict], claims: list[dict]) -> ClaimLabels:
    return ClaimLabels(pd.DataFrame(answers), pd.DataFrame(claims))


def test_an_answer_is_unsupported_when_one_claim_has_no_supporting_source():
    labels = _labels(
        [
            _answer("1", "1 2"),
            _answer("2", "1"),
            _answer("3", ""),
            _answer("4", "1"),
        ],
        [
            _claim("1", "1", citations="1:related 2:supports"),
            _claim("1", "2", citations="1:supports"),
            _claim("2", "1", citations="1:supports"),
            _claim("2", "2", citations=""),  # a claim without a marker
            _claim("3", "0", correctness="wrong", citations=""),  # a refusal
            _claim("4", "1", correctness="wrong", citations="1:supports"),  # wrong yet supported
        ],
    )
    support = answer_support(labels).set_index("item")
    assert support["unsupported"].to_dict() == {"1": False, "2": True, "3": False, "4": False}
    assert support["covered"].to_dict() == {"1": True, "2": False, "3": False, "4": True}
    assert support.loc["3", "refused"] and support.loc["1", "markers"] == 3
    assert support.loc["1", "supporting_markers"] == 2


def test_the_checks_precision_and_recall_count_the_labels():
    answers = [
        _answer("1", "1", answer="Deimos [1]"),  # supported, passes
        _answer("2", "1", answer="Phobos [1]"),  # unsupported, flagged
        _answer("3", "1", answer="Deimos [1]"),  # unsupported by the label, passes: a miss
        _answer("4", "1", answer="Deimos [1]"),  # supported, yet the source lacks the word: a false flag
        _answer("5", "", retriever="none", answer="Deimos"),  # closed book: left out
    ]
    claims = [
        _claim("1"),
        _claim("2", correctness="wrong", citations="1:unrelated"),
        _claim("3", citations="1:related"),
        _claim("4"),
        _claim("5", citations=""),
    ]
    texts = {"1": "Deimos is the outer moon.", "2": "Deimos is the outer moon.", "3": "Deimos is small."}
    texts["4"] = "The outer moon is small."

    def sources_of(answer):
        return Sources({1: texts[answer["item"]]}, {1: "Mars"})

    table = citation_check_table(_labels(answers, claims), sources_of)
    pooled = table[(table["questions"] == "all") & (table["rule"] == "anchored")].iloc[0]
    assert (pooled.answers, pooled.unsupported, pooled.flagged, pooled.flagged_unsupported) == (4, 2, 2, 1)
    assert pooled.precision == pytest.approx(1 / 2) and pooled.recall == pytest.approx(1 / 2)
    assert pooled.precision_low < pooled.precision < pooled.precision_high


def test_accuracy_comes_from_the_labels_and_from_the_check_marked():
    answers = [_answer("1", "1 2", answer="Deimos is the outer moon [1]. It is small [2].")]
    claims = [_claim("1", "1", citations="1:supports"), _claim("1", "2", citations="2:unrelated")]
    judged = pd.DataFrame([{**_answer("1", "1 2"), "abstained": False, "source_chunk_ids": "a b"}])
    judged["answer"] = answers[0]["answer"]
    sources = Sources({1: "Deimos is the outer moon of Mars.", 2: "Phobos is large."}, {1: "Mars", 2: "Mars"})
    table = citation_accuracy_table(
        judged, _labels(answers, claims), lambda row: sources, lambda row: "Which moon?"
    ).set_index("source")
    assert table.loc["labels", "markers"] == 2 and table.loc["labels", "accuracy"] == 0.5
    assert table.loc["labels", "coverage"] == 0.0
    assert table.loc["check", "supporting_markers"] == 1 and table.loc["check", "covered"] == 0


def test_a_label_of_another_run_is_refused(labels, table):
    changed = table.copy()
    first = labels.answers.iloc[0]
    mask = (changed["questions"] == first["questions"]) & (changed["question_id"] == first["question_id"])
    mask &= (changed["generator"] == first["generator"]) & (changed["retriever"] == first["retriever"])
    changed.loc[mask, "answer"] = "something else"
    of_table = labels.answers["table"] == "results/llm_answers_judged.csv"
    assert len(labels_of_table(labels, table).answers) == int(of_table.sum())
    with pytest.raises(ClaimLabelError, match=f"item {first['item']}: the answer differs"):
        labels_of_table(labels, changed)
    other = table.assign(corpus="another")
    assert labels_of_table(labels, other).answers.empty


# --------------------------------------------------------------------------
# Wilson intervals, against an independent implementation
# --------------------------------------------------------------------------


@pytest.mark.parametrize(("successes", "trials"), [(0, 1), (1, 1), (3, 7), (76, 85), (0, 20), (20, 20)])
def test_wilson_intervals_match_scipy(successes, trials):
    from scipy.stats import binomtest

    expected = binomtest(successes, trials).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = wilson_interval(successes, trials)
    assert low == pytest.approx(expected.low, abs=1e-9) and high == pytest.approx(expected.high, abs=1e-9)


def test_a_wilson_interval_of_nothing_is_empty_and_of_too_much_refused():
    assert all(value != value for value in wilson_interval(0, 0))
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


# --------------------------------------------------------------------------
# The check held to the question (issue cases, development items)
# --------------------------------------------------------------------------

JUPITER_MASS = (
    "Jupiter has a mass of approx. 318 Earth masses, roughly 2.5 times the combined mass of every "
    "other planet. The equatorial radius is 71,492 km."
)


def test_a_value_about_another_body_is_not_support():
    answer = "The launch mass of the Juno spacecraft was approximately 318 Earth masses. [1]"
    sources, labels = {1: JUPITER_MASS}, {1: "Jupiter › Physical characteristics › Mass and size"}
    question = "What was the launch mass of the Juno spacecraft?"
    assert not check_answer(answer, sources, question=question, labels=labels).supported
    # The same sentence about Jupiter, asked about Jupiter, rests on its source.
    asked = "What is the mass of Jupiter?"
    assert check_answer(
        "Jupiter has a mass of approx. 318 Earth masses [1]", sources, question=asked
    ).supported


def test_the_subject_may_sit_in_the_sources_title():
    source = {1: "The planet gives off about 1.7 times as much energy as it absorbs from sunlight."}
    question = "How much more energy does Jupiter give off than it absorbs from sunlight?"
    labels = {1: "Jupiter › Physical characteristics › Internal structure"}
    assert check_answer("1.7 times as much [1]", source, question=question, labels=labels).supported
    other = {1: "Saturn › Interior"}
    assert not check_answer("1.7 times as much [1]", source, question=question, labels=other).supported


def test_citation_phrases_and_the_questions_words_are_not_asked_of_the_source():
    source = {1: "It turns on its axis once every 17.24 hours, a value derived from radio emissions."}
    question = "How long does Uranus take to turn once on its axis?"
    labels = {1: "Uranus › Orbit and rotation"}
    answer = "Uranus takes 17.24 hours to turn once on its axis, as stated in [3]."
    assert check_answer(answer.replace("[3]", "[1]"), source, question=question, labels=labels).supported
    assert not check_answer(answer.replace("[3]", "[1]"), source).supported  # the lexical rule's miss


def test_the_value_must_sit_in_one_passage_not_spread_over_the_source():
    source = {
        1: "Neptune is the eighth planet. Its moon Triton is cold. Ice covers the plains. "
        "Winds blow at up to 580 m/s on Saturn's neighbour."
    }
    question = "How cold is Triton?"
    scattered = "Triton is cold at up to 580 m/s [1]"
    assert not check_answer(scattered, source, question=question, labels={1: "Neptune"}).supported


def test_without_labels_every_share_comes_from_the_check():
    from rag.measuring.citation_accuracy import no_labels

    judged = pd.DataFrame([{**_answer("1", "1"), "abstained": False, "source_chunk_ids": "a"}])
    sources = Sources({1: "Deimos is the outer moon of Mars."}, {1: "Mars"})
    table = citation_accuracy_table(judged, no_labels(), lambda row: sources, lambda row: "Which moon?")
    assert list(table["source"]) == ["check"] and table.loc[0, "coverage"] == 1.0
    assert citation_check_table(no_labels(), lambda answer: sources).empty


def test_the_labels_row_is_preferred_to_the_checks_for_its_setup():
    from rag.measuring.citation_accuracy import preferred_rows

    keys = {"corpus": "c", "questions": "q", "generator": "g", "chunker": "s", "k": 5}
    table = pd.DataFrame(
        [
            {**keys, "retriever": "bm25", "source": "check"},
            {**keys, "retriever": "bm25", "source": "labels"},
            {**keys, "retriever": "rrf", "source": "check"},
        ]
    )
    rows = preferred_rows(table)
    assert list(rows["retriever"]) == ["bm25", "rrf"] and list(rows["source"]) == ["labels", "check"]
