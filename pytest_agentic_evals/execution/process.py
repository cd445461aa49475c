"""Run one trial command with full process hygiene.

A trial is an arbitrary command written by someone else, so the runner assumes the worst: it
may print gigabytes, leave daemons behind, escape its process group with ``setsid`` or a double
fork, ignore SIGTERM, or keep its stdout open forever.  :func:`run_process` contains all of that:

* output goes through pipes that a thread of the runner copies into files (:mod:`.capture`):
  nothing of the trial can rewrite what it printed, runner memory stays bounded, and a
  survivor holding stdout open cannot make the runner wait for an EOF that never comes;
* the trial runs in its own session, so the whole process group can be signalled at once;
* every process of the trial inherits a unique tag in its environment, and after the run the
  runner finds every live process carrying that tag by reading ``/proc/<pid>/environ`` and kills
  it, which also catches processes that left the group or the session (:mod:`.procfs`);
* should the runner die (SIGKILL included) while a trial runs, a watchdog does the same: a
  small process in a session of its own, started with the first trial, waits for the end of a
  pipe from the runner and then kills the process groups of the trials still running and every
  process carrying a tag of this runner. What drops its tag and leaves its group (``env -i
  setsid``) escapes that watch: only the sandbox (:mod:`.confined`) is proof against it
  (:mod:`.watchdog`). After a trial, one that kept stdout or stderr open is still found, by
  the pipe it holds.

Kept free of pytest imports so that it works the same outside a pytest session.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentic_evals.execution import procfs
from pytest_agentic_evals.execution.capture import HELD_OPEN_SECONDS, Capture
from pytest_agentic_evals.execution.procfs import (
    DEATH_WAIT_SECONDS,
    NARROW_SWEEP_MAX_SECONDS,
    SWEEP_PAUSE_SECONDS,
    LeftBehindProcess,
    group_exists,
    group_has_live_member,
    last_pid,
    settle_group,
    sweep,
    sweep_holders,
    ticks_now,
)
from pytest_agentic_evals.execution.watchdog import RUNNER_TAG, watch

__all__ = [
    "PROCESS_TAG_VARIABLE",
    "LeftBehindProcess",
    "ProcessResult",
    "describe_start_error",
    "run_process",
]

PROCESS_TAG_VARIABLE = "AGENTIC_EVALS_PROCESS_TAG"
# Once the trial is torn down its output pipes end at once; if they have not after this long,
# a process that escaped the teardown holds one, and is looked for.
HOLDER_WAIT_SECONDS = 0.1
# How long the runner looks for such a holder (one it cannot see, another user's, keeps it
# looking this long; the output is then cut off after HELD_OPEN_SECONDS more).
HOLDER_SWEEP_SECONDS = 1.0


@dataclass
class ProcessResult:
    """Outcome of one :func:`run_process` call."""

    # Popen returncode: negative means killed by that signal; None when it never started.
    exit_code: int | None
    timed_out: bool
    duration_ms: int
    start_error: str | None
    # Processes of this trial found alive after the main process was reaped (after the timeout
    # kill sequence, if there was one); the runner killed all of them.
    left_behind: list[LeftBehindProcess]
    stdout_path: Path
    stderr_path: Path
    # True when survivors could be searched for (Linux /proc available).
    stray_detection: bool
    # The sandbox could not be set up, so the command never ran (an infrastructure problem).
    setup_error: str | None = None
    # The trial broke its sandbox's supervisor, so what it left behind may be unknown.
    integrity_error: str | None = None


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    output_dir: Path,
    grace_seconds: float = 1.0,
) -> ProcessResult:
    """Run ``argv`` (no shell) and return its outcome; no process of it survives this call.

    ``env`` is the complete child environment (it is not merged with ``os.environ``); the
    process tag is added to a copy.  ``duration_ms`` covers start to reaping of the main
    process, including the kill sequence after a timeout but not the survivor sweep.
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    tag = f"{RUNNER_TAG}-{uuid.uuid4().hex}"
    run = _Run(
        stdout_path=output_dir / "stdout",
        stderr_path=output_dir / "stderr",
        entry=f"{PROCESS_TAG_VARIABLE}={tag}".encode(),
        stray_detection=os.path.isdir(os.path.join(procfs.PROC, "self")),
        started_at=time.monotonic(),
        since_ticks=ticks_now() - 1,  # a tick of slack: start times are rounded down
        pid_before=last_pid(),
    )
    started: subprocess.Popen[bytes] | ProcessResult | None = None
    finished = False
    capture = Capture(run.stdout_path, run.stderr_path)
    try:
        started = _start(run, argv, cwd, {**env, PROCESS_TAG_VARIABLE: tag}, capture)
        if isinstance(started, ProcessResult):
            result = started
        else:
            result = _finish(run, started, timeout, grace_seconds)
            if run.stray_detection and not capture.ended(HOLDER_WAIT_SECONDS):
                # Something outside the group, without the tag, still holds the output: it
                # came from the trial (no one else was given the pipes).
                result.left_behind += sweep_holders(
                    capture.inodes, held=lambda: not capture.ended(0),
                    seconds=HOLDER_SWEEP_SECONDS)
        finished = True
    finally:
        if not finished:
            # Interrupted (Ctrl-C, pytest-timeout raising inside the wait, ...): nothing of the
            # trial may outlive the runner's stack frame, so kill without a grace period.
            proc = started if isinstance(started, subprocess.Popen) else None
            _emergency_cleanup(proc, run.entry, run.stray_detection, run.since_ticks)
        capture.close(HELD_OPEN_SECONDS if finished else 0)
    result.integrity_error = result.integrity_error or capture.problem
    return result


