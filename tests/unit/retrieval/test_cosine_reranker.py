"""The minilm_cosine rerank kind: one module and one table entry, reached through the funnel's dispatch.

The configuration half needs no optional package. The encoding half is
skipped without the dense extra; it compares the reranker's scores with the
embedder retriever's batch-encoded vectors, an independent path through the
same encoder.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from rag.kinds import RETRIEVER_KINDS, defaults, kinds_with
from rag.pipeline.config import ConfigError, build_plan
from rag.retrieval.dense import sentence_embeddings
from rag.retrieval.funnel import configured_reranker, funnel_ranking
from rag.retrieval.search import Ranking, chunk_id_order
from tests.extras import needs, require_extra
from tests.workdir import FIXTURES, PROJECT

SCHEMA = yaml.safe_load((PROJECT / "workflow/schemas/config.schema.yaml").read_text())
ENTRY = {"kind": "minilm_cosine", **defaults(RETRIEVER_KINDS)["minilm_cosine"]}
CHUNKS = [
    "Venus › Orbit: It completes an orbit every 224.7 days at a distance of 0.72 AU.",
    "Venus › Rotation: Its rotation is retrograde and takes 243 days.",
    "Ceres › Formation: The dwarf planet formed 4.56 billion years ago in the asteroid belt.",
    "Mars › Moons: Phobos and Deimos were discovered by A. Hall in 1877.",
    "Jupiter › Moons: Jupiter has 95 confirmed moons.",
]
QUESTIONS = ["How long is a year on Venus?", "How old is Ceres?", "Who found the moons of Mars?"]


def tiny_with(retrievers: dict) -> dict:
    config = yaml.safe_load((FIXTURES / "tiny" / "config.yaml").read_text())
    config["retrievers"].update(copy.deepcopy(retrievers))
    return config


def test_the_kind_is_a_reranker_with_no_rankings_of_its_own():
    kind = RETRIEVER_KINDS["minilm_cosine"]
    assert kind.role == "rerank" and kind.rule is None and kind.rerank is not None
    assert "minilm_cosine" in kinds_with("rerank") and "minilm_cosine" not in kinds_with(plain=True)


@needs("dense")  # the plan refuses a model kind whose packages are missing
def test_a_funnel_reranks_with_it_and_the_plan_makes_no_rankings_for_it():
    funnel = {"kind": "funnel", "first": "bm25", "rerank": "mc", "candidates": 3}
    plan = build_plan(tiny_with({"mc": {"kind": "minilm_cosine"}, "f": funnel}), SCHEMA, FIXTURES / "tiny")
    assert {key: plan.retrievers["mc"][key] for key in ENTRY} == ENTRY  # defaults from the table
    assert "mc" not in {retriever for _, _, retriever in plan.grid()}
    assert "f" in {retriever for _, _, retriever in plan.grid()}
    assert set(plan.rerank_entries("f")) == {"mc"}


@needs("dense")  # the plan refuses a model kind whose packages are missing
def test_naming_it_as_a_first_stage_is_one_line_naming_the_key():
    funnel = {"kind": "funnel", "first": "mc", "rerank": None, "candidates": 3}
    with pytest.raises(ConfigError, match=r"config\['retrievers'\]\['f'\]\['first'\]: 'mc' only reranks"):
        build_plan(tiny_with({"mc": {"kind": "minilm_cosine"}, "f": funnel}), SCHEMA, FIXTURES / "tiny")


def test_a_misspelled_parameter_is_refused():
    config = tiny_with({"mc": {"kind": "minilm_cosine", "max_token": 10}})
    with pytest.raises(ConfigError, match="max_token"):
        build_plan(config, SCHEMA, FIXTURES / "tiny")


# --------------------------------------------------------------------------- real encodings (dense extra)


@pytest.fixture(scope="module")
def dense_extra():
    require_extra("dense")
    return sentence_embeddings


def test_scores_are_the_cosines_of_the_embedder_retrievers_vectors(dense_extra):
    tie_order = chunk_id_order([f"c{i}" for i in range(len(CHUNKS))])
    reranker, record = configured_reranker(
        {"rerank": "mc"}, {"mc": ENTRY}, {}, len(CHUNKS), tie_order, lambda column: CHUNKS
    )
    assert record["retriever"]["kind"] == "minilm_cosine"
    embedder = {"kind": "embedder", **defaults(RETRIEVER_KINDS)["embedder"]}
    index = dense_extra.index_entry(embedder, CHUNKS)  # batch-encoded, as the embedder retriever does
    queries = dense_extra.embed_entry(index, embedder, QUESTIONS)
    candidates = np.array([4, 2, 0, 3, 1])
    for question, query_vector in zip(QUESTIONS, queries, strict=True):
        scores = reranker(question, candidates)
        expected = index.chunk_embeddings[candidates].astype(np.float64) @ query_vector.astype(np.float64)
        np.testing.assert_allclose(scores, expected, atol=1e-4)


def test_a_chunks_score_does_not_depend_on_the_other_candidates(dense_extra):
    reranker, _ = configured_reranker(
        {"rerank": "mc"}, {"mc": ENTRY}, {}, len(CHUNKS), None, lambda _: CHUNKS
    )
    together = reranker(QUESTIONS[2], np.array([0, 1, 2, 3, 4]))
    alone = [reranker(QUESTIONS[2], np.array([position]))[0] for position in (3, 0, 4, 1, 2)]
    assert together[[3, 0, 4, 1, 2]].tolist() == alone
    assert reranker(QUESTIONS[2], np.array([], dtype=np.int64)).shape == (0,)


def test_the_funnel_orders_candidates_as_the_independent_cosines_do(dense_extra):
    tie_order = chunk_id_order([f"c{i}" for i in range(len(CHUNKS))])
    reranker, _ = configured_reranker(
        {"rerank": "mc"}, {"mc": ENTRY}, {}, len(CHUNKS), tie_order, lambda _: CHUNKS
    )
    embedder = {"kind": "embedder", **defaults(RETRIEVER_KINDS)["embedder"]}
    index = dense_extra.index_entry(embedder, CHUNKS)
    first = Ranking(np.arange(len(CHUNKS)), np.arange(len(CHUNKS), 0, -1).astype(float))
    for question, query_vector in zip(
        QUESTIONS, dense_extra.embed_entry(index, embedder, QUESTIONS), strict=True
    ):
        cosines = index.chunk_embeddings.astype(np.float64) @ query_vector.astype(np.float64)
        assert np.diff(np.sort(cosines)).min() > 1e-3  # no near-ties, so the order is well defined
        reranked = funnel_ranking(first, question, reranker, len(CHUNKS), len(CHUNKS), tie_order)
        assert reranked.positions.tolist() == np.argsort(-cosines).tolist()
