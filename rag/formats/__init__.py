"""File formats every stage shares: atomic writes, YAML, CSV, parquet with provenance, npz.

Each stage keeps its own formats beside it (``rag.corpus.document_tables``,
``rag.chunk_tables``, ``rag.question_tables``, ``rag.retrieval.ranking_files``,
``rag.retrieval.dense.embedding_shards``); what they all write through lives
here, below every stage, so no stage imports another to write a file. The
helpers that take a Snakemake job are in :mod:`rag.pipeline.jobs`, which only the
workflow scripts import.
"""
