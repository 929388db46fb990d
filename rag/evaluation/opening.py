"""The opening of results/README.md: one recommended chunker, retriever, k and generator, from the tables.

A reader asking "which chunker, retriever, k and model?" gets one answer per
corpus, each part justified by the section or table it comes from and said
with what ties and what it costs:

- chunker and retriever: the best configuration by nDCG@10, the metric that
  weighs the whole top of the list (:func:`rag.evaluation.recommendation.recommendations`),
  with the configurations its questions cannot separate from it and the
  cost-aware choice (fewest words@5 inside its interval);
- k: the largest k of that pair whose prompt fits the prompt budget
  (:func:`rag.evaluation.recommendation.k_choices`), and the thrifty k
  the questions cannot tell apart from it;
- generator: the language model and setup with the largest share of correct
  answers on the development questions (``llm_answers_judged.csv``), and
  whether the language-model grid measured the recommended retrieval pair at
  all. The caller gives the rows of the answer tables' one denominator
  (answerable questions with a reference answer,
  ``rag.measuring.llm_tables.with_reference``), so the count and share are the
  ones ``llm_answers_summary.csv`` and the best-answer-setup section print.

Nothing here is written by hand: a new measurement changes the opening.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from rag.evaluation.recommendation import KChoice, Recommendation
from rag.evaluation.significance import ALPHA

# The metric the opening chooses by: it weighs the whole top of the ranking.
CHOSEN_BY = "nDCG@10"


def _retrieval_lines(best: Recommendation) -> list[str]:
    tied = [c for c in best.contenders if c.p_holm >= ALPHA]
    lines = [
        f"- **Chunker and retriever**: `{best.chunker}` + `{best.retriever}`, {best.metric.label} "
        f"{best.value:.3f} [{best.low:.3f}, {best.high:.3f}] (the best by {best.metric.label}; "
        '"Recommendation per metric" below tests it).'
    ]
    if tied:
        names = ", ".join(f"`{c.chunker}` + `{c.retriever}` ({c.value:.3f})" for c in tied)
        lines.append(f"  - Ties: the questions do not separate it from {names}.")
    else:
        lines.append("  - Ties: none; it is better than the runner-up and the best of every other chunker.")
    if best.cheapest is not None:
        chunker, retriever, words = best.cheapest
        lines.append(
            f"  - Cost: the fewest prompt words inside its interval take `{chunker}` + `{retriever}`, "
            f"{words:.0f} words@5."
        )
    return lines


def _k_lines(choice: KChoice | None, budget: float) -> list[str]:
    if choice is None:
        return []
    if choice.k is None:
        return [
            f"- **k**: none fits {budget:,.0f} prompt words: k = {choice.smallest_k_evaluated} already "
            f"takes {choice.smallest_k_words:.0f} words (raise `evaluation.prompt_budget`)."
        ]
    thrifty = (
        f"; k = {choice.smallest_k} ({choice.smallest_words:.0f} words) lies inside its interval"
        if choice.smallest_k is not None and choice.smallest_k != choice.k
        else ""
    )
    return [
        f"- **k**: {choice.k}, the most recall that fits {budget:,.0f} prompt words: "
        f"R@{choice.k} {choice.recall:.3f} [{choice.low:.3f}, {choice.high:.3f}] for "
        f'{choice.words:.0f} words{thrifty} ("Which k" below).'
    ]


def _generator_lines(judged: pd.DataFrame | None, best: Recommendation | None) -> list[str]:
    if judged is None or judged.empty or "correct" not in judged.columns:
        return []
    development = judged[(judged["questions"] == "development") & judged["answerable"].astype(bool)]
    if development.empty:
        return []
    shares = (
        development.assign(correct=development["correct"].astype(bool))
        .groupby(["generator", "chunker", "retriever", "k"], sort=True)["correct"]
        .agg(["sum", "count", "mean"])
        .reset_index()
        .sort_values(["mean", "generator", "retriever"], ascending=[False, True, True], kind="stable")
    )
    top = shares.iloc[0]
    runner = shares[shares["generator"] != top["generator"]]
    setup = (
        "closed book"
        if top["retriever"] == "none"
        else f"`{top['chunker']}` + `{top['retriever']}`, k = {int(top['k'])}"
    )
    lines = [
        f"- **Generator**: `{top['generator']}` with {setup}: {int(top['sum'])} of {int(top['count'])} "
        f"answerable development questions with a reference answer correct ({top['mean']:.2f}; "
        '"Best answer setup per '
        'language model" below tests it).'
    ]
    if len(runner):
        other = runner.iloc[0]
        lines.append(
            f"  - Next model: `{other['generator']}`, {int(other['sum'])} of {int(other['count'])} "
            f"({other['mean']:.2f}) at its best setup."
        )
    if best is not None:
        measured = ((shares["chunker"] == best.chunker) & (shares["retriever"] == best.retriever)).any()
        lines.append(
            f"  - The language-model grid {'includes' if measured else 'does not include'} the recommended "
            f"`{best.chunker}` + `{best.retriever}`"
            + (
                "."
                if measured
                else "; its answers with a model are not measured (config.yaml, `answers.llm`)."
            )
        )
    return lines


def opening_lines(
    found: Mapping[str, Sequence[Recommendation]],
    which_k: Mapping[str, Sequence[KChoice]],
    budget: float,
    judged: pd.DataFrame | None = None,
) -> list[str]:
    """The "Recommendation" section that opens results/README.md, per corpus (empty without results)."""
    lines: list[str] = []
    for corpus in sorted(found):
        best = next((item for item in found[corpus] if item.metric.label == CHOSEN_BY), None)
        if best is None and found[corpus]:
            best = found[corpus][0]
        if best is None:
            continue
        choice = next(
            (
                c
                for c in which_k.get(corpus, [])
                if (c.chunker, c.retriever) == (best.chunker, best.retriever)
            ),
            None,
        )
        of_corpus = None if judged is None or "corpus" not in judged else judged[judged["corpus"] == corpus]
        lines += [f"### Recommended for {corpus}", ""]
        lines += _retrieval_lines(best) + _k_lines(choice, budget) + _generator_lines(of_corpus, best)
        lines.append("")
    if not lines:
        return []
    return ["## Recommendation", "", *lines]


def with_opening(readme: str, opening: Sequence[str]) -> str:
    """``readme`` with ``opening`` placed after its title and first paragraph (the "do not edit" line)."""
    if not opening:
        return readme
    title, separator, rest = readme.partition("\n\n")
    first, separator_two, remainder = rest.partition("\n\n")
    return f"{title}{separator}{first}{separator_two}" + "\n".join(opening).rstrip("\n") + "\n\n" + remainder
