"""Every path that sends document text to a model, from the table of kinds, passes the one gate.

The paths are not listed here: they are read from ``sends_text`` of every kind
of rag.kinds.GENERATOR_KINDS, and each must have a driver below, so a kind or
path added tomorrow fails this test until it is driven through the gate.

A logging stub on 127.0.0.1 stands in for an endpoint off this machine: the
entry's base URL names ``offsite.example``, the injected resolver maps it to
the stub's address and the injected loopback test says that address is not
this machine (rag.models.gate.resolving), so every rule for an endpoint
elsewhere applies. The corpus is every combination of tenant, ACL, access
level and date, each chunk carrying a unique marker; for 2 tenants × 3 groups
and an ``as_of`` date, every path is offered seeded random sets of chunks
(most mixing readable and unreadable ones) and the markers in the requests
the stub received are compared with the caller's view computed here, by an
independent rule: 0 outside it, while the readable ones do arrive.
"""

from __future__ import annotations

import contextlib
import datetime
import itertools
import json
import random
import re

import pandas as pd
import pytest

from rag.answering.llm_answers import (
    Setting,
    answer_records,
    complete_with_cache,
    generator_from_entry,
)
from rag.chunking import Chunk
from rag.grounding.served_model import generator_model, sources_prefix
from rag.kinds import GENERATOR_KINDS, defaults
from rag.labels import Question
from rag.measuring.judging import judge_from_entry, model_verdicts
from rag.models.gate import ChunkAccess, GateError, model_entry, open_gate, resolving
from rag.retrieval.filters import Caller
from tests.fault_server import FaultServer, Request, head

TENANTS = ("", "acme", "globex")
GROUPS = ("red", "green", "blue")
ACLS = ((), ("red",), ("green",), ("blue", "red"))
LEVELS = ("public", "internal", "restricted")
DATES = ("2020-01-01", "2030-01-01")
AS_OF = datetime.date(2025, 1, 1)
CALLERS = [
    Caller(f"{tenant}_{group}", tenant, frozenset({group}), frozenset(LEVELS), AS_OF)
    for tenant, group in itertools.product(("acme", "globex"), GROUPS)
]
MARKER = re.compile(r"MARK(\d{3})Q")


def corpus() -> tuple[list[Chunk], dict[str, list]]:
    chunks, columns = [], {name: [] for name in ("chunk_id", "doc_id", "access", "tags", "updated")}
    columns |= {"tenant": [], "acl": []}
    for number, (tenant, acl, level, date) in enumerate(itertools.product(TENANTS, ACLS, LEVELS, DATES)):
        chunk_id = f"c{number:03d}"
        text = f"Fact MARK{number:03d}Q: the probe reached {level} orbit in {date[:4]}."
        chunks.append(Chunk(chunk_id, f"d{number:03d}", f"Doc {number}", "", 0, len(text), text))
        for name, value in zip(
            columns, (chunk_id, f"d{number:03d}", level, [], date, tenant, list(acl)), strict=True
        ):
            columns[name].append(value)
    return chunks, columns


CHUNKS, COLUMNS = corpus()
BY_ID = {chunk.chunk_id: chunk for chunk in CHUNKS}


def in_view(caller: Caller, position: int) -> bool:
    """The caller's view, written here independently of rag.retrieval.filters."""
    acl = COLUMNS["acl"][position]
    return (
        COLUMNS["access"][position] in caller.access
        and COLUMNS["tenant"][position] in ("", caller.tenant)
        and (not acl or bool(set(acl) & caller.groups))
        and datetime.date.fromisoformat(COLUMNS["updated"][position]) <= caller.as_of
    )


def reply(request: Request, connection) -> None:
    if request.path.endswith("/chat/completions"):
        document = {"choices": [{"message": {"role": "assistant", "content": "yes [1]."}}]}
    else:
        logprobs = {"tokens": [" yes"], "token_logprobs": [-0.5], "text_offset": [0]}
        document = {"choices": [{"text": " yes", "logprobs": logprobs, "finish_reason": "stop"}]}
    body = json.dumps(document).encode()
    connection.sendall(head(200, {"Content-Length": str(len(body))}) + body)


@pytest.fixture
def offsite(monkeypatch):
    """The logging stub, reached as http://offsite.example:PORT/v1, an address judged off this machine."""
    for variable in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    stub = FaultServer()
    stub.script[:] = [reply]
    port = stub.tcp.server_address[1]

    def resolve(host: str, _port: int) -> list[str]:
        assert host == "offsite.example", host
        return ["127.0.0.1"]

    with resolving(resolve, loopback=lambda address: False):
        yield stub, f"http://offsite.example:{port}/v1"
    stub.close()


