"""The one table of answer metrics: name, per-answer function, aggregate and direction.

In the manner of the retrieval metrics (:mod:`rag.evaluation.metric_registry`):
every answer table reads this registry, so a metric added here appears in all
of them, and none is computed in one table and forgotten in another:

- the offline answers' summary (results/answers_summary.csv,
  :func:`rag.measuring.offline_tables.summarize_answers`), per question group;
- the language models' summary (results/llm_answers_summary.csv,
  :func:`rag.measuring.llm_tables.summarize_llm_answers`), per setup;
- the paired tests of every retrieval setting against the closed book
  (results/llm_closed_book.csv, :func:`rag.measuring.llm_tables.closed_book_comparisons`),
  for the metrics marked ``tested``.

A metric reads one answer at a time through the *verdict columns* every
table's answers are put into first (:data:`VERDICT_COLUMNS`;
:func:`rag.measuring.offline_tables.offline_verdicts`,
:func:`rag.measuring.llm_tables.llm_verdicts`), so it is written once for the
extractive generator, the reader and the language models alike. Its function
gives each answer a number (1.0 or 0.0 for a yes-or-no metric), or NaN where
the metric does not apply to that answer (``faithful`` to an abstention):
the table's value is the ``aggregate`` over the answers it applies to, with
the seeded percentile bootstrap interval of the mean
(:func:`rag.evaluation.statistics.bootstrap_interval`) in ``*_low`` and
``*_high``. The closed-book tests compare the values of every question, NaN
counting as 0 (a refusal is not a wrong answer).

Adding a metric is one entry here (docs/configuration.md, "Adding an answer
metric"); the answers helper's judge verdicts come in the same way, with a
verdict column of their own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag.evaluation.statistics import bootstrap_interval

# The columns a metric may read, one row per answer; every table's answers are put into them.
VERDICT_COLUMNS: dict[str, str] = {
    "answerable": "the question has an answer in the corpus",
    "answered": "an answer was given (not an abstention)",
    "judged": "its correctness can be decided (a reference exists, or the offline quote check)",
    "correct": "judged correct (offline: quotes labelled evidence; llm: the reference answer's content)",
    "faithful": "the citation check passed (NA for an abstention)",
    "responsive": "a value of the question's expected type is there (NA for an abstention)",
    "from_memory": "the reference's content is in no source of the prompt (NA when not known)",
    "answer": "the answer's text (the abstention text for an abstention)",
}

# The tables a metric can appear in: the offline answers' summary and the language models'.
OFFLINE, LLM = "answers", "llm"
AnswerFunction = Callable[[pd.DataFrame], pd.Series]


@dataclass(frozen=True)
class AnswerMetric:
    """One answer metric: what it gives each answer, how answers add up and which way is better.

    ``value(verdicts) -> Series``: per answer, a number or NaN where the
    metric does not apply. ``aggregate``: the table's value from the values
    that apply (the bootstrap interval is always the mean's). ``tested``:
    compared with the closed book by paired tests. ``tables``: where it has
    a column (:data:`OFFLINE`, :data:`LLM`), named ``column`` (default
    ``{name}_share``) with its ``_low`` and ``_high``.
    """

    name: str
    label: str
    value: AnswerFunction
    higher_is_better: bool = True
    aggregate: Callable[[np.ndarray], float] = np.mean
    tested: bool = False
    tables: tuple[str, ...] = (OFFLINE, LLM)
    column: str | None = None

    @property
    def share_column(self) -> str:
        return self.column or f"{self.name}_share"


def _flag(verdicts: pd.DataFrame, column: str) -> pd.Series:
    """A verdict column as floats, NA as 0."""
    return verdicts[column].fillna(False).astype(bool).astype(float)


def _correct(verdicts: pd.DataFrame) -> pd.Series:
    return _flag(verdicts, "correct").where(verdicts["judged"].astype(bool))


def _wrong(verdicts: pd.DataFrame) -> pd.Series:
    wrong = verdicts["answered"].astype(bool) & ~verdicts["correct"].fillna(False).astype(bool)
    return wrong.astype(float).where(verdicts["judged"].astype(bool))


def _abstained(verdicts: pd.DataFrame) -> pd.Series:
    return (~verdicts["answered"].astype(bool)).astype(float).where(verdicts["judged"].astype(bool))


def _refused(verdicts: pd.DataFrame) -> pd.Series:
    return (~verdicts["answered"].astype(bool)).astype(float).where(~verdicts["answerable"].astype(bool))


def _of_answers(column: str) -> AnswerFunction:
    """A verdict over the answers given (NaN for an abstention)."""
    return lambda verdicts: _flag(verdicts, column).where(verdicts["answered"].astype(bool))


# A citation marker such as " [1]" or "[2, 3]", which is not a word of the answer.
_CITATION = re.compile(r"\s*\[[\d,\s]+\]")


def _answer_words(verdicts: pd.DataFrame) -> pd.Series:
    """The words of each answer given, its citation markers left out (NaN for an abstention)."""
    words = verdicts["answer"].map(lambda text: float(len(_CITATION.sub("", str(text)).split())))
    return words.where(verdicts["answered"].astype(bool))


def _from_memory(verdicts: pd.DataFrame) -> pd.Series:
    return _flag(verdicts, "from_memory").where(verdicts["correct"].fillna(False).astype(bool))


# Registry order is column order: the shares of llm_answers_summary.csv, and the
# order of the closed-book tests.
REGISTRY: list[AnswerMetric] = [
    AnswerMetric("correct", "correct", _correct, tested=True),
    AnswerMetric("wrong", "wrong", _wrong, higher_is_better=False, tested=True),
    AnswerMetric("abstained", "abstained", _abstained, higher_is_better=False, tested=True),
    # Over the unanswerable questions: refusing them is right.
    AnswerMetric("refused", "refused", _refused, tested=True, tables=(LLM,)),
    # The offline summary shows the citation check as citation_passed and citation_pass_rate.
    AnswerMetric("faithful", "faithful", _of_answers("faithful"), tables=(LLM,)),
    AnswerMetric("responsive", "responsive", _of_answers("responsive")),
    # Over the correct answers: the sources could not have given it.
    AnswerMetric(
        "correct_from_memory", "from memory", _from_memory, higher_is_better=False, tested=True, tables=(LLM,)
    ),
    # What a user reads: the spec asks for one short sentence, so fewer words (at the same
    # correct share) are better; a mean over the answers given, not a share.
    AnswerMetric("answer_words", "words", _answer_words, higher_is_better=False, column="answer_words"),
]


def metrics(table: str | None = None) -> list[AnswerMetric]:
    """The registry as it stands (read at call time, so a test can extend it), or one table's metrics."""
    return [metric for metric in REGISTRY if table is None or table in metric.tables]


def metric(name: str) -> AnswerMetric:
    """The registry entry called ``name``; one clear line when there is none."""
    for entry in REGISTRY:
        if entry.name == name:
            return entry
    raise ValueError(f"unknown answer metric {name!r}; expected one of {', '.join(names())}")


def names() -> list[str]:
    """Every answer metric's name, in registry order."""
    return [entry.name for entry in REGISTRY]


def tested_metrics() -> list[AnswerMetric]:
    """The metrics every retrieval setting is compared with the closed book on."""
    return [entry for entry in REGISTRY if entry.tested]


def aggregate_with_interval(
    entry: AnswerMetric, verdicts: pd.DataFrame, column: str | None = None
) -> dict[str, float]:
    """The metric over the answers it applies to, with its bootstrap interval (NaN over none)."""
    values = entry.value(verdicts).dropna().to_numpy(dtype=np.float64)
    name = column or entry.share_column
    low, high = bootstrap_interval(values)
    point = float(entry.aggregate(values)) if values.size else float("nan")
    return {name: point, f"{name}_low": low, f"{name}_high": high}


def aggregates(
    verdicts: pd.DataFrame, entries: Sequence[AnswerMetric], renamed: dict[str, str] | None = None
) -> dict[str, float]:
    """Each metric's column and interval, in order; ``renamed`` maps a name to a published column."""
    row: dict[str, float] = {}
    for entry in entries:
        row |= aggregate_with_interval(entry, verdicts, (renamed or {}).get(entry.name))
    return row


def tested_values(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per answer, the value of every tested metric over every question (NaN as 0): what the paired
    tests against the closed book compare."""
    return pd.DataFrame(
        {entry.name: entry.value(verdicts).fillna(0.0) for entry in tested_metrics()}, index=verdicts.index
    )
