"""Judges of answers, measured against hand labels: the deterministic one and language models.

Two questions are asked of every labelled answer (resources/answer_labels/):

- *correct*: is the answer right, given the question and its reference
  answer? The hand labels say correct, partly correct or wrong; a judge is
  measured on "correct" against the rest (partly correct is not correct).
- *supported*: do the sources the answer cites hold what it says? An answer
  that cites nothing is not supported, by every judge and every label, so
  only answers that cite are asked.

The deterministic judge answers the first with
:func:`rag.answering.correctness.judge_answer` and the second with the
citation check (:func:`rag.answering.verification.check_answer`). A model
judge is a ``judge`` entry of config['generators'] (rag/kinds.py): its
prompts are the entry's, it is asked through the one client and its replies
are cached like every other request. Its reply is read by one documented
rule (:func:`read_verdict`): the first verdict word it holds.

:func:`calibration_table` compares any judge's verdicts with the labels:
agreement, Cohen's kappa and the confusion counts, each share with a
seeded percentile-bootstrap interval over the labelled answers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from rag.answering.llm_answers import EndpointEntry, endpoint_entry_fields
from rag.models.client import Completion, Sampling

if TYPE_CHECKING:
    from rag.models.gate import Gate

# The hand labels and the chunks their cited chunk ids name.
LABELS_PATH = "resources/answer_labels/labels.csv"
LABELLED_CORPUS = "solar_system"
LABELLED_CHUNKER = "sentences100"
# The hand labels' values.
CORRECTNESS_LABELS = ("correct", "partly", "wrong")
SUPPORT_LABELS = ("yes", "no")
LABEL_COLUMNS = (
    "item",
    "table",
    "generator",
    "questions",
    "chunker",
    "retriever",
    "question_id",
    "question",
    "reference",
    "answer",
    "cited",
    "cited_chunks",
    "correctness",
    "supported",
    "reason",
)
# What a judge's verdict on one answer is called in the calibration table.
CORRECT_TASK = "correct"
SUPPORTED_TASK = "supported"
UNREAD = "unread"  # a model reply without a verdict word: counted as a "no"
DETERMINISTIC = "deterministic"

_VERDICT = re.compile(r"\b(yes|no|correct|incorrect|wrong|supported|unsupported)\b", re.IGNORECASE)
_YES = frozenset({"yes", "correct", "supported"})

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
LEVEL = 0.95


class LabelError(ValueError):
    """The hand-label file is not usable; one line naming the file, row and column."""


def read_labels(path) -> pd.DataFrame:
    """The hand labels, checked: every column there, values from the label sets, items unique."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError, UnicodeDecodeError) as error:
        raise LabelError(f"{path}: not a readable CSV file ({error})") from None
    missing = [column for column in LABEL_COLUMNS if column not in frame.columns]
    if missing:
        raise LabelError(f"{path}: missing column {missing[0]!r}")
    for column, allowed in (("correctness", CORRECTNESS_LABELS), ("supported", SUPPORT_LABELS)):
        bad = frame.index[~frame[column].isin(allowed)]
        if len(bad):
            row = int(bad[0]) + 2
            raise LabelError(
                f"{path}: line {row}: {column} {frame.at[bad[0], column]!r} is not one of {allowed}"
            )
    duplicated = frame.index[frame["item"].duplicated()]
    if len(duplicated):
        raise LabelError(
            f"{path}: line {int(duplicated[0]) + 2}: item {frame.at[duplicated[0], 'item']!r} repeats"
        )
    return frame


def read_verdict(reply: str) -> str:
    """A judge's reply as ``yes``, ``no`` or :data:`UNREAD`: its first verdict word.

    "yes", "correct" and "supported" are yes; "no", "incorrect", "wrong" and
    "unsupported" are no; a reply with none of them is unread.
    """
    match = _VERDICT.search(reply or "")
    if match is None:
        return UNREAD
    return "yes" if match.group(1).lower() in _YES else "no"


# --------------------------------------------------------------------------
# The judges
# --------------------------------------------------------------------------


def deterministic_verdicts(labels: pd.DataFrame, chunk_texts: Mapping[str, str]) -> pd.DataFrame:
    """The deterministic judge on every labelled answer: the correctness judge and the citation check."""
    from rag.answering.correctness import judge_answer
    from rag.answering.llm_answers import is_abstention
    from rag.answering.verification import check_answer

    rows = []
    for row in labels.itertuples(index=False):
        abstained = is_abstention(row.answer)
        outcome = judge_answer(row.answer, row.reference or None, True, abstained)
        sources = _cited_sources(row, chunk_texts)
        supported = bool(sources) and not abstained and check_answer(row.answer, sources).supported
        rows.append(
            {"item": row.item, CORRECT_TASK: _yes_no(outcome.correct), SUPPORTED_TASK: _yes_no(supported)}
        )
    return pd.DataFrame(rows, columns=["item", CORRECT_TASK, SUPPORTED_TASK])


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"


