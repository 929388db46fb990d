"""The embedding cache: texts encoded once, vectors kept in write-once shards.

A counting fake encoder stands in for the model, so these tests need none of
the optional packages: what is checked is which texts reach the encoder and
which rows come back where.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest

from rag.retrieval.dense.embedding_cache import (
    CacheOutcome,
    EncoderSettings,
    describe_outcome,
    embed_with_cache,
    encoder_fingerprint,
    progress_message,
    text_key,
)
from rag.retrieval.dense.embedding_shards import read_embedding_shards, write_embedding_shard


class CountingEncoder:
    """Maps a text to a fixed pseudo-random unit vector and records every call."""

    def __init__(self, dimension: int = 6):
        self.dimension = dimension
        self.calls: list[list[str]] = []

    def vector(self, text: str) -> np.ndarray:
        seed = int(hashlib.md5(text.encode()).hexdigest()[:8], 16)
        values = np.random.default_rng(seed).normal(size=self.dimension).astype(np.float32)
        return values / np.linalg.norm(values)

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([self.vector(text) for text in texts]) if texts else np.zeros((0, self.dimension))


def test_text_key_is_the_sha256_of_the_utf8_text():
    assert text_key("Mars › Moons") == hashlib.sha256("Mars › Moons".encode()).hexdigest()
    assert text_key("a") != text_key("a ")
    assert len({text_key(text) for text in ["", " ", "Venus", "venus"]}) == 4


def test_first_lookup_encodes_each_distinct_text_once_in_order_of_first_occurrence():
    encoder = CountingEncoder()
    texts = ["b", "a", "b", "c", "a"]
    matrix, fresh, outcome = embed_with_cache(texts, {}, encoder)
    assert encoder.calls == [["b", "a", "c"]]
    assert outcome == CacheOutcome(texts=5, distinct=3, hits=0, encoded=3)
    assert matrix.dtype == np.float32 and matrix.shape == (5, 6)
    for row, text in zip(matrix, texts, strict=True):
        np.testing.assert_array_equal(row, encoder.vector(text))
    assert set(fresh) == {text_key(text) for text in "abc"}


def test_cached_texts_are_not_encoded_and_a_full_hit_never_calls_the_encoder():
    encoder = CountingEncoder()
    _, fresh, _ = embed_with_cache(["x", "y"], {}, encoder)
    matrix, new, outcome = embed_with_cache(["y", "z", "x"], fresh, encoder)
    assert encoder.calls[-1] == ["z"]
    assert outcome == CacheOutcome(texts=3, distinct=3, hits=2, encoded=1)
    assert list(new) == [text_key("z")]
    np.testing.assert_array_equal(matrix[0], encoder.vector("y"))

    def refuse(texts):
        raise AssertionError(f"encoder called for {texts}")

    everything = {**fresh, **new}
    again, none, outcome = embed_with_cache(["x", "z", "y", "x"], everything, refuse)
    assert none == {} and outcome == CacheOutcome(texts=4, distinct=3, hits=3, encoded=0)
    np.testing.assert_array_equal(again[3], encoder.vector("x"))


def test_a_cached_vector_is_served_as_stored_not_recomputed():
    stored = {text_key("kept"): np.full(6, 0.5, dtype=np.float32)}
    matrix, _, _ = embed_with_cache(["kept"], stored, CountingEncoder())
    np.testing.assert_array_equal(matrix[0], np.full(6, 0.5))


def test_no_texts_give_no_rows_and_no_encoding():
    encoder = CountingEncoder()
    matrix, fresh, outcome = embed_with_cache([], {}, encoder)
    assert len(matrix) == 0 and fresh == {} and encoder.calls == []
    assert outcome == CacheOutcome(0, 0, 0, 0)


def test_bad_encoder_output_and_mixed_dimensions_are_errors():
    with pytest.raises(ValueError, match="shape"):
        embed_with_cache(["a", "b"], {}, lambda texts: np.zeros((1, 4)))
    stored = {text_key("old"): np.ones(3, dtype=np.float32)}
    with pytest.raises(ValueError, match="dimension"):
        embed_with_cache(["old", "new"], stored, CountingEncoder(dimension=4))
    with pytest.raises(ValueError, match="single string"):
        embed_with_cache("text", {}, CountingEncoder())


def test_namespace_separates_everything_that_changes_a_vector():
    base = EncoderSettings("all-MiniLM-L6-v2", 256, "f" * 64)
    variants = [
        base,
        EncoderSettings("all-MiniLM-L12-v2", 256, "f" * 64),
        EncoderSettings("all-MiniLM-L6-v2", 128, "f" * 64),
        EncoderSettings("all-MiniLM-L6-v2", 256, "e" * 64),
    ]
    assert len({settings.namespace() for settings in variants}) == len(variants)
    nested = EncoderSettings("sentence-transformers/all-MiniLM-L6-v2", 256, "0" * 64).namespace()
    assert all(os.sep not in part and "/" not in part for part in nested)


def test_fingerprint_changes_with_the_code_and_with_the_package_version():
    fingerprints = {
        encoder_fingerprint("code-1", "0.1.0"),
        encoder_fingerprint("code-2", "0.1.0"),
        encoder_fingerprint("code-1", "0.2.0"),
    }
    assert len(fingerprints) == 3
    assert encoder_fingerprint("code-1", "0.1.0") == encoder_fingerprint("code-1", "0.1.0")


def test_log_lines_give_the_counts_and_the_rate():
    line = describe_outcome("chunk texts", CacheOutcome(texts=10, distinct=8, hits=5, encoded=3))
    assert line == "chunk texts: 10 texts (8 distinct): 5 cache hits, 3 encoded"
    assert progress_message(50, 200, 2.0) == "encoded 50/200 texts in 2.0 s (25.0 texts per second)"


def test_shards_round_trip_and_merge(tmp_path):
    encoder = CountingEncoder()
    first = {text_key(text): encoder.vector(text) for text in ["a", "b"]}
    second = {text_key(text): encoder.vector(text) for text in ["c"]}
    folder = tmp_path / "cache" / "model" / "settings"
    paths = [write_embedding_shard(folder, first), write_embedding_shard(folder, second)]
    assert all(path is not None and path.exists() for path in paths)
    vectors, problems = read_embedding_shards(folder)
    assert problems == []
    assert set(vectors) == set(first) | set(second)
    for key, vector in {**first, **second}.items():
        np.testing.assert_array_equal(vectors[key], vector)
        assert vectors[key].dtype == np.float32
    # Nothing half-written is left behind.
    assert sorted(path.suffix for path in folder.iterdir()) == [".npz", ".npz"]


def test_the_same_vectors_give_the_same_shard_and_nothing_new_writes_nothing(tmp_path):
    encoder = CountingEncoder()
    vectors = {text_key(text): encoder.vector(text) for text in ["a", "b"]}
    assert write_embedding_shard(tmp_path, vectors) == write_embedding_shard(
        tmp_path, dict(reversed(vectors.items()))
    )
    assert len(list(tmp_path.glob("*.npz"))) == 1
    assert write_embedding_shard(tmp_path / "other", {}) is None
    assert not (tmp_path / "other").exists()


def test_missing_folder_is_an_empty_cache_and_a_damaged_shard_is_skipped_by_name(tmp_path):
    assert read_embedding_shards(tmp_path / "absent") == ({}, [])
    encoder = CountingEncoder()
    good = {text_key("a"): encoder.vector("a")}
    write_embedding_shard(tmp_path, good)
    damaged = tmp_path / "0000damaged.npz"
    damaged.write_bytes(b"not a zip archive")
    vectors, problems = read_embedding_shards(tmp_path)
    assert set(vectors) == set(good)
    assert len(problems) == 1 and "0000damaged.npz" in problems[0] and "skipped" in problems[0]
