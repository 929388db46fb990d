"""``rag ask`` measured on labelled questions: results/answers_heldout.csv and its verdicts.

Every labelled question goes through ``rag ask``'s own path (its index, its
retrievers, its offline generators at their frozen thresholds), and each
answer is judged by the labels: correct when the quoted sentence quotes
labelled evidence, and by the reference answer for the verdicts' worth.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from rag.answering.answers import UNANSWERABLE, evidence_documents, question_group, quoted_piece
from rag.answering.reader import Similarity
from rag.ask.generators import measured_generators
from rag.ask.index import Embed, QuestionIndex
from rag.documents.blocks import Document
from rag.labels import Question, locate_spans
from rag.measuring.offline_tables import group_outcomes, members_of
from rag.retrieval.filters import Caller


def ask_summary(judgements: Sequence, **keys: str) -> list[dict]:
    """Rows of results/answers_heldout.csv: per question group, what ``rag ask`` got right.

    ``judgements`` are :class:`AskJudgement` records;
    shares come with the same bootstrap intervals as the answer summary.
    """
    from rag.measuring.verdicts import verdict_counts

    frame = pd.DataFrame([dataclasses.asdict(judgement) for judgement in judgements])
    frame["answerable"] = frame["group"] != UNANSWERABLE
    rows = group_outcomes(frame, keys, "correct", "faithful", prompts=False)
    for row in rows:
        members = members_of(frame, row["group"])
        row |= verdict_counts(
            members["answered"], members["faithful"], members["responsive"], members["outcome"]
        )
    return rows


# The generators measured on rag ask's path, from the table of kinds
# (rag.ask.generators.measured_generators): (name in the tables, the generator
# rag ask runs, the threshold it answers at (None: the reader's chosen one of
# that name), whether it adds the MiniLM similarity). rag ask finds its measured
# rates here by generator and similarity (rag.ask.generators.measured_name).
MEASURED_GENERATORS = measured_generators()


def measure_ask(
    documents: Sequence[Document],
    question_sets: Mapping[str, Sequence[Question]],
    thresholds: Mapping[str, float],
    embedder=None,
    caller: Caller | None = None,
    traces: list | None = None,
) -> list[dict]:
    """Rows of results/answers_heldout.csv: each question set through ``rag ask``'s path.

    Every retriever ``rag ask`` offers (the spec's BM25 + LSA + IVF, and
    BM25 + MiniLM when ``embedder``, a :class:`rag.answering.reader.CachedSentenceEmbedder`,
    is given) with both offline generators: the extractive generator at
    its default coverage and the reader at its frozen threshold (``thresholds``,
    reader -> threshold, :func:`rag.answering.reader.chosen_thresholds`). With MiniLM, the
    reader is also measured with its MiniLM similarity (``reader_minilm``,
    ``rag ask --similarity``), the signal meant for questions worded unlike
    their answers; the bundled corpus has few enough distinct sentences that
    embedding them all through the cache is cheap. ``caller`` and ``traces``
    are :func:`judge_ask_answers`'s: who the answers are for, and where one
    trace per answer goes.
    """
    from rag.answering.reader import DEFAULT_MODEL
    from rag.ask.index import IndexOptions, build_question_index

    setups = [("bm25_lsa_ivf", None)] + ([("bm25_minilm", embedder)] if embedder is not None else [])
    rows = []
    for retriever, dense in setups:
        embed = dense.embed if dense is not None else None
        options = IndexOptions(dense_model=DEFAULT_MODEL if dense is not None else None)
        index = build_question_index(documents, options, embed)
        memo: dict = {}  # retrievals of this index, shared by the generators and question sets
        # (name, the generator rag ask runs, its threshold, the similarity it adds)
        generators = [
            (
                name,
                runs,
                thresholds[name] if threshold is None else threshold,
                dense.similarity if minilm else None,
            )
            for name, runs, threshold, minilm in MEASURED_GENERATORS
            if dense is not None or not minilm
        ]
        for name, generator, threshold, similarity in generators:
            for questions_file, questions in question_sets.items():
                judged = judge_ask_answers(
                    index,
                    questions,
                    documents,
                    generator,
                    threshold,
                    embed,
                    similarity,
                    memo=memo,
                    caller=caller,
                    traces=traces,
                    trace_name=name,
                )
                keys = {"questions_file": questions_file, "retriever": retriever, "generator": name}
                rows += ask_summary(judged, **keys, threshold=f"{threshold:g}")
    return rows


def measured_ask_texts(
    documents: Sequence[Document], question_sets: Mapping[str, Sequence[Question]]
) -> list[str]:
    """Every text :func:`measure_ask` embeds with MiniLM, distinct and sorted.

    That is the indexed text of each chunk of ``rag ask``'s MiniLM index, each
    of those chunks' sentences and every question. The held-out check waits
    for every answer table, so it runs near the end of a build, mostly alone;
    encoding these texts in a job that needs only the documents and the
    questions moves that work to where other jobs keep the cores busy.
    """
    from rag.answering.reader import DEFAULT_MODEL, prompt_texts
    from rag.ask.index import IndexOptions, index_chunks

    chunks = index_chunks(documents, IndexOptions(dense_model=DEFAULT_MODEL))
    questions = [question.text for questions in question_sets.values() for question in questions]
    return sorted({*prompt_texts(questions, chunks), *(chunk.indexed_text for chunk in chunks)})


# --------------------------------------------------------------------------
# Judging rag ask's answers on labelled questions
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class AskJudgement:
    """One labelled question answered through ``rag ask``'s path, and what the labels say of it."""

    question_id: str
    group: str
    answered: bool
    correct: bool
    faithful: bool | None
    responsive: bool | None
    answer: str
    outcome: str  # by the reference answer (rag.measuring.correctness), for the verdicts' worth


