"""Which loop "auto" takes: the compiled one only where it pays for loading it, or is loaded already."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag.retrieval import search, sparse_kernels

PROJECT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("n_chunks", "n_queries", "loaded", "compiled"),
    [
        (search.COMPILED_MIN_CHUNKS - 1, 10**9, True, False),  # small collections: numpy always
        (search.COMPILED_MIN_CHUNKS, 1, True, True),  # loaded already: any query from the floor on
        (100_000, 1, False, False),  # one question in a fresh process (rag ask): numpy
        (1_000_000, 1, False, False),
        (100_000, search.COMPILED_MIN_WORK // 100_000, False, True),  # a batch that pays the load
        (100_000, search.COMPILED_MIN_WORK // 100_000 - 1, False, False),
    ],
)
def test_the_rule(n_chunks, n_queries, loaded, compiled):
    assert search.compiled_pays(n_chunks, n_queries, loaded) is compiled


def test_a_process_asking_one_question_at_a_time_switches_once_it_has_spent_the_load(monkeypatch):
    """Ski rental: single questions over a large collection go to the numpy loop until their work
    adds up to what loading the compiled loop is worth, then to the compiled loop."""
    if not sparse_kernels.AVAILABLE:
        pytest.skip("numba is not installed")
    from rag.retrieval.bm25 import bm25_search, build_bm25_index

    index = build_bm25_index(
        [[f"t{(chunk * 7 + term) % 997}" for term in range(5)] for chunk in range(20000)]
    )
    monkeypatch.setattr(search, "_compiled_loaded", False)
    monkeypatch.setattr(search, "_numpy_work", 0)
    monkeypatch.setattr(search, "COMPILED_MIN_WORK", 3 * 20000)
    expected = bm25_search(index, [["t3", "t12"]], 10, engine="numpy")[0]
    monkeypatch.setattr(search, "_numpy_work", 0)
    for call in range(4):
        found = bm25_search(index, [["t3", "t12"]], 10)[0]
        assert search._compiled_loaded is (call >= 2), call
        assert found.positions.tolist() == expected.positions.tolist()
    assert search.compiled_pays(20000, 1, loaded=False, done=2 * 20000)
    assert not search.compiled_pays(20000, 1, loaded=False, done=20000)


def test_the_rule_is_what_auto_uses(monkeypatch):
    if not sparse_kernels.AVAILABLE:
        pytest.skip("numba is not installed")
    monkeypatch.setattr(search, "_compiled_loaded", False)
    monkeypatch.setattr(search, "_numpy_work", 0)
    assert not search._use_compiled("auto", 100_000, 1)
    assert search._use_compiled("compiled", 100_000, 1)
    assert not search._use_compiled("numpy", 10**7, 10**6)
    monkeypatch.setattr(search, "_compiled_loaded", True)
    assert search._use_compiled("auto", 100_000, 1)


def test_one_question_in_a_fresh_process_does_not_load_numba():
    """What `rag ask` does: a single query over 20,000 chunks answers without importing numba (a third
    of a second that no query of that size saves), with the same ranking as the compiled loop."""
    script = """
import sys
from rag.retrieval.bm25 import bm25_search, build_bm25_index
index = build_bm25_index([[f"t{(chunk * 7 + term) % 997}" for term in range(5)] for chunk in range(20000)])
ranking = bm25_search(index, [["t3", "t12"]], 10)[0]
print("numba" in sys.modules, ranking.positions.tolist())
"""
    environment = os.environ | {"PYTHONPATH": str(PROJECT)}
    output = subprocess.run(
        [sys.executable, "-c", script],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
        cwd=PROJECT,
    ).stdout.split(" ", 1)
    assert output[0] == "False"
    if sparse_kernels.AVAILABLE:
        from rag.retrieval.bm25 import bm25_search, build_bm25_index

        index = build_bm25_index(
            [[f"t{(chunk * 7 + term) % 997}" for term in range(5)] for chunk in range(20000)]
        )
        compiled = bm25_search(index, [["t3", "t12"]], 10, engine="compiled")[0]
        assert output[1].strip() == str(compiled.positions.tolist())
