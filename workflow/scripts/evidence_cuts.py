"""Evidence pieces each chunker cuts, beside the cut-probability formula."""

import pandas as pd

from rag.evaluation.chunk_judging import PieceCut
from rag.evaluation.statistics import cut_summary
from rag.formats.files import write_csv
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
rows = []
for (corpus, chunker), path in zip(snakemake.params.pairs, snakemake.input, strict=True):
    frame = pd.read_parquet(path)
    cuts = [PieceCut(**record) for record in frame.to_dict("records")]
    rows.append(cut_summary(cuts, corpus, chunker))
write_csv(pd.DataFrame(rows), snakemake.output[0])
finish_job()
