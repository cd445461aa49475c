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
import os
import re
import selectors
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

from pytest_agentic_evals.expectations.domains import (
    ENFORCED_NOTE,
    LOCAL_RULE,
    NOTE,
    OWN_ADDRESS,
    Decision,
    DomainPolicy,
    ip_text,
    local_kind,
    rules_report,
)
from pytest_agentic_evals.expectations.proxy_io import (
    CHUNK,
    LOCAL_HOSTS_VARIABLE,
    MAX_LINGER_BYTES,
    Exchange,
    ProxyRecord,
    connect_first,
    local_hosts_from,
    own_address,
    read_head,
    read_record,
    relay,
    reply,
    resolve,
)
from pytest_agentic_evals.expectations.proxy_requests import (
    TLS_HANDSHAKE,
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
)

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                   "http_proxy", "https_proxy", "all_proxy")
# Either would let a client skip the proxy for the hosts it names (commonly localhost).
BYPASS_VARIABLES = ("NO_PROXY", "no_proxy")

MAX_RECORDED_HOSTS = 256
MAX_CONNECTIONS = 128
IO_TIMEOUT_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 5.0
_STATUS_LINE_BYTES = 1024
_SWITCHED = re.compile(rb"HTTP/1\.[01] 101[ \r\n]")



# ---------------------------------------------------------------------------------------------
# The trial's side: its environment
# ---------------------------------------------------------------------------------------------


def proxy_environment(env: Mapping[str, str], url: str) -> dict[str, str]:
    """A trial environment that sends proxy-aware clients through ``url``; the runner's proxy
    wins over any proxy or bypass the runner's environment or the case set."""
    announced = {name: value for name, value in env.items() if name not in BYPASS_VARIABLES}
    announced.update({name: url for name in PROXY_VARIABLES})
    return announced


# ---------------------------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------------------------


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
        self._record = ProxyRecord(max_hosts)
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
            reply(client, 503, "Service Unavailable", "too many open connections", linger=False)
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
        head, rest = read_head(client)
        if head is None:
            if rest:  # some bytes, but never a whole head: too large or cut short
                self._record.bad_request()
                reply(client, 400, "Bad Request", "incomplete or oversized request head")
            return
        try:
            request = parse_request_head(head)
        except BadRequest as exc:
            self._record.bad_request(_asked(exc))
            reply(client, 400, "Bad Request", str(exc))
            return
        refusal = self._judge(request)
        if refusal is not None:
            reply(client, 403, "Forbidden", refusal)
            return
        length = 0
        if request.method != "CONNECT":
            try:
                length = body_length(request.version, request.headers)
            except BadRequest as exc:
                self._record.bad_request()
                reply(client, 400, "Bad Request", str(exc))
                return
        try:
            targets, mapped = resolve(request.host, request.port, self.local_hosts)
        except OSError as exc:
            reply(client, 502, "Bad Gateway", f"cannot reach {request.host}:{request.port}: "
                                               f"{exc}")
            return
        refusal = self._refused_addresses(request, targets, mapped)
        if refusal is not None:
            reply(client, 403, "Forbidden", refusal)
            return
        try:
            server = self._connect(targets)
        except OSError as exc:
            reply(client, 502, "Bad Gateway", f"cannot reach {request.host}:{request.port}: "
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

    def _refused_addresses(self, request: ProxyRequest, targets: list[tuple[int, Any]],
                           mapped: bool) -> str | None:
        """The first refusal of an address ``request.host`` resolved to (the runner's own
        mapping of test names excepted), or None."""
        if mapped:
            return None
        for _, address in targets:
            refusal = self._refuse_local(request, address[0])
            if refusal is not None:
                return refusal
        return None

    def _refuse_local(self, request: ProxyRequest, address: str) -> str | None:
        """Refuse (and record) a request that the rules let go to ``address``, when that is on
        the machine running the evaluation and ``allowed_domains`` does not name the host
        itself: the reason, or None when it may go."""
        address = ip_text(address) or address
        kind = local_kind(address) or (OWN_ADDRESS if own_address(address) else None)
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
        if tunnel is not None:
            self._judge_tunnelled(tunnel, request)
        elif self._judge(request) is None and ip_text(request.host) is None:
            # Allowed by name: judged by where the name leads too, as the first request is.
            try:
                targets, mapped = resolve(request.host, request.port, self.local_hosts)
            except OSError:
                return
            self._refused_addresses(request, targets, mapped)

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
                    relay(client, server, b"")
                return
            pending = client.recv(CHUNK)
            if not pending:  # the client left without a word
                return
        if pending[:1] == bytes([TLS_HANDSHAKE]):
            pending = read_record(client, pending)
            if self._judge_client_hello(request, pending):
                relay(client, server, pending)
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
        exchange = Exchange(client, server, framer, tunnel)
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
                    data = client.recv(CHUNK)
                    if not data:
                        exchange.client_closed()
                    elif not self._from_client(exchange, data):
                        return

    def _from_client(self, exchange: Exchange, data: bytes) -> bool:
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
                    reply(exchange.client, 400, "Bad Request", exchange.framer.error or "")
                return False
            if kind == "head":  # the first request of a tunnel
                assert exchange.tunnel is not None
                try:
                    inner = parse_tunnelled_head(chunk)
                except BadRequest as exc:
                    self._record.bad_request(_asked(exc))
                    reply(exchange.client, 400, "Bad Request", str(exc))
                    return False
                refusal = self._judge_tunnelled(exchange.tunnel, inner)
                if refusal is not None:
                    reply(exchange.client, 403, "Forbidden", refusal)
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

    def _from_server(self, exchange: Exchange) -> bool:
        """Pass on what the server sent; False when the connection ends here."""
        data = exchange.server.recv(CHUNK)
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
            relay(exchange.client, exchange.server, exchange.framer.take())
            return False
        # Not switched: what the client sent after its request is judged, never forwarded.
        exchange.phase = "later"
        exchange.framer.hold = exchange.framer.held = False
        if exchange.client_open:
            exchange.register(exchange.client)
        return self._from_client(exchange, b"")

    def _connect(self, targets: list[tuple[int, Any]]) -> socket.socket:
        """A connection to the first of ``targets`` that answers, closed with the proxy."""
        server = connect_first(targets, CONNECT_TIMEOUT_SECONDS)
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
