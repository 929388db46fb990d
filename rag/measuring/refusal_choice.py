"""Which refusal prompt to use: the outcome prompts compared on the development questions.

An llm entry with ``refusal: outcome`` answers with an explicit outcome,
``answered`` or ``not_in_sources`` (docs/llm.md); its system prompt says when
the sources are not enough. Prompts differ in how readily the model refuses,
so they are chosen on the development questions only, from
``results/llm_answers_judged.csv``: for each outcome entry, over its answers
from sources (the closed book sends no outcome schema), how many unanswerable
questions it refused (``refused``) and how many answerable ones it refused
(``abstained``), each share with the pipeline's seeded bootstrap interval.

The rule, stated in the section it writes: among the prompts that refuse at
most :data:`MAX_ANSWERABLE_REFUSED` of the answerable development questions,
the one refusing the most unanswerable ones (then the fewest answerable ones,
then by name); when none stays within that bound, the one refusing the fewest
answerable ones (then the most unanswerable ones, then by name). The held-out
files are reported for every prompt and never read by the rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from rag.evaluation.statistics import bootstrap_interval
from rag.kinds import CLOSED_BOOK
from rag.measuring.best_setup import best_answer_setup_lines
from rag.measuring.correctness import ABSTAINED, REFUSED

DEVELOPMENT = "development"
# The aim for wrong refusals: at most 5 % of the answerable questions refused.
MAX_ANSWERABLE_REFUSED = 0.05


@dataclass(frozen=True)
class RefusalCounts:
    """One outcome prompt's refusals on one question file, over its answers from sources."""

    generator: str
    questions: str
    unanswerable: int
    refused: int
    answerable: int
    abstained: int
    refused_interval: tuple[float, float]
    abstained_interval: tuple[float, float]

    @property
    def refused_share(self) -> float:
        return self.refused / self.unanswerable if self.unanswerable else float("nan")

    @property
    def abstained_share(self) -> float:
        return self.abstained / self.answerable if self.answerable else float("nan")


def refusal_counts(judged: pd.DataFrame, generators: Sequence[str]) -> list[RefusalCounts]:
    """Per outcome generator and question file (development first), its refusals from sources."""
    if judged is None or judged.empty or not generators:
        return []
    rows = judged[judged["generator"].isin(list(generators)) & (judged["retriever"] != CLOSED_BOOK)]
    order = sorted(rows["questions"].unique(), key=lambda name: (name != DEVELOPMENT, name))
    found = []
    for generator in sorted(set(rows["generator"])):
        for questions in order:
            part = rows[(rows["generator"] == generator) & (rows["questions"] == questions)]
            if part.empty:
                continue
            answerable = part["answerable"].astype(bool)
            refused = (part.loc[~answerable, "outcome"] == REFUSED).to_numpy()
            abstained = (part.loc[answerable, "outcome"] == ABSTAINED).to_numpy()
            found.append(
                RefusalCounts(
                    generator=str(generator),
                    questions=str(questions),
                    unanswerable=int(refused.size),
                    refused=int(refused.sum()),
                    answerable=int(abstained.size),
                    abstained=int(abstained.sum()),
                    refused_interval=bootstrap_interval(refused),
                    abstained_interval=bootstrap_interval(abstained),
                )
            )
    return found


def chosen_prompt(counts: Sequence[RefusalCounts]) -> str | None:
    """The outcome generator the rule picks from the development rows (None without any)."""
    development = [row for row in counts if row.questions == DEVELOPMENT and row.answerable]
    if not development:
        return None

    def refused(row: RefusalCounts) -> float:  # no unanswerable question: nothing refused
        return row.refused_share if row.unanswerable else 0.0

    within = [row for row in development if row.abstained_share <= MAX_ANSWERABLE_REFUSED]
    if within:
        best = min(within, key=lambda row: (-refused(row), row.abstained_share, row.generator))
    else:
        best = min(development, key=lambda row: (row.abstained_share, -refused(row), row.generator))
    return best.generator


def _share(count: int, total: int, interval: tuple[float, float]) -> str:
    if not total:
        return f"{count} of {total}"
    return f"{count} of {total} ({count / total:.2f}, {interval[0]:.2f}-{interval[1]:.2f})"


def refusal_choice_lines(judged: pd.DataFrame, generators: Sequence[str]) -> list[str]:
    """The Markdown section of results/README.md: every outcome prompt's refusals and the choice."""
    counts = refusal_counts(judged, generators)
    chosen = chosen_prompt(counts)
    if chosen is None:
        return []
    bound = f"{MAX_ANSWERABLE_REFUSED * 100:.0f} %"
    lines = [
        "## Refusal prompts, chosen on the development questions",
        "",
        "The entries with `refusal: outcome` answer `answered` or `not_in_sources` before they",
        "answer (docs/llm.md); their system prompts differ in when the sources are not enough. From",
        "`llm_answers_judged.csv`, over each entry's answers from sources (every retrieval setting",
        "pooled; the closed book asks for no outcome): unanswerable questions refused, and",
        "answerable ones refused, with 95 % bootstrap intervals. The rule reads the development",
        f"questions only: among the prompts refusing at most {bound} of the answerable questions, the",
        "one refusing the most unanswerable ones; when none stays within that bound, the one",
        "refusing the fewest answerable ones. The held-out files are reported, never chosen on.",
        "",
        f"Chosen: `{chosen}`.",
        "",
    ]
    for row in counts:
        lines.append(
            f"- `{row.generator}`, {row.questions}: unanswerable refused "
            f"{_share(row.refused, row.unanswerable, row.refused_interval)}; answerable refused "
            f"{_share(row.abstained, row.answerable, row.abstained_interval)}"
        )
    return lines


def llm_answer_sections(judged: pd.DataFrame, outcome_generators: Sequence[str]) -> list[str]:
    """results/README.md's sections on the models' answers: the best setups, then the refusal prompts."""
    refusals = refusal_choice_lines(judged, outcome_generators)
    return best_answer_setup_lines(judged) + (["", *refusals] if refusals else [])
