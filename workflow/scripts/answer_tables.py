"""Gather every reader's answers into the tables users read; cross-validated kinds' thresholds chosen here."""

import json

import pandas as pd

from rag.formats.files import write_csv
from rag.measuring.offline_tables import summarize_answers
from rag.measuring.thresholds import (
    apply_thresholds,
    cross_validated_thresholds,
    held_out_answers,
    threshold_table,
)
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
reader = json.loads(snakemake.params.reader)
keys = ["corpus", "chunker", "retriever", "reader"]


def gathered(paths):
    frame = pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)
    return frame.sort_values([*keys, "question_id"], kind="stable", ignore_index=True)


# The summary prompts come after the rankings they are compared with.
parts = [gathered(snakemake.input.ranked), gathered(snakemake.input.summaries)]
choices = []
for position, part in enumerate(parts):
    # The spec's generator keeps its configured threshold (rag.kinds.Kind.threshold).
    chosen = part["reader"].isin(snakemake.params.cross_validated)
    if chosen.any():
        # A holdout share's questions choose no threshold (rag.evaluation.holdout).
        held = held_out_answers(part[chosen], snakemake.params.holdouts)
        thresholds, table = cross_validated_thresholds(
            part[chosen], keys, reader["folds"], reader["seed"], held_out=held
        )
        applied = apply_thresholds(part[chosen], thresholds)
        parts[position] = pd.concat([part[~chosen], applied]).sort_index()
        choices.append(table)
answers = pd.concat(parts, ignore_index=True)
summary = pd.concat([summarize_answers(part, keys) for part in parts], ignore_index=True)
thresholds = threshold_table(choices, keys)
for row in thresholds[thresholds["fold"] == "all"].itertuples():
    log.info("%s/%s/%s %s: threshold %.2f", row.corpus, row.chunker, row.retriever, row.reader, row.threshold)
write_csv(answers, snakemake.output.answers)
write_csv(summary, snakemake.output.summary)
write_csv(thresholds, snakemake.output.thresholds)
finish_job()
