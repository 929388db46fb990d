"""Whole-grid tables merged from per-ranking parts equal the tables computed in one go."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rag.evaluation.significance import (
    interval_table,
    interval_table_from_parts,
    significance_table,
    significance_table_from_parts,
)
from rag.evaluation.table_parts import PartStore, file_digest, frame_digest, part_key, reuse_or_compute


def _long(chunker, retriever, values, metric="recall", k=5):
    return pd.DataFrame(
        {
            "corpus": "c",
            "chunker": chunker,
            "retriever": retriever,
            "question_id": [f"q{index:02d}" for index in range(len(values))],
            "metric": metric,
            "k": k,
            "value": values,
        }
    )


def _grid(retrievers, seed=3):
    """Seeded per-question values of every chunker x retriever, two metrics each."""
    generator = np.random.default_rng(seed)
    frames = []
    for chunker in ("fixed", "sentences"):
        for retriever in retrievers:
            frames.append(_long(chunker, retriever, generator.random(24).round(6)))
            frames.append(_long(chunker, retriever, generator.random(24).round(6), metric="mrr", k=0))
    return pd.concat(frames, ignore_index=True)


def test_part_keys_separate_their_parts_and_follow_file_bytes(tmp_path):
    assert part_key("ab", "c") != part_key("a", "bc")
    assert part_key("ab", "c") == part_key("ab", "c")
    path = tmp_path / "ranking.parquet"
    path.write_bytes(b"one")
    before = file_digest(path)
    path.write_bytes(b"two")
    assert file_digest(path) != before


def test_only_missing_pieces_are_computed_and_stored_pieces_come_back_unchanged(tmp_path):
    store = PartStore(tmp_path)
    calls = []

    def compute(missing):
        calls.append(list(missing))
        return {name: pd.DataFrame({"name": [name], "value": [len(name) / 3]}) for name in missing}

    first, computed = reuse_or_compute(store, "kind", {"a": "key-a", "bb": "key-b"}, compute)
    assert computed == ["a", "bb"] and calls == [["a", "bb"]]
    again, computed = reuse_or_compute(store, "kind", {"bb": "key-b", "ccc": "key-c", "a": "key-a"}, compute)
    assert computed == ["ccc"] and calls[-1] == ["ccc"]
    assert list(again) == ["bb", "ccc", "a"]  # the order asked for, not the order stored
    for name in ("a", "bb"):
        pd.testing.assert_frame_equal(again[name], first[name])
    raw, computed = reuse_or_compute(
        store, "bytes", {"x": "key-x"}, lambda missing: {"x": b"\x1f\x8b"}, ".gz"
    )
    assert raw == {"x": b"\x1f\x8b"} and store.load_bytes("bytes", "key-x", ".gz") == b"\x1f\x8b"


def test_frame_digest_follows_values_and_order():
    frame = _long("x", "bm25", [0.5, 0.25, 1.0])
    assert frame_digest(frame) == frame_digest(frame.copy())
    changed = frame.copy()
    changed.loc[1, "value"] = 0.250001
    assert frame_digest(changed) != frame_digest(frame)
    assert frame_digest(frame.iloc[::-1]) != frame_digest(frame)


def test_merged_intervals_and_tests_equal_the_whole_grid_and_adding_a_retriever_computes_only_its_own(
    tmp_path,
):
    store = PartStore(tmp_path)
    grid = _grid(["bm25", "lsa", "tfidf"])
    intervals, line = interval_table_from_parts(grid, store, "code")
    pd.testing.assert_frame_equal(intervals, interval_table(grid))
    assert line == "intervals: 0 parts reused, 6 computed"
    table, line = significance_table_from_parts(grid, "bm25", store, "code")
    pd.testing.assert_frame_equal(table, significance_table(grid, "bm25"))
    assert line == "comparisons: 0 parts reused, 4 computed"

    # A new retriever: its own two runs resampled and compared, every other part reused.
    grown = pd.concat([grid, _grid(["minilm"], seed=9)], ignore_index=True)
    grown_intervals, line = interval_table_from_parts(grown, store, "code")
    assert line == "intervals: 6 parts reused, 2 computed"
    pd.testing.assert_frame_equal(grown_intervals, interval_table(grown))
    grown_table, line = significance_table_from_parts(grown, "bm25", store, "code")
    assert line == "comparisons: 4 parts reused, 2 computed"
    pd.testing.assert_frame_equal(grown_table, significance_table(grown, "bm25"))

    # A changed baseline value invalidates every comparison on its chunker, nothing else.
    edited = grown.copy()
    row = edited.index[(edited.chunker == "fixed") & (edited.retriever == "bm25")][0]
    edited.loc[row, "value"] = 1 - edited.loc[row, "value"]
    edited_table, line = significance_table_from_parts(edited, "bm25", store, "code")
    assert line == "comparisons: 3 parts reused, 3 computed"
    pd.testing.assert_frame_equal(edited_table, significance_table(edited, "bm25"))
    # Another code digest reuses nothing.
    _, line = interval_table_from_parts(grid, store, "other code")
    assert line == "intervals: 0 parts reused, 6 computed"
