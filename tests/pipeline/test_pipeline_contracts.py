"""The production contracts, driven through Snakemake on the tiny corpus.

One build of a tiny configuration with a funnel, filters and every ablation
serves the read-only tests; the last test copies it, changes the corpus
(a document removed, another re-versioned) and the analyzer, and rebuilds.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rag.corpus.documents import PARSER_VERSION
from rag.text import analyzer_digest, stopwords_digest
from tests.workdir import planned_jobs, read_config, snakemake, write_config

GAMMA = """---
id: gamma
version: 1
updated: 2026-02-10
tags: [moon]
access: public
---

# Gamma

Gamma is the largest moon of Beta and is covered in sulphur volcanoes. It circles Beta every 1.77 days.
"""
GAMMA_QUESTION = {
    "id": "gamma-orbit",
    "question": "How long does Gamma take to circle Beta?",
    "type": "fact",
    "answerable": True,
    "evidence": [{"spans": [{"document": "gamma", "text": "It circles Beta every 1.77 days."}]}],
}
FILTERS = {"public": {"access": ["public"]}, "beta_only": {"doc_ids": ["beta"]}}
# Which documents each filter allows, read off the fixtures' front matter by hand.
ALLOWED_DOCUMENTS = {"public": {"alpha", "gamma"}, "beta_only": {"beta"}}


def contracts_config(config: dict) -> dict:
    config["chunkers"] = {"sentences20": config["chunkers"]["sentences20"]}
    config["retrievers"].update(
        {
            "lsa": {"kind": "lsa", "dimensions": 4},
            "rrf": {"kind": "rrf", "components": ["bm25", "lsa"]},
            "funnel_none": {"kind": "funnel", "first": "bm25", "candidates": 4},
            "funnel_lsa": {"kind": "funnel", "first": "bm25", "rerank": "lsa", "candidates": 5},
            "funnel_rrf_cap1": {
                "kind": "funnel",
                "first": "bm25",
                "rerank": "rrf",
                "candidates": 6,
                "diversity": 1,
            },
        }
    )
    config["filters"] = FILTERS
    config["filter_ablation"] = {
        "chunker": "sentences20",
        "retrievers": ["bm25", "lsa", "rrf", "funnel_lsa"],
        "filters": ["public", "beta_only"],
        "k": 3,
    }
    config["diversity_ablation"] = {
        "chunker": "sentences20",
        "retrievers": ["bm25", "rrf"],
        "max_per_document": [1],
        "ks": [3, 5],
    }
    config["funnel_ablation"] = {"ks": [1, 3]}
    config["cohorts"] = {"k": 3, "min_questions": 1}
    return config


def add_gamma(workdir: Path) -> None:
    (workdir / "documents" / "gamma.md").write_text(GAMMA)
    questions = yaml.safe_load((workdir / "questions.yaml").read_text())
    questions["questions"].append(GAMMA_QUESTION)
    (workdir / "questions.yaml").write_text(yaml.safe_dump(questions, sort_keys=False))


@pytest.fixture(scope="module")
def built(build_pipeline):
    def prepare(workdir: Path) -> None:
        write_config(workdir, contracts_config(read_config(workdir)))
        add_gamma(workdir)

    build = build_pipeline("contracts", prepare=prepare)
    return build.project, build.workdir, build.log


def chunks_of(workdir: Path) -> pd.DataFrame:
    return pd.read_parquet(workdir / "work/chunks/tiny/sentences20.parquet")


def ranked_ids(path: Path) -> dict[str, list[str]]:
    frame = pd.read_parquet(path).sort_values(["question_id", "rank"])
    return {question: rows["chunk_id"].tolist() for question, rows in frame.groupby("question_id")}


def every_chunk_id_downstream(workdir: Path) -> set[str]:
    """Every chunk id in any parquet file under work/ (chunks, qrels, rankings, filtered rankings)."""
    ids: set[str] = set()
    for path in workdir.glob("work/**/*.parquet"):
        frame = pd.read_parquet(path)
        if "chunk_id" in frame.columns:
            ids |= set(frame["chunk_id"])
    return ids


def test_a_second_run_has_nothing_to_do(built):
    project, workdir, _ = built
    assert planned_jobs(workdir, project / "Snakefile") == {}


# --------------------------------------------------------------------------
# Filters
# --------------------------------------------------------------------------


@pytest.mark.parametrize("filter_name", sorted(FILTERS))
def test_prefiltered_rankings_hold_only_allowed_chunks(built, filter_name):
    _, workdir, _ = built
    chunks = chunks_of(workdir)
    allowed = set(chunks.loc[chunks["doc_id"].isin(ALLOWED_DOCUMENTS[filter_name]), "chunk_id"])
    paths = sorted((workdir / "work/filtered/tiny/sentences20" / filter_name).glob("*.parquet"))
    assert [path.stem for path in paths] == ["bm25", "funnel_lsa", "lsa", "rrf"]
    for path in paths:
        rankings = ranked_ids(path)
        assert rankings, path
        assert set().union(*map(set, rankings.values())) <= allowed, path


def test_no_log_line_names_or_quotes_a_chunk(built):
    """Under one filter or the other every chunk is filtered out, so none may appear in any log."""
    _, workdir, build_output = built
    chunks = chunks_of(workdir)
    logs = {path: path.read_text() for path in (workdir / "logs").rglob("*.log")}
    assert any("rank_filtered" in str(path) for path in logs)
    for path, text in [*logs.items(), ("snakemake output", build_output)]:
        for chunk_id, chunk_text in zip(chunks["chunk_id"], chunks["text"], strict=True):
            assert chunk_id not in text, path
            assert chunk_text not in text, path


def test_the_filter_ablation_agrees_with_a_recount_from_the_rankings(built):
    _, workdir, _ = built
    table = pd.read_csv(workdir / "results/filter_ablation.csv")
    assert len(table) == 4 * 2 and (table["prefilter_leaks"] == 0).all()
    chunks = chunks_of(workdir)
    questions = yaml.safe_load((workdir / "questions.yaml").read_text())["questions"]
    for row in table.itertuples():
        allowed = set(chunks.loc[chunks["doc_id"].isin(ALLOWED_DOCUMENTS[row.filter]), "chunk_id"])
        global_rankings = ranked_ids(workdir / f"work/rankings/tiny/sentences20/{row.retriever}.parquet")
        post = [[c for c in global_rankings.get(q["id"], [])[: row.k] if c in allowed] for q in questions]
        assert row.postfilter_short == sum(len(ids) < row.k for ids in post)
        assert row.questions == len(questions)
        assert row.allowed_chunks == len(allowed)
        assert row.prefilter_short <= row.postfilter_short


# --------------------------------------------------------------------------
# Funnel, diversity, cohorts
# --------------------------------------------------------------------------


def test_a_funnel_without_reranking_is_its_first_stage_cut_to_n(built):
    _, workdir, _ = built
    first = ranked_ids(workdir / "work/rankings/tiny/sentences20/bm25.parquet")
    funnel = ranked_ids(workdir / "work/rankings/tiny/sentences20/funnel_none.parquet")
    assert funnel == {question: ids[:4] for question, ids in first.items()}


def test_the_capped_funnel_keeps_one_chunk_per_document(built):
    _, workdir, _ = built
    document_of = dict(zip(*chunks_of(workdir)[["chunk_id", "doc_id"]].to_numpy().T, strict=True))
    for ids in ranked_ids(workdir / "work/rankings/tiny/sentences20/funnel_rrf_cap1.parquet").values():
        documents = [document_of[chunk_id] for chunk_id in ids]
        assert len(documents) == len(set(documents))


def test_funnels_and_diversity_reach_the_result_tables(built):
    _, workdir, _ = built
    metrics = pd.read_csv(workdir / "results/metrics.csv")
    assert {"funnel_none", "funnel_lsa", "funnel_rrf_cap1"} <= set(metrics["retriever"])
    assert "duplicate_source_rate" in set(metrics["metric"])
    capped = metrics[(metrics.retriever == "funnel_rrf_cap1") & (metrics.metric == "duplicate_source_rate")]
    assert (capped["value"] == 0).all()
    funnels = pd.read_csv(workdir / "results/funnel_ablation.csv")
    assert funnels.set_index("retriever").loc["funnel_lsa", "rerank"] == "lsa"
    assert {"recall_at_1", "recall_at_3", "mrr"} <= set(funnels.columns)
    diversity = pd.read_csv(workdir / "results/diversity_ablation.csv")
    assert sorted(diversity["max_per_document"].fillna(0).unique()) == [0, 1]
    assert (diversity.loc[diversity["max_per_document"] == 1, "duplicate_source_rate"] == 0).all()


def test_document_cohorts_match_a_recount_from_per_question_recall(built):
    _, workdir, _ = built
    per_question = pd.read_csv(workdir / "results/per_question.csv")
    by_document = pd.read_csv(workdir / "results/metrics_by_document.csv")
    questions = yaml.safe_load((workdir / "questions.yaml").read_text())["questions"]
    documents = {
        q["id"]: {span["document"] for piece in q["evidence"] for span in piece["spans"]}
        for q in questions
        if q.get("answerable", True)
    }
    assert documents["alpha-vs-beta"] == {"alpha", "beta"}  # counted for both
    for (retriever, document), group in by_document[
        (by_document.metric == "recall") & (by_document.k == 3)
    ].groupby(["retriever", "document"]):
        members = [q for q, docs in documents.items() if document in docs]
        rows = per_question[(per_question.retriever == retriever) & per_question.question_id.isin(members)]
        assert group["value"].iloc[0] == pytest.approx(rows["recall_at_3"].mean(), abs=1e-6)
        assert group["questions"].iloc[0] == len(members)
    weakest = pd.read_csv(workdir / "results/weakest_cohorts.csv")
    assert set(weakest["retriever"]) == set(per_question["retriever"])
    assert (weakest["mean"] >= weakest["weakest_document_value"] - 1e-9).all()
    assert (workdir / "results/figures/cohorts.png").stat().st_size > 0


# --------------------------------------------------------------------------
# Provenance
# --------------------------------------------------------------------------


def test_provenance_table_records_what_made_each_ranking(built):
    _, workdir, _ = built
    table = pd.read_csv(workdir / "results/provenance.csv", dtype=str, keep_default_na=False)
    assert len(table) == 6 + 4 * 2  # every ranking of the grid, every filtered ranking
    assert set(table["parser_version"]) == {PARSER_VERSION}
    assert set(table["document_count"]) == {"3"}
    assert set(table["stopwords"]) == {stopwords_digest()}
    assert set(table["analyzer"]) == {analyzer_digest(False)}
    by_name = table[table["filter"] == ""].set_index("retriever")
    assert by_name.loc["bm25", "embedding_model"] == ""
    assert by_name.loc["lsa", "embedding_model"].startswith("lsa(dimensions=4")
    assert by_name.loc["funnel_lsa", "embedding_model"] == by_name.loc["lsa", "embedding_model"]
    assert (table.loc[table["filter"] != "", "filter_digest"] != "").all()
    digest_columns = [column for column in table.columns if column.endswith("digest")] + ["provenance"]
    assert (table[digest_columns] != "").all().all()  # every ranking kind records everything
    assert table["provenance"].is_unique  # no two rankings share an id
    metrics = pd.read_csv(workdir / "results/metrics.csv", dtype={"provenance": str})
    joined = metrics.merge(
        by_name.reset_index()[["retriever", "provenance"]], on="retriever", suffixes=("", "_table")
    )
    assert (joined["provenance"] == joined["provenance_table"]).all()


# Configuration mistakes are checked by the plan alone: tests/unit/test_config_plan.py.


# --------------------------------------------------------------------------
# Removed documents, new versions and a new analyzer reach every output
# --------------------------------------------------------------------------


def test_corpus_and_analyzer_changes_reach_every_output(built, tmp_path):
    source_project, source_workdir, _ = built
    project = tmp_path / "project"
    shutil.copytree(source_project, project)
    workdir = tmp_path / "work"
    shutil.copytree(source_workdir, workdir)
    before = chunks_of(workdir)
    ids = {doc: set(rows["chunk_id"]) for doc, rows in before.groupby("doc_id")}
    assert ids["gamma"] <= every_chunk_id_downstream(workdir)
    qrels = pd.read_parquet(workdir / "work/qrels/tiny/sentences20.parquet")
    assert set(qrels["chunk_id"]) & ids["gamma"]
    provenance_before = pd.read_csv(workdir / "results/provenance.csv", dtype=str, keep_default_na=False)

    # A removed document whose question is still labelled is a clear error.
    (workdir / "documents" / "gamma.md").unlink()
    failed = snakemake(workdir, "--cores", "2", snakefile=project / "Snakefile", check=False)
    assert failed.returncode != 0
    assert "question 'gamma-orbit'" in failed.stdout + failed.stderr
    assert "unknown document 'gamma'" in failed.stdout + failed.stderr

    questions = yaml.safe_load((workdir / "questions.yaml").read_text())
    questions["questions"] = [q for q in questions["questions"] if q["id"] != "gamma-orbit"]
    (workdir / "questions.yaml").write_text(yaml.safe_dump(questions, sort_keys=False))
    alpha = workdir / "documents" / "alpha.md"
    alpha.write_text(alpha.read_text().replace("version: 1", "version: 2", 1))
    text_module = project / "rag" / "text.py"
    text_module.write_text(
        text_module.read_text().replace("    yourselves s t d ll", "    yourselves planet s t d ll", 1)
    )
    snakemake(workdir, "--cores", "2", snakefile=project / "Snakefile")

    after = chunks_of(workdir)
    downstream = every_chunk_id_downstream(workdir)
    assert set(after["doc_id"]) == {"alpha", "beta"}
    assert not downstream & ids["gamma"]  # removed: no chunk, qrel or ranking row left
    assert not downstream & ids["alpha"]  # re-versioned: the old ids are gone everywhere
    new_alpha = set(after.loc[after["doc_id"] == "alpha", "chunk_id"])
    assert new_alpha and new_alpha <= downstream and not new_alpha & ids["alpha"]
    assert (
        set(after.loc[after["doc_id"] == "beta", "chunk_id"]) == ids["beta"]
    )  # untouched document, same ids
    per_question = pd.read_csv(workdir / "results/per_question.csv")
    assert "gamma-orbit" not in set(per_question["question_id"])
    assert "gamma" not in set(pd.read_csv(workdir / "results/metrics_by_document.csv")["document"])

    provenance_after = pd.read_csv(workdir / "results/provenance.csv", dtype=str, keep_default_na=False)
    assert set(provenance_after["document_count"]) == {"2"}
    for column in ("documents_digest", "analyzer", "stopwords", "provenance"):
        assert not set(provenance_before[column]) & set(provenance_after[column]), column
    assert planned_jobs(workdir, project / "Snakefile") == {}
