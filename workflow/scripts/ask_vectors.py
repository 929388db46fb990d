"""Encode every text the held-out check embeds with MiniLM, ahead of it, into the cache and one file."""

from rag.answering.reader import CachedSentenceEmbedder, write_prompt_vectors
from rag.ask.index import documents_and_question_sets
from rag.ask.measure import measured_ask_texts
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
documents, question_sets = documents_and_question_sets(
    snakemake.input.documents, snakemake.input.development, snakemake.input.heldout
)
texts = measured_ask_texts(documents, question_sets)
embedder = CachedSentenceEmbedder(snakemake.params.cache, report=log.info)
encoded = write_prompt_vectors(embedder, texts, snakemake.output[0])
log.info("%d texts (rag ask's chunks, their sentences, the questions), %d encoded", len(texts), encoded)
finish_job()
