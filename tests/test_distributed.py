"""Trials spread over xdist's own distribution, on local and remote workers, judged as a serial run.

Every mode runs the same fixture in a real pytest session and must give the verdicts, the
per-trial outcomes, the readiness, the exit status and the JSON report of a serial run, and
the expected ones, written out below:

- ``-n 2 --dist load`` and ``--tx 2*popen --dist load``: local worker processes;
- ``--tx socket=127.0.0.1:PORT//id=sock1//chdir=...``: one worker inside an execnet socket
  server on loopback, started by the test, that stands for another host: its own checkout of
  the project at another path, and its own temporary directory (TMPDIR), so that the trials it
  ran are recognisably its own;
- the same socket worker beside a local ``popen`` worker: one run over two "hosts";
- ``--px id=hostA//socket=... --tx 2*popen//via=hostA``: two workers on the "remote host",
  started there through one socket server.

Two things only a remote worker shows are checked on the way: the controller judges with its
own copy of each fixture (the report names ``fixtures/agentic_eval.json``, not the remote
checkout's path, and a remote copy that differs fails the gate), and the worker marks its run
directory on the remote host in use (the ``run-dir-held`` case).
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import Skill, child_env, skill_fixture

TRIALS = 3

# Finds the run directory above the trial's working directory and checks that some process
# holds its in-use marker, as the runner does for the whole run so that a run starting on the
# same host meanwhile does not prune it (on a remote host, only the worker can).
RUN_DIR_HELD = """../run.sh x || exit 1
d=$PWD
until [ -z "$d" ] || [ "${d##*/}" = "run-$AGENTIC_EVALS_RUN_ID" ]; do d=${d%/*}; done
test -e "$d/.in-use" || { echo "no in-use marker in '$d'"; exit 1; }
PYTHON -c 'import fcntl, sys; fcntl.flock(open(sys.argv[1]), fcntl.LOCK_EX | fcntl.LOCK_NB)' \\
  "$d/.in-use" 2>/dev/null && { echo "nothing holds $d"; exit 1; }
echo held
"""


def distributed_fixture() -> dict[str, Any]:
    """Cases that pass, fail, are blocked, fail on one trial only, and probe the run dir."""
    data = skill_fixture(trials=TRIALS)
    data["cases"] += [
        {"name": "wrong-greeting", "type": "negative", "command": ["bash", "../run.sh", "Ada"],
         "expected": {"exit_code": 0, "stdout_contains": ["goodbye"]}},
        {"name": "upstream-down", "type": "adversarial",
         "command": ["bash", "../run.sh", "SERVICE DOWN"],
         "expected": {"exit_code": 3, "blocked_when_stdout_contains": ["SERVICE DOWN"]}},
        {"name": "fails-on-trial-2", "type": "adversarial",
         "command": ["bash", "-c", '../run.sh x; test "$AGENTIC_EVALS_TRIAL" != 2'],
         "expected": {"exit_code": 0, "stdout_contains": ["hello, x"]}},
        # Looks at the runner's own run directory, which the sandbox hides from trials.
        {"name": "run-dir-held", "type": "adversarial", "sandbox": "off",
         "command": ["bash", "-c", RUN_DIR_HELD.replace("PYTHON", sys.executable)],
         "expected": {"exit_code": 0, "stdout_contains": ["held"]}},
    ]
    return data


# What every mode must find, written out, so that modes agreeing on a wrong answer still fail.
EXPECTED_TRIALS = {
    "greets": ["PASS"] * TRIALS,
    "refuses-empty-name": ["PASS"] * TRIALS,
    "wrong-greeting": ["FAIL"] * TRIALS,
    "upstream-down": ["BLOCKED"] * TRIALS,
    "fails-on-trial-2": ["PASS", "FAIL", "PASS"],
    "run-dir-held": ["PASS"] * TRIALS,
}
EXPECTED_OUTCOMES = {
    "greets": "PASS", "refuses-empty-name": "PASS", "wrong-greeting": "FAIL",
    "upstream-down": "BLOCKED", "fails-on-trial-2": "FAIL", "run-dir-held": "PASS",
}


# -- an execnet socket server on loopback, standing for another host -----------------------------


@dataclass
class RemoteHost:
    port: int
    checkout: Path
    """The remote host's copy of the project, at another path than the controller's."""
    tmp: Path
    """The remote host's temporary directory: its run directories and workspaces are here."""
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def socketserver_script() -> Path:
    spec = importlib.util.find_spec("execnet.script.socketserver")
    if spec is None or spec.origin is None or not Path(spec.origin).is_file():
        pytest.skip("execnet's socket server script (execnet/script/socketserver.py) is not "
                    "installed with this execnet")
    return Path(spec.origin)


@pytest.fixture
def remote_host(tmp_path: Path) -> Iterator[RemoteHost]:
    """A socket server on 127.0.0.1 and an ephemeral port, run by this Python (the venv's).

    It runs in a session of its own and is killed with everything it started, whatever the
    outcome of the test.
    """
    script = socketserver_script()
    host = RemoteHost(port=0, checkout=tmp_path / "remote-host" / "checkout",
                      tmp=tmp_path / "remote-host" / "tmp", log=tmp_path / "socketserver.log")
    host.tmp.mkdir(parents=True)
    env = child_env()
    env["TMPDIR"] = str(host.tmp)
    with open(host.log, "wb") as log:  # a file, not a pipe: the server writes on and on
        server = subprocess.Popen(
            [sys.executable, "-u", str(script), "127.0.0.1:0"], stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=tmp_path,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            # "socket_readline_exec_server-1.2 Entering Accept loop ('127.0.0.1', 40123)"
            found = re.search(r"Entering Accept loop \('127\.0\.0\.1', (\d+)\)", host.log_text())
            if found:
                host.port = int(found.group(1))
                break
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the socket server did not start:\n{host.log_text()}")
            time.sleep(0.02)
        yield host
    finally:
        with contextlib.suppress(ProcessLookupError):  # gone already
            os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)


# -- running a session and comparing reports ----------------------------------------------------


def make_project(root: Path) -> Path:
    """A checkout: a pytest.ini (the rootdir), the skill, and its fixture."""
    Skill(root).write(distributed_fixture())
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = fixtures\n")
    return root


STALE = {"schema": "agentic_evals.report.v2", "stale": "a report from an earlier run"}


def run(project: Path, *args: str) -> tuple[pytest.RunResult, dict[str, Any] | None]:
    """A real pytest session in ``project``, as a user starts it; with its JSON report, or
    None when the session wrote none.

    The report of an earlier run is still there, as it would be for a user. Paths are given
    as ``--option=PATH``: xdist refuses, for remote workers, a separate argument that names an
    existing local file ("arg report.json not relative to an rsync root").
    """
    report = project / "report.json"
    report.write_text(json.dumps(STALE))
    basetemp = project.parent / f"basetemp-{project.name}"
    env = child_env()
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--agentic-evals", f"--agentic-evals-report={report}",
         "-p", "no:cacheprovider", "-p", "no:randomly", f"--basetemp={basetemp}", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )
    result = pytest.RunResult(done.returncode, done.stdout.splitlines(),
                              done.stderr.splitlines(), time.monotonic() - started)
    written = json.loads(report.read_text())
    return result, None if written == STALE else written


# Fields that legitimately differ between two runs, whatever the mode:
# - run_id: every session draws a new one (workers take the controller's);
# - timestamp: when the report was written;
# - duration_ms of each trial: wall-clock time;
# - random_seed of each trial: drawn afresh for every trial, by design;
# - workspace root and cwd, and output_dir, of each trial: they lie in the run directory of the
#   host that ran the trial, under that host's temporary directory and named after the run id
#   (a remote worker's trials are under the remote host's TMPDIR; they are checked apart);
# - workspace overlay of each trial: the skill directory of the checkout the trial ran in.
# No report field names the xdist worker (gw0, gw1...) that ran a trial; nothing else is
# normalised, so every verdict, problem text, stream excerpt and summary must be identical.
NORMALISED_REPORT_FIELDS = ("run_id", "timestamp")
NORMALISED_TRIAL_FIELDS = ("duration_ms", "random_seed", "output_dir")
NORMALISED_WORKSPACE_FIELDS = ("root", "cwd", "overlay")


def normalised(report: dict[str, Any]) -> dict[str, Any]:
    report = copy.deepcopy(report)
    for field in NORMALISED_REPORT_FIELDS:
        assert field in report, field
        report[field] = f"<{field}>"
    for case in report["cases"]:
        for trial in case["trials"]:
            for field in NORMALISED_TRIAL_FIELDS:
                if field in trial:
                    trial[field] = f"<{field}>"
            for field in NORMALISED_WORKSPACE_FIELDS:
                if field in trial.get("workspace", {}):
                    trial["workspace"][field] = f"<{field}>"
    return report


def workspace_roots(report: dict[str, Any]) -> list[Path]:
    return [Path(trial["workspace"]["root"])
            for case in report["cases"] for trial in case["trials"] if "workspace" in trial]


def check_verdicts(result: pytest.RunResult, report: dict[str, Any]) -> None:
    """The answers themselves, in any mode."""
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text
    result.assert_outcomes(passed=11, failed=4, skipped=3)
    assert report["schema"] == "agentic_evals.report.v2"
    assert report["fixture"] == "fixtures/agentic_eval.json"
    assert report["selection"] == "full"
    assert report["readiness"] == "USABLE_WITH_GAPS"
    assert {case["name"]: case["outcome"] for case in report["cases"]} == EXPECTED_OUTCOMES
    trials = {case["name"]: [t["trial"] for t in case["trials"]] for case in report["cases"]}
    assert trials == {name: list(range(1, TRIALS + 1)) for name in EXPECTED_OUTCOMES}
    outcomes = {case["name"]: [t["outcome"] for t in case["trials"]] for case in report["cases"]}
    assert outcomes == EXPECTED_TRIALS, outcomes
    assert report["summary"]["flaky"] == 1
    assert report["gate"]["passed"] is False
    assert report["gate"]["reason"] == (
        "fixtures/agentic_eval.json: USABLE_WITH_GAPS: required case(s) failed: "
        "wrong-greeting, fails-on-trial-2; required case(s) blocked: upstream-down"
    )
    result.stdout.fnmatch_lines(["*agentic-evals: session failed, not READY:*"])


def local_temp() -> Path:
    return Path(tempfile.gettempdir()).resolve()


def under(path: Path, root: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve())


# Each mode: its extra pytest arguments, given the remote host when it needs one.
Mode = Callable[[RemoteHost], list[str]]


def socket_tx(host: RemoteHost, worker_id: str = "sock1") -> str:
    return f"socket=127.0.0.1:{host.port}//id={worker_id}//chdir={host.checkout}"


LOCAL_MODES: dict[str, list[str]] = {
    "n2-load": ["-n", "2", "--dist", "load"],
    "tx-2-popen": ["--tx", "2*popen", "--dist", "load"],
}
REMOTE_MODES: dict[str, Mode] = {
    # One worker, on the remote host: every trial runs there.
    "socket": lambda host: ["--tx", socket_tx(host), "--dist", "load"],
    # One worker on the remote host and one local: one run over two hosts.
    "socket-and-popen": lambda host: ["--tx", socket_tx(host), "--tx", "popen//id=local1",
                                      "--dist", "load"],
    # Two workers on the remote host, started there through one socket server.
    "two-via-socket": lambda host: [
        "--px", f"id=hostA//socket=127.0.0.1:{host.port}",
        "--tx", f"2*popen//via=hostA//chdir={host.checkout}", "--dist", "load",
    ],
}


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> tuple[pytest.RunResult, dict[str, Any]]:
    """The reference: the fixture run serially, once for the module."""
    result, report = run(make_project(tmp_path_factory.mktemp("serial") / "checkout"))
    assert report is not None, result.stdout.str()
    return result, report


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The controller's checkout."""
    return make_project(tmp_path / "controller" / "checkout")


def test_a_serial_run_gives_the_expected_verdicts(
    serial: tuple[pytest.RunResult, dict[str, Any]],
) -> None:
    result, report = serial
    check_verdicts(result, report)
    assert all(under(root, local_temp()) for root in workspace_roots(report))


@pytest.mark.parametrize("mode", LOCAL_MODES)
def test_local_workers_judge_as_a_serial_run(
    serial: tuple[pytest.RunResult, dict[str, Any]], project: Path, mode: str
) -> None:
    result, report = run(project, *LOCAL_MODES[mode])
    assert report is not None, result.stdout.str()
    check_verdicts(result, report)
    assert normalised(report) == normalised(serial[1])
    result.stdout.fnmatch_lines(["*2 workers [[]18 items]*"])
    assert all(under(root, local_temp()) for root in workspace_roots(report))


@pytest.mark.parametrize("mode", REMOTE_MODES)
def test_remote_workers_judge_as_a_serial_run(
    serial: tuple[pytest.RunResult, dict[str, Any]], project: Path, remote_host: RemoteHost,
    mode: str,
) -> None:
    shutil.copytree(project, remote_host.checkout)
    result, report = run(project, *REMOTE_MODES[mode](remote_host))
    assert report is not None, result.stdout.str() + remote_host.log_text()
    check_verdicts(result, report)
    assert normalised(report) == normalised(serial[1])
    # The trials ran on the "remote host", in its temporary directory, unless a local worker
    # took them; a checkout is never where a trial runs.
    roots = workspace_roots(report)
    remote = [root for root in roots if under(root, remote_host.tmp)]
    local = [root for root in roots
             if under(root, local_temp()) and not under(root, remote_host.tmp)]
    assert len(roots) == 6 * TRIALS
    if mode == "socket-and-popen":
        assert remote and local and len(remote) + len(local) == len(roots), roots
        result.stdout.fnmatch_lines(["*2 workers [[]18 items]*"])
    else:
        assert remote == roots


def test_a_remote_checkout_with_another_fixture_fails_the_gate(
    project: Path, remote_host: RemoteHost
) -> None:
    """The controller judges with its own copy of the fixture, so the copies must agree."""
    shutil.copytree(project, remote_host.checkout)
    data = distributed_fixture()
    data["cases"][2]["expected"]["stdout_contains"] = ["hello"]  # passes on the remote host
    (remote_host.checkout / "fixtures" / "agentic_eval.json").write_text(json.dumps(data))
    # Without --dist (or -n), xdist ignores --tx and the session runs serially.
    result, report = run(project, "--tx", socket_tx(remote_host), "--dist", "load")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*fixtures/agentic_eval.json: the workers ran another version of this fixture*"])
    assert report is None  # nothing is judged against a fixture other than the one that ran


def test_dist_each_is_refused(project: Path) -> None:
    # Every worker would run every trial; the report could only keep one result per trial.
    result, report = run(project, "--tx", "2*popen", "--dist", "each")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--dist each runs every trial on every worker*"])
    assert report is None
