"""Route every question to one document by its lead summary, then rank chunks of that document only."""

import json
import sys

from rag.answering.routing import RoutingSetup, describe_routes, route_corpus, routing_tables, without_leads
from rag.corpus.document_tables import BLOCK_COLUMNS
from rag.evaluation.metrics import QRELS_COLUMNS
from rag.formats.files import write_csv
from rag.formats.tables import load_arrays, read_columns, read_provenance
from rag.pipeline.jobs import finish_job, start_log
from rag.question_tables import read_questions

log = start_log(snakemake.log[0])
inputs, params = snakemake.input, snakemake.params
retriever, routing = json.loads(params.retriever), json.loads(params.routing)
routed = []
for position, corpus in enumerate(params.corpora):
    setup = RoutingSetup(retriever, routing, params.depths[position], params.ks)  # the corpus's ranking depth
    routes = route_corpus(
        corpus,
        read_questions(inputs.questions[position]),
        read_columns(inputs.parsed[position], BLOCK_COLUMNS),
        read_columns(inputs.chunks[position], ["chunk_id", "doc_id", "n_words"]),
        read_columns(inputs.qrels[position], QRELS_COLUMNS),
        load_arrays(inputs.index[position]),
        read_provenance(inputs.chunks[position]),
        setup,
        source=str(inputs.questions[position]),
    )
    if routes is None:
        # Issue 16: routing by lead summaries needs leads; left out, not an error.
        log.warning("%s", without_leads(corpus))
        print(f"WARNING: {without_leads(corpus)}", file=sys.stderr)
        continue
    routed.append(routes)
    log.info("%s", describe_routes(routes))
routing, metrics = routing_tables(routed)
write_csv(routing, snakemake.output.routing)
write_csv(metrics, snakemake.output.metrics)
finish_job()