def judge_ask_answers(
    index: QuestionIndex,
    questions: Sequence,
    documents: Sequence[Document],
    reader: str,
    threshold: float,
    embed: Embed | None = None,
    similarity: Similarity | None = None,
    weights=None,
    memo: dict | None = None,
    caller: Caller | None = None,
    traces: list | None = None,
    trace_name: str | None = None,
) -> list[AskJudgement]:
    """Answer every question as ``rag ask`` would (its defaults) and judge the answers by the labels.

    Correct means the quoted sentence quotes labelled evidence, exactly as
    in the answer experiments (:func:`quoted_piece`); ``outcome`` judges the
    same answer against the reference answer instead, as a language model's
    answers are judged, so the verdicts of every generator are measured alike.
    ``weights`` (a :class:`rag.answering.reader.ReaderWeights`) change the
    reader's weights and rules; None keeps its defaults. ``memo`` (a dict kept
    over the calls with one ``index`` and ``embed``) reuses retrievals across them
    (:func:`rag.ask.index.answer_question`). ``caller`` answers as that
    caller (its view is the searches' prefilter; None: every document);
    ``traces``, when given, gets one trace per question (docs/trace.md),
    naming the generator ``trace_name`` (default ``reader``).
    """
    from rag.ask.traces import report_trace
    from rag.measuring.correctness import judge_answer

    if traces is not None and caller is None:
        raise ValueError("a trace names the caller the answers were for: give caller with traces")
    from rag.ask.index import answer_question as ask_question

    holding = evidence_documents(questions, locate_spans(questions, documents))
    judged = []
    for question in questions:
        options = {} if weights is None else {"weights": weights}
        options |= {} if caller is None else {"caller": caller}
        report = ask_question(
            index,
            question.text,
            threshold=threshold,
            reader=reader,
            embed=embed,
            similarity=similarity,
            memo=memo,
            **options,
        )
        if traces is not None:
            name = trace_name or reader
            latency = {"answer": None}  # no wall-clock value: the same run writes the same bytes
            traces.append(
                report_trace(
                    report, index, caller, question.text, name, latency, question_id=question.question_id
                )
            )
        answered = not report.abstained
        outcome = judge_answer(report.answer, question.answer, question.answerable, not answered).outcome
        correct = False
        if answered:
            best = report.reading.best if report.reading is not None else report.extractive
            source = report.prompt.sources[best.source_number]
            correct = quoted_piece(best.sentence, source.doc_id, question) is not None
        judged.append(
            AskJudgement(
                question_id=question.question_id,
                group=question_group(question, holding[question.question_id]),
                answered=answered,
                correct=correct,
                faithful=report.verdicts.faithful if report.verdicts else None,
                responsive=report.verdicts.responsive if report.verdicts else None,
                answer=report.answer,
                outcome=outcome,
            )
        )
    return judged
