"""Every path to a model goes through the one client, and a loopback endpoint never through a proxy.

With ``http_proxy`` and ``HTTP_PROXY`` pointing at a recording proxy on
127.0.0.1 (and no ``no_proxy``), a base URL given by name
(``http://localhost:PORT/v1``) and by address (``http://127.0.0.1:PORT/v1``)
is asked directly on every generator path: ``rag ask --generator hosted``,
``rag ask`` with an llm entry of ./config.yaml, the pipeline's llm generator,
grounding's served model, and the bundled server (a stand-in here). The
proxy receives nothing and the model server gets each request.
"""

from __future__ import annotations

import contextlib
import json
import socketserver
import sys
import threading
from pathlib import Path

import pytest
import yaml

from rag.answering import llm_answers
from rag.answering.prompts import build_prompt
from rag.ask import cli
from rag.chunking import Chunk
from rag.grounding.served_model import generator_model
from rag.models import local_server
from rag.models.client import Endpoint, Sampling, chat
from rag.models.gate import ChunkAccess
from rag.models.response_cache import ResponseCache
from rag.retrieval.filters import PUBLIC_CALLER
from tests.fault_server import FaultServer, Request, head

KEY = "sk-test-loopback-0123456789abcdef"
CHUNK = Chunk("d1", "d1", "Pluto", "", 0, 40, "A day on Pluto lasts 6.387 Earth days.")
# The access metadata rag ask's gate reads (rag.models.gate): one public, shared, open chunk.
TABLES = {
    "table": ChunkAccess.from_columns(
        {"chunk_id": ["d1"], "doc_id": ["d1"], "access": ["public"], "tags": [[]], "updated": ["2020-01-01"]}
    )
}


class RecordingProxy:
    """Accepts connections on 127.0.0.1 and records whatever arrives; never forwards."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                self.request.settimeout(2)
                with contextlib.suppress(OSError):
                    proxy.received.append(self.request.recv(65536) or b"(connection)")
                    self.request.sendall(head(502, {"Content-Length": "0"}))

        self.tcp = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.tcp.daemon_threads = True
        self.thread = threading.Thread(target=self.tcp.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.tcp.server_address[1]}"

    def close(self) -> None:
        self.tcp.shutdown()
        self.tcp.server_close()


def model_reply(request: Request, connection) -> None:
    """A well-formed reply to /chat/completions or /completions."""
    if request.path.endswith("/chat/completions"):
        message = {"role": "assistant", "content": "About 6.4 Earth days [1]."}
        document = {"choices": [{"message": message}], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}
    else:
        logprobs = {"tokens": [" about"], "token_logprobs": [-0.5], "text_offset": [0]}
        document = {"choices": [{"text": " about", "logprobs": logprobs, "finish_reason": "stop"}]}
    body = json.dumps(document).encode()
    connection.sendall(head(200, {"Content-Length": str(len(body))}) + body)


@pytest.fixture
def proxied(monkeypatch):
    """A model server and a recording proxy set as every http proxy variable."""
    proxy = RecordingProxy()
    model = FaultServer()
    model.script[:] = [model_reply]
    for variable in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("http_proxy", proxy.url)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    yield proxy, model
    model.close()
    proxy.close()


def base_url(model: FaultServer, host: str) -> str:
    return f"http://{host}:{model.tcp.server_address[1]}/v1"


def llm_entry(url: str) -> dict:
    return {"kind": "llm", "base_url": url, "model": "m", "api_key_env": "TEST_MODEL_KEY", "timeout": 10}


def ask_hosted(url: str, tmp_path: Path, monkeypatch) -> str:
    monkeypatch.setenv("RAG_LLM_BASE_URL", url)
    monkeypatch.setenv("RAG_LLM_API_KEY", KEY)
    monkeypatch.setenv("RAG_LLM_MODEL", "m")
    return cli._hosted_generator(PUBLIC_CALLER, TABLES)(build_prompt("How long is a day on Pluto?", [CHUNK]))


def ask_llm_entry(url: str, tmp_path: Path, monkeypatch) -> str:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TEST_MODEL_KEY", KEY)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"generators": {"mine": llm_entry(url)}}))
    generate = cli._llm_generator("mine", tmp_path / "cache", PUBLIC_CALLER, TABLES)
    return generate(build_prompt("How long is a day on Pluto?", [CHUNK]))


def pipeline_llm(url: str, tmp_path: Path, monkeypatch) -> str:
    monkeypatch.setenv("TEST_MODEL_KEY", KEY)
    generator = llm_answers.generator_from_entry("mine", cli._checked_entry("mine", llm_entry(url), "test"))
    complete = llm_answers.complete_with_cache(generator, ResponseCache(tmp_path / "cache"))
    messages = llm_answers.messages_for("How long is a day on Pluto?", [CHUNK], generator.template)
    return complete([messages])[0].text


def grounding_model(url: str, tmp_path: Path, monkeypatch) -> str:
    monkeypatch.setenv("TEST_MODEL_KEY", KEY)
    generator = llm_answers.generator_from_entry("mine", cli._checked_entry("mine", llm_entry(url), "test"))
    with contextlib.ExitStack() as stack:
        model = generator_model(
            generator, ResponseCache(tmp_path / "cache"), 4, tmp_path / "server.log", stack
        )
        return model.complete("A day on Pluto lasts").text


PATHS = {
    "rag ask --generator hosted": ask_hosted,
    "rag ask --generator <llm entry>": ask_llm_entry,
    "pipeline llm generator": pipeline_llm,
    "grounding served model": grounding_model,
}


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_loopback_endpoint_is_asked_directly_never_through_the_proxy(
    proxied, tmp_path, monkeypatch, path, host
):
    proxy, model = proxied
    answer = PATHS[path](base_url(model, host), tmp_path, monkeypatch)
    assert answer.strip() in ("About 6.4 Earth days [1].", "about")
    assert proxy.received == []
    (request,) = model.received
    assert request.path.startswith("/v1/") and request.headers["authorization"] == f"Bearer {KEY}"


def test_the_bundled_server_is_asked_directly_never_through_the_proxy(proxied, tmp_path, monkeypatch):
    from tests.unit.models.test_local_server import STAND_IN as SCRIPT

    proxy, _ = proxied
    monkeypatch.setattr(
        local_server,
        "server_command",
        lambda port, logprobs=False, threads=None, alias=None: [sys.executable, "-c", SCRIPT, str(port)],
    )
    with local_server.running(tmp_path / "server.log") as url:
        # The server is registered by the address it was started on; ask by that address.
        answer = chat(Endpoint(url, "m"), [{"role": "user", "content": "hi"}], Sampling(), None)
    assert answer.text == "stand-in reply" and proxy.received == []


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.8.9.10", "[::1]"])
def test_loopback_by_name_and_address_is_direct_and_other_hosts_are_not(host):
    assert Endpoint(f"http://{host}:1/v1", "m").loopback
    for other in ("10.0.0.1", "128.0.0.1", "localhost.example.org", "[::2]", "example.org"):
        assert not Endpoint(f"http://{other}:1/v1", "m").loopback
