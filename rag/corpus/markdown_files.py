"""A folder of Markdown files read as (name, text) pairs, every failure naming the path."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


class FolderError(ValueError):
    """A documents folder that cannot be read; the message names the folder or file."""


@dataclass(frozen=True)
class MarkdownFile:
    """One ``*.md`` file of a folder: its name (also its default document id) and text."""

    name: str
    text: str


def read_markdown_file(path: str | os.PathLike) -> str:
    """The text of one Markdown file; an unreadable or non-UTF-8 file is an error naming it."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise FolderError(f"{path}: cannot be read ({error.strerror or error})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise FolderError(f"{path}, line {line}: not UTF-8 text (byte {error.start})") from None


def read_markdown_folder(folder: str | os.PathLike) -> list[MarkdownFile]:
    """Every ``*.md`` file directly in ``folder``, in name order.

    A missing folder, a folder without Markdown files and a file that is not
    UTF-8 text are errors naming the path, so the caller can report them in
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
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise FolderError(f"{file}: not UTF-8 text (byte {error.start})") from None
        except OSError as error:
            raise FolderError(f"{file}: cannot be read ({error.strerror or error})") from None
        documents.append(MarkdownFile(file.name, text))
    return documents
