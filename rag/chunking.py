"""Chunkers: documents to character ranges.

Every chunker returns ranges into the document's full text, computed while it
walks the words or sentences, so a chunk's text is always
``full_text[start:end]`` and evidence spans can be matched by position.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chunk:
    """A retrievable passage.

    ``text`` is the passage itself (``full_text[start:end]`` of its document);
    ``header`` ("title › section") is indexed in front of it when the chunker
    asks for headers, but is never part of ``text`` or its offsets.
    """

    chunk_id: str
    doc_id: str
    title: str
    section: str
    start: int
    end: int
    text: str
    header: str = ""

    @property
    def indexed_text(self) -> str:
        return f"{self.header}\n{self.text}" if self.header else self.text

    @property
    def label(self) -> str:
        """How a prompt names the chunk's origin."""
        return f"{self.title} › {self.section}" if self.section else self.title
