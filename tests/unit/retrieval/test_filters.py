"""Metadata filters: their definition, the prefilter inside every search, and post-filtering."""

from __future__ import annotations

import datetime
import logging

import numpy as np
import pytest

from rag.answering.prompts import build_prompt
from rag.chunking import ChunkerSpec, chunk_corpus
from rag.corpus.documents import parse_markdown
from rag.evaluation.ablations import compare_filtering
from rag.retrieval.bm25 import bm25_scores, build_bm25_index
from rag.retrieval.filters import (
    ChunkFilter,
    ChunkMetadata,
    FilterError,
    allowed_chunks,
    parse_filter,
    postfilter,
)
from rag.retrieval.fusion import reciprocal_rank_fusion
from rag.retrieval.lsa import embed_queries, fit_lsa
from rag.retrieval.retrievers import build_retriever, search
from rag.retrieval.search import chunk_id_order
from rag.retrieval.tfidf import build_tfidf_index, tfidf_scores
from rag.text import analyze
from tests.workdir import FIXTURES

pytestmark = pytest.mark.usefixtures("single_threaded_blas")


# --------------------------------------------------------------------------
# Filters as data
# --------------------------------------------------------------------------


def test_parse_filter_reads_every_key_and_round_trips():
    entry = {
        "access": ["public", "internal"],
        "tags_any": ["planet"],
        "tags_all": ["planet", "inner-system"],
        "doc_ids": ["mars"],
        "as_of": "2026-06-30",
    }
    chunk_filter = parse_filter(entry)
    assert chunk_filter.access == {"public", "internal"}
    assert chunk_filter.as_of == datetime.date(2026, 6, 30)
    assert parse_filter(chunk_filter.to_config()) == chunk_filter
    assert chunk_filter.to_config()["access"] == ["internal", "public"]  # canonical: sorted


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"acess": ["public"]}, "['acess']: unknown filter key"),
        ({"access": []}, "['access']: an empty list would allow nothing"),
        ({"access": "public"}, "['access']: expected a list"),
        ({"as_of": "30/06/2026"}, "['as_of']: '30/06/2026' is not a date"),
        (["public"], "a filter must be a mapping"),
    ],
)
def test_bad_filters_name_the_filter_and_key(entry, message):
    with pytest.raises(FilterError) as raised:
        parse_filter(entry, "config['filters']['mine']")
    assert "config['filters']['mine']" in str(raised.value)
    assert message in str(raised.value)


def random_metadata(seed: int, size: int = 60) -> ChunkMetadata:
    rng = np.random.default_rng(seed)
    tags = ["planet", "moon", "inner", "outer"]
    dates = ["2026-01-05", "2026-06-30", "2026-07-01", "2026-06-30T23:59:00Z", None]
    return ChunkMetadata.from_columns(
        [f"d{rng.integers(6)}" for _ in range(size)],
        [str(rng.choice(["public", "restricted", "internal"])) for _ in range(size)],
        [[tag for tag in tags if rng.random() < 0.4] for _ in range(size)],
        [dates[rng.integers(len(dates))] for _ in range(size)],
    )


@pytest.mark.parametrize("seed", range(4))
def test_allowed_chunks_matches_a_plain_reading_of_every_condition(seed):
    metadata = random_metadata(seed)
    chunk_filter = parse_filter(
        {
            "access": ["public", "internal"],
            "tags_any": ["moon", "outer"],
            "tags_all": ["planet"],
            "as_of": "2026-06-30",
        }
    )
    expected = []
    for access, tags, updated in zip(metadata.access, metadata.tags, metadata.updated, strict=True):
        expected.append(
            access in ("public", "internal")
            and ("moon" in tags or "outer" in tags)
            and "planet" in tags
            and updated is not None
            and updated[:10] <= "2026-06-30"  # ISO dates compare as text
        )
    assert allowed_chunks(chunk_filter, metadata).tolist() == expected


def test_as_of_is_inclusive_and_leaves_undated_documents_out():
    metadata = ChunkMetadata.from_columns(
        ["a", "b", "c", "d"],
        ["public"] * 4,
        [()] * 4,
        ["2026-06-30", "2026-07-01", None, "2026-06-30T18:00:00"],
    )
    assert allowed_chunks(parse_filter({"as_of": "2026-06-30"}), metadata).tolist() == [
        True,
        False,
        False,
        True,
    ]


def test_an_empty_filter_allows_everything_and_doc_ids_select_documents():
    metadata = random_metadata(9)
    assert allowed_chunks(ChunkFilter(), metadata).all()
    mask = allowed_chunks(parse_filter({"doc_ids": ["d1", "d3"]}), metadata)
    assert mask.tolist() == [doc in ("d1", "d3") for doc in metadata.doc_ids]


def test_metadata_columns_must_have_one_entry_per_chunk():
    with pytest.raises(FilterError, match="differ in length"):
        ChunkMetadata.from_columns(["a", "b"], ["public"], [(), ()], [None, None])


# --------------------------------------------------------------------------
# The prefilter inside every retriever kind
# --------------------------------------------------------------------------