def _cited_sources(row, chunk_texts: Mapping[str, str]) -> dict[int, str]:
    """The cited source numbers and their chunk texts, as the answer's prompt numbered them."""
    numbers = [int(n) for n in str(row.cited).split() if n.isdigit()]
    chunks = str(row.cited_chunks).split()
    return {number: chunk_texts.get(chunk, "") for number, chunk in zip(numbers, chunks, strict=False)}


@dataclass(frozen=True)
class ModelJudge(EndpointEntry):
    """A ``judge`` entry of config['generators']: an endpoint, its sampling and the two prompts."""

    name: str
    base_url: str
    model: str
    sampling: Sampling
    system: str
    correct_user: str
    supported_user: str
    key_variable: str | None = None
    concurrency: int = 1
    timeout_seconds: float = 120.0

    # A judge replies in plain text (rag.answering.llm_answers.complete_with_cache reads this).
    structured = False


# The placeholders each judge prompt must hold (and may hold: no others).
JUDGE_PLACEHOLDERS = {
    "system": frozenset(),
    "correct_user": frozenset({"question", "reference", "answer"}),
    "supported_user": frozenset({"sources", "answer"}),
}


def judge_entry_problem(entry: Mapping) -> tuple[str, str] | None:
    """(key, why) for the first judge prompt that is not a usable template, or None."""
    import string

    for key, wanted in JUDGE_PLACEHOLDERS.items():
        try:
            names = {field for _, field, _, _ in string.Formatter().parse(entry[key]) if field is not None}
        except ValueError as error:
            return key, f"not a template ({error}); write a literal brace as {{{{ or }}}}"
        if names != wanted:
            return key, f"must hold exactly the placeholders {sorted(wanted)}, holds {sorted(names)}"
    return None


def judge_from_entry(name: str, entry: Mapping) -> ModelJudge:
    """A :class:`ModelJudge` from a canonical ``judge`` entry."""
    return ModelJudge(
        name=name,
        system=entry["system"],
        correct_user=entry["correct_user"],
        supported_user=entry["supported_user"],
        **endpoint_entry_fields(entry),
    )


def judge_conversations(
    labels: pd.DataFrame, judge: ModelJudge, chunk_texts: Mapping[str, str], gate: Gate | None = None
) -> tuple[list[list[dict]], list[tuple[str, str]]]:
    """The conversations and their (item, task): correctness of every answer, support of citing ones.

    ``gate`` (rag.models.gate, opened for the caller of the judged answers)
    admits the cited chunks of every answer before any conversation is built.
    """
    from rag.answering.prompts import neutralize

    if gate is not None:
        for row in labels.itertuples(index=False):
            gate.admit(str(row.cited_chunks).split())
    conversations, keys = [], []
    for row in labels.itertuples(index=False):
        asked = {
            "question": neutralize(row.question),
            "reference": neutralize(row.reference),
            "answer": neutralize(row.answer),
        }
        user = judge.correct_user.format(**asked)
        conversations.append([{"role": "system", "content": judge.system}, {"role": "user", "content": user}])
        keys.append((row.item, CORRECT_TASK))
        sources = _cited_sources(row, chunk_texts)
        if sources:
            shown = "\n".join(f"[{number}] {neutralize(text)}" for number, text in sources.items())
            user = judge.supported_user.format(answer=asked["answer"], sources=shown)
            conversations.append(
                [{"role": "system", "content": judge.system}, {"role": "user", "content": user}]
            )
            keys.append((row.item, SUPPORTED_TASK))
    return conversations, keys


def model_verdicts(
    labels: pd.DataFrame,
    judge: ModelJudge,
    chunk_texts: Mapping[str, str],
    complete: Callable[[list[list[dict]]], list[Completion]],
    gate: Gate | None = None,
) -> pd.DataFrame:
    """A model judge's verdicts on every labelled answer; an answer citing nothing is not supported."""
    conversations, keys = judge_conversations(labels, judge, chunk_texts, gate)
    completions = complete(conversations)
    if len(completions) != len(keys):
        raise ValueError(f"{len(completions)} replies for {len(keys)} questions to the judge")
    verdicts = {item: {"item": item, CORRECT_TASK: UNREAD, SUPPORTED_TASK: "no"} for item in labels["item"]}
    for (item, task), completion in zip(keys, completions, strict=True):
        verdicts[item][task] = read_verdict(completion.text)
    return pd.DataFrame(list(verdicts.values()), columns=["item", CORRECT_TASK, SUPPORTED_TASK])


