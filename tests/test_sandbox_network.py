"""The sandbox's network: modes proxy (default), none and host, with the real bwrap.

A server runs on the host's loopback, outside every trial's network namespace. In mode proxy
a trial reaches it only through its domain proxy (outside, accepting on a port of the trial's
own loopback): a raw socket or ``curl --noproxy '*'`` fails, and every spelling of a refused
address and every Host header that disagrees with its target is refused. The names the trials
ask for are mapped to that server with AGENTIC_EVALS_PROXY_HOSTS.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_agentic_evals.execution.sandbox import PROXY_PORT, available_bwrap
from pytest_agentic_evals.expectations import proxy as px

from conftest import MODES, hello_origin, make_skill, skill_fixture

BWRAP = available_bwrap()
CURL = shutil.which("curl")
pytestmark = [
    pytest.mark.skipif(BWRAP.problem is not None,
                       reason=f"no sandbox on this machine: {BWRAP.problem}"),
    pytest.mark.skipif(CURL is None, reason="curl is not installed"),
]

SPELLINGS = ("127.1", "2130706433", "0x7f000001", "127.000.000.001", "[::ffff:127.0.0.1]",
             "0177.0.0.1")

# Sends raw proxy requests, as a client that spells hosts its own way would: prints the status
# line the proxy answered for each.
RAW = """
import os, socket, sys, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
def ask(data, then=b""):
    with socket.create_connection((proxy.hostname, proxy.port), timeout=10) as s:
        s.sendall(data)
        answer = s.recv(4096)
        if then and answer.startswith(b"HTTP/1.1 200"):
            s.sendall(then)
            answer = s.recv(4096)
        print(answer.split(b"\\r\\n")[0].decode(), flush=True)
port = sys.argv[1]
for spelling in sys.argv[2:]:
    ask(f"GET http://{spelling}:{port}/ HTTP/1.1\\r\\nHost: {spelling}\\r\\n\\r\\n".encode())
    ask(f"CONNECT {spelling}:{port} HTTP/1.1\\r\\n\\r\\n".encode())
"""

MISMATCH = """
import os, socket, sys, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
port = sys.argv[1]
def ask(data, then=b""):
    with socket.create_connection((proxy.hostname, proxy.port), timeout=10) as s:
        s.sendall(data)
        answer = s.recv(4096)
        if then:
            s.sendall(then)
            answer = s.recv(4096)
        print(answer.split(b"\\r\\n")[0].decode(), flush=True)
ask(f"GET http://allowed.test:{port}/ HTTP/1.1\\r\\nHost: evil.test\\r\\n\\r\\n".encode())
ask(f"CONNECT allowed.test:{port} HTTP/1.1\\r\\n\\r\\n".encode(),
    b"GET / HTTP/1.1\\r\\nHost: evil.test\\r\\n\\r\\n")
"""

DIRECT = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()
    print("reached")
except OSError as exc:
    print("unreachable:", exc)
    sys.exit(7)
"""


