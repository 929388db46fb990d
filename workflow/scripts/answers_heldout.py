"""Answer the development and the held-out questions through rag ask's path, the reader frozen."""

import pandas as pd

from rag.answering.caller_sources import named_caller
from rag.answering.reader import CachedSentenceEmbedder, dense_available, read_chosen_thresholds
from rag.answering.trace import trace_lines
from rag.ask.index import documents_and_question_sets
from rag.ask.measure import measure_ask
from rag.formats.files import write_csv, write_text
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
documents, question_sets = documents_and_question_sets(
    snakemake.input.documents, snakemake.input.development, snakemake.input.heldout
)
embedder = CachedSentenceEmbedder(snakemake.params.cache) if dense_available() else None
if embedder is not None:
    for path in snakemake.input.ask_vectors:  # the texts encoded ahead (rule ask_vectors)
        embedder.preload(path)
else:
    log.warning("the dense extra is not installed: only the spec's BM25 + LSA + IVF retriever is measured")
# The reader frozen at the thresholds the cross-validation chose (results/reader_thresholds.csv).
thresholds = read_chosen_thresholds(snakemake.input.thresholds)
caller, _ = named_caller(snakemake.params.caller)  # the answers' caller: its view is a prefilter
traces = []
table = pd.DataFrame(measure_ask(documents, question_sets, thresholds, embedder, caller, traces))
if embedder is not None:
    log.info("%d texts encoded here, not found in the cache", len(embedder.fresh))
    embedder.save()
for row in table[table["group"] == "answerable"].itertuples():
    log.info(
        "%s, %s, %s: %d of %d answerable correct, %d wrong",
        row.questions_file,
        row.retriever,
        row.generator,
        row.correct,
        row.questions,
        row.wrong,
    )
write_csv(table, snakemake.output.table)
write_text(snakemake.output.traces, trace_lines(traces))
finish_job()
