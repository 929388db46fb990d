"""An extra language-model setup (answers.llm.setups) end to end on the tiny corpus, with a stub endpoint.

The tiny grid is built once to read the pair results/README.md recommends;
that pair is then added as a setup at k = 1 beside a closed-book-only cross
product. The setup's answer file holds one source per answer, the judged
table carries k = 1 for it, and the README's opening says the recommended
pair has measured answers, beside the offline readers on the same questions.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from tests.pipeline.test_pipeline_llm import configure, stub
from tests.workdir import copy_project, make_workdir, read_config, snakemake, write_config

TARGETS = ["results/README.md", "results/llm_answers_judged.csv"]
OPENING = re.compile(r"- \*\*Chunker and retriever\*\*: `([^`]+)` \+ `([^`]+)`")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    server = stub("Alpha orbits in 88.2 days [1].")
    root = tmp_path_factory.mktemp("llm-setups")
    project = copy_project(root / "project")
    workdir = make_workdir(root / "work")
    configure(workdir, {"kind": "llm", "base_url": server.url + "/v1", "model": "stub"})
    config = read_config(workdir)
    config["answers"]["chunkers"] = ["fixed10", "sentences20"]
    config["answers"]["llm"] = {"chunkers": ["sentences20"], "retrievers": ["none"]}
    write_config(workdir, config)
    snakemake(workdir, "--cores", "2", *TARGETS, snakefile=project / "Snakefile")
    before = (workdir / "results/README.md").read_text()
    chunker, retriever = OPENING.search(before).groups()
    config["answers"]["llm"]["setups"] = [{"chunker": chunker, "retriever": retriever, "k": 1}]
    write_config(workdir, config)
    snakemake(workdir, "--cores", "2", *TARGETS, snakefile=project / "Snakefile")
    yield {
        "pair": (chunker, retriever),
        "before": before,
        "after": (workdir / "results/README.md").read_text(),
        "judged": pd.read_csv(workdir / "results/llm_answers_judged.csv"),
        "answers": pd.read_parquet(
            workdir / f"work/llm_answers/tiny/development/model/{chunker}/{retriever}.parquet"
        ),
    }
    server.close()


def test_the_setup_answers_at_its_own_k(built):
    chunker, retriever = built["pair"]
    judged = built["judged"]
    rows = judged[(judged["chunker"] == chunker) & (judged["retriever"] == retriever)]
    assert len(rows) and set(rows["k"]) == {1}
    assert set(judged[judged["retriever"] == "none"]["k"]) == {3}  # the cross product keeps answers.k
    sources = built["answers"]["source_chunk_ids"].fillna("").astype(str)
    assert all(len([item for item in text.split(";") if item]) <= 1 for text in sources)


def test_the_opening_says_the_recommended_pair_has_measured_answers(built):
    chunker, retriever = built["pair"]
    assert f"does not include the recommended `{chunker}` + `{retriever}`" in built["before"]
    after = built["after"]
    assert f"includes the recommended `{chunker}` + `{retriever}` at k = 1: `model`" in after
    judged = built["judged"]
    counted = judged[
        (judged["chunker"] == chunker)
        & (judged["retriever"] == retriever)
        & judged["answerable"].astype(bool)
        & judged["reference_answer"].fillna("").astype(str).str.strip().ne("")
    ]
    # Independently counted from the judged table: correct over answerable questions with a reference.
    assert f"`model` {int(counted['correct'].sum())} of {len(counted)}" in after
    assert f"Offline on the same {len(counted)} questions, judged by the same judge: " in after
