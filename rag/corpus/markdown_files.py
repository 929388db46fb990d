"""A folder of Markdown files read as (name, text) pairs, every failure naming the path."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# The largest document file read, in bytes: a larger one is refused by name, not parsed.
# Far above any real page or chapter (the bundled documents are under 20 KB), and small
# enough that one stray export or log file cannot stall a run or fill the memory.
MAX_DOCUMENT_BYTES = 20 * 1024 * 1024


class FolderError(ValueError):
    """A documents folder that cannot be read; the message names the folder or file."""


def _read_capped(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes of ``path``; a larger file is an error naming it and the limit.

    Reads one byte past the limit rather than trusting the size on disk, so a
    file that grows while it is read is refused too.
    """
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FolderError(
            f"{path}: larger than {limit // (1024 * 1024)} MB, the most a document may hold "
            "(rag.corpus.markdown_files.MAX_DOCUMENT_BYTES); split it or leave it out"
        )
    return data


def _decoded(data: bytes, path: Path) -> str:
    """The UTF-8 text of a file's bytes; other bytes are an error naming the file and line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise FolderError(f"{path}, line {line}: not UTF-8 text (byte {error.start})") from None


@dataclass(frozen=True)
class MarkdownFile:
    """One ``*.md`` file of a folder: its name (also its default document id) and text."""

    name: str
    text: str


def read_markdown_file(path: str | os.PathLike, limit: int | None = None) -> str:
    """The text of one document file (Markdown, text or HTML).

    An unreadable file, one that is not UTF-8 text and one larger than
    ``limit`` bytes (default :data:`MAX_DOCUMENT_BYTES`) are errors naming it.
    """
    limit = MAX_DOCUMENT_BYTES if limit is None else limit
    try:
        data = _read_capped(Path(path), limit)
    except OSError as error:
        raise FolderError(f"{path}: cannot be read ({error.strerror or error})") from None
    return _decoded(data, Path(path))


def read_markdown_folder(folder: str | os.PathLike) -> list[MarkdownFile]:
    """Every ``*.md`` file directly in ``folder``, in name order.

    A missing folder, a folder without Markdown files, a file that is not
    UTF-8 text and one over the size cap are errors naming the path, so the caller can report them in
    one line instead of failing later with an empty index.
    """
    path = Path(folder)
    if not path.exists():
        raise FolderError(f"{folder}: no such folder")
    if not path.is_dir():
        raise FolderError(f"{folder}: not a folder")
    try:
        # Listed first: glob would take an unreadable folder for an empty one.
        names = [entry for entry in path.iterdir() if entry.suffix == ".md"]
    except OSError as error:
        raise FolderError(f"{folder}: cannot be read ({error.strerror or error})") from None
    files = sorted(entry for entry in names if entry.is_file())
    if not files:
        raise FolderError(f"{folder}: no Markdown documents (*.md) in this folder")
    documents = []
    for file in files:
        if not file.resolve().is_relative_to(path.resolve()):
            raise FolderError(
                f"{file}: a link to a file outside the folder {folder}; copy the file in instead"
            )
        try:
            text = _read_capped(file, MAX_DOCUMENT_BYTES).decode("utf-8")
        except UnicodeDecodeError as error:
            raise FolderError(f"{file}: not UTF-8 text (byte {error.start})") from None
        except OSError as error:
            raise FolderError(f"{file}: cannot be read ({error.strerror or error})") from None
        documents.append(MarkdownFile(file.name, text))
    return documents
