"""Domain rules: matching, the proxy on its own, the fixture rules, and real clients (curl and
Python's urllib / http.client) running as trials through the real plugin and CLI.

Nothing here leaves the machine: every server is started by the test on 127.0.0.1, and the
names the trials ask for (allowed.test, evil.test, ...) are mapped to it through
AGENTIC_EVALS_PROXY_HOSTS, which also keeps the proxy from connecting anywhere but loopback.
Refused hosts are never resolved at all.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import shutil
import socket
import ssl
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_agentic_evals.evidence.qualification import can_fail
from pytest_agentic_evals.expectations import domains as dm
from pytest_agentic_evals.expectations import proxy as px
from pytest_agentic_evals.expectations import proxy_requests
from pytest_agentic_evals.expectations.builtin import builtin_kinds, check_expectations
from pytest_agentic_evals.expectations.observation import Observation
from pytest_agentic_evals.loading import fixture_from_data
from pytest_agentic_evals.loading.fixture import FixtureError, fixture_schema
from pytest_agentic_evals.schemas import schema_text

from conftest import MODES, Skill, hello_origin, make_skill, run_cli, serving, skill_fixture

CURL = shutil.which("curl")
needs_curl = pytest.mark.skipif(CURL is None, reason="curl is not installed")
TEST_HOSTS = ("allowed.test", "api.allowed.test", "evil.test", "other.test")
LOCAL_HOSTS = ",".join(f"{host}=127.0.0.1" for host in TEST_HOSTS)


# ---------------------------------------------------------------------------------------------
# A loopback origin server
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def origin() -> Iterator[int]:
    with hello_origin() as port:
        yield port


@pytest.fixture
def local_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(px.LOCAL_HOSTS_VARIABLE, LOCAL_HOSTS)


def proxy_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("agentic-evals-proxy")]


def exchange(proxy: px.DomainProxy, data: bytes) -> bytes:
    """Send raw bytes to the proxy, half-close, and read everything it answers."""
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


# ---------------------------------------------------------------------------------------------
# Matching and rules
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("host", "entry", "expected"), [
    ("example.com", "example.com", True),
    ("api.example.com", "example.com", True),
    ("a.b.example.com", "example.com", True),
    ("badexample.com", "example.com", False),
    ("example.com.evil.test", "example.com", False),
    ("example.co", "example.com", False),
    ("api.example.com", "*.example.com", True),
    ("example.com", "*.example.com", False),
    ("127.0.0.1", "127.0.0.1", True),
    ("10.127.0.0.1", "127.0.0.1", False),
    ("::1", "::1", True),
    ("1.2.3.4", "2.3.4", False),
])
def test_matching(host: str, entry: str, expected: bool) -> None:
    assert dm.matches(host, entry) is expected


@pytest.mark.parametrize(("text", "expected"), [
    ("Example.COM", "example.com"),
    ("example.com.", "example.com"),
    ("[::1]", "::1"),
    ("0:0:0:0:0:0:0:1", "::1"),
    ("under_score.test", "under_score.test"),
    ("", None),
    ("exa mple.com", None),
    ("ex\u00e4mple.com", "xn--exmple-cua.com"),
    ("EX\u00c4MPLE.com.", "xn--exmple-cua.com"),
    ("127.1", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("127.000.000.001", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("[::ffff:127.0.0.1]", "127.0.0.1"),
    ("::ffff:7f00:1", "127.0.0.1"),
    ("a..b", None),
    ("x" * 254, None),
])
def test_requested_hosts_are_normalised(text: str, expected: str | None) -> None:
    assert dm.normalise_host(text) == expected


def test_disallowed_wins_and_allowed_lists_are_closed() -> None:
    policy = dm.DomainPolicy.from_expected(
        {"allowed_domains": ["Example.com"], "disallowed_domains": ["admin.example.com"]})
    assert policy is not None
    assert policy.decide("api.example.com") == dm.Decision(True, None, "example.com")
    assert policy.decide("admin.example.com") == dm.Decision(
        False, "disallowed_domains", "admin.example.com")
    assert policy.decide("x.admin.example.com").rule == "disallowed_domains"
    assert policy.decide("other.test") == dm.Decision(False, "allowed_domains", None)
    only_disallowed = dm.DomainPolicy.from_expected({"disallowed_domains": ["evil.test"]})
    assert only_disallowed is not None
    assert only_disallowed.decide("anything.test").allowed
    assert not only_disallowed.decide("www.evil.test").allowed
    nothing = dm.DomainPolicy.from_expected({"allowed_domains": []})
    assert nothing is not None and not nothing.decide("localhost").allowed
    assert dm.DomainPolicy.from_expected({"exit_code": 0}) is None


def test_proxy_environment_wins_over_the_case_and_drops_bypasses() -> None:
    env = px.proxy_environment({"PATH": "/bin", "NO_PROXY": "*", "no_proxy": "localhost",
                                "HTTP_PROXY": "http://elsewhere:3128"}, "http://127.0.0.1:9")
    assert env == {"PATH": "/bin", **dict.fromkeys(px.PROXY_VARIABLES, "http://127.0.0.1:9")}


def test_local_hosts_are_loopback_only() -> None:
    assert px.local_hosts_from("a.test=127.0.0.1, B.test=::1") == {
        "a.test": "127.0.0.1", "b.test": "::1"}
    assert px.local_hosts_from("") == {}
    for bad, words in (("a.test=8.8.8.8", "not a loopback"), ("a.test", "not name=address"),
                       ("a.test=nowhere", "not an IP address")):
        with pytest.raises(ValueError, match=words):
            px.local_hosts_from(bad)


# ---------------------------------------------------------------------------------------------
# Request parsing and the proxy on its own
# ---------------------------------------------------------------------------------------------


def test_parse_absolute_form_and_connect() -> None:
    request = proxy_requests.parse_request_head(
        b"GET http://User:pw@Allowed.Test:8080/a/b?c=d#frag HTTP/1.1\r\nHost: allowed.test\r\n"
        b"Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic x\r\nAccept: */*")
    assert (request.method, request.host, request.port, request.path) == (
        "GET", "allowed.test", 8080, "/a/b?c=d")
    forwarded = request.forwarded_head().decode()
    assert forwarded.startswith("GET /a/b?c=d HTTP/1.1\r\n")
    assert "Proxy-" not in forwarded and "Accept: */*" in forwarded
    assert forwarded.endswith("Connection: close\r\n\r\n")
    assert "Host: x.test:81" in proxy_requests.parse_request_head(
        b"GET http://x.test:81 HTTP/1.0").forwarded_head().decode()
    connect = proxy_requests.parse_request_head(b"CONNECT [::1]:443 HTTP/1.1\r\n")
    assert (connect.method, connect.host, connect.port) == ("CONNECT", "::1", 443)


@pytest.mark.parametrize("head", [
    b"", b"garbage", b"GET / HTTP/1.1", b"GET http://x.test/ HTTP/1.1 extra",
    b"GET http://x.test/ FTP/1.0", b"G\xffT http://x.test/ HTTP/1.1",
    b"GET https://x.test/ HTTP/1.1", b"GET http:///nohost HTTP/1.1",
    b"GET http://x.test:99999/ HTTP/1.1", b"GET http://bad host/ HTTP/1.1",
    b"CONNECT x.test HTTP/1.1", b"CONNECT x.test:0 HTTP/1.1", b"CONNECT :443 HTTP/1.1",
    b"CONNECT [::1 HTTP/1.1", b"GET http://x.test/ HTTP/1.1\r\nno colon here",
    b"GET http://x.test/ HTTP/1.1\r\n folded: header",
])
def test_malformed_heads_are_bad_requests(head: bytes) -> None:
    with pytest.raises(proxy_requests.BadRequest):
        proxy_requests.parse_request_head(head)


def test_the_proxy_answers_garbage_with_400_and_records_no_host() -> None:
    with px.DomainProxy(dm.DomainPolicy(("allowed.test",)), {}) as proxy:
        assert exchange(proxy, b"\x16\x03\x01\x02\x00garbage\r\n\r\n").startswith(
            b"HTTP/1.1 400 ")
        assert b"absolute http:// URL" in exchange(proxy, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert exchange(proxy, b"GET http://allowed.test/ HTTP/1.1\r\n").startswith(
            b"HTTP/1.1 400 ")  # the head never ended
        oversized = b"GET http://allowed.test/" + b"a" * (proxy_requests.MAX_HEAD_BYTES + 10)
        assert exchange(proxy, oversized).startswith(b"HTTP/1.1 400 ")
        assert exchange(proxy, b"") == b""  # connected and left: nothing to record
    report = proxy.report()
    assert report["malformed_requests"] == 4
    assert report["requests"] == 0 and report["contacted"] == [] and report["violations"] == []
    assert report["proxy_errors"] == []
    assert proxy_threads() == []


def test_refused_hosts_are_never_resolved_and_unmapped_ones_never_leave_loopback() -> None:
    policy = dm.DomainPolicy(None, ("evil.test",))
    with px.DomainProxy(policy, {}) as proxy:
        refused = exchange(proxy, b"CONNECT www.evil.test:443 HTTP/1.1\r\n\r\n")
        assert refused.startswith(b"HTTP/1.1 403 ") and b"evil.test" in refused
        # A body the proxy never reads must not reset the connection before the answer.
        posted = exchange(proxy, b"POST http://evil.test/upload HTTP/1.1\r\n"
                                 b"Content-Length: 300000\r\n\r\n" + b"x" * 300_000)
        assert posted.startswith(b"HTTP/1.1 403 ")
        # Allowed by the rules, but not mapped: with AGENTIC_EVALS_PROXY_HOSTS set the proxy
        # connects to loopback only, so this never reaches DNS or the network.
        unmapped = exchange(proxy, b"GET http://example.com/ HTTP/1.1\r\n\r\n")
        assert unmapped.startswith(b"HTTP/1.1 502 ") and b"loopback addresses only" in unmapped
    report = proxy.report()
    assert report["contacted"] == ["www.evil.test", "evil.test", "example.com"]
    assert report["violations"] == [
        {"host": "www.evil.test", "port": 443, "method": "CONNECT",
         "rule": "disallowed_domains", "entry": "evil.test", "count": 1},
        {"host": "evil.test", "port": 80, "method": "POST",
         "rule": "disallowed_domains", "entry": "evil.test", "count": 1}]
    assert report["refused"] == 2 and report["requests"] == 3


def test_forwarding_and_tunnelling_to_a_loopback_origin(origin: int) -> None:
    policy = dm.DomainPolicy(("allowed.test",))
    with px.DomainProxy(policy, px.local_hosts_from(LOCAL_HOSTS)) as proxy:
        answer = exchange(proxy, f"GET http://api.allowed.test:{origin}/x HTTP/1.1\r\n"
                                 f"Host: api.allowed.test:{origin}\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.0 200 ") and b"hello from api.allowed.test /x" in answer
        tunnel = exchange(proxy, f"CONNECT allowed.test:{origin} HTTP/1.1\r\n\r\n"
                                 f"GET /t HTTP/1.0\r\nHost: allowed.test\r\n\r\n".encode())
        assert tunnel.startswith(b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.0 200 ")
        assert tunnel.endswith(b"hello from allowed.test /t\n")
        refused = exchange(proxy, f"CONNECT other.test:{origin} HTTP/1.1\r\n\r\n".encode())
        assert refused.startswith(b"HTTP/1.1 403 ") and b"not in allowed_domains" in refused
    report = proxy.report()
    assert report["contacted"] == ["api.allowed.test", "allowed.test", "other.test"]
    assert [(v["host"], v["rule"], v["method"]) for v in report["violations"]] == [
        ("other.test", "allowed_domains", "CONNECT")]


@pytest.mark.parametrize("spelling", ["127.1", "2130706433", "0x7f000001", "127.000.000.001",
                                      "[::ffff:127.0.0.1]", "0177.0.0.1"])
def test_every_spelling_of_a_disallowed_address_is_refused(origin: int, spelling: str) -> None:
    policy = dm.DomainPolicy(None, ("127.0.0.1",))
    with px.DomainProxy(policy, px.local_hosts_from(LOCAL_HOSTS)) as proxy:
        plain = exchange(proxy, f"GET http://{spelling}:{origin}/ HTTP/1.1\r\n\r\n".encode())
        tunnel = exchange(proxy, f"CONNECT {spelling}:{origin} HTTP/1.1\r\n\r\n".encode())
    assert plain.startswith(b"HTTP/1.1 403 ") and tunnel.startswith(b"HTTP/1.1 403 ")
    report = proxy.report()
    assert report["contacted"] == ["127.0.0.1"] and report["violations"][0]["count"] == 2


def test_a_host_header_naming_another_host_is_refused(origin: int) -> None:
    policy = dm.DomainPolicy(("allowed.test",))
    with px.DomainProxy(policy, px.local_hosts_from(LOCAL_HOSTS)) as proxy:
        plain = exchange(proxy, f"GET http://allowed.test:{origin}/ HTTP/1.1\r\n"
                                f"Host: evil.test\r\n\r\n".encode())
        outer = exchange(proxy, f"CONNECT allowed.test:{origin} HTTP/1.1\r\n"
                                f"Host: evil.test:{origin}\r\n\r\n".encode())
        inner = exchange(proxy, f"CONNECT allowed.test:{origin} HTTP/1.1\r\n\r\n"
                                f"GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n".encode())
        # Spelled differently, the same host: not a mismatch.
        same = exchange(proxy, f"GET http://allowed.test:{origin}/s HTTP/1.1\r\n"
                               f"Host: ALLOWED.test.:{origin}\r\n\r\n".encode())
    assert plain.startswith(b"HTTP/1.1 403 ") and outer.startswith(b"HTTP/1.1 403 ")
    assert inner.startswith(b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 403 ")
    assert same.startswith(b"HTTP/1.0 200 ") and same.endswith(b"ALLOWED.test. /s\n")
    report = proxy.report()
    assert [m["host_header"] for m in report["host_mismatches"]] == [
        "evil.test", f"evil.test:{origin}", "evil.test"]
    assert report["refused"] == 3 and report["contacted"] == ["allowed.test", "evil.test"]
    failures = dm.check_allowed(["allowed.test"], Observation(
        None, Path(), Path(), Path(), Path(), domains=report))
    assert len(failures) == 3 and "said Host: 'evil.test'" in failures[0]


def test_a_host_mismatch_records_every_host_it_names(origin: int) -> None:
    policy = dm.DomainPolicy(("allowed.test",))
    with px.DomainProxy(policy, px.local_hosts_from(LOCAL_HOSTS)) as proxy:
        answers = [
            exchange(proxy, f"GET http://other.test:{origin}/ HTTP/1.1\r\n"
                            f"Host: evil.test\r\n\r\n".encode()),
            exchange(proxy, f"CONNECT api.allowed.test:{origin} HTTP/1.1\r\n"
                            f"Host: Evil.Test.:443\r\n\r\n".encode()),
            exchange(proxy, f"CONNECT allowed.test:{origin} HTTP/1.1\r\n\r\n"
                            f"GET http://third.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
                            .encode()),
            exchange(proxy, f"GET http://allowed.test:{origin}/ HTTP/1.1\r\n"
                            f"Host: allowed.test\r\nHost: fourth.test\r\n\r\n".encode()),
        ]
    assert all(b"HTTP/1.1 403 " in answer for answer in answers), answers
    report = proxy.report()
    assert report["contacted"] == ["other.test", "evil.test", "api.allowed.test", "allowed.test",
                                   "third.test", "fourth.test"]
    assert [(m["host"], m["host_header"]) for m in report["host_mismatches"]] == [
        ("other.test", "evil.test"), ("api.allowed.test", "Evil.Test.:443"),
        ("allowed.test", "third.test"), ("allowed.test", "allowed.test, fourth.test")]


def test_a_host_name_that_is_not_ascii_is_refused_and_recorded(origin: int) -> None:
    """A client's bytes are read as Latin-1, so a name sent in UTF-8 would be judged under
    another name: refused (clients send the IDNA form), and recorded as the client meant it."""
    policy = dm.DomainPolicy.from_expected({"disallowed_domains": ["b\u00fccher.test"]})
    assert policy is not None
    with px.DomainProxy(policy, px.local_hosts_from(LOCAL_HOSTS)) as proxy:
        connect = exchange(proxy, b"CONNECT b\xc3\xbccher.test:443 HTTP/1.1\r\n\r\n")
        plain = exchange(proxy, b"GET http://B\xc3\x9cCHER.test/x HTTP/1.1\r\n\r\n")
        header = exchange(proxy, f"GET http://allowed.test:{origin}/ HTTP/1.1\r\n".encode()
                          + b"Host: b\xc3\xbccher.test\r\n\r\n")
        not_utf8 = exchange(proxy, b"CONNECT b\xfccher.test:443 HTTP/1.1\r\n\r\n")
        tunnelled = exchange(proxy, f"CONNECT allowed.test:{origin} HTTP/1.1\r\n\r\n".encode()
                             + b"GET http://\xc3\xa9vil.test/ HTTP/1.1\r\n\r\n")
    for answer, name in ((connect, "b\u00fccher.test"), (plain, "B\u00dcCHER.test")):
        assert answer.startswith(b"HTTP/1.1 400 "), answer
        assert f"host name {name!r} is not ASCII; send its IDNA form, " \
               "xn--bcher-kva.test".encode() in answer, answer
    assert header.startswith(b"HTTP/1.1 403 ")
    assert not_utf8.startswith(b"HTTP/1.1 400 ") and b"is not ASCII" in not_utf8
    assert tunnelled.startswith(b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 400 ")
    report = proxy.report()
    assert report["contacted"] == ["xn--bcher-kva.test", "allowed.test", "b\\xfccher.test",
                                   "xn--vil-9la.test"]
    assert [m["host_header"] for m in report["host_mismatches"]] == ["b\u00fccher.test"]
    assert report["malformed_requests"] == 4 and report["violations"] == []


class _KeepAlive(http.server.BaseHTTPRequestHandler):
    """An HTTP/1.1 server that answers every request a connection carries, whatever its
    Connection header says: as a server behind a shared address (a CDN) may."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path == "/ws" and self.headers.get("Upgrade") == "websocket":
            # Switches, then echoes every byte until the client is done.
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.end_headers()
            self.wfile.flush()
            self.wfile.write(b"echo: " + self.rfile.read())
            self.close_connection = True
            return
        self.answer(f"hello from {self.headers.get('Host', '?').split(':')[0]} {self.path}")

    def do_POST(self) -> None:
        if self.headers.get("Transfer-Encoding") == "chunked":
            body = b""
            while size := int(self.rfile.readline().split(b";")[0], 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b""):
                pass
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.answer(f"posted {body.decode()!r} to {self.path}")

    def answer(self, text: str) -> None:
        body = f"{text}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = False  # whatever the request's Connection header said

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def listening(address: str = "127.0.0.1") -> Iterator[int]:
    """A keep-alive origin on ``address`` (a free port, yielded)."""
    class Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in address else socket.AF_INET

    with serving(Server((address, 0), _KeepAlive)) as port:
        yield port


