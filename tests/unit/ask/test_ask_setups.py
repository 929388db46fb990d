"""rag ask's setups are named entries of the table of kinds, and its index ranks as the pipeline does."""

from __future__ import annotations

import jsonschema
import numpy as np
import pytest
import yaml

from rag.ask import cli as ask_cli
from rag.ask.index import (
    DEFAULT_SOURCES,
    IndexOptions,
    RetrievalSettings,
    build_question_index,
    parse_documents,
    retrieve,
    setup_entries,
)
from rag.ask.setups import ASK_SETUPS, SPEC_SETUP
from rag.corpus.markdown_files import read_markdown_folder
from rag.formats.files import read_yaml
from rag.labels import parse_questions
from rag.pipeline.config import _canonical_grid
from rag.retrieval.config_checks import check_distinct_components
from rag.retrieval.fusion import fuse
from rag.retrieval.retrievers import build_ivf_retriever, build_retriever, search
from rag.retrieval.search import chunk_id_order
from tests.workdir import PROJECT

BUNDLED = PROJECT / "resources" / "solar_system"
SCHEMA = yaml.safe_load((PROJECT / "workflow/schemas/config.schema.yaml").read_text())


def as_config(name: str) -> dict:
    """A setup as the grid sections of a config.yaml: its chunker under the setup's name, its retrievers."""
    setup = ASK_SETUPS[name]
    return {
        "chunkers": {name: dict(setup.chunker)},
        "retrievers": {key: dict(entry) for key, entry in setup.retrievers.items()},
    }


def planned(name: str) -> tuple[dict, dict]:
    """The setup's canonical chunkers and retrievers, through the config plan's own checks.

    No kind is checked for its installed packages: that check is about the
    machine, not the entries, and these tests run with only the test extra too.
    """
    return _canonical_grid(as_config(name), ())


@pytest.mark.parametrize("name", sorted(ASK_SETUPS))
def test_every_setup_passes_the_checks_of_config_yaml(name):
    config = as_config(name)
    for section in ("chunkers", "retrievers"):
        schema = {**SCHEMA["properties"][section], "$defs": SCHEMA.get("$defs", {})}
        jsonschema.validate(config[section], schema)
    chunkers, retrievers = planned(name)
    check_distinct_components(retrievers)
    setup = ASK_SETUPS[name]
    assert setup.fused in retrievers and setup.weights in retrievers
    assert retrievers[setup.fused]["components"] == [setup.lexical, setup.dense]


def test_rag_ask_retrievers_and_default_setup_are_entries_of_the_table():
    assert set(ask_cli.RETRIEVERS) - {"auto"} == set(ASK_SETUPS)
    assert IndexOptions().retriever == SPEC_SETUP
    assert IndexOptions(dense_model="all-MiniLM-L6-v2").retriever == "bm25_minilm"
    assert DEFAULT_SOURCES == ASK_SETUPS[SPEC_SETUP].sources


@pytest.mark.parametrize(
    ("name", "options"), [(SPEC_SETUP, IndexOptions()), ("bm25_minilm", IndexOptions(dense_model="m"))]
)
def test_the_index_is_built_from_the_canonical_entries_of_the_plan(name, options):
    """Without overrides, rag ask's entries are the plan's canonical entries of its setup, defaults filled."""
    chunkers, retrievers = planned(name)
    setup = ASK_SETUPS[name]
    entries = setup_entries(options)
    assert entries.chunker == chunkers[name]
    assert entries.lexical == retrievers[setup.lexical]
    assert entries.weights == retrievers[setup.weights]
    assert entries.fused == retrievers[setup.fused]
    if entries.approximate is None:
        assert entries.dense == retrievers[setup.dense]
    else:
        assert entries.approximate == retrievers[setup.dense]
        assert entries.dense == retrievers[entries.approximate["base"]]


def test_options_replace_the_values_of_the_entries():
    entries = setup_entries(IndexOptions(max_words=40, dimensions=16, lists=4, seed=3))
    assert entries.chunker["max_words"] == 40 and entries.dense["dimensions"] == 16
    assert (entries.approximate["lists"], entries.approximate["seed"]) == (4, 3)


def test_the_spec_index_ranks_as_the_pipelines_behaviour_functions_do():
    """bm25, lsa, ivf and rrf run as the pipeline runs them, on the same chunks and entries, rank alike."""
    files = [(file.name, file.text) for file in read_markdown_folder(BUNDLED / "documents")]
    index = build_question_index(parse_documents(files), IndexOptions())
    _, retrievers = planned(SPEC_SETUP)
    setup = ASK_SETUPS[SPEC_SETUP]
    texts = [chunk.indexed_text for chunk in index.chunks]
    tie_order = chunk_id_order([chunk.chunk_id for chunk in index.chunks])
    ivf_entry = retrievers[setup.dense]
    lexical = build_retriever(retrievers[setup.lexical], texts, setup.lexical)
    lsa = build_retriever(retrievers[ivf_entry["base"]], texts, ivf_entry["base"])
    ivf = build_ivf_retriever(ivf_entry, lsa, setup.dense)
    path = BUNDLED / "questions.yaml"
    questions = [question.text for question in parse_questions(read_yaml(path), str(path))][:8]
    depth, sources = 100, 20
    lexical_rankings = search(lexical, questions, depth, tie_order)
    dense_rankings = search(ivf, questions, depth, tie_order)
    for question, lexical_ranking, dense_ranking in zip(
        questions, lexical_rankings, dense_rankings, strict=True
    ):
        fused = fuse(retrievers[setup.fused], [lexical_ranking, dense_ranking], sources, tie_order)
        retrieval = retrieve(index, question, RetrievalSettings(sources=sources, depth=depth))
        chosen = [index.chunks.index(retrieved.chunk) for retrieved in retrieval.chosen]
        assert chosen == fused.positions.tolist()
        assert [retrieved.fused_score for retrieved in retrieval.chosen] == fused.scores.tolist()
        lexical_ranks = {int(position): rank for rank, position in enumerate(lexical_ranking.positions, 1)}
        dense_ranks = {int(position): rank for rank, position in enumerate(dense_ranking.positions, 1)}
        assert [retrieved.bm25_rank for retrieved in retrieval.chosen] == [
            lexical_ranks.get(p) for p in chosen
        ]
        assert [retrieved.dense_rank for retrieved in retrieval.chosen] == [
            dense_ranks.get(p) for p in chosen
        ]
    assert np.array_equal(index.ivf.original_positions, ivf.index.lists.original_positions)