def entry_of(kind: str, base_url: str) -> dict:
    """A canonical entry of ``kind`` at ``base_url`` that may receive every level (so only views limit)."""
    entry = defaults(GENERATOR_KINDS)[kind]
    return {**entry, "kind": kind, "base_url": base_url, "may_receive": list(LEVELS)}


def answers(kind: str, base_url: str, caller: Caller, chunk_ids: list[str], tmp_path) -> None:
    entry = entry_of(kind, base_url)
    generator = generator_from_entry("offsite", entry)
    gate = open_gate(caller=caller, entry=model_entry("offsite", entry, "generator"), table=TABLE)
    question = Question("q1", "When did the probe reach orbit?", "date", True)
    setting = Setting("c", "q", "offsite", "s", "bm25", len(chunk_ids))
    complete = complete_with_cache(generator, None, gate=gate)
    chunks = [BY_ID[chunk_id] for chunk_id in chunk_ids]
    answer_records([question], lambda _q: chunks, generator, complete, setting, gate=gate)


def grounding(kind: str, base_url: str, caller: Caller, chunk_ids: list[str], tmp_path) -> None:
    entry = entry_of(kind, base_url)
    generator = generator_from_entry("offsite", entry)
    gate = open_gate(caller=caller, entry=model_entry("offsite", entry, "generator"), table=TABLE)
    with contextlib.ExitStack() as stack:
        model = generator_model(generator, None, 4, tmp_path / "server.log", stack, gate)
        gate.admit(chunk_ids)  # what run_grounding's admit hook does for every question's chunks
        prefix = sources_prefix([BY_ID[i].text for i in chunk_ids], "The probe reached orbit in")
        model.complete(prefix)
        model.score(prefix, " 2020")


def judging(kind: str, base_url: str, caller: Caller, chunk_ids: list[str], tmp_path) -> None:
    entry = entry_of(kind, base_url)
    judge = judge_from_entry("offsite", entry)
    gate = open_gate(caller=caller, entry=model_entry("offsite", entry, "judge"), table=TABLE)
    labels = pd.DataFrame(
        [
            {
                "item": "a1",
                "question": "When?",
                "reference": "2020",
                "answer": "In 2020 [1].",
                "cited": " ".join(str(n) for n in range(1, len(chunk_ids) + 1)),
                "cited_chunks": " ".join(chunk_ids),
            }
        ]
    )
    texts = {chunk.chunk_id: chunk.text for chunk in CHUNKS}
    model_verdicts(labels, judge, texts, complete_with_cache(judge, None, gate=gate), gate)


DRIVERS = {"answers": answers, "grounding": grounding, "judging": judging}
TABLE = ChunkAccess.from_columns(COLUMNS)
PATHS = [(name, path) for name, kind in GENERATOR_KINDS.items() for path in kind.sends_text]


def test_every_path_of_the_table_of_kinds_has_a_driver():
    assert PATHS, "no kind of the table sends text to a model"
    assert {path for _, path in PATHS} <= set(DRIVERS), "a path of rag.kinds has no driver here"
    # The kinds that ask a model are all there (an llm kind and a judge kind today).
    assert {kind for kind, _ in PATHS} == {
        name for name, kind in GENERATOR_KINDS.items() if kind.generate is not None
    }


@pytest.mark.parametrize(("kind", "path"), PATHS)
def test_no_request_holds_a_chunk_outside_its_callers_view(offsite, tmp_path, kind, path):
    stub, base_url = offsite
    rng = random.Random(f"{kind}/{path}")
    leaked = sent = refused = 0
    for caller in CALLERS:
        readable = [COLUMNS["chunk_id"][p] for p in range(len(CHUNKS)) if in_view(caller, p)]
        assert readable and len(readable) < len(CHUNKS) / 2
        offers = [rng.sample(readable, 3)] + [rng.sample(COLUMNS["chunk_id"], 3) for _ in range(4)]
        for chunk_ids in offers:
            before = len(stub.received)
            try:
                DRIVERS[path](kind, base_url, caller, chunk_ids, tmp_path)
            except GateError:
                refused += 1
                assert len(stub.received) == before  # refused before anything was sent
            bodies = [request.body.decode() for request in stub.received[before:]]
            seen = {int(m) for body in bodies for m in MARKER.findall(body)}
            leaked += sum(not in_view(caller, position) for position in seen)
            if seen:
                sent += 1
                assert {COLUMNS["chunk_id"][p] for p in seen} == set(chunk_ids)
    assert leaked == 0
    # The check could fail: readable chunks did reach the stub, and mixed offers were refused.
    assert sent >= len(CALLERS) and refused > 0
