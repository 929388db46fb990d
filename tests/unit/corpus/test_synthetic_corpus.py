"""Synthetic BEIR collections: valid, seeded, and with the statistics they claim."""

from __future__ import annotations

import collections
import hashlib
import json

import numpy as np
import pytest

from rag.corpus.beir_files import read_beir_collection
from rag.corpus.synthetic_corpus import CorpusShape, spell_word, vocabulary, write_collection
from rag.text import STOPWORDS, analyze


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    folder = tmp_path_factory.mktemp("synthetic")
    files = write_collection(folder, CorpusShape(documents=3_000, queries=60, seed=7))
    return folder, files


def _digests(files) -> dict[str, str]:
    return {name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in files.items()}


def test_the_pipeline_parser_reads_it(collection):
    _, files = collection
    documents, questions, judgements = read_beir_collection(files["corpus"], files["queries"], files["qrels"])
    assert len(documents) == 3_000 and len(questions) == 60
    assert len({document.doc_id for document in documents}) == 3_000
    # Every query is judged (answerable), by one to eight documents, exactly one of them with gain 2.
    by_query = collection_gains(judgements)
    assert set(by_query) == {question.question_id for question in questions}
    assert all(1 <= len(gains) <= 8 and sorted(gains).count(2) == 1 for gains in by_query.values())
    assert not list(files["corpus"].parent.rglob("*.partial"))


def collection_gains(judgements) -> dict[str, list[int]]:
    gains = collections.defaultdict(list)
    for judgement in judgements:
        gains[judgement.question_id].append(judgement.gain)
    return gains


def test_same_seed_same_bytes_other_seed_other_bytes(collection, tmp_path):
    _, files = collection
    again = write_collection(tmp_path / "again", CorpusShape(documents=3_000, queries=60, seed=7))
    other = write_collection(tmp_path / "other", CorpusShape(documents=3_000, queries=60, seed=8))
    assert _digests(again) == _digests(files)
    assert _digests(other)["corpus"] != _digests(files)["corpus"]


def test_term_frequencies_follow_zipf_and_lengths_are_log_normal(collection):
    _, files = collection
    counts: collections.Counter[str] = collections.Counter()
    lengths = []
    for line in files["corpus"].read_text().splitlines():
        words = json.loads(line)["text"].split()
        counts.update(words)
        lengths.append(len(words))
    frequencies = np.array(sorted(counts.values(), reverse=True), dtype=float)
    # Slope of log frequency against log rank over ranks 10..1000: about -1 for Zipf's law.
    ranks = np.arange(1, len(frequencies) + 1)
    window = slice(9, 1000)
    slope = np.polyfit(np.log(ranks[window]), np.log(frequencies[window]), 1)[0]
    assert -1.4 < slope < -0.7, slope
    log_lengths = np.log(lengths)
    assert 50 <= np.median(lengths) <= 75 and 0.45 < log_lengths.std() < 0.75
    assert not set(counts) & STOPWORDS


def test_relevant_documents_hold_the_query_terms(collection):
    _, files = collection
    documents, questions, judgements = read_beir_collection(files["corpus"], files["queries"], files["qrels"])
    text = {
        document.doc_id: set(analyze(" ".join(block.text for block in document.blocks)))
        for document in documents
    }
    # A query is its topic terms and one common word, which is not written into documents.
    query_terms = {question.question_id: analyze(question.text)[:-1] for question in questions}
    for judgement in judgements:
        if judgement.gain == 2:
            terms = set(query_terms[judgement.question_id])
            assert len(terms) >= 2 and terms <= text[judgement.doc_id]


def test_words_are_distinct_and_frequent_words_short():
    words = vocabulary(6_000)
    assert len(set(words)) == 6_000
    assert len(words[0]) <= 2 < len(words[100]) <= 4 < len(words[5_500])
    assert spell_word(0) != spell_word(70) and len({spell_word(rank) for rank in range(20_000)}) == 20_000


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="documents must be a positive integer"):
        CorpusShape(documents=0)
    with pytest.raises(ValueError, match="queries .* cannot exceed documents"):
        CorpusShape(documents=10, queries=11)
