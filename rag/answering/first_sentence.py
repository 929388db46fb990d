"""A lower bound for the offline generators: answer with the top chunk's first sentence.

It reads nothing of the question: the first sentence of the first source
(the best-ranked chunk that has a sentence), quoted with its citation [1],
is the answer whatever was asked, and it never abstains. What the extractive
generator and the reader get right beyond it is what choosing a sentence is
worth; what it gets right at all is what retrieval alone puts first. The
``score`` and ``coverage`` it reports are the sentence's idf coverage of
the question (rag.answering.extractive.score_sentences), which says how
much of the question that first sentence happened to cover.
"""

from __future__ import annotations

from collections.abc import Mapping

from rag.answering.extractive import BestSentence, score_sentences
from rag.answering.prompts import Prompt


def best_sentence(prompt: Prompt, idf: Mapping[str, float], similarity: object = None) -> BestSentence | None:
    """The ``read`` of kind first_sentence (rag.kinds): the first sentence of the prompt, None without one."""
    first = next(iter(score_sentences(prompt, idf)), None)
    if first is None:
        return None
    return BestSentence(first.sentence, first.source_number, first.coverage, first.coverage)
