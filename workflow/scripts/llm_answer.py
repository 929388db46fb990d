"""Answer every question with one language model, closed book or from the top k chunks of one ranking.

The ranking is the caller's (answers.llm.caller), searched within its view;
the prompt's chunks are checked against the view once more. One trace per
answer (rag.answering.trace, docs/trace.md) goes to the job's trace file.
"""

import json

import pandas as pd

from rag.answering.answers import evidence_chunks
from rag.answering.llm_answers import (
    CLOSED_BOOK,
    Setting,
    answer_records,
    answers_frame,
    caller_top_chunks,
    complete_with_cache,
    generator_from_entry,
)
from rag.answering.trace import llm_answer_traces, trace_lines
from rag.chunk_tables import chunks_from_frame
from rag.corpus.document_tables import documents_from_frame
from rag.formats.files import read_yaml, write_text
from rag.formats.tables import provenance, read_columns, read_provenance, write_parquet
from rag.jobs import finish_job, start_log
from rag.labels import judge_chunks, locate_spans, parse_questions
from rag.models.response_cache import ResponseCache
from rag.retrieval.filters import METADATA_COLUMNS, allowed_by_config, caller_from_view, parse_filter
from rag.retrieval.ranking_files import read_rankings

log = start_log(snakemake.log.job)
keys = ("corpus", "questions", "generator", "chunker", "retriever")
names = {key: snakemake.wildcards[key] for key in keys}
entry = json.loads(snakemake.params.generator)
generator = generator_from_entry(names["generator"], entry)
setting = Setting(**names, k=int(snakemake.params.k))
questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)
named_caller = json.loads(snakemake.params.caller)
caller = caller_from_view(named_caller["name"], parse_filter(named_caller["view"], named_caller["name"]))

top_chunks, evidence, rankings, versions = None, {}, {}, {}
if setting.retriever != CLOSED_BOOK:
    chunk_list = chunks_from_frame(pd.read_parquet(snakemake.input.chunks))
    chunks = {chunk.chunk_id: chunk for chunk in chunk_list}
    chunk_ids = [chunk.chunk_id for chunk in chunk_list]
    metadata = read_columns(snakemake.input.chunks, list(METADATA_COLUMNS))
    allowed = allowed_by_config(metadata, named_caller["view"], named_caller["name"])
    readable = {chunk_id for chunk_id, kept in zip(chunk_ids, allowed, strict=True) if kept}
    positions = read_rankings(snakemake.input.ranking, chunk_ids, [q.question_id for q in questions])
    rankings = {
        question_id: ([chunk_ids[p] for p in ranking.positions], ranking.scores.tolist())
        for question_id, ranking in positions.items()
    }
    documents = documents_from_frame(pd.read_parquet(snakemake.input.parsed))
    evidence = evidence_chunks(judge_chunks(questions, locate_spans(questions, documents), list(chunk_list)))
    versions = {
        "index": read_provenance(snakemake.input.chunks),
        "ranker": {setting.retriever: read_provenance(snakemake.input.ranking).get("retriever")},
    }

    def top_chunks(question):
        ranked = rankings[question.question_id][0]
        return caller_top_chunks(ranked, chunks, setting.k, readable, caller.name)


cache = ResponseCache(snakemake.params.cache)
complete = complete_with_cache(generator, cache, snakemake.log.server, log.info)
frame = answers_frame(answer_records(questions, top_chunks, generator, complete, setting, evidence))
cached = int(frame["cached"].sum())
log.info(
    "%s: %d answers (%d from the cache, %d asked), %d abstained, %d faithful, %d responsive",
    "/".join(names.values()),
    len(frame),
    cached,
    len(frame) - cached,
    int(frame["abstained"].sum()),
    int(frame["faithful"].sum()),
    int(frame["responsive"].sum()),
)
write_parquet(frame, snakemake.output[0], provenance(stage="llm_answer", generator=entry, k=setting.k))
traces = llm_answer_traces(
    frame, questions, caller, rankings, versions, {"name": setting.generator, "model": entry["model"]}
)
write_text(snakemake.output.trace, trace_lines(traces))
finish_job()
