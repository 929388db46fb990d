"""The PDF layout of one file, as plain data: run in a child process with limits (:mod:`rag.corpus.pdf`).

``python -m rag.corpus.pdf_extract`` reads the PDF's bytes on standard input
and writes one JSON object: its pages (text boxes in pdfminer.six's reading
order, each line with its font size and weight; tables found by pdfplumber,
cell by cell), its outline, its document information and XMP packet; or
``{"error": ...}``, one line saying why it was refused. Nothing here decides
what a heading or a page header is: :mod:`rag.corpus.pdf` does, on this data,
without the library, so those rules are tested without any PDF.
"""

from __future__ import annotations

import io
import json
import re
import sys

# Refused before layout analysis: a page count or a page's character count this
# large is not a document a person reads, and would only hold the job.
MAX_PAGES = 400
MAX_CHARS_PER_PAGE = 60_000
# Names that carry scripts or actions run on opening: refused, never read.
_ACTIVE = re.compile(rb"/(?:JavaScript|JS|Launch)\b")


def _text(value: object) -> str:
    """A PDF string or name as text (PDFDocEncoding or UTF-16 with a byte-order mark)."""
    from pdfminer.pdftypes import resolve1
    from pdfminer.psparser import PSLiteral
    from pdfminer.utils import decode_text

    value = resolve1(value)
    if isinstance(value, bytes):
        return decode_text(value)
    if isinstance(value, PSLiteral):
        return str(value.name)
    return value if isinstance(value, str) else ""


def _outline(document, page_numbers: dict) -> list[list]:
    """(level, title, page) of every outline entry whose destination is a page of the file."""
    from pdfminer.pdfdocument import PDFNoOutlines
    from pdfminer.pdftypes import resolve1

    entries = []
    try:
        outlines = document.get_outlines()
        for level, title, dest, action, _ in outlines:
            if dest is None and isinstance(resolve1(action), dict):
                dest = resolve1(action).get("D")
            dest = resolve1(dest)
            if isinstance(dest, (bytes, str)):
                dest = resolve1(document.get_dest(dest))
            if isinstance(dest, dict):
                dest = resolve1(dest.get("D"))
            if isinstance(dest, list) and dest:
                page = page_numbers.get(getattr(dest[0], "objid", None))
                if page is not None:
                    entries.append([int(level), _text(title), page])
            if len(entries) > 2000:
                break
    except PDFNoOutlines:
        return []
    except Exception:  # a damaged outline is no outline: headings come from the fonts instead
        return []
    return entries


def _info(document) -> dict[str, str]:
    from pdfminer.pdftypes import resolve1

    info = {}
    for entry in document.info[:1]:
        for key, value in resolve1(entry).items():
            info[str(key)] = _text(value)[:2000]
    return info


def _xmp(document) -> str:
    from pdfminer.pdftypes import resolve1

    stream = resolve1(document.catalog.get("Metadata"))
    if stream is None or not hasattr(stream, "get_data"):
        return ""
    data = stream.get_data()[:200_000]
    return data.decode("utf-8", "replace")


