"""The domain proxy's bookkeeping and socket work, apart from its judgement
(:mod:`pytest_agentic_evals.expectations.proxy`): what a trial asked for, where one request's
way through stands, the answers the proxy gives itself, where a host is (the runner's mapping
of test names, the system's resolver) and connecting to it, and reading and copying bytes.

Kept free of pytest imports, like the process runner.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import selectors
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

from pytest_agentic_evals.execution.relay import pump
from pytest_agentic_evals.expectations.domains import Decision, ip_text, normalise_host
from pytest_agentic_evals.expectations.proxy_requests import (
    HEAD_END,
    MAX_HEAD_BYTES,
    MAX_TLS_RECORD,
    TLS_RECORD_HEADER,
    ProxyRequest,
    RequestFramer,
    tls_record_end,
)

# Read from the runner's own environment (trials never see AGENTIC_EVALS_* variables of the
# runner). "name=address,...": those names resolve to those addresses, which must be loopback,
# and the proxy connects nowhere else; this is how domain rules are tested on one machine.
LOCAL_HOSTS_VARIABLE = "AGENTIC_EVALS_PROXY_HOSTS"

LINGER_SECONDS = 1.0
MAX_LINGER_BYTES = 1024 * 1024
CHUNK = 64 * 1024


class ProxyRecord:
    """What the trial asked the proxy for; shared by the connection threads."""

    def __init__(self, max_hosts: int) -> None:
        self.lock = threading.Lock()
        self.max_hosts = max_hosts
        self.contacted: dict[str, None] = {}  # insertion-ordered set
        self.violations: dict[str, dict[str, Any]] = {}
        self.requests = 0
        self.refused = 0
        self.malformed = 0
        self.hosts_not_listed = 0
        self.violations_not_listed = 0
        self.errors: list[str] = []
        self.mismatches: list[dict[str, Any]] = []

    def _contact(self, host: str) -> None:
        """``host`` was asked for (under the lock)."""
        if host not in self.contacted:
            if len(self.contacted) < self.max_hosts:
                self.contacted[host] = None
            else:
                self.hosts_not_listed += 1

    def request(self, request: ProxyRequest, decision: Decision) -> None:
        with self.lock:
            self.requests += 1
            self._contact(request.host)
        if not decision.allowed:
            self.refusal(request, decision)

    def refusal(self, request: ProxyRequest, decision: Decision) -> None:
        """A refusal of a request recorded already (refused after its rules let it go)."""
        with self.lock:
            self.refused += 1
            seen = self.violations.get(request.host)
            if seen is not None:
                seen["count"] += 1
            elif len(self.violations) < self.max_hosts:
                self.violations[request.host] = {
                    "host": request.host, "port": request.port, "method": request.method,
                    "rule": decision.rule, "entry": decision.entry, "count": 1,
                }
            else:
                self.violations_not_listed += 1

    def mismatch(self, request: ProxyRequest, named: str, hosts: list[str]) -> None:
        """A request refused because it names ``hosts`` besides its target: each of them was
        asked for too."""
        with self.lock:
            self.requests += 1
            self.refused += 1
            for host in (request.host, *hosts):
                self._contact(host)
            if len(self.mismatches) < self.max_hosts:
                self.mismatches.append({"host": request.host, "port": request.port,
                                        "method": request.method, "host_header": named})

    def bad_request(self, asked: str | None = None) -> None:
        """A request answered 400; ``asked``, the host it named, when it named one."""
        with self.lock:
            self.malformed += 1
            if asked is not None:
                self._contact(asked)

    def error(self, message: str) -> None:
        with self.lock:
            if len(self.errors) < 20:
                self.errors.append(message)


class Exchange:
    """Where one request's way through the proxy stands (see ``DomainProxy._exchange``)."""

    def __init__(self, client: socket.socket, server: socket.socket, framer: RequestFramer,
                 tunnel: ProxyRequest | None) -> None:
        self.client, self.server, self.framer, self.tunnel = client, server, framer, tunnel
        self.selector: selectors.BaseSelector | None = None
        self.sent = tunnel is None
        """Whether the request's head went to the server."""
        self.phase = "request"
        """``request`` while it is forwarded, then ``later`` (what follows is only judged),
        or ``upgrading`` between a WebSocket upgrade and the server's answer to it."""
        self.websocket = False
        self.answer = b""
        self.client_open = self.server_open = True
        self.linger_until: float | None = None
        self.lingered = 0

    def register(self, sock: socket.socket) -> None:
        assert self.selector is not None
        self.selector.register(sock, selectors.EVENT_READ)

    def unregister(self, sock: socket.socket) -> None:
        assert self.selector is not None
        with contextlib.suppress(KeyError):
            self.selector.unregister(sock)

    def client_closed(self) -> None:
        """The client is done sending: the server is told."""
        self.client_open = False
        self.unregister(self.client)
        if self.server_open:
            self.server.shutdown(socket.SHUT_WR)

    def server_closed(self) -> None:
        """The server is done: the client is told, and what it still sends is read (and
        judged) for a while, so that closing does not reset the answer before it is read."""
        self.server_open = False
        self.unregister(self.server)
        self.client.shutdown(socket.SHUT_WR)
        if self.client_open:
            self.linger_until = time.monotonic() + LINGER_SECONDS


