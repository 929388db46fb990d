"""What the thin scripts call: dispatch by the table of kinds, and the logic moved out of the scripts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rag.answering.routing import Route, accuracy_row, route_and_rank, route_questions, within_document
from rag.answering.summaries import LeadSummary
from rag.evaluation.ablations import FilterLeak, filter_ablation_row
from rag.grounding.cases import configured_cases, document_texts, ranked_rows
from rag.kinds import CHUNKER_KINDS, RETRIEVER_KINDS, Kind, behaviour, kinds_with, resolve
from rag.retrieval.filters import allowed_by_config, describe_filtered
from rag.retrieval.funnel import (
    configured_reranker,
    describe_funnel,
    funnel_ranking,
    funnel_rankings,
    fused_reranker,
    retriever_reranker,
)
from rag.retrieval.fusion import fuse, reciprocal_rank_fusion, score_sum_fusion
from rag.retrieval.retrievers import (
    DENSE_KINDS,
    PRETRAINED_KINDS,
    SPARSE_AND_DENSE_KINDS,
    build_retriever,
    build_with_progress,
    describe_rankings,
    search,
    search_with_progress,
)
from rag.retrieval.search import Ranking, chunk_id_order

BM25 = {"kind": "bm25", "k1": 1.5, "b": 0.75, "idf": "lucene", "stem": False}
LSA = {"kind": "lsa", "dimensions": 3, "min_df": 1, "stem": False}
TEXTS = [
    "red apples and green apples",
    "green pears are sweet",
    "apples grow on trees in the orchard",
    "pears and apples in a basket",
    "the orchard has red trees",
    "sweet red berries",
]


pytestmark = pytest.mark.usefixtures("single_threaded_blas")


BEHAVIOUR_FIELDS = ("build", "index", "search", "embed", "fuse", "rerank", "chunk")


def test_every_behaviour_the_table_names_resolves():
    for kind in (*CHUNKER_KINDS.values(), *RETRIEVER_KINDS.values()):
        for field in BEHAVIOUR_FIELDS:
            path = getattr(kind, field)
            if path is not None and not (path.startswith("rag.retrieval.dense") and kind.name != "embedder"):
                assert callable(resolve(path)), (kind.name, field, path)
    field_names = {f.name for f in dataclasses.fields(Kind)}
    assert set(BEHAVIOUR_FIELDS) <= field_names


def test_a_kind_without_a_behaviour_says_which_kinds_have_it():
    with pytest.raises(
        ValueError, match=r"a 'bm25' entry has no fuse; kinds with one: \['rrf', 'score_sum'\]"
    ):
        behaviour("bm25", "fuse")
    with pytest.raises(ValueError, match="unknown kind 'nope'"):
        behaviour("nope", "search")


def test_the_retriever_tuples_come_from_the_table():
    assert kinds_with(rule="fuse") == kinds_with("fused") == ("rrf", "score_sum")
    assert SPARSE_AND_DENSE_KINDS == ("bm25", "tfidf", "lsa", "embedder")
    assert DENSE_KINDS == ("lsa", "embedder") and PRETRAINED_KINDS == ("embedder",)
    # Every role the pipeline schedules is present; a new kind may add a role
    # the Kind docstring describes (a rerank-only kind) without editing this test.
    roles = {kind.role for kind in RETRIEVER_KINDS.values()}
    assert {"fitted", "pretrained", "fused", "approximate", "learned", "funnel"} <= roles
    assert roles <= {"fitted", "pretrained", "fused", "approximate", "learned", "funnel", "rerank"}


def test_fuse_dispatches_by_kind():
    lists = [
        Ranking(np.array([0, 1, 2]), np.array([3.0, 2, 1])),
        Ranking(np.array([2, 0]), np.array([5.0, 4])),
    ]
    rrf = fuse({"kind": "rrf", "constant": 10}, lists, None, None)
    assert rrf.positions.tolist() == reciprocal_rank_fusion(lists, 10).positions.tolist() == [0, 2, 1]
    summed = fuse({"kind": "score_sum"}, lists, None, None)
    assert summed.positions.tolist() == score_sum_fusion(lists).positions.tolist() == [0, 2, 1]
    with pytest.raises(ValueError, match="a 'bm25' entry has no fuse"):
        fuse({"kind": "bm25"}, lists, None, None)


def _index(entry):
    retriever = build_retriever(entry, TEXTS)
    return retriever, retriever.index.to_arrays()


def test_configured_reranker_matches_building_it_by_hand():
    tie_order = chunk_id_order([f"c{i}" for i in range(len(TEXTS))])
    bm25, bm25_arrays = _index(BM25)
    lsa, lsa_arrays = _index(LSA)
    entries = {
        "bm25": BM25,
        "lsa": LSA,
        "rrf": {"kind": "rrf", "components": ["bm25", "lsa"], "constant": 60},
    }
    indexes = {"bm25": bm25_arrays, "lsa": lsa_arrays}
    first = Ranking(np.arange(len(TEXTS)), np.arange(len(TEXTS), 0, -1).astype(float))
    by_hand = {
        "lsa": retriever_reranker(lsa, len(TEXTS), tie_order),
        "rrf": fused_reranker(
            [retriever_reranker(bm25, len(TEXTS), tie_order), retriever_reranker(lsa, len(TEXTS), tie_order)],
            60,
            tie_order,
        ),
    }
    for name, expected in by_hand.items():
        reranker, record = configured_reranker({"rerank": name}, entries, indexes, len(TEXTS), tie_order)
        for query in ("red apples", "sweet pears orchard"):
            got = funnel_ranking(first, query, reranker, 5, 5, tie_order)
            want = funnel_ranking(first, query, expected, 5, 5, tie_order)
            assert got.positions.tolist() == want.positions.tolist()
        assert record["retriever_digest"]
        assert ("components" in record) == (name == "rrf")
    assert configured_reranker({"rerank": None}, entries, indexes, len(TEXTS)) == (None, None)


def test_funnel_rankings_drop_disallowed_candidates_before_reranking():
    first = {"q1": Ranking(np.array([4, 1, 3, 0]), np.array([4.0, 3, 2, 1]))}
    entry = {"candidates": 3, "diversity": None}
    allowed = np.array([True, True, False, False, True, True])
    rankings, removed = funnel_rankings(first, [("q1", "x")], None, entry, 10, None, list("aabbcc"), allowed)
    assert rankings[0].positions.tolist() == [4, 1, 0] and removed == 1
    rankings, removed = funnel_rankings(first, [("q1", "x")], None, entry, 10, None, list("aabbcc"))
    assert rankings[0].positions.tolist() == [4, 1, 3] and removed == 0


def test_searching_in_slices_with_progress_ranks_as_one_search(monkeypatch):
    monkeypatch.setattr("rag.retrieval.retrievers.SEARCH_SLICE", 2)
    tie_order = chunk_id_order([f"c{i}" for i in range(len(TEXTS))])
    lines: list[str] = []
    retriever = build_with_progress(BM25, TEXTS, "bm25 on t/s", lines.append)
    assert len(lines) == 1 and lines[0].startswith("indexed chunks of bm25 on t/s: 6/6 (100 %), ")
    queries = ["red apples", "zebra", "sweet pears", "orchard trees", "green"]
    sliced = search_with_progress(retriever, queries, 3, tie_order, "bm25 on t/s", lines.append)
    whole = search(build_retriever(BM25, TEXTS), queries, 3, tie_order)
    assert [r.positions.tolist() for r in sliced] == [r.positions.tolist() for r in whole]
    assert [r.scores.tolist() for r in sliced] == [r.scores.tolist() for r in whole]
    assert len(lines) == 1  # five queries are below the progress threshold
    line = describe_rankings("bm25 on t/s", len(TEXTS), ["q1", "q2", "q3", "q4", "q5"], sliced)
    assert line == "bm25 on t/s: 6 chunks, 5 questions, 1 with an empty ranking ['q2']"


def test_the_filtered_and_funnel_log_lines_hold_counts_and_settings_only():
    rankings = [Ranking(np.array([0, 2]), np.array([2.0, 1])), Ranking.empty()]
    allowed = np.array([True, False, True])
    assert describe_filtered("bm25 on t/s", "public", allowed, rankings) == (
        "bm25 on t/s, filter 'public': 2 of 3 chunks allowed; 2 questions, 1 with an empty ranking"
    )
    entry = {"first": "bm25", "rerank": None, "candidates": 30, "diversity": 2}
    assert describe_funnel("funnel_x", entry, rankings) == (
        "funnel funnel_x: first bm25, rerank None, 30 candidates, cap 2; 2 questions, mean list length 1.0"
    )
    assert describe_funnel("funnel_x", entry, []).endswith("0 questions, mean list length 0.0")


COLUMNS = {
    "doc_id": ["a", "a", "b"],
    "access": ["public", "public", "restricted"],
    "tags": [["x"], [], ["y"]],
    "updated": ["2026-01-01", None, "2026-05-01"],
}


def test_the_filter_ablation_row_refuses_a_leak():
    allowed = allowed_by_config(COLUMNS, {"access": ["public"]}, "public")
    assert allowed.tolist() == [True, True, False]
    names = {"corpus": "c", "chunker": "s", "retriever": "r", "filter": "public", "k": 2}
    rankings = {"q": ["c2", "c0", "c1"]}
    row = filter_ablation_row(names, allowed, ["c0", "c1", "c2"], rankings, {"q": ["c0", "c1"]}, {}, 2)
    assert list(row)[:7] == ["corpus", "chunker", "retriever", "filter", "k", "chunks", "allowed_chunks"]
    assert (row["chunks"], row["allowed_chunks"], row["prefilter_leaks"]) == (3, 2, 0)
    with pytest.raises(FilterLeak, match="c/r/public: the prefiltered ranking holds disallowed chunks"):
        filter_ablation_row(names, allowed, ["c0", "c1", "c2"], rankings, {"q": ["c2", "c0"]}, {}, 2)


def test_document_texts_join_blocks_as_the_parser_does():
    texts = document_texts(["b", "a", "b"], ["first", "only", "second"])
    assert texts == {"a": "only", "b": "first\n\nsecond"}
    assert ranked_rows(["q", "p", "q"], [2, 1, 1], ["c2", "c9", "c1"], [0.5, 0.9, 0.7]) == {
        "q": [(2, "c2", 0.5), (1, "c1", 0.7)],
        "p": [(1, "c9", 0.9)],
    }


def test_a_case_whose_wrong_answer_comes_from_no_document_names_the_key():
    case = {
        "name": "n",
        "question": "q",
        "prompt": "Alpha has",
        "true_answer": "two moons.",
        "wrong_answer": "three moons.",
        "wrong_from": "gamma",
    }
    settings = {"corpus": "tiny", "cases": [case]}
    with pytest.raises(
        ValueError, match=r"^config\['grounding'\]\['cases'\]\['n'\]\['wrong_from'\]: no document"
    ):
        configured_cases(settings, {"alpha": "Alpha has two moons."})
    (checked,) = configured_cases(settings, {"gamma": "Gamma has three moons."})
    assert checked.wrong_from == "gamma"


def test_route_and_rank_restricts_the_collection_ranking_and_counts_accuracy():
    summaries = [
        LeadSummary("fruit", "Fruit", "apples and pears", 1),
        LeadSummary("trees", "Trees", "the orchard and its trees", 1),
    ]
    chunk_documents = ["fruit", "fruit", "trees", "fruit", "trees", "fruit"]
    tie_order = chunk_id_order([f"c{i}" for i in range(len(TEXTS))])
    retriever = build_retriever(BM25, TEXTS)
    questions = ["red apples", "orchard trees"]
    routes, routed = route_and_rank(questions, summaries, BM25, retriever, chunk_documents, 2, tie_order)
    assert [route.document for route in routes] == ["fruit", "trees"]
    assert routes == route_questions(questions, summaries, BM25)
    for route, ranking in zip(routes, routed, strict=True):
        assert len(ranking) <= 2 and {chunk_documents[p] for p in ranking.positions} <= {route.document}
    full = within_document(
        Ranking(np.array([2, 0, 4]), np.array([3.0, 2, 1])), chunk_documents, "trees", 5
    ).positions.tolist()
    assert full == [2, 4]
    row = accuracy_row(routes, [{"fruit"}, {"fruit"}], corpus="c", chunker="s", retriever="r_routed")
    assert row == {
        "corpus": "c",
        "chunker": "s",
        "retriever": "r_routed",
        "metric": "routing_accuracy",
        "k": None,
        "value": 0.5,
        "questions": 2,
    }
    nothing = accuracy_row([Route("fruit", 1.0, None, 0.0)], [set()], corpus="c")
    assert nothing["questions"] == 0 and np.isnan(nothing["value"])
