"""Recall and share scanned against exact search on seeded synthetic vectors; the times go to the timings."""

import json

from rag.formats.files import write_sweep
from rag.pipeline.jobs import finish_job, start_log
from rag.retrieval.ivf import probe_tradeoff
from rag.retrieval.synthetic import clustered_unit_vectors, queries_near_clusters
from rag.timing import IVF_TIMING_COLUMNS, split_timings

log = start_log(snakemake.log[0])
settings = json.loads(snakemake.params.settings)
shape = {key: settings[key] for key in ("dimensions", "centres", "spread", "seed")}
vectors = clustered_unit_vectors(settings["vectors"], **shape)
queries = queries_near_clusters(settings["queries"], **shape)
log.info(
    "building an IVF index of %d lists over %d vectors, then timing exact search and %d probe settings, "
    "%d rounds (up to a minute)",
    settings["lists"],
    settings["vectors"],
    len(settings["probes"]),
    settings["repeats"],
)
table = probe_tradeoff(
    vectors,
    queries,
    settings["lists"],
    settings["probes"],
    settings["k"],
    seed=settings["seed"],
    repeats=settings["repeats"],
)
named_by = ["vectors", "dimensions", "queries"]
quality, timings = split_timings(table, ["lists", "probes", "k"], IVF_TIMING_COLUMNS)
write_sweep(quality, settings, named_by, snakemake.output.quality, log)
write_sweep(timings, settings, named_by, snakemake.output.timings, log)
finish_job()
