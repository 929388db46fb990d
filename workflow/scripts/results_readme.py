"""results/README.md from the summary, interval and significance tables, never by hand."""

import pandas as pd

from rag.evaluation.holdout import with_holdout_rows
from rag.evaluation.opening import opening_lines, with_opening
from rag.evaluation.recommendation import k_choice_lines, k_choices, recommendation_lines, recommendations
from rag.evaluation.significance import PERMUTATIONS, RESAMPLES
from rag.evaluation.summary import grid_edge_lines, results_readme
from rag.formats.files import write_text
from rag.measuring.refusal_choice import llm_answer_sections
from rag.measuring.same_measure import same_measure_tables
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
summary = pd.read_csv(snakemake.input.summary, keep_default_na=False, na_values=[""])
significance = pd.read_csv(snakemake.input.significance, dtype={"k": "Int64"})
intervals = pd.read_csv(snakemake.input.intervals, dtype={"k": "Int64"})
for column in [name for name in summary.columns if name.endswith("_vs_baseline")]:
    summary[column] = summary[column].fillna("")
values = pd.concat([pd.read_parquet(path) for path in snakemake.input.question_values], ignore_index=True)
# A holdout share's questions again, as corpus '<name>:holdout' (rag.evaluation.holdout).
values = with_holdout_rows(values, snakemake.params.holdouts)
corpora = sorted(summary["corpus"].unique())
answers_link = snakemake.params.answers_link
found = {corpus: recommendations(summary, values, corpus) for corpus in corpora}
recommended = {corpus: recommendation_lines(found[corpus], answers_link) for corpus in corpora}
# Which k at the prompt budget (evaluation.prompt_budget): recall per prompt word, from every k's interval.
budget = snakemake.params.prompt_budget
choices = {corpus: k_choices(intervals, corpus, budget) for corpus in corpora}
which_k = {corpus: k_choice_lines(choices[corpus], budget) for corpus in corpora}
# Choices at the edge of their grid, from the tables that hold them (present when configured).
thresholds = pd.read_csv(snakemake.input.thresholds[0]) if snakemake.input.thresholds else None
learned = pd.read_csv(snakemake.input.learned[0]) if snakemake.input.learned else None
edges = grid_edge_lines(thresholds, learned)
readme = results_readme(
    summary,
    significance,
    snakemake.params.baseline,
    RESAMPLES,
    PERMUTATIONS,
    recommended,
    edges,
    which_k=which_k,
    learned=learned,
)
# The opening (rag.evaluation.opening): the models' and the offline answers of the
# same questions on one measure (rag.measuring.same_measure).
judged, offline = None, None
if snakemake.input.llm_judged:
    judged = pd.read_csv(snakemake.input.llm_judged[0], keep_default_na=False, na_values=[""])
    sections = llm_answer_sections(judged, snakemake.params.outcome_generators)
    readme = readme.rstrip("\n") + "\n\n" + "\n".join(sections) + "\n"
    answers = [
        pd.read_csv(path, keep_default_na=False, na_values=[""]) for path in snakemake.input.offline_answers
    ]
    judged, offline = same_measure_tables(judged, answers[0] if answers else None)
readme = with_opening(readme, opening_lines(found, choices, budget, judged, offline))
write_text(snakemake.output[0], readme)
finish_job()
