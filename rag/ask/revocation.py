"""Revocation, measured: after a group leaves a document's ACL and another document is deleted,
neither reaches a caller who lost access, by any path, while callers who may still read them do.

Two runs over the same documents. In the first, two documents (``revoke``
and ``delete``) carry an ACL of every group of ``groups``; between the runs
``revoke`` loses one group and ``delete`` is deleted. One caller per group
reads every access level of shared documents. Each run builds the index anew
(as the pipeline rebuilds it, and as ``rag ask``'s cache misses on changed
documents), then, for every caller and question, counts the chunks of each
watched document in every place text can reach a model or a reader:

- ``rankings``: the pipeline's prefiltered BM25 ranking (the caller's view
  as the mask inside the search, :func:`rag.retrieval.filters.allowed_chunks`);
- ``ask_rankings``: ``rag ask``'s fused candidates;
- ``prompts``: the prompt's sources;
- ``answers``: the chunks the answer cites, plus answers that quote one of
  the document's sentences;
- ``traces``: the chunk ids in the request's trace.

A document deleted or no longer readable must count 0 everywhere for the
callers who lost it; the callers who still may read it must still find it
(else the check could not fail).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rag.ask.index import IndexOptions, answer_question, build_question_index
from rag.ask.traces import report_trace
from rag.corpus.manifest import changed_files, digest_bytes
from rag.documents.access_metadata import ACCESS_LEVELS
from rag.documents.blocks import Document
from rag.kinds import behaviour
from rag.retrieval.filters import Caller, ChunkMetadata, allowed_chunks, readable_document

COLUMNS = (
    "run",
    "caller",
    "document",
    "change",
    "may_read",
    "questions",
    "rankings",
    "ask_rankings",
    "prompts",
    "answers",
    "traces",
)
PLACES = ("rankings", "ask_rankings", "prompts", "answers", "traces")


class RevocationError(ValueError):
    """A revocation setting that names a missing document or group; the message names the key."""


@dataclass(frozen=True)
class Revocation:
    """What changes between the two runs: ``revoke`` loses ``group``; ``delete`` is deleted;
    ``copied`` (optional) loses ``group`` by a copy that keeps its older modification time
    (``cp -p``), so only its content says it changed."""

    groups: tuple[str, ...]
    revoke: str
    group: str
    delete: str
    copied: str | None = None

    def check(self, documents: Sequence[Document], where: str = "config['revocation']") -> None:
        ids = {document.doc_id for document in documents}
        for key in ("revoke", "delete", "copied"):
            if key == "copied" and self.copied is None:
                continue
            if getattr(self, key) not in ids:
                raise RevocationError(f"{where}[{key!r}]: no document {getattr(self, key)!r} in the corpus")
        named = [name for name in (self.revoke, self.delete, self.copied) if name is not None]
        if len(set(named)) != len(named):
            raise RevocationError(f"{where}: 'revoke', 'delete' and 'copied' must name different documents")
        if self.group not in self.groups:
            raise RevocationError(
                f"{where}['group']: {self.group!r} is not one of the groups {list(self.groups)}"
            )
        if len(self.groups) < 2:
            raise RevocationError(
                f"{where}['groups']: name at least two, so one still reads the revoked document"
            )


def document_runs(documents: Sequence[Document], revocation: Revocation) -> dict[str, list[Document]]:
    """The documents of the two runs: ``before`` with the ACLs set, ``after`` with the change made."""
    acl = tuple(sorted(revocation.groups))
    watched = {revocation.revoke, revocation.delete, revocation.copied} - {None}
    before = [
        dataclasses.replace(document, acl=acl) if document.doc_id in watched else document
        for document in documents
    ]
    after = []
    for document in before:
        if document.doc_id == revocation.delete:
            continue
        if document.doc_id in (revocation.revoke, revocation.copied):
            document = dataclasses.replace(
                document, acl=tuple(g for g in document.acl if g != revocation.group)
            )
        after.append(document)
    return {"before": before, "after": after}


# A document's file as the runs see it: its bytes stand for its content, and a
# modification time that the edit of ``copied`` keeps (cp -p).
def document_bytes(document: Document) -> bytes:
    """The bytes of a document's file: every field a reader takes from it, so any edit changes them."""
    fields = dataclasses.asdict(document)
    return json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str).encode()


def reread_by_content(before: Sequence[Document], after: Sequence[Document]) -> list[Document]:
    """The second run's documents as the pipeline reads them: a document is read again when its
    file's content digest changed (rag.corpus.manifest), whatever its modification time; an
    unchanged one keeps its first parse. (By modification time alone, the ``cp -p`` copy would
    keep its first parse, ACL and all.)"""
    first = {document.doc_id: document for document in before}
    old = {doc_id: digest_bytes(document_bytes(document)) for doc_id, document in first.items()}
    new = {document.doc_id: digest_bytes(document_bytes(document)) for document in after}
    changed = set(changed_files(old, new))
    return [document if document.doc_id in changed else first[document.doc_id] for document in after]


