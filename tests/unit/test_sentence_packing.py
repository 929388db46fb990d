"""Sentence packing, held to exact boundaries and to packs that are as full as allowed.

The other chunking tests check what every chunker must keep (offsets, whole
sentences, sections); a chunker that put every sentence into a chunk of its own
would keep all of that. These tests pin down where the packs end.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.chunking import ChunkerSpec, chunk_document, sentence_packs
from rag.documents.blocks import BLOCK_SEPARATOR, Block, Document
from rag.text import count_words, split_sentences

# Word counts are written after each sentence; sections are the lead, Orbit and Orbit › Moons.
HAND_BUILT = Document(
    "mars",
    "Mars",
    "1",
    (
        Block((), "Mars is red. It has two moons. Phobos is the larger one."),  # 3, 4, 5
        Block((), "Deimos is small."),  # 3
        Block(
            ("Orbit",),
            # 5, 3, 10, 2
            "A year lasts 687 days. Seasons are long. "
            "This sentence is deliberately much longer than the limit allows. Short one.",
        ),
        Block(("Orbit", "Moons"), "Phobos orbits fast."),  # 3
        Block(("Orbit", "Moons"), "Deimos orbits slowly. It is farther out."),  # 3, 4
    ),
)
PARAGRAPH = BLOCK_SEPARATOR

EXPECTED = {
    8: [
        ("", "Mars is red. It has two moons."),  # 7; the next sentence would make 12
        ("", f"Phobos is the larger one.{PARAGRAPH}Deimos is small."),  # exactly 8, across a paragraph
        ("Orbit", "A year lasts 687 days. Seasons are long."),  # exactly 8
        ("Orbit", "This sentence is deliberately much longer than the limit allows."),  # 10, alone
        ("Orbit", "Short one."),  # the next section's sentence would fit, but sections are kept apart
        ("Orbit › Moons", f"Phobos orbits fast.{PARAGRAPH}Deimos orbits slowly."),  # 6; +4 would be 10
        ("Orbit › Moons", "It is farther out."),
    ],
    12: [
        ("", "Mars is red. It has two moons. Phobos is the larger one."),  # exactly 12
        ("", "Deimos is small."),
        ("Orbit", "A year lasts 687 days. Seasons are long."),  # 8; +10 would be 18
        ("Orbit", "This sentence is deliberately much longer than the limit allows. Short one."),  # 12
        ("Orbit › Moons", f"Phobos orbits fast.{PARAGRAPH}Deimos orbits slowly. It is farther out."),
    ],
}


@pytest.mark.parametrize("max_words", sorted(EXPECTED))
def test_hand_built_document_packs_exactly(max_words):
    chunks = chunk_document(HAND_BUILT, ChunkerSpec("sentences", max_words))
    assert [(chunk.section, chunk.text) for chunk in chunks] == EXPECTED[max_words]
    text = HAND_BUILT.full_text
    position = 0
    for chunk in chunks:
        # The chunks follow each other through the text, each where its text is.
        start = text.index(chunk.text, position)
        assert (chunk.start, chunk.end) == (start, start + len(chunk.text))
        position = chunk.end


def test_hand_built_boundaries_as_offsets():
    text = HAND_BUILT.full_text
    offsets = HAND_BUILT.block_offsets()
    sections = [(offsets[0][0], offsets[1][1]), offsets[2], (offsets[3][0], offsets[4][1])]
    lead_second_pack = text.index("Phobos is the larger")
    assert sentence_packs(text, sections, 8)[:2] == [
        (0, text.index(" Phobos is the larger")),
        (lead_second_pack, offsets[1][1]),
    ]
    # One section holding everything: packing then runs across the section breaks too.
    whole = sentence_packs(text, [(0, len(text))], 8)
    assert [count_words(text[start:end]) for start, end in whole] == [7, 8, 8, 10, 8, 4]


def test_a_sentence_over_the_limit_is_its_own_chunk_and_is_not_cut():
    chunks = chunk_document(HAND_BUILT, ChunkerSpec("sentences", 1))
    sentences = [
        block.text[start:end] for block in HAND_BUILT.blocks for start, end in split_sentences(block.text)
    ]
    assert [chunk.text for chunk in chunks] == sentences


# --------------------------------------------------------------------------
# Property: no pack could have taken the next sentence of its section
# --------------------------------------------------------------------------

WORD = st.text(alphabet="abcdefgh", min_size=2, max_size=6)
SENTENCE = st.lists(WORD, min_size=1, max_size=12).map(lambda words: " ".join(words).capitalize() + ".")
PARAGRAPHS = st.lists(st.lists(SENTENCE, min_size=1, max_size=5).map(" ".join), min_size=1, max_size=3)
# Consecutive entries with the same heading share a section, as in a parsed document.
SECTIONS = st.lists(st.tuples(st.sampled_from(["", "A", "B"]), PARAGRAPHS), min_size=1, max_size=5)


def document_of(sections) -> Document:
    blocks = [
        Block((heading,) if heading else (), paragraph)
        for heading, paragraphs in sections
        for paragraph in paragraphs
    ]
    return Document("doc", "Doc", "1", tuple(blocks))


def section_runs(document: Document) -> list[tuple[int, int]]:
    """Start and end of each run of consecutive blocks under one heading, computed here independently."""
    runs: list[tuple[int, int]] = []
    previous = None
    for block, (start, end) in zip(document.blocks, document.block_offsets(), strict=True):
        if runs and block.section == previous:
            runs[-1] = (runs[-1][0], end)
        else:
            runs.append((start, end))
        previous = block.section
    return runs


@settings(max_examples=80, deadline=None)
@given(SECTIONS, st.integers(1, 30))
def test_packs_are_as_full_as_allowed(sections, max_words):
    document = document_of(sections)
    runs = section_runs(document)
    chunks = chunk_document(document, ChunkerSpec("sentences", max_words))

    def run_of(chunk) -> int:
        (index,) = [i for i, (start, end) in enumerate(runs) if start <= chunk.start and chunk.end <= end]
        return index

    for chunk in chunks:
        sentence_count = len(split_sentences(chunk.text))
        assert count_words(chunk.text) <= max_words or sentence_count == 1
    for chunk, following in zip(chunks, chunks[1:], strict=False):
        if run_of(chunk) != run_of(following):
            continue
        start, end = split_sentences(following.text)[0]
        next_sentence = following.text[start:end]
        assert count_words(chunk.text) + count_words(next_sentence) > max_words, (chunk.text, next_sentence)
    # Every section ends a pack: the last chunk of each run ends where the run's text ends.
    last_of_run = [
        chunk
        for chunk, following in zip(chunks, [*chunks[1:], None], strict=True)
        if following is None or run_of(following) != run_of(chunk)
    ]
    assert [chunk.end for chunk in last_of_run] == [end for _, end in runs]
