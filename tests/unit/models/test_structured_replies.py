"""Structured replies read strictly: the citations are exactly the reply's ``sources``, in range.

A reply whose answer carries markers its ``sources`` do not give, with an
unknown key, a missing key, an answer that is not text or a source outside
the prompt is an error of that answer: counted in the summary's
``reply_errors`` and never faithful. The request (prompt, schema, cache key)
is the same as before, so the sealed replies are still found. Fuzzed: any
JSON a server may send is either read with exactly its sources as citations
or refused with a one-line problem.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.answering.config_checks import _check_llm_entry as check_llm_entry
from rag.answering.llm_answers import (
    ANSWERED,
    NOT_IN_SOURCES,
    OUTCOME_ANSWER_SCHEMA,
    OUTCOMES,
    REFUSAL_TEXT,
    PromptTemplate,
    Setting,
    StructuredReply,
    answer_records,
    answers_frame,
    cited_numbers,
    generator_from_entry,
    response_format_for,
    structured_reply,
)
from rag.chunking import Chunk
from rag.kinds import GENERATOR_KINDS, ConfigError, defaults
from rag.labels import Question
from rag.measuring.llm_tables import summarize_llm_answers
from rag.models.client import Completion

CHUNKS = [
    Chunk("c1", "d1", "Pluto", "", 0, 30, "Pluto was found in 1930 by Tombaugh."),
    Chunk("c2", "d2", "Ceres", "", 0, 30, "Ceres was found in 1801 by Piazzi."),
]


def read(document: object, count: int = 2):
    return structured_reply(json.dumps(document), count)


def test_markers_the_sources_do_not_give_are_an_error_not_a_citation():
    result = read({"answer": "Pluto was found in 1930 [2].", "sources": []})
    assert "marker [2]" in result.problem and "\n" not in result.problem
    assert read({"answer": "Found in 1930 [1].", "sources": [1]}).problem == ""


def test_unknown_keys_non_text_answers_and_sources_out_of_range_are_errors():
    assert "unknown key 'confidence'" in read({"answer": "x", "sources": [1], "confidence": 1}).problem
    for answer in (42, [1, 2], None, {"a": 1}):
        result = read({"answer": answer, "sources": [1]})
        assert "not text" in result.problem and result.text == ""  # never the raw JSON
    assert "source 3" in read({"answer": "x", "sources": [3]}).problem
    assert "source 0" in read({"answer": "x", "sources": [0]}).problem
    assert "lacks 'sources'" in read({"answer": "x"}).problem
    assert "whole numbers" in read({"answer": "x", "sources": [True]}).problem
    assert "not an object" in read([1, 2]).problem
    assert "not a whole JSON object" in structured_reply('{"answer": "Pluto was fou', 2).problem


def test_a_good_reply_cites_exactly_its_sources():
    result = read({"answer": "Pluto was found in 1930. By Tombaugh.", "sources": [1]})
    assert result.problem == "" and result.text == "Pluto was found in 1930. [1] By Tombaugh. [1]"
    assert cited_numbers(result.text) == (1,)


def answers(texts: list[str]):
    entry = {**defaults(GENERATOR_KINDS)["llm"], "kind": "llm", "citations": "structured"}
    generator = generator_from_entry("structured", entry)
    questions = [
        Question(f"q{n}", "When was Pluto found?", "date", True, answer="1930") for n in range(len(texts))
    ]

    def complete(conversations):
        return [Completion(text, 10, 5, 0.1, cached=False, structured=True) for text in texts]

    setting = Setting("c", "q", "structured", "s", "bm25", 2)
    return answers_frame(answer_records(questions, lambda _q: CHUNKS, generator, complete, setting))


def test_an_erroneous_reply_is_never_faithful_and_is_counted_in_the_summary():
    good = json.dumps({"answer": "Pluto was found in 1930.", "sources": [1]})
    wrong_marker = json.dumps({"answer": "Pluto was found in 1930 [1].", "sources": []})
    extra = json.dumps({"answer": "Pluto was found in 1930.", "sources": [1], "note": "x"})
    number = json.dumps({"answer": 1930, "sources": [1]})
    frame = answers([good, wrong_marker, extra, number])
    assert frame["faithful"].tolist() == [True, False, False, False]
    assert frame["reply_error"].tolist()[0] == "" and all(frame["reply_error"].tolist()[1:])
    assert "{" not in frame["answer"].iloc[3]  # a number is not turned into raw JSON
    judged = frame.assign(outcome="correct", correct_from_memory=False)
    assert summarize_llm_answers(judged)["reply_errors"].tolist() == [3]


def test_the_request_is_unchanged_so_the_sealed_replies_are_found():
    entry = {**defaults(GENERATOR_KINDS)["llm"], "kind": "llm", "citations": "structured"}
    generator = generator_from_entry("structured", entry)
    schema = response_format_for(generator, closed_book=False)
    assert schema["type"] == "json_object" and set(schema["schema"]["properties"]) == {"answer", "sources"}
    assert isinstance(generator.template, PromptTemplate)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 5) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
REPLIES = st.one_of(
    st.fixed_dictionaries(
        {
            "answer": st.one_of(st.text(max_size=40), JSON),
            "sources": st.one_of(st.lists(st.integers(-1, 4)), JSON),
        },
        optional={"extra": JSON},
    ).map(json.dumps),
    JSON.map(json.dumps),
    st.text(max_size=40),
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(REPLIES, st.integers(0, 3))
def test_any_reply_is_read_with_exactly_its_sources_or_refused_in_one_line(reply, count):
    result = structured_reply(reply, count)
    assert "\n" not in result.problem
    if result.problem:
        return
    document = json.loads(reply)
    assert set(document) == {"answer", "sources"} and isinstance(document["answer"], str)
    given_sources = list(dict.fromkeys(document["sources"]))
    assert all(1 <= number <= count for number in given_sources)
    if result.text and given_sources:
        assert set(cited_numbers(result.text)) == set(given_sources)
    else:
        assert cited_numbers(result.text) == ()


# --------------------------------------------------------------------------
# The outcome (``refusal: outcome``): "the sources do not answer" as a value of the reply, not a phrase
# --------------------------------------------------------------------------


def outcome_generator(**changes):
    entry = {**defaults(GENERATOR_KINDS)["llm"], "kind": "llm", "citations": "structured"}
    entry["refusal"] = "outcome"
    return generator_from_entry("refusing", {**entry, **changes})


def test_an_outcome_entry_asks_for_the_outcome_first_and_only_from_sources():
    generator = outcome_generator()
    assert generator.outcome
    schema = response_format_for(generator, closed_book=False)["schema"]
    assert list(schema["properties"]) == ["outcome", "answer", "sources"]
    assert schema["properties"]["outcome"]["enum"] == list(OUTCOMES)
    assert response_format_for(generator, closed_book=True) is None
    hosted = response_format_for(outcome_generator(base_url="http://127.0.0.1:8080/v1"), closed_book=False)
    assert hosted["json_schema"]["schema"] is OUTCOME_ANSWER_SCHEMA and hosted["json_schema"]["strict"]
    # Without citations: structured there is no reply to hold an outcome: planning refuses it, in one line.
    with pytest.raises(ConfigError) as refused:
        check_llm_entry({**defaults(GENERATOR_KINDS)["llm"], "kind": "llm", "refusal": "outcome"}, "g['x']")
    assert "['refusal']" in str(refused.value) and "citations: structured" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_not_in_sources_reads_as_a_refusal_and_is_counted_as_one():
    def reply(outcome, answer="Pluto was found in 1930.", sources=(1,)):
        return json.dumps({"outcome": outcome, "answer": answer, "sources": list(sources)})

    assert structured_reply(reply(NOT_IN_SOURCES), 2, outcome=True) == StructuredReply(REFUSAL_TEXT, "")
    assert structured_reply(reply(NOT_IN_SOURCES, sources=[9]), 2, outcome=True).text == REFUSAL_TEXT
    answered = structured_reply(reply(ANSWERED), 2, outcome=True)
    assert answered.problem == "" and answered.text == "Pluto was found in 1930. [1]"
    without = json.dumps({"answer": "x", "sources": []})
    assert "lacks 'outcome'" in structured_reply(without, 2, outcome=True).problem
    assert "is not one of" in structured_reply(reply("maybe"), 2, outcome=True).problem
    assert "unknown key 'outcome'" in structured_reply(reply(ANSWERED), 2).problem  # not asked for
    generator = outcome_generator()
    questions = [
        Question("a", "When was Pluto found?", "date", True, answer="1930"),
        Question("u", "When will Pluto be visited again?", "date", False),
    ]

    def complete(conversations):
        texts = [reply(ANSWERED), reply(NOT_IN_SOURCES, answer="", sources=())]
        return [Completion(text, 10, 5, 0.1, cached=False, structured=True) for text in texts]

    setting = Setting("c", "q", "refusing", "s", "bm25", 2)
    frame = answers_frame(answer_records(questions, lambda _q: CHUNKS, generator, complete, setting))
    assert frame["abstained"].tolist() == [False, True] and frame["reply_error"].tolist() == ["", ""]
    judged = frame.assign(outcome=["correct", "refused"], correct_from_memory=False)
    summary = summarize_llm_answers(judged).iloc[0]
    assert summary["refused"] == 1 and summary["abstained"] == 0


OUTCOME_REPLIES = st.one_of(
    st.fixed_dictionaries(
        {
            "outcome": st.one_of(st.sampled_from(OUTCOMES), JSON),
            "answer": st.one_of(st.text(max_size=40), JSON),
            "sources": st.one_of(st.lists(st.integers(-1, 4)), JSON),
        },
        optional={"extra": JSON},
    ).map(json.dumps),
    REPLIES,
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(OUTCOME_REPLIES, st.integers(0, 3))
def test_any_reply_with_an_outcome_is_an_answer_a_refusal_or_refused_in_one_line(reply, count):
    result = structured_reply(reply, count, outcome=True)
    assert "\n" not in result.problem
    if result.problem:
        return
    document = json.loads(reply)
    assert set(document) == {"outcome", "answer", "sources"} and document["outcome"] in OUTCOMES
    if document["outcome"] == NOT_IN_SOURCES:
        assert result.text == REFUSAL_TEXT and cited_numbers(result.text) == ()
        return
    given_sources = list(dict.fromkeys(document["sources"]))
    assert all(1 <= number <= count for number in given_sources)
    if result.text and given_sources:
        assert set(cited_numbers(result.text)) == set(given_sources)
