"""Tests for pytest_agentic_evals.execution.process, with real subprocesses (Linux only).

Every trial gets a per-test marker variable in its environment.  The marker is independent of
the module's own tag, so the tests can check "nothing of the trial is alive" with their own /proc
scan instead of trusting the code under test, and the teardown can kill leftovers of a failing
test so that no failure ever leaves ``sleep 300`` processes behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from pytest_agentic_evals.execution import procfs
from pytest_agentic_evals.execution.process import (
    PROCESS_TAG_VARIABLE,
    LeftBehindProcess,
    ProcessResult,
    run_process,
)
from pytest_agentic_evals.execution.procfs import pid_window

from conftest import HOPPER, LEADER_EXITS_ALONE, hoppers_seen, pid_churn, running_threads

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="process hygiene relies on Linux /proc"
)

MARKER_VARIABLE = "TEST_PROCESS_MARKER"
# Generous: these only prove "did not hang" for commands that would otherwise run 300 s.
NO_HANG_SECONDS = 20.0


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            raw = handle.read()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def _is_gone(pid: int) -> bool:
    """Dead: no such pid any more, or a zombie waiting for init to reap it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    fields = _stat_fields(pid)
    return fields is None or fields[0] == "Z"


def _wait_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not _is_gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _live_pids_with(entry: bytes) -> list[int]:
    """Processes with ``entry`` in their environment and a thread still running (read through
    that thread: a process whose leader thread ended shows no environment of its own)."""
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            for thread in running_threads(int(name)):
                if entry in _environ_entries_at(thread):
                    pids.append(int(name))
                    break
    return pids


def _environ_entries_at(directory: Path) -> set[bytes]:
    try:
        return set((directory / "environ").read_bytes().split(b"\0"))
    except OSError:
        return set()


def _zombie_children() -> list[int]:
    zombies = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat_fields(int(name))
            if fields is not None and fields[0] == "Z" and int(fields[1]) == os.getpid():
                zombies.append(int(name))
    return zombies


@pytest.fixture
def marker() -> Iterator[str]:
    value = uuid.uuid4().hex
    yield value
    # Safety net for failing tests only; passing tests assert that nothing was left to kill.
    for pid in _live_pids_with(f"{MARKER_VARIABLE}={value}".encode()):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def run(tmp_path: Path, marker: str) -> Iterator[_Runner]:
    yield _Runner(tmp_path, marker)


class _Runner:
    def __init__(self, tmp_path: Path, marker: str) -> None:
        self.tmp_path = tmp_path
        self.marker = marker
        self.count = 0

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key != PROCESS_TAG_VARIABLE}
        env[MARKER_VARIABLE] = self.marker
        env.update(extra or {})
        return env

    def __call__(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 60.0,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        grace_seconds: float = 1.0,
    ) -> ProcessResult:
        self.count += 1
        result = run_process(
            argv,
            cwd=self.tmp_path if cwd is None else cwd,
            env=self.env() if env is None else env,
            timeout=timeout,
            output_dir=self.tmp_path / f"out{self.count}",
            grace_seconds=grace_seconds,
        )
        # The central promise, checked independently of the module's own tag scan.
        assert self.alive() == [], "a process of the trial outlived run_process"
        assert _zombie_children() == [], "run_process left an unreaped child"
        return result

    def alive(self) -> list[int]:
        return _live_pids_with(f"{MARKER_VARIABLE}={self.marker}".encode())


# bash prelude: wait until a background child has exec'd its program.  Without it the sweep may
# legitimately catch the child while it is still a copy of bash, with bash's command line.
# The trailing space in "$2 " stands for the NUL that ends the last argument: command
# substitution strips trailing newlines only.
AWAIT_EXEC = r"""await_exec() {
    until [ "$(tr '\0' ' ' < /proc/$1/cmdline 2>/dev/null)" = "$2 " ]; do
        [ -e /proc/$1 ] || return 1
        sleep 0.01
    done
}
"""


def _bash(script: str) -> list[str]:
    return ["bash", "-c", AWAIT_EXEC + script]


def _stdout(result: ProcessResult) -> str:
    return result.stdout_path.read_text()


def _first_pid(result: ProcessResult) -> int:
    return int(_stdout(result).split()[0])


