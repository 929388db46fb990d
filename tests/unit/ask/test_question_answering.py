"""The index and retrieval behind `rag ask`, and the cache files that hold the index."""

from __future__ import annotations

import numpy as np
import pytest

from rag.answering.extractive import Abstention, ExtractiveAnswer
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
from rag.chunking import ChunkerSpec, chunk_corpus
from rag.corpus.markdown_files import FolderError, read_markdown_folder
from rag.documents.access_metadata import DocumentError
from rag.formats.bundles import BUNDLE_MANIFEST, BundleError, read_bundle, source_digest, write_bundle
from rag.formats.files import read_yaml
from rag.labels import parse_questions
from rag.retrieval.bm25 import bm25_search
from rag.retrieval.lsa import lsa_search
from rag.text import analyze, split_sentences
from tests.workdir import PROJECT

BUNDLED = PROJECT / "resources" / "solar_system"


@pytest.fixture(scope="module")
def bundled_files() -> list[tuple[str, str]]:
    return [(file.name, file.text) for file in read_markdown_folder(BUNDLED / "documents")]


@pytest.fixture(scope="module")
def bundled_index(bundled_files):
    return build_question_index(parse_documents(bundled_files), IndexOptions())


@pytest.fixture(scope="module")
def questions() -> list[str]:
    path = BUNDLED / "questions.yaml"
    return [question.text for question in parse_questions(read_yaml(path), str(path))][:12]


def test_index_follows_the_sample_setup(bundled_index, bundled_files):
    documents = parse_documents(bundled_files)
    expected = chunk_corpus(documents, ChunkerSpec("sentences", 60))
    assert [chunk.chunk_id for chunk in bundled_index.chunks] == [chunk.chunk_id for chunk in expected]
    for chunk in bundled_index.chunks:  # only a single sentence may run over the limit
        assert len(chunk.text.split()) <= 60 or len(split_sentences(chunk.text)) == 1
    assert bundled_index.lsa.dimensions == 32
    assert bundled_index.list_count == 8
    assert bundled_index.ivf.size == len(bundled_index.chunks)
    assert bundled_index.notes == ()


