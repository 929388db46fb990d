"""Every judge of answers against the hand labels: results/judge_calibration.csv and the verdicts."""

import json

import pandas as pd

from rag.answering.judging import (
    ALWAYS_CORRECT,
    DETERMINISTIC,
    TASKS,
    VERDICT_FRAME_COLUMNS,
    always_correct_verdicts,
    calibration_table,
    deterministic_verdicts,
    judge_from_entry,
    model_verdicts,
    read_labels,
    verdict_format,
)
from rag.answering.llm_answers import complete_with_cache
from rag.formats.files import write_csv
from rag.jobs import finish_job, start_log
from rag.models.client import LlmError
from rag.models.local_server import LocalServerError, follow_job_threads
from rag.models.response_cache import ResponseCache

log = start_log(snakemake.log.job)
follow_job_threads(snakemake.threads)  # a bundled server computes with the rule's threads
labels = read_labels(snakemake.input.labels)
chunks = pd.read_parquet(snakemake.input.chunks, columns=["chunk_id", "text"])
chunk_texts = dict(zip(chunks["chunk_id"], chunks["text"], strict=True))
verdicts = {
    DETERMINISTIC: deterministic_verdicts(labels, chunk_texts),
    ALWAYS_CORRECT: always_correct_verdicts(labels),
}
cache = ResponseCache(snakemake.params.cache)
for name, entry in sorted(json.loads(snakemake.params.judges).items()):
    judge = judge_from_entry(name, entry)
    complete = {
        task: complete_with_cache(
            judge,
            cache,
            snakemake.log.server,
            log.info,
            reply_format=verdict_format(judge, task),
            top_logprobs=judge.top_logprobs or None,
        )
        for task in TASKS
    }
    try:
        verdicts[name] = model_verdicts(labels, judge, chunk_texts, complete)
    except (LlmError, LocalServerError) as error:
        if not entry.get("optional"):
            raise
        # An optional judge that cannot answer here (its model not installed and its replies not
        # all in the cache, say) is left out of the table, with one warning.
        log.warning("judge %s left out of judge_calibration.csv (optional): %s", name, error)
table = calibration_table(labels, verdicts)
every = pd.concat([frame.assign(judge=name) for name, frame in sorted(verdicts.items())], ignore_index=True)
write_csv(table, snakemake.output.calibration)
write_csv(every[["judge", *VERDICT_FRAME_COLUMNS]], snakemake.output.verdicts)
log.info("%d labelled answers, %d judges", len(labels), len(verdicts))
finish_job()
