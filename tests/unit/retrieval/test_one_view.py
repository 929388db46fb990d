"""One view of a caller, with its date: every consumer of "may this caller read this" uses one rule.

The consumers are enumerated from the package itself: every call of
:func:`rag.retrieval.filters.readable` passes the document's date, every
mask comes from :func:`rag.retrieval.filters.allowed_chunks` (which decides
the caller conditions by :func:`rag.retrieval.filters.view_allows`, the rule
``readable`` applies), and no other module spells out a part of the rule
(a tenant compared with "", groups against an ACL, a date against ``as_of``).
Then the rule itself: the mask and the one-document form agree on drawn
metadata, and a caller dated 2020 reads nothing updated in 2026 in a
ranking, a lead summary, ``rag ask``'s index or the revocation measurement.
"""

from __future__ import annotations

import ast
import datetime
import functools
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.answering.caller_sources import readable_documents
from rag.ask.index import IndexOptions, build_question_index, index_from_bundle, index_to_bundle
from rag.documents.access_metadata import ACCESS_LEVELS
from rag.documents.blocks import Block, Document
from rag.retrieval.filters import (
    Caller,
    ChunkMetadata,
    allowed_chunks,
    readable,
    readable_document,
)

ROOT = Path(__file__).resolve().parents[3]
SOURCES = sorted([*(ROOT / "rag").rglob("*.py"), *(ROOT / "workflow" / "scripts").glob("*.py")])
RULE_HOME = ROOT / "rag" / "retrieval" / "filters.py"
# Parts of the rule, spelled out: only filters.py may hold them.
RULE_PARTS = re.compile(r'tenant in \(""|\.groups\.isdisjoint|\bin caller\.access|caller\.as_of|view\.as_of')
# Known uses that decide nothing about reading, each with why.
NOT_A_DECISION = {
    # Counts the documents that state no level for a note ("N documents count as restricted").
    ("rag/ask/index.py", "self.document_access(doc_id, default_access) not in caller.access"),
    # The levels above what an endpoint may receive: what a model may be sent, not what the caller reads.
    (
        "rag/models/gate.py",
        "level in caller.access and level not in entry.may_receive",
    ),
    (
        "rag/ask/cli.py",
        "unstated = sum(level(doc) not in caller.access for doc in documents",
    ),
}


@functools.cache
def all_calls() -> tuple[tuple[Path, str | None, ast.Call], ...]:
    """Every call in the package and the workflow's scripts, with the name called (parsed once)."""
    found = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                function = node.func
                called = (
                    function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
                )
                found.append((path, called, node))
    return tuple(found)


def calls_of(name: str) -> list[tuple[Path, ast.Call]]:
    return [(path, call) for path, called, call in all_calls() if called == name]


def test_every_call_of_readable_passes_the_documents_date():
    calls = [(path, call) for path, call in calls_of("readable") if path != RULE_HOME]
    assert calls, "no consumer calls readable: the enumeration found nothing to check"
    for path, call in calls:
        keywords = {keyword.arg for keyword in call.keywords}
        assert "updated" in keywords or len(call.args) >= 5, f"{path.relative_to(ROOT)}:{call.lineno}"


def test_the_consumers_go_through_the_one_rule():
    consumers = {
        path.relative_to(ROOT).as_posix()
        for name in (
            "readable",
            "readable_document",
            "readable_documents",
            "allowed_by_config",
            "allowed_chunks",
        )
        for path, _ in calls_of(name)
        if path != RULE_HOME
    }
    # Rankings' masks, lead summaries, rag ask, the revocation measurement, grounding, cohorts.
    expected = {
        "rag/ask/index.py",
        "rag/ask/revocation.py",
        "rag/answering/caller_sources.py",
        "workflow/scripts/answer_from_summaries.py",
        "workflow/scripts/rank_filtered.py",
        "workflow/scripts/fuse.py",
        "workflow/scripts/funnel.py",
        "rag/models/gate.py",
    }
    assert expected <= consumers, sorted(expected - consumers)


def test_no_module_but_the_rule_spells_out_a_part_of_it():
    spelled = []
    for path in SOURCES:
        if path == RULE_HOME:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if RULE_PARTS.search(line):
                module = path.relative_to(ROOT).as_posix()
                if not any(module == known and part in line for known, part in NOT_A_DECISION):
                    spelled.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert not spelled, spelled


DATES = st.one_of(st.none(), st.dates(datetime.date(2019, 1, 1), datetime.date(2027, 12, 31)))
NAMES = st.sampled_from(["", "acme", "globex"])
GROUPS = st.frozensets(st.sampled_from(["eng", "ops", "hr"]), max_size=2)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(st.sampled_from(ACCESS_LEVELS), NAMES, GROUPS, DATES), min_size=1, max_size=12),
    NAMES,
    GROUPS,
    st.frozensets(st.sampled_from(ACCESS_LEVELS), min_size=1),
    DATES,
)
def test_the_mask_and_the_one_document_rule_agree(documents, tenant, groups, levels, as_of):
    caller = Caller("c", tenant, groups, levels, as_of)
    metadata = ChunkMetadata.from_columns(
        [f"d{i}" for i in range(len(documents))],
        [access for access, _, _, _ in documents],
        [() for _ in documents],
        [None if date is None else date.isoformat() for *_, date in documents],
        [name for _, name, _, _ in documents],
        [sorted(acl) for _, _, acl, _ in documents],
    )
    mask = allowed_chunks(caller.view(), metadata).tolist()
    one_by_one = [
        readable(caller, access, name, sorted(acl), updated=None if date is None else date.isoformat())
        for access, name, acl, date in documents
    ]
    assert mask == one_by_one
    # And an independent statement of the rule.
    for (access, name, acl, date), allowed in zip(documents, mask, strict=True):
        expected = (
            access in levels
            and name in ("", tenant)
            and (not acl or bool(acl & groups))
            and (as_of is None or (date is not None and date <= as_of))
        )
        assert allowed == expected


def document(doc_id: str, updated: str | None) -> Document:
    text = f"The {doc_id} turbine spins at forty rotations per minute in the {doc_id} hall."
    return Document(doc_id, doc_id, "1", (Block((), text),), updated=updated, access="public")


DATED = Caller("dated", access=frozenset({"public"}), as_of=datetime.date(2020, 1, 1))


def test_a_dated_caller_reads_nothing_updated_after_its_date_anywhere():
    documents = [document("old", "2019-05-01"), document("new", "2026-02-01"), document("undated", None)]
    assert [readable_document(DATED, doc) for doc in documents] == [True, False, False]
    assert [doc.doc_id for doc in readable_documents(documents, DATED)] == ["old"]  # lead summaries
    index = build_question_index(documents, IndexOptions(dimensions=2, lists=1))
    withheld = dict(zip([c.doc_id for c in index.chunks], index.withheld_from(DATED).tolist(), strict=True))
    assert withheld == {"old": False, "new": True, "undated": True}
    stored = index_from_bundle(*index_to_bundle(index))  # rag ask's cached index keeps the dates
    assert stored.withheld_from(DATED).tolist() == index.withheld_from(DATED).tolist()


def test_a_dated_caller_without_the_documents_date_is_a_programming_error_not_readable():
    with pytest.raises(TypeError, match="as_of needs the document's updated date"):
        readable(DATED, "public", "", ())
    assert readable(Caller("undated"), "public", "", ())  # an undated caller needs no date
