"""Pin each Wikipedia title to a revision and record the parsed text's digest.

Only the titles and the date are parameters of this rule: settings such as
``strict`` or the contact must not re-pin the articles when they change.
"""

from rag.corpus.sources import resolve_lock, wikipedia_client
from rag.corpus.wikipedia import build_lock
from rag.formats.files import FolderCache, write_yaml
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
entry = snakemake.config["corpora"][snakemake.wildcards.corpus]
cache = FolderCache(entry.get("cache", "cache/wikipedia"))
articles = resolve_lock(entry, wikipedia_client(entry), cache, log)
write_yaml(snakemake.output[0], build_lock(articles))
finish_job()
