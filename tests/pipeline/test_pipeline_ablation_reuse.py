"""An ablation in a folder of its own reuses what does not depend on its new entries (issue 44).

The tiny corpus with the synthetic IVF benchmark and the diversity ablation is
built once; then a copy of its config with one more chunker and one more
retriever is planned into ``results_ablation``. The dry run may plan only jobs
that make the new entries' files and the merges over the whole grid; the
tables whose settings are those of config.yaml (the synthetic benchmark, the
diversity ablation, the corpus statistics) are read from ``results/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from rag.pipeline.reproduce import job_counts
from tests.workdir import read_config, snakemake, write_config

NEW_CHUNKER, NEW_RETRIEVER = "sections", "tfidf"
# Jobs that merge the whole grid into one table of the results folder: they run for any change of the grid.
MERGES = {
    "evaluate",
    "significance",
    "summary",
    "results_readme",
    "summary_page",
    "trec_runs",
    "chunk_statistics",
    "index_statistics",
    "evidence_cuts",
    "provenance",
    "cohorts",
    "plot_retrieval",
    "all",
}
SHARED = {"ivf_synthetic", "diversity_ablation", "corpus_statistics"}


def _prepare(workdir: Path) -> None:
    config = read_config(workdir)
    config["ivf_synthetic"] = {
        "vectors": 2000,
        "dimensions": 16,
        "centres": 40,
        "lists": 16,
        "probes": [1, 4],
        "queries": 50,
        "k": 5,
        "repeats": 1,
    }
    config["diversity_ablation"] = {
        "chunker": "sentences20",
        "retrievers": ["bm25"],
        "max_per_document": [1],
        "ks": [5],
    }
    write_config(workdir, config)


@pytest.fixture(scope="module")
def built(build_pipeline):
    build = build_pipeline("ablation_reuse", prepare=_prepare)
    return build.project, build.workdir


def _jobs(log: str) -> list[tuple[str, str]]:
    """(rule, its outputs) of every job a dry run printed."""
    found = re.findall(r"^rule (\S+):\n((?:    .*\n)+)", log, flags=re.MULTILINE)
    jobs = []
    for rule, body in found:
        output = re.search(r"^    output: (.*)$", body, flags=re.MULTILINE)
        jobs.append((rule, output.group(1) if output else ""))
    return jobs


def test_an_ablation_folder_plans_only_its_new_entries_and_the_merges(built):
    project, workdir = built
    assert (workdir / "results" / "ivf_synthetic.csv").is_file()
    config = read_config(workdir)
    config["chunkers"][NEW_CHUNKER] = {"kind": "sections"}
    config["retrievers"][NEW_RETRIEVER] = {"kind": "tfidf"}
    (workdir / "ablation.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(
        workdir,
        "-n",
        "--cores",
        "1",
        "--configfile",
        str(workdir / "ablation.yaml"),
        "--config",
        "results=results_ablation",
        snakefile=project / "Snakefile",
    )
    log = result.stdout + result.stderr
    counts = job_counts(log)
    assert not SHARED & counts.keys(), counts
    jobs = _jobs(log)
    assert {rule for rule, _ in jobs} == counts.keys()
    for rule, outputs in jobs:
        if rule in MERGES:
            assert "results/" not in outputs.replace("results_ablation/", ""), (rule, outputs)
            continue
        # Every other job makes a file of the new chunker or the new retriever.
        assert f"/{NEW_CHUNKER}" in outputs or f"/{NEW_RETRIEVER}." in outputs, (rule, outputs)
    assert counts.get("chunk") == 1 and counts.get("label") == 1
    # The new chunker ranked by bm25 and the new retriever on both chunk sets, nothing else.
    assert counts.get("rank") == 1 + 2 + 1
    # The ablation's own summary lists the shared tables' folder: nothing of the default folder is planned.
    assert not any(" results/" in f" {outputs}" for _, outputs in jobs)


def test_the_default_folder_is_still_complete_and_up_to_date(built):
    project, workdir = built
    result = snakemake(workdir, "-n", "--cores", "1", snakefile=project / "Snakefile")
    assert job_counts(result.stdout + result.stderr) == {}
