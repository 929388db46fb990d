"""The table of corpus sources: one row per source, read by the plan, the parse job and ``rag ask``.

A row says everything the rest of the project needs to know about a source:
the file name endings a folder of it holds (none for sources that are not a
folder of files), how one file becomes a document, whether the file is read as
text or as bytes, where a document states who may read it, what the reader
leaves out unless the corpus says otherwise, the configuration keys that are
the source's own, and the levels its labels can be evaluated at. The schema
(``workflow/schemas/config.schema.yaml``) names the same sources and keys; a
unit test ties the two together, so a source is added in its own module, one
row here and its schema keys.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from rag.corpus.articles import document_from_html_file
from rag.corpus.documents import SKIPPABLE, ParsedFile, check_document_id, parse_markdown_file
from rag.corpus.pdf import read_pdf
from rag.corpus.text_files import parse_text
from rag.documents.access_metadata import DocumentDefaults, DocumentError

# The reader of one file of a folder source: its content (text, or bytes for a
# ``binary`` source), its name (for errors and the default document id), what to
# skip, and the corpus's defaults with a checked access level.
FileReader = Callable[[object, str, Collection[str], DocumentDefaults], ParsedFile]


@dataclass(frozen=True)
class CorpusSource:
    """One source of documents (see the module's description)."""

    suffixes: tuple[str, ...]  # the endings of a folder source's files; () for the others
    read: FileReader | None  # one file to a parsed document; None for the others
    metadata: str  # where a document states its access level, tenant and groups
    default_skip: tuple[str, ...]  # what the reader leaves out unless the corpus says
    required: tuple[str, ...]  # the configuration keys the source needs
    own: tuple[str, ...]  # the keys that belong to this source alone
    levels: tuple[str, ...] = ("chunk", "document")  # the first is the default
    binary: bool = False  # files read as bytes, not UTF-8 text
    always_skips: tuple[str, ...] = ()  # what the reader leaves out whatever ``skip`` says
    paged: bool = False  # every block has a page: the grid adds page-level recall (page_recall.csv)

    @property
    def folder(self) -> bool:
        return bool(self.suffixes)


def _doc_id(name: str) -> str:
    return check_document_id(Path(name).stem, name)


def _read_markdown(text, name: str, skip: Collection[str], defaults: DocumentDefaults) -> ParsedFile:
    return parse_markdown_file(text, name, skip, defaults.access, defaults.tenant, defaults.acl)


def _read_text(text, name: str, skip: Collection[str], defaults: DocumentDefaults) -> ParsedFile:
    document = parse_text(text, _doc_id(name), defaults.access, defaults.tenant, defaults.acl)
    return ParsedFile(document, dict.fromkeys(SKIPPABLE, 0))


def _read_html(text, name: str, skip: Collection[str], defaults: DocumentDefaults) -> ParsedFile:
    document, skipped = document_from_html_file(
        text, _doc_id(name), defaults.access, name, defaults.tenant, defaults.acl, skip
    )
    return ParsedFile(document, skipped)


_FOLDER_KEYS = ("documents",)
# The HTML reader keeps paragraphs and, unless skipped, data tables: never lists, code or references.
_ALWAYS_SKIPPED_BY_HTML = ("lists", "references", "code")

SOURCES: dict[str, CorpusSource] = {
    # The defaults: encyclopedia articles leave out everything that is not running
    # prose, as the spec does (the bundled corpus's configuration says so too); a
    # user's own files keep their list items and, as evidence, their tables
    # (rag.corpus.table_text); plain text keeps all.
    "markdown": CorpusSource(
        suffixes=(".md",),
        read=_read_markdown,
        metadata="front matter (access, tenant, acl)",
        default_skip=("references", "code"),
        required=_FOLDER_KEYS,
        own=_FOLDER_KEYS,
    ),
    "text": CorpusSource(
        suffixes=(".txt",),
        read=_read_text,
        metadata="none: the corpus's defaults",
        default_skip=(),
        required=_FOLDER_KEYS,
        own=_FOLDER_KEYS,
    ),
    "html": CorpusSource(
        suffixes=(".html", ".htm"),
        read=_read_html,
        metadata='<meta name="access|tenant|acl">',
        default_skip=_ALWAYS_SKIPPED_BY_HTML,
        required=_FOLDER_KEYS,
        own=_FOLDER_KEYS,
        always_skips=_ALWAYS_SKIPPED_BY_HTML,
    ),
    # Tables are evidence: a PDF's are indexed unless the corpus skips them.
    "pdf": CorpusSource(
        suffixes=(".pdf",),
        read=read_pdf,
        metadata="document information or XMP entries access, tenant, acl",
        default_skip=(),
        required=_FOLDER_KEYS,
        own=_FOLDER_KEYS,
        binary=True,
        paged=True,
    ),
    "wikipedia": CorpusSource(
        suffixes=(),
        read=None,
        metadata="none: the corpus's defaults",
        default_skip=SKIPPABLE,
        required=("titles", "as_of"),
        own=("titles", "as_of"),
        always_skips=SKIPPABLE,
    ),
    # BEIR qrels judge only documents.
    "beir": CorpusSource(
        suffixes=(),
        read=None,
        metadata="a record's access, tenant and acl fields",
        default_skip=(),
        required=("folder",),
        own=("folder", "split", "queries"),
        levels=("document",),
    ),
}

# The sources that are a folder of files, by name, with the endings each reads.
FOLDER_SOURCES: dict[str, tuple[str, ...]] = {
    name: row.suffixes for name, row in SOURCES.items() if row.folder
}
# What each source's reader leaves out unless its corpus entry says otherwise.
DEFAULT_SKIPPED: dict[str, tuple[str, ...]] = {name: row.default_skip for name, row in SOURCES.items()}


def folder_source(source: str, name: str) -> CorpusSource:
    """The row of a folder source; any other name is an error naming the file."""
    row = SOURCES.get(source)
    if row is None or not row.folder:
        raise DocumentError(
            f"{name}: unknown folder source {source!r}; expected one of {sorted(FOLDER_SOURCES)}"
        )
    return row


def source_of_file(name: str) -> str | None:
    """The folder source whose files end like ``name`` (the first in table order), or None."""
    suffix = Path(name).suffix.lower()
    return next((source for source, endings in FOLDER_SOURCES.items() if suffix in endings), None)
