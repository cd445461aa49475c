"""What the domain proxy reads from a client: request heads, the host they name, and where
each request of a connection ends.

Parsed strictly and never trusted: every byte decodes (as Latin-1), and anything that is not a
request the proxy understands raises ``BadRequest``, which the proxy answers with 400. Where a
server could read a request differently from the proxy (a bare CR, a second Host header, a
body framed two ways), the request is refused rather than guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from pytest_agentic_evals.expectations.domains import normalise_host

# An HTTP token: a method, or a header's name.
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# Where a head ends: the first empty line, whichever line ending (a server may take a bare LF).
HEAD_END = re.compile(rb"\r?\n\r?\n")
MAX_HEAD_BYTES = 64 * 1024
CHUNKED = -1
"""The body length of a request whose body is in chunked coding."""
_VERSION = re.compile(r"HTTP/\d\.\d")
# Characters no request line or header may hold: controls (a bare CR among them, which some
# servers take for a line end) other than the tab.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_HOP_BY_HOP = frozenset({
    "connection", "proxy-connection", "keep-alive", "proxy-authenticate",
    "proxy-authorization", "te", "trailer", "upgrade",
})
# Dropped from a request sent through a tunnel: the proxy says itself how the connection goes.
_TUNNEL_CONNECTION = frozenset({"connection", "proxy-connection", "keep-alive"})
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,8})(?:;[\t\x20-\x7e]*)?\r\n")
_TRAILER = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+:[\t\x20-\x7e\x80-\xff]*\r\n")
_BLANK_LINES = re.compile(rb"(?:\r?\n)+")
_MAX_LINE = 4096


class BadRequest(Exception):
    """A request the proxy cannot serve; answered 400 and counted as malformed."""


class NonAsciiHost(BadRequest):
    """A host name with bytes outside ASCII. Read as Latin-1, it would be judged and resolved
    under another name than the client meant: refused, and ``host`` says what the client
    asked for (clients send the IDNA form of such a name themselves)."""

    def __init__(self, text: str) -> None:
        self.name = client_text(text)
        self.host = asked_host(text) or self.name
        idna = normalise_host(self.name)
        advice = f"send its IDNA form, {idna}" if idna is not None else "not a host name"
        super().__init__(f"host name {self.name!r} is not ASCII; {advice}")


@dataclass(frozen=True)
class ProxyRequest:
    method: str
    host: str
    """The host the request's target names; empty for a request through a tunnel whose
    target is a path (its host is the tunnel's)."""
    port: int
    version: str
    path: str
    """For a forwarded request, the origin-form target sent upstream; empty for CONNECT; the
    target as sent for a request through a tunnel."""
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

    def upgrades_to_websocket(self) -> bool:
        """Whether this request asks to switch its connection to a WebSocket."""
        asked = [value.strip().lower() for name, value in self.headers
                 if name.lower() == "upgrade"]
        return self.method == "GET" and asked == ["websocket"]

    def tunnelled_head(self) -> bytes:
        """The request as sent through a tunnel: the connection closes after its answer (or,
        for a WebSocket, once it has switched protocols), and no other upgrade is asked for."""
        websocket = self.upgrades_to_websocket()
        lines = [f"{self.method} {self.path} {self.version}"]
        for name, value in self.headers:
            lowered = name.lower()
            if lowered in _TUNNEL_CONNECTION or (
                    not websocket and lowered in ("upgrade", "http2-settings")):
                continue
            lines.append(f"{name}: {value}")
        lines.append("Connection: Upgrade" if websocket else "Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def split_head(head: bytes) -> tuple[str, str, str, tuple[tuple[str, str], ...]]:
    """A request head's method, target, version and headers; raise BadRequest."""
    text = head.decode("latin-1")  # every byte decodes: garbage is judged below, never a crash
    lines = re.split(r"\r?\n", text)
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise BadRequest("empty request")
    parts = _request_line(lines[0])
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not TOKEN.fullmatch(name) or _CONTROL.search(value):
            raise BadRequest(f"malformed header line {line[:100]!r}")
        headers.append((name, value.strip(" \t")))
    return parts[0], parts[1], parts[2], tuple(headers)


def _request_line(line: str) -> list[str]:
    parts = line.split(" ")
    if len(parts) != 3 or not TOKEN.fullmatch(parts[0]) or not _VERSION.fullmatch(parts[2]) \
            or _CONTROL.search(parts[1]):
        raise BadRequest(f"malformed request line {line[:100]!r}")
    return parts


def parse_request_head(head: bytes) -> ProxyRequest:
    """Parse a proxy request's head (request line and headers); raise BadRequest."""
    method, target, version, headers = split_head(head)
    if method.upper() == "CONNECT":
        host, port = _authority(target)
        return ProxyRequest("CONNECT", host, port, version, "", headers)
    if target.startswith("/"):
        raise BadRequest("not a proxy request: the target must be an absolute http:// URL")
    url, port = _split_url(target, 80)
    if url.scheme.lower() != "http":
        raise BadRequest(f"only http:// URLs are forwarded (use CONNECT for others): "
                         f"{target[:100]!r}")
    found = normalise_host(url.hostname or "")
    if found is None:
        raise BadRequest(f"no valid host in {target[:100]!r}")
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    return ProxyRequest(method, found, port, version, path, headers)


def _split_url(target: str, default_port: int) -> tuple[SplitResult, int]:
    """An absolute URL target and its port; BadRequest for a malformed one or a host that is
    not ASCII."""
    try:
        url = urlsplit(target)
        port = url.port or default_port
    except ValueError as exc:
        raise BadRequest(f"malformed URL {target[:100]!r}: {exc}") from None
    _ascii_host(url.netloc)
    return url, port


def parse_tunnelled_head(head: bytes) -> ProxyRequest:
    """Parse the head of a plain HTTP/1.x request sent through a tunnel; raise BadRequest.

    Its ``host`` is the one its target names when the target is an absolute URL, else empty.
    """
    method, target, version, headers = split_head(head)
    if version not in ("HTTP/1.0", "HTTP/1.1"):
        raise BadRequest(f"only HTTP/1.0 and HTTP/1.1 requests go through a tunnel that is "
                         f"not TLS, got {version!r}")
    if method.upper() == "CONNECT":
        raise BadRequest("a CONNECT inside a tunnel is not forwarded")
    if target.startswith("/") or target == "*":
        return ProxyRequest(method, "", 0, version, target, headers)
    url, port = _split_url(target, 0)
    found = normalise_host(url.hostname or "") if url.scheme and url.netloc else None
    if found is None:
        raise BadRequest(f"no valid host in {target[:100]!r}")
    return ProxyRequest(method, found, port, version, target, headers)


def _ascii_host(netloc: str) -> None:
    """Raise NonAsciiHost when the host of a URL's authority is not ASCII."""
    host = netloc.rpartition("@")[2]
    if not host.isascii():
        raise NonAsciiHost(host)


def _authority(target: str) -> tuple[str, int]:
    if target.startswith("["):
        host_text, _, rest = target[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        host_text, _, port_text = target.rpartition(":")
    if not host_text.isascii():
        raise NonAsciiHost(host_text)
    host = normalise_host(host_text)
    if host is None or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise BadRequest(f"CONNECT needs host:port, got {target[:100]!r}")
    return host, int(port_text)


def host_headers(headers: tuple[tuple[str, str], ...]) -> list[str]:
    """Every Host header's value, in order."""
    return [value for name, value in headers if name.lower() == "host"]


def header_host(value: str) -> str | None:
    """The host a Host header names (without its port), canonical; None when it names none
    (a value that is not ASCII names none: see NonAsciiHost)."""
    return _named_host(value) if value.isascii() else None


def client_text(text: str) -> str:
    """Text of a head (read as Latin-1) as the client's bytes spell it in UTF-8, escaped where
    they are not UTF-8: for a person to read, never to judge."""
    return text.encode("latin-1").decode("utf-8", errors="backslashreplace")


def asked_host(text: str) -> str | None:
    """The host that ``text`` (a target's host, or a Host header's value, with or without a
    port) names, as the proxy records it: canonical. A name that is not ASCII, which is never
    forwarded, is read from the client's bytes as UTF-8 and recorded in IDNA form when that
    makes a host name, else as it came (lower case, escaped). None when an ASCII text names
    no host."""
    if text.isascii():
        return header_host(text)
    name = client_text(text)
    return _named_host(name) or name.strip().lower()


def _named_host(value: str) -> str | None:
    value = value.strip()
    if value.startswith("["):
        return normalise_host(value.partition("]")[0] + "]")
    if value.count(":") == 1:
        value = value.partition(":")[0]
    return normalise_host(value)


def body_length(version: str, headers: tuple[tuple[str, str], ...]) -> int:
    """How many bytes of body follow a request's head, or CHUNKED; raise BadRequest when a
    server could read it otherwise (both framings, several lengths, a coding that does not
    end in chunked, chunked coding in HTTP/1.0)."""
    codings = [coding.strip().lower() for name, value in headers
               if name.lower() == "transfer-encoding" for coding in value.split(",")]
    lengths = [value for name, value in headers if name.lower() == "content-length"]
    if codings:
        if lengths:
            raise BadRequest("a request framed by both Transfer-Encoding and Content-Length")
        if codings[-1] != "chunked" or codings.count("chunked") != 1 or version == "HTTP/1.0":
            raise BadRequest(f"unsupported Transfer-Encoding {', '.join(codings)[:100]!r}")
        return CHUNKED
    if not lengths:
        return 0
    if len(lengths) > 1 or not re.fullmatch(r"[0-9]{1,18}", lengths[0]):
        raise BadRequest(f"malformed Content-Length {', '.join(lengths)[:100]!r}")
    return int(lengths[0])


class RequestFramer:
    """Where each request of a client's byte stream begins and ends: its head, then its body
    by Content-Length or chunked coding, then the next one.

    ``feed`` yields ``("head", bytes)``, ``("body", bytes)``, ``("end", b"")`` for each
    request, and ``("bad", b"")`` once, when the stream stops being requests it can frame
    (``error`` says why; nothing more is read then). Empty lines before a head are dropped.
    With ``hold`` set, it stops after the next ``end`` and keeps the bytes that follow, for
    ``take``.
    """

    def __init__(self, body: int | None = None) -> None:
        """Start at a head, or (``body``: a length or CHUNKED) in the body of a request whose
        head was read already."""
        self._buffer = b""
        self._state = "head"
        self._remaining = 0
        self.hold = False
        self.held = False
        self.error: str | None = None
        if body is not None:
            self._start_body(body)

    def _start_body(self, length: int) -> None:
        if length == CHUNKED:
            self._state = "size"
        elif length:
            self._state, self._remaining = "length", length
        else:
            self._state = "end"

    def take(self) -> bytes:
        """The bytes read and not framed yet."""
        data, self._buffer = self._buffer, b""
        return data

    def feed(self, data: bytes) -> Iterator[tuple[str, bytes]]:
        self._buffer += data
        while self.error is None and not self.held:
            try:
                event = self._step()
            except BadRequest as exc:
                self.error = str(exc)
                self._buffer = b""
                yield "bad", b""
                return
            if event is None:
                return
            yield event
            if event[0] == "end" and self.hold:
                self.held = True

    def _step(self) -> tuple[str, bytes] | None:
        """The next event, or None until more bytes come."""
        state, buffer = self._state, self._buffer
        if state == "end":
            self._state = "head"
            return "end", b""
        if state == "head":
            blank = _BLANK_LINES.match(buffer)
            if blank is not None:
                self._buffer = buffer = buffer[blank.end():]
            match = HEAD_END.search(buffer)
            if match is None:
                # What is not HTTP is told by its first line, without waiting for more.
                first = buffer.find(b"\n")
                if first >= 0:
                    _request_line(buffer[:first].decode("latin-1").removesuffix("\r"))
                if len(buffer) > MAX_HEAD_BYTES:
                    raise BadRequest("oversized request head")
                return None
            head, self._buffer = buffer[:match.end()], buffer[match.end():]
            _, _, version, headers = split_head(head)
            self._start_body(body_length(version, headers))
            return "head", head
        if state in ("length", "data"):  # a sized body, or a chunk's data
            if not buffer:
                return None
            piece = buffer[:self._remaining]
            self._buffer = buffer[len(piece):]
            self._remaining -= len(piece)
            if not self._remaining:
                self._state = "end" if state == "length" else "data-end"
            return "body", piece
        if state == "data-end":
            if len(buffer) < 2:
                return None
            if buffer[:2] != b"\r\n":
                raise BadRequest("malformed chunked body: a chunk does not end in CRLF")
            self._buffer, self._state = buffer[2:], "size"
            return "body", b"\r\n"
        line = self._line()
        if line is None:
            return None
        if state == "size":
            size = _CHUNK_SIZE.fullmatch(line)
            if size is None:
                raise BadRequest(f"malformed chunk size line {line[:40]!r}")
            self._remaining = int(size.group(1), 16)
            self._state = "data" if self._remaining else "trailer"
            return "body", line
        if line == b"\r\n":  # the trailer section ends
            self._state = "end"
        elif not _TRAILER.fullmatch(line):
            raise BadRequest(f"malformed trailer line {line[:40]!r}")
        return "body", line

    def _line(self) -> bytes | None:
        end = self._buffer.find(b"\n")
        if end < 0:
            if len(self._buffer) > _MAX_LINE:
                raise BadRequest("oversized line in a chunked body")
            return None
        line, self._buffer = self._buffer[:end + 1], self._buffer[end + 1:]
        return line


# ---------------------------------------------------------------------------------------------
# The server name a TLS client asks for
# ---------------------------------------------------------------------------------------------

TLS_HANDSHAKE = 0x16
TLS_RECORD_HEADER = 5
MAX_TLS_RECORD = 16 * 1024 + 256  # a record's plaintext, and what a sender may add to it
_CLIENT_HELLO = 0x01
_SERVER_NAME_EXTENSION = 0x0000
_HOST_NAME = 0x00


def tls_record_end(data: bytes) -> int | None:
    """Where the TLS record that ``data`` starts with ends, once its header is there."""
    if len(data) < TLS_RECORD_HEADER:
        return None
    return TLS_RECORD_HEADER + int.from_bytes(data[3:5], "big")


class _Reader:
    """Length-prefixed fields of a TLS message, read strictly: a short field raises
    BadRequest."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, size: int) -> bytes:
        if self.at + size > len(self.data):
            raise BadRequest("the TLS ClientHello is cut short")
        chunk = self.data[self.at:self.at + size]
        self.at += size
        return chunk

    def number(self, size: int) -> int:
        return int.from_bytes(self.take(size), "big")

    def field(self, size: int) -> _Reader:
        """The field after a ``size``-byte length, as a reader of its own."""
        return _Reader(self.take(self.number(size)))

    def done(self) -> bool:
        return self.at == len(self.data)


def client_hello_server_name(record: bytes) -> str | None:
    """The host name a TLS ClientHello asks for (its server_name extension), from the first
    record of a tunnel; None when it names none (a client connecting to an address). Raises
    BadRequest for a record that is not one whole ClientHello: the proxy does not guess at a
    handshake split over records to hide its server name."""
    if record[:1] != bytes([TLS_HANDSHAKE]) or tls_record_end(record) != len(record):
        raise BadRequest("the tunnel's first TLS record is not one whole handshake record")
    message = _Reader(record[TLS_RECORD_HEADER:])
    if message.number(1) != _CLIENT_HELLO:
        raise BadRequest("the tunnel's first TLS message is not a ClientHello")
    hello = message.field(3)
    if not message.done():
        raise BadRequest("the tunnel's first TLS record holds more than its ClientHello")
    hello.take(2 + 32)  # the version and the random
    hello.field(1)  # the session id
    hello.field(2)  # the cipher suites
    hello.field(1)  # the compression methods
    if hello.done():
        return None  # no extensions at all
    extensions = hello.field(2)
    names: list[str] = []
    while not extensions.done():
        kind, body = extensions.number(2), extensions.field(2)
        if kind != _SERVER_NAME_EXTENSION:
            continue
        entries = body.field(2)
        while not entries.done():
            name_type, name = entries.number(1), entries.field(2)
            if name_type == _HOST_NAME:
                names.append(name.take(len(name.data)).decode("latin-1"))
    if len(names) > 1:
        raise BadRequest("the TLS ClientHello names more than one server")
    return names[0] if names else None
