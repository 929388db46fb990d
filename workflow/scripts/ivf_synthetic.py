"""Recall, share scanned and time against exact search on seeded synthetic vectors."""

import json

from rag.formats.files import write_sweep
from rag.jobs import finish_job, start_log
from rag.retrieval.ivf import probe_tradeoff
from rag.retrieval.synthetic import clustered_unit_vectors, queries_near_clusters

log = start_log(snakemake.log[0])
settings = json.loads(snakemake.params.settings)
shape = {key: settings[key] for key in ("dimensions", "centres", "spread", "seed")}
vectors = clustered_unit_vectors(settings["vectors"], **shape)
queries = queries_near_clusters(settings["queries"], **shape)
table = probe_tradeoff(
    vectors,
    queries,
    settings["lists"],
    settings["probes"],
    settings["k"],
    seed=settings["seed"],
    repeats=settings["repeats"],
)
write_sweep(table, settings, ["vectors", "dimensions", "queries"], snakemake.output[0], log)
finish_job()