def _left_behind(result: ProcessResult, pid: int) -> LeftBehindProcess:
    matches = [process for process in result.left_behind if process.pid == pid]
    assert matches, f"pid {pid} not in left_behind {result.left_behind}"
    return matches[0]


# --- (g) clean runs ----------------------------------------------------------------------------


def test_clean_command_has_no_survivors(run: _Runner) -> None:
    result = run(["true"])
    assert result.exit_code == 0
    assert result.left_behind == []
    assert result.timed_out is False
    assert result.start_error is None
    assert result.stray_detection is True
    assert result.duration_ms >= 0


@pytest.mark.parametrize("code", [1, 3, 127])
def test_exit_code_is_propagated(run: _Runner, code: int) -> None:
    result = run(["bash", "-c", f"exit {code}"])
    assert result.exit_code == code
    assert result.left_behind == []


def test_death_by_signal_is_a_negative_exit_code(run: _Runner) -> None:
    result = run(["bash", "-c", "kill -USR1 $$"])
    assert result.exit_code == -signal.SIGUSR1


def test_arguments_are_not_interpreted_by_a_shell(run: _Runner) -> None:
    result = run(["echo", "$HOME", "a;b", "*"])
    assert _stdout(result) == "$HOME a;b *\n"


# --- (a)-(e) processes left behind -------------------------------------------------------------


def test_background_child_is_left_behind_and_killed(run: _Runner) -> None:
    result = run(_bash('sleep 300 & await_exec $! "sleep 300"; echo $!'))
    assert result.exit_code == 0
    pid = _first_pid(result)
    assert _left_behind(result, pid).command == "sleep 300"
    assert _is_gone(pid)


def test_child_escaped_with_setsid_is_killed(run: _Runner) -> None:
    # Prints the sleep's pid, its session id (field 6 of stat) and the trial's own session id.
    result = run(
        _bash(
            'setsid sleep 300 & await_exec $! "sleep 300"\n'
            'echo $! $(cut -d" " -f6 /proc/$!/stat) $$'
        )
    )
    pid, session, trial_session = (int(word) for word in _stdout(result).split())
    assert session != trial_session
    assert _left_behind(result, pid).command == "sleep 300"
    assert _is_gone(pid)


def test_a_process_whose_leader_thread_ended_is_left_behind_and_killed(run: _Runner) -> None:
    # /proc shows it as a zombie, with no environment or command line of its own, while its
    # other thread runs on: it is alive, and escaped its group too.
    result = run(_bash(
        f'setsid {sys.executable} -c "{LEADER_EXITS_ALONE}" 300 & pid=$!\n'
        'until grep -q "^State:.*zombie" /proc/$pid/status; do sleep 0.01; done\n'
        'echo $pid'
    ))
    pid = _first_pid(result)
    assert "300" in _left_behind(result, pid).command
    assert result.exit_code == 0


def test_double_fork_from_shell_is_killed(run: _Runner) -> None:
    result = run(_bash('( ( exec sleep 300 ) & await_exec $! "sleep 300"; echo $! ) &\nwait'))
    pid = _first_pid(result)
    assert _left_behind(result, pid).command == "sleep 300"
    assert _is_gone(pid)


def test_daemonized_process_is_killed(run: _Runner, tmp_path: Path) -> None:
    # The classic daemon recipe: fork, setsid, fork again, detach stdio.  It leaves the process
    # group, the session and the output files; only the environment still points at the trial.
    pid_file = tmp_path / "daemon.pid"
    script = textwrap.dedent(
        f"""
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                with open({str(pid_file)!r} + ".tmp", "w") as handle:
                    handle.write(str(os.getpid()))
                os.rename({str(pid_file)!r} + ".tmp", {str(pid_file)!r})
                time.sleep(300)
            os._exit(0)
        os.wait()
        while not os.path.exists({str(pid_file)!r}):
            time.sleep(0.01)
        """
    )
    result = run([sys.executable, "-c", script])
    assert result.exit_code == 0
    pid = int(pid_file.read_text())
    process = _left_behind(result, pid)
    assert process.command.startswith(sys.executable)
    assert _is_gone(pid)


