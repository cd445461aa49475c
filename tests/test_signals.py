"""SIGTERM and SIGHUP end a run as Ctrl-C does, and nothing of a trial outlives its runner.

What a CI cancel, ``timeout`` or a closed terminal sends, sent for real: to pytest, to its
process group, to ``agentic-evals run`` alone and to its group, serially and with xdist, with
the sandbox and without. Each time: the trial under way (and the daemon it started) is gone,
checked by scanning /proc here; the report is written, marked interrupted and not READY; the
exit status is non-zero. A runner killed with SIGKILL takes its trials with it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.execution.sandbox import available_bwrap

from conftest import alive_with, child_env, make_skill, marker, skill_fixture

NO_HANG_SECONDS = 120.0
AGENTIC_EVALS = str(Path(sys.executable).parent / "agentic-evals")
SANDBOX = available_bwrap().problem is None
needs_sandbox = pytest.mark.skipif(not SANDBOX, reason="no sandbox on this machine")


def sleeping(m: str) -> list[int]:
    """The live processes that are exactly ``sleep M`` (not the shells that start them)."""
    found = []
    for pid in alive_with(f"sleep {m}"):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == f"sleep\0{m}\0".encode():
                found.append(pid)
        except OSError:
            continue
    return found


def wait_for(condition: Any, what: str, process: subprocess.Popen[Any] | None = None) -> None:
    deadline = time.monotonic() + NO_HANG_SECONDS
    while not condition():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"{what}: the run ended first: {process.communicate()}")
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def gone(m: str) -> None:
    """Nothing with ``m`` on its command line is alive, or soon (a killed process's parent may
    take a moment to reap it)."""
    deadline = time.monotonic() + 10
    while alive_with(m) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive_with(m) == [], "left running"


def sleeping_skill(pytester: pytest.Pytester, m: str, sandbox: str) -> Path:
    """A fixture whose case "sleeps" starts a daemon that escapes its group, then sleeps."""
    data = skill_fixture(sandbox=sandbox)
    data["cases"].append({
        "name": "sleeps", "type": "positive", "timeout_seconds": 600,
        "command": ["bash", "-c", f"../run.sh x; setsid -f sleep {m}; sleep {m}"],
        "expected": {"exit_code": 0}})
    return make_skill(pytester, data)


def environment() -> dict[str, str]:
    return child_env()


def default_signals() -> None:
    """For preexec_fn: the signals a terminal's foreground job starts with."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def interrupted(report: dict[str, Any]) -> None:
    for fixture in report.get("fixtures", [report]):
        assert fixture["interrupted"] is True
        assert fixture["readiness"] != "READY"


# -- pytest --agentic-evals ------------------------------------------------------------------

PYTEST_CASES = [
    pytest.param(signal.SIGTERM, "pytest", [], "auto", id="term-pytest-serial"),
    pytest.param(signal.SIGTERM, "group", [], "auto", id="term-group-serial"),
    pytest.param(signal.SIGHUP, "pytest", [], "auto", id="hup-pytest-serial"),
    pytest.param(signal.SIGTERM, "group", [], "off", id="term-group-serial-unsandboxed"),
    pytest.param(signal.SIGTERM, "pytest", ["-n", "2"], "auto", id="term-pytest-xdist"),
    pytest.param(signal.SIGTERM, "group", ["-n", "2"], "off", id="term-group-xdist-unsandboxed"),
    pytest.param(signal.SIGHUP, "group", ["-n", "2"], "auto", id="hup-group-xdist"),
]


@pytest.mark.parametrize(("sig", "target", "mode", "sandbox"), PYTEST_CASES)
def test_a_terminated_session_tears_its_trials_down_and_reports_interrupted(
    pytester: pytest.Pytester, sig: int, target: str, mode: list[str], sandbox: str
) -> None:
    if sandbox == "auto" and not SANDBOX:
        pytest.skip("no sandbox on this machine")
    m = marker()
    sleeping_skill(pytester, m, sandbox)
    report = pytester.path / "report.json"
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--agentic-evals", "--agentic-evals-report",
         str(report), "-p", "no:cacheprovider", *mode],
        cwd=pytester.path, env=environment(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=default_signals)
    try:
        # The daemon and the trial's own sleep: the trial is under way.
        wait_for(lambda: len(sleeping(m)) >= 2, "the trial never started", session)
        if target == "group":
            os.killpg(session.pid, sig)
        else:
            session.send_signal(sig)
        output = session.communicate(timeout=NO_HANG_SECONDS)[0].decode()
    finally:
        if session.poll() is None:
            os.killpg(session.pid, signal.SIGKILL)
    assert session.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "INTERNALERROR" not in output
    gone(m)
    data = json.loads(report.read_text())
    interrupted(data)
    fixture = data.get("fixtures", [data])[0]
    assert {case["name"] for case in fixture["cases"]} >= {"greets", "sleeps"}
    problems = [p for case in fixture["cases"] for t in case["trials"] for p in t["problems"]]
    assert not any("crashed" in p for p in problems), problems


