"""Encoding at scale: blocks stored as they finish, resumption after an interruption, the device setting.

A counting fake encoder stands in for the model where only the traffic
matters (which texts reach the encoder, which rows come back where); the
device tests run the real model through both paths on the CPU.
"""

from __future__ import annotations

import hashlib
import sys
import types

import numpy as np
import pytest

from rag.retrieval.dense.embedding_cache import (
    CacheOutcome,
    EmbeddingCache,
    embed_streaming,
    format_duration,
    text_key,
    time_left_message,
)
from rag.retrieval.dense.embedding_shards import read_embedding_shards
from tests.extras import require_extra


class Interrupted(Exception):
    """Stands for a job killed part-way (a time limit, a preempted node, Ctrl-C)."""


class CountingEncoder:
    """A fixed pseudo-random unit vector per text; records every text it encodes; may stop after N calls."""

    def __init__(self, fail_after_calls: int | None = None, dimension: int = 5):
        self.fail_after_calls = fail_after_calls
        self.dimension = dimension
        self.encoded: list[str] = []
        self.calls = 0

    def vector(self, text: str) -> np.ndarray:
        seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
        values = np.random.default_rng(seed).normal(size=self.dimension).astype(np.float32)
        return values / np.linalg.norm(values)

    def __call__(self, texts: list[str]) -> np.ndarray:
        if self.fail_after_calls is not None and self.calls >= self.fail_after_calls:
            raise Interrupted(f"stopped before call {self.calls + 1}")
        self.calls += 1
        self.encoded.extend(texts)
        return np.stack([self.vector(text) for text in texts])


TEXTS = [f"chunk number {index} about topic {index % 7}" for index in range(23)] + [
    "chunk number 3 about topic 3"
]


def test_blocks_are_stored_one_by_one_with_progress():
    encoder = CountingEncoder()
    stored, progress = [], []
    cached = {text_key(TEXTS[0]): encoder.vector(TEXTS[0])}
    matrix, fresh, outcome = embed_streaming(
        TEXTS, cached, encoder, stored.append, block_texts=5, progress=lambda d, t: progress.append((d, t))
    )
    # 24 texts, 23 distinct, one cached: 22 encoded in blocks of 5, 5, 5, 5, 2.
    assert outcome == CacheOutcome(texts=24, distinct=23, hits=1, encoded=22)
    assert [len(block) for block in stored] == [5, 5, 5, 5, 2]
    assert progress == [(5, 22), (10, 22), (15, 22), (20, 22), (22, 22)]
    assert encoder.encoded == TEXTS[1:23]
    assert set(fresh) == {text_key(text) for text in TEXTS[1:23]}
    for row, text in zip(matrix, TEXTS, strict=True):
        np.testing.assert_array_equal(row, encoder.vector(text))


def test_an_interrupted_job_resumes_encoding_only_what_was_not_cached(tmp_path):
    folder = tmp_path / "cache" / "model" / "settings"
    lines: list[str] = []

    # The first run stops after three blocks of four.
    first = CountingEncoder(fail_after_calls=3)
    with pytest.raises(Interrupted):
        EmbeddingCache(folder, lines.append).embed("chunks", TEXTS, first, block_texts=4)
    assert len(first.encoded) == 12
    on_disk, problems = read_embedding_shards(folder)
    assert problems == [] and set(on_disk) == {text_key(text) for text in first.encoded}

    # The restarted job encodes exactly the other eleven distinct texts.
    second = CountingEncoder()
    cache = EmbeddingCache(folder, lines.append)
    matrix = cache.embed("chunks", TEXTS, second, block_texts=4)
    distinct = list(dict.fromkeys(TEXTS))
    assert second.encoded == distinct[12:]
    assert not set(second.encoded) & set(first.encoded)
    for row, text in zip(matrix, TEXTS, strict=True):
        np.testing.assert_array_equal(row, second.vector(text))
    assert "chunks: 24 texts (23 distinct): 12 cache hits, 11 encoded" in lines

    # A third run is all hits and never calls the encoder.
    third = CountingEncoder(fail_after_calls=0)
    EmbeddingCache(folder, lines.append).embed("chunks", TEXTS, third, block_texts=4)
    assert third.encoded == []


def test_progress_lines_give_rate_and_time_left(tmp_path):
    times = iter([0.0, 10.0, 20.0, 25.0])
    lines: list[str] = []
    cache = EmbeddingCache(tmp_path / "cache", lines.append)
    texts = [f"t{i}" for i in range(10)]
    cache.embed("chunks", texts, CountingEncoder(), block_texts=4, clock=lambda: next(times))
    assert [line for line in lines if line.startswith("chunks: encoded")] == [
        "chunks: encoded 4/10 texts in 10.0 s (0.4 texts per second), about 15 s left",
        "chunks: encoded 8/10 texts in 20.0 s (0.4 texts per second), about 5 s left",
        "chunks: encoded 10/10 texts in 25.0 s (0.4 texts per second)",
    ]
    assert sum(line.startswith("stored 4 new embeddings") for line in lines) == 2


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [(0.4, "0 s"), (59.4, "59 s"), (200, "3 min 20 s"), (7500, "2 h 05 min"), (-3, "0 s")],
)
def test_durations_read_naturally(seconds, expected):
    assert format_duration(seconds) == expected


