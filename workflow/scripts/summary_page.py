"""results/README.html and the report's front-page numbers, from the Markdown summary and summary.csv."""

from pathlib import Path

import pandas as pd

from rag.formats.files import write_text, write_yaml
from rag.formats.summary_page import report_metadata, summary_page
from rag.pipeline.jobs import finish_job, start_log

start_log(snakemake.log[0])
markdown = Path(snakemake.input.readme).read_text(encoding="utf-8")
write_text(snakemake.output.page, summary_page(markdown))
write_yaml(snakemake.output.metadata, report_metadata(pd.read_csv(snakemake.input.summary)))
finish_job()
