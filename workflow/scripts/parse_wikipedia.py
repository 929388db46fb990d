"""Parse the pinned Wikipedia revisions (from the cache, fetching what is missing)."""

import json
import warnings

from rag.corpus.articles import parse_article_html_counted
from rag.corpus.documents import PARSER_VERSION
from rag.corpus.sources import cache_key, locked_documents, wikipedia_client
from rag.corpus.wikipedia import article_doc_id, parse_lock
from rag.io import (
    FolderCache,
    documents_to_frame,
    finish_job,
    provenance,
    read_yaml,
    start_log,
    write_parquet,
)
from rag.provenance import documents_record

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.corpus)
cache = FolderCache(entry.get("cache", "cache/wikipedia"))
articles = list(parse_lock(read_yaml(snakemake.input.lock)))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    documents = locked_documents(entry, articles, wikipedia_client(entry), cache)
for warning in caught:
    log.warning("%s", warning.message)
    print(f"WARNING: {warning.message}")
documents.sort(key=lambda document: document.doc_id)
# What the article reader left out of each article (tables, lists, references,
# code), counted in results/corpus_statistics.csv; the HTML is in the cache now.
skipped = {
    article_doc_id(article.title): parse_article_html_counted(
        cache.read(cache_key(article.title, article.revision)), article.title
    )[1]
    for article in articles
}
write_parquet(
    documents_to_frame(documents),
    snakemake.output[0],
    provenance(
        stage="parse",
        parser_version=PARSER_VERSION,
        source="wikipedia",
        lock=[a.revision for a in articles],
        skipped=dict(sorted(skipped.items())),
        **documents_record({document.doc_id: document.version for document in documents}),
    ),
)
finish_job()
