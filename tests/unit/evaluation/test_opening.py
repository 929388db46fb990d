"""results/README.md opens with one recommendation per corpus, each part from the tables beside it."""

from __future__ import annotations

import pandas as pd

from rag.evaluation.opening import opening_lines, with_opening
from rag.evaluation.recommendation import k_choices, recommendations
from rag.evaluation.significance import interval_table, significance_table
from rag.evaluation.summary import summary_table
from tests.unit.evaluation.test_recommendation import RUNS, _values


def _tables():
    values = _values(200, RUNS)
    intervals = interval_table(values)
    summary = summary_table(intervals, significance_table(values, "bm25"), "bm25")
    return values, intervals, summary


def _judged() -> pd.DataFrame:
    rows = []
    for generator, right in (("small", 3), ("large", 7)):
        for retriever in ("none", "dense"):
            for number in range(10):
                rows.append(
                    {
                        "corpus": "c",
                        "questions": "development",
                        "generator": generator,
                        "chunker": "sections" if retriever != "none" else "none",
                        "retriever": retriever,
                        "k": 5,
                        "question_id": f"q{number}",
                        "answerable": True,
                        "correct": number < (right if retriever == "dense" else 1),
                    }
                )
    return pd.DataFrame(rows)


def test_the_opening_names_the_best_by_ndcg_its_k_and_the_best_generator():
    values, intervals, summary = _tables()
    found = {"c": recommendations(summary, values, "c")}
    choices = {"c": k_choices(intervals, "c", 500)}
    text = "\n".join(opening_lines(found, choices, 500, _judged()))
    best = next(item for item in found["c"] if item.metric.label == "nDCG@10")
    # Independently: the configuration with the highest mean nDCG@10 per question.
    means = values[(values["metric"] == "ndcg") & (values["k"] == 10)].groupby(["chunker", "retriever"])
    top = means["value"].mean().idxmax()
    assert (best.chunker, best.retriever) in {top, *[(c.chunker, c.retriever) for c in best.contenders]}
    assert f"`{best.chunker}` + `{best.retriever}`, nDCG@10" in text
    assert "**k**:" in text
    assert "`large` with `sections` + `dense`, k = 5: 7 of 10" in text
    assert "Next model: `small`, 3 of 10" in text


def test_the_opening_says_when_the_model_grid_lacks_the_recommended_pair():
    values, intervals, summary = _tables()
    found = {"c": recommendations(summary, values, "c")}
    judged = _judged().assign(chunker="other", retriever="bm25_only")
    text = "\n".join(opening_lines(found, {}, 500, judged))
    assert "does not include the recommended" in text


def test_the_opening_goes_after_the_title_and_first_paragraph_and_is_absent_without_results():
    readme = "# Results\n\nWritten by ...; do not edit.\n\nEach cell ...\n"
    assert with_opening(readme, []) == readme
    placed = with_opening(readme, ["## Recommendation", "", "- x"])
    expected = "# Results\n\nWritten by ...; do not edit.\n\n## Recommendation\n\n- x\n\nEach cell"
    assert placed.startswith(expected)
    assert opening_lines({}, {}, 500) == []


def test_the_opening_reports_the_recommended_pairs_answers_beside_the_offline_ones_on_the_same_questions():
    values, intervals, summary = _tables()
    found = {"c": recommendations(summary, values, "c")}
    best = next(item for item in found["c"] if item.metric.label == "nDCG@10")
    judged = _judged()
    on_pair = judged["retriever"] == "dense"
    judged.loc[on_pair, "chunker"], judged.loc[on_pair, "retriever"] = best.chunker, best.retriever
    judged.loc[on_pair, "k"] = 2
    # Offline rows: the reader right on q0..q3 of the pair, plus a question the models never saw.
    offline = pd.DataFrame(
        [
            {
                "corpus": "c",
                "generator": "reader",
                "chunker": best.chunker,
                "retriever": best.retriever,
                "question_id": f"q{number}",
                "answerable": True,
                "correct": number < 4,
            }
            for number in range(11)
        ]
    )
    text = "\n".join(opening_lines(found, {}, 500, judged, offline))
    assert f"includes the recommended `{best.chunker}` + `{best.retriever}` at k = 2" in text
    # Independently: the large model answers 7 of the 10 questions, the small 3.
    assert "`large` 7 of 10 (0.70), `small` 3 of 10 (0.30)" in text
    # The offline reader on the models' 10 questions only (q10 left out).
    assert "Offline on the same 10 questions, judged by the same judge: `reader` 4 of 10 (0.40)" in text
    assert "does not include" not in text
    without = "\n".join(opening_lines(found, {}, 500, judged, offline.iloc[0:0]))
    assert "Its offline answers are not measured" in without