@pytest.fixture
def origin(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    monkeypatch.setenv(px.LOCAL_HOSTS_VARIABLE, "allowed.test=127.0.0.1,evil.test=127.0.0.1")
    with hello_origin() as port:
        yield port


def case(name: str, command: list[str], expected: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return {"name": name, "type": "positive", "required": False, "command": command,
            "expected": {"exit_code": 0, **expected}, **keys}


def curl(*args: str) -> list[str]:
    return [CURL or "curl", "-sS", "--max-time", "10", *args]


def network_cases(port: int) -> list[dict[str, Any]]:
    here = f"http://127.0.0.1:{port}/"
    allowed = {"allowed_domains": ["allowed.test"]}
    return [
        case("raw-socket", [sys.executable, "-c", DIRECT, str(port)], {}, **allowed),
        case("curl-noproxy", curl("--noproxy", "*", here), {}, **allowed),
        case("ip-spellings", [sys.executable, "-c", RAW, str(port), *SPELLINGS], {},
             disallowed_domains=["127.0.0.1"]),
        case("host-mismatch", [sys.executable, "-c", MISMATCH, str(port)], {}, **allowed),
        case("allowed-http-and-connect",
             ["bash", "-c", f"{' '.join(curl())} http://allowed.test:{port}/ && "
                            f"{' '.join(curl())} -p http://allowed.test:{port}/"],
             {"stdout_contains": ["hello from allowed.test"]}, **allowed),
        case("none-reaches-nothing",
             ["bash", "-c", f"{' '.join(curl())} --noproxy '*' {here} && exit 1; "
                            f"{' '.join(curl())} -x http://127.0.0.1:{PROXY_PORT} "
                            f"http://allowed.test:{port}/ && exit 1; echo cut off"],
             {"stdout_contains": ["cut off"]}, network="none", **allowed),
        case("host-keeps-the-host-network", curl("--noproxy", "*", here),
             {"stdout_contains": ["hello from 127.0.0.1"]}, network="host", **allowed),
        # Without rules every host is allowed, but not the machine running the evaluation:
        # the proxy runs there, and its loopback is not the trial's.
        case("no-rules-host-loopback",
             ["bash", "-c", f"{' '.join(curl())} {here}; "
                            f"{' '.join(curl())} http://localhost:{port}/"],
             {"stdout_contains": ["hello from"]}),
        case("off-is-not-enforced", curl(f"http://allowed.test:{port}/"),
             {"stdout_contains": ["hello from allowed.test"]}, sandbox="off", **allowed),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_network_modes_through_the_plugin(
    pytester: pytest.Pytester, origin: int, mode: list[str]
) -> None:
    data = skill_fixture()
    data["cases"] += network_cases(origin)
    make_skill(pytester, data)
    report_path = pytester.path / "report.json"
    argv = ["--agentic-evals", "--agentic-evals-report", str(report_path), "-p",
            "no:cacheprovider", *mode]
    result = pytester.runpytest(*argv)
    assert result.ret == 0, result.stdout.str()  # the failing cases are optional
    report = json.loads(report_path.read_text())
    cases = {c["name"]: c for c in report["cases"]}

    def trials(name: str) -> list[dict[str, Any]]:
        return list(cases[name]["trials"])

    def outcomes(name: str) -> set[str]:
        return {t["outcome"] for t in trials(name)}

    for name in ("raw-socket", "curl-noproxy"):
        assert outcomes(name) == {"FAIL"}, cases[name]["problems"]
        assert {t["exit_code"] for t in trials(name)} == {7}
        assert all(t["domains"]["enforced"] and t["domains"]["contacted"] == []
                   for t in trials(name))
    assert "unreachable" in trials("raw-socket")[0]["stdout"]["head"]

    spelled = trials("ip-spellings")
    assert outcomes("ip-spellings") == {"FAIL"}
    for trial in spelled:
        said = trial["stdout"]["head"]
        assert said.count("403 Forbidden") == 2 * len(SPELLINGS) and "200" not in said, said
        assert trial["domains"]["contacted"] == ["127.0.0.1"]
        assert trial["domains"]["violations"][0]["count"] == 2 * len(SPELLINGS)

    assert outcomes("host-mismatch") == {"FAIL"}
    for trial in trials("host-mismatch"):
        assert trial["stdout"]["head"].count("403 Forbidden") == 2, trial["stdout"]["head"]
        assert [m["host_header"] for m in trial["domains"]["host_mismatches"]] == [
            "evil.test", "evil.test"]
    assert any("said Host: 'evil.test'; the proxy refused it" in problem
               for problem in cases["host-mismatch"]["problems"])

    assert outcomes("allowed-http-and-connect") == {"PASS"}
    for trial in trials("allowed-http-and-connect"):
        assert trial["isolation"]["network"] == "proxy" and trial["domains"]["enforced"]
        assert trial["domains"]["proxy"] == f"http://127.0.0.1:{PROXY_PORT}"
        assert "reaches nothing outside the sandbox" in trial["domains"]["note"]
        assert trial["stdout"]["head"].count("hello from allowed.test") == 2

    assert outcomes("none-reaches-nothing") == {"PASS"}
    for trial in trials("none-reaches-nothing"):
        assert trial["isolation"]["network"] == "none"
        assert trial["domains"]["enforced"] and trial["domains"]["proxy"] is None
        assert trial["domains"]["reason"] is None and trial["domains"]["contacted"] == []

    assert outcomes("host-keeps-the-host-network") == {"PASS"}
    for trial in trials("host-keeps-the-host-network"):
        assert trial["isolation"] == {**trial["isolation"], "sandbox": "bwrap",
                                      "network": "host"}
        assert trial["domains"]["enforced"] is False
        assert trial["domains"]["reason"].startswith("network host:")

    assert outcomes("no-rules-host-loopback") == {"FAIL"}
    for trial in trials("no-rules-host-loopback"):
        said = trial["stdout"]["head"]
        assert "hello" not in said and said.count("is a loopback address") == 2, said
        assert trial["domains"]["allowed"] is None and trial["domains"]["enforced"]
        assert [(v["host"], v["rule"]) for v in trial["domains"]["violations"]] == [
            ("127.0.0.1", "local_address"), ("localhost", "local_address")]
        assert trial["domains"]["violations"][1]["entry"] in ("127.0.0.1", "::1")

    assert outcomes("off-is-not-enforced") == {"PASS"}
    for trial in trials("off-is-not-enforced"):
        assert trial["isolation"]["sandbox"] == "none"
        assert trial["domains"]["enforced"] is False
        assert trial["domains"]["reason"].startswith("not sandboxed:")
        assert "connects directly" in trial["domains"]["note"]
        assert trial["domains"]["contacted"] == ["allowed.test"]

    # Nothing of the runner's bridge is a process the trial left behind.
    assert all(t["left_behind_processes"] == [] for c in cases.values() for t in c["trials"])
