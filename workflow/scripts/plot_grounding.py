"""The grounding figure: true against wrong answer per case and model, and the swap ratios."""

import json

import pandas as pd

from rag.io import atomic_path, finish_job, start_log, write_figure
from rag.plotting import grounding_figure

log = start_log(snakemake.log[0])
figure = grounding_figure(
    pd.read_csv(snakemake.input.answers),
    pd.read_csv(snakemake.input.swap),
    json.loads(snakemake.params.setting),
)
with atomic_path(snakemake.output[0]) as temporary:
    write_figure(figure, temporary)
finish_job()