def rrf_by_hand(rankings: list[list[int]], chunk_ids: list[str], depth: int) -> list[tuple[int, float]]:
    """Reciprocal rank fusion written out: sum 1 / (60 + rank), ties by chunk id."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, position in enumerate(ranking, start=1):
            scores[position] = scores.get(position, 0.0) + 1.0 / (60 + rank)
    order = sorted(scores, key=lambda position: (-scores[position], chunk_ids[position]))
    return [(position, scores[position]) for position in order[:depth]]


def test_probing_every_list_fuses_bm25_with_exact_lsa_search(bundled_index, questions):
    """With every list probed the IVF ranking is exact search, computed here by rag.retrieval.lsa instead."""
    index = bundled_index
    chunk_ids = [chunk.chunk_id for chunk in index.chunks]
    position_of = {chunk_id: position for position, chunk_id in enumerate(chunk_ids)}
    for question in questions:
        terms = analyze(question)
        bm25 = bm25_search(index.bm25, [terms], 100, index.tie_order)[0].positions.tolist()
        dense = lsa_search(index.lsa, [terms], 100, index.tie_order)[0].positions.tolist()
        expected = rrf_by_hand([bm25, dense], chunk_ids, 5)

        retrieval = retrieve(index, question, RetrievalSettings(sources=5, probes=index.list_count))
        assert retrieval.share_scanned == pytest.approx(1.0)
        got = [(position_of[item.chunk.chunk_id], item.fused_score) for item in retrieval.chosen]
        assert [position for position, _ in got] == [position for position, _ in expected], question
        # within the precision contract: fused scores are rounded to 9 decimals
        assert [score for _, score in got] == pytest.approx([score for _, score in expected], abs=1e-9)
        for item in retrieval.chosen:
            position = position_of[item.chunk.chunk_id]
            assert item.bm25_rank == (bm25.index(position) + 1 if position in bm25 else None)
            assert item.dense_rank == (dense.index(position) + 1 if position in dense else None)


def test_fewer_probes_scan_less_and_only_rank_scanned_chunks(bundled_index, questions):
    index = bundled_index
    sizes = index.ivf.list_sizes
    for question in questions[:5]:
        one = retrieve(index, question, RetrievalSettings(probes=1))
        three = retrieve(index, question, RetrievalSettings(probes=3))
        assert one.share_scanned * len(index.chunks) in {float(size) for size in sizes}
        assert one.share_scanned < three.share_scanned < 1.0
        assert one.dense_listed <= round(one.share_scanned * len(index.chunks))


def test_answers_quote_a_cited_source_and_pass_the_check(bundled_index, questions):
    answered = 0
    for question in questions:
        report = answer_question(bundled_index, question)
        if isinstance(report.extractive, Abstention):
            assert report.check is None
            continue
        answered += 1
        assert isinstance(report.extractive, ExtractiveAnswer)
        source = report.prompt.sources[report.extractive.source_number]
        assert report.extractive.sentence in " ".join(source.text.split())
        assert report.check.supported
    assert answered >= len(questions) // 2


def test_bundle_round_trip_gives_the_same_answers(bundled_index, questions):
    restored = index_from_bundle(*index_to_bundle(bundled_index))
    assert restored.chunks == bundled_index.chunks
    assert restored.options == bundled_index.options
    for question in questions[:5]:
        original, again = answer_question(bundled_index, question), answer_question(restored, question)
        assert again.retrieval == original.retrieval
        assert again.answer == original.answer


def test_a_memo_reuses_retrievals_and_changes_no_answer(bundled_index, questions):
    """The jobs that measure rag ask answer each question several times over one memo."""
    memo: dict = {}
    for question in questions[:4]:
        for reader in ("reader", "extractive", "reader"):
            plain = answer_question(bundled_index, question, reader=reader)
            memoized = answer_question(bundled_index, question, reader=reader, memo=memo)
            assert memoized == plain
    # Per question one pooled retrieval (the reader's), its pool prompt and one plain retrieval.
    assert len(memo) == 3 * 4


def test_bundle_pieces_that_disagree_are_refused(bundled_index):
    arrays, values, manifest = index_to_bundle(bundled_index)
    with pytest.raises(ValueError, match="disagree on the number of chunks"):
        index_from_bundle(
            arrays, {**values, "chunks": values["chunks"][:-1]}, {**manifest, "chunk_count": 513}
        )
    with pytest.raises(ValueError, match="index format"):
        index_from_bundle(arrays, values, {**manifest, "format": 0})


def test_building_is_deterministic(bundled_files):
    first = build_question_index(parse_documents(bundled_files), IndexOptions())
    second = build_question_index(parse_documents(list(reversed(bundled_files))), IndexOptions())
    assert [chunk.chunk_id for chunk in first.chunks] == [chunk.chunk_id for chunk in second.chunks]
    np.testing.assert_array_equal(first.ivf.original_positions, second.ivf.original_positions)
    np.testing.assert_array_equal(first.lsa.chunk_embeddings, second.lsa.chunk_embeddings)


def test_cache_key_tracks_contents_names_options_and_code():
    files = [("a.md", "# A\n\nAlpha text.\n"), ("b.md", "# B\n\nBeta text.\n")]
    key = cache_key(files, IndexOptions(), "code")
    assert cache_key(list(reversed(files)), IndexOptions(), "code") == key
    assert cache_key([files[0], ("b.md", "# B\n\nBeta text!\n")], IndexOptions(), "code") != key
    assert cache_key([files[0], ("c.md", files[1][1])], IndexOptions(), "code") != key
    assert cache_key(files, IndexOptions(max_words=61), "code") != key
    assert cache_key(files, IndexOptions(dimensions=16), "code") != key
    assert cache_key(files, IndexOptions(lists=4), "code") != key
    assert cache_key(files, IndexOptions(), "other code") != key


@pytest.mark.parametrize("field", ["max_words", "dimensions", "lists"])
@pytest.mark.parametrize("value", [0, -1, 2.5, True])
def test_index_options_must_be_positive_integers(field, value):
    with pytest.raises(ValueError, match=field):
        IndexOptions(**{field: value})


def test_collection_without_shared_terms_falls_back_to_bm25():
    documents = parse_documents(
        [("a.md", "# Alpha\n\nGranite quarry.\n"), ("b.md", "# Beta\n\nCinnamon buns.\n")]
    )
    index = build_question_index(documents, IndexOptions())
    assert index.lsa is None and index.ivf is None
    assert "retrieval uses BM25 alone" in index.notes[0]
    report = answer_question(index, "Where is the granite quarry?")
    assert [item.chunk.doc_id for item in report.retrieval.chosen] == ["a"]
    assert report.retrieval.chosen[0].dense_rank is None
    assert report.answer == "Granite quarry [1]."
    restored = index_from_bundle(*index_to_bundle(index))
    assert restored.lsa is None and restored.notes == index.notes


def test_probes_beyond_the_lists_of_a_small_index_scan_everything():
    text = "# {0}\n\nThe {0} harbour has a {0} lighthouse. The town is near.\n"
    documents = parse_documents([(f"{name}.md", text.format(name)) for name in ("north", "south")])
    index = build_question_index(documents, IndexOptions())
    assert index.list_count == 2
    retrieval = retrieve(index, "Which harbour has a lighthouse?", RetrievalSettings(probes=3))
    assert retrieval.probes == 2 and retrieval.share_scanned == 1.0
    assert "3 probes asked for, but the index has 2 lists" in retrieval.notes[0]


def test_duplicate_document_ids_name_both_files():
    files = [("a.md", "# A\n\nText.\n"), ("b.md", "---\nid: a\n---\n# B\n\nText.\n")]
    with pytest.raises(DocumentError, match=r"^docs/b\.md: document id 'a' is already used by docs/a\.md$"):
        parse_documents(files, location="docs/")


# --------------------------------------------------------------------------
# Files: the documents folder and the bundle
# --------------------------------------------------------------------------


def test_read_markdown_folder_reads_only_markdown_in_name_order(tmp_path):
    (tmp_path / "b.md").write_text("# B\n")
    (tmp_path / "a.md").write_text("# A\n")
    (tmp_path / "notes.txt").write_text("ignored")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.md").write_text("# C\n")
    assert [(file.name, file.text) for file in read_markdown_folder(tmp_path)] == [
        ("a.md", "# A\n"),
        ("b.md", "# B\n"),
    ]


def test_read_markdown_folder_errors_name_the_path(tmp_path):
    with pytest.raises(FolderError, match="no such folder"):
        read_markdown_folder(tmp_path / "missing")
    (tmp_path / "file.md").write_text("# F\n")
    with pytest.raises(FolderError, match="file.md: not a folder"):
        read_markdown_folder(tmp_path / "file.md")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FolderError, match=r"empty: no Markdown documents \(\*\.md\)"):
        read_markdown_folder(tmp_path / "empty")


def test_bundle_round_trip_and_absence(tmp_path):
    arrays = {"numbers": {"values": np.arange(4.0), "names": np.array(["a", "bé"])}}
    values = {"rows": [{"text": "Phobos › Deimos", "start": 3}]}
    write_bundle(tmp_path / "entry", arrays, values, {"format": 1})
    bundle = read_bundle(tmp_path / "entry")
    assert bundle.manifest == {"format": 1, "arrays": ["numbers"], "values": ["rows"]}
    np.testing.assert_array_equal(bundle.arrays["numbers"]["values"], np.arange(4.0))
    assert bundle.arrays["numbers"]["names"].tolist() == ["a", "bé"]
    assert bundle.values == values
    assert read_bundle(tmp_path / "nothing") is None
    # Without its manifest (the last file written) a bundle counts as absent.
    (tmp_path / "entry" / BUNDLE_MANIFEST).unlink()
    assert read_bundle(tmp_path / "entry") is None


def test_bundle_with_a_missing_or_damaged_file_raises(tmp_path):
    write_bundle(tmp_path, {"numbers": {"values": np.arange(3)}}, {"rows": [1]}, {})
    (tmp_path / "rows.json").write_text("[1,")
    with pytest.raises(BundleError, match="damaged bundle"):
        read_bundle(tmp_path)
    (tmp_path / "rows.json").write_text("[1]")
    (tmp_path / "numbers.npz").unlink()
    with pytest.raises(BundleError, match="numbers.npz"):
        read_bundle(tmp_path)


def test_source_digest_changes_with_the_code(tmp_path, monkeypatch):
    module_file = tmp_path / "probe_module.py"
    module_file.write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import probe_module

    before = source_digest([probe_module])
    module_file.write_text("VALUE = 2\n")
    assert source_digest([probe_module]) != before
