"""A folder of files as a corpus: any folder source of the table of sources.

The folder sources (:data:`rag.corpus.source_kinds.FOLDER_SOURCES`) differ only
in how one file becomes a document (their row's reader);
finding the files, naming the documents and counting what each reader left
out are shared, so a user's folder of ``.txt`` notes or saved web pages runs
through the same grid as a folder of Markdown.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rag.corpus.documents import ParsedFile, check_skipped, document_defaults, foreign_key_warning
from rag.corpus.markdown_files import (
    MAX_DOCUMENT_BYTES,
    FolderError,
    read_markdown_file,
    read_markdown_folder,
)
from rag.corpus.source_kinds import DEFAULT_SKIPPED, FOLDER_SOURCES, SOURCES, folder_source
from rag.corpus.text_files import parse_text
from rag.documents.access_metadata import DEFAULT_ACCESS, DocumentDefaults, DocumentError, check_access_level
from rag.documents.blocks import Document

__all__ = ["FOLDER_SOURCES", "parse_text"]


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
    always = SOURCES[entry["source"]].always_skips
    if not set(always) <= set(skip):
        raise DocumentError(
            f"{where}['skip']: the reader of source {entry['source']!r} always skips {list(always)}, "
            f"so 'skip' must list them; got {list(skip)}"
        )
    return skip


def read_file(
    text: str | bytes,
    name: str,
    source: str,
    skip: Collection[str] | None = None,
    defaults: DocumentDefaults | None = None,
) -> ParsedFile:
    """One file of a folder source: its document, the lines (or elements) it skipped, and the
    front matter keys it did not use.

    ``name`` is the file's name: it identifies the file in errors and, without
    the ending, is the document's id (a Markdown front matter may set another).
    ``defaults`` are the corpus's access level, tenant and groups of a document
    that states none: a Markdown file without them in its front matter, an
    HTML file without ``<meta name="access|tenant|acl">``, and every plain text file.
    """
    defaults = defaults or DocumentDefaults()
    row = folder_source(source, name)
    access = check_access_level(defaults.access, "default_access")
    checked = DocumentDefaults(access=access, tenant=defaults.tenant, acl=defaults.acl)
    return row.read(text, name, row.default_skip if skip is None else skip, checked)


def file_content(path: Path, source: str) -> str | bytes:
    """What a file of ``source`` is read as: UTF-8 text, or the bytes of a binary source, at most
    :data:`~rag.corpus.markdown_files.MAX_DOCUMENT_BYTES` either way."""
    if not folder_source(source, str(path)).binary:
        return read_markdown_file(path)
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as error:
        raise FolderError(f"{path}: cannot be read ({error.strerror or error})") from None
    if len(data) > MAX_DOCUMENT_BYTES:
        raise FolderError(
            f"{path}: larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MB, the most a document may hold; "
            "split it or leave it out"
        )
    return data


def source_of_folder(folder: str | Path) -> str:
    """The first folder source of the table of sources whose files ``folder`` holds; the first
    row (markdown) for a folder with none, or one that cannot be listed."""
    try:
        endings = {entry.suffix.lower() for entry in Path(folder).iterdir() if entry.is_file()}
    except OSError:
        endings = set()  # the reader of the folder names what is wrong with it
    first = next(iter(FOLDER_SOURCES))
    return next((name for name, ends in FOLDER_SOURCES.items() if endings.intersection(ends)), first)


def read_folder_files(folder: str | Path) -> tuple[str, list[tuple[str, str | bytes]]]:
    """A documents folder as ``rag ask`` reads it: its folder source and its files as (name, content).

    A folder holding Markdown files, or files of no source at all, is read as
    Markdown (:func:`~rag.corpus.markdown_files.read_markdown_folder`, whose
    errors name the folder); any other folder as the first source of the table
    of sources whose files it holds (a folder of PDFs as ``pdf``), each file
    read as its row says (text or bytes, capped in size, never through a link
    out of the folder).
    """
    path = Path(folder)
    source = source_of_folder(path)
    if source == next(iter(FOLDER_SOURCES)):  # markdown, the table's first row
        return source, [(file.name, file.text) for file in read_markdown_folder(folder)]
    try:
        paths = folder_files(path, source)
    except DocumentError as error:
        raise FolderError(str(error)) from None
    return source, [(file.name, file_content(file, source)) for file in paths]


def read_document(
    text: str | bytes,
    name: str,
    source: str,
    skip: Collection[str] | None = None,
    default_access: str = DEFAULT_ACCESS,
) -> tuple[Document, dict[str, int]]:
    """:func:`read_file` with only a default access level: the document and what it skipped."""
    parsed = read_file(text, name, source, skip, DocumentDefaults(access=default_access))
    return parsed.document, parsed.skipped


@dataclass
class FolderReading:
    """Every file of a folder corpus read once: the documents that parsed, and every problem."""

    documents: list[Document] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # File name to the front matter it did not use (key to JSON text), for files that have any.
    other_metadata: dict[str, dict[str, str]] = field(default_factory=dict)
    skipped: dict[str, dict[str, int]] = field(default_factory=dict)  # by document id
    # The default ids (file names without endings) of the files that did not parse.
    failed: set[str] = field(default_factory=set)
    # File name to where its title came from, for files without a 'title' or level-1 heading.
    titles_from: dict[str, str] = field(default_factory=dict)
    # A file's name, with and without its ending, to its document's id, where the front matter set another.
    file_ids: dict[str, str] = field(default_factory=dict)

    def warning(self, where: str) -> str | None:
        """One line naming the front matter keys no reader uses, or None."""
        return foreign_key_warning(((file, keys) for file, keys in self.other_metadata.items()), where)

    def warnings(self, where: str) -> list[str]:
        """Every warning of the reading, one line each: unused front matter keys, fallback titles."""
        lines = [self.warning(where), title_warning(self.titles_from, where)]
        return [line for line in lines if line]


def title_warning(titles_from: Mapping[str, str], where: str, shown: int = 5) -> str | None:
    """One line naming the files without a 'title' or level-1 heading and where their titles came from."""
    if not titles_from:
        return None
    listed = [f"{file} (from {source})" for file, source in list(titles_from.items())[:shown]]
    more = f" and {len(titles_from) - shown} more" if len(titles_from) > shown else ""
    return (
        f"{where}: {len(titles_from)} file{'s' * (len(titles_from) != 1)} without a level-1 heading or a "
        f"'title' in the front matter, titled by their first heading or file name: {', '.join(listed)}{more}"
    )


def read_files(
    paths: list[Path], source: str, skip: Collection[str] | None, defaults: DocumentDefaults
) -> FolderReading:
    """Every file read, every problem kept: one run reports them all, each naming its file.

    A file that cannot be read or parsed, and a document id used by two files,
    are problems; the other files' documents are still read.
    """
    return parse_files(
        [(str(path), functools.partial(file_content, path, source)) for path in paths], source, skip, defaults
    )


def parse_files(
    files: Iterable[tuple[str, Callable[[], str | bytes]]],
    source: str,
    skip: Collection[str] | None,
    defaults: DocumentDefaults,
) -> FolderReading:
    """:func:`read_files` over (file name, function giving its text) pairs: the one parse of a folder.

    The pipeline's parse and ``rag ask`` both read a folder through here, so
    they see the same documents, blocks and problems. ``name`` is the file's
    path as errors should name it; its last part, without the ending, is the
    document's default id.
    """
    reading = FolderReading()
    origin: dict[str, str] = {}
    for name, text in files:
        stem = Path(name).stem
        try:
            parsed = read_file(text(), name, source, skip, defaults)
        except (DocumentError, FolderError) as error:
            reading.problems.append(str(error))
            reading.failed.add(stem)
            continue
        document = parsed.document
        if document.doc_id in origin:
            reading.problems.append(
                f"{name}: document id {document.doc_id!r} is already used by {origin[document.doc_id]}"
            )
            continue
        origin[document.doc_id] = name
        reading.documents.append(document)
        reading.skipped[document.doc_id] = parsed.skipped
        if stem != document.doc_id:
            reading.file_ids[stem] = reading.file_ids[Path(name).name] = document.doc_id
        if parsed.other_metadata:
            reading.other_metadata[name] = parsed.other_metadata
        if parsed.title_from:
            reading.titles_from[name] = parsed.title_from
    return reading


def read_corpus_folder(entry: Mapping, root: Path, where: str) -> FolderReading:
    """The documents of a folder corpus entry (``documents:`` under ``root``), every problem kept."""
    try:
        defaults = document_defaults(entry, where)
        skip = skipped_setting(entry, where)
        paths = folder_files(root / entry["documents"], entry["source"])
    except (DocumentError, OSError) as error:
        return FolderReading(problems=[str(error)])
    return read_files(paths, entry["source"], skip, defaults)
