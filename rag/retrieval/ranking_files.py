"""Rankings files: one row per (question, rank), written by every ranking kind through one writer."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from rag import __version__
from rag.formats.arrow_columns import numeric_column, string_column
from rag.formats.tables import read_columns, read_provenance, write_parquet
from rag.provenance import ranking_record
from rag.retrieval.search import Ranking

if TYPE_CHECKING:
    import pyarrow as pa


RANKING_COLUMNS = ["question_id", "rank", "chunk_id", "score"]


def write_ranking(
    path: str | os.PathLike,
    question_ids: Sequence[str],
    rankings: Sequence,
    chunk_ids: Sequence[str],
    *,
    chunk_set: Mapping,
    retriever: Mapping,
    code: str,
    stage: str,
    **parts: object,
) -> None:
    """Write one ranking file of any kind, with its whole record.

    The one writer every ranking kind (sparse, LSA, embedder, IVF, fusion,
    funnel, filtered) goes through: ``chunk_set`` is the chunk file's
    provenance, ``retriever`` the retriever's record
    (``rag.provenance.retriever_record`` or ``composite_record``), ``code``
    the rule's code digest, and ``parts`` anything more the kind records
    (a filter, nested first stages). ``rag.provenance.ranking_record``
    refuses a record without the chunk set, the retriever or the code, so no
    kind can write a ranking whose digest would not tell it apart.
    """
    record = {"rag_version": __version__, **ranking_record(chunk_set, retriever, code, stage, **parts)}
    write_parquet(rankings_to_table(question_ids, rankings, chunk_ids), path, record)


def rankings_to_table(question_ids: Sequence[str], rankings: Sequence, chunk_ids: Sequence[str]) -> pa.Table:
    """One row per (question, rank); an empty ranking simply has no rows.

    The columns are built from numpy arrays and encoded strings
    (:mod:`rag.formats.arrow_columns`), not converted from Python lists:
    pyarrow's list conversion imports pandas, which would cost a ranking job
    more than its own work.
    """
    import pyarrow as pa

    counts = [len(ranking.positions) for ranking in rankings]
    if len(counts) != len(question_ids):
        raise ValueError(f"{len(question_ids)} question ids for {len(counts)} rankings")
    pairs = zip(question_ids, counts, strict=True)
    repeated_ids = [str(question_id) for question_id, count in pairs for _ in range(count)]
    positions = [np.asarray(ranking.positions, dtype=np.int64) for ranking in rankings]
    scores = [np.asarray(ranking.scores, dtype=np.float64) for ranking in rankings]
    columns = {
        "question_id": string_column(repeated_ids),
        "rank": numeric_column(
            np.concatenate([np.arange(1, count + 1, dtype=np.int64) for count in counts] or [[]]),
            np.int64,
        ),
        "chunk_id": string_column(
            [chunk_ids[position] for ranked in positions for position in ranked.tolist()]
        ),
        "score": numeric_column(np.concatenate(scores or [[]]), np.float64),
    }
    return pa.table(columns, schema=ranking_schema())


def ranking_schema() -> pa.Schema:
    """Column types of a rankings table, fixed so that an empty table keeps them."""
    import pyarrow as pa

    return pa.schema(
        [
            ("question_id", pa.string()),
            ("rank", pa.int64()),
            ("chunk_id", pa.string()),
            ("score", pa.float64()),
        ]
    )


def _ranked_rows(columns: Mapping[str, Sequence], question_ids: Sequence[str]) -> dict[str, list[tuple]]:
    """question id -> its (rank, chunk id, score) rows, best first; every given question, no other."""
    rows: dict[str, list[tuple]] = {question_id: [] for question_id in question_ids}
    for row in zip(
        columns["question_id"], columns["rank"], columns["chunk_id"], columns["score"], strict=True
    ):
        if row[0] in rows:
            rows[row[0]].append(row[1:])
    return {question_id: sorted(ranked) for question_id, ranked in rows.items()}


def rankings_from_columns(
    columns: Mapping[str, Sequence], chunk_ids: Sequence[str], question_ids: Sequence[str]
) -> dict:
    """question id -> Ranking over chunk positions (empty for unranked questions).

    ``columns`` holds the rankings table's columns, as ``read_columns`` gives them.
    """
    position = {chunk_id: index for index, chunk_id in enumerate(chunk_ids)}
    return {
        question_id: Ranking(
            np.array([position[chunk_id] for _, chunk_id, _ in rows], dtype=np.int64),
            np.array([score for _, _, score in rows], dtype=np.float64),
        )
        for question_id, rows in _ranked_rows(columns, question_ids).items()
    }


def ranked_chunk_ids(columns: Mapping[str, Sequence], question_ids: Sequence[str]) -> dict[str, list[str]]:
    """question id -> its ranked chunk ids, best first, from a rankings table's columns.

    Every given question is kept, ranked or not, and no other; evaluations
    need ids, not positions, so no chunk table is read.
    """
    return {
        question_id: [chunk_id for _, chunk_id, _ in rows]
        for question_id, rows in _ranked_rows(columns, question_ids).items()
    }


def read_rankings(path: str | os.PathLike, chunk_ids: Sequence[str], question_ids: Sequence[str]) -> dict:
    """A rankings file as question id -> Ranking (see ``rankings_from_columns``)."""
    return rankings_from_columns(read_columns(path, RANKING_COLUMNS), chunk_ids, question_ids)


def read_rankings_in_order(
    path: str | os.PathLike, chunk_ids: Sequence[str], question_ids: Sequence[str]
) -> list:
    """A rankings file's Rankings in the order of ``question_ids`` (empty for an unranked question).

    A filtered ranking job whose view allows every chunk returns these, the
    unfiltered ranking itself: the prefilter of a mask that allows every
    chunk is no filter, so the two must be the same list.
    """
    rankings = read_rankings(path, chunk_ids, question_ids)
    return [rankings[question_id] for question_id in question_ids]


def read_component_rankings(
    paths: Sequence[str | os.PathLike], chunk_ids: Sequence[str]
) -> tuple[list[str], list[dict]]:
    """The rankings files of a fusion's components, read over the same questions.

    Returns every question any component ranks, sorted, and each component
    as question id -> Ranking over those questions (see ``rankings_from_columns``).
    """
    tables = [read_columns(path, RANKING_COLUMNS) for path in paths]
    question_ids = sorted(set().union(*(table["question_id"] for table in tables)))
    return question_ids, [rankings_from_columns(table, chunk_ids, question_ids) for table in tables]


def read_component_provenance(names: Sequence[str], paths: Sequence[str | os.PathLike]) -> dict[str, dict]:
    """Component name -> the provenance of its rankings file, for a composite ranking's record."""
    return {name: read_provenance(path) for name, path in zip(names, paths, strict=True)}


def read_ranked_chunk_ids(path: str | os.PathLike, question_ids: Sequence[str]) -> dict[str, list[str]]:
    """A rankings file as question id -> ranked chunk ids (see ``ranked_chunk_ids``)."""
    return ranked_chunk_ids(read_columns(path, RANKING_COLUMNS), question_ids)
