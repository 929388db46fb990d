"""The reproduction check's comparison: every differing cell is named, timings are skipped."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.pipeline import reproduce
from rag.pipeline.reproduce import CellDifference, compare_folders, compare_tables, read_table

RESULTS = Path(__file__).resolve().parents[2] / "results"

METRICS = (
    ["corpus", "chunker", "retriever", "metric", "k", "value"],
    [
        ["solar", "sections", "lsa128", "mrr", "10", "0.755626"],
        ["solar", "sections", "lsa128", "recall", "10", "0.901099"],
        ["solar", "sections", "bm25", "mrr", "10", "0.700000"],
    ],
)


def edited(table, row, column, value):
    header, rows = table
    rows = [list(cells) for cells in rows]
    rows[row][header.index(column)] = value
    return header, rows


def test_identical_tables_have_no_difference():
    assert compare_tables("metrics.csv", METRICS, METRICS) == []


def test_one_altered_value_is_named_by_file_row_key_and_column():
    changed = edited(METRICS, 0, "value", "0.755595")
    assert compare_tables("metrics.csv", METRICS, changed) == [
        CellDifference(
            "metrics.csv",
            "corpus=solar, chunker=sections, retriever=lsa128, metric=mrr",
            "value",
            "0.755626",
            "0.755595",
        )
    ]


def test_the_row_key_is_the_shortest_prefix_unique_over_the_table():
    changed = edited(METRICS, 2, "value", "0.7")
    (difference,) = compare_tables("metrics.csv", METRICS, changed)
    assert difference.row == "corpus=solar, chunker=sections, retriever=bm25, metric=mrr"
    unkeyed = (["a", "b"], [["1", "2"], ["1", "2"]])
    (difference,) = compare_tables("u.csv", unkeyed, edited(unkeyed, 1, "b", "3"))
    assert difference.row == "row 2"


def test_every_differing_cell_is_listed():
    changed = edited(edited(METRICS, 0, "value", "0.1"), 1, "value", "0.2")
    assert [
        (d.row.split("metric=")[1], d.regenerated) for d in compare_tables("m.csv", METRICS, changed)
    ] == [
        ("mrr", "0.1"),
        ("recall", "0.2"),
    ]


def test_timing_columns_are_skipped_and_nothing_else():
    table = (["probes", "recall", "ivf_seconds"], [["1", "0.5", "0.012"], ["4", "0.9", "0.031"]])
    slower = edited(table, 0, "ivf_seconds", "0.020")
    assert compare_tables("ivf_synthetic.csv", table, slower, timing=frozenset({"ivf_seconds"})) == []
    worse = edited(slower, 1, "recall", "0.8")
    assert [d.column for d in compare_tables("x.csv", table, worse, timing=frozenset({"ivf_seconds"}))] == [
        "recall"
    ]


def test_a_declared_tolerance_admits_small_differences_only():
    table = (["name", "score"], [["a", "0.500000"]])
    assert (
        compare_tables("t.csv", table, edited(table, 0, "score", "0.500001"), tolerances={"score": 1e-5})
        == []
    )
    assert compare_tables("t.csv", table, edited(table, 0, "score", "0.500100"), tolerances={"score": 1e-5})
    assert compare_tables("t.csv", table, edited(table, 0, "score", "0.500001"))


def test_missing_and_extra_rows_and_changed_headers_are_reported():
    header, rows = METRICS
    fewer = (header, rows[:2])
    (missing,) = compare_tables("m.csv", METRICS, fewer)
    assert (missing.column, missing.committed, missing.regenerated) == ("(row)", "present", "missing")
    (extra,) = compare_tables("m.csv", fewer, METRICS)
    assert (extra.committed, extra.regenerated) == ("missing", "present")
    (renamed,) = compare_tables("m.csv", METRICS, (["corpus", *header[1:-1], "score"], rows))
    assert renamed.row == "header"


def measurement_columns() -> dict[str, list[str]]:
    """The headers of the judged LLM answers and their summary, from one closed-book answer."""
    import pandas as pd

    from rag.measuring.llm_tables import ANSWER_FILE_COLUMNS, judge_llm_answers, summarize_llm_answers

    row = dict.fromkeys(ANSWER_FILE_COLUMNS, "none") | {"k": 5, "question_id": "q", "answer": "x"}
    row |= {"answerable": True, "reference_answer": "x", "abstained": False, "cited_sources": ""}
    row |= {"source_chunk_ids": "", "evidence_in_prompt": False, "faithful": False, "responsive": False}
    row |= {"prompt_tokens": 1, "completion_tokens": 1, "seconds": 0.1, "cached": False}
    judged = judge_llm_answers(pd.DataFrame([row]), {})
    return {
        "llm_answers_judged.csv": list(judged.columns),
        "llm_answers_summary.csv": list(summarize_llm_answers(judged).columns),
    }


def test_the_declared_timing_columns_exist_in_the_committed_tables():
    # The LLM answer table is committed once the coordinator has run the model
    # on main; until then its columns are the data contract's.
    from rag.answering import llm_answers

    declared = {"llm_answers.csv": llm_answers.COLUMNS} | measurement_columns()
    assert reproduce.TIMING_COLUMNS["llm_answers.csv"] == llm_answers.TIMING_COLUMNS
    for name, columns in reproduce.TIMING_COLUMNS.items():
        header = read_table(RESULTS / name)[0] if (RESULTS / name).exists() else declared[name]
        assert columns <= set(header), name


def test_a_hand_edit_of_a_committed_table_fails_the_folder_comparison(tmp_path):
    committed = tmp_path / "committed"
    shutil.copytree(RESULTS, committed, ignore=shutil.ignore_patterns("benchmarks", "figures"))
    regenerated = tmp_path / "regenerated"
    shutil.copytree(committed, regenerated)
    assert compare_folders(committed, regenerated) == []

    lines = (committed / "metrics.csv").read_text().splitlines(keepends=True)
    cells = lines[1].rstrip("\n").split(",")
    header = lines[0].rstrip("\n").split(",")
    value = header.index("value")
    original = cells[value]
    cells[value] = f"{float(original) + 0.001:.6f}"
    lines[1] = ",".join(cells) + "\n"
    (committed / "metrics.csv").write_text("".join(lines))

    (difference,) = compare_folders(committed, regenerated)
    assert difference.file == "metrics.csv"
    assert difference.column == "value"
    assert difference.committed == cells[value] and difference.regenerated == original
    assert difference.row.startswith(f"corpus={cells[0]}, chunker={cells[1]}, retriever={cells[2]}")
    assert f"k={cells[header.index('k')]}" in difference.row


def test_a_missing_table_is_reported(tmp_path):
    committed, regenerated = tmp_path / "a", tmp_path / "b"
    committed.mkdir()
    regenerated.mkdir()
    (committed / "t.csv").write_text("x\n1\n")
    (difference,) = compare_folders(committed, regenerated)
    assert (difference.file, difference.regenerated) == ("t.csv", "missing")


def test_the_command_exits_non_zero_and_names_the_cell(tmp_path, monkeypatch, capsys):
    """main() on a project whose regenerated table differs in one cell (the run itself is stubbed)."""
    project = tmp_path / "project"
    (project / "results").mkdir(parents=True)
    (project / "results" / "t.csv").write_text("name,value\na,1.000000\nb,2.000000\n")

    def fake_regenerate(project_folder, scratch, cores):
        (scratch / "results").mkdir()
        (scratch / "results" / "t.csv").write_text("name,value\na,1.000000\nb,2.500000\n")

        class Done:
            returncode = 0

        return Done()

    monkeypatch.setattr(reproduce, "regenerate", fake_regenerate)
    assert reproduce.main(["--project", str(project)]) == 1
    output = capsys.readouterr().out
    assert "t.csv [name=b] value: committed '2.000000', regenerated '2.500000'" in output
    (project / "results" / "t.csv").write_text("name,value\na,1.000000\nb,2.500000\n")
    assert reproduce.main(["--project", str(project)]) == 0


@pytest.mark.parametrize("name", reproduce.TRACKED_INPUTS)
def test_the_tracked_inputs_exist(name):
    assert (RESULTS.parent / name).exists()


def test_job_counts_read_snakemake_job_stats_and_nothing_to_be_done():
    table = "job      count\n-----  -------\nall          1\nrank         3\ntotal        4\n"
    log = f"Building DAG of jobs...\nJob stats:\n{table}\nSelect jobs to execute..."
    assert reproduce.job_counts(log) == {"all": 1, "rank": 3}
    assert reproduce.job_counts("Nothing to be done (all requested files are present and up to date).") == {}
    with pytest.raises(ValueError, match="no job stats"):
        reproduce.job_counts("Building DAG of jobs...")


def test_copy_inputs_copies_only_the_named_inputs_into_a_new_folder(tmp_path):
    project = Path(__file__).resolve().parents[2]
    copy = reproduce.copy_inputs(project, tmp_path / "new" / "copy", reproduce.WORKFLOW_CODE)
    assert copy == tmp_path / "new" / "copy"
    assert sorted(path.name for path in copy.iterdir()) == sorted(reproduce.WORKFLOW_CODE)
    assert not list(copy.rglob("__pycache__"))


def test_snakemake_progress_lines_are_read_and_nothing_else():
    assert reproduce.steps_done("57 of 208 steps (27%) done\n") == (57, 208)
    assert reproduce.steps_done("[Fri Dec  4 06:40:00 2026]") is None
    assert reproduce.steps_done("Finished job 12.") is None


def test_the_rebuild_reports_jobs_done_and_time_every_few_seconds_and_at_the_end():
    total = 40
    output = []
    for done in range(1, total + 1):
        output += [f"Finished jobid: {done}\n", f"{done} of {total} steps ({100 * done // total}%) done\n"]
    times = iter(range(0, 10 * len(output), 3))  # three seconds between two reads of the clock
    lines = []
    tail = reproduce.follow_progress(output, lines.append, clock=lambda: next(times), every=10.0)
    assert tail.endswith(f"{total} of {total} steps (100%) done\n")
    assert lines[-1] == f"{total}/{total} jobs done, 2 min 00 s elapsed"
    # One line per ten seconds at most, plus the last: not one per job, not one at the end only.
    assert 2 < len(lines) <= 120 // 10 + 1
    first = lines[0]
    assert first.startswith("4/40 jobs done, 12 s elapsed, about ") and first.endswith(" left")


@settings(max_examples=60, derandomize=True, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 10_000), st.floats(0, 1e6, allow_nan=False))
def test_progress_message_never_fails(done, total, seconds):
    line = reproduce.progress_message(min(done, total), total, seconds)
    assert line.startswith(f"{min(done, total)}/{total} jobs done, ")