def _lines(box) -> list[dict]:
    from pdfminer.layout import LTChar, LTTextLine

    lines = []
    for line in box:
        if not isinstance(line, LTTextLine):
            continue
        chars = [char for char in line if isinstance(char, LTChar)]
        if not chars:
            continue
        sizes = sorted(round(char.size, 1) for char in chars)
        bold = sum("bold" in char.fontname.lower() or "black" in char.fontname.lower() for char in chars)
        lines.append(
            {
                "text": line.get_text().rstrip("\n"),
                "size": sizes[len(sizes) // 2],
                "bold": bold * 2 > len(chars),
                "x0": round(line.x0, 1),
            }
        )
    return lines


def _inside(box, areas) -> bool:
    x = (box.x0 + box.x1) / 2
    y = (box.y0 + box.y1) / 2
    return any(x0 <= x <= x1 and top <= y <= bottom for x0, top, x1, bottom in areas)


def _active_catalog(document) -> bool:
    """Scripts named in the catalog (in a compressed object stream the byte scan cannot see)."""
    from pdfminer.pdftypes import resolve1

    names = resolve1(document.catalog.get("Names"))
    action = resolve1(document.catalog.get("OpenAction"))
    kind = resolve1(action.get("S")) if isinstance(action, dict) else None
    return (isinstance(names, dict) and "JavaScript" in names) or getattr(kind, "name", "") in (
        "JavaScript",
        "Launch",
    )


def extract(data: bytes) -> dict:
    """The layout of a PDF (see the module's description); a refusal is ``{"error": line}``."""
    import pdfplumber
    from pdfminer.layout import LTTextBox
    from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect

    if _ACTIVE.search(data):
        return {"error": "refused: it carries JavaScript or a launch action; nothing of it is read"}
    if re.search(rb"/Encrypt\b", data):
        return {"error": "refused: encrypted (decrypt it, if you may, and add the decrypted file)"}
    try:
        pdf = pdfplumber.open(io.BytesIO(data), laparams={"boxes_flow": 0.5})
    except (PDFPasswordIncorrect, PDFEncryptionError):
        return {"error": "refused: encrypted (decrypt it, if you may, and add the decrypted file)"}
    with pdf:
        document = pdf.doc
        if _active_catalog(document):
            return {"error": "refused: it carries JavaScript or a launch action; nothing of it is read"}
        if len(pdf.pages) > MAX_PAGES:
            return {
                "error": f"refused: {len(pdf.pages)} pages, more than the {MAX_PAGES} a document may have"
            }
        page_numbers = {page.page_obj.pageid: page.page_number for page in pdf.pages}
        pages = []
        for page in pdf.pages:
            if len(page.chars) > MAX_CHARS_PER_PAGE:
                return {
                    "error": f"refused: page {page.page_number} has {len(page.chars)} characters, more "
                    f"than the {MAX_CHARS_PER_PAGE} a page may hold"
                }
            tables, areas = [], []
            for table in page.find_tables():
                rows = [[" ".join((cell or "").split()) for cell in row] for row in table.extract()]
                rows = [row for row in rows if any(row)]
                if len(rows) >= 2 and max(len(row) for row in rows) >= 2:
                    x0, top, x1, bottom = table.bbox
                    # pdfminer's y grows upwards, pdfplumber's downwards.
                    areas.append((x0, page.height - bottom, x1, page.height - top))
                    tables.append({"rows": rows, "top": round(top, 1)})
            boxes = []
            for box in page.layout:
                if isinstance(box, LTTextBox) and not _inside(box, areas):
                    lines = _lines(box)
                    if lines:
                        boxes.append(
                            {
                                "lines": lines,
                                "top": round(page.height - box.y1, 1),
                                "bottom": round(page.height - box.y0, 1),
                            }
                        )
            pages.append(
                {
                    "number": page.page_number,
                    "height": round(float(page.height), 1),
                    "chars": len(page.chars),
                    "boxes": boxes,
                    "tables": tables,
                }
            )
            page.close()
        return {
            "pages": pages,
            "outline": _outline(document, page_numbers),
            "info": _info(document),
            "xmp": _xmp(document),
        }


def main() -> None:
    data = sys.stdin.buffer.read()
    try:
        result = extract(data)
    except MemoryError:
        result = {"error": "refused: needs more memory than a document may use (a decompression bomb?)"}
    except RecursionError:
        result = {"error": "refused: nested deeper than a document may be"}
    except Exception as error:  # any other failure of the library is a damaged file, said in one line
        first = " ".join(str(error).split())[:160]
        result = {
            "error": f"refused: damaged or not a PDF ({type(error).__name__}{': ' + first if first else ''})"
        }
    sys.stdout.write(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
