"""results/answers.md: what the readers got right, written from the answer tables, never by hand.

The answer tables are wide (one row per corpus, chunker, retriever, reader
and question group, with three shares and their intervals each), and the
questions a reader of the project asks of them are few: which setup quotes
the evidence most often, how often it is wrong instead of silent, whether
it refuses what cannot be answered, which threshold the cross-validation
chose, and whether the held-out questions agree. This module answers those
from ``answers_summary.csv``, ``reader_thresholds.csv`` and
``answers_heldout.csv``, so the numbers in the document are always the
tables' numbers.
"""

from __future__ import annotations

import pandas as pd

from rag.answering.answers import MULTI_DOCUMENT, SINGLE_DOCUMENT, UNANSWERABLE
from rag.measuring.thresholds import at_grid_edge

_SETUP = ["corpus", "chunker", "retriever", "reader"]


def _share(count: int, total: int, low: float, high: float) -> str:
    return f"{count} of {total} ({count / total:.3f}, {low:.2f}-{high:.2f})" if total else "-"


def answer_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per setup: single-document correct, wrong and abstained, and unanswerable refused.

    Ordered best first: most correct, then fewest wrong, then by name, so the
    first row of each corpus is its best setup.
    """
    single = summary[summary["group"] == SINGLE_DOCUMENT].set_index(_SETUP)
    refused = summary[summary["group"] == UNANSWERABLE].set_index(_SETUP)
    rows = single[["questions", "correct", "wrong", "abstained", "correct_share_low", "correct_share_high"]]
    rows = rows.join(
        refused[["questions", "refused_unanswerable"]].rename(columns={"questions": "unanswerable"}),
        how="left",
    ).reset_index()
    return rows.sort_values(
        ["corpus", "correct", "wrong", "chunker", "retriever", "reader"],
        ascending=[True, False, True, True, True, True],
        kind="mergesort",
    ).reset_index(drop=True)


def _questions_in_all(summary: pd.DataFrame, setup: pd.Series) -> int:
    """Every question the setup answered: single-document, multi-document and unanswerable ones."""
    of_setup = summary[(summary[_SETUP] == setup[_SETUP]).all(axis=1)]
    groups = of_setup[of_setup["group"].isin([SINGLE_DOCUMENT, MULTI_DOCUMENT, UNANSWERABLE])]
    return int(groups["questions"].sum())


def _answer_table(rows: pd.DataFrame) -> list[str]:
    lines = [
        "| chunker | retriever | reader | single-document correct | wrong | abstained "
        "| unanswerable refused |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows.itertuples(index=False):
        refused = (
            f"{int(row.refused_unanswerable)} of {int(row.unanswerable)}"
            if pd.notna(row.unanswerable)
            else "-"
        )
        correct = _share(int(row.correct), int(row.questions), row.correct_share_low, row.correct_share_high)
        lines.append(
            f"| {row.chunker} | {row.retriever} | {row.reader} | {correct} | {int(row.wrong)} "
            f"| {int(row.abstained)} | {refused} |"
        )
    return lines


def _threshold_lines(thresholds: pd.DataFrame, corpus: str) -> list[str]:
    chosen = thresholds[(thresholds["corpus"] == corpus) & (thresholds["fold"] == "all")]
    lines = []
    for reader, of_reader in chosen.groupby("reader", sort=True):
        values = of_reader["threshold"]
        edge = [f"{value:.2f}" for value in sorted(set(values)) if at_grid_edge(value)]
        flag = (
            f" **At the edge of the threshold grid: {', '.join(edge)}** on "
            f"{sum(at_grid_edge(value) for value in values)} rankings; a choice there (never or always "
            "answering) did not carry from the grid, and a wider grid might move it."
            if edge
            else ""
        )
        lines.append(
            f"- `{reader}`: {values.min():.2f} to {values.max():.2f} over {len(values)} rankings "
            f"(`fold = all` in `reader_thresholds.csv`).{flag}"
        )
    return lines


def _heldout_table(heldout: pd.DataFrame) -> list[str]:
    keys = ["questions_file", "retriever", "generator", "threshold"]
    single = heldout[heldout["group"] == SINGLE_DOCUMENT].set_index(keys)
    unanswerable = heldout[heldout["group"] == UNANSWERABLE].set_index(keys)
    lines = [
        "| questions | retriever | generator | threshold | single-document correct | wrong | abstained "
        "| unanswerable refused |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, row in single.iterrows():
        refused = "-"
        if key in unanswerable.index:
            other = unanswerable.loc[key]
            refused = f"{int(other['abstained'])} of {int(other['questions'])}"
        correct = _share(
            int(row["correct"]), int(row["questions"]), row["correct_share_low"], row["correct_share_high"]
        )
        file, retriever, generator, threshold = key
        lines.append(
            f"| {file} | {retriever} | {generator} | {threshold:g} | {correct} | {int(row['wrong'])} "
            f"| {int(row['abstained'])} | {refused} |"
        )
    return lines


def heldout_headline(heldout: pd.DataFrame | None, reader: str) -> str:
    """The held-out results beside the development ones, for a headline that quotes answers.

    Per retriever of ``rag ask``'s path, the ``reader``'s single-document
    correct answers on the development questions and on each held-out file,
    with their intervals; empty when the reader did not answer them.
    """
    if heldout is None or heldout.empty:
        return ""
    rows = heldout[(heldout["group"] == SINGLE_DOCUMENT) & (heldout["generator"] == reader)]
    parts = []
    for retriever, of_retriever in rows.groupby("retriever", sort=True):
        files = sorted(of_retriever["questions_file"], key=lambda name: (name != "development", name))
        shares = []
        for name in files:
            row = of_retriever[of_retriever["questions_file"] == name].iloc[0]
            share = _share(
                int(row["correct"]),
                int(row["questions"]),
                row["correct_share_low"],
                row["correct_share_high"],
            )
            shares.append(f"{share} on {name}")
        parts.append(f"with `{retriever}` for " + ", ".join(shares))
    if not parts:
        return ""
    return (
        f"Beside it, held out: through `rag ask`'s path, `{reader}` quotes the evidence of the "
        "single-document questions "
        + "; ".join(parts)
        + " (the held-out files were written after the reader was frozen)."
    )


def _interval(share: float, low: float, high: float, between: str = "-") -> str:
    """A share with its interval; ``between`` " to " where a bound may be negative ("-0.10 to 0.12")."""
    return "-" if pd.isna(share) else f"{share:.2f} ({low:.2f}{between}{high:.2f})"


def _llm_table(summary: pd.DataFrame, closed_book: pd.DataFrame) -> list[str]:
    """Per question set and setup: correct, wrong, abstained, refused, correct from memory."""
    correct_p = closed_book[closed_book["outcome"] == "correct"].set_index(
        ["questions", "generator", "chunker", "retriever", "k"]
    )["p_holm"]
    lines = [
        "| questions | generator | chunker | retriever | k | correct | wrong | abstained "
        "| unanswerable refused | correct from memory | cited source contains the words and numbers "
        "| holds a value of the asked type | p vs closed book |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in summary.itertuples(index=False):
        judged = row.correct + row.wrong + row.abstained
        key = (row.questions, row.generator, row.chunker, row.retriever, row.k)
        p_value = f"{correct_p[key]:.4f}" if key in correct_p.index else "-"
        memory = _share(
            row.correct_from_memory,
            row.correct,
            row.correct_from_memory_share_low,
            row.correct_from_memory_share_high,
        )
        lines.append(
            f"| {row.questions} | {row.generator} | {row.chunker} | {row.retriever} | {row.k} "
            f"| {_share(row.correct, judged, row.correct_share_low, row.correct_share_high)} "
            f"| {_share(row.wrong, judged, row.wrong_share_low, row.wrong_share_high)} "
            f"| {_share(row.abstained, judged, row.abstained_share_low, row.abstained_share_high)} "
            f"| {_share(row.refused, row.unanswerable, row.refused_share_low, row.refused_share_high)} "
            f"| {memory} "
            f"| {_interval(row.faithful_share, row.faithful_share_low, row.faithful_share_high)} "
            f"| {_interval(row.responsive_share, row.responsive_share_low, row.responsive_share_high)} "
            f"| {p_value} |"
        )
    return lines


def _label_shares(row, label: str, suffix: str) -> str:
    """Precision and recall of the check's flags against one label, as table cells."""
    missing, flagged_missing = getattr(row, f"un{label}"), getattr(row, f"flagged_un{label}")
    cells = []
    for share, over in ((f"precision{suffix}", row.flagged), (f"recall{suffix}", missing)):
        low, high = getattr(row, f"{share}_low"), getattr(row, f"{share}_high")
        cells.append(f"| {_share(flagged_missing, over, low, high)} ")
    return "".join(cells)


