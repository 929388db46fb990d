"""Chunker properties: offsets slice back to the text, every word is covered,
overlaps are exact, sections are never crossed, ids are stable."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.chunking import (
    ChunkerSpec,
    ChunkingError,
    chunk_document,
    cut_probability,
    fixed_windows,
    spec_from_config,
)
from rag.documents.blocks import Block, Document
from rag.text import split_sentences, word_spans

WORDS = st.text(alphabet="abcdefgh", min_size=2, max_size=6)
SENTENCE = st.lists(WORDS, min_size=1, max_size=12).map(lambda words: " ".join(words).capitalize() + ".")
PARAGRAPH = st.lists(SENTENCE, min_size=1, max_size=5).map(" ".join)
SECTIONS = st.lists(
    st.tuples(st.sampled_from(["A", "B", "C"]), st.lists(PARAGRAPH, min_size=1, max_size=3)),
    min_size=1,
    max_size=4,
)


def make_document(sections) -> Document:
    blocks = []
    for number, (name, paragraphs) in enumerate(sections):
        path = () if number == 0 else (f"{name}{number}",)
        blocks.extend(Block(path, paragraph) for paragraph in paragraphs)
    return Document("doc", "Doc", "1", tuple(blocks))


@settings(max_examples=60, deadline=None)
@given(SECTIONS, st.integers(1, 12), st.integers(0, 11))
def test_fixed_windows_cover_every_word_with_exact_overlap(sections, size, overlap):
    if overlap >= size:
        overlap = size - 1
    document = make_document(sections)
    text = document.full_text
    chunks = chunk_document(document, ChunkerSpec("fixed", size, overlap))
    words = word_spans(text)
    covered = set()
    previous_words = None
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        inside = [w for w in words if chunk.start <= w[0] and w[1] <= chunk.end]
        assert 1 <= len(inside) <= size
        assert chunk.start == inside[0][0] and chunk.end == inside[-1][1]
        if previous_words is not None:
            shared = len(set(previous_words) & set(inside))
            if len(inside) == size:
                assert shared == overlap
            else:  # the final, shorter window still starts one stride later
                assert shared == max(0, len(previous_words) - (size - overlap))
        previous_words = inside
        covered.update(inside)
    assert covered == set(words)


@settings(max_examples=60, deadline=None)
@given(SECTIONS, st.integers(1, 40))
def test_sentence_chunks_keep_sentences_whole_and_never_cross_sections(sections, max_words):
    document = make_document(sections)
    text = document.full_text
    chunks = chunk_document(document, ChunkerSpec("sentences", max_words))
    section_of = {}
    for block, (start, end) in zip(document.blocks, document.block_offsets(), strict=True):
        for position in range(start, end):
            section_of[position] = block.section
    all_words = set(word_spans(text))
    covered = set()
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.text.endswith(".")  # whole sentences only
        assert len({section_of[p] for p in range(chunk.start, chunk.end) if p in section_of}) == 1
        n_words = len(chunk.text.split())
        single_sentence = len(split_sentences(chunk.text)) == 1
        assert n_words <= max_words or single_sentence
        covered.update(w for w in all_words if chunk.start <= w[0] and w[1] <= chunk.end)
    assert covered == all_words


def test_section_chunks_are_the_sections():
    document = make_document([("A", ["Lead one.", "Lead two."]), ("B", ["Body."]), ("C", ["More.", "Last."])])
    chunks = chunk_document(document, ChunkerSpec("sections"))
    assert [chunk.text for chunk in chunks] == ["Lead one.\n\nLead two.", "Body.", "More.\n\nLast."]
    assert [chunk.section for chunk in chunks] == ["", "B1", "C2"]


def test_header_is_indexed_but_not_part_of_the_text():
    document = Document("d", "Mercury", "1", (Block(("Orbit", "Resonance"), "It spins thrice."),))
    with_header = chunk_document(document, ChunkerSpec("sections", header=True))[0]
    without = chunk_document(document, ChunkerSpec("sections", header=False))[0]
    assert with_header.text == without.text == "It spins thrice."
    assert with_header.indexed_text == "Mercury › Orbit › Resonance\nIt spins thrice."
    assert without.indexed_text == "It spins thrice."
    assert (with_header.start, with_header.end) == (without.start, without.end)


def test_chunk_ids_are_stable_and_depend_on_spec_and_version():
    document = make_document([("A", ["One two three. Four five six."])])
    first = chunk_document(document, ChunkerSpec("fixed", 3, 1))
    again = chunk_document(document, ChunkerSpec("fixed", 3, 1))
    assert [c.chunk_id for c in first] == [c.chunk_id for c in again]
    other_spec = chunk_document(document, ChunkerSpec("fixed", 3, 0))
    assert not {c.chunk_id for c in first} & {c.chunk_id for c in other_spec}
    newer = Document(document.doc_id, document.title, "2", document.blocks)
    assert not {c.chunk_id for c in first} & {
        c.chunk_id for c in chunk_document(newer, ChunkerSpec("fixed", 3, 1))
    }


def test_fixed_windows_on_known_text():
    text = "a b c d e f g"
    assert [text[s:e] for s, e in fixed_windows(text, 3, 1)] == ["a b c", "c d e", "e f g"]
    assert [text[s:e] for s, e in fixed_windows(text, 3, 0)] == ["a b c", "d e f", "g"]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"kind": "fixed", "words": 10, "overlap": 10}, "overlap (10) must be smaller"),
        ({"kind": "fixed", "words": 0}, "positive size"),
        ({"kind": "sentences"}, "positive size"),
        ({"kind": "words"}, "unknown chunker kind"),
    ],
)
def test_bad_specs_are_rejected(entry, message):
    with pytest.raises(ChunkingError, match=re.escape(message)):
        spec_from_config(entry)


def test_cut_probability_limits():
    # A one-word span is never cut; an overlap of L - 1 words makes cuts impossible.
    assert cut_probability(1, 100, 0) == 0.0
    assert cut_probability(30, 100, 29) == 0.0
    assert cut_probability(30, 100, 40) == 0.0
    # Without overlap the chance is (L - 1) / W.
    assert cut_probability(12, 100, 0) == pytest.approx(11 / 100)
    # With overlap o and stride s = W - o it is (L - 1 - o) / s.
    assert cut_probability(40, 100, 25) == pytest.approx(14 / 75)
    # A span longer than the stride plus overlap is always cut.
    assert cut_probability(50, 20, 5) == 1.0


def test_cut_probability_matches_enumeration_of_offsets():
    # Place a span of L words at every offset in a long text and count cuts.
    for size, overlap, length in [(10, 0, 4), (10, 3, 6), (7, 2, 7), (5, 4, 5)]:
        n_words = 400
        text = " ".join(f"w{i}" for i in range(n_words))
        windows = fixed_windows(text, size, overlap)
        words = word_spans(text)
        stride = size - overlap
        offsets = range(stride * 5, stride * 5 + stride)  # one full stride period
        cut = 0
        for first in offsets:
            span = (words[first][0], words[first + length - 1][1])
            if not any(s <= span[0] and span[1] <= e for s, e in windows):
                cut += 1
        assert cut / stride == pytest.approx(cut_probability(length, size, overlap))
