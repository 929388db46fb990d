"""The ivf retriever kind and the approximate-search experiments, driven through Snakemake."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rag.retrieval.ivf import IVFIndex
from rag.timing import IVF_TIMING_COLUMNS
from tests.workdir import planned_jobs, read_config, write_config

IVF_RETRIEVERS = {
    "lsa": {"kind": "lsa", "dimensions": 8},
    "lsa_ivf": {"kind": "ivf", "base": "lsa", "lists": 3, "probes": 1},
    "lsa_ivf_all": {"kind": "ivf", "base": "lsa", "lists": 3, "probes": 3},
    "rrf_bm25_ivf": {"kind": "rrf", "components": ["bm25", "lsa_ivf"]},
}
EXPERIMENTS = {
    "ivf_tradeoff": {"chunker": "fixed10", "retriever": "lsa", "lists": 3, "k": 3, "labelled_k": 3},
    "ivf_synthetic": {
        "vectors": 2000,
        "dimensions": 16,
        "centres": 40,
        "lists": 16,
        "probes": [16, 1, 4],
        "queries": 50,
        "k": 5,
        "repeats": 1,
    },
}


def ivf_config(workdir):
    config = read_config(workdir)
    del config["chunkers"]["sentences20"]  # one chunk set is enough here
    config["retrievers"].update(IVF_RETRIEVERS)
    config.update(EXPERIMENTS)
    return config


@pytest.fixture(scope="module")
def built(build_pipeline):
    build = build_pipeline("ivf", prepare=lambda workdir: write_config(workdir, ivf_config(workdir)))
    return build.project, build.workdir


def rankings(workdir, retriever):
    return pd.read_parquet(workdir / f"work/rankings/tiny/fixed10/{retriever}.parquet")


def ids_by_question(frame):
    return {q: rows.sort_values("rank")["chunk_id"].tolist() for q, rows in frame.groupby("question_id")}


def test_probing_every_list_reproduces_the_base_ranking(built):
    _, workdir = built
    exact, approximate = rankings(workdir, "lsa"), rankings(workdir, "lsa_ivf_all")
    assert len(exact) > 0
    assert ids_by_question(approximate) == ids_by_question(exact)
    merged = exact.merge(approximate, on=["question_id", "rank"], suffixes=("_exact", "_ivf"))
    np.testing.assert_allclose(merged["score_ivf"], merged["score_exact"], rtol=0, atol=1e-12)


def test_one_probe_ranks_the_base_ranking_restricted_to_the_probed_list(built):
    _, workdir = built
    with np.load(workdir / "work/indexes/tiny/fixed10/lsa_ivf.npz") as arrays:
        index = IVFIndex.from_arrays(dict(arrays))
    chunk_ids = pd.read_parquet(workdir / "work/chunks/tiny/fixed10.parquet")["chunk_id"].tolist()
    list_of = dict(
        zip(
            np.array(chunk_ids)[index.original_positions],
            np.repeat(np.arange(3), index.list_sizes),
            strict=True,
        )
    )
    assert index.list_count == 3 and index.size == len(chunk_ids)
    exact, approximate = (
        ids_by_question(rankings(workdir, "lsa")),
        ids_by_question(rankings(workdir, "lsa_ivf")),
    )
    assert set(approximate) == set(exact)
    for question, ranked in approximate.items():
        probed = {list_of[chunk_id] for chunk_id in ranked}
        assert len(probed) == 1, question  # one probe: one list
        restricted = [chunk_id for chunk_id in exact[question] if list_of[chunk_id] in probed]
        assert ranked[: len(restricted)] == restricted
        assert len(ranked) == min(10, int(index.list_sizes[probed.pop()]))


def test_fusion_with_the_ivf_ranking_is_reciprocal_rank_fusion(built):
    _, workdir = built
    components = [ids_by_question(rankings(workdir, name)) for name in ("bm25", "lsa_ivf")]
    fused = ids_by_question(rankings(workdir, "rrf_bm25_ivf"))
    for question, ranked in fused.items():
        scores: dict[str, float] = {}
        for component in components:
            for rank, chunk_id in enumerate(component.get(question, []), start=1):
                scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (60 + rank)
        expected = sorted(scores, key=lambda chunk_id: (-scores[chunk_id], chunk_id))[:10]
        assert ranked == expected
    metrics = pd.read_csv(workdir / "results/metrics.csv")
    assert {"lsa_ivf", "lsa_ivf_all", "rrf_bm25_ivf"} <= set(metrics["retriever"])


def test_tradeoff_table_ends_at_exact_search_and_agrees_with_the_evaluation(built):
    _, workdir = built
    table = pd.read_csv(workdir / "results/ivf_tradeoff.csv")
    assert table["probes"].tolist() == [1, 2, 3]
    assert table["mean_share_scanned"].is_monotonic_increasing
    assert table["recall_against_exact"].iloc[-1] == 1.0
    assert table["mean_share_scanned"].iloc[-1] == pytest.approx(1.0)
    metrics = pd.read_csv(workdir / "results/metrics.csv")
    evaluated = metrics[(metrics.retriever == "lsa") & (metrics.metric == "recall") & (metrics.k == 3)]
    assert table["labelled_recall"].iloc[-1] == pytest.approx(evaluated["value"].iloc[0], abs=1e-6)


def test_synthetic_table_and_figure(built):
    _, workdir = built
    table = pd.read_csv(workdir / "results/ivf_synthetic.csv")
    assert table["probes"].tolist() == [1, 4, 16]
    assert table["recall_against_exact"].iloc[-1] == 1.0
    # The times measure the machine: they are in the timings folder, not in the compared table.
    assert not set(IVF_TIMING_COLUMNS) & set(table.columns)
    timings = pd.read_csv(workdir / "results/timings/ivf_synthetic.csv")
    assert timings["probes"].tolist() == [1, 4, 16]
    assert (timings["time_relative_to_exact"] > 0).all()
    for figure in ("figures/ivf_tradeoff.png", "timings/ivf_query_time.png"):
        assert (workdir / "results" / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_changing_probes_reruns_only_that_entry_and_what_reads_it(built):
    project, workdir = built
    assert planned_jobs(workdir, project / "Snakefile") == {}
    original = (workdir / "config.yaml").read_text()
    config = read_config(workdir)
    config["retrievers"]["lsa_ivf"]["probes"] = 2
    try:
        write_config(workdir, config)
        jobs = planned_jobs(workdir, project / "Snakefile")
        assert jobs.get("rank_ivf") == 1
        assert "rank" not in jobs and "ivf_tradeoff" not in jobs and "ivf_synthetic" not in jobs
        assert jobs.get("fuse") == 1
    finally:
        (workdir / "config.yaml").write_text(original)
