"""The descriptive tables, value by value, on inputs small enough to count by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from rag.chunk_tables import chunks_to_frame
from rag.chunking import ChunkerSpec, chunk_document
from rag.corpus.document_tables import documents_to_frame
from rag.documents.blocks import Block, Document
from rag.evaluation.chunk_judging import PieceCut
from rag.evaluation.statistics import chunk_statistics, corpus_statistics, cut_summary

# Listed out of id order: the table is sorted by doc_id.
DOCUMENTS = [
    Document(
        "venus",
        "Venus",
        "1",
        (
            Block((), "Venus is hot."),  # 3 words
            Block(("Orbit",), "A day outlasts\na year."),  # 5: a line break separates words too
            Block(("Orbit",), "Retrograde."),  # 1
            Block(("Orbit", "Rotation"), "Slow and\tbackwards."),  # 3: and a tab
            Block(("Atmosphere",), "Carbon dioxide, mostly."),  # 3
        ),
    ),
    Document("ceres", "Ceres", "1", (Block((), "Ceres is a dwarf planet."),)),  # 5 words, no sections
]


NOTHING_SKIPPED = {"skipped_tables": 0, "skipped_lists": 0, "skipped_references": 0, "skipped_code": 0}


def test_corpus_statistics_per_document_and_in_total():
    table = corpus_statistics(documents_to_frame(DOCUMENTS), "planets")
    assert table.to_dict("records") == [
        {
            "corpus": "planets",
            "doc_id": "ceres",
            "title": "Ceres",
            "sections": 0,
            "paragraphs": 1,
            "words": 5,
            **NOTHING_SKIPPED,
        },
        # Orbit, Orbit › Rotation and Atmosphere; the lead is not a section.
        {
            "corpus": "planets",
            "doc_id": "venus",
            "title": "Venus",
            "sections": 3,
            "paragraphs": 5,
            "words": 15,
            **NOTHING_SKIPPED,
        },
        {
            "corpus": "planets",
            "doc_id": "(all)",
            "title": "2 documents",
            "sections": 3,
            "paragraphs": 6,
            "words": 20,
            **NOTHING_SKIPPED,
        },
    ]


def test_corpus_statistics_counts_what_the_reader_skipped():
    skipped = {"venus": {"lists": 2, "code": 1}}
    table = corpus_statistics(documents_to_frame(DOCUMENTS), "planets", skipped).set_index("doc_id")
    assert table.loc["venus", ["skipped_lists", "skipped_code", "skipped_tables"]].tolist() == [2, 1, 0]
    assert table.loc["ceres", ["skipped_lists", "skipped_code"]].tolist() == [0, 0]
    assert table.loc["(all)", ["skipped_lists", "skipped_code", "skipped_references"]].tolist() == [2, 1, 0]


def test_corpus_statistics_counts_a_repeated_section_name_once():
    blocks = pd.DataFrame(
        {
            "doc_id": ["d", "d", "d"],
            "title": ["D", "D", "D"],
            "section": ["Orbit", "Moons", "Orbit"],
            "text": ["one", "two three", "four five six"],
        }
    )
    (row, total) = corpus_statistics(blocks, "c").to_dict("records")
    assert (row["sections"], row["paragraphs"], row["words"]) == (2, 3, 6)
    assert (total["title"], total["words"]) == ("1 documents", 6)


def test_chunk_statistics_on_known_sizes():
    chunks = pd.DataFrame({"n_words": [3, 10, 5, 6]})
    assert chunk_statistics(chunks, "planets", "sentences8") == {
        "corpus": "planets",
        "chunker": "sentences8",
        "chunks": 4,
        "mean_words": 6.0,
        "median_words": 5.5,  # differs from the mean on purpose
        "max_words": 10,
        "total_words": 24,
    }


def test_chunk_statistics_of_a_chunked_document():
    chunks = chunks_to_frame(
        [chunk for document in DOCUMENTS for chunk in chunk_document(document, ChunkerSpec("fixed", 4, 0))],
        DOCUMENTS,
    )
    statistics = chunk_statistics(chunks, "planets", "fixed4")
    # Venus: 15 words in windows of 4 -> 4, 4, 4, 3; Ceres: 5 -> 4, 1.
    assert statistics["chunks"] == 6
    assert statistics["total_words"] == 20
    assert statistics["max_words"] == 4
    assert statistics["median_words"] == 4.0
    assert statistics["mean_words"] == pytest.approx(20 / 6, abs=1e-12)


def piece(question_id: str, span_words: int, cut: bool, expected: float) -> PieceCut:
    return PieceCut(question_id, 0, 1, span_words, cut, expected)


def test_cut_summary_counts_cut_pieces_and_adds_their_chances():
    cuts = [piece("q1", 4, True, 0.25), piece("q2", 9, False, 0.5), piece("q3", 2, True, 0.0)]
    assert cut_summary(cuts, "planets", "fixed10") == {
        "corpus": "planets",
        "chunker": "fixed10",
        "evidence_pieces": 3,
        "cut": 2,
        "expected_cut": 0.75,
        "mean_span_words": 5.0,
    }


def test_cut_summary_without_a_chance_for_some_piece_has_no_expected_count():
    # Chunkers other than fixed windows have no closed-form chance: NaN, and then no sum either.
    cuts = [piece("q1", 4, False, math.nan), piece("q2", 6, True, 0.5)]
    summary = cut_summary(cuts, "planets", "sentences20")
    assert (summary["evidence_pieces"], summary["cut"], summary["mean_span_words"]) == (2, 1, 5.0)
    assert math.isnan(summary["expected_cut"])


def test_cut_summary_of_no_pieces():
    summary = cut_summary([], "planets", "fixed10")
    assert (summary["evidence_pieces"], summary["cut"]) == (0, 0)
    assert math.isnan(summary["expected_cut"]) and math.isnan(summary["mean_span_words"])
