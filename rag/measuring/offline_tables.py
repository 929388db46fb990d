"""The offline readers' answers, measured: counts per question group, and the abstention trade-off.

The answer files of the extractive generator and the readers
(:mod:`rag.answering.answers`) hold, per question, the best sentence, whether
it was answered and whether it quotes labelled evidence. This module counts
them per question group (results/answers_summary.csv, through the answer
metric registry :mod:`rag.measuring.answer_metrics`) and, for every
threshold of a grid, what the reader would answer, get right and refuse
(results/abstention_tradeoff.csv).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from rag.answering.answers import ALL, ANSWERABLE, GROUPS, MULTI_DOCUMENT, SINGLE_DOCUMENT, UNANSWERABLE
from rag.measuring.answer_metrics import OFFLINE, aggregates, metric, metrics


def members_of(frame: pd.DataFrame, group: str) -> pd.DataFrame:
    if group == ALL:
        return frame
    if group == ANSWERABLE:
        return frame[frame["answerable"].astype(bool)]
    return frame[frame["group"] == group]


def _mean(values: pd.Series) -> float:
    values = values.dropna()
    return float(values.mean()) if len(values) else math.nan


# The offline summary's published column of a registry metric (rag.measuring.answer_metrics).
OFFLINE_COLUMNS = {"responsive": "responsive_rate"}


# The registry's metrics the offline summary places among its own columns; any other follows them.
OFFLINE_PLACED = ("correct", "wrong", "abstained", "responsive")


def offline_verdicts(frame: pd.DataFrame, correct_column: str, faithful_column: str) -> pd.DataFrame:
    """The answers in the registry's verdict columns (:data:`rag.measuring.answer_metrics.VERDICT_COLUMNS`).

    Every offline answer is judged (an answer to an unanswerable question is
    wrong); ``correct_column`` holds the verdict and ``faithful_column`` the
    citation check. Whether a correct quote came from memory is not known
    offline; ``answer`` is there when the frame has the answers' text.
    """
    return pd.DataFrame(
        {
            "answerable": frame["answerable"].astype(bool),
            "answered": frame["answered"].astype(bool),
            "judged": True,
            "correct": frame[correct_column].astype(bool),
            "faithful": frame[faithful_column],
            "responsive": frame["responsive"],
            "from_memory": pd.NA,
        },
        index=frame.index,
    ).assign(**({"answer": frame["answer"]} if "answer" in frame else {}))


def group_outcomes(
    frame: pd.DataFrame,
    keys: Mapping[str, object],
    correct_column: str,
    faithful_column: str,
    prompts: bool,
) -> list[dict]:
    """Rows per question group of ``frame``: what was answered, correct, wrong and refused.

    One count behind both answer tables, so that the pipeline's answers
    (:func:`summarize_answers`) and ``rag ask``'s held-out ones
    (:func:`rag.ask.measure.ask_summary`) are counted alike: ``correct_column`` holds the
    verdict (an answer is wrong when answered and not correct), and
    ``faithful_column`` the citation check, counted under its own name.
    ``prompts`` adds what only the pipeline's records hold: unanswerable
    questions refused and answered, the evidence that reached the prompt,
    the citation pass rate and the prompt sizes. Each row starts with
    ``keys``; shares come with percentile bootstrap intervals over the
    group's questions (``*_low``, ``*_high``). Empty groups are left out.
    """
    rows = []
    for group in GROUPS:
        members = members_of(frame, group)
        if members.empty:
            continue
        answered = members["answered"].astype(bool)
        correct = members[correct_column].astype(bool)
        wrong = answered & ~correct
        responsive = members.loc[answered, "responsive"].astype(bool)
        row = {
            **keys,
            "group": group,
            "questions": len(members),
            "answered": int(answered.sum()),
            "correct": int(correct.sum()),
            "wrong": int(wrong.sum()),
            "abstained": int((~answered).sum()),
        }
        if prompts:
            answerable = members["answerable"].astype(bool)
            pieces_in = members["pieces_in_prompt"]
            row |= {
                "refused_unanswerable": int((~answered & ~answerable).sum()),
                "answered_unanswerable": int((answered & ~answerable).sum()),
                "evidence_in_prompt": int((answerable & (pieces_in > 0)).sum()),
                "all_evidence_in_prompt": int((answerable & (pieces_in == members["evidence_pieces"])).sum()),
            }
        verdicts = offline_verdicts(members, correct_column, faithful_column)
        row |= aggregates(verdicts, [metric(name) for name in ("correct", "wrong", "abstained")])
        row[faithful_column] = int(members[faithful_column].fillna(False).astype(bool).sum())
        if prompts:
            row["citation_pass_rate"] = (
                float(members.loc[answered, faithful_column].astype(bool).mean())
                if answered.any()
                else math.nan
            )
        row["responsive"] = int(responsive.sum())
        row |= aggregates(verdicts, [metric("responsive")], OFFLINE_COLUMNS)
        if prompts:
            row |= {
                "mean_prompt_tokens": _mean(members["prompt_tokens"].astype("float64")),
                "mean_prompt_tokens_cl100k": _mean(members["prompt_tokens_cl100k"].astype("float64")),
            }
        later = [entry for entry in metrics(OFFLINE) if entry.name not in OFFLINE_PLACED]
        row |= aggregates(verdicts, later, OFFLINE_COLUMNS)
        rows.append(row)
    return rows


def summarize_answers(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Counts per ``keys`` and question group: what was answered, correct, wrong and refused.

    correct counts answers that quote labelled evidence and wrong every
    other answer (an answer to an unanswerable question is wrong);
    evidence_in_prompt counts answerable questions with at least one piece
    in some source (the ceiling for correct), all_evidence_in_prompt those
    with every piece; citation_pass_rate (the faithful rate) and
    responsive_rate are over answered questions. Shares come with 95 %
    percentile bootstrap intervals over the group's questions (``*_low``,
    ``*_high``). Empty groups are left out.
    """
    rows = []
    for values, rows_of_key in frame.groupby(list(keys), sort=True):
        key = dict(zip(keys, values, strict=True))
        rows += group_outcomes(rows_of_key, key, "quotes_evidence", "citation_passed", prompts=True)
    return pd.DataFrame(rows)