@pytest.fixture
def keep_alive_origin() -> Iterator[int]:
    with listening() as port:
        yield port


def test_every_request_on_a_connection_is_judged(keep_alive_origin: int) -> None:
    port = keep_alive_origin
    policy = dm.DomainPolicy(("allowed.test",))
    with px.DomainProxy(policy, px.local_hosts_from(LOCAL_HOSTS)) as proxy:
        plain = exchange(proxy, f"GET http://allowed.test:{port}/first HTTP/1.1\r\n"
                                f"Host: allowed.test:{port}\r\n\r\n"
                                f"GET http://evil.test:{port}/second HTTP/1.1\r\n"
                                f"Host: evil.test:{port}\r\n\r\n".encode())
        tunnel = exchange(proxy, f"CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n"
                                 f"GET /first HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
                                 f"GET /second HTTP/1.1\r\nHost: evil.test\r\n\r\n".encode())
        # A keep-alive client that sends its next request once it has read an answer.
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
            sock.sendall(f"GET http://allowed.test:{port}/one HTTP/1.1\r\n"
                         f"Host: allowed.test:{port}\r\n\r\n".encode())
            answer = b""
            while not answer.endswith(b"hello from allowed.test /one\n"):
                chunk = sock.recv(65536)
                assert chunk, answer
                answer += chunk
            sock.sendall(f"GET http://evil.test:{port}/two HTTP/1.1\r\n"
                         f"Host: evil.test:{port}\r\n\r\n".encode())
            sock.shutdown(socket.SHUT_WR)
            rest = b"".join(iter(lambda: sock.recv(65536), b""))
    assert b"hello from allowed.test /first" in plain and b"/second" not in plain
    assert tunnel.startswith(b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 ")
    assert b"hello from allowed.test /first" in tunnel and b"/second" not in tunnel
    assert b"/two" not in rest
    report = proxy.report()
    assert report["contacted"] == ["allowed.test", "evil.test"]
    assert [(v["host"], v["rule"], v["method"], v["count"]) for v in report["violations"]] == [
        ("evil.test", "allowed_domains", "GET", 2)]
    assert [(m["host"], m["host_header"]) for m in report["host_mismatches"]] == [
        ("allowed.test", "evil.test")]


def test_a_later_request_for_a_name_of_this_machine_is_recorded_as_refused(
    keep_alive_origin: int,
) -> None:
    """A second request on a connection is never forwarded, but it is judged as the first
    is: by the name it asks for and by where that name leads (localhost: this machine)."""
    port = keep_alive_origin
    with px.DomainProxy(dm.DomainPolicy(None), px.local_hosts_from(LOCAL_HOSTS)) as proxy:
        answer = exchange(proxy, f"GET http://allowed.test:{port}/first HTTP/1.1\r\n"
                                 f"Host: allowed.test:{port}\r\n\r\n"
                                 f"GET http://localhost:{port}/second HTTP/1.1\r\n"
                                 f"Host: localhost:{port}\r\n\r\n".encode())
    assert b"hello from allowed.test /first" in answer and b"/second" not in answer
    assert [(v["host"], v["rule"]) for v in proxy.report()["violations"]] == [
        ("localhost", "local_address")]


def test_a_request_body_is_forwarded_whole_and_nothing_after_it(keep_alive_origin: int) -> None:
    port = keep_alive_origin
    evil = f"GET http://evil.test:{port}/smuggled HTTP/1.1\r\nHost: evil.test:{port}\r\n\r\n"
    with px.DomainProxy(dm.DomainPolicy(("allowed.test",)),
                        px.local_hosts_from(LOCAL_HOSTS)) as proxy:
        sized = exchange(proxy, f"POST http://allowed.test:{port}/sized HTTP/1.1\r\n"
                                f"Content-Length: 5\r\n\r\nhello{evil}".encode())
        chunked = exchange(proxy, f"POST http://allowed.test:{port}/chunked HTTP/1.1\r\n"
                                  f"Transfer-Encoding: chunked\r\n\r\n"
                                  f"3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: t\r\n\r\n"
                                  f"{evil}".encode())
        tunnelled = exchange(proxy, f"CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n"
                                    f"POST /in HTTP/1.1\r\nHost: allowed.test\r\n"
                                    f"Transfer-Encoding: chunked\r\n\r\n"
                                    f"2\r\nok\r\n0\r\n\r\n"
                                    f"GET /smuggled HTTP/1.1\r\nHost: evil.test\r\n\r\n".encode())
        # Framed two ways, a body could end where a server says and not where the proxy does.
        both = exchange(proxy, f"POST http://allowed.test:{port}/both HTTP/1.1\r\n"
                               f"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                               f"0\r\n\r\n{evil}".encode())
        bad_chunk = exchange(proxy, f"CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n"
                                    f"POST /in HTTP/1.1\r\nHost: allowed.test\r\n"
                                    f"Transfer-Encoding: chunked\r\n\r\n"
                                    f"2\nok\r\n0\r\n\r\n".encode())
    assert sized.endswith(b"posted 'hello' to /sized\n")
    assert chunked.endswith(b"posted 'abcde' to /chunked\n")
    assert tunnelled.endswith(b"posted 'ok' to /in\n")
    assert both.startswith(b"HTTP/1.1 400 ")
    assert b"both Transfer-Encoding and Content-Length" in both
    assert bad_chunk == b"HTTP/1.1 200 Connection established\r\n\r\n"
    assert b"smuggled" not in sized + chunked + tunnelled
    report = proxy.report()
    assert [(v["host"], v["count"]) for v in report["violations"]] == [("evil.test", 2)]
    assert [m["host_header"] for m in report["host_mismatches"]] == ["evil.test"]
    assert report["malformed_requests"] == 2


def test_a_tunnel_carries_tls_or_http_and_every_host_its_requests_name_is_judged(
    keep_alive_origin: int
) -> None:
    port = keep_alive_origin
    connect = f"CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n"
    established = b"HTTP/1.1 200 Connection established\r\n\r\n"
    with px.DomainProxy(dm.DomainPolicy(("allowed.test",)),
                        px.local_hosts_from(LOCAL_HOSTS)) as proxy:
        answers = {name: exchange(proxy, (connect + inner).encode()) for name, inner in {
            # Empty lines before a request, which a server skips, do not hide it.
            "blank-lines": "\r\n\r\nGET /b HTTP/1.1\r\nHost: evil.test\r\n\r\n",
            "absolute-target": "GET http://evil.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
            "two-hosts": "GET / HTTP/1.1\r\nHost: allowed.test\r\nHost: evil.test\r\n\r\n",
            "bare-cr": "GET / HTTP/1.1\r\nX-A: b\rHost: evil.test\r\nHost: allowed.test\r\n\r\n",
            "http2": "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            "nested-connect": "CONNECT evil.test:443 HTTP/1.1\r\n\r\n",
            "not-http": "SSH-2.0-OpenSSH_9.6\r\n",
            "same-host": "\r\nGET /s HTTP/1.1\r\nHost: Allowed.Test.\r\n\r\n",
        }.items()}
    for name in ("blank-lines", "absolute-target", "two-hosts"):
        assert answers[name].startswith(established + b"HTTP/1.1 403 "), name
    for name in ("bare-cr", "http2", "nested-connect", "not-http"):
        assert answers[name].startswith(established + b"HTTP/1.1 400 "), name
    assert answers["same-host"].endswith(b"hello from Allowed.Test. /s\n")
    assert b"hello" not in b"".join(v for k, v in answers.items() if k != "same-host")
    report = proxy.report()
    assert [m["host_header"] for m in report["host_mismatches"]] == [
        "evil.test", "evil.test", "allowed.test, evil.test"]
    assert report["malformed_requests"] == 4


def client_hello(server_name: str | None) -> bytes:
    """The first TLS record Python's own TLS client sends, asking for ``server_name``."""
    context = ssl.create_default_context()
    context.check_hostname = False
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=server_name)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_the_server_name_of_a_client_hello_is_read_strictly() -> None:
    hello = client_hello("allowed.test")
    assert proxy_requests.client_hello_server_name(hello) == "allowed.test"
    assert proxy_requests.client_hello_server_name(client_hello(None)) is None
    body = hello[proxy_requests.TLS_RECORD_HEADER:]
    split = b"".join(bytes([0x16]) + hello[1:3] + len(part).to_bytes(2, "big") + part
                     for part in (body[:40], body[40:]))
    for broken in (hello[:-1], hello + b"\x00", split):
        with pytest.raises(proxy_requests.BadRequest):
            proxy_requests.client_hello_server_name(broken)


def test_a_tls_tunnel_must_ask_for_the_host_it_was_opened_to(origin: int) -> None:
    """A server behind an allowed name may serve a refused one too: a ClientHello asking for
    another name than the tunnel's is refused, its tunnel closed before a byte goes on."""
    connect = f"CONNECT allowed.test:{origin} HTTP/1.1\r\n\r\n".encode()
    established = b"HTTP/1.1 200 Connection established\r\n\r\n"
    with px.DomainProxy(dm.DomainPolicy(("allowed.test",)),
                        px.local_hosts_from(LOCAL_HOSTS)) as proxy:
        fronted = exchange(proxy, connect + client_hello("evil.test"))
        split = exchange(proxy, connect + client_hello("allowed.test")[:60])
        same = exchange(proxy, connect + client_hello("Allowed.Test."))
    assert fronted == established and split == established
    assert same.startswith(established) and len(same) > len(established)  # the origin answered
    report = proxy.report()
    assert [m["host_header"] for m in report["host_mismatches"]] == [
        "TLS server name evil.test"]
    assert "evil.test" in report["contacted"]
    assert report["malformed_requests"] == 1


def test_a_websocket_goes_through_a_tunnel_once_the_server_switches(
    keep_alive_origin: int
) -> None:
    port = keep_alive_origin
    connect = f"CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n"
    upgrade = "Host: allowed.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    after = "GET /after HTTP/1.1\r\nHost: evil.test\r\n\r\n"
    with px.DomainProxy(dm.DomainPolicy(("allowed.test",)),
                        px.local_hosts_from(LOCAL_HOSTS)) as proxy:
        switched = exchange(proxy, f"{connect}GET /ws HTTP/1.1\r\n{upgrade}{after}".encode())
        # The server answers without switching: what follows is HTTP again, and judged.
        declined = exchange(proxy, f"{connect}GET /nows HTTP/1.1\r\n{upgrade}{after}".encode())
    assert b"HTTP/1.1 101 " in switched and switched.endswith(f"echo: {after}".encode())
    assert declined.endswith(b"hello from allowed.test /nows\n")
    assert proxy.report()["host_mismatches"] == [
        {"host": "allowed.test", "port": port, "method": "CONNECT", "host_header": "evil.test"}]


def own_address() -> str | None:
    """This machine's address on the way out (a UDP socket's route: nothing is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("203.0.113.1", 9))
        except OSError:
            return None
        address: str = probe.getsockname()[0]
    return address


def test_the_machine_running_the_evaluation_is_refused_unless_a_rule_names_it() -> None:
    """Names resolve through the system here, as in a real run: no AGENTIC_EVALS_PROXY_HOSTS."""
    with listening("0.0.0.0") as port, listening("::1") as port6:
        asked = [f"127.0.0.1:{port}", f"127.1:{port}", f"[::ffff:127.0.0.1]:{port}",
                 f"localhost:{port}", f"0.0.0.0:{port}", f"[::1]:{port6}",
                 f"{socket.gethostname()}:{port}", f"169.254.169.254:{port}",
                 f"[fe80::1]:{port}"]
        mine = own_address()
        if mine is not None:
            asked.append(f"{mine}:{port}")
        with px.DomainProxy(dm.DomainPolicy(None), None) as everything:
            answers = [exchange(everything, f"GET http://{target}/x HTTP/1.1\r\n\r\n".encode())
                       + exchange(everything, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())
                       for target in asked]
        with px.DomainProxy(dm.DomainPolicy(None, ("evil.test",)), None) as rules:
            ruled = exchange(rules, f"GET http://127.0.0.1:{port}/x HTTP/1.1\r\n\r\n".encode())
        with px.DomainProxy(dm.DomainPolicy(("127.0.0.1", "localhost", "::1")),
                            None) as named:
            reached = [exchange(named, f"GET http://{target}/named HTTP/1.1\r\n\r\n".encode())
                       for target in (f"127.0.0.1:{port}", f"localhost:{port}",
                                      f"[::1]:{port6}")]
    for target, answer in zip(asked, answers, strict=True):
        assert answer.startswith(b"HTTP/1.1 403 ") and b"hello" not in answer, (target, answer)
        assert answer.count(b"HTTP/1.1 403 ") == 2, (target, answer)
    assert b"127.0.0.1 is a loopback address" in answers[0]
    assert ruled.startswith(b"HTTP/1.1 403 ") and b"hello" not in ruled
    assert all(b"hello from " in answer and answer.endswith(b" /named\n") for answer in reached)
    report = everything.report()
    assert {v["rule"] for v in report["violations"]} == {"local_address"}
    assert report["refused"] == report["requests"] == 2 * len(asked)
    assert [v["host"] for v in report["violations"]] == report["contacted"]
    assert {v["entry"] for v in report["violations"]} >= {
        "127.0.0.1", "0.0.0.0", "::1", "169.254.169.254", "fe80::1"}
    assert rules.report()["violations"] == [
        {"host": "127.0.0.1", "port": port, "method": "GET", "rule": "local_address",
         "entry": "127.0.0.1", "count": 1}]
    assert check({"disallowed_domains": ["evil.test"]}, rules.report()) == [
        "disallowed_domains: contacted 127.0.0.1, a loopback address of the machine running "
        "the evaluation (127.0.0.1); the proxy refused it"]
    assert named.report()["violations"] == []


@pytest.mark.parametrize(("address", "private"), [
    ("10.0.0.1", True), ("10.255.255.255", True), ("172.16.0.1", True),
    ("172.31.255.255", True), ("192.168.1.1", True), ("100.64.0.1", True),
    ("100.127.255.255", True), ("fd12:3456::1", True), ("fec0::1", True),
    ("::ffff:10.1.2.3", True),
    ("172.15.255.255", False), ("172.32.0.0", False), ("100.63.255.255", False),
    ("100.128.0.0", False), ("192.169.0.1", False), ("11.0.0.1", False),
    ("2001:db8::1", False), ("93.184.216.34", False),
])
def test_private_addresses_are_the_evaluating_machines_networks(
    address: str, private: bool
) -> None:
    kind = dm.local_kind(address)
    assert (kind is not None and kind.startswith("a private address")) is private, kind


def test_a_private_address_is_refused_without_being_contacted() -> None:
    """The networks of the machine running the evaluation (a CI provider's services, an
    office's, a cluster's) are out of reach as its loopback is: refused before any
    connection, also without rules."""
    with px.DomainProxy(dm.DomainPolicy(None), None) as everything:
        started = time.monotonic()
        answers = [exchange(everything, b"GET http://10.1.2.3:9/x HTTP/1.1\r\n\r\n"),
                   exchange(everything, b"CONNECT 192.168.1.1:443 HTTP/1.1\r\n\r\n"),
                   exchange(everything, b"CONNECT [fd00::1]:443 HTTP/1.1\r\n\r\n")]
        elapsed = time.monotonic() - started
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 403 "), answer
        assert b"a private address" in answer, answer
    assert elapsed < px.CONNECT_TIMEOUT_SECONDS  # answered, not tried and timed out
    assert [(v["host"], v["rule"], v["entry"]) for v in everything.report()["violations"]] == [
        ("10.1.2.3", "local_address", "10.1.2.3"), ("192.168.1.1", "local_address", "192.168.1.1"),
        ("fd00::1", "local_address", "fd00::1")]


def test_stop_cuts_open_tunnels_and_joins_every_thread(origin: int) -> None:
    proxy = px.DomainProxy(dm.DomainPolicy(None, ("evil.test",)),
                           px.local_hosts_from(LOCAL_HOSTS))
    proxy.start()
    clients = []
    for _ in range(3):  # idle tunnels, as a trial killed mid-download would leave them
        sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        sock.sendall(f"CONNECT allowed.test:{origin} HTTP/1.1\r\n\r\n".encode())
        assert sock.recv(100).startswith(b"HTTP/1.1 200 ")
        clients.append(sock)
    silent = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)  # never speaks
    deadline = time.monotonic() + 10
    while len(proxy_threads()) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(proxy_threads()) == 5  # the acceptor and one per connection
    started = time.monotonic()
    proxy.stop()
    assert time.monotonic() - started < 2
    assert proxy_threads() == []
    for sock in [*clients, silent]:
        assert sock.recv(100) == b""  # the proxy's side is closed
        sock.close()
    assert proxy.report()["proxy_errors"] == []
    proxy.stop()  # a second stop is harmless


def test_the_record_is_bounded_but_no_refusal_is_lost() -> None:
    with px.DomainProxy(dm.DomainPolicy(()), {}, max_hosts=2) as proxy:
        for n in range(5):
            exchange(proxy, f"CONNECT h{n}.test:443 HTTP/1.1\r\n\r\n".encode())
        exchange(proxy, b"CONNECT h0.test:443 HTTP/1.1\r\n\r\n")
    report = proxy.report()
    assert report["contacted"] == ["h0.test", "h1.test"]
    assert report["hosts_not_listed"] == 3 and report["violations_not_listed"] == 3
    assert report["violations"][0]["count"] == 2 and report["refused"] == 6
    failures = check({"allowed_domains": []}, report)
    assert failures == ["allowed_domains: contacted h0.test, which is not in allowed_domains; "
                        "the proxy refused it",
                        "allowed_domains: contacted h1.test, which is not in allowed_domains; "
                        "the proxy refused it",
                        "allowed_domains: 3 more refused host(s), not listed"]


# ---------------------------------------------------------------------------------------------
# The expectation kinds and the fixture
# ---------------------------------------------------------------------------------------------


def check(expected: dict[str, Any], domains: dict[str, Any] | None,
          tmp: Path = Path("/dev/null")) -> list[str]:
    observation = Observation(0, tmp, tmp, tmp, tmp, domains=domains)
    return check_expectations(expected, observation, builtin_kinds())


def test_each_rule_reports_its_own_refusals_once() -> None:
    policy = dm.DomainPolicy(("allowed.test",), ("evil.test",))
    report = {**dm.unenforced_report(policy, "x"), "enforced": True, "reason": None,
              "violations": [
                  {"host": "evil.test", "rule": "disallowed_domains", "entry": "evil.test"},
                  {"host": "other.test", "rule": "allowed_domains", "entry": None}]}
    expected = {"allowed_domains": ["allowed.test"], "disallowed_domains": ["evil.test"]}
    assert check(expected, report) == [
        "allowed_domains: contacted other.test, which is not in allowed_domains; "
        "the proxy refused it",
        "disallowed_domains: contacted disallowed domain evil.test (matches 'evil.test'); "
        "the proxy refused it",
    ]
    assert check(expected, {**report, "violations": []}) == []
    assert check({"disallowed_domains": ["evil.test"]}, None) == [
        "disallowed_domains: not checked: no domain proxy ran for this trial"]
    assert check({"disallowed_domains": ["evil.test"]},
                 dm.unenforced_report(policy, "could not start")) == [
        "disallowed_domains: not checked: could not start"]


def test_the_schema_pattern_is_the_module_pattern() -> None:
    assert fixture_schema()["$defs"]["domain"]["pattern"] == dm.ENTRY_PATTERN


def load(skill: Skill, *cases: dict[str, Any]) -> Any:
    data = skill_fixture()
    data["cases"] += list(cases)
    path = skill.write(data)
    return fixture_from_data(data, path)


def domain_case(name: str = "net", **keys: Any) -> dict[str, Any]:
    expected = {"exit_code": 0, **keys.pop("expected", {})}
    return {"name": name, "type": "positive", "required": False,
            "command": ["curl", "-sS", "http://allowed.test/"], "expected": expected, **keys}


def test_rules_on_the_case_move_into_expected(skill: Skill) -> None:
    fixture = load(skill, domain_case("case-level", allowed_domains=[]),
                   domain_case("in-expected", expected={"disallowed_domains": ["evil.test"]}),
                   domain_case("bare"))
    on_case, in_expected = fixture.case("case-level"), fixture.case("in-expected")
    assert on_case.expected == {"exit_code": 0, "allowed_domains": []}
    assert in_expected.expected == {"exit_code": 0, "disallowed_domains": ["evil.test"]}
    # Both can fail: an empty allowed list refuses every host.
    assert can_fail(on_case) and can_fail(in_expected)
    assert not can_fail(fixture.case("bare"))


def test_bad_rules_are_load_errors_with_pointers(skill: Skill) -> None:
    with pytest.raises(FixtureError) as error:
        load(skill,
             domain_case("a", allowed_domains=["ok.test", "bad host", "-x.test", "a_b.test"]),
             domain_case("b", expected={"disallowed_domains": []}),
             domain_case("c", allowed_domains=["x.test"],
                         expected={"allowed_domains": ["x.test"]}),
             domain_case("d", allowed_domains=["x.test"], disallowed_domains=["X.test"]),
             domain_case("e", disallowed_domains=["fe80::1::2"]),
             domain_case("f", expected={"allowed_domains": "x.test"}),
             domain_case("g", disallowed_domains=["x.test", "x.test"]))
    text = str(error.value)
    assert "/cases/2/allowed_domains/1: \"bad host\" is not a host name" in text
    assert "/cases/2/allowed_domains/2: \"-x.test\" is not a host name" in text
    assert "/cases/2/allowed_domains/3: \"a_b.test\" is not a host name" in text
    assert "/cases/3/expected/disallowed_domains: [] should be non-empty" in text
    assert ("/cases/4/allowed_domains: allowed_domains is given both on the case and in "
            "expected; keep one") in text
    assert "/cases/5/disallowed_domains/0: 'X.test' is both allowed and disallowed" in text
    assert "/cases/6/disallowed_domains/0: 'fe80::1::2' is not a valid IPv6 address" in text
    assert "/cases/7/expected/allowed_domains: \"x.test\" is a string, expected array" in text
    assert "/cases/8/disallowed_domains: " in text and "non-unique" in text
    assert "ok.test" not in text


def test_good_entries_load(skill: Skill) -> None:
    entries = ["example.com", "*.example.com", "a-b.c0.example", "127.0.0.1", "::1",
               "LOCALHOST", "x" * 63 + ".test"]
    fixture = load(skill, domain_case(allowed_domains=entries))
    assert fixture.case("net").expected["allowed_domains"] == entries


# ---------------------------------------------------------------------------------------------
# Real clients through the real plugin
# ---------------------------------------------------------------------------------------------


URLLIB = """
import sys, urllib.error, urllib.request
for url in sys.argv[1:]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            print(response.status, response.read().decode().strip())
    except urllib.error.HTTPError as exc:
        print("status", exc.code, exc.read().decode().strip())
    except urllib.error.URLError as exc:
        print("refused:", exc.reason)
"""

TUNNEL = """
import http.client, os, sys, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
connection = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=10)
connection.set_tunnel(sys.argv[1], int(sys.argv[2]))
connection.request("GET", "/through-the-tunnel")
response = connection.getresponse()
print(response.status, response.read().decode().strip())
"""

HANG_IN_A_TUNNEL = """
import os, socket, sys, time, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
tunnel = socket.create_connection((proxy.hostname, proxy.port), timeout=10)
tunnel.sendall(f"CONNECT allowed.test:{sys.argv[1]} HTTP/1.1\\r\\n\\r\\n".encode())
print(tunnel.recv(100).decode().splitlines()[0], flush=True)
time.sleep(60)
"""

SHOW_ENV = """
import os
for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
             "all_proxy", "NO_PROXY", "no_proxy", "AGENTIC_EVALS_PROXY_HOSTS"):
    print(name, os.environ.get(name, "MISSING"))