def revocation_callers(revocation: Revocation) -> list[Caller]:
    """One caller per group, reading every level of shared documents."""
    return [
        Caller(group, "", frozenset({group}), frozenset(ACCESS_LEVELS)) for group in sorted(revocation.groups)
    ]


def _sentences(document: Document) -> list[str]:
    return [
        part.strip() for block in document.blocks for part in block.text.split(". ") if len(part.split()) >= 5
    ]


def measure_run(
    run: str,
    documents: Sequence[Document],
    questions: Sequence[str],
    callers: Sequence[Caller],
    watched: Mapping[str, tuple[str, Document]],
    options: IndexOptions,
    depth: int = 20,
) -> list[dict]:
    """One row per (caller, watched document): where its chunks reached the caller in this run.

    ``watched`` maps a document id to (the change it undergoes, its first-run
    document, for its sentences); a document absent from ``documents`` is
    deleted in this run. ``may_read`` is the rule for the document as it is
    in this run (False once deleted).
    """
    index = build_question_index(documents, options)
    present = {document.doc_id: document for document in documents}
    metadata = ChunkMetadata.from_columns(
        [chunk.doc_id for chunk in index.chunks],
        [present[chunk.doc_id].access for chunk in index.chunks],
        [present[chunk.doc_id].tags for chunk in index.chunks],
        [present[chunk.doc_id].updated for chunk in index.chunks],
        [present[chunk.doc_id].tenant for chunk in index.chunks],
        [present[chunk.doc_id].acl for chunk in index.chunks],
    )
    doc_of = {chunk.chunk_id: chunk.doc_id for chunk in index.chunks}
    entries = index.entries
    search = behaviour(entries.lexical["kind"], "search")
    rows = []
    for caller in callers:
        counts = {doc_id: dict.fromkeys(PLACES, 0) for doc_id in watched}
        allowed = allowed_chunks(caller.view(), metadata)
        rankings = search(
            index.ranking_bm25, entries.lexical, list(questions), depth, index.tie_order, allowed
        )
        for ranking in rankings:
            for position in ranking.positions:
                doc_id = index.chunks[int(position)].doc_id
                if doc_id in counts:
                    counts[doc_id]["rankings"] += 1
        for question in questions:
            report = answer_question(index, question, reader="extractive", caller=caller)
            trace = report_trace(report, index, caller, question, "extractive", {"answer": None})
            places = {
                "ask_rankings": [retrieved.chunk.doc_id for retrieved in report.retrieval.chosen],
                "prompts": [chunk.doc_id for chunk in report.prompt.sources.values()],
                "answers": [doc_of[chunk_id] for chunk_id in trace["citations"]],
                "traces": [doc_of[c] for key in ("candidates", "selected", "citations") for c in trace[key]],
            }
            for place, doc_ids in places.items():
                for doc_id in doc_ids:
                    if doc_id in counts:
                        counts[doc_id][place] += 1
            for doc_id, (_, original) in watched.items():
                counts[doc_id]["answers"] += sum(
                    sentence in report.answer for sentence in _sentences(original)
                )
        for doc_id, (change, _) in watched.items():
            document = present.get(doc_id)
            may_read = document is not None and readable_document(caller, document)
            rows.append(
                {
                    "run": run,
                    "caller": caller.name,
                    "document": doc_id,
                    "change": change,
                    "may_read": may_read,
                    "questions": len(questions),
                    **counts[doc_id],
                }
            )
    return rows


def measure_revocation(
    documents: Sequence[Document],
    questions: Sequence[str],
    revocation: Revocation,
    options: IndexOptions | None = None,
) -> list[dict]:
    """Both runs' rows (:data:`COLUMNS`), the first run first."""
    revocation.check(documents)
    options = options or IndexOptions(dense_model=None)
    runs = document_runs(documents, revocation)
    runs["after"] = reread_by_content(runs["before"], runs["after"])
    originals = {document.doc_id: document for document in runs["before"]}
    watched = {
        revocation.revoke: (f"group {revocation.group} removed from its ACL", originals[revocation.revoke]),
        revocation.delete: ("deleted", originals[revocation.delete]),
    }
    if revocation.copied is not None:
        change = f"group {revocation.group} removed from its ACL by a copy keeping the older mtime (cp -p)"
        watched[revocation.copied] = (change, originals[revocation.copied])
    callers = revocation_callers(revocation)
    rows = []
    for run, run_documents in runs.items():
        rows += measure_run(run, run_documents, questions, callers, watched, options)
    return rows


def leaks(rows: Sequence[Mapping]) -> list[str]:
    """Every row of the second run where a document reached a caller who may not read it (must be none)."""
    return [
        f"{row['caller']} / {row['document']}: {place} {row[place]}"
        for row in rows
        if row["run"] == "after" and not row["may_read"]
        for place in PLACES
        if row[place]
    ]
