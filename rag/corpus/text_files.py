"""The plain text source: a ``.txt`` file's paragraphs, separated by blank lines."""

from __future__ import annotations

import re

from rag.documents.access_metadata import DEFAULT_ACCESS, DocumentError
from rag.documents.blocks import Block, Document, content_version
from rag.documents.passages import normalize_passage

_BLANK_LINES = re.compile(r"\n[ \t\r\f\v]*\n")


def parse_text(
    text: str, doc_id: str, access: str = DEFAULT_ACCESS, tenant: str = "", acl: tuple[str, ...] = ()
) -> Document:
    """Plain text: paragraphs separated by blank lines, all in the lead; the file name is the title.

    Plain text has nowhere to state who may read it, so ``access``, ``tenant``
    and ``acl`` (the corpus's ``default_access``, ``default_tenant`` and
    ``default_acl``) are every text document's.
    """
    paragraphs = (normalize_passage(part) for part in _BLANK_LINES.split(text.replace("\r\n", "\n")))
    blocks = tuple(Block((), paragraph) for paragraph in paragraphs if paragraph)
    if not blocks:
        raise DocumentError(f"{doc_id}: no paragraphs to index")
    version = content_version(blocks)
    return Document(
        doc_id=doc_id, title=doc_id, version=version, blocks=blocks, access=access, tenant=tenant, acl=acl
    )
