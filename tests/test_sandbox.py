"""The sandbox: trials in their own PID and mount namespaces, made with the real bwrap.

Every escape the unsandboxed runner missed is tried here as an attacker would: each must end
as a FAIL that names what was left behind, and afterwards this test's own scan of /proc must
find nothing of it alive. The file-system checks run a script inside the sandbox and then look
at the host's files, not at what the script says. Settings are tested through the real plugin
(serially and with xdist) and the real CLI; a machine without namespaces is simulated with a
bwrap that fails, named by AGENTIC_EVALS_BWRAP.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import pytest_agentic_evals
from pytest_agentic_evals.execution.confined import run_confined
from pytest_agentic_evals.execution.process import ProcessResult
from pytest_agentic_evals.execution.sandbox import (
    BWRAP_VARIABLE,
    MountPlan,
    SandboxSettings,
    available_bwrap,
    decide,
    runner_installation,
)
from pytest_agentic_evals.loading import fixture_from_data
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.model import SANDBOX_MODES
from pytest_agentic_evals.pytest_plugin import settings as settings_module

from conftest import (
    HOPPER,
    LEADER_EXITS_ALONE,
    MODES,
    Skill,
    alive_with,
    child_env,
    interruptible,
    make_skill,
    marker,
    run_cli,
    skill_fixture,
)

BWRAP = available_bwrap()
pytestmark = pytest.mark.skipif(
    BWRAP.problem is not None, reason=f"no sandbox on this machine: {BWRAP.problem}"
)
NO_HANG_SECONDS = 30.0


def describe(pids: list[int]) -> list[str]:
    """Who those processes are, for a failure message."""
    found = []
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        found.append(f"{pid} (state {stat[0]}, parent {stat[1]}): {command[:200]}")
    return found


@pytest.fixture
def cleanup() -> Iterator[list[str]]:
    """Markers of processes a test starts: whatever happens, none of them outlives it."""
    markers: list[str] = []
    yield markers
    for text in markers:
        for pid in alive_with(text):
            os.kill(pid, signal.SIGKILL)


Sandboxed = Callable[..., ProcessResult]


@pytest.fixture
def sandboxed(tmp_path: Path) -> Sandboxed:
    """Runs a command in a sandbox whose workspace, scratch and output live in tmp_path."""
    workspace, scratch = tmp_path / "workspace", tmp_path / "scratch"
    workspace.mkdir()
    scratch.mkdir()

    def run(argv: list[str], *, timeout: float = 20, **plan: Any) -> ProcessResult:
        plan.setdefault("network", "host")
        # As a trial's plan does: the runner's installation stays visible and read-only
        # wherever it lives.
        plan["protected"] = (*plan.get("protected", ()), *runner_installation())
        return run_confined(
            argv, cwd=workspace, env=dict(os.environ), timeout=timeout,
            output_dir=tmp_path / "output", bwrap=str(BWRAP.path),
            plan=MountPlan(workspace=workspace, scratch=scratch, cwd=workspace, **plan),
        )

    return run


def output(result: ProcessResult) -> str:
    return result.stdout_path.read_text() + result.stderr_path.read_text()


# ---------------------------------------------------------------------------------------------
# Nothing outlives a trial
# ---------------------------------------------------------------------------------------------

ESCAPES = {
    "env-i-setsid": "env -i setsid -f sleep {m}; exit 0",
    "tag-dropped": "unset AGENTIC_EVALS_PROCESS_TAG; setsid -f sleep {m}; exit 0",
    "double-fork": "( ( sleep {m} & ) & ); exit 0",
    "nohup-background": "nohup sleep {m} >/dev/null 2>&1 & exit 0",
    "pid-hopper": f"{sys.executable} -c '{HOPPER}' {{m}}; exit 0",
    "leader-thread-ended": f"{sys.executable} -c \"{LEADER_EXITS_ALONE}\" 300 {{m}} & "
                           "sleep 0.5; exit 0",
}


@pytest.mark.parametrize("script", ESCAPES.values(), ids=ESCAPES.keys())
def test_an_escape_is_named_and_nothing_of_it_survives(
    sandboxed: Sandboxed, cleanup: list[str], script: str
) -> None:
    m = marker()
    cleanup.append(m)
    result = sandboxed(["sh", "-c", script.format(m=m)])
    assert result.exit_code == 0, output(result)
    assert result.integrity_error is None and result.setup_error is None
    assert any(m in p.command for p in result.left_behind), result.left_behind
    assert alive_with(m) == []  # when run_confined returns, its namespace is empty


def test_left_behind_processes_are_named_by_their_host_pid(
    sandboxed: Sandboxed, cleanup: list[str]
) -> None:
    m = marker()
    cleanup.append(m)
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:  # the host's view of the trial's sleep, while it lives
        while not done.is_set():
            seen.update(alive_with(m))
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        script = f"setsid -f sleep {m}; sleep 0.5"
        result = sandboxed(["sh", "-c", script])
    finally:
        done.set()
        watcher.join()
    (process,) = result.left_behind
    assert process.command == f"sleep {m}"
    assert process.pid in seen and process.pid > 2


def test_a_clean_command_leaves_nothing(sandboxed: Sandboxed) -> None:
    result = sandboxed(["sh", "-c", "sleep 0.01 & wait; echo done"])
    assert (result.exit_code, result.left_behind) == (0, [])
    assert result.stdout_path.read_text() == "done\n"


def test_a_nested_pid_namespace_is_listed_too(sandboxed: Sandboxed, cleanup: list[str]) -> None:
    probe = subprocess.run(["unshare", "--user", "--pid", "--fork", "true"], check=False,
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip("unshare cannot make user namespaces here")
    m = marker()
    cleanup.append(m)
    result = sandboxed(["sh", "-c", f"unshare --user --pid --fork sleep {m} & sleep 0.3"])
    assert any(m in p.command for p in result.left_behind), (result, output(result))
    assert alive_with(m) == []


def test_the_runner_dying_kills_its_trials(tmp_path: Path, cleanup: list[str]) -> None:
    m = marker()
    cleanup.append(m)
    runner = textwrap.dedent(f"""
        import os, pathlib
        from pytest_agentic_evals.execution.confined import run_confined
        from pytest_agentic_evals.execution.sandbox import MountPlan
        base = pathlib.Path({str(tmp_path)!r})
        for name in ("workspace", "scratch"):
            (base / name).mkdir()
        plan = MountPlan(workspace=base / "workspace", scratch=base / "scratch",
                         cwd=base / "workspace", network="host")
        run_confined(["sh", "-c", "env -i setsid -f sleep {m}; sleep {m}"],
                     cwd=base / "workspace", env=dict(os.environ), timeout=600,
                     output_dir=base / "output", plan=plan, bwrap={BWRAP.path!r})
    """)
    process = subprocess.Popen([sys.executable, "-c", runner], stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + NO_HANG_SECONDS
    # Both sleeps, the command's and the daemon's, not just the processes that start them.
    while len([p for p in describe(alive_with(m)) if p.endswith(f": sleep {m} ")]) < 2:
        assert time.monotonic() < deadline and process.poll() is None, "the trial never started"
        time.sleep(0.02)
    process.kill()  # SIGKILL: the runner gets no chance to clean up
    process.wait()
    deadline = time.monotonic() + NO_HANG_SECONDS
    while alive_with(m):
        assert time.monotonic() < deadline, f"outlived the runner: {describe(alive_with(m))}"
        time.sleep(0.02)


# The runner of the next tests: run_confined in a process of its own, as a worker runs it.
RUNNER = """
import os, pathlib, signal, subprocess, sys
from pytest_agentic_evals.execution.confined import run_confined
from pytest_agentic_evals.execution.sandbox import MountPlan, runner_installation
from pytest_agentic_evals.pytest_plugin.termination import Termination
base, bwrap, command, signalled = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
for name in ("workspace", "scratch"):
    (base / name).mkdir()
