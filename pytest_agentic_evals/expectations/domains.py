"""Network domain rules for a trial (``allowed_domains`` / ``disallowed_domains``).

A case with either rule gets its own HTTP/HTTPS proxy for each trial: a small threaded server
bound to 127.0.0.1 on an ephemeral port, announced to the trial through ``HTTP_PROXY``,
``HTTPS_PROXY``, ``ALL_PROXY`` and their lower-case forms.  It

* forwards absolute-form HTTP requests (``GET http://host:port/path HTTP/1.1``) and tunnels
  ``CONNECT host:port`` byte for byte (TLS is never intercepted);
* records every host the trial asks for, lower-cased, without the port;
* answers 403 to a host that a rule refuses, before resolving or connecting anywhere: one that
  matches ``disallowed_domains``, or, when ``allowed_domains`` is given, one that matches none
  of its entries;
* answers 400 to anything that is not a proxy request it understands, and never lets a
  client's bytes crash it.

Matching: an entry ``example.com`` matches ``example.com`` and every subdomain
(``api.example.com``); ``*.example.com`` matches subdomains only; an IP address matches only
itself.  The port never matters.  ``disallowed_domains`` wins over ``allowed_domains``;
without ``allowed_domains`` every host that is not disallowed is allowed.

The proxy sees only what is sent through it.  A client that ignores the proxy variables
connects directly, and such a connection is neither recorded nor refused: ``enforced`` in the
report means "the trial had the proxy", not "all its traffic went through it".

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
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pytest_agentic_evals.expectations.observation import Observation

RULE_KEYS = ("allowed_domains", "disallowed_domains")
FAILURE_PREFIXES = tuple(f"{key}:" for key in RULE_KEYS)
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                   "http_proxy", "https_proxy", "all_proxy")
# Either would let a client skip the proxy for the hosts it names (commonly localhost).
BYPASS_VARIABLES = ("NO_PROXY", "no_proxy")
# Read from the runner's own environment (trials never see AGENTIC_EVALS_* variables of the
# runner). "name=address,...": those names resolve to those addresses, which must be loopback,
# and the proxy connects nowhere else; this is how domain rules are tested on one machine.
LOCAL_HOSTS_VARIABLE = "AGENTIC_EVALS_PROXY_HOSTS"

MAX_RECORDED_HOSTS = 256
MAX_HEAD_BYTES = 64 * 1024
MAX_CONNECTIONS = 128
IO_TIMEOUT_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 5.0
LINGER_SECONDS = 1.0
MAX_LINGER_BYTES = 1024 * 1024
_CHUNK = 64 * 1024

NOTE = ("only requests sent through the proxy are seen: a client that ignores HTTP_PROXY, "
        "HTTPS_PROXY and ALL_PROXY connects directly, neither recorded nor refused")

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
# The same pattern is in the fixture schema (a test keeps them equal): a host name, optionally
# "*."-prefixed, an IPv4 address (which is host-name shaped) or an IPv6 address (checked again
# with ipaddress at load).
ENTRY_PATTERN = rf"^(?:(?:\*\.)?{_LABEL}(?:\.{_LABEL})*|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$"
_REQUESTED_HOST = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_VERSION = re.compile(r"HTTP/\d\.\d")
_HOP_BY_HOP = frozenset({
    "connection", "proxy-connection", "keep-alive", "proxy-authenticate",
    "proxy-authorization", "te", "trailer", "upgrade",
})


# ---------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------


def _ip(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def normalise_host(text: str) -> str | None:
    """A requested host as rules see it (lower case, no brackets, no trailing dot); None when
    it is not a host name or an IP address."""
    host = text.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    host = host.removesuffix(".")
    if not host or len(host) > 253:
        return None
    address = _ip(host)
    if address is not None:
        return address
    return host if _REQUESTED_HOST.fullmatch(host) else None


def normalise_entry(entry: str) -> str:
    entry = entry.lower()
    return _ip(entry) or entry


def matches(host: str, entry: str) -> bool:
    """Whether a normalised requested host falls under a normalised rule entry."""
    if _ip(host) is not None or _ip(entry) is not None:
        return host == entry
    if entry.startswith("*."):
        return host.endswith(entry[1:])
    return host == entry or host.endswith("." + entry)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    rule: str | None = None
    """The rule that refused the host (``disallowed_domains`` or ``allowed_domains``)."""
    entry: str | None = None
    """The entry that matched: the disallowed one that refused, or the allowed one that let in."""


@dataclass(frozen=True)
class DomainPolicy:
    allowed: tuple[str, ...] | None
    """None: every host that is not disallowed is allowed; ``()``: no host is."""
    disallowed: tuple[str, ...] = ()

    @classmethod
    def from_expected(cls, expected: Mapping[str, Any]) -> DomainPolicy | None:
        """The rules of a case (the loader moves case-level ones into ``expected``)."""
        if not any(key in expected for key in RULE_KEYS):
            return None
        allowed = expected.get("allowed_domains")
        return cls(
            allowed=None if allowed is None else tuple(normalise_entry(e) for e in allowed),
            disallowed=tuple(normalise_entry(e) for e in expected.get("disallowed_domains", ())),
        )

    def decide(self, host: str) -> Decision:
        for entry in self.disallowed:
            if matches(host, entry):
                return Decision(False, "disallowed_domains", entry)
        if self.allowed is None:
            return Decision(True)
        for entry in self.allowed:
            if matches(host, entry):
                return Decision(True, None, entry)
        return Decision(False, "allowed_domains", None)


def merge_case_rules(
    case: Mapping[str, Any], expected: Mapping[str, Any]
) -> tuple[Mapping[str, Any], list[tuple[str, str]]]:
    """``expected`` with the case-level rules moved into it, and the load-time problems as
    (pointer relative to the case, message).  One place for the rules means every reader of
    ``expected`` (the checks, can_fail, coverage) sees them."""
    problems: list[tuple[str, str]] = []
    merged = dict(expected)
    for key in RULE_KEYS:
        if key not in case:
            continue
        if key in expected:
            problems.append((f"/{key}", f"{key} is given both on the case and in expected; "
                                        "keep one"))
        else:
            merged[key] = case[key]
    for key in RULE_KEYS:
        where = f"/{key}" if key in case else f"/expected/{key}"
        for position, entry in enumerate(merged.get(key, ())):
            if ":" in entry and _ip(entry) is None:
                problems.append((f"{where}/{position}",
                                 f"{entry!r} is not a valid IPv6 address"))
    allowed = {normalise_entry(e) for e in merged.get("allowed_domains", ())}
    for position, entry in enumerate(merged.get("disallowed_domains", ())):
        if normalise_entry(entry) in allowed:
            where = "/disallowed_domains" if "disallowed_domains" in case \
                else "/expected/disallowed_domains"
            problems.append((f"{where}/{position}", f"{entry!r} is both allowed and disallowed"))
    return merged, problems


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
# The expectation kinds
# ---------------------------------------------------------------------------------------------


def check_allowed(value: Any, observation: Observation) -> list[str]:
    return _refusals("allowed_domains", observation)


def check_disallowed(value: Any, observation: Observation) -> list[str]:
    return _refusals("disallowed_domains", observation)


def _refusals(rule: str, observation: Observation) -> list[str]:
    record = observation.domains
    if record is None:
        return [f"{rule}: not checked: no domain proxy ran for this trial"]
    if not record.get("enforced"):
        return [f"{rule}: not checked: {record.get('reason') or 'the proxy did not run'}"]
    failures = []
    for violation in record.get("violations", ()):
        if violation["rule"] != rule:
            continue
        if rule == "disallowed_domains":
            failures.append(f"disallowed_domains: contacted disallowed domain "
                            f"{violation['host']} (matches {violation['entry']!r}); "
                            "the proxy refused it")
        else:
            failures.append(f"allowed_domains: contacted {violation['host']}, which is not in "
                            "allowed_domains; the proxy refused it")
    # Refusals beyond the recording bound are counted, not listed; one rule reports them.
    omitted = record.get("violations_not_listed", 0)
    reporter = "disallowed_domains" if record.get("disallowed") else "allowed_domains"
    if omitted and rule == reporter:
        failures.append(f"{rule}: {omitted} more refused host(s), not listed")
    return failures


# ---------------------------------------------------------------------------------------------
# The proxy
# ---------------------------------------------------------------------------------------------


class BadRequest(Exception):
    """A request the proxy cannot serve; answered 400 and counted as malformed."""


@dataclass(frozen=True)
class ProxyRequest:
    method: str
    host: str
    port: int
    version: str
    path: str
    """For a forwarded request, the origin-form target sent upstream; empty for CONNECT."""
    headers: tuple[tuple[str, str], ...]

    def forwarded_head(self) -> bytes:
        """The request as the origin server gets it: origin-form target, hop-by-hop headers
        dropped, one request per connection (so the relay can end at the server's close)."""
        lines = [f"{self.method} {self.path} {self.version}"]
        names = set()
        for name, value in self.headers:
            if name.lower() in _HOP_BY_HOP:
                continue
            names.add(name.lower())
            lines.append(f"{name}: {value}")
        if "host" not in names:
            host = f"[{self.host}]" if ":" in self.host else self.host
            lines.append(f"Host: {host}" if self.port == 80 else f"Host: {host}:{self.port}")
        lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def parse_request_head(head: bytes) -> ProxyRequest:
    """Parse a proxy request's head (request line and headers); raise BadRequest."""
    text = head.decode("latin-1")  # every byte decodes: garbage is judged below, never a crash
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise BadRequest("empty request")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not _VERSION.fullmatch(parts[2]):
        raise BadRequest(f"malformed request line {lines[0][:100]!r}")
    method, target, version = parts
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not _TOKEN.fullmatch(name):
            raise BadRequest(f"malformed header line {line[:100]!r}")
        headers.append((name, value.strip()))
    if method.upper() == "CONNECT":
        host, port = _authority(target)
        return ProxyRequest("CONNECT", host, port, version, "", tuple(headers))
    if target.startswith("/"):
        raise BadRequest("not a proxy request: the target must be an absolute http:// URL")
    try:
        url = urlsplit(target)
        port = url.port or 80
    except ValueError as exc:
        raise BadRequest(f"malformed URL {target[:100]!r}: {exc}") from None
    if url.scheme.lower() != "http":
        raise BadRequest(f"only http:// URLs are forwarded (use CONNECT for others): "
                         f"{target[:100]!r}")
    found = normalise_host(url.hostname or "")
    if found is None:
        raise BadRequest(f"no valid host in {target[:100]!r}")
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    return ProxyRequest(method, found, port, version, path, tuple(headers))


def _authority(target: str) -> tuple[str, int]:
    if target.startswith("["):
        host_text, _, rest = target[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        host_text, _, port_text = target.rpartition(":")
    host = normalise_host(host_text)
    if host is None or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise BadRequest(f"CONNECT needs host:port, got {target[:100]!r}")
    return host, int(port_text)


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

    def request(self, request: ProxyRequest, decision: Decision) -> None:
        with self.lock:
            self.requests += 1
            if request.host not in self.contacted:
                if len(self.contacted) < self.max_hosts:
                    self.contacted[request.host] = None
                else:
                    self.hosts_not_listed += 1
            if decision.allowed:
                return
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

    def bad_request(self) -> None:
        with self.lock:
            self.malformed += 1

    def error(self, message: str) -> None:
        with self.lock:
            if len(self.errors) < 20:
                self.errors.append(message)


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

    @classmethod
    def from_environment(
        cls, policy: DomainPolicy, environ: Mapping[str, str] = os.environ
    ) -> DomainProxy:
        text = environ.get(LOCAL_HOSTS_VARIABLE)
        return cls(policy, None if text is None else local_hosts_from(text))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> DomainProxy:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind(("127.0.0.1", 0))
            listener.listen(64)
            listener.setblocking(False)
            self._wake = os.pipe()
        except OSError:
            listener.close()
            raise
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True,
                                          name=f"agentic-evals-proxy-{self.port}")
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
                **_rules(self.policy),
                "enforced": True,
                "reason": None,
                "proxy": self.url,
                "local_hosts": self.local_hosts,
                "contacted": list(record.contacted),
                "violations": [dict(v) for v in record.violations.values()],
                "requests": record.requests,
                "refused": record.refused,
                "malformed_requests": record.malformed,
                "hosts_not_listed": record.hosts_not_listed,
                "violations_not_listed": record.violations_not_listed,
                "proxy_errors": list(record.errors),
                "note": NOTE,
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
                                          name=f"agentic-evals-proxy-{self.port}-conn")
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
            self._record.bad_request()
            _reply(client, 400, "Bad Request", str(exc))
            return
        decision = self.policy.decide(request.host)
        self._record.request(request, decision)
        if not decision.allowed:
            why = (f"matches disallowed_domains entry {decision.entry}"
                   if decision.rule == "disallowed_domains" else "not in allowed_domains")
            _reply(client, 403, "Forbidden", f"{request.host} refused ({why})")
            return
        try:
            server = self._connect(request.host, request.port)
        except OSError as exc:
            _reply(client, 502, "Bad Gateway", f"cannot reach {request.host}:{request.port}: "
                                               f"{exc}")
            return
        upstream.append(server)
        if request.method == "CONNECT":
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            _relay(client, server, rest)
        else:
            server.sendall(request.forwarded_head())
            _relay(client, server, rest)

    def _connect(self, host: str, port: int) -> socket.socket:
        address = host
        if self.local_hosts is not None:
            literal = _ip(host)
            loopback = host == "localhost" or (
                literal is not None and ipaddress.ip_address(literal).is_loopback)
            if host in self.local_hosts:
                address = self.local_hosts[host]
            elif not loopback:
                raise OSError(f"{host} is not in {LOCAL_HOSTS_VARIABLE}, and with it set the "
                              "proxy connects to loopback addresses only")
        server = socket.create_connection((address, port), timeout=CONNECT_TIMEOUT_SECONDS)
        server.settimeout(IO_TIMEOUT_SECONDS)
        with self._lock:
            if self._stopping:
                server.close()
                raise OSError("the proxy is stopping")
            self._sockets.add(server)
        return server


