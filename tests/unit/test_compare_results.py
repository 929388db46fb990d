"""``rag compare``: the committed results/ against an ablation's folder lists what the ablation added."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.cli import main
from rag.evaluation.compare_results import CompareError, compare_results

RESULTS = Path(__file__).resolve().parents[2] / "results"
NEW = "bm25_k1_12"


def _ablation(folder: Path) -> Path:
    """results/ as an ablation adding one retriever writes it: the new retriever's rows in every
    table (bm25's, a little better), provenance digests and timings rewritten, nothing else changed."""
    folder.mkdir()
    for path in RESULTS.glob("*.csv"):
        shutil.copy(path, folder / path.name)
    for name, shift_column in (("metrics_ci.csv", "value"), ("significance.csv", "mean_difference")):
        table = pd.read_csv(RESULTS / name, dtype=str, keep_default_na=False)
        source = "bm25" if name == "metrics_ci.csv" else "bm25_classic"
        added = table[table.retriever == source].assign(retriever=NEW)
        added[shift_column] = (added[shift_column].astype(float) + 0.01).map("{:.6f}".format)
        pd.concat([table, added]).to_csv(folder / name, index=False)
    metrics = pd.read_csv(RESULTS / "metrics.csv", dtype=str, keep_default_na=False)
    metrics.assign(provenance="0123456789abcdef").to_csv(folder / "metrics.csv", index=False)
    statistics = pd.read_csv(RESULTS / "index_statistics.csv", dtype=str, keep_default_na=False)
    statistics.assign(seconds="99.0").to_csv(folder / "index_statistics.csv", index=False)
    return folder


def test_an_ablation_folder_shows_its_new_configurations_and_nothing_else(tmp_path):
    comparison = compare_results(RESULTS, _ablation(tmp_path / "results_ablation"))
    chunkers = sorted(set(pd.read_csv(RESULTS / "metrics_ci.csv").query("retriever == 'bm25'").chunker))
    assert chunkers and comparison.added == [("solar_system", chunker, NEW) for chunker in chunkers]
    assert comparison.removed == [] and comparison.changed == [] and comparison.flipped == []


def test_changed_means_come_with_both_intervals_and_flipped_verdicts_are_listed(tmp_path, capsys):
    after = _ablation(tmp_path / "after")
    intervals = pd.read_csv(after / "metrics_ci.csv", dtype=str, keep_default_na=False)
    row = intervals.index[
        (intervals.chunker == "sections") & (intervals.retriever == "tfidf") & (intervals.metric == "mrr")
    ][0]
    before_value = intervals.loc[row, ["value", "ci_low", "ci_high"]].tolist()
    intervals.loc[row, ["value", "ci_low", "ci_high"]] = ["0.123456", "0.100000", "0.150000"]
    intervals.to_csv(after / "metrics_ci.csv", index=False)
    significance = pd.read_csv(after / "significance.csv", dtype=str, keep_default_na=False)
    flipped = significance.index[significance.retriever == "tfidf"][0]
    significance.loc[flipped, "significant"] = str(significance.loc[flipped, "significant"] != "True")
    significance.to_csv(after / "significance.csv", index=False)

    assert main(["compare", str(RESULTS), str(after)]) == 0
    output = capsys.readouterr().out
    expected = (
        f"solar_system/sections/tfidf mrr: {before_value[0]} [{before_value[1]}, {before_value[2]}]"
        f" -> 0.123456 [0.100000, 0.150000] ({0.123456 - float(before_value[0]):+.6f})"
    )
    assert expected in output
    assert "Metric means changed, with their 95 % intervals (1):" in output
    assert "Verdicts of significance.csv changed (1):" in output
    assert f"Configurations added ({len(set(intervals[intervals.retriever == NEW].chunker))}):" in output


@pytest.mark.parametrize("missing", ["folder", "table"])
def test_a_folder_without_the_tables_is_one_line_naming_it(tmp_path, capsys, missing):
    folder = tmp_path / "results_other"
    if missing == "table":
        folder.mkdir()
    assert main(["compare", str(RESULTS), str(folder)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "results_other" in error and error.startswith("rag compare: error:")


# --------------------------------------------------------------------------
# Added and removed configurations come with their headline metrics (issue 44)
# --------------------------------------------------------------------------


def _expected_headline(intervals: pd.DataFrame, chunker: str, retriever: str) -> str:
    """The headline written independently: the summary's columns from the interval rows."""
    rows = intervals[(intervals.chunker == chunker) & (intervals.retriever == retriever)]
    parts = []
    for metric, k, label, digits in (
        ("recall", "1", "R@1", 3),
        ("recall", "5", "R@5", 3),
        ("recall", "10", "R@10", 3),
        ("mrr", "", "MRR", 3),
        ("ndcg", "10", "nDCG@10", 3),
        ("prompt_words", "5", "words@5", 0),
    ):
        (row,) = rows[(rows.metric == metric) & (rows.k == k)].itertuples(index=False)
        value, low, high = (round(float(text), digits) for text in (row.value, row.ci_low, row.ci_high))
        shown = [f"{number:.{digits}f}" for number in (value, low, high)]
        parts.append(f"{label} {shown[0]} [{shown[1]}, {shown[2]}]")
    return ", ".join(parts)


def test_added_and_removed_configurations_are_printed_with_their_headline_intervals(tmp_path, capsys):
    after = _ablation(tmp_path / "after")
    intervals = pd.read_csv(after / "metrics_ci.csv", dtype=str, keep_default_na=False)
    assert main(["compare", str(RESULTS), str(after)]) == 0
    output = capsys.readouterr().out
    line = next(text for text in output.splitlines() if text.startswith(f"  solar_system/sections/{NEW}: "))
    assert line == f"  solar_system/sections/{NEW}: {_expected_headline(intervals, 'sections', NEW)}"
    # bm25's R@5 shifted by 0.01: the added row's number is its own, not bm25's.
    bm25 = _expected_headline(intervals, "sections", "bm25")
    assert line.split(": ", 1)[1] != bm25

    assert main(["compare", str(after), str(RESULTS)]) == 0
    output = capsys.readouterr().out
    removed = output.split("Configurations removed")[1].split("Metric means changed")[0]
    assert f"  solar_system/sections/{NEW}: {_expected_headline(intervals, 'sections', NEW)}" in removed
    assert "Configurations added (0):" in output


# --------------------------------------------------------------------------
# Damaged tables: one line naming the file, the row and the column (issue 42)
# --------------------------------------------------------------------------

SMALL_ROWS = 30


def _small_folder(folder: Path) -> Path:
    """A results folder with the first rows of each compared table, as the pipeline wrote them."""
    folder.mkdir()
    for name in ("metrics_ci.csv", "significance.csv", "metrics.csv"):
        lines = (RESULTS / name).read_text(encoding="utf-8").splitlines(keepends=True)
        (folder / name).write_text("".join(lines[: SMALL_ROWS + 1]), encoding="utf-8")
    return folder


def _damage(folder: Path, name: str, change) -> Path:
    path = folder / name
    data = path.read_bytes()
    path.write_bytes(change(data))
    return path


def _replace_cell(data: bytes, row: int, column: int, value: bytes) -> bytes:
    lines = data.split(b"\n")
    cells = lines[row].split(b",")
    cells[column] = value
    lines[row] = b",".join(cells)
    return b"\n".join(lines)


DAMAGES = {
    "renamed column": ("metrics_ci.csv", lambda d: d.replace(b"ci_low", b"lower", 1), "line 1", "'ci_low'"),
    "text for a number": ("metrics_ci.csv", lambda d: _replace_cell(d, 3, 5, b"high"), "row 3", "'value'"),
    "empty value": ("metrics_ci.csv", lambda d: _replace_cell(d, 4, 6, b""), "row 4", "'ci_low'"),
    "nan": ("metrics_ci.csv", lambda d: _replace_cell(d, 2, 7, b"nan"), "row 2", "'ci_high'"),
    "infinity": (
        "significance.csv",
        lambda d: _replace_cell(d, 5, 7, b"1e999"),
        "row 5",
        "'mean_difference'",
    ),
    "p above one": (
        "significance.csv",
        lambda d: _replace_cell(d, 1, 10, b"1.5"),
        "row 1",
        "'p_randomization'",
    ),
    "verdict": ("significance.csv", lambda d: _replace_cell(d, 2, 14, b"maybe"), "row 2", "'significant'"),
    "k of zero": ("metrics_ci.csv", lambda d: _replace_cell(d, 6, 4, b"0"), "row 6", "'k'"),
    "questions": ("metrics_ci.csv", lambda d: _replace_cell(d, 6, 8, b"-3"), "row 6", "'questions'"),
    "escape in a name": (
        "metrics_ci.csv",
        lambda d: _replace_cell(d, 7, 2, b"bm\x1b[31m25"),
        "row 7",
        "'retriever'",
    ),
    "truncated last row": ("metrics_ci.csv", lambda d: d[:-9], f"line {SMALL_ROWS + 1}", "not complete"),
    "cut to fewer fields": (
        "significance.csv",
        lambda d: d[: d.rindex(b",", 0, len(d) - 30)] + b"\n",
        f"row {SMALL_ROWS}",
        "fields",
    ),
    "not utf-8": ("metrics_ci.csv", lambda d: _replace_cell(d, 9, 1, b"fixed\xff100"), "line 10", "UTF-8"),
    "nul byte": ("significance.csv", lambda d: _replace_cell(d, 8, 1, b"fixed\x00100"), "line 9", "NUL"),
    "oversized field": (
        "metrics_ci.csv",
        lambda d: _replace_cell(d, 4, 1, b"f" * 5000),
        "line 5",
        "'chunker'",
    ),
    "huge field": ("metrics_ci.csv", lambda d: _replace_cell(d, 4, 1, b"f" * 200_000), "line 5", "not CSV"),
    "quote": ("metrics_ci.csv", lambda d: _replace_cell(d, 4, 5, b'"0.5"'), "line 5", "quote"),
    "duplicate row": (
        "metrics_ci.csv",
        lambda d: d + d.split(b"\n")[1] + b"\n",
        f"row {SMALL_ROWS + 1}",
        "row 1",
    ),
    "blank line": ("metrics_ci.csv", lambda d: d.replace(b"\n", b"\n\n", 3), "row 1", "fields"),
    "empty metrics.csv": ("metrics.csv", lambda d: b"", "metrics.csv", "empty"),
    "header-only metrics_ci.csv": (
        "metrics_ci.csv",
        lambda d: d.split(b"\n")[0] + b"\n",
        "metrics_ci.csv",
        "no rows",
    ),
    "empty metrics_ci.csv": ("metrics_ci.csv", lambda d: b"", "metrics_ci.csv", "empty"),
    "metrics.csv value": ("metrics.csv", lambda d: _replace_cell(d, 3, 5, b"0.x"), "row 3", "'value'"),
}


@pytest.mark.parametrize("side", ["before", "after"])
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_table_is_refused_in_one_line_naming_file_row_and_column(tmp_path, capsys, damage, side):
    name, change, row, column = DAMAGES[damage]
    good, bad = _small_folder(tmp_path / "good"), _small_folder(tmp_path / "bad")
    _damage(bad, name, change)
    folders = [good, bad] if side == "after" else [bad, good]
    assert main(["compare", *map(str, folders)]) == 1
    captured = capsys.readouterr()
    error = captured.err
    assert captured.out == "" and error.count("\n") == 1 and error.startswith("rag compare: error: ")
    assert str(bad / name) in error and row in error and column in error, error
    assert "\x1b" not in error and "\x00" not in error


@pytest.mark.parametrize("missing", ["significance.csv", "metrics_ci.csv"])
def test_a_missing_table_is_said_not_skipped(tmp_path, capsys, missing):
    good, bad = _small_folder(tmp_path / "good"), _small_folder(tmp_path / "bad")
    (bad / missing).unlink()
    assert main(["compare", str(good), str(bad)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"{bad / missing}: missing" in error


def test_a_table_that_is_a_folder_is_refused(tmp_path, capsys):
    good, bad = _small_folder(tmp_path / "good"), _small_folder(tmp_path / "bad")
    (bad / "significance.csv").unlink()
    (bad / "significance.csv").mkdir()
    assert main(["compare", str(good), str(bad)]) == 1
    assert "significance.csv: not a regular file" in capsys.readouterr().err


def test_a_folder_without_metrics_csv_is_compared(tmp_path):
    """metrics.csv is absent where every corpus is document-level (BEIR): validated when present."""
    good, other = _small_folder(tmp_path / "good"), _small_folder(tmp_path / "other")
    (other / "metrics.csv").unlink()
    assert compare_results(good, other).added == []


def test_the_small_tables_compare_clean(tmp_path):
    comparison = compare_results(_small_folder(tmp_path / "a"), _small_folder(tmp_path / "b"))
    assert (comparison.added, comparison.removed, comparison.changed, comparison.flipped) == ([], [], [], [])


# --------------------------------------------------------------------------
# Fuzz: mutated tables give a clear error or are valid by an independent reading
# --------------------------------------------------------------------------

FUZZ = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
HOSTILE = [b"", b",", b"\n", b"\r", b"\r\n", b'"', b"\x00", b"\xff", b"\xc3", b"nan", b"inf", b"-", b"1e999"]
HOSTILE += [b"0", b"1.5", b"True", b"abc", b" ", b"\x1b[2J", b"\xe2\x80\xae", b"x" * 300, b"9" * 30, b"-0.5"]


def _independent_verdict(data: bytes, name: str) -> bool:
    """Whether a mutated table is still one the pipeline could have written, read without the csv module."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if any(character in text for character in '\x00"\r') or not text.endswith("\n"):
        return False
    header, *lines = text[:-1].split("\n")
    expected = (RESULTS / name).read_text(encoding="utf-8").split("\n")[0].split(",")
    if header.split(",") != expected or not lines:
        return False
    keys = set()
    for line in lines:
        cells = line.split(",")
        if len(cells) != len(expected):
            return False
        row = dict(zip(expected, cells, strict=True))
        if any(len(cell) > 200 for cell in cells):
            return False
        names = ["corpus", "chunker", "retriever", "metric"] + (["baseline"] if "baseline" in row else [])
        for column in names:
            value = row[column]
            body = value[: -len(":holdout")] if column == "corpus" and value.endswith(":holdout") else value
            if not (
                body[:1].isascii()
                and body[:1].islower()
                and all(c in "abcdefghijklmnopqrstuvwxyz0123456789_" for c in body)
            ):
                return False
        if row["k"] and not (
            row["k"].isascii() and row["k"].isdigit() and int(row["k"]) > 0 and row["k"][0] != "0"
        ):
            return False
        if not (row["questions"].isascii() and row["questions"].isdigit()):
            return False
        numbers = [
            c
            for c in expected
            if c
            not in ("corpus", "chunker", "retriever", "baseline", "metric", "k", "questions", "significant")
        ]
        for column in numbers:
            value = row[column]
            if not value or not all(c in "0123456789.-eE+" for c in value):
                return False
            try:
                number = float(value)
            except ValueError:
                return False
            if (
                not math.isfinite(number)
                or value.count(".") > 1
                or value.endswith(".")
                or value.startswith(".")
                or value.startswith("-.")
            ):
                return False
            if column.startswith("p_") and not 0 <= number <= 1:
                return False
        if "significant" in row and row["significant"] not in ("True", "False"):
            return False
        key = tuple(row[c] for c in names + ["k"])
        if key in keys:
            return False
        keys.add(key)
    return True


@st.composite
def mutated_tables(draw):
    name = draw(st.sampled_from(["metrics_ci.csv", "significance.csv"]))
    lines = (RESULTS / name).read_bytes().split(b"\n")[: SMALL_ROWS + 1]
    data = b"\n".join(lines) + b"\n"
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["insert", "replace", "delete", "truncate", "cell", "duplicate"]))
        position = draw(st.integers(0, len(data)))
        if kind == "insert":
            data = data[:position] + draw(st.sampled_from(HOSTILE)) + data[position:]
        elif kind == "replace":
            data = data[:position] + draw(st.sampled_from(HOSTILE)) + data[position + 1 :]
        elif kind == "delete":
            data = data[:position] + data[position + draw(st.integers(1, 20)) :]
        elif kind == "truncate":
            data = data[:position]
        elif kind == "duplicate":
            rows = data.split(b"\n")
            data = data + rows[draw(st.integers(0, len(rows) - 1))] + b"\n"
        else:
            rows = data.split(b"\n")
            row = draw(st.integers(0, len(rows) - 1))
            cells = rows[row].split(b",")
            cells[draw(st.integers(0, len(cells) - 1))] = draw(st.sampled_from(HOSTILE))
            rows[row] = b",".join(cells)
            data = b"\n".join(rows)
    return name, data


@FUZZ
@given(mutated_tables())
def test_mutated_tables_fail_clearly_or_are_valid(tmp_path_factory, case):
    name, data = case
    root = tmp_path_factory.mktemp("compare")
    good, bad = _small_folder(root / "good"), _small_folder(root / "bad")
    (bad / name).write_bytes(data)
    try:
        compare_results(good, bad)
    except CompareError as error:
        message = str(error)
        assert "\n" not in message, message
        assert str(bad / name) in message, message
        return
    assert _independent_verdict(data, name), f"accepted a damaged {name}: {data[-200:]!r}"
