"""The HTTP/HTTPS proxy that enforces a trial's domain rules
(:mod:`pytest_agentic_evals.expectations.domains`).

A trial gets its own proxy (see :mod:`pytest_agentic_evals.execution.isolation` for when): a
small threaded server bound to 127.0.0.1 on an ephemeral port, or accepting on a socket made
on the loopback of the trial's sandbox (or, where the runner cannot make one there, on a Unix
socket that a relay inside the sandbox bridges to its loopback), announced to the trial
through ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` and their lower-case forms.  It

* forwards absolute-form HTTP requests (``GET http://host:port/path HTTP/1.1``) and tunnels
  ``CONNECT host:port``: TLS byte for byte (never intercepted), plain HTTP/1.x request by
  request;
* forwards one request per connection (the server is asked to close after it); a later
  request on the same connection is judged and recorded like the first, never forwarded;
* records every host the trial asks for, lower-cased, without the port;
* answers 403 to a host that a rule refuses, before resolving or connecting anywhere: one that
  matches ``disallowed_domains``, or, when ``allowed_domains`` is given, one that matches none
  of its entries;
* answers 403 to a host that is, or resolves to, an address of the machine running the
  evaluation (loopback, link-local, unspecified, or one of its own), unless
  ``allowed_domains`` names that very host, and connects only to the addresses it judged;
* answers 403 to a request whose Host header (or, in a tunnel, the Host header or the
  absolute target of a plain HTTP request inside it) names another host than its target, or
  that has more than one Host header;
* answers 400 to anything that is not a proxy request it understands, and never lets a
  client's bytes crash it.

Kept free of pytest imports, like the process runner.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import selectors
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

from pytest_agentic_evals.execution.relay import pump
from pytest_agentic_evals.expectations.domains import (
    ENFORCED_NOTE,
    LOCAL_RULE,
    NOTE,
    OWN_ADDRESS,
    Decision,
    DomainPolicy,
    ip_text,
    local_kind,
    normalise_host,
    rules_report,
)
from pytest_agentic_evals.expectations.proxy_requests import (
    HEAD_END,
    MAX_HEAD_BYTES,
    MAX_TLS_RECORD,
    TLS_HANDSHAKE,
    TLS_RECORD_HEADER,
    BadRequest,
    NonAsciiHost,
    ProxyRequest,
    RequestFramer,
    asked_host,
    body_length,
    client_hello_server_name,
    client_text,
    header_host,
    host_headers,
    parse_request_head,
    parse_tunnelled_head,
    tls_record_end,
)

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                   "http_proxy", "https_proxy", "all_proxy")
# Either would let a client skip the proxy for the hosts it names (commonly localhost).
BYPASS_VARIABLES = ("NO_PROXY", "no_proxy")
# Read from the runner's own environment (trials never see AGENTIC_EVALS_* variables of the
# runner). "name=address,...": those names resolve to those addresses, which must be loopback,
# and the proxy connects nowhere else; this is how domain rules are tested on one machine.
LOCAL_HOSTS_VARIABLE = "AGENTIC_EVALS_PROXY_HOSTS"

MAX_RECORDED_HOSTS = 256
MAX_CONNECTIONS = 128
IO_TIMEOUT_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 5.0
LINGER_SECONDS = 1.0
MAX_LINGER_BYTES = 1024 * 1024
_CHUNK = 64 * 1024
_STATUS_LINE_BYTES = 1024
_SWITCHED = re.compile(rb"HTTP/1\.[01] 101[ \r\n]")



# ---------------------------------------------------------------------------------------------
# The trial's side: its environment, and the local names tests map
# ---------------------------------------------------------------------------------------------


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


def proxy_environment(env: Mapping[str, str], url: str) -> dict[str, str]:
    """A trial environment that sends proxy-aware clients through ``url``; the runner's proxy
    wins over any proxy or bypass the runner's environment or the case set."""
    announced = {name: value for name, value in env.items() if name not in BYPASS_VARIABLES}
    announced.update({name: url for name in PROXY_VARIABLES})
    return announced


# ---------------------------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------------------------


class _Record:
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


class _Exchange:
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


