"""The answer experiments: evidence quotes, per-question records, summaries and the abstention sweep."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter

import pandas as pd
import pytest

from rag.answering.answers import (
    GROUPS,
    GenerationSettings,
    answer_and_judge,
    collection_idf,
    evidence_documents,
    question_group,
    quoted_piece,
    reader_answers_frame,
)
from rag.answering.config_checks import DEFAULT_ABSTENTION_THRESHOLDS, canonical_answers
from rag.answering.extractive import ExtractiveAnswer, extract_answer
from rag.answering.prompts import PromptBudgetError, build_prompt
from rag.chunking import Chunk
from rag.kinds import ConfigError
from rag.labels import Evidence, Question, Span, SpanLocation
from rag.measuring.offline_tables import abstention_tradeoff_table, summarize_answers
from rag.text import analyze


def make_chunk(chunk_id: str, text: str, doc_id: str, title: str) -> Chunk:
    return Chunk(chunk_id, doc_id, title, "", 0, len(text), text)


D1 = make_chunk("d1", "Mars has two small moons, Phobos and Deimos.", "mars", "Mars")
D2 = make_chunk("d2", "Phobos orbits Mars faster than Mars rotates.", "mars", "Mars")
D3 = make_chunk("d3", "Jupiter has dozens of moons, including four large moons.", "jupiter", "Jupiter")
D4 = make_chunk("d4", "The red colour of Mars comes from iron oxide dust.", "mars", "Mars")
CHUNKS = [D1, D2, D3, D4]


def question(
    question_id: str, text: str, *pieces: tuple[str, ...], document: str | None = "mars"
) -> Question:
    evidence = tuple(Evidence(tuple(Span(span, document) for span in spans)) for spans in pieces)
    kind = "fact" if evidence else "unanswerable"
    return Question(question_id, text, kind, bool(evidence), evidence)


MOONS = question(
    "mars-moons", "What moons does Mars have?", ("Mars has two small moons, Phobos and Deimos.",)
)


def reference_idf(texts: list[str]) -> dict[str, float]:
    """ln(1 + (N - n + 0.5) / (n + 0.5)), counted independently of rag.retrieval.bm25."""
    frequency = Counter(term for text in texts for term in set(analyze(text)))
    return {term: math.log(1 + (len(texts) - n + 0.5) / (n + 0.5)) for term, n in frequency.items()}


# --------------------------------------------------------------------------
# What counts as quoting the evidence
# --------------------------------------------------------------------------


def test_collection_idf_is_the_positive_bm25_idf():
    texts = [chunk.text for chunk in CHUNKS]
    idf = collection_idf(texts)
    expected = reference_idf(texts)
    assert idf.keys() == expected.keys()
    for term, weight in expected.items():
        assert idf[term] == pytest.approx(weight, abs=1e-12)
    assert idf["moons"] == pytest.approx(math.log(2), abs=1e-12)  # the worked example's 0.6931
    with pytest.raises(ValueError, match="empty"):
        collection_idf([])


@pytest.mark.parametrize("stem", [False, True])
def test_collection_idf_is_bit_for_bit_the_retrievers_bm25_idf(stem):
    """collection_idf writes out bm25_idf over the term matrix's document frequencies, without scipy."""
    from rag.retrieval.bm25 import bm25_idf
    from rag.retrieval.search import count_terms

    texts = [chunk.text for chunk in CHUNKS] + ["Moons, moons and 81,296 moons.", "the of and"]
    counts = count_terms([analyze(text, stem=stem) for text in texts])
    weights = bm25_idf(counts.document_frequency, len(texts)).tolist()
    expected = dict(zip(counts.vocabulary.tolist(), weights, strict=True))
    idf = collection_idf(texts, stem=stem)
    assert list(idf.items()) == list(expected.items())


def test_a_sentence_equal_to_the_span_quotes_it():
    assert quoted_piece("Mars has two small moons, Phobos and Deimos.", "mars", MOONS) == 0


def test_a_sentence_containing_the_span_quotes_it():
    clause = question("q", "?", ("two small moons, Phobos and Deimos",))
    assert quoted_piece("Mars has two small moons, Phobos and Deimos.", "mars", clause) == 0


def test_a_sentence_inside_a_longer_span_quotes_it():
    long_span = question(
        "q", "?", ("Mars is red. Mars has two small moons, Phobos and Deimos. Both are small.",)
    )
    assert quoted_piece("Mars has two small moons, Phobos and Deimos.", "mars", long_span) == 0


