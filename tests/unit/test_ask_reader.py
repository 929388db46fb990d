"""rag ask's new path: the MiniLM index (stand-in encoder), the reader's pool, judged answers."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from rag.ask.index import (
    IndexOptions,
    RetrievalSettings,
    answer_question,
    build_question_index,
    cache_key,
    index_from_bundle,
    index_to_bundle,
    parse_documents,
    retrieve,
)
from rag.ask.measure import judge_ask_answers
from rag.corpus.markdown_files import read_markdown_folder
from rag.formats.files import read_yaml
from rag.labels import parse_questions
from rag.retrieval.bm25 import bm25_search
from rag.text import analyze
from tests.workdir import PROJECT

BUNDLED = PROJECT / "resources" / "solar_system"


def fake_embed(texts: list[str]) -> np.ndarray:
    """Unit vectors from the words' hashes: similar word sets give similar vectors, no model needed."""
    rows = []
    for text in texts:
        vector = np.zeros(64)
        for word in text.lower().split():
            vector[int(hashlib.sha256(word.strip(".,?").encode()).hexdigest(), 16) % 64] += 1.0
        rows.append(vector / max(np.linalg.norm(vector), 1e-12))
    return np.asarray(rows, dtype=np.float32)


@pytest.fixture(scope="module")
def documents():
    files = [(file.name, file.text) for file in read_markdown_folder(BUNDLED / "documents")]
    return parse_documents(files)


@pytest.fixture(scope="module")
def dense_index(documents):
    return build_question_index(documents, IndexOptions(dense_model="stand-in"), fake_embed)


def test_the_dense_index_holds_one_unit_vector_per_chunk_and_no_lsa(dense_index):
    assert dense_index.lsa is None and dense_index.ivf is None
    assert dense_index.chunk_embeddings.shape == (len(dense_index.chunks), 64)
    assert np.allclose(np.linalg.norm(dense_index.chunk_embeddings, axis=1), 1.0, atol=1e-5)


def test_the_dense_ranking_is_exact_cosine_search(dense_index):
    question = "How long is a year on Venus?"
    retrieval = retrieve(dense_index, question, RetrievalSettings(sources=5), embed=fake_embed)
    scores = dense_index.chunk_embeddings.astype(np.float64) @ fake_embed([question])[0].astype(np.float64)
    best = int(np.argmax(np.round(scores, 6)))
    ranks = {retrieved.chunk.chunk_id: retrieved.dense_rank for retrieved in retrieval.chosen}
    if dense_index.chunks[best].chunk_id in ranks:
        assert ranks[dense_index.chunks[best].chunk_id] == 1
    assert retrieval.dense_listed == 100
    with pytest.raises(ValueError, match="embed"):
        retrieve(dense_index, question)


def test_minilm_is_fused_with_the_stemmed_bm25_of_the_grid(dense_index):
    """The bm25_stem entry of config.yaml: Snowball stems, k1 0.9, b 0.4; the spec's bm25 keeps the idf."""
    assert dense_index.options.lexical == "bm25_stem" and IndexOptions().lexical == "bm25"
    stemmed = dense_index.ranking_bm25
    assert (stemmed.k1, stemmed.b) == (0.9, 0.4) and (dense_index.bm25.k1, dense_index.bm25.b) == (1.5, 0.75)
    vocabulary = set(stemmed.vocabulary.tolist())
    assert "orbit" in vocabulary and "orbits" not in vocabulary and "orbits" in dense_index.idf
    # The BM25 list is the stemmed index's own search of the stemmed question, computed apart.
    question = "Which moons orbiting Mars were discovered?"
    retrieval = retrieve(dense_index, question, RetrievalSettings(sources=100), embed=fake_embed)
    expected = bm25_search(stemmed, [analyze(question, stem=True)], 100, dense_index.tie_order)[0]
    listed = {r.chunk.chunk_id: r.bm25_rank for r in retrieval.chosen if r.bm25_rank is not None}
    first = dense_index.chunks[int(expected.positions[0])].chunk_id
    assert listed[first] == 1 and retrieval.bm25_listed == len(expected)
    restored = index_from_bundle(*index_to_bundle(dense_index))
    assert np.array_equal(restored.ranking_bm25.weights, stemmed.weights)
    arrays, values, manifest = index_to_bundle(dense_index)
    manifest["options"] = {**manifest["options"], "lexical": "bm25"}
    with pytest.raises(ValueError, match="lexical"):
        index_from_bundle(arrays, values, manifest)


def test_the_cache_key_and_the_bundle_keep_the_model(dense_index):
    files = [("a.md", "# A\n\ntext")]
    assert cache_key(files, IndexOptions(), "code") != cache_key(files, IndexOptions(dense_model="m"), "code")
    restored = index_from_bundle(*index_to_bundle(dense_index))
    assert np.array_equal(restored.chunk_embeddings, dense_index.chunk_embeddings)
    arrays, values, manifest = index_to_bundle(dense_index)
    manifest["options"] = {**manifest["options"], "dense_model": None}
    with pytest.raises(ValueError, match="dense model"):
        index_from_bundle(arrays, values, manifest)


def test_the_reader_keeps_the_pool_chunks_with_the_best_sentences(dense_index):
    report = answer_question(
        dense_index, "How long is a year on Venus?", threshold=0.0, reader="reader", embed=fake_embed, pool=30
    )
    assert len(report.prompt.sources) == 5
    assert any("read the 30 best fused chunks" in note for note in report.retrieval.notes)
    # The quoted sentence is the best of the whole pool, and it sits in source [1].
    assert report.reading.best.source_number == 1
    assert report.verdicts is not None and report.verdicts.faithful


def test_judged_ask_answers_count_quotes_of_the_labels(documents, dense_index):
    path = BUNDLED / "heldout_questions.yaml"
    questions = parse_questions(read_yaml(path), path)
    judged = judge_ask_answers(dense_index, questions[:3], documents, "extractive", 0.5, fake_embed)
    assert [judgement.question_id for judgement in judged] == [
        question.question_id for question in questions[:3]
    ]
    for judgement in judged:
        assert judgement.correct <= judgement.answered
        assert (judgement.faithful is None) == (not judgement.answered)


HELDOUT_FILES = ("heldout_questions.yaml", "heldout_questions_round3.yaml", "heldout_questions_round4.yaml")


@pytest.mark.parametrize("name", HELDOUT_FILES)
def test_the_heldout_questions_are_new_and_their_spans_occur_once(documents, name):
    path = BUNDLED / name
    heldout = parse_questions(read_yaml(path), path)
    known = [
        question
        for other in ("questions.yaml", *HELDOUT_FILES)
        if other != name
        for question in parse_questions(read_yaml(BUNDLED / other), BUNDLED / other)
    ]
    assert len(heldout) == 20 and sum(question.answerable for question in heldout) == 17
    assert all(question.answer for question in heldout if question.answerable)
    assert not {q.question_id for q in heldout} & {q.question_id for q in known}
    assert not {q.text for q in heldout} & {q.text for q in known}
    texts = {document.doc_id: document.full_text for document in documents}
    for question in heldout:
        for evidence in question.evidence:
            for span in evidence.spans:
                assert texts[span.document].count(span.text) == 1, (question.question_id, span.text)
