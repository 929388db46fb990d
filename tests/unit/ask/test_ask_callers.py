"""``rag ask`` as a caller: tenants and groups keep documents out of the prompt; traces hold no text.

* Index level: for every caller of two tenants and three groups, the prompt's
  sources are exactly drawn from the documents :func:`readable` allows.
* Command line: a folder of plain files without access metadata says in one
  line how many documents state no access level and what to pass; with
  ``--default-access public`` it answers.
* ``--trace FILE``: one JSON line of the schema per request; by default no
  sentence of any document and no piece of the key appears in it, with
  ``--trace-text`` the sources do.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag import cli
from rag.answering.trace import TRACE_FIELDS, trace_problems
from rag.ask.index import IndexOptions, answer_question, build_question_index
from rag.documents.blocks import Block, Document
from rag.retrieval.filters import Caller, readable
from tests.fault_server import FaultServer, reply

KEY = "sk-live-Q7v2Rz9KxW4mTb8LpN3sYd6Hc1Fg5Ja0"
PIECES = [KEY[start : start + 8] for start in range(len(KEY) - 7)]

# (doc id, access, tenant, acl): two tenants, three groups, shared documents.
DOCUMENTS = [
    ("shared_public", "public", "", ()),
    ("shared_internal", "internal", "", ()),
    ("acme_eng", "internal", "acme", ("engineering",)),
    ("acme_fin", "internal", "acme", ("finance",)),
    ("acme_all", "public", "acme", ()),
    ("globex_legal", "restricted", "globex", ("legal",)),
    ("globex_eng", "internal", "globex", ("engineering",)),
    ("open_legal", "public", "", ("legal",)),
]
CALLERS = [
    Caller("anonymous"),
    Caller("acme_engineer", "acme", frozenset({"engineering"}), frozenset({"public", "internal"})),
    Caller("acme_finance", "acme", frozenset({"finance"}), frozenset({"public", "internal"})),
    Caller("globex_lawyer", "globex", frozenset({"legal"}), frozenset({"public", "internal", "restricted"})),
    Caller("globex_engineer", "globex", frozenset({"engineering", "legal"}), frozenset({"internal"})),
]


def sentence(doc_id: str) -> str:
    return (
        f"The zephyr turbine of {doc_id.replace('_', ' ')} spins at {len(doc_id) * 7} rotations per minute."
    )


def documents() -> list[Document]:
    return [
        Document(doc_id, doc_id, "1", (Block((), sentence(doc_id)),), access=access, tenant=tenant, acl=acl)
        for doc_id, access, tenant, acl in DOCUMENTS
    ]


@pytest.fixture(scope="module")
def index():
    return build_question_index(documents(), IndexOptions(max_words=40, dimensions=4, lists=2))


@pytest.mark.parametrize("caller", CALLERS, ids=[caller.name for caller in CALLERS])
def test_a_caller_gets_exactly_the_documents_it_may_read(index, caller):
    readable_ids = {
        doc_id for doc_id, access, tenant, acl in DOCUMENTS if readable(caller, access, tenant, acl)
    }
    report = answer_question(
        index, "How fast does the zephyr turbine spin?", reader="extractive", caller=caller
    )
    from rag.ask.index import RetrievalSettings

    wide = answer_question(
        index,
        "How fast does the zephyr turbine spin?",
        RetrievalSettings(sources=len(DOCUMENTS)),
        reader="extractive",
        caller=caller,
    )
    sources = {chunk.doc_id for chunk in wide.prompt.sources.values()}
    assert sources == readable_ids  # none it may not read, every one it may
    assert {chunk.doc_id for chunk in report.prompt.sources.values()} <= readable_ids
    mask = index.withheld_from(caller)
    assert {chunk.doc_id for chunk, withheld in zip(index.chunks, mask, strict=True) if not withheld} == (
        readable_ids
    )


PLAIN = {
    "alpha.md": "# Alpha widget\n\nThe alpha widget has a mass of 12 kilograms. It is made of steel.\n",
    "beta.md": "# Beta gadget\n\nThe beta gadget weighs 3 kilograms and is painted blue.\n",
}


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    folder = tmp_path / "plain"
    folder.mkdir()
    for name, text in PLAIN.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def ask(plain: Path, tmp_path: Path, *options: str) -> list[str]:
    arguments = ["ask", "What is the mass of the alpha widget?", "--documents", str(plain)]
    arguments += ["--cache", str(tmp_path / "cache"), "--retriever", "bm25_lsa_ivf", *options]
    assert cli.main(arguments) == 0
    return arguments


def test_a_plain_folder_says_why_nothing_was_retrieved_and_what_to_pass(plain, tmp_path, capsys):
    ask(plain, tmp_path)
    output = capsys.readouterr().out
    (line,) = [line for line in output.splitlines() if "state no access level" in line]
    assert line.startswith("note: 2 of 2 documents state no access level and count as restricted")
    for option in (
        "--access public,restricted",
        "--default-access public",
        "'access:' line in its front matter",
    ):
        assert option in line
    assert "No chunk was retrieved." in output

    ask(plain, tmp_path, "--default-access", "public")
    output = capsys.readouterr().out
    assert "state no access level" not in output
    assert "12 kilograms" in output.split("\nPrompt")[1]


def test_a_trace_holds_ids_and_hashes_but_no_sentence_and_no_key(plain, tmp_path, capsys, monkeypatch):
    answer = {"choices": [{"message": {"content": f"It has a mass of 12 kilograms [1]. {KEY}"}}]}
    server = FaultServer([reply(json.dumps(answer).encode())])
    try:
        monkeypatch.setenv("RAG_LLM_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("RAG_LLM_API_KEY", KEY)
        monkeypatch.setenv("RAG_LLM_MODEL", "stub")
        trace = tmp_path / "trace.jsonl"
        ask(plain, tmp_path, "--default-access", "public", "--generator", "hosted", "--trace", str(trace))
        ask(plain, tmp_path, "--default-access", "public", "--trace", str(trace))
    finally:
        server.close()
    capsys.readouterr()
    assert server.received and server.received[0].headers["authorization"] == f"Bearer {KEY}"
    text = trace.read_text(encoding="utf-8")
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == 2
    for record in lines:
        assert trace_problems(record) == [] and list(record)[: len(TRACE_FIELDS)] == list(TRACE_FIELDS)
        assert record["selected"] and record["filters"]["access"] == ["public"]
        assert set(record["citations"]) <= set(record["selected"]) <= set(record["candidates"])
    sentences = [part.strip() for body in PLAIN.values() for part in body.split("\n") if part.strip()]
    sentences += [piece.strip() + "." for body in PLAIN.values() for piece in body.split(".")[:-1]]
    for piece in [*sentences, "What is the mass of the alpha widget?", "12 kilograms"]:
        assert piece not in text, piece
    for piece in PIECES:
        assert piece not in text, piece

    with_text = tmp_path / "with_text.jsonl"
    ask(plain, tmp_path, "--default-access", "public", "--trace", str(with_text), "--trace-text")
    record = json.loads(with_text.read_text(encoding="utf-8"))
    assert "12 kilograms" in " ".join(record["text"]["sources"])


def test_trace_text_without_trace_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main(["ask", "Why?", "--trace-text"])
    assert caught.value.code == 2
    assert "--trace-text needs --trace FILE" in capsys.readouterr().err


def test_a_hosted_model_is_refused_a_caller_who_reads_restricted_text(plain, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RAG_LLM_BASE_URL", "https://api.example.com/v1")
    monkeypatch.setenv("RAG_LLM_API_KEY", KEY)
    monkeypatch.setenv("RAG_LLM_MODEL", "stub")
    arguments = ["ask", "Why?", "--documents", str(plain), "--cache", str(tmp_path / "cache")]
    assert cli.main([*arguments, "--generator", "hosted", "--access", "public,restricted"]) == 1
    error = capsys.readouterr().err
    assert "caller 'command line' reads public, restricted" in error and "may receive only public" in error
    assert not any(piece in error for piece in PIECES)


# --------------------------------------------------------------------------
# The caller's view is a prefilter inside both searches, not a cut of the fused list


def crowded_index():
    """Six restricted documents that match the question far better than the two public ones."""
    restricted = [
        Document(
            f"secret_{n}",
            f"Zephyr turbine {n}",
            "1",
            (Block((), f"The zephyr turbine zephyr turbine spins, zephyr turbine number {n}."),),
            access="restricted",
        )
        for n in range(6)
    ]
    public = [
        Document(
            f"open_{n}",
            f"Open {n}",
            "1",
            (Block((), f"A zephyr is a wind; the harbour crane {n} is painted green."),),
            access="public",
        )
        for n in range(2)
    ]
    return build_question_index([*restricted, *public], IndexOptions(max_words=40, dimensions=4, lists=2))


def test_a_shallow_search_still_fills_the_prompt_with_chunks_the_caller_may_read():
    # Depth 2: a cut after fusion would find only restricted chunks in each ranking
    # and leave the prompt empty; a prefilter spends the depth on readable chunks.
    from rag.ask.index import RetrievalSettings, retrieve

    index = crowded_index()
    question = "How does the zephyr turbine spin?"
    everyone = retrieve(index, question, RetrievalSettings(sources=2, depth=2))
    assert {item.chunk.doc_id for item in everyone.chosen} <= {f"secret_{n}" for n in range(6)}
    withheld = index.withheld(["public"])
    assert withheld.sum() == 6
    public = retrieve(index, question, RetrievalSettings(sources=2, depth=2), withheld=withheld)
    assert sorted(item.chunk.doc_id for item in public.chosen) == ["open_0", "open_1"]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.lists(st.booleans(), min_size=8, max_size=8), st.integers(min_value=1, max_value=8))
def test_the_prefiltered_bm25_ranking_is_the_full_ranking_restricted_to_the_view(mask, depth):
    # Independent of the mask inside the search: rank everything, then keep the allowed.
    from rag.ask.index import RetrievalSettings, retrieve

    index = crowded_index()
    withheld = np.array(mask, dtype=bool)
    question = "How does the zephyr turbine spin?"
    full = retrieve(index, question, RetrievalSettings(sources=8, depth=8))
    view = retrieve(index, question, RetrievalSettings(sources=8, depth=depth), withheld=withheld)
    chosen = [item.chunk.chunk_id for item in view.chosen]
    assert not any(withheld[[chunk.chunk_id for chunk in index.chunks].index(cid)] for cid in chosen)
    bm25_full = sorted(
        (item for item in full.chosen if item.bm25_rank is not None), key=lambda item: item.bm25_rank
    )
    expected = [item.chunk.chunk_id for item in bm25_full if not withheld[index.chunks.index(item.chunk)]]
    bm25_view = sorted(
        (item for item in view.chosen if item.bm25_rank is not None), key=lambda item: item.bm25_rank
    )
    assert [item.chunk.chunk_id for item in bm25_view] == expected[: len(bm25_view)]
    assert len(bm25_view) == min(depth, len(expected))


def test_exact_minilm_search_scores_only_the_chunks_the_caller_may_read():
    from types import SimpleNamespace

    from rag.ask.index import _minilm_ranking

    vectors = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.5, 0.5]], dtype=np.float32)
    index = SimpleNamespace(chunk_embeddings=vectors, tie_order=np.arange(4))
    embed = lambda texts: np.array([[1.0, 0.0]])  # noqa: E731
    assert _minilm_ranking(index, "q", embed, 4).positions.tolist() == [0, 1, 3, 2]
    allowed = np.array([False, True, True, False])
    assert _minilm_ranking(index, "q", embed, 4, allowed).positions.tolist() == [1, 2]
    assert _minilm_ranking(index, "q", embed, 1, allowed).positions.tolist() == [1]


# --------------------------------------------------------------------------
# The pipeline's measurement of rag ask answers as a caller and traces every answer


def test_the_measurement_of_rag_ask_traces_every_answer_as_its_caller(index):
    from rag.answering.trace import trace_problems
    from rag.ask.measure import judge_ask_answers
    from rag.labels import Question

    questions = [
        Question("zephyr", "How fast does the zephyr turbine spin?", "number", True, ()),
        Question("other", "Who built the zephyr turbine?", "name", False, ()),
    ]
    caller = CALLERS[1]  # acme_engineer
    readable_ids = {d for d, access, tenant, acl in DOCUMENTS if readable(caller, access, tenant, acl)}
    by_chunk = {chunk.chunk_id: chunk.doc_id for chunk in index.chunks}
    traces: list = []
    judged = judge_ask_answers(
        index,
        questions,
        documents(),
        "extractive",
        0.0,
        caller=caller,
        traces=traces,
        trace_name="extractive",
    )
    assert len(judged) == len(traces) == 2
    assert [trace["question_id"] for trace in traces] == ["zephyr", "other"]
    for trace in traces:
        assert trace_problems(trace) == [] and trace["tenant"] == "acme"
        for key in ("candidates", "selected", "citations"):
            assert {by_chunk[chunk] for chunk in trace[key]} <= readable_ids, key
    assert {by_chunk[chunk] for chunk in traces[0]["candidates"]} & readable_ids
    with pytest.raises(ValueError, match="give caller with traces"):
        judge_ask_answers(index, questions, documents(), "extractive", 0.0, traces=[])
