"""The comparison outputs on the tiny fixture: what a new retriever adds, TREC runs read by
ir-measures, and the HTML report opened in headless Chromium."""

from __future__ import annotations

import html
import json
import re
import subprocess

import pandas as pd
import pytest
import yaml

from tests.extras import require_system_package
from tests.trec_check import assert_runs_reproduce_metrics
from tests.workdir import FIXTURES, make_workdir, read_config, snakemake, write_config

pytestmark = pytest.mark.pipeline

KS = [1, 3, 5, 10]


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    """The tiny fixture built with bm25 alone, then again after two retrievers are added to config.yaml."""
    workdir = make_workdir(tmp_path_factory.mktemp("comparisons"))
    config = read_config(workdir)
    config["evaluation"]["ks"] = KS
    write_config(workdir, config)
    snakemake(workdir, "--cores", "2")
    before = {
        "figure": (workdir / "results/figures/recall_at_k.png").read_bytes(),
        "summary": pd.read_csv(workdir / "results/summary.csv"),
        "significance": pd.read_csv(workdir / "results/significance.csv"),
    }
    config["retrievers"]["tfidf"] = {"kind": "tfidf"}
    config["retrievers"]["learned_bm25_tfidf"] = {
        "kind": "learned",
        "components": ["bm25", "tfidf"],
        "fusion": "zscore",
        "folds": 2,
    }
    write_config(workdir, config)
    snakemake(workdir, "--cores", "2")
    return workdir, before


def test_a_new_retriever_reaches_every_comparison_output(grown):
    workdir, before = grown
    assert set(before["summary"].retriever) == {"bm25"}
    assert before["significance"].empty  # nothing to compare bm25 with yet
    summary = pd.read_csv(workdir / "results/summary.csv")
    assert set(summary.retriever) == {"bm25", "tfidf", "learned_bm25_tfidf"}
    assert len(summary) == 3 * 2  # three retrievers on the two chunkers
    significance = pd.read_csv(workdir / "results/significance.csv")
    assert set(significance.retriever) == {"tfidf", "learned_bm25_tfidf"}
    assert set(significance.baseline) == {"bm25"}
    # recall and nDCG at four ks, MRR, prompt words at four ks; two chunkers.
    assert len(significance) == 2 * 2 * (4 + 4 + 1 + 4)
    assert (significance.p_randomization_holm >= significance.p_randomization).all()
    assert (workdir / "results/figures/recall_at_k.png").read_bytes() != before["figure"]
    readme = (workdir / "results/README.md").read_text()
    assert "learned_bm25_tfidf" in readme and "## tiny" in readme
    weights = pd.read_csv(workdir / "results/learned_fusion.csv")
    # Four labelled questions are fewer than a choice needs: plain RRF, equal weights, every
    # question in the one fold, beside each component's own score on the same questions.
    assert set(weights.choice) == {"plain rrf"} and set(weights.component) == {"bm25", "tfidf"}
    assert set(weights.weight) == {0.5} and set(weights.fold) == {0}
    questions = yaml.safe_load((workdir / "questions.yaml").read_text())["questions"]
    assert set(weights.held_out_questions) == {len(questions)}
    assert set(weights.held_out_labelled) == {sum(q.get("answerable", True) for q in questions)}
    assert weights.component_held_out_objective.notna().all() and weights.held_out_objective.notna().all()


def test_the_grown_grid_computes_only_the_new_retrievers_pieces(grown):
    """bm25's rankings on the two chunkers were scored, resampled and converted by the first build;
    the second reuses those parts and computes only the four new rankings' (rag.evaluation.table_parts)."""
    workdir, _ = grown
    logs = {
        name: (workdir / f"logs/{name}.log").read_text() for name in ("evaluate", "significance", "trec_runs")
    }
    assert "evaluated rankings: 2 parts reused, 4 computed" in logs["evaluate"]
    assert "intervals: 2 parts reused, 4 computed" in logs["significance"]
    assert "comparisons: 0 parts reused, 4 computed" in logs["significance"]
    assert "TREC runs: 2 parts reused, 4 computed" in logs["trec_runs"]


def test_trec_runs_reproduce_the_metrics_with_ir_measures(grown, tmp_path):
    workdir, _ = grown
    metrics = pd.read_csv(workdir / "results/metrics.csv")
    questions = yaml.safe_load((workdir / "questions.yaml").read_text())["questions"]
    answerable = {q["id"]: len(q["evidence"]) for q in questions if q["answerable"]}
    runs = sorted((workdir / "results/runs").glob("*/*/*.run.gz"))
    assert len(runs) == 6
    for path in runs:
        assert path.parts[-3] == "tiny"
        assert_runs_reproduce_metrics(path, metrics, answerable, KS)


def test_trec_runs_are_byte_stable(grown):
    workdir, _ = grown
    path = workdir / "results/runs/tiny/fixed10/bm25.run.gz"
    first = path.read_bytes()
    path.unlink()
    snakemake(workdir, "--cores", "1", str(path.relative_to(workdir)))
    assert path.read_bytes() == first


def test_report_renders_in_headless_chromium(grown, tmp_path):
    require_system_package("chromium")
    workdir, _ = grown
    report = workdir / "results/report.html"
    snakemake(workdir, "--report", str(report), "--report-metadata", "results/report_metadata.yaml")
    page = report.read_text()
    # The probe opens every category and figure, then records what it saw in the page.
    probed = tmp_path / "probed.html"
    probed.write_text(page + (FIXTURES / "report" / "probe.html").read_text())
    command = [
        "chromium",
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=60000",
        "--dump-dom",
        probed.as_uri(),
    ]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True).stdout
    match = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert match, "the report's page did not render"
    seen = json.loads(html.unescape(match.group(1)))
    assert seen["error"] is None
    # It opens on the rendered results/README.md, not on the rule graph.
    assert seen["front"] == "Results"
    assert seen["rule_graph_first"] is False
    assert seen["categories"] == ["1. Retrieval", "2. Comparisons"]
    for name in (
        "results/summary.csv",
        "results/significance.csv",
        "results/metrics_ci.csv",
        "results/learned_fusion.csv",
        "results/figures/recall_at_k.png",
    ):
        assert name in seen["results"]
    figures = {figure["name"]: figure["loaded"] for figure in seen["figures"]}
    assert "results/figures/recall_at_k.png" in figures
    assert all(figures.values()), figures
    # The front page as a screenshot: it must be a real image, not an empty file.
    screenshot = tmp_path / "front.png"
    shot = [*command[:-2], "--window-size=1400,900", f"--screenshot={screenshot}", report.as_uri()]
    subprocess.run(shot, capture_output=True, timeout=300, check=True)
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 10_000
