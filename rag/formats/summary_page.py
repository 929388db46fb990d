"""results/README.md as an HTML fragment: the first thing the Snakemake report shows.

The report's front page is reStructuredText, and the summary is Markdown with
pipe tables, so the summary is rendered once to HTML (markdown-it-py, the
CommonMark parser Snakemake's own dependencies already bring) and the front
page embeds it (workflow/report/workflow.rst). Raw HTML in the Markdown is
escaped, not passed through: document titles and configuration names reach
the summary, and none of them may become markup in the report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from markdown_it import MarkdownIt

if TYPE_CHECKING:
    import pandas as pd

# The summary scrolls in a box the height of the window, and wide tables
# sideways inside it: the report centres its front page vertically, so a
# taller page would open in its middle with its top out of reach.
STYLE = (
    "<style>"
    ".results-summary{max-width:none;width:min(72rem,calc(100vw - 22rem));font-size:0.85rem;"
    "max-height:65vh;overflow-y:auto}"
    ".results-summary table{display:block;overflow-x:auto;border-collapse:collapse}"
    ".results-summary th,.results-summary td{border:1px solid #ccc;padding:0.15rem 0.4rem}"
    # The report's prose style wraps code in visible backticks; names read better without.
    ".results-summary code::before,.results-summary code::after{content:none}"
    "</style>"
)


def summary_page(markdown: str) -> str:
    """The Markdown summary as one self-contained HTML fragment (no scripts, no raw HTML)."""
    renderer = MarkdownIt("commonmark", {"html": False}).enable("table")
    return f'{STYLE}\n<div class="results-summary">\n{renderer.render(markdown)}</div>\n'


def report_metadata(summary: pd.DataFrame) -> dict[str, int]:
    """The numbers under the summary on the report's front page.

    Given to ``snakemake --report --report-metadata``, any metadata makes the
    report open on its front page instead of the rule graph. The values are
    numbers: Snakemake 9 renders a string value as a raw dictionary of
    docutils parts.
    """
    return {
        "Corpora with labelled questions": int(summary["corpus"].nunique()),
        "Configurations measured (corpus, chunker, retriever)": len(summary),
        "Chunkers": int(summary["chunker"].nunique()),
        "Retrievers": int(summary["retriever"].nunique()),
    }
