"""Run the grounding cases and the swap experiment on one ranking; write the three tables."""

import json

import pandas as pd

from rag.grounding import (
    ANSWER_COLUMNS,
    CASE_COLUMNS,
    SWAP_COLUMNS,
    answer_rows,
    case_from_config,
    case_row,
    check_wrong_answer_source,
    run_case,
    run_swap,
    swap_from_config,
    swap_rows,
    top_chunks,
)
from rag.io import finish_job, start_log, write_csv
from rag.trigram import train

log = start_log(snakemake.log[0])
settings = json.loads(snakemake.params.grounding)
k, temperature = settings["k"], settings["temperature"]

parsed = pd.read_parquet(snakemake.input.parsed, columns=["doc_id", "text"])
chunks = pd.read_parquet(snakemake.input.chunks, columns=["chunk_id", "text"])
ranking = pd.read_parquet(snakemake.input.ranking)

memory = train(parsed["text"].tolist())
log.info(
    "memory: %d sentences, %d tokens, vocabulary %d",
    memory.sentence_count,
    memory.token_count,
    len(memory.vocabulary),
)
document_texts = parsed.groupby("doc_id", sort=True)["text"].agg("\n\n".join).to_dict()
chunk_texts = dict(zip(chunks["chunk_id"], chunks["text"], strict=True))
ranked = {
    question_id: list(zip(rows["rank"], rows["chunk_id"], rows["score"], strict=True))
    for question_id, rows in ranking.groupby("question_id", sort=False)
}


def retrieved(question_id):
    return top_chunks(ranked.get(question_id, []), chunk_texts, k, question_id)


answers, cases = [], []
for entry in settings["cases"]:
    case = case_from_config(entry)
    if case.wrong_from not in document_texts:
        raise ValueError(
            f"config['grounding']['cases'][{case.name!r}]['wrong_from']: no document {case.wrong_from!r} "
            f"in corpus {settings['corpus']!r}; known: {sorted(document_texts)}"
        )
    check_wrong_answer_source(case, document_texts[case.wrong_from])
    result = run_case(memory, case, retrieved(case.question_id), temperature, settings["max_tokens"])
    log.info(
        "%s: memory says %r (geometric mean %.3f); log10 odds true:wrong %s; completion supported: %s",
        case.name,
        result.comparison.memory_completion.text,
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