def test_child_ignoring_sigterm_is_killed(run: _Runner) -> None:
    result = run(_bash("""(trap '' TERM; exec sleep 300) & await_exec $! "sleep 300"; echo $!"""))
    pid = _first_pid(result)
    assert _left_behind(result, pid).command == "sleep 300"
    assert _is_gone(pid)


def test_child_holding_stdout_open_does_not_block(run: _Runner) -> None:
    started = time.monotonic()
    # The pid goes to stderr: on stdout it could land after the first tick.
    result = run(
        ["bash", "-c", "(while true; do echo tick; sleep 0.01; done) & echo $! >&2"], timeout=300
    )
    assert time.monotonic() - started < NO_HANG_SECONDS
    assert result.timed_out is False
    pid = int(result.stderr_path.read_text())
    _left_behind(result, pid)
    assert _is_gone(pid)


def test_survivor_spawning_escaped_children_is_swept_until_none_is_left(run: _Runner) -> None:
    # Children forked after a sweep pass listed /proc but before the parent was killed are only
    # found by a further pass; they left the group, so the group kill cannot catch them either.
    script = textwrap.dedent(
        """
        import os, time
        open("spawner-ready", "w").close()
        for _ in range(2000):  # bounded in case the sweep is broken
            if os.fork() == 0:
                os.setsid()
                time.sleep(300)
                os._exit(0)
        """
    )
    result = run(
        _bash(f"{sys.executable} -c '{script}' &\nuntil [ -e spawner-ready ]; do sleep 0.01; done")
    )
    # run() has checked that nothing survived; here only that the sweep saw the spawner.
    assert any(sys.executable in process.command for process in result.left_behind)
    assert all(_is_gone(process.pid) for process in result.left_behind)


def test_survivor_hopping_between_pids_is_killed(run: _Runner) -> None:
    # Each generation forks its successor and exits, so the pid keeps changing under the sweep.
    # Whether the sweep sees a generation is luck; the group kill is the guarantee (checked by
    # run()), since the chain stays in the trial's process group.
    script = textwrap.dedent(
        """
        import os, time
        while True:
            time.sleep(0.02)
            if os.fork() != 0:
                os._exit(0)
        """
    )
    result = run(["bash", "-c", f"{sys.executable} -c '{script}' & sleep 0.2"])
    assert result.exit_code == 0


def test_survivor_hopping_between_pids_out_of_its_session_is_killed(
        tmp_path: Path, marker: str) -> None:
    """One that leaves the trial's session (so the group kill misses it), lets go of its
    output, and then moves to a new pid every few milliseconds, while other processes of the
    machine take the pids next to its own: the tag sweep still finds it."""
    with pid_churn():
        result = _Runner(tmp_path, marker)(
            ["sh", "-c", f"{sys.executable} -c '{HOPPER}' {marker} </dev/null >/dev/null 2>&1"])
        survivors = hoppers_seen(marker, 0.5)
    assert result.left_behind
    assert survivors == set()


def test_group_member_without_the_tag_is_killed_by_the_group_kill(run: _Runner) -> None:
    # env -i drops the tag (and the test marker), so only the process group still ties this
    # sleep to the trial; it cannot be reported, but it must not survive either.
    result = run(_bash('env -i sleep 300 & await_exec $! "sleep 300"; echo $!'))
    pid = _first_pid(result)
    try:
        assert pid not in {process.pid for process in result.left_behind}
        assert _is_gone(pid)
    finally:
        # Without the marker, the fixture's safety net cannot find this one.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_survivor_seen_in_several_rounds_is_reported_once(
    run: _Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real process that survives a round (D state, slow exit) is hard to produce on demand, so
    # the first kills are skipped instead; the process itself is real.
    real_kill = procfs.kill_tagged
    skipped: list[int] = []

    def late_kill(pid: int, entry: bytes) -> None:
        if len(skipped) < 3:
            skipped.append(pid)
            return
        real_kill(pid, entry)

    monkeypatch.setattr(procfs, "kill_tagged", late_kill)
    result = run(_bash('setsid sleep 300 & await_exec $! "sleep 300"; echo $!'))
    pid = _first_pid(result)
    assert skipped == [pid, pid, pid]
    assert [process.pid for process in result.left_behind] == [pid]
    assert _is_gone(pid)


