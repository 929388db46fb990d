"""Lead summaries as context and as a router, on small documents built by hand."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from rag.answering.routing import Route, route_questions, routed_right, routing_accuracy, within_document
from rag.answering.summaries import (
    fully_inside,
    lead_summaries,
    lead_summary,
    pieces_in_summaries,
    summary_chunks,
    summary_statistics,
)
from rag.documents.blocks import Block, Document
from rag.labels import Evidence, Question, Span, locate_spans
from rag.retrieval.search import Ranking

BM25 = {"kind": "bm25", "k1": 1.5, "b": 0.75, "idf": "lucene", "stem": False}


def document(doc_id: str, title: str, lead: list[str], body: list[str]) -> Document:
    blocks = [Block((), text) for text in lead] + [Block(("Details",), text) for text in body]
    return Document(doc_id, title, "1", tuple(blocks))


MARS = document(
    "mars",
    "Mars",
    ["Mars is the red planet. It has two small moons.", "Its year lasts 687 days."],
    ["Olympus Mons rises 22 km above the plains.", "Valles Marineris is a long canyon."],
)
JUPITER = document(
    "jupiter",
    "Jupiter",
    ["Jupiter is the largest planet, a giant of gas."],
    ["The Great Red Spot is a storm larger than Earth.", "Jupiter has dozens of moons."],
)
HEADLESS = Document("comet", "Comet", "1", (Block(("Orbit",), "The comet returns every 76 years."),))
DOCUMENTS = [MARS, JUPITER, HEADLESS]


def question(question_id: str, text: str, *pieces: tuple[str, str]) -> Question:
    evidence = tuple(Evidence((Span(span, doc),)) for doc, span in pieces)
    return Question(question_id, text, "fact" if evidence else "unanswerable", bool(evidence), evidence)


QUESTIONS = [
    question("mars-year", "How long is a year on Mars?", ("mars", "Its year lasts 687 days.")),
    question("mars-volcano", "How high is Olympus Mons?", ("mars", "Olympus Mons rises 22 km")),
    question(
        "largest",
        "Which is larger, Mars or Jupiter?",
        ("jupiter", "Jupiter is the largest planet"),
        ("mars", "Valles Marineris is a long canyon."),
    ),
    question(
        "both-leads",
        "What are Mars and Jupiter?",
        ("mars", "Mars is the red planet."),
        ("jupiter", "a giant of gas"),
    ),
    question("comet-core", "What is the core of the comet made of?"),
]


def test_the_lead_is_the_blocks_before_the_first_heading():
    summary = lead_summary(MARS)
    assert summary.blocks == 2
    assert summary.text == "Mars is the red planet. It has two small moons.\n\nIts year lasts 687 days."
    assert MARS.full_text.startswith(summary.text)  # offsets 0 to its end, as the chunk says
    headless = lead_summary(HEADLESS)
    assert (headless.text, headless.blocks) == ("", 0)
    assert [s.doc_id for s in lead_summaries(DOCUMENTS)] == ["comet", "jupiter", "mars"]
    chunks = summary_chunks(lead_summaries(DOCUMENTS))
    assert [chunk.doc_id for chunk in chunks] == ["jupiter", "mars"]  # nothing to show for the comet
    assert chunks[1].label == "Mars" and chunks[1].end == len(chunks[1].text)


def test_questions_with_all_evidence_inside_the_summaries():
    locations = locate_spans(QUESTIONS, DOCUMENTS)
    inside = pieces_in_summaries(QUESTIONS, locations, lead_summaries(DOCUMENTS))
    assert inside == {
        "mars-year": {0},
        "mars-volcano": set(),
        "largest": {0},
        "both-leads": {0, 1},
        "comet-core": set(),
    }
    # One piece of "largest" lies in a body section, so the summaries cannot answer it.
    assert fully_inside(QUESTIONS, inside) == ["mars-year", "both-leads"]


def test_summary_statistics_count_words_tokens_and_evidence():
    summaries = lead_summaries(DOCUMENTS)
    locations = locate_spans(QUESTIONS, DOCUMENTS)
    table = summary_statistics(summaries, QUESTIONS, locations, window=1000, count_cl100k=len)
    rows = table.set_index("doc_id")
    for summary in summaries:
        row = rows.loc[summary.doc_id]
        assert row.words == len(summary.text.split())
        assert row.tokens == len(re.findall(r"\w+|[^\w\s]", summary.text))
        assert row.tokens_cl100k == len(summary.text)
        assert row.window_share == pytest.approx(row.tokens / 1000)
    assert rows.loc["mars", "tokens"] == 18  # 15 words and 3 periods, counted by hand
    assert (
        rows.loc["mars", "evidence_pieces"] == 4
    )  # mars-year, mars-volcano, a piece each of two comparisons
    assert rows.loc["mars", "evidence_pieces_in_summary"] == 2
    assert rows.loc["jupiter", "evidence_pieces_in_summary"] == 2
    total = rows.loc["(all)"]
    assert total.words == sum(len(s.text.split()) for s in summaries)
    assert total.tokens == rows.drop("(all)")["tokens"].sum()
    assert total.evidence_pieces == 6 and total.evidence_pieces_in_summary == 4
    assert total.window_share == pytest.approx(total.tokens / 1000)
    assert total.summaries_per_window == pytest.approx(1000 / (total.tokens / 3))
    assert math.isnan(rows.loc["mars", "summaries_per_window"])
    with pytest.raises(ValueError, match="window"):
        summary_statistics(summaries, QUESTIONS, locations, window=0)


def test_routing_sends_each_question_to_the_summary_that_shares_its_words():
    summaries = lead_summaries(DOCUMENTS)
    routes = route_questions(
        [
            "How long is a Mars year?",
            "What is the largest gas giant?",
            "Tell me about the comet",
            "Mars and Jupiter",
        ],
        summaries,
        BM25,
    )
    assert [route.document for route in routes] == ["mars", "jupiter", None, routes[3].document]
    assert routes[0].runner_up is None  # no other summary shares a term
    assert routes[3].document in {"jupiter", "mars"} and routes[3].runner_up in {"jupiter", "mars"}
    assert routes[3].score >= routes[3].runner_up_score
    assert routes[2].score != routes[2].score  # NaN: routed nowhere


def test_routing_ties_go_to_the_lower_document_id():
    twins = lead_summaries(
        [document("b", "Twin", ["A moon of ice."], []), document("a", "Twin", ["A moon of ice."], [])]
    )
    (route,) = route_questions(["Which moon is made of ice?"], twins, BM25)
    assert (route.document, route.runner_up) == ("a", "b")
    assert route.score == route.runner_up_score


def test_routing_accuracy_counts_only_questions_with_evidence():
    routes = [Route("mars", 1.0, None, math.nan), Route("jupiter", 1.0, None, math.nan)] * 2
    routes.append(Route(None, math.nan, None, math.nan))
    evidence = [("mars",), ("mars",), ("jupiter", "mars"), (), ("jupiter",)]
    assert [routed_right(route, docs) for route, docs in zip(routes, evidence, strict=True)] == [
        True,
        False,
        True,
        None,
        False,
    ]
    assert routing_accuracy(routes, evidence) == (2, 4)


def test_within_document_keeps_the_order_and_cuts_to_depth():
    documents = ["a", "b", "a", "a", "b", "a"]
    ranking = Ranking(np.array([4, 0, 5, 1, 2, 3]), np.array([6.0, 5.0, 4.0, 3.0, 2.0, 1.0]))
    routed = within_document(ranking, documents, "a", depth=3)
    assert routed.positions.tolist() == [0, 5, 2]
    assert routed.scores.tolist() == [5.0, 4.0, 2.0]
    assert len(within_document(ranking, documents, None, depth=3)) == 0
    assert len(within_document(Ranking.empty(), documents, "a", depth=3)) == 0
    assert within_document(ranking, documents, "b", depth=10).positions.tolist() == [4, 1]
