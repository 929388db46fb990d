"""Every judge of answers against the hand labels: results/judge_calibration.csv and the verdicts."""

import json

import pandas as pd

from rag.answering.caller_sources import named_caller
from rag.formats.files import write_csv
from rag.measuring.citation_accuracy import read_claim_labels
from rag.measuring.judging import (
    ALWAYS_CORRECT,
    DETERMINISTIC,
    VERDICT_FRAME_COLUMNS,
    always_correct_verdicts,
    asked_verdicts,
    calibration_table,
    deterministic_verdicts,
    judge_from_entry,
    judged_labels,
)
from rag.models.gate import chunk_access, model_entry, open_gate
from rag.models.local_server import follow_job_threads
from rag.models.response_cache import ResponseCache
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log.job)
follow_job_threads(snakemake.threads)  # a bundled server computes with the rule's threads
labels = judged_labels(read_claim_labels(*snakemake.input.claim_labels))
chunks = pd.read_parquet(snakemake.input.chunks, columns=["chunk_id", "text"])
chunk_texts = dict(zip(chunks["chunk_id"], chunks["text"], strict=True))
verdicts = {
    DETERMINISTIC: deterministic_verdicts(labels, chunk_texts),
    ALWAYS_CORRECT: always_correct_verdicts(labels),
}
cache = ResponseCache(snakemake.params.cache)
# A judge answers as the caller of the answers it judges: every request passes its gate.
caller, _ = named_caller(snakemake.params.caller)
access = chunk_access(snakemake.input.chunks)
for name, entry in sorted(json.loads(snakemake.params.judges).items()):
    judge = judge_from_entry(name, entry)
    gate = open_gate(caller=caller, entry=model_entry(name, entry, "judge"), table=access)
    # Each task asked with its verdict schema and log-probabilities; an optional judge that
    # cannot answer here is left out, with one warning.
    optional = name in snakemake.params.optional
    asked = asked_verdicts(
        labels, judge, chunk_texts, cache, snakemake.log.server, log.info, optional, log.warning, gate
    )
    if asked is not None:
        verdicts[name] = asked
table = calibration_table(labels, verdicts)
every = pd.concat([frame.assign(judge=name) for name, frame in sorted(verdicts.items())], ignore_index=True)
write_csv(table, snakemake.output.calibration)
write_csv(every[["judge", *VERDICT_FRAME_COLUMNS]], snakemake.output.verdicts)
log.info("%d labelled answers, %d judges", len(labels), len(verdicts))
finish_job()