def test_time_left_needs_progress():
    assert time_left_message(0, 10, 1.0) == "encoded 0/10 texts in 1.0 s (0.0 texts per second)"
    assert time_left_message(10, 10, 1.0).endswith("(10.0 texts per second)")


def test_block_size_must_be_positive():
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="block_texts must be a positive integer"):
            embed_streaming(["a"], {}, CountingEncoder(), lambda block: None, block_texts=bad)


def test_an_entrys_chunks_and_questions_go_through_its_cache_namespace(tmp_path, monkeypatch):
    require_extra("dense")
    from rag.retrieval.dense import sentence_embeddings
    from rag.retrieval.dense.sentence_embeddings import embed_chunks_and_questions, encoder_settings

    encoder = CountingEncoder()
    calls = []

    def fake_encode_texts(model, texts, **options):
        calls.append((model, options))
        return encoder(list(texts))

    monkeypatch.setattr(sentence_embeddings, "encode_texts", fake_encode_texts)
    entry = {"model": "all-MiniLM-L6-v2", "max_tokens": 256, "batch_size": 8, "text": "plain"}
    lines: list[str] = []
    chunks, questions = TEXTS[:6], ["which topic?", "chunk number 1 about topic 1"]
    chunk_vectors, query_vectors, fingerprint = embed_chunks_and_questions(
        entry, "cpu", chunks, questions, tmp_path, lines.append, "minilm on t/s", workers=2
    )
    settings = encoder_settings("all-MiniLM-L6-v2", 256, "numpy")
    assert fingerprint == settings.fingerprint
    assert read_embedding_shards(tmp_path.joinpath(*settings.namespace()))[0]
    assert calls[0] == (
        "all-MiniLM-L6-v2",
        {"batch_size": 8, "max_tokens": 256, "workers": 2, "device": "cpu"},
    )
    assert encoder.encoded == chunks + ["which topic?"]  # the second question is a chunk's text: a hit
    for row, text in zip([*chunk_vectors, *query_vectors], chunks + questions, strict=True):
        np.testing.assert_array_equal(row, encoder.vector(text))
    assert lines[1] == "minilm on t/s: encoding on cpu"
    assert "chunk texts (text): 6 texts (6 distinct): 0 cache hits, 6 encoded" in lines
    assert "question texts: 2 texts (2 distinct): 1 cache hits, 1 encoded" in lines


# --------------------------------------------------------------------------- device


def _fake_torch(monkeypatch, cuda: bool) -> None:
    fake = types.ModuleType("torch")
    fake.cuda = types.SimpleNamespace(is_available=lambda: cuda)
    monkeypatch.setitem(sys.modules, "torch", fake)


def test_device_auto_takes_cuda_only_when_torch_sees_a_gpu(monkeypatch):
    from rag.retrieval.dense.sentence_embeddings import device_backend, resolve_device

    assert resolve_device("cpu") == "cpu" and device_backend("cpu") == "numpy"
    _fake_torch(monkeypatch, cuda=False)
    assert resolve_device("auto") == "cpu"
    with pytest.raises(ValueError, match='device "cuda" needs torch with a CUDA GPU'):
        resolve_device("cuda")
    _fake_torch(monkeypatch, cuda=True)
    assert resolve_device("auto") == "cuda" and resolve_device("cuda") == "cuda"
    assert device_backend("cuda") == "torch-cuda"
    monkeypatch.setitem(sys.modules, "torch", None)  # torch not installed
    assert resolve_device("auto") == "cpu"
    with pytest.raises(ValueError, match="device must be one of cpu, cuda, auto"):
        resolve_device("gpu")


def test_the_cache_keeps_gpu_vectors_apart_from_cpu_ones():
    require_extra("dense")
    from rag.retrieval.dense.sentence_embeddings import encoder_settings

    cpu = encoder_settings("all-MiniLM-L6-v2", 256, "numpy")
    gpu = encoder_settings("all-MiniLM-L6-v2", 256, "torch-cuda")
    assert cpu.namespace()[0] == gpu.namespace()[0] and cpu.namespace()[1] != gpu.namespace()[1]


@pytest.mark.pipeline  # slow: see the marker in pyproject.toml
def test_the_torch_path_agrees_with_the_numpy_encoder_on_the_cpu():
    """The GPU code path, run on the CPU: same model, same texts, cosine 0.9999 or more."""
    require_extra("dense-check")
    require_extra("dense")
    from rag.retrieval.dense.sentence_embeddings import encode_texts, encode_with_torch

    texts = ["Mars has two small moons, Phobos and Deimos.", "Which planet has the most moons?", "x " * 400]
    numpy_vectors = encode_texts("all-MiniLM-L6-v2", texts, batch_size=2, max_tokens=128, device="cpu")
    torch_vectors = encode_with_torch("all-MiniLM-L6-v2", texts, batch_size=2, max_tokens=128, device="cpu")
    assert torch_vectors.shape == numpy_vectors.shape == (3, 384)
    cosines = np.sum(numpy_vectors * torch_vectors, axis=1)
    assert np.all(cosines > 0.9999), cosines
    # Like the numpy encoder's, a torch vector does not depend on the texts encoded with it.
    alone = encode_with_torch("all-MiniLM-L6-v2", texts[1:2], max_tokens=128, device="cpu")
    np.testing.assert_array_equal(torch_vectors[1:2], alone)
