"""results/answers.md from the answer tables, never by hand."""

import pandas as pd

from rag.formats.files import write_text
from rag.measuring.answers_document import answers_document
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
heldout = pd.read_csv(snakemake.input.heldout[0]) if snakemake.input.heldout else None
# The language models' tables (summary, closed book, citation check, verdicts), the reader's rules,
# then citation accuracy and the judges' calibration.
llm = [pd.read_csv(path) for path in snakemake.input.llm] or [None] * 4
rules = pd.read_csv(snakemake.input.reader_rules[0]) if snakemake.input.reader_rules else None
accuracy = pd.read_csv(snakemake.input.accuracy[0]) if snakemake.input.accuracy else None
judges = pd.read_csv(snakemake.input.judges[0]) if snakemake.input.judges else None
document = answers_document(
    pd.read_csv(snakemake.input.summary),
    pd.read_csv(snakemake.input.thresholds, dtype={"fold": str}),
    heldout,
    (*llm, rules, accuracy, judges),
)
write_text(snakemake.output[0], document)
finish_job()
