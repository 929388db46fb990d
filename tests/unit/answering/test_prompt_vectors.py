"""A chunk set's prompt sentences, encoded once: the answer jobs read them instead of encoding them."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from rag.answering.answers import reader_frames
from rag.answering.reader import CachedSentenceEmbedder, chunk_sentences, prompt_texts, write_prompt_vectors
from rag.ask.measure import measure_ask, measured_ask_texts
from rag.chunking import Chunk
from rag.documents.blocks import Block, Document
from rag.formats.tables import DamagedFileError
from rag.labels import Question
from rag.retrieval.dense.embedding_cache import text_key
from rag.retrieval.dense.embedding_shards import read_embedding_file, write_embedding_file
from tests.extras import needs


def chunk(chunk_id: str, text: str) -> Chunk:
    return Chunk(chunk_id, "saturn", "Saturn", "Moons", 0, len(text), text)


TITAN = chunk("c1", "Titan is the largest moon of Saturn. It is wrapped in a thick haze.")
RHEA = chunk("c2", "Rhea is the second largest moon.  Titan is the largest moon of Saturn.")
QUESTIONS = [
    Question("q1", "Which is the largest moon of Saturn?", "general", False, ()),
    Question("q2", "What wraps Titan?", "general", False, ()),
]
DOCUMENTS = [Document("saturn", "Saturn", "1", (Block(("Moons",), TITAN.text + " " + RHEA.text),))]


def fake_vectors(texts: list[str]) -> np.ndarray:
    """Unit rows that depend on the text alone, as an encoder's do."""
    rows = [np.frombuffer(hashlib.sha256(text.encode()).digest(), dtype=np.uint8)[:8] for text in texts]
    matrix = np.asarray(rows, dtype=np.float32) + 1.0
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.fixture
def encoded(monkeypatch) -> list[list[str]]:
    """Every call of the encoder, with the texts it was given (MiniLM itself is not needed)."""
    calls: list[list[str]] = []

    def encode(self, texts):
        calls.append(list(texts))
        return fake_vectors(texts)

    monkeypatch.setattr(CachedSentenceEmbedder, "_encode", encode)
    return calls


def test_prompt_texts_are_the_questions_and_every_chunk_sentence_once():
    texts = prompt_texts([question.text for question in QUESTIONS], [TITAN, RHEA])
    expected = {QUESTIONS[0].text, QUESTIONS[1].text, *chunk_sentences(TITAN), *chunk_sentences(RHEA)}
    assert texts == sorted(expected)
    # The sentence both chunks hold, whitespace collapsed as the reader quotes it, once.
    assert texts.count("Titan is the largest moon of Saturn.") == 1
    assert "Rhea is the second largest moon." in texts


@needs("dense")  # CachedSentenceEmbedder reads the MiniLM package's version
def test_written_vectors_are_read_back_by_text_key(tmp_path, encoded):
    texts = prompt_texts([question.text for question in QUESTIONS], [TITAN, RHEA])
    embedder = CachedSentenceEmbedder(tmp_path / "cache")
    assert write_prompt_vectors(embedder, texts, tmp_path / "vectors.npz") == len(texts)
    stored = read_embedding_file(tmp_path / "vectors.npz")
    assert sorted(stored) == sorted(text_key(text) for text in texts)
    for text, row in zip(texts, fake_vectors(texts), strict=True):
        np.testing.assert_array_equal(stored[text_key(text)], row)
    # The cache keeps them too: a second chunk set's job with the same sentences encodes nothing.
    again = CachedSentenceEmbedder(tmp_path / "cache")
    assert write_prompt_vectors(again, texts, tmp_path / "again.npz") == 0
    assert len(encoded) == 1
    assert (tmp_path / "again.npz").read_bytes() == (tmp_path / "vectors.npz").read_bytes()


@needs("dense")  # CachedSentenceEmbedder reads the MiniLM package's version
def test_answers_with_preloaded_vectors_encode_nothing_and_equal_the_answers_without(tmp_path, encoded):
    texts = prompt_texts([question.text for question in QUESTIONS], [TITAN, RHEA])
    write_prompt_vectors(CachedSentenceEmbedder(tmp_path / "other_cache"), texts, tmp_path / "vectors.npz")
    encoded.clear()
    generation = {"k": 2, "budget": 1000, "token_counter": "word_and_punctuation"}
    readers = [
        {"name": "reader", "kind": "reader", "similarity": "none"},
        {"name": "reader_minilm", "kind": "reader", "similarity": "minilm"},
    ]
    arguments = (QUESTIONS, DOCUMENTS, lambda question: [TITAN, RHEA], [TITAN, RHEA], {}, generation, readers)
    keys = {"corpus": "c", "chunker": "x", "retriever": "r"}

    preloaded = reader_frames(
        *arguments, str(tmp_path / "empty_cache"), prompt_vectors=[str(tmp_path / "vectors.npz")], **keys
    )
    assert encoded == []
    assert preloaded[1][1].fresh == {}  # nothing new to store in the cache
    encoded_alone = reader_frames(*arguments, str(tmp_path / "fresh_cache"), **keys)
    assert encoded  # without the file, the same job encodes its prompts
    for (with_file, _), (without, _) in zip(preloaded, encoded_alone, strict=True):
        assert with_file.equals(without)
    # The similarity was read, not skipped: it moves reader_minilm's scores off the plain reader's.
    assert not np.allclose(preloaded[1][0]["score"], preloaded[0][0]["score"])


def test_a_damaged_vectors_file_is_an_error_not_an_empty_cache(tmp_path):
    path = tmp_path / "vectors.npz"
    path.write_bytes(b"not a zip archive")
    with pytest.raises(DamagedFileError, match="vectors.npz: damaged"):
        read_embedding_file(path)
    write_embedding_file(path, {})
    assert read_embedding_file(path) == {}


@needs("dense")  # CachedSentenceEmbedder reads the MiniLM package's version
def test_the_held_out_checks_texts_encoded_ahead_leave_it_nothing_to_encode(tmp_path, encoded):
    """measured_ask_texts lists everything measure_ask embeds: with them preloaded it encodes nothing."""
    documents = [
        Document("saturn", "Saturn", "1", (Block(("Moons",), TITAN.text + " " + RHEA.text),)),
        Document("mars", "Mars", "1", (Block(("Moons",), "Phobos and Deimos are the two moons of Mars."),)),
    ]
    question_sets = {"development": QUESTIONS[:1], "heldout": QUESTIONS[1:]}
    texts = measured_ask_texts(documents, question_sets)
    assert {QUESTIONS[0].text, QUESTIONS[1].text, "Phobos and Deimos are the two moons of Mars."} <= set(
        texts
    )
    assert any(text.startswith("Mars") and "Phobos" in text for text in texts)  # a chunk with its header
    write_prompt_vectors(CachedSentenceEmbedder(tmp_path / "other_cache"), texts, tmp_path / "ask.npz")
    encoded.clear()

    embedder = CachedSentenceEmbedder(tmp_path / "empty_cache")
    embedder.preload(tmp_path / "ask.npz")
    rows = measure_ask(documents, question_sets, {"reader": 0.0, "reader_minilm": 0.0}, embedder)
    assert encoded == [] and embedder.fresh == {}
    assert {row["generator"] for row in rows} == {"extractive", "reader", "reader_minilm"}
    # Without the file, the same check encodes them itself.
    measure_ask(
        documents,
        question_sets,
        {"reader": 0.0, "reader_minilm": 0.0},
        CachedSentenceEmbedder(tmp_path / "c"),
    )
    assert encoded
