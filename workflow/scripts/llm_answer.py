"""Answer every question with one language model, closed book or from the top k chunks of one ranking.

The caller's ranking, checked once more (rag.answering.caller_sources); one trace per answer.
"""

import json

from rag.answering.caller_sources import named_caller, sources_and_evidence
from rag.answering.llm_answers import CLOSED_BOOK, Setting, answer_records, answers_frame, complete_with_cache
from rag.answering.trace import llm_answer_traces, trace_lines
from rag.formats.files import read_yaml, write_text
from rag.formats.tables import provenance, write_parquet
from rag.kinds import behaviour
from rag.labels import parse_questions
from rag.models.gate import table_gate
from rag.models.local_server import follow_job_threads
from rag.models.response_cache import ResponseCache
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log.job)
follow_job_threads(snakemake.threads)  # a bundled server computes with the rule's threads
keys = ("corpus", "questions", "generator", "chunker", "retriever")
names = {key: snakemake.wildcards[key] for key in keys}
entry = json.loads(snakemake.params.generator)
generator = behaviour(entry["kind"], "generate")(names["generator"], entry)
setting = Setting(**names, k=int(snakemake.params.k))
questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)
caller, view = named_caller(snakemake.params.caller)

top_chunks, evidence, sources = None, {}, None
if setting.retriever != CLOSED_BOOK:
    paths = (snakemake.input.chunks, snakemake.input.ranking, snakemake.input.parsed)
    sources, evidence = sources_and_evidence(*paths, caller, view, questions, setting.retriever)

    def top_chunks(question):
        return sources.top_chunks(question.question_id, setting.k)


# Every request passes the one gate (rag.models.gate): the caller's view over the chunk table.
table = None if top_chunks is None else snakemake.input.chunks
gate = table_gate(caller=caller, name=names["generator"], entry=entry, role="generator", chunks=table)
cache, closed_book = ResponseCache(snakemake.params.cache), setting.closed_book
ask = complete_with_cache(
    generator, cache, snakemake.log.server, log.info, closed_book=closed_book, gate=gate
)
frame = answers_frame(answer_records(questions, top_chunks, generator, ask, setting, evidence, gate))
cached = int(frame["cached"].sum())
log.info(
    "%s: %d answers (%d from the cache, %d asked), %d abstained, %d faithful, %d responsive",
    *("/".join(names.values()), len(frame), cached, len(frame) - cached),
    *(int(frame[flag].sum()) for flag in ("abstained", "faithful", "responsive")),
)
write_parquet(frame, snakemake.output[0], provenance(stage="llm_answer", generator=entry, k=setting.k))
generator_names = {"name": setting.generator, "model": entry["model"]}
traces = llm_answer_traces(frame, questions, sources, generator_names, caller)
write_text(snakemake.output.trace, trace_lines(traces))
finish_job()
