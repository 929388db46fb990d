"""Chunkers: documents to character ranges.

Every chunker returns ranges into the document's full text, computed while it
walks the words or sentences, so a chunk's text is always
``full_text[start:end]`` and evidence spans can be matched by position.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from rag.corpus.documents import PARSER_VERSION
from rag.documents.blocks import BLOCK_SEPARATOR, SECTION_SEPARATOR, Document, section_name
from rag.kinds import CHUNKER_KINDS, behaviour
from rag.text import count_words, split_sentences, word_spans


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


class ChunkingError(ValueError):
    """A chunker specification that cannot work; the message names the setting."""


@dataclass(frozen=True)
class ChunkerSpec:
    """What a chunker does. ``size`` is W for fixed windows and the word limit
    for sentence packing; ``overlap`` only applies to fixed windows."""

    kind: str
    size: int = 0
    overlap: int = 0
    header: bool = True

    def __post_init__(self) -> None:
        if self.kind not in CHUNKER_KINDS:
            raise ChunkingError(f"unknown chunker kind {self.kind!r}; expected one of {tuple(CHUNKER_KINDS)}")
        if CHUNKER_KINDS[self.kind].size is not None and self.size < 1:
            raise ChunkingError(f"a {self.kind} chunker needs a positive size, got {self.size}")
        if self.overlap < 0:
            raise ChunkingError(f"overlap must not be negative, got {self.overlap}")
        if self.window is not None and self.overlap >= self.size:
            raise ChunkingError(
                f"overlap ({self.overlap}) must be smaller than the window ({self.size} words)"
            )

    @property
    def window(self) -> tuple[int, int] | None:
        """(size, overlap) of a kind that cuts overlapping windows, else None."""
        return (self.size, self.overlap) if "overlap" in CHUNKER_KINDS[self.kind].parameters else None

    @property
    def stride(self) -> int:
        return self.size - self.overlap

    def digest(self) -> str:
        """Fingerprint of the spec; chunk ids depend on it, so two specs never share ids."""
        canonical = json.dumps(dataclasses.asdict(self), sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def chunk_id(
    doc_id: str,
    version: str,
    spec_digest: str,
    start: int,
    end: int,
    parser_version: str = PARSER_VERSION,
) -> str:
    """Stable id from document, version, parser, chunker and position: re-runs are idempotent.

    The parser version is part of the key because a new parser can change a
    document's text without its front-matter version changing; the two texts
    must never pass for the same chunk.
    """
    key = f"{doc_id}\0{version}\0{parser_version}\0{spec_digest}\0{start}\0{end}"
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def _section_runs(document: Document) -> list[tuple[str, int, int]]:
    """(section name, start, end) of consecutive blocks sharing a heading path."""
    runs: list[tuple[str, int, int]] = []
    for block, (start, end) in zip(document.blocks, document.block_offsets(), strict=True):
        name = section_name(block.section)
        if runs and runs[-1][0] == name:
            runs[-1] = (name, runs[-1][1], end)
        else:
            runs.append((name, start, end))
    return runs


def _section_at(runs: list[tuple[str, int, int]], position: int) -> str:
    for name, start, end in runs:
        if start <= position < end:
            return name
    return runs[-1][0]


def fixed_windows(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """Windows of ``size`` words starting at every multiple of the stride.

    The last window ends at the last word; no window is emitted that only
    repeats the tail of the previous one.
    """
    words = word_spans(text)
    stride = size - overlap
    ranges = []
    for first in range(0, len(words), stride):
        last = min(first + size, len(words)) - 1
        ranges.append((words[first][0], words[last][1]))
        if last == len(words) - 1:
            break
    return ranges


# A table block's rows by the block's start in the full text: (start, end) of each row there.
TableRows = Mapping[int, tuple[tuple[int, int], ...]]


def _units(text: str, start: int, end: int, rows: tuple[tuple[int, int], ...] | None, max_words: int):
    """The (start, end) pieces a paragraph is packed in: its sentences, or for a table block
    (``rows`` given) the whole table when it fits in ``max_words``, else its rows."""
    if rows is None:
        return [(first + start, last + start) for first, last in split_sentences(text[start:end])]
    if count_words(text[start:end]) <= max_words or not rows:
        return [(start, end)]
    return list(rows)


def sentence_packs(
    text: str, section_ranges: list[tuple[int, int]], max_words: int, tables: TableRows | None = None
) -> list[tuple[int, int]]:
    """Whole sentences packed up to ``max_words`` within each section.

    A sentence longer than the limit becomes a chunk of its own rather than
    being cut, because a cut sentence is exactly what this chunker avoids.
    A table block (``tables``, by its start) is packed as one piece when it
    fits, else row by row: a table is never cut inside a row.
    """
    tables = tables or {}
    ranges: list[tuple[int, int]] = []
    for section_start, section_end in section_ranges:
        pack_start, pack_end, pack_words = -1, -1, 0
        for block_start, block_end in _paragraph_ranges(text, section_start, section_end):
            for start, end in _units(text, block_start, block_end, tables.get(block_start), max_words):
                words = count_words(text[start:end])
                if pack_start >= 0 and pack_words + words > max_words:
                    ranges.append((pack_start, pack_end))
                    pack_start, pack_words = -1, 0
                if pack_start < 0:
                    pack_start = start
                pack_end = end
                pack_words += words
        if pack_start >= 0:
            ranges.append((pack_start, pack_end))
    return ranges


def _paragraph_ranges(text: str, start: int, end: int) -> list[tuple[int, int]]:
    # Sentences never run across a paragraph break.
    ranges, position = [], start
    while position < end:
        stop = text.find(BLOCK_SEPARATOR, position, end)
        stop = end if stop < 0 else stop
        ranges.append((position, stop))
        position = stop + len(BLOCK_SEPARATOR)
    return ranges


# The chunker kinds' behaviour, as the table of kinds (rag/kinds.py) names it:
# the (start, end) character ranges of a document's chunks, given its text, its
# (section name, start, end) runs and its table blocks' rows (:func:`table_rows`).
# Fixed windows cut by words alone, tables too (the spec's W-word windows);
# sections hold their tables whole.


def fixed_ranges(
    text: str, runs: list[tuple[str, int, int]], spec: ChunkerSpec, tables: TableRows | None = None
) -> list[tuple[int, int]]:
    return fixed_windows(text, spec.size, spec.overlap)


def sentence_ranges(
    text: str, runs: list[tuple[str, int, int]], spec: ChunkerSpec, tables: TableRows | None = None
) -> list[tuple[int, int]]:
    return sentence_packs(text, [(start, end) for _, start, end in runs], spec.size, tables)


def section_ranges(
    text: str, runs: list[tuple[str, int, int]], spec: ChunkerSpec, tables: TableRows | None = None
) -> list[tuple[int, int]]:
    return [(start, end) for _, start, end in runs]


def table_rows(document: Document) -> dict[int, tuple[tuple[int, int], ...]]:
    """Every table block's rows in the full text, by the block's start (:class:`Block`)."""
    return {
        start: tuple((start + first, start + last) for first, last in block.table_rows)
        for block, (start, _) in zip(document.blocks, document.block_offsets(), strict=True)
        if block.table_rows
    }


def chunk_document(document: Document, spec: ChunkerSpec) -> list[Chunk]:
    text = document.full_text
    runs = _section_runs(document)
    ranges = behaviour(spec.kind, "chunk")(text, runs, spec, table_rows(document))
    digest = spec.digest()
    chunks = []
    for start, end in ranges:
        section = _section_at(runs, start)
        header = SECTION_SEPARATOR.join(part for part in (document.title, section) if part)
        chunks.append(
            Chunk(
                chunk_id=chunk_id(document.doc_id, document.version, digest, start, end),
                doc_id=document.doc_id,
                title=document.title,
                section=section,
                start=start,
                end=end,
                text=text[start:end],
                header=header if spec.header else "",
            )
        )
    return chunks


def chunk_corpus(documents: list[Document], spec: ChunkerSpec) -> list[Chunk]:
    chunks = [chunk for document in documents for chunk in chunk_document(document, spec)]
    if not chunks:
        raise ChunkingError("the corpus produced no chunks")
    return chunks


def cut_probability(span_words: int, size: int, overlap: int) -> float:
    """Chance that fixed windows cut a span of ``span_words`` words placed at random.

    With stride s = W - o, the last window start before the span lies a uniform
    distance rho in [0, s) ahead of it and contains it iff rho + L <= W, so the
    span is cut with probability min(1, max(0, (L - 1 - o) / s)).
    """
    stride = size - overlap
    if stride <= 0:
        raise ChunkingError(f"overlap ({overlap}) must be smaller than the window ({size})")
    return min(1.0, max(0.0, (span_words - 1 - overlap) / stride))


def spec_from_config(entry: dict) -> ChunkerSpec:
    """A ChunkerSpec from a config entry (``words``/``max_words`` name the size)."""
    kind = entry.get("kind", "")
    size_key = CHUNKER_KINDS[kind].size if kind in CHUNKER_KINDS else None
    size = entry.get(size_key, 0) if size_key else 0
    return ChunkerSpec(
        kind=kind,
        size=int(size or 0),
        overlap=int(entry.get("overlap", 0)),
        header=bool(entry.get("header", True)),
    )