def test_whitespace_does_not_matter_but_case_and_partial_overlap_do():
    assert quoted_piece("Mars has two small\n moons,  Phobos and Deimos.", "mars", MOONS) == 0
    assert quoted_piece("mars has two small moons, phobos and deimos.", "mars", MOONS) is None
    overlapping = question("q", "?", ("Phobos and Deimos. Both are small",))
    assert quoted_piece("Mars has two small moons, Phobos and Deimos.", "mars", overlapping) is None
    assert quoted_piece("", "mars", MOONS) is None


def test_the_span_must_come_from_the_same_document():
    assert quoted_piece("Mars has two small moons, Phobos and Deimos.", "jupiter", MOONS) is None
    anywhere = question("q", "?", ("Mars has two small moons, Phobos and Deimos.",), document=None)
    assert quoted_piece("Mars has two small moons, Phobos and Deimos.", "jupiter", anywhere) == 0


def test_any_alternative_of_any_piece_counts_and_the_piece_is_reported():
    comparison = question(
        "q",
        "Which has more moons?",
        ("Mars has two small moons",),
        ("Jupiter has dozens of moons", "Jupiter has dozens of moons, including four large moons."),
        document=None,
    )
    assert quoted_piece(D3.text, "jupiter", comparison) == 1
    assert quoted_piece(D1.text, "mars", comparison) == 0
    assert quoted_piece(D2.text, "mars", comparison) is None


def test_question_groups_follow_the_evidence_documents():
    locations = [
        SpanLocation("a", 0, 0, "mars", 0, 5, 1),
        SpanLocation("a", 0, 1, "mars", 9, 12, 1),
        SpanLocation("b", 0, 0, "mars", 0, 5, 1),
        SpanLocation("b", 1, 0, "jupiter", 0, 5, 1),
    ]
    a = question("a", "?", ("x",))
    b = question("b", "?", ("x",), ("y",))
    none = question("c", "?")
    documents = evidence_documents([a, b, none], locations)
    assert documents == {"a": ("mars",), "b": ("jupiter", "mars"), "c": ()}
    assert question_group(a, documents["a"]) == "single_document"
    assert question_group(b, documents["b"]) == "multi_document"
    assert question_group(none, documents["c"]) == "unanswerable"


# --------------------------------------------------------------------------
# One question, one record
# --------------------------------------------------------------------------

IDF = collection_idf([chunk.text for chunk in CHUNKS])


def test_the_worked_example_answer_is_recorded_and_judged():
    settings = GenerationSettings(k=2, threshold=0.5)
    record = answer_and_judge(MOONS, [D1, D2, D3], IDF, settings, {0: {"d1"}}, ("mars",))
    assert record.answered and not record.abstained
    assert record.answer == "Mars has two small moons, Phobos and Deimos [1]."
    assert record.cited_source == 1
    assert record.coverage == pytest.approx(1.0)
    assert record.quotes_evidence and record.best_quoted_piece == 0
    assert (record.best_chunk_id, record.best_document) == ("d1", "mars")
    assert record.citation_passed and record.support == 1.0
    assert record.sources == 2 and record.omitted == 0  # k cuts the ranking before the prompt
    assert record.pieces_in_prompt == 1
    assert record.prompt_tokens == build_prompt(MOONS.text, [D1, D2]).tokens == 91
    assert record.prompt_tokens_cl100k is None
    assert record.group == "single_document"


def test_an_abstention_keeps_its_best_sentence_but_answers_nothing():
    settings = GenerationSettings(k=1, threshold=0.5)
    # Only d2 in the prompt: its sentence covers mars but not moons, 0.3397.
    record = answer_and_judge(MOONS, [D2], IDF, settings, {0: {"d1"}}, ("mars",))
    assert not record.answered and record.abstained
    assert record.coverage == pytest.approx(IDF["mars"] / (IDF["mars"] + IDF["moons"]))
    assert record.best_sentence == D2.text and record.best_source == 1
    assert record.cited_source is None and record.citation_passed is None and record.support is None
    assert not record.quotes_evidence
    assert record.pieces_in_prompt == 0


def test_a_correct_sentence_withheld_is_not_counted_correct():
    settings = GenerationSettings(k=1, threshold=1.5)  # above any coverage
    record = answer_and_judge(MOONS, [D1], IDF, settings, {0: {"d1"}}, ("mars",))
    assert not record.answered
    assert record.best_quoted_piece == 0 and not record.quotes_evidence


def test_an_empty_ranking_has_no_best_sentence():
    record = answer_and_judge(MOONS, [], IDF, GenerationSettings(threshold=-10.0), {}, ("mars",))
    assert not record.answered and math.isnan(record.coverage) and record.best_sentence is None


