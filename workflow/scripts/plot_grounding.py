"""The grounding figure: true against wrong answer per case and model, and the swap ratios."""

import json

import pandas as pd

from rag.formats.files import atomic_path, write_figure
from rag.pipeline.jobs import finish_job, start_log
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