def reply(
    sock: socket.socket, status: int, reason: str, text: str, linger: bool = True
) -> None:
    body = f"agentic-evals domain proxy: {text}\n".encode()
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    with contextlib.suppress(OSError):  # a client that went away has nobody left to tell
        sock.sendall(head + body)
        if not linger:
            return
        # Closing with unread bytes (a request body, the rest of an oversized head) resets
        # the connection, and the reset can destroy the answer before the client reads it:
        # say we are done, then read and drop what still comes, within bounds.
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(LINGER_SECONDS)
        deadline, drained = time.monotonic() + LINGER_SECONDS, 0
        while drained < MAX_LINGER_BYTES and time.monotonic() < deadline:
            chunk = sock.recv(CHUNK)
            if not chunk:
                break
            drained += len(chunk)


def own_address(address: str) -> bool:
    """Whether ``address`` is one of this machine's own: the route to it starts from it (a
    UDP socket's connect asks the routes and sends nothing)."""
    try:
        ip = ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return False
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((str(ip), 9))
            source = probe.getsockname()[0]
        except OSError:
            return False
    return bool(ipaddress.ip_address(source.partition("%")[0]) == ip)


def read_head(sock: socket.socket) -> tuple[bytes | None, bytes]:
    """(head, bytes after it), or (None, what was read) when no complete head arrived."""
    buffer = b""
    while True:
        # A head ends at the first empty line, whichever line ending the client uses.
        end = HEAD_END.search(buffer)
        if end is not None:
            return buffer[:end.start()], buffer[end.end():]
        if len(buffer) > MAX_HEAD_BYTES:
            return None, buffer
        try:
            chunk = sock.recv(CHUNK)
        except OSError:  # timed out or reset
            return None, buffer
        if not chunk:
            return None, buffer
        buffer += chunk


def read_record(sock: socket.socket, data: bytes) -> bytes:
    """``data``, the start of a TLS record, with the rest of that record read after it (what
    came before the timeout, or a record too large, is left as it is: not a whole record)."""
    while (end := tls_record_end(data)) is None or len(data) < end:
        if len(data) > MAX_TLS_RECORD + TLS_RECORD_HEADER:
            return data
        try:
            chunk = sock.recv(CHUNK)
        except OSError:
            return data
        if not chunk:
            return data
        data += chunk
    return data


def relay(client: socket.socket, server: socket.socket, pending: bytes) -> None:
    """Copy bytes both ways until both directions are closed (or either side fails, which
    raises OSError and ends the connection)."""
    if pending:
        server.sendall(pending)
    pump(client, server)


# -- where a host is ----------------------------------------------------------------------------


def local_hosts_from(text: str) -> dict[str, str]:
    """Parse ``AGENTIC_EVALS_PROXY_HOSTS`` ("name=address,name=address")."""
    mapping: dict[str, str] = {}
    for item in re.split(r"[,\s]+", text.strip()):
        if not item:
            continue
        name, sep, address = item.partition("=")
        host = normalise_host(name)
        if not sep or host is None:
            raise ValueError(f"{LOCAL_HOSTS_VARIABLE}: {item!r} is not name=address")
        try:
            loopback = ipaddress.ip_address(address).is_loopback
        except ValueError:
            raise ValueError(f"{LOCAL_HOSTS_VARIABLE}: {address!r} is not an IP address") from None
        if not loopback:
            raise ValueError(f"{LOCAL_HOSTS_VARIABLE}: {address!r} is not a loopback address; "
                             "the mapping is for tests on one machine")
        mapping[host] = address
    return mapping


def resolve(host: str, port: int, local_hosts: Mapping[str, str] | None
            ) -> tuple[list[tuple[int, Any]], bool]:
    """Where ``host`` is: (family, socket address) pairs to try in turn, and whether they come
    from ``local_hosts`` (the runner's own mapping, ``AGENTIC_EVALS_PROXY_HOSTS``); with a
    mapping, any other host than a loopback one is out of reach."""
    address, mapped = host, False
    if local_hosts is not None:
        literal = ip_text(host)
        loopback = host == "localhost" or (
            literal is not None and ipaddress.ip_address(literal).is_loopback)
        if host in local_hosts:
            address, mapped = local_hosts[host], True
        elif not loopback:
            raise OSError(f"{host} is not in {LOCAL_HOSTS_VARIABLE}, and with it set the "
                          "proxy connects to loopback addresses only")
    found = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)
    return [(family, sockaddr) for family, _, _, _, sockaddr in found], mapped


def connect_first(targets: list[tuple[int, Any]], timeout: float) -> socket.socket:
    """A connection to the first of ``targets`` that answers (no name is resolved again: the
    addresses judged are the ones connected to)."""
    error: OSError = OSError("no address")
    for family, address in targets:
        server = socket.socket(family, socket.SOCK_STREAM)
        try:
            server.settimeout(timeout)
            server.connect(address)
        except OSError as exc:
            server.close()
            error = exc
            continue
        return server
    raise error