def test_a_budget_and_a_second_counter_are_applied():
    def count_characters(text: str) -> int:
        return len(text)

    tight = build_prompt(MOONS.text, [D1]).text
    settings = GenerationSettings(k=3, budget=len(tight) + 5, count_tokens=count_characters)
    record = answer_and_judge(MOONS, [D1, D2, D3], IDF, settings, count_cl100k=count_characters)
    assert record.sources == 1 and record.omitted == 2
    assert record.prompt_tokens_cl100k == len(tight)


def test_a_budget_too_small_for_the_question_names_it():
    with pytest.raises(PromptBudgetError, match="question 'mars-moons'"):
        answer_and_judge(MOONS, [D1], IDF, GenerationSettings(budget=5))


def test_settings_are_checked():
    with pytest.raises(ValueError, match="k must be"):
        GenerationSettings(k=0)
    with pytest.raises(ValueError, match="threshold"):
        GenerationSettings(threshold=math.nan)


# --------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------


def template_record(**changes) -> object:
    base = answer_and_judge(MOONS, [D1], IDF, GenerationSettings(k=1), {0: {"d1"}}, ("mars",))
    return dataclasses.replace(base, **changes)


def test_summary_counts_by_group():
    records = [
        template_record(question_id="a"),  # single document, answered, correct
        template_record(
            question_id="b", quotes_evidence=False, best_quoted_piece=None, citation_passed=False
        ),
        template_record(
            question_id="c",
            answered=False,
            quotes_evidence=False,
            cited_source=None,
            citation_passed=None,
            support=None,
            pieces_in_prompt=0,
        ),
        template_record(question_id="d", group="multi_document", evidence_pieces=2, pieces_in_prompt=1),
        template_record(
            question_id="e",
            answerable=False,
            group="unanswerable",
            evidence_pieces=0,
            pieces_in_prompt=0,
            answered=False,
            quotes_evidence=False,
            citation_passed=None,
        ),
        template_record(
            question_id="f",
            answerable=False,
            group="unanswerable",
            evidence_pieces=0,
            pieces_in_prompt=0,
            quotes_evidence=False,
        ),
    ]
    frame = reader_answers_frame(records, corpus="c", chunker="s", retriever="r")
    assert list(frame.columns[:3]) == ["corpus", "chunker", "retriever"]
    summary = summarize_answers(frame, ["corpus", "chunker", "retriever"]).set_index("group")
    assert list(summary.index) == list(GROUPS)
    everything = summary.loc["all"]
    assert (everything.questions, everything.answered, everything.correct, everything.abstained) == (
        6,
        4,
        2,
        2,
    )
    assert everything.refused_unanswerable == 1
    assert everything.evidence_in_prompt == 3  # a, b, d; c has none and e, f have no evidence
    assert everything.all_evidence_in_prompt == 2  # d holds one of its two pieces
    assert everything.citation_passed == 3 and everything.citation_pass_rate == pytest.approx(3 / 4)
    single = summary.loc["single_document"]
    assert (single.questions, single.answered, single.correct) == (3, 2, 1)
    assert summary.loc["multi_document"].correct == 1
    assert summary.loc["unanswerable"].abstained == 1
    assert summary.loc["answerable"].questions == 4


def test_abstention_sweep_agrees_with_the_generator_at_every_threshold():
    questions = [
        MOONS,
        question(
            "jupiter-moons",
            "How many moons does Jupiter have?",
            ("Jupiter has dozens of moons",),
            document="jupiter",
        ),
        question("mars-colour", "What gives Mars its red colour?", ("iron oxide dust",)),
        question("mars-rings", "Which rings does Mars have?"),
        question("saturn-core", "What is the core temperature of Saturn?"),
    ]
    rankings = {
        "mars-moons": [D2, D1],
        "jupiter-moons": [D3, D1],
        "mars-colour": [D4],
        "mars-rings": [D2, D4],
        "saturn-core": [],
    }
    settings = GenerationSettings(k=2, threshold=0.5)
    records = [answer_and_judge(q, rankings[q.question_id], IDF, settings) for q in questions]
    frame = reader_answers_frame(records, corpus="c", chunker="s", retriever="r")
    thresholds = [-1.0, 0.0, 0.2, 0.34, 0.5, 0.9, 1.0, 1.01]
    table = abstention_tradeoff_table(frame, thresholds, ["corpus", "chunker", "retriever"])
    assert set(table["group"]) == {"answerable", "single_document", "unanswerable"}
    for threshold in thresholds:
        expected_answered, expected_correct = Counter(), Counter()
        for q in questions:
            prompt = build_prompt(q.text, rankings[q.question_id][:2])
            answer = extract_answer(prompt, IDF, threshold=threshold)
            if isinstance(answer, ExtractiveAnswer):
                group = "answerable" if q.answerable else "unanswerable"
                expected_answered[group] += 1
                chunk = prompt.sources[answer.source_number]
                expected_correct[group] += quoted_piece(answer.sentence, chunk.doc_id, q) is not None
        rows = table[table.threshold == threshold].set_index("group")
        for group in ("answerable", "unanswerable"):
            assert rows.loc[group, "answered"] == expected_answered[group], (threshold, group)
            assert rows.loc[group, "correct"] == expected_correct[group], (threshold, group)
            assert rows.loc[group, "answered"] + rows.loc[group, "abstained"] == rows.loc[group, "questions"]