ABSTENTION_GROUPS: tuple[str, ...] = (ANSWERABLE, SINGLE_DOCUMENT, MULTI_DOCUMENT, UNANSWERABLE)


def abstention_tradeoff_table(
    frame: pd.DataFrame, thresholds: Sequence[float], keys: Sequence[str]
) -> pd.DataFrame:
    """What each threshold answers, gets right and refuses, per ``keys`` and question group.

    A question is answered at threshold t when its prompt has a best sentence
    whose score (the extractive generator's coverage) is at least t, exactly
    the generator's rule; the answer is that sentence whatever t is, so one
    run serves every threshold. For the
    unanswerable group, ``abstained`` is the number of refusals the threshold
    gets right.
    """
    if not len(thresholds):
        raise ValueError("give at least one threshold")
    rows = []
    for values, rows_of_key in frame.groupby(list(keys), sort=True):
        for threshold in sorted(thresholds):
            for group in ABSTENTION_GROUPS:
                members = members_of(rows_of_key, group)
                if members.empty:
                    continue
                answered = members["score"].to_numpy(dtype=float) >= threshold  # NaN: never answered
                quotes = members["best_quoted_piece"].notna().to_numpy()
                rows.append(
                    {
                        **dict(zip(keys, values, strict=True)),
                        "threshold": float(threshold),
                        "group": group,
                        "questions": len(members),
                        "answered": int(answered.sum()),
                        "correct": int((answered & quotes).sum()),
                        "abstained": int((~answered).sum()),
                    }
                )
    return pd.DataFrame(rows)