def test_kill_without_pidfd_support(run: _Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procfs, "HAVE_PIDFD", False)
    result = run(_bash('setsid sleep 300 & await_exec $! "sleep 300"; echo $!'))
    pid = _first_pid(result)
    assert _left_behind(result, pid).command == "sleep 300"
    assert _is_gone(pid)


def test_without_proc_only_the_group_is_killed(
    run: _Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(procfs, "PROC", str(tmp_path / "no-proc"))
    result = run(_bash('sleep 300 & await_exec $! "sleep 300"; echo $!'))
    assert result.stray_detection is False
    assert result.left_behind == []
    assert _is_gone(_first_pid(result))


def test_zombie_is_not_reported(run: _Runner) -> None:
    # The left-behind parent never waits for its child, so the child stays a zombie until the
    # parent is killed; a zombie has exited and is not a survivor.
    script = textwrap.dedent(
        """
        import os, time
        child = os.fork()
        if child == 0:
            os._exit(0)
        # Wait until the child has exited without reaping it: from here on it is a zombie.
        os.waitid(os.P_PID, child, os.WEXITED | os.WNOWAIT)
        with open("pids.tmp", "w") as handle:
            handle.write(f"{os.getpid()} {child}")
        os.rename("pids.tmp", "pids")
        time.sleep(300)
        """
    )
    result = run(
        ["bash", "-c", f"{sys.executable} -c '{script}' &\nuntil [ -e pids ]; do sleep 0.01; done"]
    )
    parent, zombie = (int(word) for word in (run.tmp_path / "pids").read_text().split())
    assert [process.pid for process in result.left_behind] == [parent]
    assert zombie not in {process.pid for process in result.left_behind}
    assert _is_gone(parent)


def test_survivors_are_deduplicated(run: _Runner) -> None:
    result = run(
        _bash(
            'sleep 300 & await_exec $! "sleep 300"\n'
            'sleep 301 & await_exec $! "sleep 301"\n'
            'setsid sleep 302 & await_exec $! "sleep 302"\n'
        )
    )
    pids = [process.pid for process in result.left_behind]
    assert len(pids) == len(set(pids)) == 3
    commands = sorted(process.command for process in result.left_behind)
    assert commands == ["sleep 300", "sleep 301", "sleep 302"]


# --- (f) timeouts ------------------------------------------------------------------------------


def test_timeout_kills_the_command(run: _Runner) -> None:
    started = time.monotonic()
    result = run(["sleep", "300"], timeout=0.5)
    assert time.monotonic() - started < NO_HANG_SECONDS
    assert result.timed_out is True
    assert result.exit_code == -signal.SIGTERM
    assert result.left_behind == []


def test_timeout_kills_a_command_ignoring_sigterm(run: _Runner) -> None:
    started = time.monotonic()
    result = run(
        ["bash", "-c", "trap '' TERM; sleep 300 & echo $!; wait"], timeout=0.5, grace_seconds=0.2
    )
    assert time.monotonic() - started < NO_HANG_SECONDS
    assert result.timed_out is True
    assert result.exit_code == -signal.SIGKILL
    # The sleep was in the group, so the group kill took it: not a survivor.
    assert result.left_behind == []
    assert _is_gone(_first_pid(result))


def test_timeout_also_kills_escaped_processes(run: _Runner) -> None:
    result = run(["bash", "-c", "setsid sleep 300 & echo $!; sleep 300"], timeout=0.5)
    assert result.timed_out is True
    pid = _first_pid(result)
    assert [process.pid for process in result.left_behind] == [pid]
    assert _is_gone(pid)


def test_timeout_gives_grace_to_a_sigterm_handler(run: _Runner) -> None:
    script = "trap 'echo cleaned up; exit 0' TERM; sleep 300 & wait"
    result = run(["bash", "-c", script], timeout=0.5, grace_seconds=10)
    assert result.timed_out is True
    assert result.exit_code == 0
    assert "cleaned up" in _stdout(result)


# --- (h) start errors --------------------------------------------------------------------------


def test_missing_program_is_a_start_error(run: _Runner) -> None:
    result = run(["definitely-not-a-command-4711"])
    assert result.start_error == "command not found: definitely-not-a-command-4711"
    assert result.exit_code is None
    assert result.timed_out is False
    assert result.left_behind == []
    assert result.stdout_path.read_bytes() == b""
    assert result.stderr_path.read_bytes() == b""


def test_non_executable_file_is_a_start_error(run: _Runner, tmp_path: Path) -> None:
    script = tmp_path / "x.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
    result = run(["./x.sh"], cwd=tmp_path)
    assert result.start_error == "not executable: ./x.sh (permission denied)"
    assert result.exit_code is None
    assert result.stdout_path.exists()
    assert result.stderr_path.exists()


def test_missing_working_directory_is_a_start_error(run: _Runner, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    result = run(["true"], cwd=missing)
    assert result.start_error == f"working directory not found: {missing}"
    assert result.exit_code is None
    assert result.stdout_path.read_bytes() == b""


def test_empty_command_is_a_start_error(run: _Runner) -> None:
    result = run([])
    assert result.start_error == "empty command"
    assert result.exit_code is None
    assert result.stdout_path.exists()


def test_other_start_failures_are_reported(run: _Runner, tmp_path: Path) -> None:
    # Executable but neither a binary nor a script with a shebang: execve fails with ENOEXEC.
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x00\x01\x02 not a program")
    garbage.chmod(0o755)
    result = run([str(garbage)])
    assert result.start_error is not None
    assert result.start_error.startswith(f"could not start {garbage}: ")
    assert result.exit_code is None


def test_relative_program_is_resolved_in_the_working_directory(
    run: _Runner, tmp_path: Path
) -> None:
    script = tmp_path / "hello.sh"
    script.write_text("#!/bin/sh\necho hello from $(pwd)\n")
    script.chmod(0o755)
    result = run(["./hello.sh"], cwd=tmp_path)
    assert result.start_error is None
    assert _stdout(result) == f"hello from {tmp_path}\n"


# --- (i)-(k) stdin, output files, environment --------------------------------------------------


def test_stdin_is_closed(run: _Runner) -> None:
    # pytest already points fd 0 at /dev/null; give the runner a stdin that never ends, so a
    # child inheriting it instead of getting /dev/null would block until the timeout.
    read_end, write_end = os.pipe()
    saved_stdin = os.dup(0)
    os.dup2(read_end, 0)
    try:
        started = time.monotonic()
        result = run(["cat"], timeout=10)
    finally:
        os.dup2(saved_stdin, 0)
        for fd in (saved_stdin, read_end, write_end):
            os.close(fd)
    assert time.monotonic() - started < NO_HANG_SECONDS
    assert result.timed_out is False
    assert result.exit_code == 0
    assert result.stdout_path.read_bytes() == b""


def test_large_output_goes_to_a_file(run: _Runner) -> None:
    size = 10 * 1024 * 1024
    result = run(["head", "-c", str(size), "/dev/zero"])
    assert result.exit_code == 0
    assert result.stdout_path.stat().st_size == size
    assert result.stderr_path.stat().st_size == 0


def test_output_bytes_are_preserved_raw(run: _Runner) -> None:
    payload = b"\xff\xfe\x00\x80 caf\xe9\r\n\x1b[0m"
    script = (
        "import sys; "
        f"sys.stdout.buffer.write({payload!r}); "
        f"sys.stderr.buffer.write({payload[::-1]!r})"
    )
    result = run([sys.executable, "-c", script])
    assert result.stdout_path.read_bytes() == payload
    assert result.stderr_path.read_bytes() == payload[::-1]


def test_output_directory_is_created(run: _Runner, tmp_path: Path) -> None:
    output_dir = tmp_path / "deep" / "er"
    result = run_process(
        ["echo", "hi"], cwd=tmp_path, env=run.env(), timeout=60, output_dir=output_dir
    )
    assert result.stdout_path == output_dir / "stdout"
    assert result.stderr_path == output_dir / "stderr"
    assert result.stdout_path.read_text() == "hi\n"


def test_environment_is_exactly_env_plus_tag(run: _Runner) -> None:
    env = {"PATH": os.environ["PATH"], "GREETING": "hello world", MARKER_VARIABLE: run.marker}
    script = "import json, os; print(json.dumps(dict(os.environ)))"
    first = run([sys.executable, "-c", script], env=env)
    second = run([sys.executable, "-c", script], env=env)
    first_env = json.loads(_stdout(first))
    second_env = json.loads(_stdout(second))
    tag = first_env.pop(PROCESS_TAG_VARIABLE)
    runner, trial = tag.split("-")  # the runner's own part (its watchdog's key), the trial's
    assert (len(runner), len(trial)) == (16, 32)
    assert int(runner, 16) >= 0 and int(trial, 16) >= 0
    again = second_env[PROCESS_TAG_VARIABLE].split("-")
    assert again[0] == runner and again[1] != trial  # fresh for every trial
    # Nothing of the runner's environment leaks in (apart from what the interpreter adds itself).
    first_env.pop("LC_CTYPE", None)
    assert first_env == env
    assert PROCESS_TAG_VARIABLE not in env  # the caller's mapping is not modified


def test_existing_tag_in_env_is_replaced(run: _Runner) -> None:
    env = run.env({PROCESS_TAG_VARIABLE: "outer"})
    result = run(["bash", "-c", f"echo ${PROCESS_TAG_VARIABLE}"], env=env)
    assert _stdout(result).strip() not in {"", "outer"}


def test_tag_is_not_matched_as_a_prefix_or_inside_another_value(run: _Runner) -> None:
    # Processes whose environment merely contains the tag text must be left alone.
    script = textwrap.dedent(
        f"""
        import os, subprocess, sys
        tag = os.environ[{PROCESS_TAG_VARIABLE!r}]
        env = {{k: v for k, v in os.environ.items() if k != {PROCESS_TAG_VARIABLE!r}}}
        env["OTHER"] = "{PROCESS_TAG_VARIABLE}=" + tag
        env[{PROCESS_TAG_VARIABLE!r}] = tag + "0"
        # Away from the trial's output, which would give it away (see test_capture.py).
        child = subprocess.Popen(["sleep", "300"], env=env, start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(child.pid, flush=True)
        os._exit(0)
        """
    )
    # No run() here: its own check would (rightly) flag the deliberately unmatched sleep.
    result = run_process(
        [sys.executable, "-c", script],
        cwd=run.tmp_path,
        env=run.env(),
        timeout=60,
        output_dir=run.tmp_path / "out",
    )
    pid = _first_pid(result)
    try:
        assert result.left_behind == []
        assert not _is_gone(pid)
    finally:
        os.kill(pid, signal.SIGKILL)
    assert _wait_gone(pid)


# --- interruption ------------------------------------------------------------------------------


@pytest.mark.parametrize("exception", [KeyboardInterrupt, RuntimeError])
def test_interrupted_wait_kills_everything(
    run: _Runner, tmp_path: Path, exception: type[BaseException]
) -> None:
    # A signal handler raising inside the wait stands in for Ctrl-C and for pytest-timeout's
    # signal method.  SIGUSR1 rather than SIGALRM, which pytest-timeout itself uses.
    def interrupt(signum: int, frame: object) -> None:
        raise exception("interrupted")

    previous = signal.signal(signal.SIGUSR1, interrupt)
    timer = threading.Timer(1.0, os.kill, args=(os.getpid(), signal.SIGUSR1))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(exception, match="interrupted"):
            run_process(
                ["bash", "-c", "setsid sleep 300 & sleep 301 & echo started; wait"],
                cwd=tmp_path,
                env=run.env(),
                timeout=300,
                output_dir=tmp_path / "out",
            )
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)
    assert time.monotonic() - started < NO_HANG_SECONDS
    assert (tmp_path / "out" / "stdout").read_text() == "started\n"
    assert run.alive() == []
    assert _zombie_children() == []


def test_the_pid_window_covers_exactly_the_pids_handed_out_since_the_start() -> None:
    window = pid_window(1000, 1010, 32768)
    assert window is not None
    assert [pid for pid in (999, 1000, 1001, 1010, 1011) if window(pid)] == [1001, 1010]
    # The counter wrapped once during the trial: new pids are above the start or low again.
    wrapped = pid_window(32700, 400, 32768)
    assert wrapped is not None
    assert [pid for pid in (300, 400, 401, 32700, 32701) if wrapped(pid)] == [300, 400, 32701]
    # Too many pids handed out to rule out a full turn, or nothing known: read every process.
    assert pid_window(1000, 1000 + 32768 // 2, 32768) is None
    assert pid_window(None, 1010, 32768) is None
    assert pid_window(1000, None, 32768) is None