def _rules(policy: DomainPolicy) -> dict[str, Any]:
    return {"allowed": None if policy.allowed is None else list(policy.allowed),
            "disallowed": list(policy.disallowed)}


def unenforced_report(policy: DomainPolicy, reason: str) -> dict[str, Any]:
    """The ``domains`` entry of a trial whose proxy could not run."""
    return {
        **_rules(policy), "enforced": False, "reason": reason, "proxy": None,
        "local_hosts": None, "contacted": [], "violations": [], "requests": 0, "refused": 0,
        "malformed_requests": 0, "hosts_not_listed": 0, "violations_not_listed": 0,
        "proxy_errors": [], "note": NOTE,
    }


def _read_head(sock: socket.socket) -> tuple[bytes | None, bytes]:
    """(head, bytes after it), or (None, what was read) when no complete head arrived."""
    buffer = b""
    while True:
        # A head ends at the first empty line, whichever line ending the client uses.
        ends = [(end, len(separator)) for separator in (b"\r\n\r\n", b"\n\n")
                if (end := buffer.find(separator)) >= 0]
        if ends:
            end, size = min(ends)
            return buffer[:end], buffer[end + size:]
        if len(buffer) > MAX_HEAD_BYTES:
            return None, buffer
        try:
            chunk = sock.recv(_CHUNK)
        except OSError:  # timed out or reset
            return None, buffer
        if not chunk:
            return None, buffer
        buffer += chunk


def _relay(client: socket.socket, server: socket.socket, pending: bytes) -> None:
    """Copy bytes both ways until both directions are closed (or either side fails)."""
    if pending:
        server.sendall(pending)
    peers = {client: server, server: client}
    with selectors.DefaultSelector() as selector:
        for sock in peers:
            selector.register(sock, selectors.EVENT_READ)
        open_directions = 2
        while open_directions:
            for key, _ in selector.select():
                source = key.fileobj
                assert isinstance(source, socket.socket)
                data = source.recv(_CHUNK)
                if data:
                    peers[source].sendall(data)
                    continue
                selector.unregister(source)
                open_directions -= 1
                try:
                    peers[source].shutdown(socket.SHUT_WR)  # pass the half-close on
                except OSError:
                    return
