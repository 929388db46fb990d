"""Arrow columns built from buffers equal pyarrow's own conversion, and a ranking job never loads pandas."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from rag.formats.arrow_columns import numeric_column, string_column
from rag.retrieval.ranking_files import rankings_to_table
from rag.retrieval.search import Ranking

PROJECT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    "values", [[], ["a"], ["chunk-1", "", "Ünïcode ☃", "q" * 1000], [str(index) for index in range(5000)]]
)
def test_a_string_column_equals_pyarrows_conversion(values):
    column = string_column(values)
    column.validate(full=True)
    assert column.equals(pa.array(values, type=pa.string()))


@pytest.mark.parametrize(("dtype", "arrow_type"), [(np.int64, pa.int64()), (np.float64, pa.float64())])
def test_a_numeric_column_equals_pyarrows_conversion(dtype, arrow_type):
    values = [3, -1, 0, 2**40] if dtype is np.int64 else [0.5, -0.0, 1e300, 1 / 3]
    column = numeric_column(values, dtype)
    column.validate(full=True)
    assert column.type == arrow_type and column.equals(pa.array(values, type=arrow_type))
    assert numeric_column(np.array([]), dtype).equals(pa.array([], type=arrow_type))


def test_a_column_refuses_more_than_one_dimension():
    with pytest.raises(ValueError, match="one dimension"):
        numeric_column(np.zeros((2, 2)), np.float64)


def test_rankings_table_equals_the_table_built_from_lists():
    chunk_ids = ["c0", "c1", "cé2"]
    rankings = [
        Ranking(np.array([2, 0]), np.array([0.5, 0.25])),
        Ranking.empty(),
        Ranking(np.array([1]), np.array([1.0])),
    ]
    table = rankings_to_table(["q1", "q2", "q3"], rankings, chunk_ids)
    expected = pa.table(
        {
            "question_id": ["q1", "q1", "q3"],
            "rank": [1, 2, 1],
            "chunk_id": ["cé2", "c0", "c1"],
            "score": [0.5, 0.25, 1.0],
        },
        schema=table.schema,
    )
    assert table.equals(expected)
    assert rankings_to_table([], [], chunk_ids).num_rows == 0
    with pytest.raises(ValueError, match="question ids"):
        rankings_to_table(["q1"], rankings, chunk_ids)


def test_writing_and_reading_a_ranking_does_not_load_pandas(tmp_path):
    """The ranking jobs' whole file path: pandas stays unloaded (it costs more than their work)."""
    script = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        from rag.formats.tables import write_parquet
        from rag.retrieval.ranking_files import rankings_to_table, read_ranked_chunk_ids
        from rag.retrieval.search import Ranking
        table = rankings_to_table(["q1"], [Ranking(np.array([0]), np.array([1.0]))], ["c0"])
        write_parquet(table, {str(tmp_path / "ranking.parquet")!r}, {{"stage": "rank"}})
        assert read_ranked_chunk_ids({str(tmp_path / "ranking.parquet")!r}, ["q1"]) == {{"q1": ["c0"]}}
        print("pandas" in sys.modules)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=PROJECT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