@dataclass(frozen=True)
class _Run:
    """What one run_process call knows before its command starts."""

    stdout_path: Path
    stderr_path: Path
    entry: bytes
    """The process tag as it appears in a tagged process's environment."""
    stray_detection: bool
    started_at: float
    since_ticks: int
    pid_before: int | None

    def result(self, **outcome: Any) -> ProcessResult:
        fields: dict[str, Any] = {"exit_code": None, "timed_out": False, "start_error": None,
                                  "left_behind": [], "duration_ms": _elapsed_ms(self.started_at)}
        fields.update(outcome)
        return ProcessResult(stdout_path=self.stdout_path, stderr_path=self.stderr_path,
                             stray_detection=self.stray_detection, **fields)


def _start(run: _Run, argv: Sequence[str], cwd: Path, env: Mapping[str, str],
           capture: Capture) -> subprocess.Popen[bytes] | ProcessResult:
    """The command started in a session of its own, or the result of a command that did not
    start (its output files exist, empty)."""
    if not argv:
        return run.result(start_error="empty command")
    if not cwd.is_dir():
        return run.result(start_error=f"working directory not found: {cwd}")
    watch(None)  # the watchdog runs before the trial does
    try:
        proc = subprocess.Popen(
            list(argv), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
            stdout=capture.stdout, stderr=capture.stderr, close_fds=True,
            start_new_session=True,
        )
    except OSError as exc:
        return run.result(start_error=describe_start_error(exc, argv[0], cwd))
    capture.start()
    return proc


