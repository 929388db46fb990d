"""Questions, their evidence spans located in documents, and document judgements.

Relevance is defined once, on the documents, independently of any chunker: a
question's evidence is a list of pieces, each stated by one or more alternative
spans of text. Which chunks hold a piece is judged from these locations
(:mod:`rag.evaluation.chunk_judging`), so the same labels judge every chunking
strategy.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from rag.documents.blocks import Document
from rag.documents.rendering import render_span
from rag.text import count_words, split_sentences, tokenize

# The bundled corpus's question types, in the order its tables list them. Any
# other string is a valid type too: a type is the user's own cohort label, and
# tables list the types outside this tuple after it, in name order.
QUESTION_TYPES: tuple[str, ...] = (
    "fact",  # exact numbers and names, in the evidence's own words
    "paraphrase",  # shares at most one content word with its evidence
    "comparison",  # two pieces in different documents
    "subjectless",  # evidence sentence never names its subject
    "long_span",  # evidence of 20 to 40 words, which fixed windows can cut
    "restated",  # a fact stated twice, both spans listed as alternatives
    "unanswerable",  # the corpus does not give the answer
    "general",  # anything else (user question files)
)


class LabelError(ValueError):
    """Malformed or unmatched labels; the message names the question and span."""


@dataclass(frozen=True)
class Span:
    text: str
    document: str | None = None  # None: the span may sit in any document


@dataclass(frozen=True)
class Evidence:
    spans: tuple[Span, ...]
    gain: float = 1.0


@dataclass(frozen=True)
class Question:
    question_id: str
    text: str
    type: str = "general"
    answerable: bool = True
    evidence: tuple[Evidence, ...] = ()
    answer: str | None = None


@dataclass(frozen=True)
class SpanLocation:
    """Where one alternative of one piece of evidence sits."""

    question_id: str
    piece: int
    alternative: int
    doc_id: str
    start: int
    end: int
    words: int


# An evidence gain this large is a typo; it would make nDCG overflow or lose all precision.
MAX_GAIN = 1e6
_QUESTION_KEYS = {"id", "question", "type", "answerable", "evidence", "answer"}


def _short(text: str, characters: int = 80) -> str:
    """A span as quoted in an error: long ones are cut, so the message stays one readable line."""
    return text if len(text) <= characters else text[: characters - 3] + "..."


def _require(condition: bool, where: str, message: str) -> None:
    if not condition:
        raise LabelError(f"{where}: {message}")


def parse_questions(data: object, source: str) -> list[Question]:
    """Validate a loaded questions file (a list, or a mapping with ``questions``).

    ``source`` names the file in every error, with the question's id or index.
    """
    if isinstance(data, Mapping):
        data = data.get("questions")
    _require(isinstance(data, list), source, "expected a list of questions (or a 'questions:' list)")
    questions: list[Question] = []
    seen: set[str] = set()
    for index, item in enumerate(data):
        where = f"{source}: question #{index + 1}"
        _require(isinstance(item, Mapping), where, "must be a mapping")
        if "id" in item:
            where = f"{source}: question {item['id']!r}"
        unknown = sorted(set(item) - _QUESTION_KEYS)
        _require(not unknown, where, f"unknown key {unknown[0]!r}" if unknown else "")
        for key in ("id", "question"):
            _require(
                isinstance(item.get(key), str) and item[key].strip(), where, f"needs a non-empty {key!r}"
            )
        question_id = item["id"]
        _require(question_id not in seen, where, "duplicate id")
        seen.add(question_id)
        question_type = item.get("type", "general")
        _require(
            isinstance(question_type, str) and question_type.strip() != "", where, "'type' must be a label"
        )
        answerable = item.get("answerable", True)
        _require(isinstance(answerable, bool), where, "'answerable' must be true or false")
        evidence = tuple(_parse_evidence(item.get("evidence") or [], where))
        _require(not answerable or evidence, where, "an answerable question needs evidence")
        _require(answerable or not evidence, where, "an unanswerable question must not have evidence")
        answer = item.get("answer")
        _require(answer is None or isinstance(answer, str), where, "'answer' must be text")
        if answer is not None:
            answer = render_span(answer)
        questions.append(
            Question(question_id, item["question"].strip(), question_type, answerable, evidence, answer)
        )
    return questions


def _parse_evidence(pieces: object, where: str) -> list[Evidence]:
    _require(isinstance(pieces, list), where, "'evidence' must be a list of pieces")
    parsed = []
    for number, piece in enumerate(pieces, start=1):
        here = f"{where}, evidence piece {number}"
        _require(isinstance(piece, Mapping) and isinstance(piece.get("spans"), list), here, "needs 'spans'")
        unknown = sorted(set(piece) - {"spans", "gain"})
        _require(not unknown, here, f"unknown key {unknown[0]!r}" if unknown else "")
        spans = []
        for span in piece["spans"]:
            if isinstance(span, str):
                span = {"text": span}
            _require(
                isinstance(span, Mapping) and isinstance(span.get("text"), str), here, "a span needs 'text'"
            )
            _require(span["text"].strip() != "", here, "a span's text is empty")
            document = span.get("document")
            _require(
                document is None or (isinstance(document, str) and document.strip() != ""),
                here,
                "a span's 'document' must be a document id",
            )
            # Compared with the parsed text, so rendered the way the parser renders a paragraph:
            # a span copied from the source file, markup and all, matches the chunks' text.
            spans.append(Span(render_span(span["text"]), document))
        _require(bool(spans), here, "needs at least one span")
        gain = piece.get("gain", 1)
        _require(
            isinstance(gain, int | float) and not isinstance(gain, bool) and 0 < gain < MAX_GAIN,
            here,
            f"'gain' must be a positive number below {MAX_GAIN:g}",
        )
        parsed.append(Evidence(tuple(spans), float(gain)))
    return parsed


def locate_spans(
    questions: Sequence[Question], documents: Sequence[Document], source: str = ""
) -> list[SpanLocation]:
    """Every occurrence of every evidence span in the documents.

    A span that occurs nowhere, or more than once in one document, is an
    error naming the question and the span (and ``source``, the questions
    file, when given): silently dropping it would make a question look
    unanswerable, and a repeated span does not say which passage is the
    evidence. Every such span is reported at once, one per line
    (:func:`span_problems`).
    """
    locations, problems = span_problems(questions, documents)
    if problems:
        prefix = f"{source}: " if source else ""
        raise LabelError(f"{prefix}{len(problems)} evidence span problem(s):\n  " + "\n  ".join(problems))
    return locations


def span_problems(
    questions: Sequence[Question],
    documents: Sequence[Document],
    unreadable: Collection[str] = (),
    file_ids: Mapping[str, str] | None = None,
) -> tuple[list[SpanLocation], list[str]]:
    """The located spans, and one line per span that is not found or not unique in its document.

    A span not found comes with where it is when markup is ignored (and which
    markup differs), else the closest passage. ``unreadable`` are documents
    that did not parse: a span naming one is not reported again. ``file_ids``
    maps a file's name (with or without its ending) to the id its front matter
    set: a span naming the file gets a hint naming the id.
    """
    file_ids = file_ids or {}
    texts = {document.doc_id: document.full_text for document in documents}
    locations: list[SpanLocation] = []
    problems: list[str] = []
    for question in questions:
        for piece, evidence in enumerate(question.evidence):
            for alternative, span in enumerate(evidence.spans):
                if span.document in unreadable:
                    continue
                name = f"question {question.question_id!r}: evidence span {_short(span.text)!r}"
                if span.document is not None and span.document not in texts:
                    hint = ""
                    if span.document in file_ids:
                        hint = (
                            f" (the front matter of file {span.document!r} sets the id "
                            f"{file_ids[span.document]!r}: name that instead)"
                        )
                    problems.append(f"{name} names unknown document {span.document!r}{hint}")
                    continue
                doc_ids = [span.document] if span.document is not None else list(texts)
                found = False
                for doc_id in doc_ids:
                    text = texts[doc_id]
                    starts = []
                    start = text.find(span.text)
                    while start >= 0:
                        starts.append(start)
                        start = text.find(span.text, start + 1)
                    found = found or bool(starts)
                    if len(starts) > 1:
                        places = ", ".join(str(start) for start in starts[:5])
                        problems.append(
                            f"{name} occurs {len(starts)} times in document {doc_id!r} (at characters "
                            f"{places}); a span must be unique in its document, so lengthen it"
                        )
                    for start in starts:
                        end = start + len(span.text)
                        words = count_words(span.text)
                        locations.append(
                            SpanLocation(question.question_id, piece, alternative, doc_id, start, end, words)
                        )
                if not found:
                    where = f"document {span.document!r}" if span.document else "any document"
                    candidates = {doc_id: texts[doc_id] for doc_id in doc_ids}
                    problems.append(f"{name} not found in {where}{_not_found_hint(span.text, candidates)}")
    return locations, problems


# Characters of Markdown inline markup and block markers. A span that matches a
# document only once they are ignored differs from it in markup alone.
MARKUP_CHARACTERS: dict[str, str] = {
    "`": "backticks (code)",
    "*": "emphasis (* or _)",
    "_": "emphasis (* or _)",
    "[": "link brackets ([text][ref], [text](url))",
    "]": "link brackets ([text][ref], [text](url))",
    "{": "a role ({mod}`...`)",
    "}": "a role ({mod}`...`)",
    ">": "a quote marker or tag (> )",
    "<": "an HTML tag (<...>)",
    "\\": "a backslash escape",
    "#": "a heading marker (#)",
    "|": "a table bar (|)",
    "~": "a tilde (~)",
}


def _without_markup(text: str) -> tuple[str, list[int]]:
    """``text`` without markup characters and spaces, with each kept character's position."""
    kept, positions = [], []
    for position, character in enumerate(text):
        if character not in MARKUP_CHARACTERS and not character.isspace():
            kept.append(character)
            positions.append(position)
    return "".join(kept), positions


