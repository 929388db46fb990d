"""Answer every question with one language model, closed book or from the top k chunks of one ranking."""

import json

import pandas as pd

from rag.answering.answers import evidence_chunks
from rag.answering.llm_answers import CLOSED_BOOK, Setting, answer_records, answers_frame, complete_with_cache
from rag.chunk_tables import chunks_from_frame
from rag.corpus.document_tables import documents_from_frame
from rag.formats.files import read_yaml
from rag.formats.tables import provenance, write_parquet
from rag.jobs import finish_job, start_log
from rag.kinds import behaviour
from rag.labels import judge_chunks, locate_spans, parse_questions
from rag.models.local_server import follow_job_threads
from rag.models.response_cache import ResponseCache
from rag.retrieval.ranking_files import read_ranked_chunk_ids

log = start_log(snakemake.log.job)
follow_job_threads(snakemake.threads)  # a bundled server computes with the rule's threads
keys = ("corpus", "questions", "generator", "chunker", "retriever")
names = {key: snakemake.wildcards[key] for key in keys}
entry = json.loads(snakemake.params.generator)
generator = behaviour(entry["kind"], "generate")(names["generator"], entry)
setting = Setting(**names, k=int(snakemake.params.k))
questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)

top_chunks, evidence = None, {}
if setting.retriever != CLOSED_BOOK:
    chunk_list = chunks_from_frame(pd.read_parquet(snakemake.input.chunks))
    chunks = {chunk.chunk_id: chunk for chunk in chunk_list}
    ranked = read_ranked_chunk_ids(snakemake.input.ranking, [q.question_id for q in questions])
    documents = documents_from_frame(pd.read_parquet(snakemake.input.parsed))
    evidence = evidence_chunks(judge_chunks(questions, locate_spans(questions, documents), list(chunk_list)))

    def top_chunks(question):
        return [chunks[chunk_id] for chunk_id in ranked[question.question_id][: setting.k]]


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
finish_job()
