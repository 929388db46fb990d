"""Property-based tests: mutated documents, question files and BEIR lines fail clearly or parse right.

For every mutation the outcome must be one of two things: a one-line error
of the expected kind that names the file (and line or key where it can), or a
result that is correct. Never another exception (a traceback for the user),
and never a restricted document's text in a chunk that passes a public filter.
Runs are derandomized and bounded so CI sees the same cases every time.

``check_*`` return "error" or "accepted" and raise AssertionError on any
violation; they are also what the robustness tally of the hardening report
counts (cases, clear errors, tracebacks, silent acceptances).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.chunking import ChunkerSpec, chunk_corpus
from rag.corpus.beir import BeirFormatError
from rag.corpus.beir_files import read_beir_collection
from rag.corpus.documents import parse_markdown
from rag.corpus.markdown_files import FolderError, read_markdown_file
from rag.documents.access_metadata import ACCESS_LEVELS, DocumentError
from rag.formats.files import read_yaml
from rag.labels import LabelError, locate_spans, parse_questions
from rag.retrieval.filters import ChunkMetadata, allowed_chunks, parse_filter

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tiny"
FUZZ = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
SECRET = "VAULTCODE4711"
PUBLIC = parse_filter({"access": ["public"]}, "filters.public")


def one_line(error: BaseException, name: str) -> None:
    message = str(error)
    assert "\n" not in message, message
    assert name in message, f"{message!r} does not name {name!r}"


def one_report(error: BaseException, name: str) -> None:
    """One line, or a report whose first line names the file and whose later lines are indented items."""
    first, *items = str(error).split("\n")
    assert name in first, f"{first!r} does not name {name!r}"
    assert all(item.startswith("  ") and item.strip() for item in items), str(error)


# --------------------------------------------------------------------------
# Documents: mutations around the front matter of a restricted document
# --------------------------------------------------------------------------

FRONT_KEYS = ["id: secret", "version: 2", "updated: 2026-03-01", "tags: [vault]"]
NOISE = st.sampled_from(
    [
        "",
        " ",
        "\t",
        "# not a heading",
        "colour: red",
        "access: [restricted]",
        "access: Restricted",
        "access: ''",
        "updated: sometime in June",
        "updated: 2026-02-30",
        "version: [1]",
        "tags: vault",
        "tags: [1, 2]",
        "title: {a: b}",
        "id:",
        "? complex",
        "key: 'unclosed",
        "- item",
        "...",
        "&anchor x: 1",
        "*alias",
        "!!python/object:os.system ls",
        "updated: 2026-13-45",
        "\x00",
        "\ufeff",
        "---x",
    ]
)


@st.composite
def restricted_documents(draw) -> tuple[str, bool]:
    """A restricted document with a mutated header, and whether the header is still closed."""
    keys = draw(st.permutations(FRONT_KEYS))
    keys = keys[: draw(st.integers(0, len(keys)))]
    lines = [*keys, "access: restricted"]
    lines = draw(st.permutations(lines))
    lines = list(lines)
    for _ in range(draw(st.integers(0, 2))):
        lines.insert(draw(st.integers(0, len(lines))), draw(NOISE))
    opening = draw(st.sampled_from(["---", "---  ", "--- \t"]))
    closed = draw(st.booleans())
    closing = draw(st.sampled_from(["---", "...", "--- "])) if closed else ""
    body = [
        "",
        "# Vault",
        "",
        f"The vault code is {SECRET}, kept for staff.",
        "",
        "## More",
        "",
        "Other text.",
    ]
    text = "\n".join([opening, *lines, *([closing] if closed else []), *body]) + "\n"
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = text.replace("\n", newline)
    if draw(st.booleans()):
        text = "\ufeff" + text
    if draw(st.booleans()):
        text = draw(st.sampled_from(["\n", "\n\n", " \n"])) + text
    return text, closed


def check_document(text: str, name: str = "secret.md") -> str:
    try:
        document = parse_markdown(text, name, default_access="public")
    except DocumentError as error:
        one_line(error, name)
        return "error"
    assert document.access == "restricted", f"{name} parsed as {document.access!r}"
    assert "access" not in document.full_text and "---" not in document.full_text
    chunks = chunk_corpus([document], ChunkerSpec("sentences", 20))
    metadata = ChunkMetadata.from_columns(
        [c.doc_id for c in chunks],
        [document.access] * len(chunks),
        [document.tags] * len(chunks),
        [document.updated] * len(chunks),
    )
    allowed = allowed_chunks(PUBLIC, metadata)
    leaked = [
        chunk.text for chunk, keep in zip(chunks, allowed, strict=True) if keep and SECRET in chunk.text
    ]
    assert leaked == [], leaked
    assert document.access in ACCESS_LEVELS
    return "accepted"


@FUZZ
@given(restricted_documents())
def test_mutated_front_matter_never_publishes_a_restricted_document(case):
    text, closed = case
    outcome = check_document(text)
    if not closed:
        assert outcome == "error"


@FUZZ
@given(st.binary(max_size=300))
def test_arbitrary_bytes_as_a_markdown_file(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fuzz") / "odd.md"
    path.write_bytes(b"---\naccess: restricted\n---\n# T\n\n" + data)
    check_markdown_file(path)


def check_markdown_file(path: Path) -> str:
    try:
        text = read_markdown_file(path)
    except FolderError as error:
        one_line(error, str(path))
        return "error"
    try:
        document = parse_markdown(text, str(path), default_access="public")
    except DocumentError as error:
        one_line(error, str(path))
        return "error"
    assert document.access == "restricted"
    return "accepted"


# --------------------------------------------------------------------------
# Question files
# --------------------------------------------------------------------------

QUESTIONS = yaml.safe_load((FIXTURE / "questions.yaml").read_text())
DOCUMENTS = [
    parse_markdown(read_markdown_file(path), path.name)
    for path in sorted((FIXTURE / "documents").glob("*.md"))
]
ODD_VALUES = st.sampled_from(
    [
        None,
        "",
        " ",
        0,
        -1,
        1.5,
        float("inf"),
        float("nan"),
        True,
        [],
        {},
        ["x"],
        {"a": 1},
        "x" * 300,
        "\u202e",
    ]
)


@st.composite
def mutated_question_files(draw) -> str:
    data = json.loads(json.dumps(QUESTIONS))
    questions = data["questions"]
    for _ in range(draw(st.integers(1, 3))):
        question = questions[draw(st.integers(0, len(questions) - 1))]
        action = draw(st.sampled_from(["drop", "set", "span", "gain", "duplicate", "type"]))
        key = draw(st.sampled_from(sorted(question)))
        if action == "drop":
            question.pop(key, None)
        elif action == "set":
            question[key] = draw(ODD_VALUES)
        elif action == "span" and question.get("evidence"):
            span = question["evidence"][0]["spans"][0]
            span[draw(st.sampled_from(["text", "document"]))] = draw(
                st.one_of(ODD_VALUES, st.text(max_size=20))
            )
        elif action == "gain" and question.get("evidence"):
            question["evidence"][0]["gain"] = draw(ODD_VALUES)
        elif action == "duplicate":
            questions.append(json.loads(json.dumps(question)))
        else:
            question["type"] = draw(st.text(max_size=8))
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.sampled_from(["", ":", "\t", "- [", "{", "\x00", "'"])) + text[cut:]
    return text


def check_question_file(path: Path) -> str:
    try:
        questions = parse_questions(read_yaml(path), str(path))
        locate_spans(questions, DOCUMENTS, str(path))
    except (LabelError, ValueError) as error:
        one_report(error, str(path))
        return "error"
    for question in questions:
        assert isinstance(question.question_id, str) and question.text.strip()
        for piece in question.evidence:
            assert 0 < piece.gain < float("inf")
    return "accepted"


@FUZZ
@given(mutated_question_files())
def test_mutated_question_files_fail_clearly(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("questions") / "questions.yaml"
    path.write_text(text, encoding="utf-8")
    check_question_file(path)


# --------------------------------------------------------------------------
# BEIR lines
# --------------------------------------------------------------------------

CORPUS = [
    json.dumps({"_id": f"d{n}", "title": f"Doc {n}", "text": f"Text of document {n}."}) for n in range(3)
]
QUERIES = [json.dumps({"_id": f"q{n}", "text": f"Question {n}?"}) for n in range(2)]
QRELS = ["query-id\tcorpus-id\tscore", "q0\td0\t1", "q1\td2\t2"]
ODD_FIELDS = st.sampled_from(
    ["", " ", "-1", "1.5", str(10**30), "1e3", "NaN", "d9", "q9", "\u00a0", "x\ty", "0x10", "+2", "٣"]
)


@st.composite
def mutated_collections(draw) -> tuple[list[str], list[str], list[str], str]:
    files = {"corpus": list(CORPUS), "queries": list(QUERIES), "qrels": list(QRELS)}
    target = draw(st.sampled_from(sorted(files)))
    lines = files[target]
    index = draw(st.integers(0, len(lines) - 1))
    action = draw(st.sampled_from(["field", "truncate", "json", "duplicate", "delete"]))
    if action == "field" and target == "qrels":
        fields = lines[index].split("\t")
        fields[draw(st.integers(0, 2))] = draw(ODD_FIELDS)
        lines[index] = "\t".join(fields)
    elif action in ("field", "json") and target != "qrels":
        record = json.loads(lines[index])
        key = draw(st.sampled_from(["_id", "title", "text", "extra"]))
        record[key] = draw(st.one_of(ODD_VALUES, ODD_FIELDS))
        lines[index] = json.dumps(record)
    elif action == "truncate":
        lines[index] = lines[index][: draw(st.integers(0, len(lines[index])))]
    elif action == "duplicate":
        lines.append(lines[index])
    else:
        del lines[index]
    return files["corpus"], files["queries"], files["qrels"], target


def check_collection(folder: Path, corpus: list[str], queries: list[str], qrels: list[str]) -> str:
    paths = {
        "corpus": folder / "corpus.jsonl",
        "queries": folder / "queries.jsonl",
        "qrels": folder / "test.tsv",
    }
    for key, lines in (("corpus", corpus), ("queries", queries), ("qrels", qrels)):
        paths[key].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    try:
        documents, questions, judgements = read_beir_collection(
            paths["corpus"], paths["queries"], paths["qrels"]
        )
    except (BeirFormatError, ValueError) as error:
        assert any(str(path) in str(error) for path in paths.values()), str(error)
        assert "\n" not in str(error)
        return "error"
    ids = {document.doc_id for document in documents}
    assert all(j.doc_id in ids and 0 <= j.gain <= 10**6 for j in judgements)
    assert len({q.question_id for q in questions}) == len(questions)
    return "accepted"


@FUZZ
@given(mutated_collections())
def test_mutated_beir_lines_fail_clearly(tmp_path_factory, case):
    corpus, queries, qrels, _ = case
    check_collection(tmp_path_factory.mktemp("beir"), corpus, queries, qrels)
