"""Run the grounding cases and the swap experiment on one ranking; write the three tables."""

import json

from rag.formats.files import write_csv
from rag.formats.tables import read_columns
from rag.grounding.cases import describe_case, grounding_tables, run_grounding
from rag.grounding.trigram import train
from rag.jobs import finish_job, start_log
from rag.retrieval.ranking_files import RANKING_COLUMNS

log = start_log(snakemake.log[0])
settings = json.loads(snakemake.params.grounding)
parsed = read_columns(snakemake.input.parsed, ["doc_id", "text"])
chunks = read_columns(snakemake.input.chunks, ["chunk_id", "text"])
ranking = read_columns(snakemake.input.ranking, RANKING_COLUMNS)

memory = train(parsed["text"])
log.info(
    "memory: %d sentences, %d tokens, vocabulary %d",
    *(memory.sentence_count, memory.token_count, len(memory.vocabulary)),
)
results, swap = run_grounding(memory, settings, parsed, chunks, ranking)
for result in results:
    log.info("%s", describe_case(result))
log.info("swap %r -> %r", swap.swap.correct, swap.swap.swapped)
answers, cases, swapped = grounding_tables(results, swap)
write_csv(answers, snakemake.output.answers)
write_csv(cases, snakemake.output.cases)
write_csv(swapped, snakemake.output.swap)
finish_job()
