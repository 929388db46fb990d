"""A scripted HTTP server on 127.0.0.1 that misbehaves on purpose, for the network fault tests.

Each request is answered by the next behaviour of the script (the last one
repeats): a function that receives the request and the raw socket and writes
whatever it likes, so replies can drip, lie about their length, loop through
redirects or stop half-way.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Behaviour = Callable[[Request, socket.socket], None]


@dataclass
class FaultServer:
    script: list[Behaviour] = field(default_factory=list)
    received: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        server = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                request = _read_request(self.request)
                if request is None:
                    return
                server.received.append(request)
                behaviour = server.script.pop(0) if len(server.script) > 1 else server.script[0]
                with contextlib.suppress(OSError):
                    behaviour(request, self.request)

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
        self.thread.join(timeout=5)


def _read_request(connection: socket.socket) -> Request | None:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = connection.recv(65536)
        if not piece:
            return None
        data += piece
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        piece = connection.recv(65536)
        if not piece:
            break
        body += piece
    return Request(method, path, headers, body)


def head(status: int = 200, headers: dict[str, str] | None = None, reason: str = "OK") -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def reply(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> Behaviour:
    def behave(request: Request, connection: socket.socket) -> None:
        connection.sendall(head(status, {"Content-Length": str(len(body)), **(headers or {})}) + body)

    return behave


def drip(body: bytes, every_seconds: float, headers: dict[str, str] | None = None) -> Behaviour:
    """The body one byte at a time: every wait is short, the whole takes long."""

    def behave(request: Request, connection: socket.socket) -> None:
        connection.sendall(head(200, {"Content-Length": str(len(body)), **(headers or {})}))
        for index in range(len(body)):
            connection.sendall(body[index : index + 1])
            time.sleep(every_seconds)

    return behave


def stream(total_bytes: int, announce: bool, headers: dict[str, str] | None = None) -> Behaviour:
    """``total_bytes`` of filler, made on the fly so the server itself stays small."""
    block = b"x" * 65536

    def behave(request: Request, connection: socket.socket) -> None:
        extra = {"Content-Length": str(total_bytes)} if announce else {}
        connection.sendall(head(200, {**extra, **(headers or {})}))
        sent = 0
        while sent < total_bytes:
            piece = block[: min(len(block), total_bytes - sent)]
            connection.sendall(piece)
            sent += len(piece)

    return behave


def gzip_bomb(expanded_bytes: int, content_type: str = "text/html; charset=utf-8") -> Behaviour:
    body = gzip.compress(b"<p>" + b"a" * expanded_bytes + b"</p>", compresslevel=9)
    return reply(body, headers={"Content-Encoding": "gzip", "Content-Type": content_type})


def cut_short(body: bytes, sent_bytes: int, headers: dict[str, str] | None = None) -> Behaviour:
    """Announce the whole body, send part of it, and hang up."""

    def behave(request: Request, connection: socket.socket) -> None:
        connection.sendall(
            head(200, {"Content-Length": str(len(body)), **(headers or {})}) + body[:sent_bytes]
        )

    return behave


def redirect(location: str, status: int = 302) -> Behaviour:
    def behave(request: Request, connection: socket.socket) -> None:
        connection.sendall(head(status, {"Location": location, "Content-Length": "0"}, reason="Found"))

    return behave


def cut_unannounced(body: bytes, fraction: float, headers: dict[str, str] | None = None) -> Behaviour:
    """The first ``fraction`` of the body, no Content-Length, then hang up: a cut that looks whole."""

    def behave(request: Request, connection: socket.socket) -> None:
        connection.sendall(head(200, headers) + body[: int(len(body) * fraction)])

    return behave


def chunked(body: bytes, headers: dict[str, str] | None = None, complete: bool = True) -> Behaviour:
    """The body in chunked framing; without ``complete`` the last chunk never comes."""

    def behave(request: Request, connection: socket.socket) -> None:
        connection.sendall(head(200, {"Transfer-Encoding": "chunked", **(headers or {})}))
        for start in range(0, len(body), 4096):
            piece = body[start : start + 4096]
            if not complete and start + 4096 >= len(body) // 2:
                return
            connection.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        connection.sendall(b"0\r\n\r\n")

    return behave


# A language model in one rule, for the tests of scoring by token log-probabilities:
# a word stated earlier in the prompt costs 0.1 nats, any other word 2.
WORD_MODEL_STATED, WORD_MODEL_UNSTATED = -0.1, -2.0
WORD_MODEL_COMPLETION = " about 2 years"


def _words(text: str) -> list[str]:
    return re.findall(r"\s*\S+", text)


def word_language_model(request: Request, connection: socket.socket) -> None:
    """``/completions`` like llama.cpp's server: the prompt echoed word by word with log-probabilities.

    Without ``echo`` it completes any prompt with :data:`WORD_MODEL_COMPLETION`
    at 0.5 nats a word.
    """
    body = json.loads(request.body)
    if not body.get("echo"):
        tokens = _words(WORD_MODEL_COMPLETION)
        logprobs = {"tokens": tokens, "token_logprobs": [-0.5] * len(tokens)}
        choice = {"text": WORD_MODEL_COMPLETION, "logprobs": logprobs, "finish_reason": "stop"}
        reply(json.dumps({"choices": [choice]}).encode())(request, connection)
        return
    tokens, offsets, values, position = _words(body["prompt"]), [], [], 0
    for index, token in enumerate(tokens):
        offsets.append(position)
        earlier = {word.strip() for word in tokens[:index]}
        cost = WORD_MODEL_STATED if token.strip() in earlier else WORD_MODEL_UNSTATED
        values.append(None if index == 0 else cost)
        position += len(token)
    logprobs = {"tokens": tokens, "text_offset": offsets, "token_logprobs": values}
    reply(json.dumps({"choices": [{"text": body["prompt"], "logprobs": logprobs}]}).encode())(
        request, connection
    )
