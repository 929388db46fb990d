"""The leftovers of issues 27 and 30: hostile HTML, the document size cap, filters that
match nothing, thresholds that never see the holdout, and grid edges in results/README.md."""

from __future__ import annotations

from html.parser import HTMLParser

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.corpus.articles import closable_markup, document_from_html_file
from rag.corpus.markdown_files import FolderError, read_markdown_file, read_markdown_folder
from rag.evaluation.holdout import holdout_questions
from rag.evaluation.summary import grid_edge_lines
from rag.measuring.thresholds import HOLDOUT_FOLD, cross_validated_thresholds, held_out_answers
from rag.retrieval.filters import ChunkMetadata, FilterError, absent_values, parse_filter

HTML_UNITS = ["<a ", "<a/", "<a b", "<a '", "<!--", "<!--x>", "<![CDATA[ >", "<?", "</", "<a\n"]


@pytest.mark.parametrize("unit", HTML_UNITS)
def test_a_megabyte_of_unclosed_html_parses(unit):
    """Completion only, as for Markdown; the time is measured by benchmarks/adversarial_parsing.py."""
    html = "<p>The start.</p>" + unit * (1_000_000 // len(unit))
    document, _ = document_from_html_file(html, "hostile", "public")
    assert document.blocks[0].text == "The start."


def test_a_marked_section_of_an_unknown_name_is_text_not_a_crash():
    document, _ = document_from_html_file("<p>Kept <![foo[ text ]]></p>", "odd", "public")
    assert document.blocks[0].text == "Kept <![foo[ text ]]>"


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pieces: list[str] = []

    def handle_data(self, data: str) -> None:
        self.pieces.append(data)


def _text(html: str) -> str:
    reader = _Text()
    reader.feed(html)
    reader.close()
    return "".join(reader.pieces)


PIECES = ["<", ">", "<a ", "<p>", "</p>", "<!--", "-->", "--", "<![CDATA[", "]]>", "<?", "x", " ", "\n"]


@settings(max_examples=400, deadline=None)
@given(html=st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_closable_markup_keeps_the_text_html_parser_reads(html):
    assert _text(closable_markup(html)) == _text(html)


def test_a_document_over_the_size_cap_is_refused_by_name(tmp_path):
    path = tmp_path / "huge.md"
    path.write_text("# Huge\n\n" + "word " * 300, encoding="utf-8")
    with pytest.raises(FolderError, match=r"huge\.md: larger than 0 MB") as caught:
        read_markdown_file(path, limit=1000)
    assert "\n" not in str(caught.value)
    assert read_markdown_file(path, limit=10_000).startswith("# Huge")


def test_the_folder_reader_applies_the_size_cap(tmp_path, monkeypatch):
    (tmp_path / "a.md").write_text("# A\n\n" + "x" * 5000, encoding="utf-8")
    monkeypatch.setattr("rag.corpus.markdown_files.MAX_DOCUMENT_BYTES", 1000)
    with pytest.raises(FolderError, match=r"a\.md: larger than"):
        read_markdown_folder(tmp_path)


@pytest.mark.parametrize("level", ["Public", "x", "secret"])
def test_an_access_level_no_document_can_have_is_refused_at_planning(level):
    with pytest.raises(FilterError, match=rf"no document can have access {level!r}; the levels are public"):
        parse_filter({"access": [level]}, "config['filters']['f']")


def test_a_capitalised_access_level_gets_a_hint():
    with pytest.raises(FilterError, match="did you mean 'public'"):
        parse_filter({"access": ["Public"]}, "f")


METADATA = ChunkMetadata.from_columns(
    ["a", "a", "b"], ["public", "public", "restricted"], [["moon"], [], ["planet"]], [None, None, None]
)


def test_filter_values_no_chunk_has_are_named_with_the_values_present():
    warnings = absent_values(
        parse_filter({"tags_any": ["moons", "moon"], "access": ["internal"]}), METADATA, "f"
    )
    assert warnings == [
        "filter 'f'['access']: no document has 'internal'; present: public, restricted",
        "filter 'f'['tags_any']: no document has 'moons'; present: moon, planet",
    ]


def test_a_filter_whose_values_are_present_warns_nothing():
    assert absent_values(parse_filter({"tags_all": ["moon"], "doc_ids": ["a", "b"]}), METADATA, "f") == []


def _answers(labels: dict[str, bool]) -> pd.DataFrame:
    """One reader over one ranking: question i's best sentence scores i / 20, quoting evidence or not."""
    ids = sorted(labels)
    return pd.DataFrame(
        {
            "corpus": "c",
            "chunker": "s",
            "retriever": "bm25",
            "reader": "reader",
            "question_id": ids,
            "answerable": True,
            "score": [position / 20 for position in range(len(ids))],
            "best_quoted_piece": [0 if labels[question] else None for question in ids],
        }
    )


def test_held_out_labels_do_not_move_any_threshold():
    ids = [f"q{number:02d}" for number in range(40)]
    labels = {question: number % 4 != 0 for number, question in enumerate(ids)}
    held = set(holdout_questions(ids, 0.25))
    flipped = {question: (not good if question in held else good) for question, good in labels.items()}
    tables = []
    for chosen_labels in (labels, flipped):
        frame = _answers(chosen_labels)
        _, table = cross_validated_thresholds(
            frame, ["corpus", "reader"], held_out=held_out_answers(frame, {"c": 0.25})
        )
        tables.append(table)
    choices = [table.loc[table["fold"] != HOLDOUT_FOLD, ["fold", "threshold"]] for table in tables]
    pd.testing.assert_frame_equal(*choices)
    held_rows = [table[table["fold"] == HOLDOUT_FOLD] for table in tables]
    assert held_rows[0]["questions"].item() == len(held) == 10
    # The labels did change, and the held-out rows show it: the test could fail.
    assert held_rows[0]["correct"].item() != held_rows[1]["correct"].item()


def test_without_a_holdout_the_held_out_labels_would_move_the_threshold():
    """The counterpart: the same flip moves the choice when nothing is held out."""
    ids = [f"q{number:02d}" for number in range(40)]
    labels = {question: number % 3 != 0 for number, question in enumerate(ids)}
    held = set(holdout_questions(ids, 0.25))
    flipped = {question: (not good if question in held else good) for question, good in labels.items()}
    tables = [
        cross_validated_thresholds(_answers(each), ["corpus", "reader"])[1] for each in (labels, flipped)
    ]
    assert not tables[0]["threshold"].equals(tables[1]["threshold"])


def test_choices_at_the_grid_edge_are_named_per_corpus():
    thresholds = pd.DataFrame(
        {
            "corpus": ["c", "c", "d"],
            "chunker": ["s", "s", "s"],
            "retriever": ["bm25", "bm25", "bm25"],
            "reader": ["reader"] * 3,
            "fold": ["0", "all", "all"],
            "threshold": [2.0, 2.0, 0.8],
            "at_grid_edge": [True, True, False],
        }
    )
    learned = pd.DataFrame(
        {
            "corpus": ["d"] * 4,
            "chunker": ["s"] * 4,
            "retriever": ["learned"] * 4,
            "part": ["fold"] * 4,
            "fold": [0, 0, 1, 1],
            "component": ["bm25", "minilm"] * 2,
            "at_grid_edge": [True, True, False, False],
        }
    )
    lines = grid_edge_lines(thresholds, learned)
    assert lines["c"] == [
        "**At the edge of its grid** (`at_grid_edge` in `reader_thresholds.csv`; "
        "a wider grid might move it): `s` / `bm25`, reader `reader`: threshold 2.00."
    ]
    assert len(lines["d"]) == 1 and "`s` / `learned`: fusion weights in 1 of 2 folds" in lines["d"][0]
    assert grid_edge_lines(thresholds.assign(at_grid_edge=False), None) == {}
