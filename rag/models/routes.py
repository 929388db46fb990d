"""Where a base URL leads: its host resolved once, loopback only when every address is.

Loopback is decided by the address connected to, never by the name: a
``localhost`` mapped to another machine is not this machine. The resolver
and the loopback test are injectable (:func:`resolving`), so a test can map a
name to another address, or let a stub on 127.0.0.1 stand in for a machine
elsewhere. Used by the one gate (rag.models.gate) and the one HTTP client
(rag.models.client), which connects only to the addresses judged here.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from rag.kinds import BUNDLED_ENDPOINT

# host, port -> the addresses a connection to them may reach.
Resolver = Callable[[str, int], Sequence[str]]


class RouteError(RuntimeError):
    """A base URL that leads nowhere this machine can tell: one line naming its host."""


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (``getaddrinfo``), in its order, without repeats."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise RouteError(f"{host}: the name does not resolve ({type(error).__name__})") from None
    return list(dict.fromkeys(str(info[4][0]) for info in found))


def loopback_address(address: str) -> bool:
    """Whether an IP address is this machine's loopback (127.0.0.0/8, ``::1``, or IPv4-mapped 127.x)."""
    try:
        parsed = ipaddress.ip_address(address.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(parsed, "ipv4_mapped", None)
    return parsed.is_loopback or (mapped is not None and mapped.is_loopback)


_INJECTED: dict[str, Callable] = {"resolve": system_resolver, "loopback": loopback_address}
_INJECTED_LOCK = threading.Lock()


@contextlib.contextmanager
def resolving(resolve: Resolver, loopback: Callable[[str], bool] | None = None) -> Iterator[None]:
    """While the block runs, names resolve with ``resolve`` (and addresses are judged by ``loopback``)."""
    with _INJECTED_LOCK:
        saved = dict(_INJECTED)
        _INJECTED["resolve"] = resolve
        if loopback is not None:
            _INJECTED["loopback"] = loopback
    try:
        yield
    finally:
        with _INJECTED_LOCK:
            _INJECTED.update(saved)


@dataclass(frozen=True)
class Route:
    """Where a base URL leads: its host, port and resolved addresses; loopback only if all of them are."""

    host: str
    port: int
    addresses: tuple[str, ...]
    loopback: bool

    @property
    def connect_to(self) -> tuple[str, ...] | None:
        """The addresses a connection may go to: those resolved and judged, tried in order.

        None for a name this machine cannot resolve (an endpoint reached through a proxy): such a
        route is never loopback, so only an entry that may receive the caller's text gets it.
        """
        return self.addresses or None

    def where(self) -> str:
        if not self.addresses or self.addresses == (self.host,):
            return self.host
        return f"{self.host} at {', '.join(self.addresses)}"


def route_of(base_url: str) -> Route:
    """Resolve ``base_url``'s host once; the bundled endpoint is this machine's by construction."""
    if base_url == BUNDLED_ENDPOINT:
        return Route("127.0.0.1", 0, ("127.0.0.1",), True)
    parsed = urllib.parse.urlsplit(base_url)
    host = (parsed.hostname or "").rstrip(".")
    if not host:
        raise RouteError("the endpoint's base_url names no host")
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
    except ValueError:
        raise RouteError(f"{host}: the endpoint's port is not a number") from None
    with _INJECTED_LOCK:
        resolve, loopback = _INJECTED["resolve"], _INJECTED["loopback"]
    try:
        literal = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        literal = None
    addresses = (str(literal),) if literal is not None else tuple(resolve(host, port))
    if not addresses:
        raise RouteError(f"{host}: the name resolves to no address")
    return Route(host, port, addresses, all(loopback(address) for address in addresses))


def planning_route(base_url: str) -> Route:
    """:func:`route_of` for planning: a name that does not resolve now counts as off this machine."""
    try:
        return route_of(base_url)
    except RouteError:
        host = (urllib.parse.urlsplit(base_url).hostname or "?").rstrip(".")
        return Route(host, 0, (), False)
