"""Encode every sentence and question a chunk set's prompts can hold, once, for its answer jobs."""

import pandas as pd

from rag.answering.reader import CachedSentenceEmbedder, prompt_texts, write_prompt_vectors
from rag.chunk_tables import chunks_from_frame
from rag.formats.files import read_yaml
from rag.labels import parse_questions
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)
chunks = chunks_from_frame(pd.read_parquet(snakemake.input.chunks))
texts = prompt_texts([question.text for question in questions], chunks)
embedder = CachedSentenceEmbedder(snakemake.params.cache, report=log.info)
encoded = write_prompt_vectors(embedder, texts, snakemake.output[0])
log.info("%d texts (questions and chunk sentences), %d encoded, the rest cached", len(texts), encoded)
finish_job()
