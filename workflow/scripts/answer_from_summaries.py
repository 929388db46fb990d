"""Answer every question from one prompt that holds the lead summary of every document."""

import json
import sys

import pandas as pd

from rag.answers import (
    GenerationSettings,
    answer_question,
    answers_frame,
    collection_idf,
    evidence_chunks,
    evidence_documents,
)
from rag.io import documents_from_frame, finish_job, provenance, read_yaml, start_log, write_parquet
from rag.labels import judge_chunks, locate_spans, parse_questions
from rag.prompts import PromptBudgetError
from rag.summaries import lead_summaries, summary_chunks
from rag.tokens import CL100K_BASE, get_token_counter, optional_token_counter

# How the summary rows are named in the tables beside the (chunker, retriever) rows.
CHUNKER, RETRIEVER = "(lead summaries)", "(all in the prompt)"

log = start_log(snakemake.log[0])
corpus = snakemake.wildcards.corpus
generation = json.loads(snakemake.params.generation)
questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)
documents = documents_from_frame(pd.read_parquet(snakemake.input.parsed))
sources = summary_chunks(lead_summaries(documents))
if not any(chunk.text.strip() for chunk in sources):
    # Issue 16: a corpus whose documents have no lead (no text before their
    # first section heading) has no summaries to answer from; left out, not an error.
    warning = (
        f"corpus {corpus!r}: answers from lead summaries left out, they need lead sections "
        "(text before a document's first section heading), and no document has one"
    )
    log.warning("%s", warning)
    print(f"WARNING: {warning}", file=sys.stderr)
    frame = answers_frame([], corpus=corpus, chunker=CHUNKER, retriever=RETRIEVER)
    write_parquet(
        frame, snakemake.output[0], provenance(stage="answer_from_summaries", generation=generation)
    )
    finish_job()
settings = GenerationSettings(
    k=max(len(sources), 1),
    threshold=generation["threshold"],
    budget=generation["budget"],
    count_tokens=get_token_counter(generation["token_counter"]),
)
# The summaries are the collection the generator reads, so their idf weighs the question.
idf = collection_idf([chunk.indexed_text for chunk in sources])
locations = locate_spans(questions, documents)
holding = evidence_documents(questions, locations)
pieces = evidence_chunks(judge_chunks(questions, locations, sources))
count_cl100k = optional_token_counter(CL100K_BASE)

try:
    records = [
        answer_question(
            question,
            sources,
            idf,
            settings,
            pieces.get(question.question_id, {}),
            holding[question.question_id],
            count_cl100k,
        )
        for question in questions
    ]
except PromptBudgetError as error:
    raise PromptBudgetError(f"config['answers']['budget'] = {settings.budget}: {error}") from None
frame = answers_frame(records, corpus=corpus, chunker=CHUNKER, retriever=RETRIEVER)
log.info(
    "%s: %d summaries, %d questions, %d answered, %d quote the evidence, %d have all evidence in them",
    corpus,
    len(sources),
    len(frame),
    int(frame["answered"].sum()),
    int(frame["quotes_evidence"].sum()),
    int((frame["answerable"] & (frame["pieces_in_prompt"] == frame["evidence_pieces"])).sum()),
)
write_parquet(frame, snakemake.output[0], provenance(stage="answer_from_summaries", generation=generation))
finish_job()