def test_abstention_sweep_needs_thresholds():
    frame = reader_answers_frame([template_record()], corpus="c", chunker="s", retriever="r")
    with pytest.raises(ValueError, match="threshold"):
        abstention_tradeoff_table(frame, [], ["corpus"])


def test_nullable_columns_stay_empty_in_the_table():
    frame = reader_answers_frame([template_record(answered=False, cited_source=None, citation_passed=None)])
    assert pd.isna(frame.loc[0, "cited_source"]) and pd.isna(frame.loc[0, "citation_passed"])
    assert frame.loc[0, "abstained"]


# --------------------------------------------------------------------------
# The answers section of the configuration
# --------------------------------------------------------------------------

PAIRS = [
    ("sentences", "bm25"),
    ("sentences", "lsa"),
    ("sections", "bm25"),
    ("sections", "lsa"),
    ("fixed", "bm25"),
]
KINDS = {"bm25": "bm25", "lsa": "lsa", "sections_only": "bm25"}


def test_answers_defaults_cover_the_grid():
    answers = canonical_answers({}, PAIRS, KINDS, depth=10)
    assert answers["pairs"] == [list(pair) for pair in sorted(PAIRS)]
    assert answers["generation"] == {
        "k": 5,
        "threshold": 0.5,
        "token_counter": "word_and_punctuation",
        "budget": None,
    }
    assert answers["abstention"]["thresholds"] == [round(0.05 * step, 2) for step in range(21)]
    assert list(DEFAULT_ABSTENTION_THRESHOLDS[:3]) == [0.0, 0.05, 0.1]
    assert (answers["abstention"]["chunker"], answers["abstention"]["retriever"]) == ("fixed", "bm25")
    assert answers["summaries"] == {"chunker": "fixed", "retriever": "bm25", "window": 128000}


def test_answers_pairs_are_the_listed_names_that_the_grid_ranks():
    entry = {"chunkers": ["sections", "fixed"], "retrievers": ["lsa", "bm25"]}
    answers = canonical_answers(entry, PAIRS, KINDS, depth=10)
    assert answers["pairs"] == [["fixed", "bm25"], ["sections", "bm25"], ["sections", "lsa"]]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"retrievers": ["bm52"]}, "config['answers']['retrievers']: unknown retriever 'bm52'"),
        ({"chunkers": ["fixed"], "retrievers": ["lsa"]}, "retriever 'lsa' runs on none of the chunkers"),
        ({"k": 11}, "config['answers']['k']"),
        ({"abstention": {"chunker": "fixed", "retriever": "lsa"}}, "does not run on chunker 'fixed'"),
        ({"summaries": {"chunker": "sections", "retriever": "lsa"}}, "needs a bm25 retriever"),
    ],
)
def test_answers_mistakes_name_the_key(entry, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        canonical_answers(entry, PAIRS, KINDS, depth=10)


def test_the_schema_rejects_a_misspelled_answers_key():
    from pathlib import Path

    from rag.formats.files import read_yaml
    from rag.pipeline.config import schema_errors

    root = Path(__file__).resolve().parents[3]
    schema = read_yaml(root / "workflow/schemas/config.schema.yaml")
    config = read_yaml(root / "config.yaml")
    assert schema_errors(config, schema) == []
    config["answers"]["treshold"] = 0.3
    config["answers"]["summaries"]["windw"] = 10
    problems = schema_errors(config, schema)
    assert any(problem.startswith("config['answers']['treshold']: unknown key") for problem in problems)
    assert any(
        problem.startswith("config['answers']['summaries']['windw']: unknown key") for problem in problems
    )