# --------------------------------------------------------------------------
# Calibration: a judge against the hand labels
# --------------------------------------------------------------------------


def cohen_kappa(first: Sequence[bool], second: Sequence[bool]) -> float:
    """Cohen's kappa of two yes/no raters: (observed - chance agreement) / (1 - chance); NaN if undefined."""
    a = np.asarray(first, dtype=bool)
    b = np.asarray(second, dtype=bool)
    if a.size == 0:
        return math.nan
    observed = float(np.mean(a == b))
    chance = float(a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean()))
    if chance >= 1.0:
        return math.nan if observed < 1.0 else 0.0
    return (observed - chance) / (1.0 - chance)


def _interval(statistic: Callable[[np.ndarray, np.ndarray], float], a: np.ndarray, b: np.ndarray):
    """Percentile bootstrap interval of ``statistic`` over the labelled answers (seeded)."""
    if a.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    draws = rng.integers(0, a.size, size=(BOOTSTRAP_RESAMPLES, a.size))
    values = np.array([statistic(a[draw], b[draw]) for draw in draws], dtype=np.float64)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return math.nan, math.nan
    tail = (1.0 - LEVEL) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return _rounded(low), _rounded(high)


def _rounded(value: float) -> float:
    """Six decimals, and never a negative zero (so tables print 0.000000, not -0.000000)."""
    return round(float(value), 6) + 0.0


def _agreement(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(a == b))


def calibration_rows(labels: pd.DataFrame, verdicts: pd.DataFrame, judge: str) -> list[dict]:
    """One row per task (correct, supported) and answer generator group ("all" and each generator)."""
    renamed = verdicts.rename(columns={CORRECT_TASK: "judge_correct", SUPPORTED_TASK: "judge_supported"})
    merged = labels.merge(renamed, on="item", how="inner")
    if len(merged) != len(labels):
        raise ValueError(f"judge {judge!r}: verdicts for {len(merged)} of {len(labels)} labelled answers")
    truth = {
        CORRECT_TASK: merged["correctness"] == "correct",
        SUPPORTED_TASK: merged["supported"] == "yes",
    }
    said = {CORRECT_TASK: merged["judge_correct"], SUPPORTED_TASK: merged["judge_supported"]}
    rows = []
    groups = [("all", merged.index)] + [
        (name, of_generator.index) for name, of_generator in merged.groupby("generator", sort=True)
    ]
    for task in (CORRECT_TASK, SUPPORTED_TASK):
        for group, index in groups:
            labelled = truth[task].loc[index].to_numpy(dtype=bool)
            verdict = said[task].loc[index]
            judged = (verdict == "yes").to_numpy(dtype=bool)
            kappa_low, kappa_high = _interval(cohen_kappa, labelled, judged)
            agree_low, agree_high = _interval(_agreement, labelled, judged)
            rows.append(
                {
                    "judge": judge,
                    "task": task,
                    "answers_of": group,
                    "labelled": int(labelled.size),
                    "labelled_yes": int(labelled.sum()),
                    "judge_yes": int(judged.sum()),
                    "unread": int((verdict == UNREAD).sum()),
                    "both_yes": int((labelled & judged).sum()),
                    "judge_yes_label_no": int((~labelled & judged).sum()),
                    "judge_no_label_yes": int((labelled & ~judged).sum()),
                    "both_no": int((~labelled & ~judged).sum()),
                    "agreement": _rounded(_agreement(labelled, judged)),
                    "agreement_low": agree_low,
                    "agreement_high": agree_high,
                    "kappa": _rounded(cohen_kappa(labelled, judged)),
                    "kappa_low": kappa_low,
                    "kappa_high": kappa_high,
                }
            )
    return rows


CALIBRATION_COLUMNS = [
    "judge",
    "task",
    "answers_of",
    "labelled",
    "labelled_yes",
    "judge_yes",
    "unread",
    "both_yes",
    "judge_yes_label_no",
    "judge_no_label_yes",
    "both_no",
    "agreement",
    "agreement_low",
    "agreement_high",
    "kappa",
    "kappa_low",
    "kappa_high",
]


def calibration_table(labels: pd.DataFrame, verdicts_by_judge: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """results/judge_calibration.csv: every judge against the hand labels, in judge name order."""
    rows = []
    for judge in sorted(verdicts_by_judge):
        rows += calibration_rows(labels, verdicts_by_judge[judge], judge)
    return pd.DataFrame(rows, columns=CALIBRATION_COLUMNS)