def _reply(
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
            chunk = sock.recv(_CHUNK)
            if not chunk:
                break
            drained += len(chunk)


class DomainProxy:
    """One trial's proxy.  ``start()`` before the trial, ``stop()`` after it (also on errors:
    use it as a context manager), then ``report()``."""

    def __init__(
        self,
        policy: DomainPolicy,
        local_hosts: Mapping[str, str] | None = None,
        *,
        max_hosts: int = MAX_RECORDED_HOSTS,
    ) -> None:
        self.policy = policy
        self.local_hosts = dict(local_hosts) if local_hosts is not None else None
        self._record = _Record(max_hosts)
        self._lock = threading.Lock()
        self._stopping = False
        self._sockets: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._listener: socket.socket | None = None
        self._wake: tuple[int, int] | None = None
        self._acceptor: threading.Thread | None = None
        self.port = 0
        self.unix_path: str | None = None
        self.inside_port: int | None = None
        self.enforced = True
        self.reason: str | None = None

    @classmethod
    def from_environment(
        cls, policy: DomainPolicy, environ: Mapping[str, str] = os.environ
    ) -> DomainProxy:
        text = environ.get(LOCAL_HOSTS_VARIABLE)
        return cls(policy, None if text is None else local_hosts_from(text))

    @property
    def url(self) -> str:
        """Where the trial reaches the proxy: its TCP port, or the port on the sandbox's own
        loopback when it serves a sandbox."""
        if self.inside_port is not None:
            return f"http://127.0.0.1:{self.inside_port}"
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> DomainProxy:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self, unix_path: str | None = None, inside_port: int | None = None) -> None:
        """Listen on 127.0.0.1 (an ephemeral port), or on the Unix socket ``unix_path`` that
        a sandbox's relay bridges to ``inside_port`` on its own loopback."""
        if unix_path is not None:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        else:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind(unix_path if unix_path is not None else ("127.0.0.1", 0))
            listener.listen(64)
        except OSError:
            listener.close()
            raise
        if unix_path is not None:
            self.unix_path = unix_path
            self.serve(listener, inside_port)
        else:
            self.serve(listener)

    def serve(self, listener: socket.socket, inside_port: int | None = None) -> None:
        """Accept on ``listener``, which listens already: the proxy's own, or one made in a
        sandbox's network namespace on ``inside_port`` of its loopback. Closed by ``stop()``."""
        try:
            listener.setblocking(False)
            self._wake = os.pipe()
        except OSError:
            listener.close()
            raise
        self._listener = listener
        if inside_port is not None:
            self.inside_port = inside_port
        else:
            self.port = listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True,
                                          name=f"agentic-evals-proxy-{self.url}")
        self._acceptor.start()

    def stop(self) -> None:
        """Stop accepting, cut every open connection, and join every thread."""
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
        if self._wake is not None:
            os.write(self._wake[1], b"x")  # never drained: the acceptor sees it at once
        if self._acceptor is not None:
            self._acceptor.join(STOP_TIMEOUT_SECONDS)
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked on it
        for thread in threads:
            thread.join(STOP_TIMEOUT_SECONDS)
        if self._listener is not None:
            self._listener.close()
        if self._wake is not None:
            for fd in self._wake:
                os.close(fd)
            self._wake = None
        with self._lock:
            left = [thread.name for thread in self._threads if thread.is_alive()]
        if left:
            self._record.error(f"{len(left)} connection thread(s) did not end in time")

    def report(self) -> dict[str, Any]:
        """The trial's ``domains`` entry of the report."""
        record = self._record
        with record.lock:
            return {
                **rules_report(self.policy),
                "enforced": self.enforced,
                "reason": self.reason,
                "proxy": self.url,
                "local_hosts": self.local_hosts,
                "contacted": list(record.contacted),
                "violations": [dict(v) for v in record.violations.values()],
                "requests": record.requests,
                "refused": record.refused,
                "malformed_requests": record.malformed,
                "hosts_not_listed": record.hosts_not_listed,
                "violations_not_listed": record.violations_not_listed,
                "host_mismatches": [dict(m) for m in record.mismatches],
                "proxy_errors": list(record.errors),
                "note": ENFORCED_NOTE if self.enforced else NOTE,
            }

    # -- connections ---------------------------------------------------------------------

    def _accept_loop(self) -> None:
        assert self._listener is not None and self._wake is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            selector.register(self._wake[0], selectors.EVENT_READ)
            while True:
                for key, _ in selector.select():
                    if key.fileobj == self._wake[0]:
                        return
                    try:
                        client, _ = self._listener.accept()
                    except BlockingIOError:
                        continue
                    except OSError as exc:  # out of descriptors, say: retry after a pause
                        self._record.error(f"accept failed: {exc}")
                        selector.select(0.05)
                        continue
                    self._spawn(client)

    def _spawn(self, client: socket.socket) -> None:
        client.settimeout(IO_TIMEOUT_SECONDS)
        with self._lock:
            # Finished threads stay in the set until here, so that stop() joins every thread
            # that may still be running, also one that is closing its sockets.
            self._threads = {thread for thread in self._threads if thread.is_alive()}
            busy = len(self._threads) >= MAX_CONNECTIONS
            if not self._stopping and not busy:
                thread = threading.Thread(target=self._handle, args=(client,), daemon=True,
                                          name=f"agentic-evals-proxy-{self.url}-conn")
                self._sockets.add(client)
                self._threads.add(thread)
                thread.start()
                return
        if busy:
            _reply(client, 503, "Service Unavailable", "too many open connections", linger=False)
        client.close()

    def _handle(self, client: socket.socket) -> None:
        upstream: list[socket.socket] = []
        try:
            self._serve(client, upstream)
        except OSError:
            pass  # a peer that hung up or timed out ends its own connection, nothing more
        except Exception as exc:  # a bug here must not take the trial's runner down
            self._record.error(f"{type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                for sock in (client, *upstream):
                    self._sockets.discard(sock)
            for sock in (client, *upstream):
                sock.close()

    def _serve(self, client: socket.socket, upstream: list[socket.socket]) -> None:
        head, rest = _read_head(client)
        if head is None:
            if rest:  # some bytes, but never a whole head: too large or cut short
                self._record.bad_request()
                _reply(client, 400, "Bad Request", "incomplete or oversized request head")
            return
        try:
            request = parse_request_head(head)
        except BadRequest as exc:
            self._record.bad_request(_asked(exc))
            _reply(client, 400, "Bad Request", str(exc))
            return
        refusal = self._judge(request)
        if refusal is not None:
            _reply(client, 403, "Forbidden", refusal)
            return
        length = 0
        if request.method != "CONNECT":
            try:
                length = body_length(request.version, request.headers)
            except BadRequest as exc:
                self._record.bad_request()
                _reply(client, 400, "Bad Request", str(exc))
                return
        try:
            targets, mapped = self._resolve(request.host, request.port)
        except OSError as exc:
            _reply(client, 502, "Bad Gateway", f"cannot reach {request.host}:{request.port}: "
                                               f"{exc}")
            return
        if not mapped:
            for _, address in targets:
                refusal = self._refuse_local(request, address[0])
                if refusal is not None:
                    _reply(client, 403, "Forbidden", refusal)
                    return
        try:
            server = self._connect(targets)
        except OSError as exc:
            _reply(client, 502, "Bad Gateway", f"cannot reach {request.host}:{request.port}: "
                                               f"{exc}")
            return
        upstream.append(server)
        if request.method == "CONNECT":
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            self._tunnel(client, server, request, rest)
        else:
            server.sendall(request.forwarded_head())
            self._exchange(client, server, RequestFramer(length), rest, None)

    def _judge(self, request: ProxyRequest) -> str | None:
        """Judge a proxy request by its Host header and the rules, and record it; the reason
        it is refused, or None when it may go."""
        named = host_headers(request.headers)
        if len(named) > 1 or (named and header_host(named[0]) != request.host):
            return self._mismatch(request, ", ".join(named), named)
        decision = self.policy.decide(request.host)
        self._record.request(request, decision)
        if decision.allowed:
            literal = ip_text(request.host)
            return None if literal is None else self._refuse_local(request, literal)
        why = (f"matches disallowed_domains entry {decision.entry}"
               if decision.rule == "disallowed_domains" else "not in allowed_domains")
        return f"{request.host} refused ({why})"

    def _refuse_local(self, request: ProxyRequest, address: str) -> str | None:
        """Refuse (and record) a request that the rules let go to ``address``, when that is on
        the machine running the evaluation and ``allowed_domains`` does not name the host
        itself: the reason, or None when it may go."""
        address = ip_text(address) or address
        kind = local_kind(address) or (OWN_ADDRESS if _own_address(address) else None)
        if kind is None or self.policy.names(request.host):
            return None
        self._record.refusal(request, Decision(False, LOCAL_RULE, address))
        return (f"{request.host} refused: {address} is {kind}; the proxy goes there only for "
                "a host that allowed_domains names itself")

    def _judge_tunnelled(self, tunnel: ProxyRequest, inner: ProxyRequest) -> str | None:
        """Judge a request sent through the tunnel ``tunnel``: every host it names (its
        target's, its Host header's) must be the tunnel's. The reason it is refused, or None."""
        named = host_headers(inner.headers)
        if len(named) > 1 or any(header_host(value) != tunnel.host for value in named):
            return self._mismatch(tunnel, ", ".join(named), [inner.host, *named])
        if inner.host and inner.host != tunnel.host:
            return self._mismatch(tunnel, inner.host, [inner.host])
        return None

    def _judge_later(self, head: bytes, tunnel: ProxyRequest | None) -> None:
        """A request that came after the first one on a connection: judged and recorded like
        it, never forwarded (a connection carries one request)."""
        try:
            request = parse_tunnelled_head(head) if tunnel else parse_request_head(head)
        except BadRequest as exc:
            self._record.bad_request(_asked(exc))
            return
        if tunnel is None:
            self._judge(request)
        else:
            self._judge_tunnelled(tunnel, request)

    def _mismatch(self, request: ProxyRequest, named: str, hosts: list[str]) -> str:
        """A request whose Host header (or target, in a tunnel) names another host than its
        target: refused, as a server behind an allowed address may serve the other host too.
        ``hosts``, Host header values or host names, are recorded as asked for."""
        asked = [host for host in map(asked_host, hosts) if host is not None]
        named = client_text(named)
        self._record.mismatch(request, named, asked)
        return f"request for {request.host} says Host: {named[:100]}; refused"

    def _tunnel(self, client: socket.socket, server: socket.socket, request: ProxyRequest,
                pending: bytes) -> None:
        """Carry a CONNECT tunnel: TLS byte for byte (its Host header is not visible), a
        protocol in which the server speaks first byte for byte, and anything else as plain
        HTTP/1.x, judged request by request."""
        if not pending:
            with selectors.DefaultSelector() as selector:
                selector.register(client, selectors.EVENT_READ)
                selector.register(server, selectors.EVENT_READ)
                ready = [key.fileobj for key, _ in selector.select(IO_TIMEOUT_SECONDS)]
            if client not in ready:
                if server in ready:
                    _relay(client, server, b"")
                return
            pending = client.recv(_CHUNK)
            if not pending:  # the client left without a word
                return
        if pending[:1] == bytes([TLS_HANDSHAKE]):
            pending = _read_record(client, pending)
            if self._judge_client_hello(request, pending):
                _relay(client, server, pending)
            return
        self._exchange(client, server, RequestFramer(), pending, request)

    def _judge_client_hello(self, tunnel: ProxyRequest, record: bytes) -> bool:
        """Whether a TLS tunnel may go: its ClientHello must ask for the tunnel's host (or for
        none), as a server behind an allowed address may serve the other name too. A refused
        tunnel is recorded and closed (a TLS client gets no HTTP answer)."""
        try:
            name = client_hello_server_name(record)
        except BadRequest:
            self._record.bad_request(tunnel.host)
            return False
        if name is None or asked_host(name) == tunnel.host:
            return True
        self._mismatch(tunnel, f"TLS server name {name}", [name])
        return False

    def _exchange(self, client: socket.socket, server: socket.socket, framer: RequestFramer,
                  pending: bytes, tunnel: ProxyRequest | None) -> None:
        """One request from ``client`` to ``server``, and the server's answer back.

        For a forwarded request, ``framer`` starts in its body (its head went already); in a
        tunnel, at the head of the first request, which is judged before it goes. Whatever
        comes after that request is never forwarded: later requests are judged and recorded
        (a refused one fails the trial like any other), and the connection ends when the
        server has answered. A WebSocket upgrade that the server accepts carries on byte for
        byte."""
        exchange = _Exchange(client, server, framer, tunnel)
        with selectors.DefaultSelector() as selector:
            exchange.selector = selector
            selector.register(client, selectors.EVENT_READ)
            selector.register(server, selectors.EVENT_READ)
            if not self._from_client(exchange, pending):
                return
            while exchange.client_open or exchange.server_open:
                timeout = None
                if exchange.linger_until is not None:
                    timeout = exchange.linger_until - time.monotonic()
                    if timeout <= 0:
                        return
                for key, _ in selector.select(timeout):
                    if key.fileobj is server:
                        if not self._from_server(exchange):
                            return
                        continue
                    data = client.recv(_CHUNK)
                    if not data:
                        exchange.client_closed()
                    elif not self._from_client(exchange, data):
                        return

    def _from_client(self, exchange: _Exchange, data: bytes) -> bool:
        """Frame what the client sent; False when the connection ends here."""
        if exchange.linger_until is not None:
            exchange.lingered += len(data)
            if exchange.lingered > MAX_LINGER_BYTES:
                return False
        for kind, chunk in exchange.framer.feed(data):
            if exchange.phase == "later":
                if kind == "head":
                    self._judge_later(chunk, exchange.tunnel)
                elif kind == "bad":
                    self._record.bad_request()
                continue
            if kind == "bad":
                self._record.bad_request()
                if not exchange.sent:
                    _reply(exchange.client, 400, "Bad Request", exchange.framer.error or "")
                return False
            if kind == "head":  # the first request of a tunnel
                assert exchange.tunnel is not None
                try:
                    inner = parse_tunnelled_head(chunk)
                except BadRequest as exc:
                    self._record.bad_request(_asked(exc))
                    _reply(exchange.client, 400, "Bad Request", str(exc))
                    return False
                refusal = self._judge_tunnelled(exchange.tunnel, inner)
                if refusal is not None:
                    _reply(exchange.client, 403, "Forbidden", refusal)
                    return False
                exchange.websocket = exchange.framer.hold = inner.upgrades_to_websocket()
                exchange.server.sendall(inner.tunnelled_head())
                exchange.sent = True
            elif kind == "body":
                exchange.server.sendall(chunk)
            elif exchange.websocket:  # its end: what follows waits for the server's answer
                exchange.phase = "upgrading"
                exchange.unregister(exchange.client)
            else:
                exchange.phase = "later"
        return True

    def _from_server(self, exchange: _Exchange) -> bool:
        """Pass on what the server sent; False when the connection ends here."""
        data = exchange.server.recv(_CHUNK)
        if data:
            exchange.client.sendall(data)
        else:
            exchange.server_closed()
        if exchange.phase != "upgrading":
            return True
        exchange.answer += data
        if data and b"\n" not in exchange.answer and len(exchange.answer) < _STATUS_LINE_BYTES:
            return True
        if data and _SWITCHED.match(exchange.answer):  # a WebSocket from now on
            _relay(exchange.client, exchange.server, exchange.framer.take())
            return False
        # Not switched: what the client sent after its request is judged, never forwarded.
        exchange.phase = "later"
        exchange.framer.hold = exchange.framer.held = False
        if exchange.client_open:
            exchange.register(exchange.client)
        return self._from_client(exchange, b"")

    def _resolve(self, host: str, port: int) -> tuple[list[tuple[int, Any]], bool]:
        """Where ``host`` is: (family, socket address) pairs to try in turn, and whether they
        come from ``AGENTIC_EVALS_PROXY_HOSTS`` (the runner's own mapping)."""
        address, mapped = host, False
        if self.local_hosts is not None:
            literal = ip_text(host)
            loopback = host == "localhost" or (
                literal is not None and ipaddress.ip_address(literal).is_loopback)
            if host in self.local_hosts:
                address, mapped = self.local_hosts[host], True
            elif not loopback:
                raise OSError(f"{host} is not in {LOCAL_HOSTS_VARIABLE}, and with it set the "
                              "proxy connects to loopback addresses only")
        found = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)
        return [(family, sockaddr) for family, _, _, _, sockaddr in found], mapped

    def _connect(self, targets: list[tuple[int, Any]]) -> socket.socket:
        """A connection to the first of ``targets`` that answers (no name is resolved again:
        the addresses judged are the ones connected to)."""
        error: OSError = OSError("no address")
        for family, address in targets:
            server = socket.socket(family, socket.SOCK_STREAM)
            try:
                server.settimeout(CONNECT_TIMEOUT_SECONDS)
                server.connect(address)
            except OSError as exc:
                server.close()
                error = exc
                continue
            break
        else:
            raise error
        server.settimeout(IO_TIMEOUT_SECONDS)
        with self._lock:
            if self._stopping:
                server.close()
                raise OSError("the proxy is stopping")
            self._sockets.add(server)
        return server


def _asked(error: BadRequest) -> str | None:
    """The host a malformed request asked for, when it named one the proxy could not take."""
    return error.host if isinstance(error, NonAsciiHost) else None


def _own_address(address: str) -> bool:
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


def _read_head(sock: socket.socket) -> tuple[bytes | None, bytes]:
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
            chunk = sock.recv(_CHUNK)
        except OSError:  # timed out or reset
            return None, buffer
        if not chunk:
            return None, buffer
        buffer += chunk


def _read_record(sock: socket.socket, data: bytes) -> bytes:
    """``data``, the start of a TLS record, with the rest of that record read after it (what
    came before the timeout, or a record too large, is left as it is: not a whole record)."""
    while (end := tls_record_end(data)) is None or len(data) < end:
        if len(data) > MAX_TLS_RECORD + TLS_RECORD_HEADER:
            return data
        try:
            chunk = sock.recv(_CHUNK)
        except OSError:
            return data
        if not chunk:
            return data
        data += chunk
    return data


def _relay(client: socket.socket, server: socket.socket, pending: bytes) -> None:
    """Copy bytes both ways until both directions are closed (or either side fails, which
    raises OSError and ends the connection)."""
    if pending:
        server.sendall(pending)
    pump(client, server)
