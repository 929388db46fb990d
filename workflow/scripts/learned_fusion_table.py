"""The weights every learned fusion chose per fold, in one table."""

from pathlib import Path

import pandas as pd

from rag.evaluation.learned_fusion import WEIGHTS_COLUMNS
from rag.formats.files import write_csv
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
parts = []
for path in snakemake.input:
    corpus, chunker, retriever = Path(path).with_suffix("").parts[-3:]
    table = pd.read_csv(path)
    table.insert(0, "retriever", retriever)
    table.insert(0, "chunker", chunker)
    table.insert(0, "corpus", corpus)
    parts.append(table)
columns = ["corpus", "chunker", "retriever", *WEIGHTS_COLUMNS]
table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
log.info("%d weight rows", len(table))
write_csv(
    table[columns].sort_values(["corpus", "chunker", "retriever", "fold"], kind="stable"), snakemake.output[0]
)
finish_job()
