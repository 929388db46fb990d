"""The gate's planning check and its routes: loopback by the address connected to, never by the name.

A judge pointed off the machine is refused at planning naming its caller and
the levels, like a generator; the same judge at ``localhost`` plans when the
name resolves to loopback and is refused when an injected resolver maps it
elsewhere, at planning and again at request time, before any connection.
A name resolved to loopback is asked at the address it resolved to (a name no
DNS knows reaches the stub), and a name with any address off the machine is
not loopback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.formats.files import read_yaml
from rag.models.client import Endpoint, LlmError, Sampling, chat
from rag.models.gate import (
    ChunkAccess,
    GateError,
    ModelEntry,
    empty_table,
    open_gate,
    planning_problem,
    resolving,
    route_of,
)
from rag.pipeline.config import ConfigError, build_plan
from rag.retrieval.filters import PUBLIC_CALLER, Caller
from tests.fault_server import FaultServer, Request, head

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = read_yaml(ROOT / "workflow/schemas/config.schema.yaml")
EVERY_LEVEL = frozenset({"public", "internal", "restricted"})


def bundled_config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def with_judge(base_url: str) -> dict:
    config = bundled_config()
    config["generators"]["offsite_judge"] = {"kind": "judge", "base_url": base_url, "model": "m"}
    return config


def elsewhere(host: str, port: int) -> list[str]:
    return ["203.0.113.7"]


def test_a_judge_off_the_machine_is_refused_at_planning_naming_caller_and_levels():
    with resolving(elsewhere), pytest.raises(ConfigError) as caught:
        build_plan(with_judge("http://api.example.com/v1"), SCHEMA, root=ROOT)
    message = str(caught.value)
    assert "\n" not in message
    assert "caller 'whole_corpus'" in message and "judge 'offsite_judge'" in message
    assert "public, internal, restricted" in message and "may receive only public" in message


def test_a_judge_at_localhost_plans_and_is_refused_when_localhost_resolves_elsewhere():
    with resolving(lambda host, port: ["127.0.0.1", "::1"]):
        plan = build_plan(with_judge("http://localhost:8000/v1"), SCHEMA, root=ROOT)
    assert plan.answer_callers["judge"] == "whole_corpus"
    with resolving(elsewhere), pytest.raises(ConfigError) as caught:
        build_plan(with_judge("http://localhost:8000/v1"), SCHEMA, root=ROOT)
    message = str(caught.value)
    assert "caller 'whole_corpus'" in message and "judge 'offsite_judge'" in message
    assert "localhost at 203.0.113.7" in message and "public, internal, restricted" in message
    # One address of several off the machine is enough to refuse.
    with resolving(lambda host, port: ["127.0.0.1", "203.0.113.7"]), pytest.raises(ConfigError):
        build_plan(with_judge("http://localhost:8000/v1"), SCHEMA, root=ROOT)


def test_a_judge_that_declares_may_receive_plans_off_the_machine():
    config = with_judge("https://api.example.com/v1")
    config["generators"]["offsite_judge"]["may_receive"] = sorted(EVERY_LEVEL)
    with resolving(elsewhere):
        build_plan(config, SCHEMA, root=ROOT)


def answer(request: Request, connection) -> None:
    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "ok"}}]}).encode()
    connection.sendall(head(200, {"Content-Length": str(len(body))}) + body)


@pytest.fixture
def stub(monkeypatch):
    for variable in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    server = FaultServer()
    server.script[:] = [answer]
    yield server
    server.close()


MESSAGES = [{"role": "user", "content": "hi"}]


def test_localhost_resolving_elsewhere_is_refused_at_request_time_before_any_connection(stub):
    port = stub.tcp.server_address[1]
    entry = ModelEntry("m", "judge", f"http://localhost:{port}/v1", frozenset({"public"}))
    caller = Caller("reader", access=EVERY_LEVEL)
    gate = open_gate(caller=caller, entry=entry, table=empty_table())  # localhost is loopback here
    with resolving(elsewhere), pytest.raises(GateError) as caught:
        chat(Endpoint(entry.base_url, "m", gate=gate), MESSAGES, Sampling(), None)
    assert "caller 'reader'" in str(caught.value) and "may receive only public" in str(caught.value)
    # Without a gate, a name that leads elsewhere is not asked at all.
    with resolving(elsewhere), pytest.raises(GateError) as caught:
        chat(Endpoint(entry.base_url, "m"), MESSAGES, Sampling(), None)
    assert "not this machine's loopback" in str(caught.value)
    assert stub.received == []


def test_the_connection_goes_to_the_resolved_address_not_to_the_name(stub):
    port = stub.tcp.server_address[1]
    with resolving(lambda host, _port: ["127.0.0.1"]):
        reply = chat(Endpoint(f"http://model.invalid:{port}/v1", "m"), MESSAGES, Sampling(), None)
    assert reply.text == "ok" and len(stub.received) == 1
    assert stub.received[0].headers["host"].startswith("model.invalid")


def test_a_gate_admits_only_the_callers_view_and_needs_its_arguments():
    table = ChunkAccess.from_columns(
        {
            "chunk_id": ["a", "b", "c"],
            "doc_id": ["a", "b", "c"],
            "access": ["public", "restricted", "public"],
            "tags": [[], [], []],
            "updated": ["2020-01-01", "2020-01-01", "2030-01-01"],
        }
    )
    caller = Caller("dated", access=frozenset({"public"}), as_of=__import__("datetime").date(2025, 1, 1))
    gate = open_gate(caller=caller, entry=ModelEntry("m", "generator", "bundled", EVERY_LEVEL), table=table)
    gate.admit(["a"])
    for refused in (["b"], ["c"], ["a", "zzz"]):
        with pytest.raises(GateError) as caught:
            gate.admit(refused)
        assert "outside the view of caller 'dated'" in str(caught.value) and "zzz" not in str(caught.value)
    with pytest.raises(TypeError):
        open_gate(caller, gate.entry, table)  # keyword-only
    with pytest.raises(TypeError):
        open_gate(caller=caller, entry=gate.entry)  # no default table


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(st.lists(st.ip_addresses().map(str), min_size=1, max_size=4))
def test_a_route_is_loopback_exactly_when_every_address_is(addresses):
    import ipaddress

    with resolving(lambda host, port: addresses):
        route = route_of("http://some.name:1/v1")

    def loopback(text: str) -> bool:
        address = ipaddress.ip_address(text)
        mapped = getattr(address, "ipv4_mapped", None)
        return address.is_loopback or (mapped is not None and mapped.is_loopback)

    expected = all(loopback(a) for a in addresses)
    assert route.loopback is expected and route.connect_to == tuple(addresses)
    entry = ModelEntry("m", "generator", "http://some.name:1/v1", frozenset({"public"}))
    with resolving(lambda host, port: addresses):
        problem = planning_problem(caller=Caller("c", access=EVERY_LEVEL), entry=entry)
    assert (problem is None) is expected


def test_the_public_caller_may_use_any_endpoint_and_errors_are_one_line():
    entry = ModelEntry("m", "generator", "https://api.example.com/v1", frozenset({"public"}))
    with resolving(elsewhere):
        assert planning_problem(caller=PUBLIC_CALLER, entry=entry) is None
    bad = ModelEntry("m", "generator", "https://api.example.com/v1", frozenset({"secret"}))
    problem = planning_problem(caller=PUBLIC_CALLER, entry=bad)
    assert problem is not None and "'secret' is not an access level" in problem
    assert issubclass(GateError, LlmError)
