"""The two-panel figure of the approximate-search experiments."""

import pandas as pd

from rag.formats.files import atomic_path, write_figure
from rag.jobs import finish_job, start_log
from rag.plotting import ivf_tradeoff

log = start_log(snakemake.log[0])
figure = ivf_tradeoff(pd.read_csv(snakemake.input.collection), pd.read_csv(snakemake.input.synthetic))
with atomic_path(snakemake.output[0]) as temporary:
    write_figure(figure, temporary)
finish_job()
