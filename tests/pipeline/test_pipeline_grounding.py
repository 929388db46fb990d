"""The grounding rules on the tiny corpus: tables, figure, re-runs and configuration errors."""

from __future__ import annotations

import copy
import io

import pandas as pd
import pytest

from rag.grounding.cases import ANSWER_COLUMNS, CASE_COLUMNS, MODELS, SWAP_COLUMNS
from tests.fault_server import word_language_model
from tests.workdir import planned_jobs, read_config, snakemake, write_config

TARGETS = (
    "results/grounding.csv",
    "results/grounding_cases.csv",
    "results/grounding_swap.csv",
    "results/figures/grounding.png",
)

# Alpha's orbit against Beta's day: both are stated in the tiny documents.
GROUNDING = {
    "chunker": "sentences20",
    "retriever": "bm25",
    "k": 3,
    "cases": [
        {
            "name": "alpha-orbit",
            "question": "alpha-orbit",
            "prompt": "It completes one orbit every",
            "true_answer": "88.2 days.",
            "wrong_answer": "10.7 hours.",
            "wrong_from": "beta",
        },
        {
            "name": "beta-moons",
            "question": "beta-moons",
            "prompt": "Beta has",
            "true_answer": "42 known moons.",
            "wrong_answer": "58.6 days.",
            "wrong_from": "alpha",
        },
    ],
    "swap": {
        "question": "alpha-vs-beta",
        "correct": "Alpha turns once in 58.6 days and Beta in 10.7 hours.",
        "values": ["58.6 days", "10.7 hours"],
    },
    "caller": "everyone",  # beta is restricted: the public caller would not read it
}


@pytest.fixture(scope="module")
def built(build_pipeline):
    def prepare(workdir):
        config = read_config(workdir)
        config["grounding"] = copy.deepcopy(GROUNDING)
        write_config(workdir, config)

    build = build_pipeline("grounding", prepare=prepare, targets=TARGETS)
    return build.project, build.workdir


def _with_grounding(workdir, change):
    """Write the config with ``change`` applied to its grounding section; return the original text."""
    original = (workdir / "config.yaml").read_text()
    config = read_config(workdir)
    change(config["grounding"])
    write_config(workdir, config)
    return original