plan = MountPlan(workspace=base / "workspace", scratch=base / "scratch", cwd=base / "workspace",
                 network="host", readable=runner_installation())
Termination().install(lambda cleanup: None)  # as the plugin does: SIGTERM, SIGHUP and SIGINT
if signalled != "none":
    original = subprocess.Popen._execute_child
    def signalled_after_the_fork(self, *args, **kwargs):
        original(self, *args, **kwargs)  # bwrap runs: the signal lands before Popen returns
        signal.raise_signal(getattr(signal, signalled))
    subprocess.Popen._execute_child = signalled_after_the_fork
try:
    run_confined(["sh", "-c", command], cwd=base / "workspace", env=dict(os.environ),
                 timeout=600, output_dir=base / "output", plan=plan, bwrap=bwrap)
except KeyboardInterrupt:
    print("interrupted")
me, children = str(os.getpid()), []
for name in os.listdir("/proc"):
    if name.isdigit():
        try:
            stat = pathlib.Path(f"/proc/{name}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue  # a process of the machine that ended since listdir
        command, _, rest = stat.rpartition(")")
        if rest.split()[1] == me:  # zombies included: their name is still bwrap's
            children.append(command.partition("(")[2])
print("children:", sorted({c for c in children if not c.startswith("python")}))  # not the watchdog
"""


@pytest.mark.parametrize("signalled", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_while_the_sandbox_starts_leaves_nothing_behind(
    tmp_path: Path, cleanup: list[str], signalled: str
) -> None:
    """Landing inside Popen after the fork, the interruption would lose bwrap's pid: nothing
    could end or reap it (and a runner exiting meanwhile left bwrap half made, waiting
    forever). It waits until the sandbox is known, which is then torn down."""
    m = marker()
    cleanup.append(m)
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(tmp_path), str(BWRAP.path), f"sleep {m}", signalled],
        capture_output=True, text=True, timeout=NO_HANG_SECONDS, stdin=subprocess.DEVNULL,
        preexec_fn=interruptible)
    assert done.stdout.splitlines() == ["interrupted", "children: []"], done.stderr
    assert not alive_with(m)
    assert (tmp_path / "output" / "stdout").exists()


def test_the_runner_dying_while_a_sandbox_is_set_up_kills_it(
    tmp_path: Path, cleanup: list[str]
) -> None:
    """bwrap's inner process takes --die-with-parent only once its monitor has set it up; a
    runner killed before that would leave it waiting for the monitor forever. Here a bwrap
    that never gets done setting up (and never dies with its parent) stands for that window."""
    m = marker()
    cleanup.append(m)
    stuck = tmp_path / "stuck-bwrap"
    # It reads the runner's first word before it starts anything (the real one would be
    # setting up meanwhile): by then the runner has told its watchdog about it.
    stuck.write_text(f"#!/bin/sh\nread -r go\nsleep {m} &\nexec sleep {m}\n")
    stuck.chmod(0o755)
    process = subprocess.Popen([sys.executable, "-c", RUNNER, str(tmp_path), str(stuck), "true",
                                "none"], stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + NO_HANG_SECONDS
    while len(alive_with(m)) < 2:
        assert time.monotonic() < deadline and process.poll() is None, "bwrap never started"
        time.sleep(0.02)
    process.kill()  # SIGKILL: the runner gets no chance to clean up
    process.wait()
    deadline = time.monotonic() + NO_HANG_SECONDS
    while alive_with(m):
        assert time.monotonic() < deadline, f"outlived the runner: {describe(alive_with(m))}"
        time.sleep(0.02)


def test_a_timeout_kills_the_whole_namespace(sandboxed: Sandboxed, cleanup: list[str]) -> None:
    m = marker()
    cleanup.append(m)
    started = time.monotonic()
    result = sandboxed(["sh", "-c", f"trap '' TERM; setsid -f sleep {m}; sleep {m}"],
                       timeout=0.5)
    assert time.monotonic() - started < NO_HANG_SECONDS
    assert result.timed_out and result.exit_code == -signal.SIGKILL  # it ignored SIGTERM
    assert alive_with(m) == []


def test_a_timed_out_command_that_obeys_sigterm_reports_it(sandboxed: Sandboxed) -> None:
    result = sandboxed(["sleep", "300"], timeout=0.3)
    assert result.timed_out and result.exit_code == -signal.SIGTERM
    assert result.left_behind == []


def test_the_exit_status_is_the_commands(sandboxed: Sandboxed) -> None:
    assert sandboxed(["sh", "-c", "exit 7"]).exit_code == 7
    # The supervisor is a shell: a death by signal N reads as 128 + N, and nothing of the
    # shell's own reporting ("Killed") reaches the command's stderr.
    killed = sandboxed(["sh", "-c", "kill -9 $$"])
    assert killed.exit_code == 128 + signal.SIGKILL
    assert killed.stderr_path.read_text() == ""


@pytest.mark.parametrize(("mode", "exit_code", "problem"), [
    ("required", 143, "exit_code: expected 0, got 143"),
    ("off", -15, "exit_code: expected 0, the command was killed by signal 15"),
])
def test_a_death_by_signal_is_reported_as_docs_fixture_md_says(
    skill: Skill, mode: str, exit_code: int, problem: str
) -> None:
    data = skill_fixture()
    data["cases"].append({"name": "terminated", "type": "positive", "required": False,
                          "command": ["bash", "-c", "kill -TERM $$; ../run.sh Ada"],
                          "expected": {"exit_code": 0}})
    result = run_cli("run", str(skill.write(data)), "--sandbox", mode, cwd=skill.root)
    assert result.returncode == 0, result.stderr  # an optional case fails nothing
    [case] = [c for c in json.loads(result.stdout)["cases"] if c["name"] == "terminated"]
    for trial in case["trials"]:
        assert (trial["exit_code"], trial["timed_out"], trial["problems"]) == (
            exit_code, False, [problem])


def test_stdin_is_closed_and_arguments_reach_the_command(sandboxed: Sandboxed) -> None:
    result = sandboxed(["sh", "-c", 'read x || echo "closed $#: $1|$2"', "sh", "a b", "*"])
    assert result.stdout_path.read_text() == "closed 2: a b|*\n"


def test_start_errors_are_worded_as_without_the_sandbox(
    sandboxed: Sandboxed, tmp_path: Path
) -> None:
    assert sandboxed(["no-such-program-here"]).start_error == (
        "command not found: no-such-program-here")
    script = tmp_path / "workspace" / "plain.sh"
    script.write_text("echo hi\n")
    assert sandboxed(["./plain.sh"]).start_error == "not executable: ./plain.sh (permission denied)"
    assert sandboxed([]).start_error == "empty command"


def test_a_sandbox_that_cannot_be_made_is_a_setup_error(
    sandboxed: Sandboxed, tmp_path: Path
) -> None:
    result = sandboxed(["true"], writable=(tmp_path / "missing",))
    assert result.exit_code is None
    assert result.setup_error is not None
    assert result.setup_error.startswith("could not make the sandbox: ")
    assert "missing" in result.setup_error


# ---------------------------------------------------------------------------------------------
# What a trial sees and may write
# ---------------------------------------------------------------------------------------------

LOOK_AROUND = """
try() { if "$@" 2>/dev/null; then echo "ok: $*"; else echo "no: $*"; fi; }
try touch "$W/made" "$S/made" "/tmp/$NAME" "$HOME/made" "$D/made"
for target in "$R/made" "$V/made" /etc/made /usr/made; do try touch "$target"; done
try cat "$R/readable.txt"
echo "hidden: $(ls -A "$H" | tr '\\n' ' ')"
try cat "$M"
try sh -c "echo forged > '$M'"
echo "home: $HOME tmp: $TMPDIR"
"""


@pytest.fixture
def visible(tmp_path: Path) -> Iterator[Path]:
    """A directory outside /tmp, which the sandbox shows (read-only) instead of hiding."""
    base = Path(tempfile.mkdtemp(prefix="agentic-evals-test-", dir="/var/tmp"))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_runners_own_installation_stays_visible_where_tmp_is_hidden(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A runner whose package lives in /tmp (a checkout there, installed in editable mode):
    its trials still import it, read-only, although the sandbox hides the rest of /tmp."""
    source = Path(pytest_agentic_evals.__file__).parent
    installed = tmp_path_factory.mktemp("runner-checkout")  # under /tmp, outside the skill
    shutil.copytree(source, installed / "pytest_agentic_evals",
                    ignore=shutil.ignore_patterns("__pycache__"))
    data = skill_fixture(sandbox="required")
    data["cases"].append({
        "name": "imports-the-runner", "type": "positive", "required": False,
        "command": [sys.executable, "-c",
                    "import pytest_agentic_evals as p, pathlib; print(p.__file__); "
                    "pathlib.Path(p.__file__).write_text('')"],
        "expected": {"exit_code": 1, "stdout_contains": [str(installed)],
                     "stderr_contains": ["Read-only file system"]}})
    make_skill(pytester, data)
    monkeypatch.setenv("PYTHONPATH", str(installed))
    result = pytester.runpytest_subprocess("--agentic-evals", "-p", "no:randomly",
                                           "--agentic-evals-report", "report.json")
    report = json.loads((pytester.path / "report.json").read_text())
    case = next(c for c in report["cases"] if c["name"] == "imports-the-runner")
    assert case["outcome"] == "PASS", (case["problems"], result.stdout.str())
    assert report["readiness"] == "READY"


def test_only_the_workspace_scratch_tmp_home_and_declared_paths_are_writable(
    sandboxed: Sandboxed, tmp_path: Path, visible: Path
) -> None:
    declared, outside, hidden = (visible / n for n in ("declared", "outside", "run-dir"))
    readable = tmp_path / "skill"  # under /tmp, which the sandbox hides: shown again
    for directory in (declared, outside, hidden, readable):
        directory.mkdir()
    (readable / "readable.txt").write_text("seen\n")
    (hidden / "secret.txt").write_text("the runner's\n")
    masked = outside / "report.json"
    masked.write_text('{"readiness": "NOT_READY"}')
    name = f"private-{uuid.uuid4().hex}"
    workspace, scratch = tmp_path / "workspace", tmp_path / "scratch"
    variables = (f"W={workspace} S={scratch} D={declared} R={readable} V={outside} "
                 f"H={hidden} M={masked} NAME={name}\n")
    result = sandboxed(["sh", "-c", variables + LOOK_AROUND], writable=(declared,),
                       readable=(readable,), hidden=(hidden, masked))
    said = result.stdout_path.read_text().splitlines()
    assert (f"ok: touch {workspace}/made {scratch}/made /tmp/{name} /tmp/home/made "
            f"{declared}/made") in said
    for refused in (readable, outside, "/etc", "/usr"):
        assert f"no: touch {refused}/made" in said
    assert "seen" in said and f"ok: cat {readable}/readable.txt" in said
    assert "hidden: " in said  # the run directory is an empty one in there
    # The earlier report reads as an empty file, and cannot be written.
    assert f"ok: cat {masked}" in said and not any("readiness" in line for line in said)
    assert f"no: sh -c echo forged > '{masked}'" in said
    assert "home: /tmp/home tmp: /tmp/tmp" in said
    # What the host sees afterwards, whatever the script said.
    assert (workspace / "made").exists() and (scratch / "made").exists()
    assert (declared / "made").exists()
    assert not (readable / "made").exists() and not (outside / "made").exists()
    assert not Path("/tmp", name).exists()  # the trial's /tmp is its own
    assert masked.read_text() == '{"readiness": "NOT_READY"}'
    assert (hidden / "secret.txt").read_text() == "the runner's\n"


@pytest.mark.parametrize("broad", ["the-parent", "tmp", "a-link-to-the-parent"])
def test_a_broad_writable_path_shows_nothing_the_sandbox_hides_and_leaves_the_skill_read_only(
    sandboxed: Sandboxed, tmp_path: Path, visible: Path, broad: str
) -> None:
    """A declared writable path above what the runner hides or keeps read-only (its run
    directories, the probe key, the skill directory, its own installation, an earlier report)
    is bound first: everything hidden or read-only inside it stays so."""
    parent = tmp_path if broad == "tmp" else visible / "parent"
    parent.mkdir(exist_ok=True)
    hidden, skill = parent / "run-dir", parent / "skill"
    for directory in (hidden, skill):
        directory.mkdir()
    (hidden / "secret.txt").write_text("the runner's\n")
    (skill / "run.sh").write_text("echo honest\n")
    report = parent / "report.json"
    report.write_text('{"readiness": "NOT_READY"}')
    writable = {"the-parent": visible, "tmp": Path(tempfile.gettempdir()),
                "a-link-to-the-parent": visible / "link"}[broad]
    if broad == "a-link-to-the-parent":  # ../inst -> what the runner keeps read-only
        writable.symlink_to("parent")
    script = (f"ls -A {hidden}; cat {hidden}/secret.txt; echo forged > {skill}/run.sh; "
              f"echo forged > {report}; echo made > {parent}/made; echo done")
    result = sandboxed(["sh", "-c", script], writable=(writable,), protected=(skill,),
                       hidden=(hidden, report))
    said = output(result)
    assert "done" in said and "the runner's" not in said, said
    assert (hidden / "secret.txt").read_text() == "the runner's\n"
    assert (skill / "run.sh").read_text() == "echo honest\n"
    assert report.read_text() == '{"readiness": "NOT_READY"}'
    assert (parent / "made").read_text() == "made\n"  # the declared path itself is writable


def test_host_daemon_sockets_are_out_of_reach(sandboxed: Sandboxed) -> None:
    # /run holds the sockets of a container engine, systemd and D-Bus, which could start
    # processes outside the sandbox; without a network of its own a trial sees none of it.
    result = sandboxed(["sh", "-c", "ls -A /run | wc -l"], network="none")
    assert result.stdout_path.read_text().strip() == "0"


# ---------------------------------------------------------------------------------------------
# Through the plugin and the CLI
# ---------------------------------------------------------------------------------------------


def read_report(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def run_plugin(pytester: pytest.Pytester, *args: str, mode: list[str] = ()) -> pytest.RunResult:
    argv = ["--agentic-evals", "--agentic-evals-report", str(pytester.path / "report.json"),
            "-p", "no:cacheprovider", *args, *mode]
    return pytester.runpytest(*argv)


def trials(report: dict[str, Any], case: str) -> list[dict[str, Any]]:
    fixtures = report.get("fixtures", [report])
    return next(c for f in fixtures for c in f["cases"] if c["name"] == case)["trials"]


@pytest.mark.parametrize("mode", MODES)
def test_escapes_fail_their_trials_with_the_survivors_named(
    pytester: pytest.Pytester, cleanup: list[str], mode: list[str]
) -> None:
    data = skill_fixture()
    markers = {}
    for name, script in ESCAPES.items():
        markers[name] = m = marker()
        cleanup.append(m)
        data["cases"].append({"name": name, "type": "adversarial",
                              "command": ["bash", "-c", "../run.sh x; " + script.format(m=m)],
                              "expected": {"exit_code": 0, "stdout_contains": ["hello, x"]}})
    make_skill(pytester, data)
    result = run_plugin(pytester, mode=mode)
    assert result.ret == 1
    report = read_report(pytester.path / "report.json")
    # Host pids, each its own process, also for trials that ran at the same moment.
    pids = [p["pid"] for name in markers for t in trials(report, name)
            for p in t["left_behind_processes"]]
    assert len(pids) == len(set(pids)), pids
    for name, m in markers.items():
        for trial in trials(report, name):
            assert trial["outcome"] == "FAIL", (name, trial["problems"])
            assert trial["isolation"]["sandbox"] == "bwrap"
            assert any("process(es) behind" in p and m in p for p in trial["problems"]), name
        assert alive_with(m) == []
    for name in ("greets", "refuses-empty-name"):
        assert [t["outcome"] for t in trials(report, name)] == ["PASS", "PASS"]
        assert all(t["isolation"] == {"sandbox": "bwrap", "setting": "auto", "network": "proxy",
                                      "reason": None, "writable_paths": []}
                   for t in trials(report, name))


@pytest.mark.parametrize("mode", MODES)
def test_a_pid_hopper_never_escapes_over_many_trials(
    pytester: pytest.Pytester, cleanup: list[str], mode: list[str]
) -> None:
    m = marker()
    cleanup.append(m)
    data = skill_fixture(trials=16)
    data["cases"].append({"name": "hops", "type": "adversarial",
                          "command": ["bash", "-c", "../run.sh x; " + ESCAPES["pid-hopper"]
                                      .format(m=m)],
                          "expected": {"exit_code": 0, "stdout_contains": ["hello, x"]}})
    make_skill(pytester, data)
    result = run_plugin(pytester, "--agentic-evals-case", "hops", mode=mode)
    assert result.ret == 1
    hops = trials(read_report(pytester.path / "report.json"), "hops")
    assert len(hops) == 16
    for trial in hops:
        assert trial["outcome"] == "FAIL" and trial["isolation"]["sandbox"] == "bwrap", trial
        assert any("process(es) behind" in p and m in p for p in trial["problems"]), trial
    assert alive_with(m) == []


@pytest.mark.parametrize("mode", MODES)
def test_a_symlinked_cwd_cannot_write_outside_the_workspace(
    pytester: pytest.Pytester, visible: Path, mode: list[str]
) -> None:
    outside = visible / "outside"
    outside.mkdir()
    (pytester.path / "link-to-outside").symlink_to(outside)
    data = skill_fixture()
    data["cases"].append({
        "name": "escapes-through-cwd", "type": "adversarial", "cwd": "../link-to-outside",
        "command": ["sh", "-c", f"pwd -P; touch escaped; touch {pytester.path}/in-the-original"],
        "expected": {"exit_code": 0}})
    make_skill(pytester, data)
    result = run_plugin(pytester, mode=mode)
    assert result.ret == 1
    report = read_report(pytester.path / "report.json")
    for trial in trials(report, "escapes-through-cwd"):
        assert trial["workspace"]["mode"] == "copy" and trial["outcome"] == "FAIL"
        assert trial["stdout"]["head"] == f"{outside}\n"  # it did get there, read-only
        assert trial["stderr"]["head"].count("Read-only file system") == 2
    assert list(outside.iterdir()) == []
    assert not (pytester.path / "in-the-original").exists()


FORGED = "forged-report"
FORGER = r"""
../run.sh x
# Look for the runner's report paths on every command line this trial can see.
for f in /proc/[0-9]*/cmdline; do
  tr '\0' '\n' < "$f" 2>/dev/null | grep -A1 -e --agentic-evals-report -e --output \
    | grep -v -e '^--' >> "$AGENTIC_EVALS_TRIAL_DIR/paths"
done
echo "$OUTPUT" >> "$AGENTIC_EVALS_TRIAL_DIR/paths"
while read -r path; do
  echo FORGED > "$path" 2>/dev/null && echo "wrote $path"
done < "$AGENTIC_EVALS_TRIAL_DIR/paths"
# End every other process it can see (the runner, if it could), then leave a daemon behind
# that writes again once the run is over.
for p in /proc/[0-9]*; do [ "${p#/proc/}" = $$ ] || kill -9 "${p#/proc/}" 2>/dev/null; done
env -i setsid -f sh -c "sleep 2; echo FORGED > '$OUTPUT'"
exit 0
"""


@pytest.mark.parametrize(("where", "mode"), [("tmp", []), ("visible", []),
                                             ("visible", ["--", "-n", "2"])],
                         ids=["tmp", "visible", "visible-xdist"])
def test_a_trial_cannot_forge_the_report(
    skill: Skill, visible: Path, cleanup: list[str], where: str, mode: list[str]
) -> None:
    base = skill.root if where == "tmp" else visible
    output_path = base / "out" / "report.json"
    output_path.parent.mkdir()
    data = skill_fixture()
    data["cases"].append({
        "name": "forges", "type": "adversarial", "required": True,
        "command": ["bash", "-c", FORGER.replace("FORGED", FORGED)],
        "env": {"OUTPUT": str(output_path)},
        "expected": {"exit_code": 0, "stdout_contains": ["hello, x"]}})
    fixture = skill.write(data)
    cleanup.append(str(output_path))
    result = run_cli("run", str(fixture), "--output", str(output_path), *mode, cwd=skill.root)
    time.sleep(3)  # longer than the daemon would have waited before writing again
    # The forger writes a line that is not JSON: the report parses, and is the one printed.
    written = json.loads(output_path.read_text())
    assert written == json.loads(result.stdout) and written["schema"].startswith("agentic_")
    assert written["readiness"] != "READY" and result.returncode == 1
    case = next(c for c in written["cases"] if c["name"] == "forges")
    assert case["outcome"] == "FAIL"
    for trial in case["trials"]:
        assert "wrote" not in trial["stdout"]["head"]
        assert any("process(es) behind" in p for p in trial["problems"])
    assert alive_with(str(output_path)) == []


def test_a_trial_cannot_read_the_key_that_seals_probe_results(
    skill: Skill, visible: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_agentic_evals import seals
    monkeypatch.setenv("XDG_STATE_HOME", str(visible))  # where the sandbox shows the files
    seals.seal({"made": "the key"})
    key = seals.key_directory() / seals.KEY_FILENAME
    data = skill_fixture()
    data["cases"].append({
        "name": "reads-the-key", "type": "adversarial",
        "command": ["bash", "-c", 'od -An -tx1 "$KEY" && echo READ'], "env": {"KEY": str(key)},
        "expected": {"exit_code": 0, "stdout_contains": ["READ"]}})
    result = run_cli("run", str(skill.write(data)), "--sandbox", "required", cwd=skill.root)
    report = json.loads(result.stdout)
    case = next(c for c in report["cases"] if c["name"] == "reads-the-key")
    assert case["outcome"] == "FAIL" and result.returncode == 1
    for trial in case["trials"]:
        assert trial["isolation"]["sandbox"] == "bwrap"
        assert "No such file" in trial["stderr"]["head"], trial["stderr"]


LINKER = r"""
if [ "$AGENTIC_EVALS_TRIAL" = 2 ]; then  # the run's last trial: no later one meets the links
  ln -sfn "$VICTIMS/report.txt" ../report.json
  ln -sfn "$VICTIMS/summary.txt" ../summary.md
fi
exec bash ../run.sh ""
"""


@pytest.mark.parametrize("command", ["run", "pytest"])
def test_a_link_a_trial_puts_at_the_report_path_is_replaced_not_followed(
    skill: Skill, visible: Path, command: str
) -> None:
    # In an inplace workspace (the skill's own directory) the report's name is the trial's to
    # change while it runs: the runner must not write the report through the trial's link.
    (visible / "report.txt").write_text("precious\n")
    (visible / "summary.txt").write_text("precious too\n")
    data = skill_fixture(workspace="inplace")
    data["cases"][1].update(command=["bash", "-c", LINKER], env={"VICTIMS": str(visible)})
    skill.write(data)
    if command == "run":
        result = run_cli("run", ".", "--output", "report.json", "--md", "summary.md", "--",
                         "-p", "no:randomly", cwd=skill.root)
    else:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "--agentic-evals", "--agentic-evals-report",
             "report.json", "--agentic-evals-md", "summary.md", "-p", "no:randomly",
             "-p", "no:cacheprovider"],
            cwd=skill.root, capture_output=True, text=True, timeout=240, env=child_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert (visible / "report.txt").read_text() == "precious\n"
    assert (visible / "summary.txt").read_text() == "precious too\n"
    report = skill.root / "report.json"
    assert not report.is_symlink() and json.loads(report.read_text())["readiness"] == "READY"
    summary = skill.root / "summary.md"
    assert not summary.is_symlink() and "READY" in summary.read_text()


# ---------------------------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def no_namespaces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A machine where bwrap cannot make namespaces, as some container runtimes are."""
    fake = tmp_path / "bwrap-without-namespaces"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv(BWRAP_VARIABLE, str(fake))
    return str(fake)


@pytest.mark.parametrize(("run_mode", "case_mode", "expected"), [
    ("auto", None, ("auto", "default")),
    ("auto", "off", ("off", "the case")),
    ("off", None, ("off", "--agentic-evals-sandbox")),
    ("off", "auto", ("off", "--agentic-evals-sandbox")),
    ("off", "required", ("required", "the case")),
    ("required", "off", ("required", "--agentic-evals-sandbox")),
    ("required", "auto", ("required", "--agentic-evals-sandbox")),
    ("auto", "auto", ("auto", "the case")),
])
def test_required_wins_then_off(
    run_mode: str, case_mode: str | None, expected: tuple[str, str]
) -> None:
    source = "default" if run_mode == "auto" else "--agentic-evals-sandbox"
    decision = decide(SandboxSettings(run_mode, source), case_mode, "the case")
    assert (decision.mode, decision.source) == expected


def test_the_bwrap_variable_names_the_binary_and_a_broken_one_says_why(
    no_namespaces: str,
) -> None:
    found = available_bwrap()
    assert (found.path, found.origin) == (no_namespaces, f"${BWRAP_VARIABLE}")
    assert found.problem is not None
    assert "No permissions to create new namespace" in found.problem


@pytest.mark.usefixtures("no_namespaces")
@pytest.mark.parametrize("mode", MODES)
def test_auto_falls_back_with_the_reason(pytester: pytest.Pytester, mode: list[str]) -> None:
    make_skill(pytester, skill_fixture())
    result = run_plugin(pytester, mode=mode)
    assert result.ret == 0
    report = read_report(pytester.path / "report.json")
    for trial in trials(report, "greets") + trials(report, "refuses-empty-name"):
        assert trial["outcome"] == "PASS"
        assert trial["isolation"]["sandbox"] == "none"
        assert trial["isolation"]["setting"] == "auto"
        assert "No permissions to create new namespace" in trial["isolation"]["reason"]
    result.stdout.fnmatch_lines(["sandbox: 4 of 4 trial(s) not sandboxed: no sandbox on this "
                                 "machine: *No permissions to create new namespace"])


@pytest.mark.usefixtures("no_namespaces")
@pytest.mark.parametrize("mode", MODES)
def test_required_never_passes_without_the_sandbox(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    data = skill_fixture(sandbox="off")  # a fixture cannot loosen the run's required
    make_skill(pytester, data)
    result = run_plugin(pytester, "--agentic-evals-sandbox", "required", mode=mode)
    assert result.ret == 1
    report = read_report(pytester.path / "report.json")
    assert report["readiness"] != "READY"
    for trial in trials(report, "greets") + trials(report, "refuses-empty-name"):
        assert trial["outcome"] == "BLOCKED" and trial["infrastructure"]
        assert trial["exit_code"] is None
        assert trial["problems"][0].startswith(
            "the sandbox is required (set by --agentic-evals-sandbox), but no trial can be "
            "sandboxed here: ")
    result.stdout.fnmatch_lines(["*infrastructure problems:*",
                                 "*BLOCKED*greets*the sandbox is required*"])


def test_required_in_the_ini_file(pytester: pytest.Pytester, no_namespaces: str) -> None:
    pytester.makeini("[pytest]\nagentic_evals_sandbox = required\n")
    make_skill(pytester, skill_fixture())
    result = run_plugin(pytester)
    assert result.ret == 1
    report = read_report(pytester.path / "report.json")
    assert {t["outcome"] for t in trials(report, "greets")} == {"BLOCKED"}
    assert "(set by ini agentic_evals_sandbox)" in trials(report, "greets")[0]["problems"][0]


def test_a_fixture_or_case_may_turn_it_off_and_the_report_says_so(
    pytester: pytest.Pytester,
) -> None:
    data = skill_fixture(sandbox="off")
    data["cases"][1]["sandbox"] = "auto"
    make_skill(pytester, data)
    result = run_plugin(pytester)
    assert result.ret == 0
    report = read_report(pytester.path / "report.json")
    off = trials(report, "greets")[0]["isolation"]
    assert off == {"sandbox": "none", "setting": "off", "network": "host",
                   "reason": "the sandbox is off (set by the fixture)", "writable_paths": []}
    assert trials(report, "refuses-empty-name")[0]["isolation"]["sandbox"] == "bwrap"
    result.stdout.fnmatch_lines(["sandbox: 2 of 4 trial(s) not sandboxed: the sandbox is off "
                                 "(set by the fixture)"])


def test_the_command_line_turns_it_off(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture())
    assert run_plugin(pytester, "--agentic-evals-sandbox", "off").ret == 0
    report = read_report(pytester.path / "report.json")
    assert trials(report, "greets")[0]["isolation"]["reason"] == (
        "the sandbox is off (set by --agentic-evals-sandbox)")


def test_a_bad_setting_is_a_usage_error(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture())
    result = run_plugin(pytester, "--agentic-evals-sandbox", "sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentic-evals-sandbox: 'sometimes' is not one of auto, "
                                 "required, off*"])


def test_the_cli_passes_a_required_sandbox(skill: Skill, no_namespaces: str) -> None:
    required = run_cli("run", str(skill.fixture()), "--sandbox", "required", cwd=skill.root)
    assert required.returncode == 1, required.stderr
    assert json.loads(required.stdout)["summary"]["blocked"] == 2
    assert "sandbox: 4 of 4 trial(s) not sandboxed: the sandbox is required" in required.stderr


def test_the_cli_falls_back_by_default(skill: Skill, no_namespaces: str) -> None:
    fallback = run_cli("run", str(skill.fixture()), cwd=skill.root)
    assert fallback.returncode == 0, fallback.stderr


def test_the_cli_refuses_an_unknown_sandbox_setting(skill: Skill) -> None:
    bad = run_cli("run", str(skill.fixture()), "--sandbox", "sometimes", cwd=skill.root)
    assert bad.returncode == 2
    assert "argument --sandbox: 'sometimes' is not one of auto, required, off" in bad.stderr


def test_declared_writable_paths_are_reported_and_must_exist(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    data = skill_fixture(writable_paths=[str(shared)])
    data["cases"][0]["command"] = ["bash", "-c", f"../run.sh Ada && echo hi > {shared}/out"]
    data["cases"][1]["writable_paths"] = [str(tmp_path / "missing")]
    make_skill(pytester, data)
    result = run_plugin(pytester)
    assert result.ret == 1
    report = read_report(pytester.path / "report.json")
    greets = trials(report, "greets")
    assert [t["outcome"] for t in greets] == ["PASS", "PASS"]
    assert greets[0]["isolation"]["writable_paths"] == [str(shared)]
    assert (shared / "out").read_text() == "hi\n"
    for trial in trials(report, "refuses-empty-name"):
        assert trial["outcome"] == "BLOCKED" and trial["infrastructure"]
        assert trial["problems"] == [
            f"declared writable path(s) do not exist: {tmp_path / 'missing'}"]


def test_a_trial_cannot_reach_the_runners_files_or_the_original_skill_through_writable_paths(
    pytester: pytest.Pytester, tmpdir_of_its_own: Path
) -> None:
    """A fixture (written by the agent under evaluation, say) declaring the host's temporary
    directory and the skill's parent writable: other trials' run directories stay hidden and
    the skill's own files read-only, so nothing a trial does there can make another pass."""
    from pytest_agentic_evals.execution.rundirs import runs_root

    planted = runs_root() / "of-another-skill"
    planted.mkdir(parents=True)
    (planted / "secret.txt").write_text("another trial's\n")
    skill_sh = pytester.path / "run.sh"
    data = skill_fixture(writable_paths=["/tmp", str(pytester.path.parent)])
    data["cases"].append({
        "name": "reaches-out", "type": "adversarial",
        "command": ["bash", "-c", f"../run.sh x; cat {planted}/secret.txt; "
                                  f"echo 'echo forged' >> {skill_sh}"],
        "expected": {"exit_code": 0, "stdout_contains": ["another trial's"]}})
    data["cases"].append({
        "name": "writes-into-the-runs", "type": "adversarial", "required": False,
        "writable_paths": [str(planted)], "command": ["bash", "../run.sh", "x"],
        "expected": {"exit_code": 0}})
    make_skill(pytester, data)
    before = skill_sh.read_text()
    result = run_plugin(pytester)
    assert result.ret == 1
    report = read_report(pytester.path / "report.json")
    for trial in trials(report, "reaches-out"):
        assert trial["outcome"] == "FAIL" and trial["isolation"]["sandbox"] == "bwrap", trial
    assert skill_sh.read_text() == before
    assert [t["outcome"] for t in trials(report, "greets")] == ["PASS", "PASS"]
    for trial in trials(report, "writes-into-the-runs"):
        assert trial["outcome"] == "BLOCKED", trial
        assert trial["problems"] == [f"declared writable path(s) inside what the runner keeps "
                                     f"to itself: {planted} (its run directories)"]


def test_a_writable_path_never_opens_the_programs_the_runner_runs(
    skill: Skill, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fixture declaring the system's directories writable, and a folder above a directory
    of the runner's PATH and one of its PYTHONPATH: the runner later runs programs and imports
    modules from there (git, bwrap) outside any sandbox, and as root it would run what a trial
    put there; so those directories stay read-only, and the rest of what was declared is
    writable."""
    bin_dir, lib_dir = tmp_path / "bin", tmp_path / "pylib"
    bin_dir.mkdir()
    lib_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(lib_dir))
    name = f"agentic-evals-planted-{uuid.uuid4().hex}"
    targets = [Path("/usr") / name, Path("/etc") / name, bin_dir / name, lib_dir / name]
    script = (f"bash ../run.sh Ada; for f in {' '.join(map(str, targets))}; do "
              f"echo planted 2>/dev/null > $f && echo wrote $f; done; echo made > {tmp_path}/made")
    data = skill_fixture(writable_paths=["/usr", "/etc", str(tmp_path)])
    data["cases"][0]["command"] = ["bash", "-c", script]
    try:
        report = json.loads(run_cli("run", str(skill.write(data))).stdout)
        first = report["cases"][0]["trials"][0]
        assert first["isolation"]["sandbox"] == "bwrap", first["problems"]
        assert [t for t in targets if t.exists()] == []
        assert "wrote" not in first["stdout"]["head"], first["stdout"]
        assert (tmp_path / "made").read_text() == "made\n"
    finally:
        for target in targets:
            target.unlink(missing_ok=True)


@pytest.mark.parametrize(("change", "pointer", "message"), [
    ({"sandbox": "sometimes"}, "/cases/0/sandbox", "is not one of"),
    ({"writable_paths": "/tmp"}, "/cases/0/writable_paths", "is a string, expected array"),
    ({"writable_paths": ["~/.cache"]}, "/cases/0/writable_paths/0", "'~' is not expanded"),
    ({"writable_paths": ["data"]}, "/cases/0/writable_paths/0", "inside the skill directory"),
])
def test_bad_sandbox_keys_are_load_errors(
    skill: Skill, change: dict[str, Any], pointer: str, message: str
) -> None:
    data = skill_fixture()
    data["cases"][0].update(change)
    with pytest.raises(FixtureError) as caught:
        fixture_from_data(data, skill.fixtures / "agentic_eval.json")
    text = caught.value.describe()
    assert f"{pointer}: " in text and message in text, text


@pytest.mark.parametrize("how", ["itself", "symbolic-link", "hard-link"])
def test_an_input_artifact_cannot_hand_a_trial_its_own_fixture(skill: Skill, how: str) -> None:
    """A trial reads its fixture as an empty file; an input file copied from the fixture (by
    any of its names) would hand it over all the same."""
    path = skill.fixtures / "agentic_eval.json"
    source = {"itself": "agentic_eval.json", "symbolic-link": "../examples/settings.json",
              "hard-link": "../examples/settings.json"}[how]
    data = skill_fixture(artifacts=[{"path": "settings.json", "from": source}])
    skill.write(data)
    (skill.root / "examples").mkdir()
    if how == "symbolic-link":
        (skill.root / "examples" / "settings.json").symlink_to(path)
    elif how == "hard-link":
        os.link(path, skill.root / "examples" / "settings.json")
    with pytest.raises(FixtureError) as caught:
        fixture_from_data(data, path)
    text = caught.value.describe()
    assert "/artifacts/0/from: " in text and "is the fixture itself" in text, text
    # Any other file of the skill is fine.
    (skill.root / "examples" / "settings.json").unlink(missing_ok=True)
    (skill.root / "examples" / "settings.json").write_text("{}\n")
    data["artifacts"][0]["from"] = "../examples/settings.json"
    fixture_from_data(data, path)


@pytest.mark.parametrize("workspace", ["inplace", "copy"])
def test_an_input_artifact_is_never_written_over_the_fixture(skill: Skill, workspace: str) -> None:
    """In place, it would replace the user's fixture with what the fixture says."""
    path = skill.fixtures / "agentic_eval.json"
    data = skill_fixture(workspace=workspace)
    data["cases"][0]["artifacts"] = [{"path": "agentic_eval.json", "content": "gone"}]
    with pytest.raises(FixtureError) as caught:
        fixture_from_data(data, path)
    text = caught.value.describe()
    assert "/cases/0/artifacts/0/path: " in text and "is the fixture itself" in text, text


def test_inplace_cases_may_declare_paths_in_the_skill(skill: Skill) -> None:
    data = skill_fixture(workspace="inplace", writable_paths=["../data"])
    fixture = fixture_from_data(data, skill.fixtures / "agentic_eval.json")
    assert fixture.cases[0].writable_paths == (skill.root / "data",)


def test_the_plugin_settings_know_the_same_modes() -> None:
    assert settings_module.SANDBOX_MODES == SANDBOX_MODES


# A skill that does no work: it finds the case it is run for in the fixture, and prints back
# what that case expects. It looks where a trial could read the fixture: in its working
# directory, at the fixture's own path, and under other names (a hard link, a symbolic one).
PARROT = """#!/bin/sh
exec python3 - "$@" <<'PY'
import json, os, sys
for path in ("agentic_eval.json", os.environ["ORIGINAL"], "../oracle.json", "../answers.json",
             "../node_modules/answers/oracle.json", os.environ["ORIGINAL_TOOLS"]):
    try:
        cases = json.load(open(path))["cases"]
    except (OSError, ValueError):
        continue
    for case in cases:
        if case["command"][1:] == sys.argv[1:]:
            expected = case["expected"]
            print("\\n".join(expected.get("stdout_contains", [])))
            sys.stderr.write("\\n".join(expected.get("stderr_contains", [])))
            sys.exit(expected["exit_code"])
sys.exit(3)
PY
"""


@pytest.mark.parametrize("workspace", ["overlay", "copy", "inplace"])
def test_a_skill_cannot_read_the_expectations_of_its_own_fixture(
        skill: Skill, workspace: str) -> None:
    """Without the sandbox the parrot is READY (which the second run shows it would be here);
    in it, the fixture reads as empty wherever the trial looks."""
    (skill.root / "run.sh").write_text(PARROT)
    data = skill_fixture(workspace="inplace" if workspace == "inplace" else "copy")
    for case in data["cases"]:
        case["command"] = ["../run.sh", *case["command"][2:]]
        case["env"] = {"ORIGINAL": str(skill.fixtures / "agentic_eval.json"),
                       "ORIGINAL_TOOLS": str(skill.root / ".venv" / "oracle.json")}
    if workspace == "copy":  # a stale expected output makes a private copy of an overlay
        data["cases"][0]["expected"]["artifacts"] = [{"path": "../stale.txt", "exists": False}]
        (skill.root / "stale.txt").write_text("stale\n")
    path = skill.write(data)
    os.link(path, skill.root / "oracle.json")
    (skill.root / "answers.json").symlink_to("fixtures/agentic_eval.json")
    # Other names in the folders a copy leaves out: the trial sees them all the same (in the
    # overlay, or in the original skill directory, read-only).
    for folder in ("node_modules/answers", ".venv"):
        (skill.root / folder).mkdir(parents=True)
        os.link(path, skill.root / folder / "oracle.json")
    sandboxed = json.loads(run_cli("run", str(path), cwd=skill.root).stdout)
    assert sandboxed["readiness"] == "NOT_READY"
    first = sandboxed["cases"][0]["trials"][0]
    assert first["exit_code"] == 3, first["problems"]
    if workspace == "copy":
        assert first["workspace"]["copied"] is not None
    unsandboxed = run_cli("run", str(path), "--sandbox", "off", cwd=skill.root)
    assert json.loads(unsandboxed.stdout)["readiness"] == "READY"
