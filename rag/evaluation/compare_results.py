"""What changed between two results folders: ``rag compare A B``.

An ablation run with ``--config results=results_ablation`` writes its tables
beside the committed ``results/`` instead of over them. Reading two folders of
tidy CSV by eye hides what matters among provenance digests and timings, so
this compares only what a decision rests on:

- the configurations (corpus, chunker, retriever) each folder evaluated:
  those added and those removed, each with its headline metrics (the columns
  of summary.csv) and their 95 % intervals;
- for configurations in both, every metric whose mean changed, with both
  bootstrap intervals (``metrics_ci.csv``);
- for comparisons in both, every verdict of ``significance.csv`` that flipped.

Values are compared as written (six decimals), so a rebuilt but unchanged
configuration shows no difference; provenance, code digests and timing
columns are never read.

Both folders' tables are validated before anything is compared (issue 42): a
missing or empty table, a changed schema, a value that is not a finite number
where one is expected, a truncated last row, bytes that are not UTF-8, a NUL
byte or an oversized field is a :class:`CompareError` naming the file, the row
and the column. A table is never skipped and never half read.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rag.evaluation import metric_registry

CONFIGURATION = ("corpus", "chunker", "retriever")
INTERVALS = "metrics_ci.csv"
SIGNIFICANCE = "significance.csv"
METRICS = "metrics.csv"

# Limits far above what the pipeline writes (metrics_ci.csv of the bundled grid is 0.3 MB, its
# longest field 27 characters); anything beyond is not a table this pipeline wrote.
MAX_TABLE_BYTES = 64 * 1024 * 1024
MAX_FIELD_CHARACTERS = 200


class CompareError(ValueError):
    """A folder that cannot be compared (missing, or a table that is not as written); the message names it."""


# --------------------------------------------------------------------------
# The schema of each table the comparison reads, and its validation
# --------------------------------------------------------------------------

Check = Callable[[str], str | None]  # a cell's text -> why it is not valid, or None

# Names as config.yaml allows them (a holdout share's corpus ends in ':holdout').
_NAME = re.compile(r"[a-z][a-z0-9_]{0,99}(:holdout)?")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_COUNT = re.compile(r"[0-9]{1,12}")
_K = re.compile(r"[1-9][0-9]{0,8}")


def _name(text: str) -> str | None:
    return None if _NAME.fullmatch(text) else "not a name (lower-case letters, digits and underscores)"


def _finite(text: str) -> str | None:
    if not _NUMBER.fullmatch(text):
        return "not a number"
    return None if math.isfinite(float(text)) else "not a finite number"


def _probability(text: str) -> str | None:
    problem = _finite(text)
    if problem is None and not 0.0 <= float(text) <= 1.0:
        return "a p-value outside 0 to 1"
    return problem


def _count(text: str) -> str | None:
    return None if _COUNT.fullmatch(text) else "not a whole number of questions"


def _k(text: str) -> str | None:
    return None if text == "" or _K.fullmatch(text) else "not a cut-off k (a positive whole number, or empty)"


def _verdict(text: str) -> str | None:
    return None if text in ("True", "False") else "not True or False"


def _text(text: str) -> str | None:
    return None


@dataclass(frozen=True)
class TableSchema:
    """The columns a table must have, each with its check; further columns are ignored."""

    name: str
    columns: Mapping[str, Check]
    key: tuple[str, ...]  # what identifies a row; a second row with the same key is an error


INTERVAL_SCHEMA = TableSchema(
    INTERVALS,
    {
        **dict.fromkeys(CONFIGURATION, _name),
        "metric": _name,
        "k": _k,
        **dict.fromkeys(("value", "ci_low", "ci_high"), _finite),
        "questions": _count,
    },
    (*CONFIGURATION, "metric", "k"),
)
SIGNIFICANCE_SCHEMA = TableSchema(
    SIGNIFICANCE,
    {
        **dict.fromkeys((*CONFIGURATION, "baseline", "metric"), _name),
        "k": _k,
        "questions": _count,
        **dict.fromkeys(("mean_difference", "difference_ci_low", "difference_ci_high"), _finite),
        **dict.fromkeys(("p_randomization", "p_randomization_holm", "p_t", "p_t_holm"), _probability),
        "significant": _verdict,
    },
    (*CONFIGURATION, "baseline", "metric", "k"),
)
METRICS_SCHEMA = TableSchema(
    METRICS,
    {
        **dict.fromkeys(CONFIGURATION, _name),
        "metric": _name,
        "k": _k,
        "value": _finite,
        "questions": _count,
        "provenance": _text,
    },
    (*CONFIGURATION, "metric", "k"),
)


def _line_of(data: bytes | str, offset: int) -> int:
    return data.count(b"\n" if isinstance(data, bytes) else "\n", 0, offset) + 1


def parse_table(data: bytes, schema: TableSchema, where: str) -> list[dict[str, str]]:
    """The rows of one table, every cell checked; the first problem is a CompareError naming row and column.

    ``where`` names the file in messages. Rows are numbered from 1 after the
    header; the message also gives the line of the file.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CompareError(f"{where}, line {_line_of(data, error.start)}: bytes that are not UTF-8") from None
    if "\x00" in text:
        raise CompareError(f"{where}, line {_line_of(text, text.index(chr(0)))}: a NUL byte")
    if '"' in text:
        # The pipeline quotes nothing (names and numbers only), so a quote is damage, not CSV quoting.
        raise CompareError(f"{where}, line {_line_of(text, text.index(chr(34)))}: a quote character")
    if not text.strip():
        raise CompareError(f"{where}: empty (not even a header); a table the pipeline wrote has rows")
    if not text.endswith("\n"):
        raise CompareError(
            f"{where}, line {_line_of(text, len(text) - 1)}: the last row is not complete (no line end); "
            "the table was cut"
        )
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[dict[str, str]] = []
    seen: dict[tuple[str, ...], int] = {}
    header: list[str] = []
    try:
        for fields in reader:
            line = reader.line_num
            for position, value in enumerate(fields):
                if len(value) > MAX_FIELD_CHARACTERS or "\n" in value or "\r" in value:
                    column = header[position] if position < len(header) else f"#{position + 1}"
                    problem = (
                        "a line break inside a field"
                        if len(value) <= MAX_FIELD_CHARACTERS
                        else (f"a field of {len(value):,} characters (at most {MAX_FIELD_CHARACTERS})")
                    )
                    raise CompareError(f"{where}, line {line}, column {column!r:.40}: {problem}")
            if not header:
                header = fields
                _check_header(header, schema, where)
                continue
            row_number = len(rows) + 1
            at = f"{where}, row {row_number} (line {line})"
            if len(fields) != len(header):
                raise CompareError(
                    f"{at}: {len(fields)} fields where the header has {len(header)}; a cut or damaged row"
                )
            row = dict(zip(header, fields, strict=True))
            for column, check in schema.columns.items():
                problem = check(row[column])
                if problem:
                    raise CompareError(f"{at}, column {column!r}: {row[column]!r:.40} is {problem}")
            key = tuple(row[column] for column in schema.key)
            if key in seen:
                raise CompareError(f"{at}: the same {', '.join(schema.key)} as row {seen[key]}")
            seen[key] = row_number
            rows.append(row)
    except csv.Error as error:
        raise CompareError(f"{where}, line {reader.line_num}: not CSV ({error})") from None
    if not rows:
        raise CompareError(f"{where}: a header but no rows; a table the pipeline wrote has rows")
    return rows


