"""What changed between two results folders: ``rag compare A B``.

An ablation run with ``--config results=results_ablation`` writes its tables
beside the committed ``results/`` instead of over them. Reading two folders of
tidy CSV by eye hides what matters among provenance digests and timings, so
this compares only what a decision rests on:

- the configurations (corpus, chunker, retriever) each folder evaluated:
  those added and those removed;
- for configurations in both, every metric whose mean changed, with both
  bootstrap intervals (``metrics_ci.csv``);
- for comparisons in both, every verdict of ``significance.csv`` that flipped.

Values are compared as written (six decimals), so a rebuilt but unchanged
configuration shows no difference; provenance, code digests and timing
columns are never read.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

CONFIGURATION = ("corpus", "chunker", "retriever")
INTERVALS = "metrics_ci.csv"
SIGNIFICANCE = "significance.csv"


class CompareError(ValueError):
    """A folder that cannot be compared (missing, or without the tables); the message names it."""


@dataclass(frozen=True)
class MetricChange:
    """One metric of one configuration whose mean differs between the two folders."""

    configuration: tuple[str, str, str]
    metric: str
    before: tuple[str, str, str]  # value, ci_low, ci_high as written
    after: tuple[str, str, str]

    def describe(self) -> str:
        difference = float(self.after[0]) - float(self.before[0])
        before, after = self.before, self.after
        return (
            f"{'/'.join(self.configuration)} {self.metric}: {before[0]} [{before[1]}, {before[2]}]"
            f" -> {after[0]} [{after[1]}, {after[2]}] ({difference:+.6f})"
        )


@dataclass(frozen=True)
class Comparison:
    """Everything ``rag compare`` prints."""

    added: list[tuple[str, str, str]]
    removed: list[tuple[str, str, str]]
    changed: list[MetricChange]
    flipped: list[str]

    def lines(self, first: str, second: str) -> list[str]:
        def section(title: str, items: list[str]) -> list[str]:
            return [f"{title} ({len(items)}):", *(f"  {item}" for item in items or ["none"])]

        return [
            f"Comparing {first} (before) with {second} (after)",
            *section("Configurations added", ["/".join(item) for item in self.added]),
            *section("Configurations removed", ["/".join(item) for item in self.removed]),
            *section("Metric means changed, with their 95 % intervals", [c.describe() for c in self.changed]),
            *section("Verdicts of significance.csv changed", self.flipped),
        ]


def _rows(folder: Path, name: str, required: bool = True) -> list[dict[str, str]]:
    path = folder / name
    if not folder.is_dir():
        raise CompareError(f"{folder}: no such results folder")
    if not path.is_file():
        if required:
            raise CompareError(f"{path}: missing; is {folder} a results folder the pipeline wrote?")
        return []
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    needed = {*CONFIGURATION, "metric", "k"}
    if rows and not needed <= rows[0].keys():
        raise CompareError(f"{path}: expected the columns {', '.join(sorted(needed))}")
    return rows


def _metric(row: dict[str, str]) -> str:
    return f"{row['metric']}@{row['k']}" if row["k"] else row["metric"]


def _intervals(folder: Path) -> dict[tuple[str, str, str], dict[str, tuple[str, str, str]]]:
    table: dict[tuple[str, str, str], dict[str, tuple[str, str, str]]] = {}
    for row in _rows(folder, INTERVALS):
        configuration = tuple(row[key] for key in CONFIGURATION)
        table.setdefault(configuration, {})[_metric(row)] = (row["value"], row["ci_low"], row["ci_high"])
    return table


def _verdicts(folder: Path) -> dict[tuple[str, ...], str]:
    return {
        (*(row[key] for key in CONFIGURATION), row["baseline"], _metric(row)): row["significant"]
        for row in _rows(folder, SIGNIFICANCE, required=False)
    }


def compare_results(first: Path, second: Path) -> Comparison:
    """The differences between two results folders (``first`` before, ``second`` after)."""
    before, after = _intervals(Path(first)), _intervals(Path(second))
    changed = []
    for configuration in sorted(before.keys() & after.keys()):
        old, new = before[configuration], after[configuration]
        for metric in sorted(old.keys() & new.keys()):
            if old[metric][0] != new[metric][0]:
                changed.append(MetricChange(configuration, metric, old[metric], new[metric]))
    old_verdicts, new_verdicts = _verdicts(Path(first)), _verdicts(Path(second))
    flipped = [
        f"{'/'.join(key[:3])} against {key[3]}, {key[4]}: "
        f"significant {old_verdicts[key]} -> {new_verdicts[key]}"
        for key in sorted(old_verdicts.keys() & new_verdicts.keys())
        if old_verdicts[key] != new_verdicts[key]
    ]
    return Comparison(
        added=sorted(after.keys() - before.keys()),
        removed=sorted(before.keys() - after.keys()),
        changed=changed,
        flipped=flipped,
    )
