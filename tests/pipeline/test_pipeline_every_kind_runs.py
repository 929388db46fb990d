"""Planning means it runs: every combination the table of kinds allows, planned and run on the tiny corpus.

For every retriever kind, an entry of that kind is offered as a funnel's
reranker; the planner either refuses the funnel in one line or the funnel's
rankings are built. Every offline generator kind answers alone. The kinds come
from the table (rag/kinds.py), so a kind added tomorrow is tried the day it is
added: one that needs a parameter this file does not know fails the test until
it is given one below.
"""

from __future__ import annotations

import copy
import shutil

import pytest
import yaml

from rag.kinds import GENERATOR_KINDS, REQUIRED, RETRIEVER_KINDS
from rag.pipeline.config import build_plan
from tests.extras import needs
from tests.pipeline.test_pipeline_answers import ANSWERS as ANSWERS_OF_THE_TINY_CORPUS
from tests.workdir import PROJECT, make_workdir, read_config, snakemake, write_config

pytestmark = needs("dense")

SCHEMA = yaml.safe_load((PROJECT / "workflow/schemas/config.schema.yaml").read_text())

# The parameters an entry of a kind needs on the tiny corpus (its required ones, and sizes that fit it).
SMALL = {
    "lsa": {"dimensions": 4},
    "rrf": {"components": ["bm25", "tfidf"]},
    "score_sum": {"components": ["bm25", "tfidf"]},
    "learned": {"components": ["bm25", "tfidf"]},
    "ivf": {"base": "lsa_base", "lists": 2, "probes": 1},
    "funnel": {"first": "bm25", "rerank": None, "candidates": 5},
}
# Offline generators answer from the prompt alone; llm and judge kinds are driven through a
# stub server by tests/unit/models/test_gate_paths.py (their requests, not a model, are the contract).
# The answer section of test_pipeline_answers.py, its reader settings moved to the reader's entry.
ANSWERS = {key: value for key, value in ANSWERS_OF_THE_TINY_CORPUS.items() if key != "reader"}
READER = {"reader": {"similarity": "none"}}
ANSWER_TABLES = ["results/answers.csv", "results/answers_summary.csv", "results/reader_thresholds.csv"]


def entry_of(kind: str) -> dict:
    needed = [
        name for name, parameter in RETRIEVER_KINDS[kind].parameters.items() if parameter.default is REQUIRED
    ]
    small = SMALL.get(kind, {})
    unknown = [name for name in needed if name not in small]
    assert not unknown, f"kind {kind!r} needs {unknown}: give it a small entry in SMALL"
    return {"kind": kind, **small}


def with_reranker(config: dict, kind: str) -> dict:
    """The tiny config with an entry of ``kind`` and a funnel over BM25 that reranks with it."""
    config = copy.deepcopy(config)
    retrievers = config["retrievers"]
    retrievers.setdefault("tfidf", {"kind": "tfidf"})
    retrievers.setdefault("lsa_base", {"kind": "lsa", "dimensions": 4})
    retrievers[f"by_{kind}"] = entry_of(kind)
    retrievers[f"funnel_{kind}"] = {
        "kind": "funnel",
        "first": "bm25",
        "rerank": f"by_{kind}",
        "candidates": 5,
    }
    return config


def accepted_rerankers(config: dict, root) -> list[str]:
    """The retriever kinds the planner accepts as a funnel's reranker; the others are refused in one line."""
    accepted = []
    for kind in RETRIEVER_KINDS:
        try:
            build_plan(with_reranker(config, kind), SCHEMA, root)
        except Exception as error:  # noqa: BLE001 - a refusal must be one line naming the funnel
            message = str(error)
            assert "\n" not in message and "rerank" in message, (kind, message)
            continue
        accepted.append(kind)
    return accepted


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("every_kind")
    workdir = make_workdir(root / "work")
    config = read_config(workdir)
    kinds = accepted_rerankers(config, workdir)
    for kind in kinds:
        config = with_reranker(config, kind)
    config["answers"] = {**ANSWERS, "generators": []}
    config["generators"] = {
        name: {"kind": name} for name, kind in GENERATOR_KINDS.items() if kind.role == "offline"
    }
    config["answers"]["generators"] = sorted(config["generators"])
    write_config(workdir, config)
    snakemake(workdir, "--cores", "2")
    return workdir, kinds


def test_every_reranker_kind_the_planner_accepts_runs_in_a_funnel(built):
    workdir, kinds = built
    # The check has something to check: plain, fused and rerank-only kinds are accepted.
    assert {"bm25", "rrf", "minilm_cosine"} <= set(kinds)
    for kind in kinds:
        runs = list((workdir / "results" / "runs" / "tiny").glob(f"*/funnel_{kind}.run.gz"))
        assert runs, kind


@pytest.mark.parametrize("generator", sorted(n for n, k in GENERATOR_KINDS.items() if k.role == "offline"))
def test_every_offline_generator_answers_alone(built, generator, tmp_path):
    workdir, _ = built
    alone = tmp_path / "alone"
    shutil.copytree(workdir, alone, symlinks=True)
    config = read_config(alone)
    config["generators"] = {generator: config["generators"][generator]}
    config["answers"]["generators"] = [generator]
    write_config(alone, config)
    snakemake(alone, "--cores", "2", *ANSWER_TABLES)
    answers = (alone / "results" / "answers.csv").read_text()
    assert f",{generator}," in answers