def _check_header(header: Sequence[str], schema: TableSchema, where: str) -> None:
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise CompareError(f"{where}, line 1: column {repeated[0]!r:.40} appears twice in the header")
    missing = [name for name in schema.columns if name not in header]
    if missing:
        raise CompareError(
            f"{where}, line 1: no column {missing[0]!r}; expected the columns {', '.join(schema.columns)}"
        )


def read_table(folder: Path, schema: TableSchema, required: bool = True) -> list[dict[str, str]] | None:
    """One table of a results folder, validated; None only when it is absent and not ``required``."""
    path = folder / schema.name
    if not folder.is_dir():
        raise CompareError(f"{folder}: no such results folder")
    if not path.exists():
        if not required:
            return None
        raise CompareError(f"{path}: missing; is {folder} a results folder the pipeline wrote?")
    if not path.is_file():
        raise CompareError(f"{path}: not a regular file")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_TABLE_BYTES + 1)
    except OSError as error:
        raise CompareError(f"{path}: cannot be read ({error.strerror or error})") from None
    if len(data) > MAX_TABLE_BYTES:
        raise CompareError(
            f"{path}: larger than {MAX_TABLE_BYTES // 2**20} MiB; not a table the pipeline wrote"
        )
    return parse_table(data, schema, str(path))


# --------------------------------------------------------------------------
# The comparison
# --------------------------------------------------------------------------

Interval = tuple[str, str, str]  # value, ci_low, ci_high as written


@dataclass(frozen=True)
class MetricChange:
    """One metric of one configuration whose mean differs between the two folders."""

    configuration: tuple[str, str, str]
    metric: str
    before: Interval
    after: Interval

    def describe(self) -> str:
        difference = float(self.after[0]) - float(self.before[0])
        before, after = self.before, self.after
        return (
            f"{'/'.join(self.configuration)} {self.metric}: {before[0]} [{before[1]}, {before[2]}]"
            f" -> {after[0]} [{after[1]}, {after[2]}] ({difference:+.6f})"
        )


