"""A language model's answers, measured: correct, wrong, refused, from memory, against the closed book.

The answer files of the ``llm`` generator (one per corpus, question set,
generator, chunker and retriever; the closed book is chunker and retriever
``none``) hold each question's answer, the sources its prompt held and the
citation check's verdicts. This module judges those answers against the
labels' reference answers (:mod:`rag.measuring.correctness`) and reduces them
to the questions a user of a RAG pipeline asks first:

- how many answerable questions were answered correctly, wrongly, or not at
  all, and how many unanswerable ones were refused;
- how often the citation check passed (faithful) and a value of the expected
  type was there (responsive);
- how many correct answers the sources could not have given: the reference
  answer's content is in none of the prompt's source chunks, so the model
  answered from memory (every correct closed-book answer is such a one);
- tokens and seconds per answer;

each share with the pipeline's seeded bootstrap interval, and each retrieval
setting compared with the closed book on the same questions by the paired
randomization test of :mod:`rag.evaluation.significance`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from rag.evaluation.statistics import bootstrap_interval
from rag.kinds import CLOSED_BOOK
from rag.measuring.answer_metrics import LLM, aggregates, metrics, tested_metrics, tested_values
from rag.measuring.correctness import (
    ABSTAINED,
    ANSWERED_UNANSWERABLE,
    CORRECT,
    NOT_JUDGED,
    REFUSED,
    WRONG,
    content_in_text,
    judge_answer,
)

# One answer file's setup; the columns every row of every table starts with.
SETUP_KEYS: list[str] = ["corpus", "questions", "generator", "chunker", "retriever", "k"]
# The columns the answer files hold (written by the llm generator's rule).
ANSWER_FILE_COLUMNS: list[str] = [
    *SETUP_KEYS,
    "question_id",
    "type",
    "answerable",
    "reference_answer",
    "answer",
    "abstained",
    "cited_sources",
    "source_chunk_ids",
    "evidence_in_prompt",
    "faithful",
    "responsive",
    "reply_error",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
    "cached",
]
# Columns that time the machine or say where an answer came from, not what it is:
# rag.pipeline.reproduce skips them, and nothing is compared on them.
TIMING_COLUMNS = frozenset({"seconds", "cached", "seconds_per_answer", "cached_answers"})


def identifiers(value: object) -> list[str]:
    """A list cell of an answer file as strings: a list or array, or text separated by spaces (the
    llm generator's files) or ';' ('' is none)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, str):
        return [part for part in re.split(r"[;\s]+", value) if part]
    return [str(part) for part in value]


def check_answer_files(frame: pd.DataFrame, source: str) -> None:
    """One clear error naming the file and the missing column, instead of a KeyError later."""
    missing = [column for column in ANSWER_FILE_COLUMNS if column not in frame.columns]
    if missing:
        raise ValueError(
            f"{source}: answer file lacks column {missing[0]!r} (expected {ANSWER_FILE_COLUMNS})"
        )


def judge_llm_answers(frame: pd.DataFrame, chunk_texts: Mapping[str, str]) -> pd.DataFrame:
    """The answer rows with their judgement: outcome, and where the reference's content was.

    ``chunk_texts`` maps chunk ids to their text (the chunks of every
    chunker answered from). Added columns: ``outcome`` (one of
    :data:`rag.measuring.correctness.OUTCOMES`), ``correct``,
    ``reference_in_sources`` (the reference answer's content is in some
    source chunk of the prompt), ``reference_in_cited`` (in a source the
    answer cites), ``correct_from_memory`` (correct, yet not in any source)
    ``supported`` (correct and in a cited source: the label the citation
    check is measured against, :func:`citation_check_table`) and
    ``grounded`` (correct and in some source of the prompt, cited or not: the
    same label for a model that answers from its sources without citing them). A source chunk
    missing from ``chunk_texts`` is an error naming it: the judgement would
    otherwise silently call a sourced answer a remembered one.
    """
    rows = []
    for row in frame.itertuples(index=False):
        reference = row.reference_answer if isinstance(row.reference_answer, str) else None
        judged = judge_answer(str(row.answer), reference, bool(row.answerable), bool(row.abstained))
        sources = identifiers(row.source_chunk_ids)
        unknown = [chunk for chunk in sources if chunk not in chunk_texts]
        if unknown:
            raise ValueError(
                f"question {row.question_id!r}: source chunk {unknown[0]!r} is not in the chunks"
            )
        cited_numbers = [int(float(number)) for number in identifiers(row.cited_sources)]
        cited = [sources[number - 1] for number in cited_numbers if 1 <= number <= len(sources)]
        in_sources = reference is not None and content_in_text(
            "\n".join(chunk_texts[chunk] for chunk in sources), reference
        )
        in_cited = reference is not None and content_in_text(
            "\n".join(chunk_texts[chunk] for chunk in cited), reference
        )
        rows.append(
            {
                "outcome": judged.outcome,
                "correct": judged.correct,
                "reference_in_sources": in_sources,
                "reference_in_cited": in_cited,
                "correct_from_memory": judged.correct and not in_sources,
                "supported": judged.correct and in_cited,
                "grounded": judged.correct and in_sources,
            }
        )
    judged_columns = pd.DataFrame(rows, index=frame.index, columns=list(JUDGED_COLUMNS))
    return pd.concat([frame, judged_columns], axis=1)


JUDGED_COLUMNS = (
    "outcome",
    "correct",
    "reference_in_sources",
    "reference_in_cited",
    "correct_from_memory",
    "supported",
    "grounded",
)


def _share(name: str, outcomes: np.ndarray) -> dict[str, float]:
    """A share over ``outcomes`` with its bootstrap interval (NaN over none)."""
    low, high = bootstrap_interval(outcomes)
    mean = float(outcomes.mean()) if outcomes.size else math.nan
    return {name: mean, f"{name}_low": low, f"{name}_high": high}


# The one denominator of each outcome, in both answer tables (summary and closed book):
# a property of the question, never of the answer, so paired tests compare the same questions.
WITH_REFERENCE = "answerable questions with a reference answer"
UNANSWERABLE = "unanswerable questions"
EVERY_QUESTION = "every question of the set"
DENOMINATORS: dict[str, str] = {
    "correct": WITH_REFERENCE,
    "wrong": WITH_REFERENCE,
    "abstained": WITH_REFERENCE,
    "refused": UNANSWERABLE,
    "correct_from_memory": WITH_REFERENCE,
}


def with_reference(frame: pd.DataFrame) -> pd.Series:
    """Which rows are answerable questions with a reference answer (:data:`WITH_REFERENCE`).

    A frame without the ``reference_answer`` column (answers judged
    elsewhere) is read from its outcomes: correct, wrong or abstained.
    """
    if "reference_answer" not in frame.columns:
        return frame["outcome"].isin([CORRECT, WRONG, ABSTAINED])
    reference = frame["reference_answer"].fillna("").astype(str).str.strip() != ""
    return frame["answerable"].astype(bool) & reference


def in_denominator(frame: pd.DataFrame, measure: str) -> pd.Series:
    """The rows whose question counts in ``measure``'s denominator (:data:`DENOMINATORS`)."""
    denominator = DENOMINATORS.get(measure, EVERY_QUESTION)
    if denominator == UNANSWERABLE:
        return ~frame["answerable"].astype(bool)
    if denominator == EVERY_QUESTION:
        return pd.Series(True, index=frame.index)
    return with_reference(frame)


def _flags(frame: pd.DataFrame, column: str) -> np.ndarray:
    return frame[column].fillna(False).astype(bool).to_numpy()


def _reply_errors(setup: pd.DataFrame) -> int:
    """How many replies broke their schema; answer files hold the column (check_answer_files)."""
    if "reply_error" not in setup.columns:
        return 0
    return int(setup["reply_error"].map(lambda value: isinstance(value, str) and value != "").sum())


def summarize_llm_answers(judged: pd.DataFrame) -> pd.DataFrame:
    """One row per setup (:data:`SETUP_KEYS`): counts, shares with intervals, tokens and seconds.

    Shares are over the questions they can apply to (:data:`DENOMINATORS`,
    the same in the closed-book table): correct, wrong and abstained over the
    answerable questions with a reference answer (answers to those without
    one are counted in ``not_judged``), refused over the unanswerable ones,
    faithful and responsive over the answers given, and
    ``correct_from_memory_share`` over the correct answers.
    """
    rows = []
    for values, setup in judged.groupby(SETUP_KEYS, sort=True, dropna=False):
        outcome = setup["outcome"]
        unanswerable = setup[~setup["answerable"].astype(bool)]
        row = dict(zip(SETUP_KEYS, values, strict=True))
        row |= {
            "question_count": len(setup),
            "answerable": int(setup["answerable"].astype(bool).sum()),
            "unanswerable": len(unanswerable),
            "correct": int((outcome == CORRECT).sum()),
            "wrong": int((outcome == WRONG).sum()),
            "abstained": int((outcome == ABSTAINED).sum()),
            "not_judged": int((outcome == NOT_JUDGED).sum()),
            "refused": int((outcome == REFUSED).sum()),
            "answered_unanswerable": int((outcome == ANSWERED_UNANSWERABLE).sum()),
            "correct_from_memory": int(_flags(setup, "correct_from_memory").sum()),
            "evidence_in_prompt": int(_flags(setup, "evidence_in_prompt").sum()),
            # Replies that break their schema (rag.answering.llm_answers.structured_reply): errors.
            "reply_errors": _reply_errors(setup),
        }
        row |= aggregates(llm_verdicts(setup), metrics(LLM))
        row |= {
            "mean_prompt_tokens": float(setup["prompt_tokens"].astype("float64").mean()),
            "mean_completion_tokens": float(setup["completion_tokens"].astype("float64").mean()),
            "seconds_per_answer": float(setup["seconds"].astype("float64").mean()),
            "cached_answers": int(_flags(setup, "cached").sum()),
        }
        rows.append(row)
    return pd.DataFrame(rows)


# The hand labels' outcomes of the labelled answers of each setup, beside the judge's
# (resources/answer_labels/labels.csv and claim_answers.csv): correct, partly and wrong counted
# apart, and how many answers the deterministic judge calls correct the labels call partly or wrong.
LABEL_OUTCOME_COLUMNS = (
    "labelled",
    "labelled_correct",
    "labelled_partly",
    "labelled_wrong",
    "correct_labelled_partly",
    "correct_labelled_wrong",
)
_LABEL_KEYS = ["generator", "questions", "chunker", "retriever", "question_id"]


def answer_labels(*label_frames: pd.DataFrame | None) -> pd.DataFrame | None:
    """The answer-level correctness labels of every label file, one per labelled answer.

    Each frame holds the label keys, ``answer`` and ``correctness`` (the
    judges' labels.csv, the claim labels' claim_answers.csv). An answer
    labelled in more than one file keeps the label of the last file given
    (the claim-level reading, which read it claim by claim); None without any.
    """
    frames = [frame[[*_LABEL_KEYS, "answer", "correctness"]] for frame in label_frames if frame is not None]
    if not frames:
        return None
    labels = pd.concat(frames, ignore_index=True)
    text = labels["answer"].astype(str).str.strip()
    keep = ~labels.assign(_text=text).duplicated([*_LABEL_KEYS, "_text"], keep="last")
    return labels[keep].reset_index(drop=True)


def with_label_outcomes(
    summary: pd.DataFrame, judged: pd.DataFrame, labels: pd.DataFrame | None, corpus: str
) -> pd.DataFrame:
    """``summary`` with :data:`LABEL_OUTCOME_COLUMNS` from the hand labels of ``corpus``'s answers.

    A label counts for an answer of the table when it names the same
    generator, question file, chunker, retriever and question and holds the
    same answer text (a regenerated answer is not the labelled one). "Partly"
    is never "correct": the summary's ``correct`` is the deterministic
    judge's, and ``correct_labelled_partly`` says how many of those the
    labels call partly correct. Setups without labels count 0.
    """
    counts = pd.DataFrame(0, index=summary.index, columns=list(LABEL_OUTCOME_COLUMNS))
    if labels is not None and len(labels):
        mine = judged[judged["corpus"] == corpus]
        merged = mine.merge(
            labels[[*_LABEL_KEYS, "answer", "correctness"]].rename(columns={"answer": "labelled_answer"}),
            on=_LABEL_KEYS,
            how="inner",
        )
        same = merged["answer"].astype(str).str.strip() == merged["labelled_answer"].astype(str).str.strip()
        merged = merged[same]
        keys = summary[SETUP_KEYS].astype(str).agg("/".join, axis=1)
        for setup, rows in merged.groupby(SETUP_KEYS, sort=True):
            where = keys == "/".join(map(str, setup))
            label = rows["correctness"]
            judged_correct = rows["outcome"] == CORRECT
            counts.loc[where, list(LABEL_OUTCOME_COLUMNS)] = [
                len(rows),
                int((label == "correct").sum()),
                int((label == "partly").sum()),
                int((label == "wrong").sum()),
                int((judged_correct & (label == "partly")).sum()),
                int((judged_correct & (label == "wrong")).sum()),
            ]
    return pd.concat([summary, counts.astype("int64")], axis=1)


def llm_verdicts(judged: pd.DataFrame) -> pd.DataFrame:
    """The judged answers in the registry's verdict columns (rag.measuring.answer_metrics).

    Judged are the answerable questions with a reference answer (correct,
    wrong or abstained); the unanswerable ones are refused or answered.
    """
    outcome = judged["outcome"]
    return pd.DataFrame(
        {
            "answerable": judged["answerable"].astype(bool),
            "answered": ~judged["abstained"].astype(bool),
            # Question-level, the one denominator of both tables (:data:`WITH_REFERENCE`).
            "judged": with_reference(judged),
            "correct": outcome == CORRECT,
            "faithful": judged["faithful"],
            "responsive": judged["responsive"],
            "from_memory": judged["correct_from_memory"],
            "answer": judged["answer"],
        },
        index=judged.index,
    )


def question_outcomes(judged: pd.DataFrame) -> pd.DataFrame:
    """The values of the tested answer metrics per answer row: what the paired tests compare."""
    return tested_values(llm_verdicts(judged))


def closed_book_comparisons(judged: pd.DataFrame) -> pd.DataFrame:
    """Every retrieval setting against the closed book of the same generator on the same questions.

    One row per setup with sources and per tested answer metric
    (:func:`rag.measuring.answer_metrics.tested_metrics`): the
    difference of its share (setup minus closed book, over every question of
    the set, so each question counts once in both), its bootstrap interval,
    the paired randomization and t-test p-values, and the randomization p
    Holm-corrected over the comparisons of one corpus, question set and
    generator. A question set without a closed-book file has no rows.
    """
    from rag.evaluation.significance import compare_paired, holm

    compared = [entry.name for entry in tested_metrics()]
    masks = pd.DataFrame({f"in_{name}": in_denominator(judged, name) for name in compared})
    values = pd.concat([judged[SETUP_KEYS + ["question_id"]], question_outcomes(judged), masks], axis=1)
    rows = []
    family_keys = ["corpus", "questions", "generator"]
    for family, of_family in values.groupby(family_keys, sort=True):
        closed = of_family[(of_family["retriever"] == CLOSED_BOOK) & (of_family["chunker"] == CLOSED_BOOK)]
        if closed.empty:
            continue
        baseline = closed.set_index("question_id").sort_index()
        start = len(rows)
        for setup, of_setup in of_family.groupby(["chunker", "retriever", "k"], sort=True):
            if setup[1] == CLOSED_BOOK:
                continue
            answers = of_setup.set_index("question_id").sort_index()
            if list(answers.index) != list(baseline.index):
                where = "/".join(map(str, (*family, *setup)))
                raise ValueError(f"{where}: the answers and the closed book differ in questions")
            for measure in compared:
                counted = baseline[f"in_{measure}"].to_numpy(dtype=bool)
                if not counted.any():
                    continue
                mine, theirs = answers[[measure]].to_numpy()[counted], baseline[[measure]].to_numpy()[counted]
                (comparison,) = compare_paired(mine, theirs)
                rows.append(
                    {
                        **dict(zip(family_keys, family, strict=True)),
                        "chunker": setup[0],
                        "retriever": setup[1],
                        "k": setup[2],
                        "outcome": measure,
                        "denominator": DENOMINATORS.get(measure, EVERY_QUESTION),
                        "question_count": int(counted.sum()),
                        "share": float(mine.mean()),
                        "closed_book_share": float(theirs.mean()),
                        "difference": comparison.mean_difference,
                        "difference_low": comparison.difference_low,
                        "difference_high": comparison.difference_high,
                        "p_randomization": comparison.p_randomization,
                        "p_t": comparison.p_t,
                    }
                )
        adjusted = holm([row["p_randomization"] for row in rows[start:]])
        for row, p_value in zip(rows[start:], adjusted, strict=True):
            row["p_holm"] = p_value
    return pd.DataFrame(rows, columns=_COMPARISON_COLUMNS)


_COMPARISON_COLUMNS = [
    *SETUP_KEYS,
    "outcome",
    "denominator",
    "question_count",
    "share",
    "closed_book_share",
    "difference",
    "difference_low",
    "difference_high",
    "p_randomization",
    "p_t",
    "p_holm",
]


def citation_check_table(judged: pd.DataFrame) -> pd.DataFrame:
    """Does the citation check catch unsupported answers? Precision and recall per setup.

    Over the answers given (abstentions are neither flagged nor judged): an
    answer is *unsupported* unless it is correct and the reference's content
    is in a source it cites (the labels' verdict, independent of the check);
    the check *flags* an answer when it is not faithful. Precision is the
    share of flagged answers that are unsupported, recall the share of
    unsupported answers flagged, each with a bootstrap interval over those
    answers. The same two figures against ``grounded`` (``*_ungrounded``)
    tell a flag on a correct answer taken uncited from the prompt apart from a
    flag on an answer the sources do not give; ``citing`` counts the answers
    that cite any source at all. Nothing is tuned on these numbers.
    """
    rows = []
    for values, setup in judged.groupby(SETUP_KEYS, sort=True, dropna=False):
        answered = setup[~setup["abstained"].astype(bool)]
        flagged = ~_flags(answered, "faithful")
        row = dict(zip(SETUP_KEYS, values, strict=True))
        row |= {
            "answered": len(answered),
            "citing": int(answered["cited_sources"].map(lambda cited: bool(identifiers(cited))).sum()),
            "flagged": int(flagged.sum()),
        }
        for label, suffix in (("supported", ""), ("grounded", "_ungrounded")):
            missing = ~_flags(answered, label)
            row |= {
                f"un{label}": int(missing.sum()),
                f"flagged_un{label}": int((flagged & missing).sum()),
            }
            row |= _share(f"precision{suffix}", missing[flagged])
            row |= _share(f"recall{suffix}", flagged[missing])
        rows.append(row)
    return pd.DataFrame(rows)


def describe_llm_answers(summary: pd.DataFrame) -> list[str]:
    """Log lines: per setup, correct, wrong, abstained and correct-from-memory."""
    return [
        f"{row.corpus}/{row.questions}/{row.generator}/{row.chunker}/{row.retriever} k={row.k}: "
        f"{row.correct} correct, {row.wrong} wrong, {row.abstained} abstained, "
        f"{row.refused} of {row.unanswerable} unanswerable refused, "
        f"{row.correct_from_memory} correct from memory"
        for row in summary.itertuples(index=False)
    ]


def gather_answer_files(frames: Sequence[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """The answer files as one table in setup and question order, each checked for its columns."""
    for source, frame in frames:
        check_answer_files(frame, source)
    table = pd.concat([frame[ANSWER_FILE_COLUMNS] for _, frame in frames], ignore_index=True)
    return table.sort_values([*SETUP_KEYS, "question_id"], kind="stable", ignore_index=True)
