"""The offline generators' traces: one line per answer row, every field, ids and hashes but no text."""

from __future__ import annotations

import dataclasses
import json

from rag.answering.answers import GenerationSettings, answer_question_by_readers, reader_answers_frame
from rag.answering.caller_sources import CallerSources
from rag.answering.trace import TRACE_FIELDS, offline_answer_traces, trace_lines, trace_problems
from rag.chunking import Chunk
from rag.labels import Question
from rag.retrieval.filters import Caller

TEXTS = {
    "t1": "Pioneer 11 measured the surface temperature of Titan in 1979.",
    "t2": "Titan is the largest moon of Saturn and is wrapped in haze.",
    "t3": "The rings of Saturn are made of ice and rock.",
}
CHUNKS = {cid: Chunk(cid, "saturn", "Saturn", "Titan", 0, len(text), text) for cid, text in TEXTS.items()}
QUESTIONS = [
    Question("titan", "What is the largest moon of Saturn?", "fact", True, ()),
    Question("rings", "What are the rings of Saturn made of?", "fact", True, ()),
    Question("nothing", "Who may read nothing at all?", "fact", False, ()),
]
# The caller's prefiltered rankings: the last question has no chunk it may read.
RANKINGS = {
    "titan": (["t2", "t1", "t3"], [2.5, 1.0, 0.5]),
    "rings": (["t3", "t2"], [3.0, 0.2]),
    "nothing": ([], []),
}
IDF = {"largest": 2.0, "moon": 1.5, "rings": 2.0, "ice": 1.0, "saturn": 0.5, "titan": 1.0}
CALLER = Caller("acme_analyst", "acme", frozenset({"analysts"}), frozenset({"public", "internal"}))


def answer_table(k: int = 2):
    """The extractive generator's answer table of the three questions, from the caller's rankings."""
    settings = GenerationSettings(k=k, threshold=0.0)
    records = [
        answer_question_by_readers(
            question, [CHUNKS[c] for c in RANKINGS[question.question_id][0]], IDF, [settings]
        )[0]
        for question in QUESTIONS
    ]
    return reader_answers_frame(records, corpus="c", chunker="x", retriever="bm25", reader="extractive")


def sources() -> CallerSources:
    versions = {"index": {"chunker": "x"}, "ranker": {"bm25": {"kind": "bm25"}}}
    return CallerSources(CALLER, CHUNKS, frozenset(CHUNKS), RANKINGS, versions)


def test_an_offline_trace_has_every_field_and_passes_the_schema_check():
    traces = offline_answer_traces(answer_table(), QUESTIONS, sources())
    assert len(traces) == len(QUESTIONS)
    for trace in traces:
        assert list(trace) == list(TRACE_FIELDS) and trace_problems(trace) == []
        assert trace["cache"] == "none" and trace["generator"] == {"name": "extractive"}
        assert trace["latency"] == {"retrieval": None, "generation": None}
        assert trace["filters"]["tenant"] == "acme" and trace["tenant"] == "acme"
    assert trace_problems({**traces[0], "cache": "warm"}) == [
        "cache 'warm', expected one of ('hit', 'miss', 'none')"
    ]


def test_an_offline_trace_joins_the_answer_table_by_row_order_and_question_id():
    table = answer_table(k=2)
    traces = offline_answer_traces(table, QUESTIONS, sources())
    assert [trace["question_id"] for trace in traces] == table["question_id"].tolist()
    for trace, row in zip(traces, table.itertuples(index=False), strict=True):
        ranked = list(RANKINGS[row.question_id][0])
        assert trace["candidates"] == ranked and trace["selected"] == ranked[: row.sources] == ranked[:2]
        assert trace["tokens"]["prompt"] == row.prompt_tokens
        cited = [] if row.abstained else [trace["selected"][row.cited_source - 1]]
        assert trace["citations"] == cited
    answered = traces[0]
    assert answered["citations"] == [table.loc[0, "best_chunk_id"]] and answered["abstention"] is None
    assert (
        traces[2]["selected"] == []
        and traces[2]["abstention"] == "no chunk the caller may read was retrieved"
    )


def test_an_offline_trace_holds_no_sentence_of_any_document_and_is_the_same_bytes_twice():
    text = trace_lines(offline_answer_traces(answer_table(), QUESTIONS, sources()))
    assert text == trace_lines(offline_answer_traces(answer_table(), QUESTIONS, sources()))
    assert [json.loads(line)["question_id"] for line in text.splitlines()] == ["titan", "rings", "nothing"]
    for sentence in TEXTS.values():
        assert sentence not in text and sentence[:30] not in text
    for question in QUESTIONS:
        assert question.text not in text


def test_a_trace_of_an_answer_from_lead_summaries_names_the_summaries_unranked():
    from rag.answering.trace import summary_answer_traces

    summaries = [CHUNKS["t1"], CHUNKS["t3"]]
    records = [
        answer_question_by_readers(question, summaries, IDF, [GenerationSettings(k=2, threshold=0.0)])[0]
        for question in QUESTIONS
    ]
    frame = reader_answers_frame(
        records, corpus="c", chunker="(lead summaries)", retriever="(all)", reader="extractive"
    )
    traces = summary_answer_traces(frame, QUESTIONS, CALLER, summaries)
    assert [trace["question_id"] for trace in traces] == [question.question_id for question in QUESTIONS]
    for trace in traces:
        assert trace_problems(trace) == [] and trace["candidates"] == ["t1", "t3"]
        assert trace["scores"] == [None, None] and trace["ranker_versions"] == {}
    changed = [CHUNKS["t1"], dataclasses.replace(CHUNKS["t3"], text="Other text.")]
    other = summary_answer_traces(frame, QUESTIONS, CALLER, changed)
    assert other[0]["index_version"] != traces[0]["index_version"]  # the summaries' texts are versioned
    text = "\n".join(trace_lines(traces))
    assert not any(sentence in text for sentence in TEXTS.values())
