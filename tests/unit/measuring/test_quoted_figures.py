"""Every figure about answers that results/README.md and docs/ quote is the one a committed table holds.

Each quoted passage is rebuilt here from the table it comes from, by a
reading of its own (not by the code that wrote the passage), and must occur
in the document; and every "N of M" or three-decimal share in a paragraph
about answers must be one of the figures so checked, so a number typed by
hand, or left behind by a table that moved, fails.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pandas as pd
import pytest

PROJECT = Path(__file__).resolve().parents[3]
RESULTS = PROJECT / "results"
README = RESULTS / "README.md"
ANSWERS_DOC = PROJECT / "docs" / "answers.md"

# A paragraph speaks of answers when it holds one of these words.
ANSWER_WORDS = re.compile(
    r"\banswer(?:s|ed)?\b|\bcorrect\b|\bjudge[sd]?\b|\bcitations?\b|\bcites?\b|\brefus\w*|\bkappa\b|κ",
    re.IGNORECASE,
)
COUNT = re.compile(r"(?<![@\w.])\d[\d,]* (?:out )?of (?:the )?\d[\d,]*(?![\d.])")
SHARE = re.compile(r"(?<![\d.])0\.\d{3}\b")
# Paragraphs that speak of answers in passing but quote other measurements: (document, opening words): why.
NOT_ANSWER_PARAGRAPHS = {
    (
        "docs/answers.md",
        "A held-out question set is answered with exactly the retrieval",
    ): "rankings reproduced, a retrieval check",
    ("docs/contracts.md", "`results/metrics_by_type.csv` splits"): "recall by question type and document",
    ("docs/embedder.md", "- **Fusing with BM25 helps BM25"): "recall and MRR of the retrievers",
    ("docs/grounding.md", "Unlike the encyclopedia corpus"): "a token probability of one worked example",
}


def _csv(name: str) -> pd.DataFrame:
    return pd.read_csv(RESULTS / name, keep_default_na=False, na_values=[""])


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _paragraphs(text: str) -> list[str]:
    return [_flat(block) for block in re.split(r"\n\s*\n|\n(?=- |\| )", text) if block.strip()]


def _section(text: str, heading: str) -> str:
    """A section of a Markdown text: from its heading to the next level-2 heading, or to the end."""
    section = text[text.index(heading) :]
    return section[: section.find("\n## ", 1) + 1 or len(section)]


SETUP = ["corpus", "questions", "generator", "chunker", "retriever", "k"]


@functools.cache
def _with_reference_counts() -> dict[tuple, int]:
    """Per answer setup, its answerable questions with a reference answer, read from the judged rows
    (a model may refuse a question without one, which the summary's abstained column counts)."""
    judged = _csv("llm_answers_judged.csv")
    judged = judged[
        judged["answerable"].astype(bool)
        & judged["reference_answer"].fillna("").astype(str).str.strip().ne("")
    ]
    return {key: len(rows) for key, rows in judged.groupby(SETUP)}


def _denominators(rows: pd.DataFrame) -> list[int]:
    counts = _with_reference_counts()
    return [counts[tuple(row[column] for column in SETUP)] for _, row in rows.iterrows()]


def _development_rows(summary: pd.DataFrame, corpus: str) -> pd.DataFrame:
    rows = summary[(summary["corpus"] == corpus) & (summary["questions"] == "development")].copy()
    rows["denominator"] = _denominators(rows)
    return rows


def _best_rows(summary: pd.DataFrame, corpus: str) -> tuple[pd.Series, pd.Series | None]:
    """The development setup with the largest correct share, and the best of another model."""
    rows = _development_rows(summary, corpus)
    rows["share"] = rows["correct"] / rows["denominator"]
    rows = rows.sort_values(["share", "generator", "retriever"], ascending=[False, True, True], kind="stable")
    top = rows.iloc[0]
    others = rows[rows["generator"] != top["generator"]]
    return top, (others.iloc[0] if len(others) else None)


def opening_phrases() -> list[str]:
    """The opening's generator lines, from llm_answers_summary.csv."""
    summary = _csv("llm_answers_summary.csv")
    phrases = []
    for corpus in sorted(summary["corpus"].unique()):
        top, other = _best_rows(summary, corpus)
        setup = f"`{top['chunker']}` + `{top['retriever']}`, k = {int(top['k'])}"
        if top["retriever"] == "none":
            setup = "closed book"
        phrases.append(
            f"`{top['generator']}` with {setup}: {int(top['correct'])} of {int(top['denominator'])} "
            f"answerable development questions with a reference answer correct "
            f"({top['correct_share']:.2f};"
        )
        # The tables round shares to six decimals (docs/formats.md).
        assert abs(top["correct_share"] - top["correct"] / top["denominator"]) < 1e-6
        if other is not None:
            phrases.append(
                f"Next model: `{other['generator']}`, {int(other['correct'])} of "
                f"{int(other['denominator'])} ({other['correct_share']:.2f}) at its best setup."
            )
    return phrases


RECOMMENDED = re.compile(r"### Recommended for (\S+) - \*\*Chunker and retriever\*\*: `([^`]+)` \+ `([^`]+)`")


def measured_pair_phrases() -> list[str]:
    """The opening's lines on the recommended pair's answers, when the models answered it.

    The models' counts from llm_answers_summary.csv; the offline readers'
    from answers.csv, each answer judged here against the reference answers
    of llm_answers_judged.csv, on the questions the models were counted on.
    """
    from rag.measuring.correctness import judge_answer

    summary = _csv("llm_answers_summary.csv")
    phrases = []
    for corpus, chunker, retriever in RECOMMENDED.findall(_flat(README.read_text(encoding="utf-8"))):
        rows = _development_rows(summary, corpus)
        rows = rows[(rows["chunker"] == chunker) & (rows["retriever"] == retriever)]
        if rows.empty:
            continue
        rows = rows.assign(share=rows["correct"] / rows["denominator"])
        rows = rows.sort_values(["share", "generator"], ascending=[False, True], kind="stable")
        phrases += [
            f"`{row['generator']}` {int(row['correct'])} of {int(row['denominator'])} ({row['share']:.2f})"
            for _, row in rows.iterrows()
        ]
        judged = _csv("llm_answers_judged.csv")
        judged = judged[
            (judged["corpus"] == corpus)
            & (judged["questions"] == "development")
            & (judged["chunker"] == chunker)
            & (judged["retriever"] == retriever)
            & judged["answerable"].astype(bool)
            & judged["reference_answer"].fillna("").astype(str).str.strip().ne("")
        ]
        references = dict(zip(judged["question_id"], judged["reference_answer"], strict=False))
        offline = _csv("answers.csv")
        offline = offline[
            (offline["corpus"] == corpus)
            & (offline["chunker"] == chunker)
            & (offline["retriever"] == retriever)
            & offline["question_id"].isin(references)
        ]
        for reader, answers in offline.groupby("reader"):
            right = sum(
                judge_answer(
                    str(row.answer or ""), references[row.question_id], True, bool(row.abstained)
                ).correct
                for row in answers.itertuples()
            )
            phrases.append(f"`{reader}` {right} of {len(answers)} ({right / len(answers):.2f})")
    return phrases


def test_the_opening_quotes_the_recommended_pairs_answers():
    readme = _flat(README.read_text(encoding="utf-8"))
    for phrase in measured_pair_phrases():
        assert phrase in readme, phrase


BEST_LINE = re.compile(
    r"^- `(?P<generator>[^`]+)`, (?P<questions>[\w]+): (?:`(?P<chunker>[^`]+)` \+ `(?P<retriever>[^`]+)`, "
    r"k=(?P<k>\d+)|closed book), (?P<correct>\d+) of (?P<of>\d+) correct \((?P<share>\d\.\d\d),"
)


def test_the_opening_quotes_the_answer_summary():
    readme = _flat(README.read_text(encoding="utf-8"))
    for phrase in opening_phrases():
        assert phrase in readme, phrase


def test_every_best_setup_line_quotes_the_answer_summary():
    summary = _csv("llm_answers_summary.csv")
    text = README.read_text(encoding="utf-8")
    section = _section(text, "## Best answer setup per language model")
    lines = [line for line in section.splitlines() if line.startswith("- `")]
    assert lines
    for line in lines:
        match = BEST_LINE.match(line)
        assert match, line
        found = match.groupdict()
        chunker = found["chunker"] or "none"
        retriever = found["retriever"] or "none"
        rows = summary[
            (summary["generator"] == found["generator"])
            & (summary["questions"] == found["questions"])
            & (summary["chunker"] == chunker)
            & (summary["retriever"] == retriever)
        ]
        if found["k"] is not None:
            rows = rows[rows["k"] == int(found["k"])]
        assert len(rows) == 1, line
        row = rows.iloc[0]
        assert int(found["correct"]) == row["correct"], line
        assert int(found["of"]) == _denominators(rows)[0], line
        assert found["share"] == f"{row['correct_share']:.2f}", line


def former_readme_phrases() -> list[str]:
    """docs/answers.md's summary of the offline answers, from the answer, summary and routing tables."""
    answers = _csv("answers_summary.csv")
    offline = answers[
        (answers["chunker"] == "sentences100")
        & (answers["retriever"] == "bm25")
        & (answers["reader"] == "extractive")
    ]
    single = offline[offline["group"] == "single_document"].iloc[0]
    retrieval = _csv("summary.csv")
    ceiling = retrieval[(retrieval["chunker"] == "sentences100") & (retrieval["retriever"] == "bm25")].iloc[0]
    leads = answers[(answers["chunker"] == "(lead summaries)") & (answers["reader"] == "extractive")]
    lead_answerable = leads[leads["group"] == "answerable"].iloc[0]
    summaries = _csv("summaries.csv")
    all_leads = summaries[summaries["doc_id"] == "(all)"].iloc[0]
    routing = _csv("routing.csv")
    answerable = routing[routing["group"] != "unanswerable"]
    routed = answerable["routed_right"].astype(str).str.lower().eq("true")
    return [
        f"quotes the labelled evidence for {int(single['correct'])} of the {int(single['questions'])} "
        f"single-document questions ({single['correct'] / single['questions']:.3f})",
        f"against a retrieval ceiling of {ceiling['recall_at_5']:.3f} at k = 5",
        f"costs {int(all_leads['tokens']):,} tokens",
        f"It answers only {int(lead_answerable['correct'])} questions correctly",
        f"only {int(lead_answerable['all_evidence_in_prompt'])} answerable questions "
        "have their evidence in a summary",
        f"routes {int(routed.sum())} of {len(answerable)} questions to a document holding their evidence",
    ]


def embedder_phrases() -> list[str]:
    """docs/embedder.md's answers by retriever: the extractive generator's correct answers, k = 5."""
    answers = _csv("answers_summary.csv")
    answerable = answers[(answers["reader"] == "extractive") & (answers["group"] == "answerable")]
    correct = answerable.set_index(["chunker", "retriever"])["correct"].astype(int)
    questions = int(answerable["questions"].iloc[0])
    lexical = {correct["sentences100", name] for name in ("bm25", "lsa128", "rrf_bm25_lsa")}
    assert len(lexical) == 1, "the document names one count for BM25, LSA and rrf_bm25_lsa"
    (lexical_correct,) = lexical
    return [
        f"give {correct['sentences100', 'minilm']} correct answers out of {questions} "
        f"({correct['sentences100', 'minilm'] / questions:.3f}), against {lexical_correct} for BM25, LSA "
        f"and rrf_bm25_lsa ({lexical_correct / questions:.3f}). On sections the figures are "
        f"{correct['sections', 'minilm']} against {correct['sections', 'bm25']}.",
    ]


def test_the_embedder_document_quotes_the_answer_summary():
    text = _flat((PROJECT / "docs" / "embedder.md").read_text(encoding="utf-8"))
    for phrase in embedder_phrases():
        assert phrase in text, phrase


def test_the_answers_document_quotes_its_tables():
    text = _flat(ANSWERS_DOC.read_text(encoding="utf-8"))
    for phrase in former_readme_phrases():
        assert phrase in text, phrase


@functools.cache
def _checked_figures() -> frozenset[str]:
    figures = set()
    for phrase in opening_phrases() + measured_pair_phrases() + former_readme_phrases() + embedder_phrases():
        figures |= set(COUNT.findall(phrase)) | set(SHARE.findall(phrase))
    return frozenset(figures)


def _answer_documents() -> list[Path]:
    documents = [README, *sorted((PROJECT / "docs").glob("*.md"))]
    # docs/architecture.md is written from the code and names no measurement.
    return [path for path in documents if path.name != "architecture.md"]


@pytest.mark.parametrize("document", _answer_documents(), ids=lambda path: path.name)
def test_every_figure_about_answers_is_a_checked_one(document):
    name = document.relative_to(PROJECT).as_posix()
    checked = _checked_figures()
    text = document.read_text(encoding="utf-8")
    if document == README:
        # The best-setup lines are read figure by figure above; the opening's lines are checked phrases.
        text = text[: text.find("## Best answer setup per language model")]
    unchecked = []
    for paragraph in _paragraphs(text):
        if not ANSWER_WORDS.search(paragraph):
            continue
        if any(
            paragraph.startswith(opening)
            for document_name, opening in NOT_ANSWER_PARAGRAPHS
            if document_name == name
        ):
            continue
        for figure in COUNT.findall(paragraph) + SHARE.findall(paragraph):
            if figure not in checked:
                unchecked.append(f"{figure!r} in: {paragraph[:160]}")
    assert not unchecked, f"{name}: figures about answers no table check covers: {unchecked}"


def test_the_scan_sees_a_figure_typed_by_hand():
    paragraph = _paragraphs("The reader answers 12 of 40 questions correctly (0.300).\n")[0]
    assert ANSWER_WORDS.search(paragraph)
    assert set(COUNT.findall(paragraph)) | set(SHARE.findall(paragraph)) == {"12 of 40", "0.300"}
    assert not ({"12 of 40", "0.300"} & _checked_figures())


def test_the_committed_best_setup_section_is_the_one_the_judged_table_gives():
    from rag.measuring.best_setup import best_answer_setup_lines

    text = README.read_text(encoding="utf-8")
    # The section runs to the next one (the refusal prompts', when the grid has outcome entries).
    section = _section(text, "## Best answer setup per language model").rstrip("\n")
    assert section == "\n".join(best_answer_setup_lines(_csv("llm_answers_judged.csv")))


REFUSAL_LINE = re.compile(
    r"^- `(?P<generator>[^`]+)`, (?P<questions>\w+): unanswerable refused (?P<refused>\d+) of "
    r"(?P<unanswerable>\d+)(?: \([^)]*\))?; answerable refused (?P<abstained>\d+) of (?P<answerable>\d+)"
)


def test_every_refusal_line_quotes_the_answer_summary():
    """The refusal section's counts are llm_answers_summary.csv's, summed over the settings with sources."""
    text = README.read_text(encoding="utf-8")
    if "## Refusal prompts" not in text:
        return
    summary = _csv("llm_answers_summary.csv")
    section = _section(text, "## Refusal prompts")
    lines = [line for line in section.splitlines() if line.startswith("- `")]
    assert lines
    for line in lines:
        match = REFUSAL_LINE.match(line)
        assert match, line
        found = match.groupdict()
        rows = summary[
            (summary["generator"] == found["generator"])
            & (summary["questions"] == found["questions"])
            & (summary["retriever"] != "none")
        ]
        assert len(rows) >= 1, line
        for column in ("refused", "unanswerable", "abstained", "answerable"):
            assert int(found[column]) == int(rows[column].sum()), (column, line)
