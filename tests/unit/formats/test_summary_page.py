"""The report's front page: the Markdown summary as safe HTML, and the numbers under it."""

from __future__ import annotations

import pandas as pd

from rag.formats.summary_page import report_metadata, summary_page


def test_tables_and_code_render_and_raw_html_is_escaped():
    markdown = (
        "# Results\n\n| metric | value |\n|---|---|\n| R@5 | 0.973 |\n\n"
        "- **R@1**: `sections` + <script>alert(1)</script>\n"
    )
    page = summary_page(markdown)
    assert '<div class="results-summary">' in page
    assert "<table>" in page and "<td>0.973</td>" in page
    assert "<code>sections</code>" in page
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_the_committed_summary_renders_every_heading():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "results" / "README.md").read_text(encoding="utf-8")
    headings = [line.lstrip("#").strip() for line in readme.splitlines() if line.startswith("## ")]
    page = summary_page(readme)
    assert headings and all(f"<h2>{heading}</h2>" in page for heading in headings)


def test_metadata_counts_the_summary_rows():
    summary = pd.DataFrame(
        {"corpus": ["a", "a", "b"], "chunker": ["x", "y", "x"], "retriever": ["bm25", "bm25", "tfidf"]}
    )
    assert report_metadata(summary) == {
        "Corpora with labelled questions": 2,
        "Configurations measured (corpus, chunker, retriever)": 3,
        "Chunkers": 2,
        "Retrievers": 2,
    }
    # Numbers only: Snakemake renders string metadata as raw docutils parts.
    assert all(isinstance(value, int) for value in report_metadata(summary).values())
