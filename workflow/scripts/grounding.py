"""Run the grounding cases and the swap on one ranking, with the trigram model and each llm generator."""

import contextlib
import json

from rag.formats.files import write_csv
from rag.formats.tables import read_columns
from rag.grounding.cases import describe_case, grounding_tables
from rag.grounding.experiment import run_grounding, train_memory
from rag.grounding.served_model import gated_models
from rag.models.local_server import follow_job_threads
from rag.models.response_cache import ResponseCache
from rag.pipeline.jobs import finish_job, start_log
from rag.retrieval.filters import METADATA_COLUMNS, caller_from_view, parse_filter
from rag.retrieval.ranking_files import RANKING_COLUMNS

log = start_log(snakemake.log.job)
follow_job_threads(snakemake.threads)  # a bundled server computes with the rule's threads
settings = json.loads(snakemake.params.grounding)
entries = json.loads(snakemake.params.generators)
parsed = read_columns(snakemake.input.parsed, [*METADATA_COLUMNS, "text"])
chunks = read_columns(snakemake.input.chunks, ["chunk_id", "text"])
ranking = read_columns(snakemake.input.ranking, RANKING_COLUMNS)

# Memory is trained on the caller's view of the corpus, never on text it may not read.
caller = snakemake.params.caller
memory = train_memory(parsed, json.loads(snakemake.params.view), caller)
log.info(
    "memory of caller %r: %d sentences, %d tokens, vocabulary %d",
    *(caller, memory.sentence_count, memory.token_count, len(memory.vocabulary)),
)
cache = ResponseCache(snakemake.params.cache)
# Every served model's requests pass the one gate (rag.models.gate), for the grounding caller.
who = caller_from_view(caller, parse_filter(json.loads(snakemake.params.view), caller))
with contextlib.ExitStack() as servers:
    paths = (snakemake.input.chunks, cache, settings["max_tokens"], snakemake.log.server, servers)
    served, admit = gated_models(entries, who, *paths)
    results, swaps = run_grounding(memory, settings, parsed, chunks, ranking, served, admit)
for result in results:
    log.info("%s", describe_case(result))
for swap in swaps:
    log.info("swap (%s) %r -> %r", swap.generator, swap.swap.correct, swap.swap.swapped)
answers, cases, swapped = grounding_tables(results, swaps)
write_csv(answers, snakemake.output.answers)
write_csv(cases, snakemake.output.cases)
write_csv(swapped, snakemake.output.swap)
finish_job()
