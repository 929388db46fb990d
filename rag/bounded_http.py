"""One HTTP request with a total deadline and a size cap, read in bounded pieces.

A socket timeout bounds each wait for bytes, not the request: a server that
sends one byte a second never trips it. Here a watchdog shuts the socket down
when the whole request (connection, headers and body) has used its time, and
the body is read in pieces of at most :data:`PIECE_BYTES`, so a reply larger
than the cap is refused after reading at most the cap plus one piece, never
held whole in memory. Redirects are never followed: callers decide, so each
can keep its own limit and message. Proxies from the environment
(``https_proxy``, ``no_proxy``...) are honoured as urllib would.

Shared by the Wikipedia downloader and the hosted generator; standard library only.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.message import Message

PIECE_BYTES = 64 * 1024


class HttpFault(Exception):
    """A request that did not give a whole reply in time; the message says which way it failed."""


class DeadlineExceeded(HttpFault):
    pass


class BodyTooLarge(HttpFault):
    pass


class TruncatedBody(HttpFault):
    pass


class ConnectionFault(HttpFault):
    pass


@dataclass(frozen=True)
class HttpReply:
    status: int
    reason: str
    headers: Message
    body: bytes
    # Whether the body's end is known to be its real end: it matched a declared
    # Content-Length, or its chunked framing ended with the last chunk. A body
    # read until the server hung up has no such proof; a cut cannot be told
    # from a whole one, so callers that cache (the Wikipedia source) refuse it.
    framed: bool = True

    def header(self, name: str) -> str | None:
        return self.headers.get(name)


def _connection(
    url: urllib.parse.SplitResult,
    timeout: float,
    use_proxy: bool = True,
    connect_to: tuple[str, ...] | None = None,
) -> tuple[http.client.HTTPConnection, str]:
    """A connection to the URL's host (or to the proxy that reaches it) and the request target.

    ``connect_to`` are the addresses the host was resolved to and judged by: a direct
    connection goes to the first that accepts, never to another (the Host header and
    TLS name stay the URL's host).
    """
    host, port = url.hostname or "", url.port
    target = urllib.parse.urlunsplit(("", "", url.path or "/", url.query, ""))
    proxy = urllib.request.getproxies().get(url.scheme) if use_proxy else None
    if proxy and not urllib.request.proxy_bypass(host):
        proxy_url = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        proxy_host, proxy_port = proxy_url.hostname or "", proxy_url.port or 8080
        if url.scheme == "https":
            connection = http.client.HTTPSConnection(
                proxy_host, proxy_port, timeout=timeout, context=ssl.create_default_context()
            )
            connection.set_tunnel(host, port)
            return connection, target
        return http.client.HTTPConnection(proxy_host, proxy_port, timeout=timeout), url.geturl()
    if url.scheme == "https":
        context = ssl.create_default_context()
        connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    else:
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
    if connect_to:
        pinned = tuple(connect_to)

        def to_resolved(address, timeout=None, source_address=None, **options):
            failure: OSError | None = None
            for resolved in pinned:  # each address was judged; none other is tried
                try:
                    where = (resolved, address[1])
                    return socket.create_connection(where, timeout, source_address, **options)
                except OSError as error:
                    failure = error
            raise failure or OSError("no address to connect to")

        connection._create_connection = to_resolved
    return connection, target


def request(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes | None = None,
    *,
    deadline_seconds: float,
    max_body_bytes: int,
    clock: Callable[[], float] = time.monotonic,
    use_proxy: bool = True,
    connect_to: tuple[str, ...] | None = None,
) -> HttpReply:
    """Send one request and return the whole reply, whatever its status, within the deadline.

    Raises :class:`DeadlineExceeded` when the deadline passes (also while the
    server drips bytes), :class:`BodyTooLarge` past ``max_body_bytes`` (announced
    or received), :class:`TruncatedBody` when fewer bytes arrive than announced,
    and :class:`ConnectionFault` for any other network failure. ``use_proxy=False``
    connects directly whatever the environment says (a loopback endpoint that
    receives a key must not be reached through a proxy).
    """
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConnectionFault(f"not an http(s) URL: {parsed.scheme}://{parsed.hostname or ''}")
    started = clock()
    expired = threading.Event()
    connection, target = _connection(parsed, deadline_seconds, use_proxy, connect_to)

    def cut() -> None:
        expired.set()
        sock = connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    watchdog = threading.Timer(deadline_seconds, cut)
    watchdog.daemon = True
    watchdog.start()
    received = 0
    try:
        connection.request(method, target, body=body, headers=dict(headers))
        response = connection.getresponse()
        announced_text = response.getheader("Content-Length")
        announced = int(announced_text) if announced_text and announced_text.strip().isdigit() else None
        if announced is not None and announced > max_body_bytes:
            raise BodyTooLarge(
                f"the reply announces {announced} bytes, more than the {max_body_bytes} allowed"
            )
        pieces = bytearray()
        while True:
            if expired.is_set() or clock() - started > deadline_seconds:
                raise DeadlineExceeded(f"no whole reply within {deadline_seconds:g} s")
            piece = response.read1(PIECE_BYTES)
            if not piece:
                break
            pieces += piece
            received = len(pieces)
            if received > max_body_bytes:
                raise BodyTooLarge(f"the reply exceeds {max_body_bytes} bytes")
        if expired.is_set():
            raise DeadlineExceeded(f"no whole reply within {deadline_seconds:g} s")
        if announced is not None and len(pieces) != announced:
            raise TruncatedBody(f"truncated body ({len(pieces)} of {announced} announced bytes)")
        framed = announced is not None or bool(getattr(response, "chunked", False))
        return HttpReply(response.status, response.reason, response.headers, bytes(pieces), framed)
    except HttpFault:
        raise
    except http.client.IncompleteRead as error:
        if expired.is_set():
            raise DeadlineExceeded(f"no whole reply within {deadline_seconds:g} s") from None
        raise TruncatedBody(f"truncated body ({received + len(error.partial)} bytes received)") from None
    except (OSError, http.client.HTTPException, ValueError) as error:
        if expired.is_set() or isinstance(error, TimeoutError):
            raise DeadlineExceeded(f"no whole reply within {deadline_seconds:g} s") from None
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise ConnectionFault(f"{type(error).__name__}: {reason}") from None
    finally:
        watchdog.cancel()
        connection.close()


def gunzip(data: bytes, max_bytes: int) -> bytes:
    """A gzip body expanded to at most ``max_bytes``: a decompression bomb is refused, not expanded."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        expanded = inflater.decompress(data, max_bytes + 1)
    except zlib.error:
        raise TruncatedBody("corrupt gzip body") from None
    if len(expanded) > max_bytes or inflater.unconsumed_tail:
        raise BodyTooLarge(f"the gzip body expands to more than {max_bytes} bytes")
    if not inflater.eof:
        raise TruncatedBody("truncated gzip body")
    return expanded


def proxy_for(url: str) -> str | None:
    """The proxy the environment would route ``url`` through, or None (callers refuse or bypass it)."""
    parsed = urllib.parse.urlsplit(url)
    proxy = urllib.request.getproxies().get(parsed.scheme)
    if proxy and not urllib.request.proxy_bypass(parsed.hostname or ""):
        return proxy
    return None