# What markup carries beside the text a reader sees: a link's label or address
# ("][ref]", "](url)") and a role's name ("{mod}" before a backtick). A span cut
# through a link keeps them, so they are dropped before comparing.
_MARKUP_TAILS = re.compile(r"\]\[[^\]\n]*\]|\]\([^)\n]*\)|\{[\w:.+-]+\}(?=`)")


def markup_difference(span: str, texts: Mapping[str, str]) -> tuple[str, str, list[str]] | None:
    """Where ``span`` matches once markup characters and spaces are ignored, and which markup differs.

    (document id, the document's text there, the kinds of markup that differ),
    or None when the span does not match even so.
    """
    bare, _ = _without_markup(_MARKUP_TAILS.sub("]", span))
    if not bare:
        return None
    for doc_id in sorted(texts):
        stripped, positions = _without_markup(texts[doc_id])
        start = stripped.find(bare)
        if start < 0:
            continue
        first, last = positions[start], positions[start + len(bare) - 1] + 1
        passage = texts[doc_id][first:last]
        differing = Counter(c for c in span if c in MARKUP_CHARACTERS)
        differing.subtract(Counter(c for c in passage if c in MARKUP_CHARACTERS))
        kinds = sorted({MARKUP_CHARACTERS[c] for c, count in differing.items() if count})
        return doc_id, passage, kinds
    return None