def _finish(run: _Run, proc: subprocess.Popen[bytes], timeout: float,
            grace_seconds: float) -> ProcessResult:
    """Wait for the command (killing its group after ``timeout``), then find and kill what it
    left behind."""
    # Popen made the child its own session leader, so its pid is also its group id.
    pgid = proc.pid
    watch(f"+{pgid}")
    timed_out = False
    try:
        exit_code = _wait(proc, timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        exit_code = _terminate_group(proc, pgid, grace_seconds)
    duration_ms = _elapsed_ms(run.started_at)
    left_behind: list[LeftBehindProcess] = []
    if run.stray_detection:
        if timed_out:
            settle_group(run.entry, pgid)
        # Members still in the group (zombies included) hint that something outlived the
        # main process; one pass may then miss a pid created while /proc was being listed.
        short = time.monotonic() - run.started_at < NARROW_SWEEP_MAX_SECONDS
        left_behind = sweep(run.entry, run.since_ticks, confirm=group_exists(pgid),
                            pid_after=run.pid_before if short else None)
    # Also catches group members that dropped the tag from their environment.  The group id
    # cannot have been recycled: pids are reused only after wrapping around pid_max.
    _kill_group(pgid, run.stray_detection)
    watch(f"-{pgid}")
    return run.result(exit_code=exit_code, timed_out=timed_out, duration_ms=duration_ms,
                      left_behind=left_behind)


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> int:
    """Wait for the main process; raise TimeoutExpired after ``timeout`` seconds.

    Popen.wait with a timeout polls with growing sleeps, so a quick command is noticed up to
    milliseconds late; a pidfd becomes readable the moment the process exits.
    """
    if procfs.HAVE_PIDFD:
        try:
            pidfd = os.pidfd_open(proc.pid)
        except OSError:
            pidfd = -1
        if pidfd >= 0:
            try:
                poller = select.poll()
                poller.register(pidfd, select.POLLIN)
                if not poller.poll(max(0, int(timeout * 1000))):
                    raise subprocess.TimeoutExpired(proc.args, timeout)
            finally:
                os.close(pidfd)
            return proc.wait()
    return proc.wait(timeout=timeout)


def _elapsed_ms(started_at: float) -> int:
    return int((time.monotonic() - started_at) * 1000)


def describe_start_error(exc: OSError, program: str, cwd: Path) -> str:
    # subprocess reports a failed chdir in the child with the directory as the filename; the
    # directory can vanish between our is_dir() check and the fork.
    if exc.filename is not None and str(exc.filename) == str(cwd):
        if isinstance(exc, FileNotFoundError):
            return f"working directory not found: {cwd}"
        return f"working directory not usable: {cwd} ({exc.strerror})"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {program}"
    if isinstance(exc, PermissionError):
        return f"not executable: {program} (permission denied)"
    return f"could not start {program}: {exc.strerror or exc}"


def _signal_group(pgid: int, sig: int) -> bool:
    """Signal the group; False when it has no member left that the runner may signal."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        # An empty group is the normal case; EPERM would only mean that every remaining member
        # changed credentials, and there is nothing more the runner can do then.
        return False
    return True


def _kill_group(pgid: int, stray_detection: bool) -> None:
    """SIGKILL the group and wait (bounded) until its members are dead."""
    if not _signal_group(pgid, signal.SIGKILL):
        return
    deadline = time.monotonic() + DEATH_WAIT_SECONDS
    while time.monotonic() < deadline:
        if stray_detection:
            if not group_has_live_member(pgid):
                return
        # Without /proc, signal 0 is the only probe; it may also count zombies, which is why
        # the wait is bounded.
        elif not _signal_group(pgid, 0):
            return
        time.sleep(SWEEP_PAUSE_SECONDS)


def _terminate_group(proc: subprocess.Popen[bytes], pgid: int, grace_seconds: float) -> int:
    _signal_group(pgid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=max(grace_seconds, 0.0))
    # Unconditional: even when the main process obeyed SIGTERM, other group members may not.
    _signal_group(pgid, signal.SIGKILL)
    # Unbounded on purpose: SIGKILL cannot be ignored, and returning without reaping would leave
    # a zombie and an unknown exit code.
    return proc.wait()


def _emergency_cleanup(
    proc: subprocess.Popen[bytes] | None, entry: bytes, stray_detection: bool, since_ticks: int
) -> None:
    if proc is not None:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
    if stray_detection:
        # Runs even when Popen itself was interrupted after the fork and proc is unknown: the
        # tag still identifies the child.
        sweep(entry, since_ticks)
    if proc is not None:
        _kill_group(proc.pid, stray_detection)
        watch(f"-{proc.pid}")
