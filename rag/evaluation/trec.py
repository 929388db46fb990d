"""Rankings and labels in TREC's plain-text formats, for trec_eval, ir-measures, ranx or PyTerrier.

A run line is ``query_id Q0 doc_id rank score run_name``; a qrels line is
``query_id 0 doc_id relevance``. Those tools order a run by score, not by the
rank column, and each breaks ties its own way; so the written scores strictly
decrease down every list, even when read in single precision: a score that is
not clearly below the one above it (see :func:`strictly_decreasing`) is
written just below it. Every tool then reads exactly the pipeline's order.

Relevance must be an integer in qrels. The pipeline's gains are positive
numbers; they are scaled by the smallest power of ten that makes them all
whole. nDCG with linear gains is unchanged by a common factor.

Recall in the pipeline counts evidence pieces, not chunks: a piece is found
when any chunk that holds it is ranked. The piece qrels give each piece a
query of its own (``question_id#piece``) whose relevant documents are the
piece's chunks, so a tool's success@k on a piece query is whether the piece
was found, and a question's recall is the mean over its pieces (a piece that
no chunk holds has no line and counts as missed).
"""

from __future__ import annotations

import gzip
import io
import math
from collections.abc import Iterable, Mapping, Sequence

SCORE_DECIMALS = 6
PIECE_SEPARATOR = "#"
# The least a written score lies below the one above it (see strictly_decreasing).
_SMALLEST_STEP = 10.0**-SCORE_DECIMALS


def _check_id(value: str, what: str) -> str:
    # str.split() splits on exactly the characters str.isspace() names, so an id
    # is one field when it splits into itself: one C call instead of one per character.
    if value.split() != [value]:
        raise ValueError(f"{what} {value!r} is empty or contains whitespace; TREC files split on spaces")
    return value


def strictly_decreasing(scores: Sequence[float]) -> list[float]:
    """Scores rounded to SCORE_DECIMALS, each kept clearly below the one above it.

    "Clearly" means by at least 1e-6 and by 2**-20 of the score: some readers
    (trec_eval's and pytrec_eval's) hold scores in single precision, whose
    resolution near 20 is 2e-6, so a nudge of 1e-6 alone would still tie.
    """
    for score in scores:
        if not math.isfinite(score):
            raise ValueError(f"score {score!r} is not a finite number")
    return _nudged([round(float(score), SCORE_DECIMALS) for score in scores], 1)


def _nudged(rounded: list[float], first: int) -> list[float]:
    """Rounded scores with every one from position ``first`` on kept clearly below the one above it.

    The scores before ``first`` are known to need no nudge (each is clearly
    below its predecessor), so the sequential loop starts where the first
    nudge may be.
    """
    written = rounded[:first]
    for value in rounded[first:]:
        if written:
            previous = written[-1]
            step = max(_SMALLEST_STEP, abs(previous) * 2.0**-20)
            if value > previous - step:
                value = round(previous - step, SCORE_DECIMALS)
        written.append(value)
    return written


def strictly_decreasing_lists(lists: Sequence[Sequence[float]]) -> list[list[float]]:
    """:func:`strictly_decreasing` of each list, with the check for nudges done once over all of them.

    A run has about 10,000 scores and few ties, so each score is rounded (by
    Python's ``round``, as there) and one vectorised comparison finds, in each
    list, the first rounded score that is not clearly below the one above it;
    from there on the sequential loop takes over, as its nudges depend on the
    scores already written. The comparison is the same IEEE arithmetic (abs,
    a power-of-two product, max, a difference) elementwise, so the prefix it
    passes is exactly what the loop writes.
    """
    import numpy as np

    flat = [float(score) for scores in lists for score in scores]
    if not all(map(math.isfinite, flat)):
        return [strictly_decreasing(scores) for scores in lists]  # raises on the first bad score
    rounded = [round(score, SCORE_DECIMALS) for score in flat]
    values = np.array(rounded, dtype=np.float64)
    previous = values[:-1]
    nudged = values[1:] > previous - np.maximum(_SMALLEST_STEP, np.abs(previous) * 2.0**-20)
    written, start = [], 0
    for end in np.cumsum([len(scores) for scores in lists], dtype=np.int64).tolist():
        # nudged[i] compares score i + 1 with score i; a list's first score has no score above it.
        ties = np.flatnonzero(nudged[start : end - 1]) if end - start > 1 else ()
        written.append(_nudged(rounded[start:end], int(ties[0]) + 1) if len(ties) else rounded[start:end])
        start = end
    return written