def random_corpus(seed: int, n_chunks: int = 150, vocabulary: int = 50) -> list[str]:
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, vocabulary + 1)
    weights /= weights.sum()
    return [
        " ".join(f"w{j}" for j in rng.choice(vocabulary, size=rng.integers(2, 20), p=weights))
        for _ in range(n_chunks)
    ]


def random_queries(seed: int, count: int = 12, vocabulary: int = 50) -> list[str]:
    rng = np.random.default_rng(seed + 100)
    return [" ".join(f"w{j}" for j in rng.integers(0, vocabulary, rng.integers(1, 5))) for _ in range(count)]


def reference(scores: np.ndarray, eligible: np.ndarray, depth: int, tie_order: np.ndarray) -> list[int]:
    """The definition of a prefiltered ranking: a full sort of the eligible chunks."""
    positions = np.flatnonzero(eligible)
    order = np.lexsort((tie_order[positions], -scores[positions]))
    return positions[order][:depth].tolist()


ENTRIES = {
    "bm25": {"kind": "bm25", "k1": 1.5, "b": 0.75, "idf": "lucene", "stem": False},
    "bm25_classic": {"kind": "bm25", "k1": 1.2, "b": 0.75, "idf": "classic", "stem": False},
    "tfidf": {"kind": "tfidf", "normalize": True, "sublinear": True, "stem": False},
    "tfidf_raw": {"kind": "tfidf", "normalize": False, "sublinear": True, "stem": False},
    "lsa": {"kind": "lsa", "dimensions": 8, "min_df": 2, "stem": False},
}


