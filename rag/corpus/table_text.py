"""Tables as evidence: one rendering of a table, whatever source it comes from.

A table (a list of rows of cell texts, the first row its header) becomes two
blocks, as PDF, Markdown and HTML tables all do:

- its text rendering: cells joined by " | ", rows by " / "
  ("Moon | Mean radius / Phobos | 11.1 km");
- its rows as "header: value" pairs, one sentence per row after the header
  ("Moon: Phobos; Mean radius: 11.1 km."), a header cell left empty named
  "column N".

Each rendering keeps where its rows are (:class:`TableText`), so a chunker can
keep a table whole where it fits and cut it only between rows
(:func:`rag.chunking.sentence_packs`). Ragged rows are read as far as both the
row and the header go; a cell is any value, ``None`` an empty cell. Markdown's
and HTML's table syntax is read into rows here too (:func:`markdown_cells`,
:class:`HtmlTable`), so every source renders the same rows the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag.documents.passages import normalize_passage

# How the renderings join cells and rows.
CELL_SEPARATOR = " | "
ROW_SEPARATOR = " / "
PAIR_SEPARATOR = "; "
# A colspan wider than this is read as this many cells: a page cannot make one cell a million.
MAX_COLSPAN = 100


@dataclass(frozen=True)
class TableText:
    """A table's rendering and the (start, end) of each of its rows in ``text``."""

    text: str
    rows: tuple[tuple[int, int], ...]


def _cell(value: object) -> str:
    return "" if value is None else str(value)


def _rendered(pieces: list[str], separator: str) -> TableText:
    """``pieces`` joined by ``separator`` and normalised, with where each piece ends up.

    The text is exactly ``normalize_passage(separator.join(pieces))``: the
    words of the pieces and of the separators, one space apart. A piece that
    normalises to nothing has no row. Should normalising the whole differ from
    normalising each piece (a compatibility form across a piece's edge), the
    table is one row.
    """
    text = normalize_passage(separator.join(pieces))
    parts: list[str] = []
    rows: list[tuple[int, int]] = []
    position = 0
    for number, piece in enumerate(pieces):
        words = [separator.strip()] if number and separator.strip() else []
        normalised = normalize_passage(piece)
        for part in [*words, normalised]:
            if not part:
                continue
            position += 1 if parts else 0
            if part is normalised:
                rows.append((position, position + len(part)))
            parts.append(part)
            position += len(part)
    if " ".join(parts) != text:
        return TableText(text, ((0, len(text)),) if text else ())
    return TableText(text, tuple(rows))


def render_table(rows: Sequence[Sequence[object]]) -> tuple[TableText, TableText]:
    """A table's text rendering and its rows as "header: value" pairs (see the module)."""
    rows = [[_cell(cell) for cell in row] for row in rows]
    if not rows:
        return TableText("", ()), TableText("", ())
    header = [cell or f"column {number}" for number, cell in enumerate(rows[0], 1)]
    rendering = _rendered([CELL_SEPARATOR.join(row) for row in rows], ROW_SEPARATOR)
    pairs = _rendered(
        [
            PAIR_SEPARATOR.join(f"{name}: {value}" for name, value in zip(header, row, strict=False) if value)
            + "."
            for row in rows[1:]
            if any(row)
        ],
        " ",
    )
    return rendering, pairs


def table_blocks(rows: Sequence[Sequence[object]]) -> tuple[str, str]:
    """The texts of :func:`render_table`."""
    rendering, pairs = render_table(rows)
    return rendering.text, pairs.text


# --------------------------------------------------------------------------
# Markdown: a GFM table row's cells
# --------------------------------------------------------------------------

_DELIMITER_ROW = re.compile(r"[\s|:-]+")
# A cell boundary: a bar not escaped by a backslash ("\|" is a bar inside a cell).
_CELL_BAR = re.compile(r"(?<!\\)\|")


def is_delimiter_row(line: str) -> bool:
    """Whether a table line is the delimiter row under the header (``|---|:--:|``)."""
    return bool(_DELIMITER_ROW.fullmatch(line))


def markdown_cells(line: str) -> list[str]:
    """The cells of a GFM table row, as written: outer bars dropped, ``\\|`` a bar inside a cell."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip().replace("\\|", "|") for cell in _CELL_BAR.split(inner)]


# --------------------------------------------------------------------------
# HTML: a table's rows as its elements open and close
# --------------------------------------------------------------------------


@dataclass
class HtmlTable:
    """The rows of an HTML table, fed its ``tr``, ``th``/``td`` and text as a parser meets them.

    A cell spanning columns (``colspan``) repeats its text in every column it
    spans, so the row's pairs name each header; ``rowspan`` is not carried to
    the rows below. A table nested in a cell is read into that cell's text.
    """

    rows: list[list[str]] = field(default_factory=list)
    cell: list[str] | None = None
    span: int = 1

    def row(self) -> None:
        self.end_cell()
        self.rows.append([])

    def start_cell(self, colspan: str | None) -> None:
        self.end_cell()
        if not self.rows:
            self.rows.append([])
        self.cell = []
        self.span = colspan_of(colspan)

    def end_cell(self) -> None:
        if self.cell is not None:
            text = normalize_passage("".join(self.cell))
            self.rows[-1].extend([text] * self.span)
        self.cell, self.span = None, 1

    def data(self, text: str) -> None:
        if self.cell is not None:
            self.cell.append(text)

    def finish(self) -> list[list[str]]:
        self.end_cell()
        return [row for row in self.rows if row]


def colspan_of(value: str | None) -> int:
    """A ``colspan`` attribute as a number of columns: 1 unless a positive whole number, at most
    :data:`MAX_COLSPAN`."""
    text = (value or "").strip()
    return min(int(text), MAX_COLSPAN) if re.fullmatch(r"[0-9]{1,9}", text) and int(text) > 0 else 1
