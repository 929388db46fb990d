"""Cohorts: metrics split by question type and by evidence document.

A mean over all questions can hide a cohort that fails: a retriever with a
good average may never find the evidence of one document, or of paraphrased
questions. So every metric is also reported per cohort, and the weakest
cohort is shown beside the mean.

A question's documents are the documents holding its evidence: those its
spans name, plus those of the chunks judged relevant to it (for spans that
name none). A question with evidence in several documents (a comparison)
counts in the cohort of *each* of them: a document's cohort then answers
"how well are the questions that need this document served", and a failure
to reach one of two documents shows up in that document's cohort. Cohorts
therefore overlap, and their sizes add up to more than the question count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from rag.labels import Question


def question_documents(question: Question, relevant_chunk_documents: Iterable[str] = ()) -> tuple[str, ...]:
    """The documents holding a question's evidence, sorted."""
    named = {span.document for evidence in question.evidence for span in evidence.spans if span.document}
    return tuple(sorted(named | set(relevant_chunk_documents)))


def document_cohorts(
    questions: Sequence[Question], qrels: pd.DataFrame, chunk_documents: Mapping[str, str]
) -> pd.DataFrame:
    """(question_id, document) pairs: one row per evidence document of each question."""
    relevant: dict[str, set[str]] = {}
    for question_id, chunk_id in qrels[["question_id", "chunk_id"]].itertuples(index=False):
        if chunk_id in chunk_documents:
            relevant.setdefault(question_id, set()).add(chunk_documents[chunk_id])
    rows = [
        (question.question_id, document)
        for question in questions
        for document in question_documents(question, relevant.get(question.question_id, ()))
    ]
    return pd.DataFrame(rows, columns=["question_id", "document"])


def _weakest(table: pd.DataFrame, cohort: str, min_questions: int) -> pd.Series:
    eligible = table[table["questions"] >= min_questions]
    if eligible.empty:
        return pd.Series({cohort: "", "value": float("nan"), "questions": 0})
    row = eligible.sort_values(["value", cohort], kind="mergesort").iloc[0]
    return pd.Series({cohort: row[cohort], "value": row["value"], "questions": int(row["questions"])})


def weakest_cohorts(
    overall: pd.DataFrame,
    cohort_tables: Mapping[str, pd.DataFrame],
    keys: Sequence[str],
    metric: str,
    k: int | None,
    min_questions: int = 1,
) -> pd.DataFrame:
    """Per grid entry: the mean of ``metric`` at ``k`` and the weakest cohort of each kind.

    ``overall`` and every cohort table are tables as written by the
    evaluation (keys, metric, k, value, questions), the cohort tables with
    one extra column named like their key in ``cohort_tables`` (e.g.
    ``{"type": by_type, "document": by_document}``). Cohorts smaller than
    ``min_questions`` are not considered: the weakest of single-question
    cohorts says more about noise than about the retriever. Ties go to the
    cohort name that sorts first.
    """

    def select(table: pd.DataFrame) -> pd.DataFrame:
        chosen = table[table["metric"] == metric]
        return chosen[chosen["k"].isna()] if k is None else chosen[chosen["k"] == k]

    result = select(overall)[[*keys, "value", "questions"]].rename(
        columns={"value": "mean", "questions": "questions"}
    )
    for cohort, table in cohort_tables.items():
        chosen = select(table)
        weakest = chosen.groupby(list(keys), sort=True)[[cohort, "value", "questions"]].apply(
            lambda group, cohort=cohort: _weakest(group, cohort, min_questions)
        )
        weakest = weakest.rename(
            columns={
                cohort: f"weakest_{cohort}",
                "value": f"weakest_{cohort}_value",
                "questions": f"weakest_{cohort}_questions",
            }
        ).reset_index()
        result = result.merge(weakest, on=list(keys), how="left")
        result[f"{cohort}_gap"] = result["mean"] - result[f"weakest_{cohort}_value"]
    result.insert(len(keys), "metric", metric)
    result.insert(len(keys) + 1, "k", pd.array([k] * len(result), dtype="Int64"))
    return result.sort_values(list(keys)).reset_index(drop=True)


# --------------------------------------------------------------------------
# Callers and tenants (issue 41): what each caller's filtered rankings find
# of the questions it may answer, by tenant, and how many chunks it may not
# read they hold (must be 0).
# --------------------------------------------------------------------------

CALLER_COLUMNS = (
    "corpus",
    "chunker",
    "retriever",
    "caller",
    "tenant",
    "k",
    "questions",
    "recall",
    "unauthorized_chunks",
)
SHARED_TENANT = "(shared)"


def question_tenants(
    relevance: Mapping[str, Mapping[str, Mapping[str, float]]],
    chunk_documents: Mapping[str, str],
    document_tenants: Mapping[str, str],
) -> dict[str, tuple[str, ...]]:
    """Each question's tenants: those of its relevant chunks' documents ("(shared)" for none), sorted."""
    tenants = {}
    for question_id, pieces in relevance.items():
        names = {
            document_tenants.get(chunk_documents[chunk_id], "") or SHARED_TENANT
            for chunks in pieces.values()
            for chunk_id in chunks
            if chunk_id in chunk_documents
        }
        tenants[question_id] = tuple(sorted(names))
    return tenants


def caller_cohort_rows(
    names: Mapping[str, str],
    rankings: Mapping[str, Sequence[str]],
    relevance: Mapping[str, Mapping[str, Mapping[str, float]]],
    readable_chunks: set[str] | frozenset[str],
    tenants: Mapping[str, tuple[str, ...]],
    k: int,
) -> list[dict]:
    """One caller's rows for one ranking: every tenant cohort and "all", with recall and unauthorized chunks.

    A question is in the caller's scope when each of its evidence pieces has
    a relevant chunk the caller may read (else no ranking of the caller
    could find it, and it would only lower recall); recall@k is averaged over
    the questions in scope. ``unauthorized_chunks`` counts every ranked chunk,
    of every question and at any depth, that the caller may not read: the
    filter's correctness, which must be 0.
    """
    from rag.evaluation.metrics import recall_at

    unauthorized = sum(chunk_id not in readable_chunks for ranked in rankings.values() for chunk_id in ranked)
    in_scope = [
        question_id
        for question_id, pieces in relevance.items()
        if pieces and all(set(chunks) & readable_chunks for chunks in pieces.values())
    ]
    cohorts: dict[str, list[str]] = {"all": in_scope}
    for question_id in in_scope:
        for tenant in tenants.get(question_id, ()):
            cohorts.setdefault(tenant, []).append(question_id)
    rows = []
    for tenant in ["all", *sorted(name for name in cohorts if name != "all")]:
        questions = cohorts[tenant]
        values = [recall_at(list(rankings.get(q, ())), relevance[q], k) for q in questions]
        rows.append(
            {
                **names,
                "tenant": tenant,
                "k": k,
                "questions": len(questions),
                "recall": sum(values) / len(values) if values else float("nan"),
                "unauthorized_chunks": unauthorized,
            }
        )
    return rows
