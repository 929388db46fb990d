"""The recall figure of the approximate-search experiments, and the query-time figure of the timings."""

import pandas as pd

from rag.formats.files import atomic_path, write_figure
from rag.pipeline.jobs import finish_job, start_log
from rag.plotting import ivf_query_time, ivf_tradeoff

log = start_log(snakemake.log[0])
synthetic = pd.read_csv(snakemake.input.synthetic)
figures = {
    snakemake.output.recall: ivf_tradeoff(pd.read_csv(snakemake.input.collection), synthetic),
    snakemake.output.timings: ivf_query_time(synthetic.merge(pd.read_csv(snakemake.input.timings))),
}
for path, figure in figures.items():
    with atomic_path(path) as temporary:
        write_figure(figure, temporary)
finish_job()
