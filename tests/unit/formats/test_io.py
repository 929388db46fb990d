"""Rankings tables, written and read with pyarrow alone, and how a job script exits."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rag.formats.tables import read_columns, read_provenance, write_parquet
from rag.retrieval.ranking_files import (
    RANKING_COLUMNS,
    ranked_chunk_ids,
    rankings_to_table,
    read_ranked_chunk_ids,
    read_rankings,
)
from rag.retrieval.search import Ranking

CHUNK_IDS = ["c0", "c1", "c2", "c3"]


def sample_rankings() -> tuple[list[str], list[Ranking]]:
    return ["q2", "q1", "q3"], [
        Ranking(np.array([3, 0]), np.array([2.5, 1.0])),
        Ranking.empty(),
        Ranking(np.array([1, 2, 0]), np.array([0.5, 0.5, 0.25])),
    ]


def test_the_table_holds_one_typed_row_per_question_and_rank():
    question_ids, rankings = sample_rankings()
    frame = rankings_to_table(question_ids, rankings, CHUNK_IDS).to_pandas()
    assert list(frame.columns) == RANKING_COLUMNS
    assert frame.to_dict("records") == [
        {"question_id": "q2", "rank": 1, "chunk_id": "c3", "score": 2.5},
        {"question_id": "q2", "rank": 2, "chunk_id": "c0", "score": 1.0},
        {"question_id": "q3", "rank": 1, "chunk_id": "c1", "score": 0.5},
        {"question_id": "q3", "rank": 2, "chunk_id": "c2", "score": 0.5},
        {"question_id": "q3", "rank": 3, "chunk_id": "c0", "score": 0.25},
    ]
    assert frame["rank"].dtype == np.dtype("int64") and frame["score"].dtype == np.dtype("float64")
    assert pd.api.types.is_string_dtype(frame["question_id"]) and pd.api.types.is_string_dtype(
        frame["chunk_id"]
    )


def test_round_trip_through_a_file_keeps_order_scores_and_provenance(tmp_path):
    question_ids, rankings = sample_rankings()
    path = tmp_path / "ranking.parquet"
    write_parquet(rankings_to_table(question_ids, rankings, CHUNK_IDS), path, {"stage": "rank"})
    assert read_provenance(path) == {"stage": "rank"}
    loaded = read_rankings(path, CHUNK_IDS, ["q1", "q2", "q3", "q4"])
    assert list(loaded) == ["q1", "q2", "q3", "q4"]
    for question_id, ranking in zip(question_ids, rankings, strict=True):
        np.testing.assert_array_equal(loaded[question_id].positions, ranking.positions)
        np.testing.assert_array_equal(loaded[question_id].scores, ranking.scores)
    assert len(loaded["q4"]) == 0
    assert read_ranked_chunk_ids(path, ["q1", "q2", "q3", "q4"]) == {
        key: [CHUNK_IDS[position] for position in value.positions] for key, value in loaded.items()
    }


def test_rows_out_of_order_are_put_back_in_rank_order(tmp_path):
    path = tmp_path / "shuffled.parquet"
    frame = pd.DataFrame(
        {
            "question_id": ["q1", "q1", "q1"],
            "rank": [3, 1, 2],
            "chunk_id": ["c2", "c0", "c1"],
            "score": [1.0, 3.0, 2.0],
        }
    )
    write_parquet(frame, path)
    assert read_rankings(path, CHUNK_IDS, ["q1"])["q1"].positions.tolist() == [0, 1, 2]


def test_an_empty_rankings_table_keeps_its_column_types(tmp_path):
    path = tmp_path / "empty.parquet"
    write_parquet(rankings_to_table(["q1"], [Ranking.empty()], CHUNK_IDS), path)
    columns = read_columns(path, RANKING_COLUMNS)
    assert columns == {"question_id": [], "rank": [], "chunk_id": [], "score": []}
    assert pd.read_parquet(path).dtypes["score"] == np.dtype("float64")


def test_an_unknown_chunk_id_is_an_error(tmp_path):
    path = tmp_path / "stale.parquet"
    write_parquet(rankings_to_table(["q1"], [Ranking(np.array([3]), np.array([1.0]))], CHUNK_IDS), path)
    with pytest.raises(KeyError, match="c3"):
        read_rankings(path, CHUNK_IDS[:3], ["q1"])


def test_ranked_chunk_ids_keep_the_asked_questions_in_rank_order():
    columns = {
        "question_id": ["q1", "q1", "q2", "q9"],
        "rank": [2, 1, 1, 1],
        "chunk_id": ["c5", "c3", "c1", "c2"],
        "score": [1.0, 2.0, 1.0, 1.0],
    }
    assert ranked_chunk_ids(columns, ["q1", "q2", "q3"]) == {"q1": ["c3", "c5"], "q2": ["c1"], "q3": []}


def run_script(tmp_path, body: str) -> subprocess.CompletedProcess:
    script = tmp_path / "job.py"
    script.write_text(body)
    root = Path(__file__).resolve().parents[3]
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )


def test_finish_job_flushes_the_log_and_the_streams_and_exits_zero(tmp_path):
    log_path = tmp_path / "job.log"
    result = run_script(
        tmp_path,
        "import sys\nfrom rag.pipeline.jobs import finish_job, start_log\n"
        f"log = start_log({str(log_path)!r})\nlog.info('all outputs written')\n"
        "print('to stdout', end='')\nsys.stderr.write('to stderr')\nfinish_job()\nraise SystemExit(3)\n",
    )
    assert result.returncode == 0
    assert (result.stdout, result.stderr) == ("to stdout", "to stderr")
    assert "all outputs written" in log_path.read_text()


def test_a_script_that_fails_before_finish_job_still_fails(tmp_path):
    result = run_script(
        tmp_path, "from rag.pipeline.jobs import finish_job\nraise ValueError('bad input')\nfinish_job()\n"
    )
    assert result.returncode == 1
    assert "ValueError: bad input" in result.stderr