def signalled_from_inside(pytester: pytest.Pytester, conftest: str) -> tuple[dict[str, Any], str]:
    """Run an xdist session whose conftest sends the signal itself; its report and output,
    once it ended on its own (or failed to, within NO_HANG_SECONDS)."""
    pytester.makeconftest(conftest)
    report = pytester.path / "report.json"
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--agentic-evals", "--agentic-evals-report",
         str(report), "-p", "no:cacheprovider", "-p", "no:randomly", "-n", "2"],
        cwd=pytester.path, env=environment(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=default_signals)
    try:
        output = session.communicate(timeout=NO_HANG_SECONDS)[0].decode()
    finally:
        if session.poll() is None:
            os.killpg(session.pid, signal.SIGKILL)
    assert (pytester.path / "signalled").exists()
    assert session.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "INTERNALERROR" not in output
    data = json.loads(report.read_text())
    interrupted(data)
    return data, output


# A worker's conftest signals the whole process group while that worker is still starting:
# before the plugin handles the signal there. Only the first worker to start sends it.
SIGNAL_WHILE_STARTING = textwrap.dedent("""
    import os, signal

    def pytest_configure(config):
        if not hasattr(config, "workerinput"):
            return
        try:
            os.close(os.open("signalled", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os.killpg(0, signal.SIG{name})
""")


@pytest.mark.parametrize("name", ["TERM", "HUP"])
def test_a_signal_while_the_workers_start_ends_the_session_before_any_trial(
    pytester: pytest.Pytester, name: str
) -> None:
    """xdist replaces a worker that died, and a replacement would run every trial: a worker
    still starting takes the signal when it can handle it, and the controller starts no
    replacement. The session ends interrupted, at once, and runs no trial."""
    m = marker()
    sleeping_skill(pytester, m, "auto" if SANDBOX else "off")
    try:
        data, output = signalled_from_inside(pytester, SIGNAL_WHILE_STARTING.format(name=name))
    finally:
        for pid in alive_with(f"sleep {m}"):
            os.kill(pid, signal.SIGKILL)
    assert sleeping(m) == []
    ran = [t for case in data["cases"] for t in case["trials"] if t["outcome"] == "PASS"]
    assert ran == [], output


# A plugin (or a finalizer) swallows the KeyboardInterrupt the signal raised in one worker:
# after that worker's first trial, it signals the group and catches what the signal raises.
SWALLOWED = textwrap.dedent("""
    import os, signal, time

    def pytest_runtest_logfinish(nodeid):
        if not os.environ.get("PYTEST_XDIST_WORKER"):
            return
        try:
            os.close(os.open("signalled", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        try:
            os.killpg(0, signal.SIGHUP)
            time.sleep(30)
        except KeyboardInterrupt:
            pass
""")


def test_a_worker_that_lost_its_interruption_starts_no_other_trial(
    pytester: pytest.Pytester
) -> None:
    """The signal is recorded before it is raised: a worker whose KeyboardInterrupt was lost
    starts no other trial (and xdist never sees a worker end as if done while it held one)."""
    make_skill(pytester, skill_fixture(trials=20))
    data, output = signalled_from_inside(pytester, SWALLOWED)
    # 40 trials: each worker ends with the trial it was running when the signal came.
    ran = [t for case in data["cases"] for t in case["trials"] if t["outcome"] == "PASS"]
    assert 1 <= len(ran) <= 4, output


# -- agentic-evals run -----------------------------------------------------------------------

CLI_CASES = [
    pytest.param(signal.SIGTERM, "cli", [], id="term-cli"),
    pytest.param(signal.SIGTERM, "group", [], id="term-group"),
    pytest.param(signal.SIGHUP, "cli", [], id="hup-cli"),
    pytest.param(signal.SIGTERM, "cli", ["--", "-n", "2"], id="term-cli-xdist"),
    pytest.param(signal.SIGINT, "cli", [], id="int-cli"),  # pytest ran every trial to its end
    # Ctrl-C pressed twice: the second interrupted pytest's teardown (a traceback, no report).
    pytest.param(signal.SIGINT, "group-twice", [], id="int-group-twice"),
]