def _not_found_hint(span: str, texts: Mapping[str, str]) -> str:
    """What to fix in a span found nowhere: the markup that differs, else the closest passage."""
    difference = markup_difference(span, texts)
    if difference is not None:
        doc_id, passage, kinds = difference
        what = "; ".join(kinds) if kinds else "spacing"
        return (
            f"; it differs in markup only ({what}) from {_short(passage, 160)!r} in {doc_id!r}: "
            "copy the span from that text"
        )
    closest = closest_passage(span, texts)
    return f"; closest passage in {closest[0]!r}: {closest[1]!r}" if closest else ""


def closest_passage(span: str, texts: Mapping[str, str], longest: int = 200) -> tuple[str, str] | None:
    """The sentence sharing most words with ``span``, as (document id, sentence).

    Words are the analyzer's tokens, so case, accents and punctuation do not
    matter; ties go to the first document in id order and the first sentence.
    None when no sentence shares a word.
    """
    wanted = set(tokenize(span))
    best: tuple[int, str, str] | None = None
    for doc_id in sorted(texts):
        text = texts[doc_id]
        for start, end in split_sentences(text):
            sentence = text[start:end]
            shared = len(wanted & set(tokenize(sentence)))
            if shared and (best is None or shared > best[0]):
                best = (shared, doc_id, sentence)
    if best is None:
        return None
    sentence = best[2] if len(best[2]) <= longest else best[2][: longest - 1] + "…"
    return best[1], sentence


@dataclass(frozen=True)
class DocumentJudgement:
    """One judged (question, document) pair; ``gain`` 0 means judged not relevant."""

    question_id: str
    doc_id: str
    gain: int


def evidence_judgements(
    questions: Sequence[Question],
    locations: Iterable[SpanLocation],
    units_of: Callable[[SpanLocation], Iterable[str]] = lambda location: [location.doc_id],
) -> list[DocumentJudgement]:
    """Document judgements from evidence spans: a unit holding a span is relevant.

    ``units_of`` names the units (documents by default; sections or
    paragraphs for an export) that hold a located span. A unit's gain is the
    largest gain of the pieces it holds. Gains must be whole numbers, as in
    BEIR's qrels. Locations of questions not listed are ignored.
    """
    gains = {
        (question.question_id, piece): evidence.gain
        for question in questions
        for piece, evidence in enumerate(question.evidence)
    }
    best: dict[tuple[str, str], int] = {}
    for location in locations:
        gain = gains.get((location.question_id, location.piece))
        if gain is None:  # a question the caller left out
            continue
        if not float(gain).is_integer():
            raise ValueError(
                f"question {location.question_id!r}: gain {gain} of piece {location.piece + 1} "
                "is not a whole number, which document judgements require"
            )
        for unit in units_of(location):
            key = (location.question_id, unit)
            best[key] = max(best.get(key, 0), int(gain))
    return [DocumentJudgement(question_id, unit, gain) for (question_id, unit), gain in sorted(best.items())]
