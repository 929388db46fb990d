"""Every judge of answers against the hand labels: results/judge_calibration.csv and the verdicts."""

import json

import pandas as pd

from rag.answering.caller_sources import named_caller
from rag.answering.judging import (
    DETERMINISTIC,
    calibration_table,
    deterministic_verdicts,
    judge_from_entry,
    model_verdicts,
    read_labels,
)
from rag.answering.llm_answers import complete_with_cache
from rag.formats.files import write_csv
from rag.jobs import finish_job, start_log
from rag.models.gate import chunk_access, model_entry, open_gate
from rag.models.local_server import follow_job_threads
from rag.models.response_cache import ResponseCache

log = start_log(snakemake.log.job)
follow_job_threads(snakemake.threads)  # a bundled server computes with the rule's threads
labels = read_labels(snakemake.input.labels)
chunks = pd.read_parquet(snakemake.input.chunks, columns=["chunk_id", "text"])
chunk_texts = dict(zip(chunks["chunk_id"], chunks["text"], strict=True))
verdicts = {DETERMINISTIC: deterministic_verdicts(labels, chunk_texts)}
cache = ResponseCache(snakemake.params.cache)
# A judge answers as the caller of the answers it judges: every request passes its gate.
caller, _ = named_caller(snakemake.params.caller)
table = chunk_access(snakemake.input.chunks)
for name, entry in sorted(json.loads(snakemake.params.judges).items()):
    judge = judge_from_entry(name, entry)
    gate = open_gate(caller=caller, entry=model_entry(name, entry, "judge"), table=table)
    complete = complete_with_cache(judge, cache, snakemake.log.server, log.info, gate=gate)
    verdicts[name] = model_verdicts(labels, judge, chunk_texts, complete, gate)
table = calibration_table(labels, verdicts)
every = pd.concat([frame.assign(judge=name) for name, frame in sorted(verdicts.items())], ignore_index=True)
write_csv(table, snakemake.output.calibration)
write_csv(every[["judge", "item", "correct", "supported"]], snakemake.output.verdicts)
log.info("%d labelled answers, %d judges", len(labels), len(verdicts))
finish_job()
