"""What the domain proxy reads from a client: a proxy request's head, and the host it names.

Parsed strictly and never trusted: every byte decodes (as Latin-1), and anything that is not a
request the proxy understands raises ``BadRequest``, which the proxy answers with 400.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from pytest_agentic_evals.expectations.domains import normalise_host

# An HTTP token: a method, or a header's name.
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_VERSION = re.compile(r"HTTP/\d\.\d")
_HOP_BY_HOP = frozenset({
    "connection", "proxy-connection", "keep-alive", "proxy-authenticate",
    "proxy-authorization", "te", "trailer", "upgrade",
})


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
    if len(parts) != 3 or not TOKEN.fullmatch(parts[0]) or not _VERSION.fullmatch(parts[2]):
        raise BadRequest(f"malformed request line {lines[0][:100]!r}")
    method, target, version = parts
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not TOKEN.fullmatch(name):
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


def host_header(headers: tuple[tuple[str, str], ...]) -> str | None:
    for name, value in headers:
        if name.lower() == "host":
            return value
    return None


def header_host(value: str) -> str | None:
    """The host a Host header names (without its port), canonical; None when it names none."""
    value = value.strip()
    if value.startswith("["):
        return normalise_host(value.partition("]")[0] + "]")
    if value.count(":") == 1:
        value = value.partition(":")[0]
    return normalise_host(value)