def run_lines(rankings: Mapping[str, Sequence[tuple[str, float]]], run_name: str) -> str:
    """A TREC run: for each query in id order, its (document, score) list in rank order."""
    _check_id(run_name, "run name")
    # A run repeats the same few hundred chunk ids in every query: each is checked once,
    # and every line is one f-string of one comprehension (a run has ~10,000 lines).
    checked: set[str] = set()
    lines: list[str] = []
    queries = sorted(rankings)
    written = strictly_decreasing_lists([[score for _, score in rankings[query]] for query in queries])
    for query_id, scores in zip(queries, written, strict=True):
        _check_id(query_id, "query id")
        documents = [doc_id for doc_id, _ in rankings[query_id]]
        for doc_id in documents:
            if doc_id not in checked:
                checked.add(_check_id(doc_id, "document id"))
        lines += [
            f"{query_id} Q0 {doc_id} {rank} {score:.{SCORE_DECIMALS}f} {run_name}\n"
            for rank, doc_id, score in zip(range(1, len(documents) + 1), documents, scores, strict=True)
        ]
    return "".join(lines)


def ranked_lists(columns: Mapping[str, Sequence]) -> dict[str, list[tuple[str, float]]]:
    """The columns of a ranking table as each question's (chunk id, score) list in rank order."""
    rows = sorted(
        zip(columns["question_id"], columns["rank"], columns["chunk_id"], columns["score"], strict=True)
    )
    lists: dict[str, list[tuple[str, float]]] = {}
    for question_id, _, chunk_id, score in rows:
        lists.setdefault(question_id, []).append((chunk_id, float(score)))
    return lists


def document_list(
    ranked: Sequence[tuple[str, float]], document_of: Mapping[str, str]
) -> list[tuple[str, float]]:
    """A chunk list as a document list: each document at the rank, and with the score, of its best chunk.

    The same order as ``rag.evaluation.document_relevance.collapse_to_documents``, which
    the document-level metrics evaluate.
    """
    documents: dict[str, float] = {}
    for chunk_id, score in ranked:
        if chunk_id not in document_of:
            raise ValueError(f"chunk {chunk_id!r} belongs to no known document")
        documents.setdefault(document_of[chunk_id], score)
    return list(documents.items())


def gain_scale(gains: Iterable[float]) -> int:
    """The smallest power of ten (up to 10**6) that makes every gain a whole number."""
    gains = list(gains)
    for exponent in range(7):
        scale = 10**exponent
        if all(abs(gain * scale - round(gain * scale)) < 1e-9 for gain in gains):
            return scale
    raise ValueError("gains need more than six decimals; TREC qrels hold integers")


def qrels_lines(judgements: Iterable[tuple[str, str, float]]) -> str:
    """TREC qrels from (query id, document id, gain) rows, gains scaled to integers; sorted lines."""
    rows = list(judgements)
    scale = gain_scale(gain for _, _, gain in rows)
    lines = sorted(
        (_check_id(query, "query id"), _check_id(doc, "document id"), int(round(gain * scale)))
        for query, doc, gain in rows
    )
    return "".join(f"{query} 0 {doc} {relevance}\n" for query, doc, relevance in lines)


def chunk_judgements(
    relevance: Mapping[str, Mapping[str, Mapping[str, float]]],
) -> list[tuple[str, str, float]]:
    """(question, chunk, gain) with each chunk's largest gain over its pieces, as nDCG counts it."""
    rows = []
    for question_id, pieces in relevance.items():
        gains: dict[str, float] = {}
        for chunks in pieces.values():
            for chunk_id, gain in chunks.items():
                gains[chunk_id] = max(gains.get(chunk_id, 0.0), float(gain))
        rows += [(question_id, chunk_id, gain) for chunk_id, gain in gains.items()]
    return rows


def piece_judgements(
    relevance: Mapping[str, Mapping[str, Mapping[str, float]]],
) -> list[tuple[str, str, float]]:
    """(question#piece, chunk, 1) for every chunk holding a piece: recall@k as success@k per piece."""
    return [
        (f"{question_id}{PIECE_SEPARATOR}{piece}", chunk_id, 1.0)
        for question_id, pieces in relevance.items()
        for piece, chunks in pieces.items()
        for chunk_id in chunks
    ]


def gzip_bytes(text: str) -> bytes:
    """Gzip with a zero timestamp and no file name, so a rerun writes byte-identical files.

    Runs are always compressed (a run of 100 questions at depth 100 is about
    half a megabyte of text); qrels are small and stay plain.
    """
    data = text.encode("utf-8")
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as archive:
        archive.write(data)
    return out.getvalue()


def run_file(path, run_name: str) -> bytes:
    """A ranking file (rag.retrieval.ranking_files.RANKING_COLUMNS) as the gzip bytes of its
    TREC run named ``run_name``."""
    from rag.formats.tables import read_columns
    from rag.retrieval.ranking_files import RANKING_COLUMNS

    return gzip_bytes(run_lines(ranked_lists(read_columns(path, RANKING_COLUMNS)), run_name))
