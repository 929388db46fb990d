"""Text as every reader stores it, and Markdown inline markup rendered as a reader of the page sees it.

Evidence spans and answers go through the same functions as the parsed text
(:func:`render_span`), so a span copied from a source file matches.
"""

from __future__ import annotations

import html
import re

from rag.documents.inline_markup import (
    ACTIVE_ELEMENTS,
    remove_roles,
    remove_tags,
    unwrap_emphasis,
    unwrap_links,
    unwrap_reference_links,
    unwrap_shortcut_references,
)
from rag.documents.passages import normalize_passage

# Elements whose content is code or hidden markup, not prose: removed with their
# content, so "<script>steal()</script>" leaves nothing behind, not "steal()".
_UNCLOSED = re.compile(rf"(?:<!--|<(?:{ACTIVE_ELEMENTS})\b).*", re.IGNORECASE | re.DOTALL)


# Quote markers at the start of a line ("> ", "> > "), removed as a renderer does.
_QUOTE_MARKERS = re.compile(r"^(?: {0,3}>[ \t]?)+")


def render_inline(text: str, labels: frozenset[str] = frozenset()) -> str:
    """Plain text of Markdown inline markup: what a reader of the rendered page sees.

    Links (``[text](url)``, ``[text][label]``, ``[text][]``), MyST roles
    (``{mod}`pip```), emphasis, code spans and raw HTML are removed, keeping
    their text. A comment or active element that is opened but never closed
    swallows the rest of its paragraph (a browser would take the rest of the
    page). A shortcut link (``[npm]``) whose label is one of ``labels`` (the
    document's link definitions) becomes its text. Character references
    (``&lt;``) are decoded last: they stand for literal characters, so
    "&lt;/sources&gt;" becomes the text "</sources>", never a tag to strip
    again. Evidence spans go through the same function (:func:`render_span`),
    so a span copied from the source file matches.
    """
    text = _UNCLOSED.sub("", text)
    # Twice: a badge is an image inside a link, [![build](badge.svg)](ci), whose first
    # unwrapping leaves the image, ![build](ci).
    text = unwrap_reference_links(unwrap_links(unwrap_links(remove_tags(remove_roles(text)))))
    text = unwrap_shortcut_references(text, labels)
    return normalize_passage(html.unescape(unwrap_emphasis(text)))


def strip_quote_markers(line: str) -> str:
    """A line without its blockquote markers (``> ``, ``> > ``)."""
    return _QUOTE_MARKERS.sub("", line)


def render_span(text: str) -> str:
    """An evidence span or answer as the parser renders a paragraph: quote markers, then inline markup.

    Text without markup comes out as :func:`normalize_passage` gives it.
    """
    return render_inline("\n".join(strip_quote_markers(line) for line in text.split("\n")))