def _citation_table(citation: pd.DataFrame) -> list[str]:
    """The check against the claim labels: held-out rows first (the measurement), then development;
    in each, the anchored check (the pipeline's) before the lexical one, pooled rows first."""
    lines = [
        "| labels | check | questions | generator | retriever | answers | citing | unsupported | flagged "
        "| precision | recall |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = citation.assign(
        _split=citation["split"] != "heldout",
        _rule=citation["rule"] != "anchored",
        _setup=citation["questions"] != "all",
        _generator=citation["generator"] != "all",
    )
    order = order.sort_values(["_split", "_rule", "_setup", "_generator"], kind="stable")
    for row in order.itertuples(index=False):
        precision = _share(row.flagged_unsupported, row.flagged, row.precision_low, row.precision_high)
        recall = _share(row.flagged_unsupported, row.unsupported, row.recall_low, row.recall_high)
        lines.append(
            f"| {row.split} | {row.rule} | {row.questions} | {row.generator} | {row.retriever} "
            f"| {row.answers} | {row.citing} | {row.unsupported} | {row.flagged} | {precision} | {recall} |"
        )
    return lines


def _accuracy_table(accuracy: pd.DataFrame) -> list[str]:
    from rag.measuring.citation_accuracy import preferred_rows

    lines = [
        "| questions | generator | retriever | from | answers | accuracy | coverage |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in preferred_rows(accuracy).itertuples(index=False):
        accurate = _share(int(row.supporting_markers), int(row.markers), row.accuracy_low, row.accuracy_high)
        covered = _share(int(row.covered), int(row.answers), row.coverage_low, row.coverage_high)
        lines.append(
            f"| {row.questions} | {row.generator} | {row.retriever} | {row.source} | {row.answers} "
            f"| {accurate} | {covered} |"
        )
    return lines


def _judges_table(calibration: pd.DataFrame) -> list[str]:
    """Every judge against the held-out labels, per task: all answers first, then each generator's."""
    lines = [
        "| judge | task | answers of | labelled | labelled yes | judge yes | no verdict | threshold "
        "| agreement | kappa |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    heldout = calibration[calibration["labels"] == "heldout"]
    order = heldout.assign(_group=heldout["answers_of"] != "all")
    for row in order.sort_values(["task", "judge", "_group", "answers_of"], kind="stable").itertuples():
        threshold = "verdict" if pd.isna(row.threshold) else f"{row.threshold:.2f}"
        lines.append(
            f"| {row.judge} | {row.task} | {row.answers_of} | {row.labelled} | {row.labelled_yes} "
            f"| {row.judge_yes} | {row.no_verdict} | {threshold} "
            f"| {_interval(row.agreement, row.agreement_low, row.agreement_high, ' to ')} "
            f"| {_interval(row.kappa, row.kappa_low, row.kappa_high, ' to ')} |"
        )
    return lines


def _verdicts_table(verdicts: pd.DataFrame) -> list[str]:
    lines = [
        "| generator | questions | setup | answered | passed both checks | of which right |",
        "|---|---|---|---|---|---|",
    ]
    for row in verdicts.itertuples(index=False):
        judged = int(row.faithful_and_responsive) - int(row.faithful_and_responsive_not_judged)
        correct = _share(
            int(row.faithful_and_responsive_correct),
            judged,
            row.verdicts_correct_share_low,
            row.verdicts_correct_share_high,
        )
        lines.append(
            f"| {row.generator} | {row.questions} | {row.setup} | {int(row.answered)} "
            f"| {int(row.faithful_and_responsive)} | {correct} |"
        )
    return lines


def _reader_rules_table(rules: pd.DataFrame) -> list[str]:
    files = list(dict.fromkeys(rules["questions_file"]))
    lines = ["| rule switched off | " + " | ".join(files) + " |", "|---|" + "---|" * len(files)]
    for rule, of_rule in rules.groupby("rule_off", sort=False):
        cells = of_rule.set_index("questions_file")
        lines.append(
            f"| {rule} | "
            + " | ".join(
                f"{int(cells.loc[file, 'correct'])} correct, {int(cells.loc[file, 'wrong'])} wrong "
                f"(helps {int(cells.loc[file, 'helps']):+d})"
                for file in files
            )
            + " |"
        )
    return lines


def llm_sections(
    llm_summary: pd.DataFrame | None,
    closed_book: pd.DataFrame | None,
    citation: pd.DataFrame | None,
    verdicts: pd.DataFrame | None,
    reader_rules: pd.DataFrame | None,
    citation_accuracy: pd.DataFrame | None = None,
    judge_calibration: pd.DataFrame | None = None,
) -> list[str]:
    """The language models' sections of results/answers.md, each from its table (absent: left out)."""
    from rag.measuring.verdicts import NOT_CHECKED

    lines: list[str] = []
    if llm_summary is not None and closed_book is not None and len(llm_summary):
        lines += [
            "",
            "## Language models against the closed book",
            "",
            "From `llm_answers_summary.csv` and `llm_closed_book.csv`. Correct: the answer states the",
            "reference answer (normalised, or all its numbers and names; `rag/measuring/correctness.py`);",
            "shares of correct, wrong and abstained are over the answerable questions with a reference",
            "answer. Correct from memory: correct answers whose reference is in none of the prompt's",
            "sources (every closed-book answer). p: paired randomization test of the correct share",
            "against the closed book on the same questions, Holm-corrected per question set.",
            "",
            *_llm_table(llm_summary, closed_book),
        ]
    if citation is not None and len(citation):
        lines += [
            "",
            "## Does the citation check catch a real model?",
            "",
            "From `citation_check.csv`, against the claim-level hand labels",
            "(`resources/answer_labels/claims.csv`): an answer is unsupported when one of its claims is",
            "supported by no source it cites, as read by hand. The check flags an answer one of whose",
            "claims fails it: `anchored` as the pipeline runs it (the claim's value in one passage of a",
            "cited source, beside the question's subject), `lexical` the same without the question.",
            "Answers given with sources only (refusals and closed book left out); citing: answers with a",
            "marker (one without is unsupported and flagged by construction, as every SmolLM2 answer",
            "without structured citations). The check was designed on the development labels; the",
            "held-out rows are the measurement. Intervals: Wilson.",
            "",
            *_citation_table(citation),
        ]
    if citation_accuracy is not None and len(citation_accuracy):
        lines += [
            "",
            "## How often does a cited source support its claim?",
            "",
            "From `citation_accuracy.csv`. Accuracy: citation markers whose source supports the claim",
            "they stand behind; coverage: answers given whose every claim some cited source supports.",
            "`labels`: read by hand (`resources/answer_labels/claims.csv`; on the development questions a",
            "sample); `check`: the citation check's reading, where no answer of the setup is labelled.",
            "Intervals: Wilson.",
            "",
            *_accuracy_table(citation_accuracy),
        ]
    if judge_calibration is not None and len(judge_calibration):
        lines += [
            "",
            "## How far can a judge be trusted?",
            "",
            "From `judge_calibration.csv`: each judge of answers against the claim-level hand labels of",
            "the held-out question files (`resources/answer_labels/`), on two tasks: `correct` (the",
            "label correct, against partly and wrong) and `supported` (every claim supported by a cited",
            "source). A model judge says yes where its verdict's probability reaches the threshold chosen",
            "on the development labels (`verdict`: its verdicts as given). `always_correct` is the floor:",
            "it calls every answer correct and every answer that cites supported, so its `supported` kappa",
            "is what citing alone tells (an answer citing nothing is never supported).",
            "Agreement and Cohen's kappa with seeded 95 % bootstrap intervals over the labelled answers.",
            "",
            *_judges_table(judge_calibration),
        ]
    if verdicts is not None and len(verdicts):
        lines += [
            "",
            "## How often are answers that pass both checks right?",
            "",
            "From `verdicts.csv`, judged by the reference answers. The two checks: the cited source",
            "contains the answer's words and numbers (the source check, `faithful` in the CSV files),",
            "and the answer holds a value of the asked type (the type check, `responsive`).",
            f"{NOT_CHECKED}",
            "",
            *_verdicts_table(verdicts),
        ]
    if reader_rules is not None and len(reader_rules):
        lines += [
            "",
            "## The reader's rules, one at a time",
            "",
            "From `reader_rules.csv`: the reader through `rag ask`'s path at its frozen threshold with",
            "each rule switched off; helps = how much the rule adds to correct minus wrong answers.",
            "",
            *_reader_rules_table(reader_rules),
        ]
    return lines


def _why_it_may_differ(of_corpus: pd.DataFrame) -> str:
    """Why the best answer setup need not be the configuration results/README.md recommends."""
    pairs = of_corpus[["chunker", "retriever"]].drop_duplicates()
    return (
        f"This ranks the {len(pairs)} (chunker, retriever) pairs the answer experiments run (`answers` "
        "in config.yaml), by the share of questions answered with the labelled evidence. "
        "[README.md](README.md) recommends from the whole retrieval grid by recall, MRR and nDCG "
        "(and by prompt words for the cost-aware choice), most of which the answer experiments do not "
        "run, so the two can name different configurations: where they differ, the retrieval choice "
        "says where the evidence is ranked, this one which pair the readers quote it from best."
    )


def answers_document(
    summary: pd.DataFrame,
    thresholds: pd.DataFrame,
    heldout: pd.DataFrame | None = None,
    llm_tables: tuple[pd.DataFrame | None, ...] = (None,) * 7,
) -> str:
    """The Markdown of results/answers.md.

    ``llm_tables`` are the language models' summary, closed-book comparison,
    citation check, verdicts, the reader's rule ablation, citation accuracy
    and the judges' calibration (:func:`llm_sections`).
    """
    lines = [
        "# Answers",
        "",
        "Written by the rule `answers_document` from `answers_summary.csv`, `reader_thresholds.csv`",
        "and `answers_heldout.csv`; do not edit. How the readers and the verdicts work:",
        "[docs/answers.md](../docs/answers.md).",
        "",
        "A question is answered correctly when the quoted sentence quotes its labelled evidence,",
        "wrongly when it quotes anything else, and abstained on when the best sentence scores below",
        "the threshold. The readers' thresholds are cross-validated (each question is answered at a",
        "threshold chosen without it); the extractive generator's is the configured one. Shares come",
        "with 95 % bootstrap intervals.",
    ]
    rows = answer_rows(summary)
    for corpus, of_corpus in rows.groupby("corpus", sort=True):
        best = of_corpus.iloc[0]
        chosen = thresholds[(thresholds[_SETUP] == best[_SETUP]).all(axis=1) & (thresholds["fold"] == "all")][
            "threshold"
        ]
        at = f" Its threshold, chosen on every question, is {chosen.iloc[0]:.2f}." if len(chosen) else ""
        lines += [
            "",
            f"## {corpus}",
            "",
            f"Best: {best.chunker} + {best.retriever} + {best.reader}, which quotes the evidence for "
            f"{int(best.correct)} of {int(best.questions)} single-document questions "
            f"({best.correct / best.questions:.3f}), answers {int(best.wrong)} wrongly and abstains on "
            f"{int(best.abstained)}.{at} The headline counts the single-document questions only: "
            f"{int(best.questions)} of the {_questions_in_all(summary, best)} questions; the others are "
            "answered from several documents or not at all (`answers_summary.csv` has every group).",
            *(["", heldout_line] if (heldout_line := heldout_headline(heldout, best.reader)) else []),
            "",
            _why_it_may_differ(of_corpus),
            "",
            *_answer_table(of_corpus),
            "",
            "Thresholds chosen on every question:",
            "",
            *_threshold_lines(thresholds, corpus),
        ]
    if heldout is not None and len(heldout):
        lines += [
            "",
            "## `rag ask` on the development and the held-out questions",
            "",
            "Through `rag ask`'s own path (its chunker, retrievers, reading pool and default",
            "thresholds). The held-out questions were written after the reader was frozen and were",
            "never used to tune it.",
            "",
            *_heldout_table(heldout),
        ]
    lines += llm_sections(*llm_tables)
    return "\n".join(lines) + "\n"
