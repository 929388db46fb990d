"""A BEIR collection's files: corpus, queries and qrels read and written, errors naming file and line."""

from __future__ import annotations

import os
from pathlib import Path

from rag.corpus.beir import (
    CORPUS_FILE,
    QUERIES_FILE,
    beir_questions,
    corpus_line,
    parse_corpus,
    parse_qrels,
    parse_queries,
    qrels_lines,
    qrels_path,
    query_line,
)
from rag.documents.access_metadata import DEFAULT_ACCESS
from rag.documents.blocks import Document
from rag.formats.files import write_text


def _read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file, split on newlines only (never inside a JSON string)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: not valid UTF-8") from None
    return text.split("\n")


def beir_files(folder: str | os.PathLike, split: str) -> dict[str, Path]:
    """The three files of a BEIR collection's split."""
    folder = Path(folder)
    return {
        "corpus": folder / CORPUS_FILE,
        "queries": folder / QUERIES_FILE,
        "qrels": folder / qrels_path(split),
    }


def read_beir_collection(
    corpus: str | os.PathLike,
    queries: str | os.PathLike,
    qrels: str | os.PathLike,
    default_access: str = DEFAULT_ACCESS,
    default_tenant: str = "",
    default_acl: tuple[str, ...] = (),
) -> tuple[list[Document], list, list]:
    """Documents, questions and judgements of one BEIR split; errors name file and line.

    ``default_access``, ``default_tenant`` and ``default_acl`` are a document's
    when its record states no ``access``, ``tenant`` or ``acl``.
    """
    documents = parse_corpus(
        _read_lines(Path(corpus)), str(corpus), default_access, default_tenant, default_acl
    )
    parsed_queries = parse_queries(_read_lines(Path(queries)), str(queries))
    judgements = parse_qrels(
        _read_lines(Path(qrels)),
        str(qrels),
        {document.doc_id for document in documents},
        {query.query_id for query in parsed_queries},
    )
    return documents, beir_questions(parsed_queries, judgements), judgements


def write_beir_collection(folder: str | os.PathLike, collection, split: str) -> dict[str, Path]:
    """Write a :class:`rag.corpus.beir.BeirCollection` as corpus, queries and one qrels split."""
    files = beir_files(folder, split)
    write_text(files["corpus"], "".join(corpus_line(document) + "\n" for document in collection.documents))
    write_text(files["queries"], "".join(query_line(query) + "\n" for query in collection.queries))
    write_text(files["qrels"], "".join(line + "\n" for line in qrels_lines(collection.judgements)))
    return files
