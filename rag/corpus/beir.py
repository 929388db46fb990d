"""The BEIR collection format, read and written as lines of text.

A BEIR collection is a folder with ``corpus.jsonl`` (one JSON object per
document: ``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``,
``text``) and ``qrels/<split>.tsv`` (a header line, then query id, document
id and an integer relevance score, tab-separated). Using the format lets the
pipeline evaluate on public benchmark collections and lets other tools read
the bundled corpus.

Everything here works on lines that the caller has already read, together
with the name of their source, so every error names the file and the line:
a benchmark file of a hundred thousand lines is useless to debug from "invalid
JSON" alone. Documents become :class:`rag.documents.blocks.Document` with one block
per paragraph, so every chunker works on them; queries become questions of
type ``general``, answerable (evaluated) when the split judges them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass

from rag.corpus.documents import check_document_id
from rag.documents.access_metadata import DEFAULT_ACCESS, DocumentDefaults, DocumentError, check_access_level
from rag.documents.blocks import BLOCK_SEPARATOR, Block, Document, content_version, section_name
from rag.labels import DocumentJudgement, Question, SpanLocation, evidence_judgements

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_FOLDER = "qrels"
DEFAULT_SPLIT = "test"
QRELS_HEADER = ("query-id", "corpus-id", "score")
# Relevance grades are small integers (BEIR's are 0 to 2 or 3); a larger one is a
# damaged file, and would overflow the 64-bit tables or the gains of nDCG.
MAX_SCORE = 1_000_000

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_SPACES = re.compile(r"\s+")


class BeirFormatError(ValueError):
    """A line of a BEIR file that cannot be read; the message starts with ``file:line``."""


@dataclass(frozen=True)
class Query:
    query_id: str
    text: str


@dataclass(frozen=True)
class BeirDocument:
    """A document as a line of ``corpus.jsonl`` holds it."""

    doc_id: str
    title: str
    text: str


def qrels_path(split: str) -> str:
    """Where a split's judgements sit inside a collection folder."""
    return f"{QRELS_FOLDER}/{split}.tsv"


# --------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------


def _numbered(lines: Iterable[str]) -> Iterable[tuple[int, str]]:
    """(line number, line) of the non-blank lines; a trailing newline is not a record."""
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if line.strip():
            yield number, line


class _DuplicateKey(ValueError):
    """A JSON object naming one key twice; ``json`` would keep the last value silently."""


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    record: dict = {}
    for key, value in pairs:
        if key in record:
            raise _DuplicateKey(key)
        record[key] = value
    return record


