"""The from-scratch retrievers and metrics against independent libraries.

The corpus is the sentences of the bundled Markdown documents (whichever
exist when the tests run) plus a few hundred seeded synthetic sentences, so the
checks always have a realistic vocabulary to work on.

The reference libraries are imported inside the tests that use them: scikit-learn
alone takes seconds to import, which every collection would pay otherwise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rag.corpus.documents import parse_markdown
from rag.evaluation.metrics import ndcg_at, recall_at, reciprocal_rank
from rag.retrieval.bm25 import bm25_scores, bm25_search, build_bm25_index
from rag.retrieval.lsa import (
    embed_queries,
    fit_lsa,
    fit_lsa_from_counts,
    lsa_search,
    lsa_term_matrix,
    truncated_svd,
)
from rag.retrieval.search import count_terms, exact_search
from rag.retrieval.tfidf import build_tfidf_index, tfidf_scores, tfidf_search
from rag.text import analyze, split_sentences

DOCUMENTS = Path(__file__).resolve().parents[3] / "resources" / "solar_system" / "documents"
SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "sa",
    "to",
    "vi",
    "zu",
    "pe",
    "ga",
    "shi",
    "ron",
    "del",
    "mar",
    "tis",
]


def synthetic_sentences(count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    words = sorted({"".join(rng.choice(SYLLABLES, size=rng.integers(2, 4))) for _ in range(600)})
    weights = 1.0 / np.arange(1, len(words) + 1) ** 1.05
    weights /= weights.sum()
    sentences = []
    for _ in range(count):
        picked = rng.choice(len(words), size=rng.integers(5, 26), p=weights)
        number = f" {rng.integers(1, 500)}" if rng.random() < 0.2 else ""
        sentences.append(" ".join(words[i] for i in picked).capitalize() + number + ".")
    return sentences


def markdown_sentences() -> list[str]:
    """The sentences of the bundled documents, which the repository tracks.

    A missing or empty folder is an error, not a reason to check on synthetic text alone.
    """
    paths = sorted(DOCUMENTS.glob("*.md"))
    assert paths, f"no Markdown documents in {DOCUMENTS}: the cross-checks need the bundled corpus"
    sentences = []
    for path in paths:
        document = parse_markdown(path.read_text(encoding="utf-8"), path.name)
        for block in document.blocks:
            sentences.extend(block.text[start:end] for start, end in split_sentences(block.text))
    return sentences


pytestmark = [pytest.mark.float_heavy, pytest.mark.usefixtures("single_threaded_blas")]


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    texts = markdown_sentences() + synthetic_sentences(400, seed=11)
    return [text for text in texts if analyze(text)]


@pytest.fixture(scope="module")
def queries(corpus) -> list[str]:
    rng = np.random.default_rng(12)
    picked = [corpus[i] for i in rng.choice(len(corpus), size=40, replace=False)]
    # Fragments of sentences read like questions; add one without known terms.
    fragments = [" ".join(text.split()[: rng.integers(3, 9)]) for text in picked]
    return fragments + ["What is it?", "xyzzy plugh"]


@pytest.fixture(scope="module")
def chunk_terms(corpus) -> list[list[str]]:
    return [analyze(text) for text in corpus]


@pytest.mark.parametrize("sublinear", [True, False])
def test_tfidf_matches_scikit_learn(corpus, queries, chunk_terms, sublinear):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import linear_kernel

    vectorizer = TfidfVectorizer(analyzer=analyze, sublinear_tf=sublinear)
    matrix = vectorizer.fit_transform(corpus)
    expected = linear_kernel(vectorizer.transform(queries), matrix)
    index = build_tfidf_index(chunk_terms, sublinear=sublinear)
    assert index.vocabulary.tolist() == vectorizer.get_feature_names_out().tolist()
    assert np.max(np.abs(index.idf - vectorizer.idf_)) <= 1e-12
    ours = tfidf_scores(index, [analyze(query) for query in queries])
    assert np.max(np.abs(ours - expected)) <= 1e-12
    rankings = tfidf_search(index, [analyze(query) for query in queries], depth=10)
    for ranking, row in zip(rankings, expected, strict=True):
        # Ranking scores are rounded to 9 decimals (the precision contract).
        assert np.allclose(ranking.scores, np.sort(row[row > 0])[::-1][:10], rtol=0, atol=1e-9)


def test_bm25_matches_bm25s_lucene(chunk_terms, queries):
    import bm25s

    k1, b = 1.2, 0.75
    index = build_bm25_index(chunk_terms, k1=k1, b=b)
    reference = bm25s.BM25(method="lucene", k1=k1, b=b, dtype="float64")
    reference.index(chunk_terms, show_progress=False)
    analyzed = [analyze(query) for query in queries]
    ours = bm25_scores(index, analyzed)
    for query, row in zip(analyzed, ours, strict=True):
        # bm25s adds a repeated query token once per repeat and leaves out
        # Robertson's (k1 + 1) numerator, which scales every score alike; our
        # sum runs over distinct terms, so it is given the distinct known terms.
        distinct = list(dict.fromkeys(term for term in query if term in reference.vocab_dict))
        theirs = reference.get_scores(distinct) * (k1 + 1) if distinct else np.zeros(len(chunk_terms))
        assert np.max(np.abs(row - theirs)) <= 1e-6
    # Same top 10 wherever the scores leave no near-ties at the cut.
    rankings = bm25_search(index, analyzed, depth=10)
    compared = 0
    for query, ranking, row in zip(analyzed, rankings, ours, strict=True):
        distinct = list(dict.fromkeys(term for term in query if term in reference.vocab_dict))
        ordered = np.sort(row)[::-1]
        if not distinct or ordered[9] - ordered[10] < 1e-9 or np.min(-np.diff(ordered[:10])) < 1e-9:
            continue
        documents, _ = reference.retrieve([distinct], k=10, show_progress=False)
        assert ranking.positions.tolist() == documents[0].tolist()
        compared += 1
    assert compared >= 10


def test_lsa_matches_truncated_svd(chunk_terms):
    from sklearn.decomposition import TruncatedSVD

    counts = count_terms(chunk_terms)
    _, _, matrix = lsa_term_matrix(counts, min_document_frequency=2)
    dimensions = 24
    model = fit_lsa_from_counts(counts, dimensions)
    reference = TruncatedSVD(n_components=dimensions, algorithm="arpack", random_state=0)
    coordinates = reference.fit_transform(matrix)
    assert np.max(np.abs(model.singular_values - reference.singular_values_)) <= 1e-10
    ours = np.asarray(matrix @ model.components)
    signs = np.sign(np.sum(ours * coordinates, axis=0))
    assert np.max(np.abs(ours - coordinates * signs)) <= 1e-10


def test_arpack_and_dense_svd_agree_including_signs(chunk_terms):
    _, _, matrix = lsa_term_matrix(count_terms(chunk_terms[:300]))
    u_sparse, s_sparse, vt_sparse = truncated_svd(matrix, 12)
    u_dense, s_dense, vt_dense = np.linalg.svd(matrix.toarray(), full_matrices=False)
    assert np.max(np.abs(s_sparse - s_dense[:12])) <= 1e-10
    largest = np.abs(vt_dense[:12]).argmax(axis=1)
    signs = np.sign(vt_dense[np.arange(12), largest])
    assert np.max(np.abs(vt_sparse - vt_dense[:12] * signs[:, None])) <= 1e-9


def test_lsa_at_full_rank_ranks_exactly_as_tfidf_on_its_vocabulary(chunk_terms, queries):
    terms = chunk_terms[:150]
    model = fit_lsa(terms, dimensions=min(150, 10_000))  # clipped to the rank bound
    kept = set(model.vocabulary.tolist())
    restricted = build_tfidf_index([[t for t in chunk if t in kept] or ["<none>"] for chunk in terms])
    analyzed = [[t for t in analyze(query) if t in kept] for query in queries]
    tfidf_rankings = tfidf_search(restricted, analyzed, depth=len(terms))
    lsa_rankings = lsa_search(model, analyzed, depth=len(terms))
    tfidf_full = tfidf_scores(restricted, analyzed)
    exact_orders = 0
    for query, tfidf_ranking, lsa_ranking, row in zip(
        analyzed, tfidf_rankings, lsa_rankings, tfidf_full, strict=True
    ):
        if not query:
            assert len(tfidf_ranking) == len(lsa_ranking) == 0
            continue
        matched = len(tfidf_ranking)
        # Cosines agree up to one factor per query: the query's length after projection.
        lsa_scores = model.chunk_embeddings @ embed_queries(model, [query])[0]
        best = tfidf_ranking.positions[0]
        factor = lsa_scores[best] / row[best]  # unrounded: ranking scores hold 9 decimals only
        assert np.max(np.abs(lsa_scores - factor * row)) <= 1e-10
        # Same order: identical up to permutations inside exact tf-idf ties ...
        prefix = lsa_ranking.positions[:matched]
        assert np.max(np.abs(row[prefix] - tfidf_ranking.scores)) <= 1e-9  # ranking scores: 9 decimals
        # ... and position by position where no two scores are that close.
        if matched == 1 or np.min(-np.diff(tfidf_ranking.scores)) > 1e-9:
            assert prefix.tolist() == tfidf_ranking.positions.tolist()
            exact_orders += 1
    assert exact_orders >= 10


def random_graded_runs(seed: int, n_queries: int = 30, n_chunks: int = 60):
    rng = np.random.default_rng(seed)
    for query in range(n_queries):
        gains = np.where(rng.random(n_chunks) < 0.15, rng.integers(1, 4, n_chunks), 0).astype(float)
        if not gains.any():
            gains[rng.integers(n_chunks)] = 1.0
        scores = rng.random(n_chunks)
        yield f"q{query}", gains, scores


def test_ndcg_matches_scikit_learn_and_ir_measures():
    import ir_measures
    from sklearn.metrics import ndcg_score

    qrels, run, ours = [], [], {}
    for query_id, gains, scores in random_graded_runs(seed=13):
        ids = [f"c{i}" for i in range(len(gains))]
        ranked = [ids[i] for i in np.argsort(-scores)]
        relevance = {
            chunk_id: {chunk_id: gain} for chunk_id, gain in zip(ids, gains, strict=True) if gain > 0
        }
        ours[query_id] = (
            ndcg_at(ranked, relevance, 10),
            reciprocal_rank(ranked, relevance),
            recall_at(ranked, relevance, 10),
        )
        expected = ndcg_score(gains[np.newaxis, :], scores[np.newaxis, :], k=10)
        assert abs(ours[query_id][0] - expected) <= 1e-12
        qrels += [ir_measures.Qrel(query_id, c, int(g)) for c, g in zip(ids, gains, strict=True) if g > 0]
        run += [ir_measures.ScoredDoc(query_id, c, float(s)) for c, s in zip(ids, scores, strict=True)]
    measures = [ir_measures.nDCG @ 10, ir_measures.RR, ir_measures.R @ 10]
    for metric in ir_measures.iter_calc(measures, qrels, run):
        position = measures.index(metric.measure)
        assert abs(ours[metric.query_id][position] - metric.value) <= 1e-12


def test_exact_search_matches_faiss_flat_inner_product():
    import faiss

    rng = np.random.default_rng(14)
    vectors = rng.normal(size=(2000, 32))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = rng.normal(size=(20, 32))
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    index = faiss.IndexFlatIP(32)
    index.add(vectors.astype(np.float32))
    distances, neighbours = index.search(queries.astype(np.float32), 10)
    for ranking, their_scores, their_positions in zip(
        exact_search(vectors, queries, 10), distances, neighbours, strict=True
    ):
        assert np.allclose(ranking.scores, their_scores, rtol=0, atol=1e-5)  # faiss works in float32
        assert set(ranking.positions.tolist()) == set(their_positions.tolist())
