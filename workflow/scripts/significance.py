"""Bootstrap intervals of every metric row and paired tests against the baseline."""

import pandas as pd

from rag.evaluation.holdout import with_holdout_rows
from rag.evaluation.significance import PERMUTATIONS, RESAMPLES, SEED, interval_table, significance_table
from rag.formats.files import write_csv
from rag.jobs import finish_job, start_log

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
write_csv(interval_table(values), snakemake.output.intervals)
table = significance_table(values, snakemake.params.baseline)
log.info(
    "%d comparisons with %s, %d significant after correction",
    len(table),
    snakemake.params.baseline,
    int(table["significant"].sum()),
)
write_csv(table, snakemake.output.significance)
finish_job()