def _json_record(line: str, where: str) -> dict:
    """One line's JSON object; a key given twice in any of its objects is an error, not "last one wins"."""
    try:
        record = json.loads(line, object_pairs_hook=_unique_keys)
    except _DuplicateKey as error:
        raise BeirFormatError(
            f"{where}: key {str(error)[:60]!r} appears twice in one JSON object; give it once"
        ) from None
    except json.JSONDecodeError as error:
        raise BeirFormatError(f"{where}: not valid JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(record, dict):
        raise BeirFormatError(f"{where}: expected a JSON object, got {type(record).__name__}")
    return record


def _identifier(record: dict, where: str) -> str:
    """The ``_id`` as a string; BEIR ids are strings, but some files write numbers."""
    if "_id" not in record:
        raise BeirFormatError(f"{where}: missing '_id'")
    value = record["_id"]
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise BeirFormatError(f"{where}: '_id' must be a string, got {value!r}")
    identifier = str(value).strip()
    if not identifier:
        raise BeirFormatError(f"{where}: '_id' is empty")
    try:
        check_document_id(identifier, where)
    except DocumentError as error:
        raise BeirFormatError(str(error)) from None
    return identifier


def _text_field(record: dict, key: str, where: str) -> str:
    value = record.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BeirFormatError(f"{where}: {key!r} must be a string, got {type(value).__name__}")
    return value


def paragraph_blocks(text: str) -> tuple[Block, ...]:
    """One block per blank-line separated paragraph, whitespace collapsed.

    A text without blank lines (most BEIR documents) is one block. Collapsing
    whitespace inside a paragraph keeps the block separator the only blank
    line in the document's full text, which the sentence chunker relies on.
    """
    paragraphs = (_SPACES.sub(" ", part).strip() for part in _PARAGRAPH_BREAK.split(text))
    return tuple(Block((), paragraph) for paragraph in paragraphs if paragraph)


def _identified_records(lines: Iterable[str], source: str, kind: str) -> Iterator[tuple[str, dict, str]]:
    """(where, record, id) of each JSON line, ids unique: a repeated one names the line it repeats."""
    first_line: dict[str, int] = {}
    for number, line in _numbered(lines):
        where = f"{source}:{number}"
        record = _json_record(line, where)
        identifier = _identifier(record, where)
        if identifier in first_line:
            raise BeirFormatError(
                f"{where}: {kind} id {identifier!r} already used on line {first_line[identifier]}"
            )
        first_line[identifier] = number
        yield where, record, identifier


# The fields of a corpus.jsonl record that say who may read it, at the top level
# or inside its ``metadata`` object (where BEIR collections keep extra fields).
POLICY_FIELDS = ("access", "tenant", "acl")


def _policy_document(record: dict, where: str, defaults: DocumentDefaults) -> dict:
    """Access, tenant and groups of a record as :class:`Document` fields; a bad value names the line.

    Read by the schema every source shares
    (:func:`rag.documents.access_metadata.read_access_metadata`): a field may sit at
    the top level or in ``metadata``, not in both; a key that looks like one
    (``ACL``, ``Tenant``, ``acls``, ``groups``) or a field nested anywhere else
    is an error naming the line, never a record read as its corpus's default.
    """
    from rag.documents.access_metadata import read_access_metadata

    metadata = record.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise BeirFormatError(f"{where}: 'metadata' must be a JSON object, got {type(metadata).__name__}")
    try:
        fields = read_access_metadata(record, where, defaults, containers=("metadata",))
    except DocumentError as error:
        raise BeirFormatError(str(error)) from None
    return {"access": fields.access, "tenant": fields.tenant, "acl": fields.acl}


def parse_corpus(
    lines: Iterable[str],
    source: str,
    default_access: str = DEFAULT_ACCESS,
    default_tenant: str = "",
    default_acl: tuple[str, ...] = (),
) -> list[Document]:
    """The documents of ``corpus.jsonl``, in file order.

    A document whose text is empty is indexed by its title (a few BEIR
    collections have such records); one with neither cannot be retrieved by
    anything and is an error. A record may state ``access`` (one of
    :data:`ACCESS_LEVELS`), ``tenant`` and ``acl`` (a list of group names), at
    the top level or in its ``metadata`` object; one that does not takes the
    corpus's ``default_access``, ``default_tenant`` and ``default_acl``, as
    every source does. A key given twice in one object, or a field given in
    both places, is an error naming the line.
    """
    default_access = check_access_level(default_access, "default_access")
    defaults = DocumentDefaults(default_access, default_tenant, tuple(default_acl))
    documents: list[Document] = []
    for where, record, doc_id in _identified_records(lines, source, "document"):
        policy = _policy_document(record, where, defaults)
        title = _SPACES.sub(" ", _text_field(record, "title", where)).strip()
        blocks = paragraph_blocks(_text_field(record, "text", where)) or paragraph_blocks(title)
        if not blocks:
            raise BeirFormatError(f"{where}: document {doc_id!r} has neither title nor text")
        version = content_version(blocks)
        documents.append(Document(doc_id=doc_id, title=title, version=version, blocks=blocks, **policy))
    if not documents:
        raise BeirFormatError(f"{source}: no documents")
    return documents


def parse_queries(lines: Iterable[str], source: str) -> list[Query]:
    """The queries of ``queries.jsonl``, in file order."""
    queries: list[Query] = []
    for where, record, query_id in _identified_records(lines, source, "query"):
        text = _SPACES.sub(" ", _text_field(record, "text", where)).strip()
        if not text:
            raise BeirFormatError(f"{where}: query {query_id!r} has no text")
        queries.append(Query(query_id, text))
    if not queries:
        raise BeirFormatError(f"{source}: no queries")
    return queries


def _qrels_fields(line: str) -> list[str]:
    fields = line.split("\t")
    if len(fields) != 3:
        fields = line.split()
    return [field.strip() for field in fields]


def _is_integer(text: str) -> bool:
    return re.fullmatch(r"[+-]?\d+", text) is not None


def parse_qrels(
    lines: Iterable[str], source: str, document_ids: Collection[str], query_ids: Collection[str]
) -> list[DocumentJudgement]:
    """The judgements of ``qrels/<split>.tsv``, checked against the corpus and the queries.

    The first line must be the header (BEIR's loader skips it blindly, so a
    file without one would silently lose its first judgement). Every id must
    exist: a judgement of an unknown document means the qrels belong to
    another corpus version, and no ranking could ever find that document.
    """
    judgements: list[DocumentJudgement] = []
    first_line: dict[tuple[str, str], int] = {}
    header_seen = False
    for number, line in _numbered(lines):
        where = f"{source}:{number}"
        fields = _qrels_fields(line)
        if not header_seen:
            header_seen = True
            if len(fields) != 3 or _is_integer(fields[2]):
                raise BeirFormatError(
                    f"{where}: expected a header line of three columns ({', '.join(QRELS_HEADER)}) "
                    "before the judgements; a file without one would lose its first judgement"
                )
            continue
        if len(fields) != 3:
            raise BeirFormatError(
                f"{where}: expected three tab-separated fields (query-id, corpus-id, score), "
                f"got {len(fields)}"
            )
        query_id, doc_id, score = fields
        if not _is_integer(score) or int(score) < 0:
            raise BeirFormatError(f"{where}: score {score[:40]!r} is not a non-negative integer")
        if int(score) > MAX_SCORE:
            raise BeirFormatError(
                f"{where}: score {score[:40]} is above {MAX_SCORE}, the largest relevance grade accepted"
            )
        if query_id not in query_ids:
            raise BeirFormatError(f"{where}: unknown query id {query_id!r} (not in the queries file)")
        if doc_id not in document_ids:
            raise BeirFormatError(f"{where}: unknown document id {doc_id!r} (not in the corpus)")
        key = (query_id, doc_id)
        if key in first_line:
            raise BeirFormatError(
                f"{where}: query {query_id!r} and document {doc_id!r} are already judged "
                f"on line {first_line[key]}"
            )
        first_line[key] = number
        judgements.append(DocumentJudgement(query_id, doc_id, int(score)))
    if not header_seen:
        raise BeirFormatError(f"{source}: empty file; expected a header line and judgements")
    if not judgements:
        raise BeirFormatError(f"{source}: a header and no judgements; nothing could be evaluated")
    return judgements


def beir_questions(queries: Sequence[Query], judgements: Iterable[DocumentJudgement]) -> list[Question]:
    """Queries as questions: type ``general``, answerable (evaluated) when the split judges them.

    Unjudged queries (often those of other splits sharing ``queries.jsonl``)
    are kept but not evaluated, as BEIR's loader drops them. A query judged
    only with score 0 is evaluated and scores 0, as trec_eval scores it.
    """
    judged = {judgement.question_id for judgement in judgements}
    return [Question(query.query_id, query.text, "general", query.query_id in judged) for query in queries]


def judged_questions(questions: Sequence[Question], queries: str = "judged") -> list[Question]:
    """The queries a run ranks: those the evaluated split judges, or all of them.

    ``queries.jsonl`` often holds every split's queries; ranking the ones no
    judgement of this split mentions costs time and changes no metric, so by
    default (``judged``) they are left out. ``all`` keeps them, for rankings
    meant for other uses.
    """
    if queries not in ("judged", "all"):
        raise ValueError(f"queries: expected 'judged' or 'all', got {queries!r}")
    return (
        list(questions) if queries == "all" else [question for question in questions if question.answerable]
    )


# --------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------

EXPORT_UNITS = ("documents", "sections", "paragraphs")


@dataclass(frozen=True)
class BeirCollection:
    documents: tuple[BeirDocument, ...]
    queries: tuple[Query, ...]
    judgements: tuple[DocumentJudgement, ...]


def corpus_line(document: BeirDocument) -> str:
    return json.dumps(
        {"_id": document.doc_id, "title": document.title, "text": document.text}, ensure_ascii=False
    )


def query_line(query: Query) -> str:
    return json.dumps({"_id": query.query_id, "text": query.text}, ensure_ascii=False)


def qrels_lines(judgements: Iterable[DocumentJudgement]) -> list[str]:
    """The header and one tab-separated line per judgement."""
    return ["\t".join(QRELS_HEADER)] + [
        f"{judgement.question_id}\t{judgement.doc_id}\t{judgement.gain}" for judgement in judgements
    ]


def _export_spans(document: Document, unit: str) -> list[tuple[BeirDocument, int, int]]:
    """The units of one document with the range of its full text each one covers."""
    offsets = document.block_offsets()
    if unit == "documents":
        text = BLOCK_SEPARATOR.join(block.text for block in document.blocks)
        return [(BeirDocument(document.doc_id, document.title, text), 0, offsets[-1][1])]
    groups: list[list[int]] = []
    for index, block in enumerate(document.blocks):
        if unit == "sections" and groups and document.blocks[groups[-1][-1]].section == block.section:
            groups[-1].append(index)
        else:
            groups.append([index])
    marker = "s" if unit == "sections" else "p"
    spans = []
    for number, members in enumerate(groups):
        section = document.blocks[members[0]].section
        title = " › ".join(part for part in (document.title, section_name(section)) if part)
        text = BLOCK_SEPARATOR.join(document.blocks[index].text for index in members)
        doc_id = f"{document.doc_id}.{marker}{number:03d}"
        spans.append((BeirDocument(doc_id, title, text), offsets[members[0]][0], offsets[members[-1]][1]))
    return spans


def export_collection(
    documents: Sequence[Document],
    questions: Sequence[Question],
    locations: Iterable[SpanLocation],
    unit: str = "sections",
) -> BeirCollection:
    """A BEIR collection of labelled documents: units as documents, answerable questions as queries.

    ``unit`` cuts each document into whole documents, sections (runs of
    paragraphs under one heading path) or paragraphs; a unit is judged
    relevant to a question when it overlaps one of the question's located
    evidence spans, with the piece's gain as its score.
    """
    if unit not in EXPORT_UNITS:
        raise ValueError(f"unknown export unit {unit!r}; expected one of {EXPORT_UNITS}")
    units = {document.doc_id: _export_spans(document, unit) for document in documents}

    def units_of(location: SpanLocation) -> list[str]:
        return [
            exported.doc_id
            for exported, start, end in units[location.doc_id]
            if start < location.end and location.start < end
        ]

    answerable = [question for question in questions if question.answerable]
    return BeirCollection(
        documents=tuple(exported for document in documents for exported, _, _ in units[document.doc_id]),
        queries=tuple(Query(question.question_id, question.text) for question in answerable),
        judgements=tuple(evidence_judgements(answerable, locations, units_of)),
    )