"""


def net_case(name: str, command: list[str], expected: dict[str, Any],
             **keys: Any) -> dict[str, Any]:
    return {"name": name, "type": "positive", "required": False, "command": command,
            "expected": {"exit_code": 0, **expected}, **keys}


def curl(*args: str) -> list[str]:
    return [CURL or "curl", "-sS", "--max-time", "10", *args]


def python(script: str, *args: str) -> list[str]:
    return [sys.executable, "-c", script, *args]


def domain_cases(port: int) -> list[dict[str, Any]]:
    def url(host: str, path: str = "/") -> str:
        return f"http://{host}:{port}{path}"

    return [
        net_case("curl-allowed", curl(url("allowed.test", "/a"), url("api.allowed.test", "/b")),
                 {"stdout_contains": ["hello from allowed.test /a",
                                      "hello from api.allowed.test /b"]},
                 allowed_domains=["allowed.test"]),
        net_case("curl-disallowed", curl(url("evil.test")),
                 {"stdout_contains": ["evil.test refused"], "disallowed_domains": ["evil.test"]}),
        net_case("curl-unlisted", curl(url("allowed.test", "/ok"), url("other.test")),
                 {"stdout_contains": ["hello from allowed.test /ok", "not in allowed_domains"]},
                 allowed_domains=["allowed.test"]),
        net_case("curl-nothing-allowed", curl(url("allowed.test")), {}, allowed_domains=[]),
        net_case("curl-connect-allowed", curl("-p", url("allowed.test", "/tunnelled")),
                 {"stdout_contains": ["hello from allowed.test /tunnelled"]},
                 disallowed_domains=["evil.test"]),
        net_case("curl-connect-disallowed", curl("-p", url("evil.test")),
                 {"exit_code": 56, "stderr_contains": ["CONNECT tunnel failed, response 403"]},
                 disallowed_domains=["evil.test"]),
        net_case("curl-ignores-the-proxy", curl("--noproxy", "*", f"http://127.0.0.1:{port}/d"),
                 {"stdout_contains": ["hello from 127.0.0.1 /d"]},
                 allowed_domains=["allowed.test"]),
        net_case("urllib-allowed", python(URLLIB, url("allowed.test", "/u")),
                 {"stdout_contains": ["200 hello from allowed.test /u"]},
                 allowed_domains=["allowed.test"]),
        net_case("urllib-disallowed", python(URLLIB, url("allowed.test"), url("evil.test")),
                 {"stdout_contains": ["status 403"]},
                 allowed_domains=["allowed.test"], disallowed_domains=["evil.test"]),
        net_case("urllib-https-refused", python(URLLIB, f"https://evil.test:{port}/"),
                 {"stdout_contains": ["refused: Tunnel connection failed: 403"]},
                 disallowed_domains=["evil.test"]),
        net_case("urllib-tunnel-allowed", python(TUNNEL, "allowed.test", str(port)),
                 {"stdout_contains": ["200 hello from allowed.test /through-the-tunnel"]},
                 allowed_domains=["allowed.test"]),
        net_case("environment", python(SHOW_ENV),
                 {"stdout_matches": [rf"(?m)^{name} http://127\.0\.0\.1:\d+$"
                                     for name in px.PROXY_VARIABLES],
                  "stdout_contains": ["NO_PROXY MISSING", "no_proxy MISSING",
                                      "AGENTIC_EVALS_PROXY_HOSTS MISSING"]},
                 disallowed_domains=["evil.test"],
                 env={"NO_PROXY": "*", "no_proxy": "*", "HTTP_PROXY": "http://127.0.0.1:9"}),
        net_case("blocked-marker-cannot-hide-a-refusal",
                 ["bash", "-c", f"echo SERVICE DOWN; curl -sS {url('evil.test')}; exit 3"],
                 {"blocked_when_stdout_contains": ["SERVICE DOWN"]},
                 disallowed_domains=["evil.test"]),
        net_case("blocked-marker-without-refusal",
                 ["bash", "-c", f"echo SERVICE DOWN; curl -sS {url('allowed.test')}; exit 3"],
                 {"blocked_when_stdout_contains": ["SERVICE DOWN"]},
                 disallowed_domains=["evil.test"]),
        net_case("times-out-inside-a-tunnel", python(HANG_IN_A_TUNNEL, str(port)),
                 {"stdout_contains": ["200 Connection established"]},
                 allowed_domains=["allowed.test"], timeout_seconds=1),
        net_case("no-rules", curl("--noproxy", "*", f"http://127.0.0.1:{port}/n"),
                 {"stdout_contains": ["hello from 127.0.0.1 /n"]}),
    ]


def validated(path: Path) -> dict[str, Any]:
    from referencing import Registry, Resource

    report: dict[str, Any] = json.loads(path.read_text())
    schema = json.loads(schema_text("report"))
    registry = Registry().with_resources([(schema["$id"], Resource.from_contents(schema))])
    name = "session_report" if "fixtures" in report else "report"
    jsonschema.Draft202012Validator(json.loads(schema_text(name)),
                                    registry=registry).validate(report)
    return report


@needs_curl
@pytest.mark.usefixtures("local_names")
@pytest.mark.parametrize("mode", MODES)
def test_real_clients_through_the_plugin(
    pytester: pytest.Pytester, origin: int, mode: list[str]
) -> None:
    data = skill_fixture()
    data["cases"] += domain_cases(origin)
    make_skill(pytester, data)
    report_path = pytester.path / "report.json"
    argv = ["--agentic-evals", "--agentic-evals-report", str(report_path), "-p",
            "no:cacheprovider", "-p", "no:randomly", *mode]
    result = pytester.runpytest(*argv)
    report = validated(report_path)
    if not mode:  # the trials ran in this process: every proxy stopped, timeouts included
        assert proxy_threads() == []
    cases = {case["name"]: case for case in report["cases"]}
    outcomes = {name: [t["outcome"] for t in case["trials"]] for name, case in cases.items()}
    assert outcomes == {
        "greets": ["PASS", "PASS"],
        "refuses-empty-name": ["PASS", "PASS"],
        "curl-allowed": ["PASS", "PASS"],
        "curl-disallowed": ["FAIL", "FAIL"],
        "curl-unlisted": ["FAIL", "FAIL"],
        "curl-nothing-allowed": ["FAIL", "FAIL"],
        "curl-connect-allowed": ["PASS", "PASS"],
        "curl-connect-disallowed": ["FAIL", "FAIL"],
        # The sandbox's network has only loopback: a direct connection fails, and the trial
        # with it.
        "curl-ignores-the-proxy": ["FAIL", "FAIL"],
        "urllib-allowed": ["PASS", "PASS"],
        "urllib-disallowed": ["FAIL", "FAIL"],
        "urllib-https-refused": ["FAIL", "FAIL"],
        "urllib-tunnel-allowed": ["PASS", "PASS"],
        "environment": ["PASS", "PASS"],
        "blocked-marker-cannot-hide-a-refusal": ["FAIL", "FAIL"],
        "blocked-marker-without-refusal": ["BLOCKED", "BLOCKED"],
        "times-out-inside-a-tunnel": ["FAIL", "FAIL"],
        "no-rules": ["FAIL", "FAIL"],
    }

    def seen(name: str) -> dict[str, Any]:
        trials = [trial["domains"] for trial in cases[name]["trials"]]
        assert all(d is not None and d["enforced"] and d["reason"] is None for d in trials)
        assert all(d["proxy"].startswith("http://127.0.0.1:") for d in trials)
        first = {k: v for k, v in trials[0].items() if k != "proxy"}
        assert all({k: v for k, v in d.items() if k != "proxy"} == first for d in trials)
        return first

    def refusals(name: str) -> list[tuple[str, str, str]]:
        return [(v["host"], v["rule"], v["method"]) for v in seen(name)["violations"]]

    allowed = seen("curl-allowed")
    assert allowed["contacted"] == ["allowed.test", "api.allowed.test"]
    assert allowed["violations"] == [] and allowed["requests"] == 2
    assert allowed["allowed"] == ["allowed.test"] and allowed["disallowed"] == []
    assert allowed["local_hosts"] == dict.fromkeys(TEST_HOSTS, "127.0.0.1")
    assert refusals("curl-disallowed") == [("evil.test", "disallowed_domains", "GET")]
    assert seen("curl-disallowed")["contacted"] == ["evil.test"]
    assert seen("curl-unlisted")["contacted"] == ["allowed.test", "other.test"]
    assert refusals("curl-unlisted") == [("other.test", "allowed_domains", "GET")]
    assert refusals("curl-nothing-allowed") == [("allowed.test", "allowed_domains", "GET")]
    assert seen("curl-connect-allowed")["contacted"] == ["allowed.test"]
    assert refusals("curl-connect-allowed") == []
    assert refusals("curl-connect-disallowed") == [("evil.test", "disallowed_domains",
                                                    "CONNECT")]
    # A client that skips the proxy is not seen, and reaches nothing either.
    ignored = seen("curl-ignores-the-proxy")
    assert ignored["contacted"] == [] and ignored["requests"] == 0
    assert {t["exit_code"] for t in cases["curl-ignores-the-proxy"]["trials"]} == {7}
    assert seen("urllib-allowed")["contacted"] == ["allowed.test"]
    assert seen("urllib-disallowed")["contacted"] == ["allowed.test", "evil.test"]
    assert refusals("urllib-disallowed") == [("evil.test", "disallowed_domains", "GET")]
    assert refusals("urllib-https-refused") == [("evil.test", "disallowed_domains", "CONNECT")]
    assert seen("urllib-tunnel-allowed")["contacted"] == ["allowed.test"]
    assert refusals("urllib-tunnel-allowed") == []
    assert seen("environment")["contacted"] == []
    assert refusals("blocked-marker-cannot-hide-a-refusal") == [
        ("evil.test", "disallowed_domains", "GET")]
    assert seen("times-out-inside-a-tunnel")["contacted"] == ["allowed.test"]
    assert cases["times-out-inside-a-tunnel"]["problems"][0] == (
        "trial 1: timed out after 1s; the process group was killed")
    # Without rules, in network mode proxy: every host allowed, and what was asked recorded.
    assert seen("no-rules")["allowed"] is None and seen("no-rules")["contacted"] == []
    assert seen("greets")["violations"] == [] and seen("greets")["disallowed"] == []
    assert {t["isolation"]["network"] for c in cases.values() for t in c["trials"]} == {"proxy"}

    assert cases["curl-disallowed"]["problems"] == [  # the same in both trials: listed once
        "trial 1: disallowed_domains: contacted disallowed domain evil.test "
        "(matches 'evil.test'); the proxy refused it",
    ]
    assert any("allowed_domains: contacted other.test, which is not in allowed_domains"
               in problem for problem in cases["curl-unlisted"]["problems"])
    assert not any(p.startswith("trial 1: blocked") for p in
                   cases["blocked-marker-cannot-hide-a-refusal"]["problems"])
    assert not cases["curl-disallowed"]["infrastructure_failure"]
    result.stdout.fnmatch_lines(["*contacted disallowed domain evil.test*"])


def runnable_skill(skill: Skill, port: int, *, disallowed_required: bool) -> Path:
    data = skill_fixture()
    data["cases"] += [
        {**net_case("fetches-allowed", curl("-f", f"http://allowed.test:{port}/"),
                    {"stdout_contains": ["hello from allowed.test"]},
                    allowed_domains=["allowed.test"]), "required": True},
        {**net_case("fetches-disallowed", curl(f"http://evil.test:{port}/"), {},
                    disallowed_domains=["evil.test"]), "required": disallowed_required},
    ]
    return skill.write(data)


@needs_curl
@pytest.mark.usefixtures("local_names")
def test_the_cli_exits_1_on_a_refused_host_and_0_when_none(skill: Skill, origin: int) -> None:
    fixture = runnable_skill(skill, origin, disallowed_required=True)
    output = skill.root / "report.json"
    failing = run_cli("run", str(fixture), "--output", str(output), "--", "-n", "2",
                      cwd=skill.root)
    assert failing.returncode == 1, failing.stderr
    report = validated(output)
    cases = {case["name"]: case for case in report["cases"]}
    assert report["readiness"] != "READY"
    assert cases["fetches-disallowed"]["outcome"] == "FAIL"
    assert cases["fetches-allowed"]["outcome"] == "PASS"
    assert json.loads(failing.stdout)["readiness"] == report["readiness"]

    fixture = runnable_skill(skill, origin, disallowed_required=False)
    # Not required, and never contacting evil.test: the same fixture is READY without it.
    data = json.loads(fixture.read_text())
    data["cases"][-1]["command"] = curl(f"http://allowed.test:{origin}/")
    skill.write(data)
    passing = run_cli("run", str(fixture), "--output", str(output), cwd=skill.root)
    assert passing.returncode == 0, passing.stderr
    report = validated(output)
    assert report["readiness"] == "READY"
    assert [t["domains"]["contacted"] for t in report["cases"][-1]["trials"]] == [
        ["allowed.test"], ["allowed.test"]]


@needs_curl
def test_a_proxy_that_cannot_start_fails_the_trial_without_running_it(
    skill: Skill, origin: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(px.LOCAL_HOSTS_VARIABLE, "allowed.test=192.0.2.1")  # not loopback
    ran = tmp_path / "ran"
    data = skill_fixture()
    data["cases"].append(net_case(
        "guarded", ["bash", "-c", f"touch {ran}; curl -sS http://allowed.test:{origin}/"],
        {}, allowed_domains=["allowed.test"], required=True))
    output = skill.root / "report.json"
    result = run_cli("run", str(skill.write(data)), "--output", str(output), cwd=skill.root)
    assert result.returncode == 1, result.stderr
    case = validated(output)["cases"][-1]
    assert case["outcome"] == "FAIL" and case["infrastructure_failure"]
    for trial in case["trials"]:
        assert trial["exit_code"] is None and trial["infrastructure"]
        assert trial["domains"]["enforced"] is False
        assert "not a loopback address" in trial["domains"]["reason"]
        assert trial["problems"] == [f"could not start the domain proxy: "
                                     f"{trial['domains']['reason'].split(': ', 1)[1]}"]
    assert not ran.exists()  # the command never ran unguarded
