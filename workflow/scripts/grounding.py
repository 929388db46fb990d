"""Run the grounding cases and the swap experiment on one ranking; write the three tables."""

import json

import pandas as pd

from rag.grounding.cases import (
    ANSWER_COLUMNS,
    CASE_COLUMNS,
    SWAP_COLUMNS,
    answer_rows,
    case_row,
    configured_cases,
    document_texts,
    ranked_rows,
    run_case,
    run_swap,
    swap_from_config,
    swap_rows,
    top_chunks,
)
from rag.grounding.trigram import train
from rag.io import RANKING_COLUMNS, finish_job, read_columns, start_log, write_csv

log = start_log(snakemake.log[0])
settings = json.loads(snakemake.params.grounding)
k, temperature = settings["k"], settings["temperature"]
parsed = read_columns(snakemake.input.parsed, ["doc_id", "text"])
chunks = read_columns(snakemake.input.chunks, ["chunk_id", "text"])
ranking = read_columns(snakemake.input.ranking, RANKING_COLUMNS)

memory = train(parsed["text"])
log.info(
    "memory: %d sentences, %d tokens, vocabulary %d",
    *(memory.sentence_count, memory.token_count, len(memory.vocabulary)),
)
chunk_texts = dict(zip(chunks["chunk_id"], chunks["text"], strict=True))
ranked = ranked_rows(ranking["question_id"], ranking["rank"], ranking["chunk_id"], ranking["score"])


def retrieved(question_id):
    return top_chunks(ranked.get(question_id, []), chunk_texts, k, question_id)


answers, cases = [], []
for case in configured_cases(settings, document_texts(parsed["doc_id"], parsed["text"])):
    result = run_case(memory, case, retrieved(case.question_id), temperature, settings["max_tokens"])
    log.info(
        "%s: memory says %r (geometric mean %.3f); log10 odds true:wrong %s; completion supported: %s",
        *(case.name, result.comparison.memory_completion.text),
        result.comparison.memory_completion.geometric_mean,
        {model: round(value, 2) for model, value in result.log10_odds.items()},
        result.completion_check.supported,
    )
    answers.extend(answer_rows(result))
    cases.append(case_row(result))

swap = swap_from_config(settings["swap"])
swap_result = run_swap(memory, swap, retrieved(swap.question_id), temperature)
log.info("swap %r -> %r", swap.correct, swap.swapped)
write_csv(pd.DataFrame(answers, columns=ANSWER_COLUMNS), snakemake.output.answers)
write_csv(pd.DataFrame(cases, columns=CASE_COLUMNS), snakemake.output.cases)
write_csv(pd.DataFrame(swap_rows(swap_result), columns=SWAP_COLUMNS), snakemake.output.swap)
finish_job()
