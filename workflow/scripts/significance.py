"""Bootstrap intervals of every metric row and paired tests against the baseline.

Each ranking's intervals, and its comparison with the baseline, are a part
(rag.evaluation.table_parts) keyed by the values they read: adding a retriever
resamples only its own rows.
"""

from pathlib import Path

import pandas as pd

from rag.evaluation.holdout import with_holdout_rows
from rag.evaluation.significance import (
    PERMUTATIONS,
    RESAMPLES,
    SEED,
    interval_table_from_parts,
    significance_table_from_parts,
)
from rag.evaluation.table_parts import PartStore
from rag.formats.files import write_csv
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
values = pd.concat([pd.read_parquet(path) for path in snakemake.input.question_values], ignore_index=True)
# A holdout share's questions again, as corpus '<name>:holdout' (rag.evaluation.holdout).
values = with_holdout_rows(values, snakemake.params.holdouts)
log.info(
    "%d per-question values; %d resamples, %d permutations, seed %d",
    len(values),
    RESAMPLES,
    PERMUTATIONS,
    SEED,
)
baseline, store, code = (
    snakemake.params.baseline,
    PartStore(Path(snakemake.params.parts)),
    snakemake.params.code,
)
intervals, line = interval_table_from_parts(values, store, code)
log.info("%s", line)
write_csv(intervals, snakemake.output.intervals)
table, line = significance_table_from_parts(values, baseline, store, code)
log.info("%s", line)
log.info(
    "%d comparisons with %s, %d significant after correction",
    len(table),
    baseline,
    int(table["significant"].sum()),
)
write_csv(table, snakemake.output.significance)
finish_job()
