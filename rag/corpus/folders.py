"""A folder of files as a corpus: Markdown, plain text or HTML.

The three folder sources differ only in how one file becomes a document;
finding the files, naming the documents and counting what each reader left
out are shared, so a user's folder of ``.txt`` notes or saved web pages runs
through the same grid as a folder of Markdown.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

from rag.corpus.articles import document_from_html_file
from rag.corpus.documents import (
    DEFAULT_ACCESS,
    DEFAULT_SKIPPED,
    SKIPPABLE,
    Block,
    Document,
    DocumentError,
    check_access_level,
    check_document_id,
    check_skipped,
    content_version,
    normalize_passage,
    parse_markdown_counted,
)

# The file name endings each folder source reads.
FOLDER_SOURCES: dict[str, tuple[str, ...]] = {
    "markdown": (".md",),
    "text": (".txt",),
    "html": (".html", ".htm"),
}

_BLANK_LINES = re.compile(r"\n[ \t\r\f\v]*\n")


def check_inside(path: Path, folder: Path) -> None:
    """Refuse a file that is, or leads through a link to, something outside ``folder``.

    A symbolic link in a corpus folder could index any file the user can
    read (``notes.md -> ~/.ssh/config``); nothing is followed out of the folder.
    """
    if not path.resolve().is_relative_to(folder.resolve()):
        raise DocumentError(
            f"{path}: a link to a file outside the corpus folder {folder}; copy the file in instead"
        )


def folder_files(folder: str | Path, source: str) -> list[Path]:
    """The folder's files of the source's kind, in name order (not recursive); none may lead outside it."""
    endings = FOLDER_SOURCES[source]
    files = sorted(
        path for path in Path(folder).iterdir() if path.is_file() and path.suffix.lower() in endings
    )
    for path in files:
        check_inside(path, Path(folder))
    return files


def skipped_setting(entry: dict, where: str) -> tuple[str, ...]:
    """What a corpus entry leaves out: its ``skip`` list, or its source's default."""
    if "skip" not in entry:
        return DEFAULT_SKIPPED[entry["source"]]
    skip = check_skipped(entry["skip"], f"{where}['skip']")
    if entry["source"] in ("html", "wikipedia") and skip != SKIPPABLE:
        raise DocumentError(
            f"{where}['skip']: the article reader of source {entry['source']!r} keeps only paragraphs, "
            f"so it always skips {list(SKIPPABLE)}"
        )
    return skip


def parse_text(text: str, doc_id: str, access: str = DEFAULT_ACCESS) -> Document:
    """Plain text: paragraphs separated by blank lines, all in the lead; the file name is the title.

    Plain text has nowhere to state an access level, so ``access`` (the
    corpus's ``default_access``) is every text document's level.
    """
    paragraphs = (normalize_passage(part) for part in _BLANK_LINES.split(text.replace("\r\n", "\n")))
    blocks = tuple(Block((), paragraph) for paragraph in paragraphs if paragraph)
    if not blocks:
        raise DocumentError(f"{doc_id}: no paragraphs to index")
    version = content_version(blocks)
    return Document(doc_id=doc_id, title=doc_id, version=version, blocks=blocks, access=access)


def read_document(
    text: str,
    name: str,
    source: str,
    skip: Collection[str] | None = None,
    default_access: str = DEFAULT_ACCESS,
) -> tuple[Document, dict[str, int]]:
    """One file of a folder source as a document, with the lines (or elements) it skipped.

    ``name`` is the file's name: it identifies the file in errors and, without
    the ending, is the document's id (a Markdown front matter may set another).
    ``default_access`` is the access of a document that declares none: a
    Markdown file without ``access`` in its front matter, an HTML file without
    ``<meta name="access">``, and every plain text file.
    """
    default_access = check_access_level(default_access, "default_access")
    if source == "markdown":
        skip = DEFAULT_SKIPPED["markdown"] if skip is None else skip
        return parse_markdown_counted(text, name, skip, default_access)
    doc_id = check_document_id(Path(name).stem, name)
    if source == "text":
        return parse_text(text, doc_id, default_access), dict.fromkeys(SKIPPABLE, 0)
    if source == "html":
        return document_from_html_file(text, doc_id, default_access, name)
    raise DocumentError(f"{name}: unknown folder source {source!r}; expected one of {sorted(FOLDER_SOURCES)}")
