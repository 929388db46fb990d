"""Which of the reader's rules generalise? Each switched off in turn, on development and held-out questions.

The reader (:mod:`rag.answering.reader`) grew its rules while it was tuned on
the development questions, so a rule may fit their wording rather than
questions in general. Measuring each rule's effect on questions written
without sight of the reader (the held-out files) tells the two apart: a rule
that helps the development questions and not the held-out ones is a fit to
the development set. Every answer goes through ``rag ask``'s path at the
reader's frozen threshold, as results/answers_heldout.csv does, and counts
what that table counts: answers quoting labelled evidence (correct) and the
other answers (wrong).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from rag.answering.reader import DEFAULT_WEIGHTS, ReaderWeights

# Each rule and the reader's weights with that rule off (everything else as it answers).
RULES: dict[str, ReaderWeights] = {
    "duration_synonyms": dataclasses.replace(DEFAULT_WEIGHTS, duration_synonyms=False),
    "referring_context": dataclasses.replace(DEFAULT_WEIGHTS, referring_context=False),
    "duration_frame": dataclasses.replace(DEFAULT_WEIGHTS, duration_frame=False),
    "entity_boost": dataclasses.replace(DEFAULT_WEIGHTS, entity_boost=1.0),
    "topic": dataclasses.replace(DEFAULT_WEIGHTS, topic=0.0),
    "label": dataclasses.replace(DEFAULT_WEIGHTS, label=0.0),
}
ALL_RULES = "none off"  # the row of the reader as it answers
DEVELOPMENT = "development"


def rule_ablation(
    index, documents: Sequence, question_sets: Mapping[str, Sequence], threshold: float, rules=None
) -> list[dict]:
    """Rows of results/reader_rules.csv: per rule switched off and question set, what the reader gets.

    ``index`` is ``rag ask``'s question index over ``documents``;
    ``question_sets`` maps a set's name (``development`` or a held-out
    file's stem) to its questions. Each row has the counts with the rule off
    and ``helps``, how much the rule adds to correct minus wrong answers
    (the reader's own objective) on that set; the first rows are the reader
    as it answers.
    """
    from rag.ask.measure import judge_ask_answers

    rules = RULES if rules is None else rules
    memo: dict = {}  # each question is retrieved once, for every rule (the weights only read)
    baseline: dict[str, int] = {}
    rows = []
    for rule, weights in [(ALL_RULES, DEFAULT_WEIGHTS), *rules.items()]:
        for name, questions in question_sets.items():
            judged = judge_ask_answers(
                index, questions, documents, "reader", threshold, weights=weights, memo=memo
            )
            correct = sum(judgement.correct for judgement in judged)
            wrong = sum(judgement.answered and not judgement.correct for judgement in judged)
            net = correct - wrong
            baseline.setdefault(name, net)
            rows.append(
                {
                    "rule_off": rule,
                    "questions_file": name,
                    "questions": len(judged),
                    "correct": correct,
                    "wrong": wrong,
                    "abstained": sum(not judgement.answered for judgement in judged),
                    "net": net,
                    "helps": baseline[name] - net,
                }
            )
    return rows


def development_only_rules(rows: Sequence[Mapping]) -> list[str]:
    """The rules that help the development questions (``helps`` > 0) and no held-out file on the
    whole (the sum of their ``helps`` over the held-out files is at most 0)."""
    found = []
    for rule in dict.fromkeys(row["rule_off"] for row in rows if row["rule_off"] != ALL_RULES):
        of_rule = [row for row in rows if row["rule_off"] == rule]
        development = sum(row["helps"] for row in of_rule if row["questions_file"] == DEVELOPMENT)
        heldout = sum(row["helps"] for row in of_rule if row["questions_file"] != DEVELOPMENT)
        if development > 0 and heldout <= 0:
            found.append(rule)
    return found