def test_tables_have_their_columns_and_every_case(built) -> None:
    _, workdir = built
    answers = pd.read_csv(workdir / "results/grounding.csv")
    cases = pd.read_csv(workdir / "results/grounding_cases.csv")
    swap = pd.read_csv(workdir / "results/grounding_swap.csv")
    assert list(answers.columns) == ANSWER_COLUMNS
    assert list(cases.columns) == CASE_COLUMNS
    assert list(swap.columns) == SWAP_COLUMNS
    assert list(cases["case"]) == ["alpha-orbit", "beta-moons"]
    assert len(answers) == 2 * len(MODELS) * 2
    assert set(answers["model"]) == set(MODELS)
    assert set(zip(swap["candidate"], swap["model"], strict=True)) == {
        (candidate, model) for candidate in ("correct", "swapped") for model in ("rag_sequence", "rag_token")
    }
    swapped = swap[swap.candidate == "swapped"]["sentence"].iloc[0]
    assert swapped == "Alpha turns once in 10.7 hours and Beta in 58.6 days."
    # Every case reads at most k chunks of the configured ranking.
    assert all(len(ids.split()) <= 3 for ids in cases["chunk_ids"])
    assert (workdir / "results/figures/grounding.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_conditioning_raises_the_true_answer_over_memory(built) -> None:
    _, workdir = built
    answers = pd.read_csv(workdir / "results/grounding.csv")
    cases = pd.read_csv(workdir / "results/grounding_cases.csv").set_index("case")
    true = answers[answers.answer_kind == "true"].set_index(["case", "model"])["log_likelihood"]
    for case in ("alpha-orbit", "beta-moons"):
        assert true[case, "sources"] > true[case, "memory"], case
        assert cases.loc[case, "sources_log10_odds"] > cases.loc[case, "memory_log10_odds"]
    # One retrieved chunk states Alpha's whole sentence, so the models that
    # read one chunk at a time gain too. Beta's "42 known moons." is split:
    # "Beta has 42" ends in a comma in one chunk, the full stop is in another.
    for model in ("rag_sequence", "rag_token"):
        assert true["alpha-orbit", model] > true["alpha-orbit", "memory"], model
        # The retrieved chunks state the true answer and not the wrong one.
        assert cases.loc[case, "true_supported"]
        assert not cases.loc[case, "wrong_supported"]


def test_rerun_and_reordered_cases_schedule_nothing(built) -> None:
    project, workdir = built
    snakefile = project / "Snakefile"
    assert planned_jobs(workdir, snakefile, TARGETS) == {}
    original = _with_grounding(workdir, lambda section: section["cases"].reverse())
    try:
        assert planned_jobs(workdir, snakefile, TARGETS) == {}
    finally:
        (workdir / "config.yaml").write_text(original)
    # A new temperature re-runs the experiment and its figure, not the ranking.
    original = _with_grounding(workdir, lambda section: section.update(temperature=1.0))
    try:
        assert planned_jobs(workdir, snakefile, TARGETS) == {"grounding": 1, "plot_grounding": 1}
    finally:
        (workdir / "config.yaml").write_text(original)


def test_a_wrong_answer_its_document_does_not_state_fails_the_job(built) -> None:
    project, workdir = built
    original = _with_grounding(workdir, lambda s: s["cases"][0].update(wrong_from="alpha"))
    try:
        result = snakemake(workdir, "--cores", "1", TARGETS[0], snakefile=project / "Snakefile", check=False)
    finally:
        (workdir / "config.yaml").write_text(original)
    assert result.returncode != 0
    log = (workdir / "logs/grounding.log").read_text() + result.stdout + result.stderr
    assert "document 'alpha' does not state the wrong answer '10.7 hours.'" in log


def test_a_served_model_adds_its_rows_and_a_rerun_asks_it_nothing(built, server) -> None:
    """Any endpoint echoing log-probabilities runs the cases; the cache answers the re-run."""
    project, workdir = built
    snakefile = project / "Snakefile"
    snakemake(workdir, "--cores", "1", *TARGETS, snakefile=snakefile)  # a test above failed the job
    before = {name: (workdir / name).read_text() for name in TARGETS[:3]}
    server.script[:] = [word_language_model]
    original = (workdir / "config.yaml").read_text()
    config = read_config(workdir)
    config.setdefault("generators", {})["stub"] = {
        "kind": "llm",
        "base_url": server.url + "/v1",
        "model": "stub",
    }
    config["grounding"]["generators"] = ["stub"]
    write_config(workdir, config)
    try:
        snakemake(workdir, "--cores", "1", *TARGETS, snakefile=snakefile)
        asked = len(server.received)
        answers = pd.read_csv(workdir / "results/grounding.csv")
        cases = pd.read_csv(workdir / "results/grounding_cases.csv")
        swap = pd.read_csv(workdir / "results/grounding_swap.csv")
        # The trigram rows come first and are unchanged; the stub's follow, for every case.
        trigram = answers[answers.generator == "trigram"]
        assert trigram.to_csv(index=False) == pd.read_csv(io.StringIO(before[TARGETS[0]])).to_csv(index=False)
        served = answers[answers.generator == "stub"]
        assert list(answers.generator) == ["trigram"] * len(trigram) + ["stub"] * len(served)
        assert set(zip(served["case"], served["model"], strict=True)) == {
            (case, model) for case in ("alpha-orbit", "beta-moons") for model in MODELS
        }
        assert served["log_likelihood"].notna().all() and (served["note"].isna()).all()
        assert list(cases.generator) == ["trigram", "trigram", "stub", "stub"]
        assert set(cases[cases.generator == "stub"]["memory_completion"]) == {"about 2 years"}
        assert set(cases[cases.generator == "stub"]["sources_completion"]) == {"about 2 years"}
        assert set(swap.generator) == {"trigram", "stub"}
        # Per case 2 answers x (memory, sources, one per chunk) and two completions; then the swap.
        chunks = [len(ids.split()) for ids in cases[cases.generator == "stub"]["chunk_ids"]]
        swap_chunks = len(swap["chunk_ids"].iloc[0].split())
        assert asked == sum(2 * (2 + count) + 2 for count in chunks) + 2 * swap_chunks
        assert all(request.path == "/v1/completions" for request in server.received)
        assert len(list((workdir / "resources/llm_cache").glob("*.json"))) == asked

        tables = {name: (workdir / name).read_text() for name in TARGETS[:3]}
        snakemake(workdir, "--cores", "1", "--forcerun", "grounding", *TARGETS[:3], snakefile=snakefile)
        assert len(server.received) == asked
        assert {name: (workdir / name).read_text() for name in TARGETS[:3]} == tables
    finally:
        (workdir / "config.yaml").write_text(original)
    snakemake(workdir, "--cores", "1", *TARGETS, snakefile=snakefile)
    assert {name: (workdir / name).read_text() for name in TARGETS[:3]} == before