@pytest.mark.parametrize(("sig", "target", "mode"), CLI_CASES)
def test_a_terminated_cli_run_reaches_pytest_and_reports_interrupted(
    pytester: pytest.Pytester, tmp_path: Path, sig: int, target: str, mode: list[str]
) -> None:
    m = marker()
    fixture = sleeping_skill(pytester, m, "auto" if SANDBOX else "off")
    output = tmp_path / "report.json"
    cli = subprocess.Popen(
        [AGENTIC_EVALS, "run", str(fixture), "--output", str(output), *mode],
        cwd=pytester.path,
        env=environment(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True, preexec_fn=default_signals)
    try:
        wait_for(lambda: len(sleeping(m)) >= 2, "the trial never started", cli)
        if target == "group":
            os.killpg(cli.pid, sig)
        elif target == "group-twice":
            os.killpg(cli.pid, sig)
            time.sleep(0.05)
            os.killpg(cli.pid, sig)
        else:
            cli.send_signal(sig)  # the CLI alone: pytest hears of it only through the CLI
        stdout, stderr = cli.communicate(timeout=NO_HANG_SECONDS)
    finally:
        if cli.poll() is None:
            os.killpg(cli.pid, signal.SIGKILL)
    assert cli.returncode == 130, stderr.decode()
    assert "Traceback" not in stderr.decode()
    gone(m)
    assert alive_with(str(fixture)) == []  # pytest itself is gone too
    printed = json.loads(stdout)
    assert json.loads(output.read_text()) == printed
    interrupted(printed)


def test_pytest_and_its_trials_die_with_a_killed_cli(pytester: pytest.Pytester) -> None:
    m = marker()
    fixture = sleeping_skill(pytester, m, "auto" if SANDBOX else "off")
    cli = subprocess.Popen(
        [AGENTIC_EVALS, "run", str(fixture)], cwd=pytester.path, env=environment(),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, preexec_fn=default_signals)
    try:
        wait_for(lambda: len(sleeping(m)) >= 2, "the trial never started", cli)
        cli.kill()  # SIGKILL to the CLI alone: it can forward nothing
        cli.wait()
        wait_for(lambda: not (alive_with(str(fixture)) or alive_with(f"sleep {m}")),
                 "pytest or its trial outlived the CLI")
    finally:
        for pid in alive_with(str(fixture)) + alive_with(f"sleep {m}"):
            os.kill(pid, signal.SIGKILL)


# -- the runner killed outright ---------------------------------------------------------------

UNSANDBOXED_RUNNER = textwrap.dedent("""
    import os, pathlib, sys
    from pytest_agentic_evals.execution.process import run_process
    base = pathlib.Path(sys.argv[2])
    run_process(["sh", "-c", sys.argv[1]], cwd=base, env=dict(os.environ), timeout=600,
                output_dir=base / "output")
""")

ESCAPES = {
    "setsid": "setsid -f sleep {m}; sleep {m}",
    "double-fork": "( ( sleep {m} & ) & ); sleep {m}",
    "background": "sleep {m} & sleep {m}",
    "group-without-tag": "env -i sleep {m} & sleep {m}",
}


@pytest.mark.parametrize("script", ESCAPES.values(), ids=ESCAPES.keys())
def test_unsandboxed_trials_die_with_a_killed_runner(
    tmp_path: Path, script: str
) -> None:
    """Without the sandbox, the runner's watchdog kills its trials' groups and every process
    with its tag; a process that both drops the tag and leaves the group is out of its reach
    (docs/sandbox.md says so)."""
    m = marker()
    runner = subprocess.Popen(
        [sys.executable, "-c", UNSANDBOXED_RUNNER, script.format(m=m), str(tmp_path)],
        stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: len(sleeping(m)) >= 2, "the trial never started", runner)
        runner.kill()  # SIGKILL: the runner cleans nothing up itself
        runner.wait()
        wait_for(lambda: not alive_with(f"sleep {m}"), "outlived the runner")
    finally:
        for pid in alive_with(f"sleep {m}"):
            os.kill(pid, signal.SIGKILL)


@needs_sandbox
def test_a_session_killed_outright_takes_its_sandboxed_trials_with_it(
    pytester: pytest.Pytester
) -> None:
    m = marker()
    sleeping_skill(pytester, m, "required")
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--agentic-evals", "-p", "no:cacheprovider",
         "-n", "2"], cwd=pytester.path, env=environment(), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: len(sleeping(m)) >= 2, "the trial never started",
                 session)
        os.killpg(session.pid, signal.SIGKILL)  # controller and workers, no cleanup at all
        session.wait()
        wait_for(lambda: not alive_with(f"sleep {m}"), "outlived the runner")
    finally:
        for pid in alive_with(f"sleep {m}"):
            os.kill(pid, signal.SIGKILL)


def test_trials_under_xdist_start_with_no_signal_blocked(pytester: pytest.Pytester) -> None:
    """Workers start with SIGTERM and SIGHUP blocked and unblock them: a trial that inherited
    them blocked would ignore its timeout's SIGTERM."""
    data = skill_fixture()
    data["cases"].append({
        "name": "signal-mask", "type": "positive",
        "command": ["grep", "^SigBlk:", "/proc/self/status"],
        "expected": {"exit_code": 0, "stdout_contains": ["SigBlk:\t0000000000000000"]}})
    make_skill(pytester, data)
    result = pytester.runpytest_subprocess("--agentic-evals", "-p", "no:cacheprovider",
                                           "-n", "2")
    result.assert_outcomes(passed=6)
