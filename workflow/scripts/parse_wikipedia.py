"""Parse the pinned Wikipedia revisions (from the cache, fetching what is missing)."""

import json
import warnings

from rag.corpus.articles import parse_article_html_counted
from rag.corpus.document_tables import write_parsed_documents
from rag.corpus.sources import cache_key, locked_documents, wikipedia_client
from rag.corpus.wikipedia import article_doc_id, parse_lock
from rag.escaping import visible
from rag.formats.files import FolderCache, read_yaml
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.corpus)
cache = FolderCache(entry.get("cache", "cache/wikipedia"))
articles = list(parse_lock(read_yaml(snakemake.input.lock)))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    documents = locked_documents(entry, articles, wikipedia_client(entry), cache)
for warning in caught:
    log.warning("%s", warning.message)
    print(f"WARNING: {visible(str(warning.message), keep_newlines=False)}")
# What the article reader left out of each article (tables, lists, references,
# code), counted in results/corpus_statistics.csv; the HTML is in the cache now.
skipped = {
    article_doc_id(article.title): parse_article_html_counted(
        cache.read(cache_key(article.title, article.revision)), article.title
    )[1]
    for article in articles
}
write_parsed_documents(
    documents,
    snakemake.output[0],
    source="wikipedia",
    lock=[a.revision for a in articles],
    skipped=dict(sorted(skipped.items())),
)
finish_job()
