"""Citations the model must give: {answer, sources} through response_format, turned into [n] markers."""

from __future__ import annotations

import json
import logging

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.answering.llm_answers import (
    CITED_ANSWER_SCHEMA,
    Setting,
    answer_records,
    complete_with_cache,
    generator_from_entry,
    response_format_for,
    structured_answer_text,
)
from rag.answering.verification import parse_citations, split_claims
from rag.chunking import Chunk
from rag.kinds import GENERATOR_KINDS, defaults
from rag.labels import Evidence, Question, Span
from rag.models.response_cache import ResponseCache
from tests.fault_server import reply

LLM_DEFAULTS = defaults(GENERATOR_KINDS)["llm"]
FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
QUESTION = Question(
    "pluto-day",
    "How long is a day on Pluto?",
    "time",
    True,
    (Evidence((Span("A day on Pluto lasts 6.4 Earth days.", "doc"),)),),
    "6.4 Earth days",
)


def chunk(number: int, text: str) -> Chunk:
    return Chunk(f"doc#{number}", "doc", "Pluto", "Rotation", 0, len(text), text)


CHUNKS = [chunk(1, "A day on Pluto lasts 6.4 Earth days."), chunk(2, "Charon orbits Pluto.")]
SETTING = Setting("tiny", "development", "stub", "sentences20", "bm25", 2)


def generator(**changes):
    return generator_from_entry("stub", {**LLM_DEFAULTS, "model": "m", **changes})


def body(content: str) -> bytes:
    document = {
        "choices": [{"message": {"content": content}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 5},
    }
    return json.dumps(document).encode()


def test_the_reply_becomes_the_same_text_with_markers_on_every_sentence():
    text = structured_answer_text(
        '{"answer": "A day lasts 6.4 Earth days. It is long.", "sources": [2, 1, 2]}'
    )
    claims = split_claims(text)
    assert len(claims) == 2
    assert all(parse_citations(claim)[0] == (2, 1) for claim in claims)
    assert parse_citations(claims[0])[1] == "A day lasts 6.4 Earth days."
    # No sources: the answer stays uncited; cut short: the answer so far, uncited.
    assert structured_answer_text('{"answer": "6.4 days", "sources": []}') == "6.4 days"
    assert structured_answer_text('{ "answer": "A day lasts 6.4 Ear') == "A day lasts 6.4 Ear"
    assert structured_answer_text("not json at all") == "not json at all"
    # Booleans are not source numbers.
    assert structured_answer_text('{"answer": "x.", "sources": [true, 1]}') == "x. [1]"


def test_the_field_is_asked_only_with_sources_and_in_the_form_the_endpoint_honours():
    assert response_format_for(generator(), closed_book=False) is None
    hosted = generator(citations="structured", base_url="http://127.0.0.1:9/v1")
    assert response_format_for(hosted, closed_book=True) is None
    standard = response_format_for(hosted, closed_book=False)
    assert standard["type"] == "json_schema" and standard["json_schema"]["schema"] == CITED_ANSWER_SCHEMA
    bundled = response_format_for(generator(citations="structured", base_url="bundled"), closed_book=False)
    assert bundled == {"type": "json_object", "schema": CITED_ANSWER_SCHEMA}


def test_a_server_that_honours_the_field_gets_it_and_the_answer_is_judged_with_its_citations(
    server, tmp_path
):
    server.script[:] = [reply(body('{"answer": "A day on Pluto lasts 6.4 Earth days.", "sources": [1]}'))]
    stub = generator(citations="structured", base_url=server.url + "/v1")
    cache = ResponseCache(tmp_path)
    (record,) = answer_records([QUESTION], lambda q: CHUNKS, stub, complete_with_cache(stub, cache), SETTING)
    sent = json.loads(server.received[0].body)
    assert sent["response_format"]["json_schema"]["schema"] == CITED_ANSWER_SCHEMA
    assert record.answer == "A day on Pluto lasts 6.4 Earth days. [1]"
    assert record.cited_sources == "1" and record.faithful and record.responsive
    # The raw reply is what the cache keeps; a second run reads it and asks nobody.
    (again,) = answer_records([QUESTION], lambda q: CHUNKS, stub, complete_with_cache(stub, cache), SETTING)
    assert len(server.received) == 1 and again.cached and again.answer == record.answer


def test_a_server_that_refuses_the_field_gets_plain_text_with_one_warning(server, tmp_path, caplog):
    refusal = json.dumps({"error": {"message": "response_format: json_schema is not supported"}}).encode()
    plain = "A day on Pluto lasts 6.4 Earth days [1]."
    server.script[:] = [reply(refusal, status=400), reply(body(plain))]
    stub = generator(citations="structured", base_url=server.url + "/v1")
    with caplog.at_level(logging.WARNING):
        records = answer_records(
            [QUESTION, QUESTION],
            lambda q: CHUNKS,
            stub,
            complete_with_cache(stub, ResponseCache(tmp_path)),
            SETTING,
        )
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "plain text" in r.getMessage()]
    assert len(warnings) == 1
    assert [r.answer for r in records] == [plain, plain]
    asked = [json.loads(request.body) for request in server.received]
    assert "response_format" in asked[0] and "response_format" not in asked[-1]


@FUZZ
@given(
    answer=st.text(max_size=80),
    sources=st.lists(
        st.one_of(st.integers(-3, 12), st.booleans(), st.text(max_size=3), st.none()), max_size=5
    ),
    cut=st.integers(0, 200),
)
def test_any_reply_gives_text_whose_markers_are_the_replys_integer_sources(answer, sources, cut):
    raw = json.dumps({"answer": answer, "sources": sources})
    text = structured_answer_text(raw)
    wanted = [n for n in dict.fromkeys(s for s in sources if isinstance(s, int) and not isinstance(s, bool))]
    if text.strip() and wanted and answer.strip():
        cited = {n for claim in split_claims(text) for n in parse_citations(claim)[0]}
        assert {n for n in wanted if n >= 0} <= cited
    # A reply cut anywhere never raises and gives text.
    assert isinstance(structured_answer_text(raw[:cut]), str)
