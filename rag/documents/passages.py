"""Text as every reader stores it: one normalisation for paragraphs, table cells and evidence spans."""

from __future__ import annotations

import re
import unicodedata

# Characters that carry no text: soft hyphen, zero-width space, word joiner, BOM.
_INVISIBLE = re.compile("[\u00ad\u200b\u2060\ufeff]")


def normalize_passage(text: str) -> str:
    """Text as every reader stores it: NFKC, invisible characters removed, one space per run.

    NFKC folds compatibility forms (the no-break, thin and narrow spaces of
    unit conversions become plain spaces, "ﬁ" becomes "fi"); every run of
    whitespace then becomes one space. Evidence spans go through the same
    function, so a span copied from the source file matches the parsed text.
    """
    folded = unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))
    return " ".join(folded.split())  # the same as collapsing runs of \s, in one pass