def independent_scores(name: str, texts: list[str], queries: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Full score matrices from the scoring functions, and which chunks each query matches."""
    terms = [analyze(text) for text in texts]
    query_terms = [analyze(query) for query in queries]
    matched = np.array([[bool(set(q) & set(t)) for t in terms] for q in query_terms])
    entry = ENTRIES[name]
    if entry["kind"] == "bm25":
        index = build_bm25_index(terms, k1=entry["k1"], b=entry["b"], idf=entry["idf"])
        return bm25_scores(index, query_terms), matched
    if entry["kind"] == "tfidf":
        index = build_tfidf_index(terms, sublinear=entry["sublinear"])
        return tfidf_scores(index, query_terms, normalize=entry["normalize"]), matched
    model = fit_lsa(terms, entry["dimensions"], entry["min_df"])
    queries_embedded = embed_queries(model, query_terms)
    known = queries_embedded.any(axis=1)
    return queries_embedded @ model.chunk_embeddings.T, np.repeat(known[:, None], len(texts), axis=1)


@pytest.mark.parametrize("name", sorted(ENTRIES))
@pytest.mark.parametrize("seed", range(3))
def test_prefiltered_search_is_the_best_of_the_allowed_chunks(name, seed):
    texts, queries = random_corpus(seed), random_queries(seed)
    rng = np.random.default_rng(seed)
    allowed = rng.random(len(texts)) < 0.3
    tie_order = rng.permutation(len(texts))
    retriever = build_retriever(ENTRIES[name], texts)
    depth = 20
    rankings = search(retriever, queries, depth, tie_order, allowed=allowed)
    scores, matched = independent_scores(name, texts, queries)
    for row, ranking in enumerate(rankings):
        assert allowed[ranking.positions].all()
        assert ranking.positions.tolist() == reference(scores[row], allowed & matched[row], depth, tie_order)
        # Scores are rounded to 9 decimals (the precision contract, rag.retrieval.search.SCORE_DECIMALS).
        np.testing.assert_allclose(ranking.scores, scores[row][ranking.positions], rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_a_filtered_out_chunk_is_never_ranked_even_when_it_is_the_only_match(name):
    texts = ["alpha beta", "gamma delta", "gamma delta epsilon", "zeta eta", "theta iota", "kappa lambda"]
    allowed = np.array([True, False, True, True, True, True])
    retriever = build_retriever({**ENTRIES[name], "dimensions": 2} if name == "lsa" else ENTRIES[name], texts)
    for query in ("gamma delta", "delta"):
        (ranking,) = search(retriever, [query], depth=len(texts), tie_order=None, allowed=allowed)
        assert 1 not in ranking.positions.tolist()
        (unfiltered,) = search(retriever, [query], depth=len(texts), tie_order=None)
        assert 1 in unfiltered.positions.tolist()  # the filter, not the query, keeps it out


def test_fusing_prefiltered_rankings_stays_inside_the_filter():
    texts, queries = random_corpus(7), random_queries(7)
    allowed = np.random.default_rng(7).random(len(texts)) < 0.4
    tie_order = chunk_id_order([f"c{i:03d}" for i in range(len(texts))])
    lists = [
        search(build_retriever(ENTRIES[name], texts), queries, 30, tie_order, allowed=allowed)
        for name in ("bm25", "lsa")
    ]
    for first, second in zip(*lists, strict=True):
        fused = reciprocal_rank_fusion([first, second], 60, 10, tie_order)
        assert allowed[fused.positions].all()


@pytest.mark.parametrize("name", ["bm25", "lsa"])
@pytest.mark.parametrize("bad", [np.ones(5, dtype=bool), np.ones(6, dtype=int)])
def test_a_malformed_mask_is_rejected(name, bad):
    entry = {**ENTRIES[name], "dimensions": 2} if name == "lsa" else ENTRIES[name]
    retriever = build_retriever(entry, ["a b", "b c", "c d", "d e", "e f", "f a"])
    with pytest.raises(ValueError, match="boolean mask over the 6 chunks"):
        search(retriever, ["b"], 3, None, allowed=bad)


# --------------------------------------------------------------------------
# Post-filtering, the ablation
# --------------------------------------------------------------------------


def test_postfilter_drops_forbidden_chunks_after_the_cut():
    assert postfilter(["x1", "a", "x2", "b", "c", "d"], {"a", "b", "c", "d"}, 4) == ["a", "b"]


def test_compare_filtering_on_a_hand_counted_example():
    allowed = {"a1", "a2", "a3", "b1"}
    global_rankings = {
        "q1": ["x1", "a1", "x2", "a2"],  # evidence a2 is pushed out of the top 3 by x1 and x2
        "q2": ["a3", "b1", "a1"],  # nothing forbidden
        "q3": ["x1", "x2", "x3"],  # an unanswerable question: only counts for shortfall
    }
    prefiltered = {"q1": ["a1", "a2", "a3"], "q2": ["a3", "b1", "a1"], "q3": ["a1", "a2", "b1"]}
    relevance = {
        "q1": {"0": {"a2": 1.0}},
        "q2": {"0": {"b1": 1.0}, "1": {"x3": 1.0}},  # piece 1 lies only in a forbidden chunk: out of scope
    }
    row = compare_filtering(global_rankings, prefiltered, allowed, relevance, k=3)
    assert row["questions"] == 3
    assert row["postfilter_short"] == 2 and row["prefilter_short"] == 0
    assert row["postfilter_shortfall_rate"] == pytest.approx(2 / 3)
    assert row["exposed"] == pytest.approx((2 + 0 + 3) / 3)
    assert row["in_scope_questions"] == 1
    assert row["prefilter_recall"] == 1.0 and row["postfilter_recall"] == 0.0
    assert row["recall_lost"] == 1.0
    assert row["prefilter_leaks"] == 0
    prefiltered["q1"] = ["x1", "a1", "a2"]
    assert compare_filtering(global_rankings, prefiltered, allowed, relevance, k=3)["prefilter_leaks"] == 1


# --------------------------------------------------------------------------
# From ranking to prompt to logs: a filtered-out chunk appears nowhere
# --------------------------------------------------------------------------


def tiny_chunks():
    folder = FIXTURES / "tiny" / "documents"
    documents = [parse_markdown(path.read_text(), path.name) for path in sorted(folder.glob("*.md"))]
    return documents, chunk_corpus(documents, ChunkerSpec("sentences", 20))


def test_a_filtered_out_chunk_reaches_neither_the_prompt_nor_the_log(caplog):
    """The ranking and the prompt built from it hold no filtered-out chunk, and nothing the
    library logs on the way names or quotes one. The pipeline's own log files are checked by
    test_pipeline_contracts.py::test_no_log_line_names_or_quotes_a_chunk."""
    documents, chunks = tiny_chunks()
    by_id = {document.doc_id: document for document in documents}
    metadata = ChunkMetadata.from_columns(
        [c.doc_id for c in chunks],
        [by_id[c.doc_id].access for c in chunks],
        [by_id[c.doc_id].tags for c in chunks],
        [by_id[c.doc_id].updated for c in chunks],
    )
    allowed = allowed_chunks(parse_filter({"access": ["public"]}), metadata)
    forbidden = [chunk for chunk, ok in zip(chunks, allowed, strict=True) if not ok]
    assert forbidden and {c.doc_id for c in forbidden} == {"beta"}
    question = "How many moons does Beta have, and how long does Alpha take to orbit?"
    tie_order = chunk_id_order([c.chunk_id for c in chunks])
    with caplog.at_level(logging.DEBUG):
        for name in ("bm25", "tfidf", "lsa"):
            entry = {**ENTRIES[name], "dimensions": 3} if name == "lsa" else ENTRIES[name]
            retriever = build_retriever(entry, [c.indexed_text for c in chunks], name)
            (ranking,) = search(retriever, [question], 5, tie_order, allowed=allowed)
            (unfiltered,) = search(retriever, [question], 5, tie_order)
            assert not allowed[unfiltered.positions].all()  # unfiltered, Beta's chunks would be there
            assert len(ranking.positions) > 0 and allowed[ranking.positions].all()
            prompt = build_prompt(question, [chunks[p] for p in ranking.positions])
            assert "Alpha" in prompt.text  # the prompt has sources, just not Beta's
            for chunk in forbidden:
                assert chunk.chunk_id not in prompt.text
                assert chunk.text not in prompt.text
                assert "42 known moons" not in prompt.text
    # Only what the library logged itself: the test writes nothing to the log.
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for chunk in forbidden:
        assert chunk.chunk_id not in logged and chunk.text not in logged