def headline_metrics() -> list[tuple[str, str]]:
    """(key in the intervals, label) of the summary's columns: R@1, R@5, R@10, MRR, nDCG@10, words@5."""
    return [
        (metric if k is None else f"{metric}@{k}", label)
        for _, metric, k, label, _ in metric_registry.summary_columns()
    ]


def headline(metrics: Mapping[str, Interval]) -> str:
    """A configuration's headline metrics with their intervals, as ``R@5 0.643 [0.544, 0.736]``."""
    parts = []
    for key, label in headline_metrics():
        if key in metrics:
            digits = 0 if key.startswith("prompt_words") else 3
            value, low, high = (f"{float(text):.{digits}f}" for text in metrics[key])
            parts.append(f"{label} {value} [{low}, {high}]")
    return ", ".join(parts) if parts else "no headline metric in metrics_ci.csv"


@dataclass(frozen=True)
class Comparison:
    """Everything ``rag compare`` prints."""

    added: list[tuple[str, str, str]]
    removed: list[tuple[str, str, str]]
    changed: list[MetricChange]
    flipped: list[str]
    headlines: dict[tuple[str, str, str], str] = field(default_factory=dict)

    def lines(self, first: str, second: str) -> list[str]:
        def section(title: str, items: list[str]) -> list[str]:
            return [f"{title} ({len(items)}):", *(f"  {item}" for item in items or ["none"])]

        def described(configurations: list[tuple[str, str, str]]) -> list[str]:
            return [
                "/".join(item) + (f": {self.headlines[item]}" if item in self.headlines else "")
                for item in configurations
            ]

        return [
            f"Comparing {first} (before) with {second} (after)",
            *section("Configurations added", described(self.added)),
            *section("Configurations removed", described(self.removed)),
            *section("Metric means changed, with their 95 % intervals", [c.describe() for c in self.changed]),
            *section("Verdicts of significance.csv changed", self.flipped),
        ]


def _metric(row: Mapping[str, str]) -> str:
    return f"{row['metric']}@{row['k']}" if row["k"] else row["metric"]


def _intervals(rows: list[dict[str, str]]) -> dict[tuple[str, str, str], dict[str, Interval]]:
    table: dict[tuple[str, str, str], dict[str, Interval]] = {}
    for row in rows:
        configuration = (row["corpus"], row["chunker"], row["retriever"])
        table.setdefault(configuration, {})[_metric(row)] = (row["value"], row["ci_low"], row["ci_high"])
    return table


def _verdicts(rows: list[dict[str, str]]) -> dict[tuple[str, ...], str]:
    return {
        (*(row[key] for key in CONFIGURATION), row["baseline"], _metric(row)): row["significant"]
        for row in rows
    }


def read_folder(folder: Path) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """A results folder's interval and significance rows, every table it has validated.

    ``metrics_ci.csv`` and ``significance.csv`` must be there; ``metrics.csv``
    (absent where every corpus is document-level) is validated when present.
    """
    intervals = read_table(folder, INTERVAL_SCHEMA)
    significance = read_table(folder, SIGNIFICANCE_SCHEMA)
    read_table(folder, METRICS_SCHEMA, required=False)
    return intervals, significance


def compare_results(first: Path, second: Path) -> Comparison:
    """The differences between two results folders (``first`` before, ``second`` after)."""
    first_rows, first_tests = read_folder(Path(first))
    second_rows, second_tests = read_folder(Path(second))
    before, after = _intervals(first_rows), _intervals(second_rows)
    changed = []
    for configuration in sorted(before.keys() & after.keys()):
        old, new = before[configuration], after[configuration]
        for metric in sorted(old.keys() & new.keys()):
            if old[metric][0] != new[metric][0]:
                changed.append(MetricChange(configuration, metric, old[metric], new[metric]))
    old_verdicts, new_verdicts = _verdicts(first_tests), _verdicts(second_tests)
    flipped = [
        f"{'/'.join(key[:3])} against {key[3]}, {key[4]}: "
        f"significant {old_verdicts[key]} -> {new_verdicts[key]}"
        for key in sorted(old_verdicts.keys() & new_verdicts.keys())
        if old_verdicts[key] != new_verdicts[key]
    ]
    added, removed = sorted(after.keys() - before.keys()), sorted(before.keys() - after.keys())
    headlines = {item: headline(after[item]) for item in added}
    headlines |= {item: headline(before[item]) for item in removed}
    return Comparison(added=added, removed=removed, changed=changed, flipped=flipped, headlines=headlines)
