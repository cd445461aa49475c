"""Run one trial command with full process hygiene.

A trial is an arbitrary command written by someone else, so the runner assumes the worst: it
may print gigabytes, leave daemons behind, escape its process group with ``setsid`` or a double
fork, ignore SIGTERM, or keep its stdout open forever.  :func:`run_process` contains all of that:

* output goes straight to files, never through pipes, so runner memory stays bounded and a
  survivor holding stdout open cannot make the runner wait for an EOF that never comes;
* the trial runs in its own session, so the whole process group can be signalled at once;
* every process of the trial inherits a unique tag in its environment, and after the run the
  runner finds every live process carrying that tag by reading ``/proc/<pid>/environ`` and kills
  it, which also catches processes that left the group or the session;
* should the runner die (SIGKILL included) while a trial runs, a watchdog does the same: a
  small process in a session of its own, started with the first trial, waits for the end of a
  pipe from the runner and then kills the process groups of the trials still running and every
  process carrying a tag of this runner. What drops its tag and leaves its group (``env -i
  setsid``) escapes that watch: only the sandbox (:mod:`.confined`) is proof against it.

Kept free of pytest imports so that it works the same outside a pytest session.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "PROCESS_TAG_VARIABLE",
    "LeftBehindProcess",
    "ProcessResult",
    "command_line",
    "describe_start_error",
    "process_state",
    "run_process",
]

PROCESS_TAG_VARIABLE = "AGENTIC_EVALS_PROCESS_TAG"

_PROC = "/proc"
# Survivors can fork between a scan and the kill, so the sweep repeats; the bound keeps a fork
# bomb from trapping the runner forever.
_SWEEP_ROUNDS = 50
_SWEEP_PAUSE_SECONDS = 0.005
_CONFIRMING_ROUNDS = 2
_DEATH_WAIT_SECONDS = 5.0
# After the group SIGKILL on timeout, group members need a moment to finish dying; without this
# pause they would be reported as left behind although the group kill already got them.
_GROUP_SETTLE_SECONDS = 1.0

# Pids are handed out in increasing order until they wrap at pid_max, so every process a trial
# created has a pid above the last one handed out before it started. After a short trial the
# counter cannot have gone round, and the sweep reads only those pids instead of every process
# on the machine; after a long one (or when the counter cannot be read) it reads them all.
_NARROW_SWEEP_MAX_SECONDS = 1.0

_HAVE_PIDFD = hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")


@dataclass(frozen=True)
class LeftBehindProcess:
    """A process of a trial that was still alive after the trial's main process ended."""

    pid: int
    command: str  # /proc/<pid>/cmdline joined with spaces ("" if unreadable)


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
    stdout_path = output_dir / "stdout"
    stderr_path = output_dir / "stderr"
    tag = f"{_RUNNER_TAG}-{uuid.uuid4().hex}"
    entry = f"{PROCESS_TAG_VARIABLE}={tag}".encode()
    child_env = dict(env)
    child_env[PROCESS_TAG_VARIABLE] = tag
    stray_detection = os.path.isdir(os.path.join(_PROC, "self"))

    def not_started(message: str, started_at: float) -> ProcessResult:
        return ProcessResult(
            exit_code=None,
            timed_out=False,
            duration_ms=_elapsed_ms(started_at),
            start_error=message,
            left_behind=[],
            stdout_path=stdout_path,
            stderr_path=stderr_path,
            stray_detection=stray_detection,
        )

    proc: subprocess.Popen[bytes] | None = None
    finished = False
    started_at = time.monotonic()
    since_ticks = _ticks_now() - 1  # a tick of slack: start times are rounded down
    pid_before = _last_pid()
    try:
        # The files are opened before the checks below so that they exist (empty) for every
        # outcome, including commands that never start.
        with new_file(stdout_path) as out, new_file(stderr_path) as err:
            if not argv:
                finished = True
                return not_started("empty command", started_at)
            if not cwd.is_dir():
                finished = True
                return not_started(f"working directory not found: {cwd}", started_at)
            _watch(None)  # the watchdog runs before the trial does
            try:
                proc = subprocess.Popen(
                    list(argv),
                    cwd=cwd,
                    env=child_env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    close_fds=True,
                    start_new_session=True,
                )
            except OSError as exc:
                finished = True
                return not_started(describe_start_error(exc, argv[0], cwd), started_at)
        # Popen made the child its own session leader, so its pid is also its group id.
        pgid = proc.pid
        _watch(f"+{pgid}")

        timed_out = False
        try:
            exit_code = _wait(proc, timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            exit_code = _terminate_group(proc, pgid, grace_seconds)
        duration_ms = _elapsed_ms(started_at)

        left_behind: list[LeftBehindProcess] = []
        if stray_detection:
            if timed_out:
                _settle_group(entry, pgid)
            # Members still in the group (zombies included) hint that something outlived the
            # main process; one pass may then miss a pid created while /proc was being listed.
            short = time.monotonic() - started_at < _NARROW_SWEEP_MAX_SECONDS
            left_behind = _sweep(entry, since_ticks, confirm=_group_exists(pgid),
                                 pid_after=pid_before if short else None)
        # Also catches group members that dropped the tag from their environment.  The group id
        # cannot have been recycled: pids are reused only after wrapping around pid_max.
        _kill_group(pgid, stray_detection)
        _watch(f"-{pgid}")
        finished = True
        return ProcessResult(
            exit_code=exit_code,
            timed_out=timed_out,
            duration_ms=duration_ms,
            start_error=None,
            left_behind=left_behind,
            stdout_path=stdout_path,
            stderr_path=stderr_path,
            stray_detection=stray_detection,
        )
    finally:
        if not finished:
            # Interrupted (Ctrl-C, pytest-timeout raising inside the wait, ...): nothing of the
            # trial may outlive the runner's stack frame, so kill without a grace period.
            _emergency_cleanup(proc, entry, stray_detection, since_ticks)


def new_file(path: Path) -> BinaryIO:
    """``path`` opened for writing as a new, empty file.

    A trial directory is reused, and truncating the previous trial's output would wait for
    its data to reach the disk first (a file system flushes a truncated file's pending
    writes); a file unlinked and made anew does not wait."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return open(path, "wb")


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> int:
    """Wait for the main process; raise TimeoutExpired after ``timeout`` seconds.

    Popen.wait with a timeout polls with growing sleeps, so a quick command is noticed up to
    milliseconds late; a pidfd becomes readable the moment the process exits.
    """
    if _HAVE_PIDFD:
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
    deadline = time.monotonic() + _DEATH_WAIT_SECONDS
    while time.monotonic() < deadline:
        if stray_detection:
            if not _group_has_live_member(pgid):
                return
        # Without /proc, signal 0 is the only probe; it may also count zombies, which is why
        # the wait is bounded.
        elif not _signal_group(pgid, 0):
            return
        time.sleep(_SWEEP_PAUSE_SECONDS)


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
        _sweep(entry, since_ticks)
    if proc is not None:
        _kill_group(proc.pid, stray_detection)
        _watch(f"-{proc.pid}")


# --- the watchdog --------------------------------------------------------------------------

# Every tag of this runner process starts with it, so that the watchdog knows them all.
_RUNNER_TAG = uuid.uuid4().hex[:16]
# The watchdog: reads "+pgid" / "-pgid" lines (trials starting and ending) until the runner's end
# closes the pipe, then kills the groups of the trials still running and every process whose
# environment holds a tag of this runner, a few rounds (a process may fork meanwhile).
WATCHDOG = r"""
import os, signal, sys, time
groups = set()
for line in sys.stdin:
    line = line.strip()
    if line[:1] == "+":
        groups.add(int(line[1:]))
    elif line[:1] == "-":
        groups.discard(int(line[1:]))
entry = b"\0AGENTIC_EVALS_PROCESS_TAG=" + sys.argv[1].encode() + b"-"
for _ in range(20):
    tagged = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as handle:
                if entry not in b"\0" + handle.read():
                    continue
            with open("/proc/%s/stat" % name, "rb") as handle:
                groups.add(int(handle.read().rsplit(b")", 1)[1].split()[2]))
        except (OSError, IndexError, ValueError):
            continue
        tagged.append(int(name))
    # The group of every tagged process too: members that dropped the tag are in there.
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
    for pid in tagged:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if not tagged:
        break
    groups = set()
    time.sleep(0.01)
"""
_watchdog: tuple[int, subprocess.Popen[bytes], int] | None = None  # (runner pid, process, pipe)


def _watch(line: str | None) -> None:
    """Tell the watchdog of this runner process about a trial's group (``line``), starting the
    watchdog first when it is not running."""
    global _watchdog
    if not os.path.isdir(os.path.join(_PROC, "self")):
        return  # the watchdog finds processes through /proc
    if _watchdog is None or _watchdog[0] != os.getpid() or _watchdog[1].poll() is not None:
        if line is not None and line.startswith("-"):
            return
        read, write = os.pipe()
        try:
            watchdog = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", WATCHDOG, _RUNNER_TAG], stdin=read,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                start_new_session=True,  # a signal to the runner's group must not end it
            )
        except OSError:
            os.close(write)
            return
        finally:
            os.close(read)
        _watchdog = (os.getpid(), watchdog, write)
    if line is not None:
        with contextlib.suppress(OSError):
            os.write(_watchdog[2], f"{line}\n".encode())


# --- /proc scanning -------------------------------------------------------------------------


def _has_entry(environ: bytes, entry: bytes) -> bool:
    """True if the NUL-separated ``environ`` block holds exactly ``entry`` as one variable."""
    start = 0
    while True:
        index = environ.find(entry, start)
        if index < 0:
            return False
        end = index + len(entry)
        # Bounds checks reject look-alikes such as a longer tag or the tag inside another value.
        if (index == 0 or environ[index - 1] == 0) and (end == len(environ) or environ[end] == 0):
            return True
        start = index + 1


def _read_environ(pid: int) -> bytes | None:
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as handle:
            return handle.read()
    except OSError:
        # Vanished, or not ours to read: either way not something the sweep can act on.
        return None


def _group_of(pid: int) -> int | None:
    state = process_state(pid)
    return None if state is None else state[1]


def process_state(pid: int, proc: str = _PROC) -> tuple[str, int] | None:
    """(state letter, process group id) of ``pid`` in the procfs at ``proc``, or None when it
    no longer exists."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    # The command name in parentheses may itself contain spaces and parentheses, so split after
    # the last closing parenthesis: "pid (comm) state ppid pgrp ...".
    fields = raw[raw.rfind(b")") + 1 :].split()
    try:
        return fields[0].decode("ascii", "replace"), int(fields[2])
    except (IndexError, ValueError):
        return None


def _is_tagged_alive(pid: int, entry: bytes) -> bool:
    environ = _read_environ(pid)
    if environ is None or not _has_entry(environ, entry):
        return False
    state = process_state(pid)
    # A zombie has already exited; only its parent's wait is missing.
    return state is not None and state[0] != "Z"


def _scan_pids(
    entry: bytes,
    unsettled: list[int] | None = None,
    since_ticks: int = 0,
    pid_after: int | None = None,
) -> Iterator[int]:
    """Yield live, non-zombie processes carrying ``entry`` (never the runner itself).

    A process in the middle of ``execve`` shows an empty environment for an instant, so a
    survivor caught then would go unseen. When ``unsettled`` is given, live processes started
    since ``since_ticks`` (clock ticks after boot) whose environment reads empty are appended
    to it, so that the caller can look again. With ``pid_after`` (the last pid handed out
    before the trial started), only pids handed out since then are read.
    """
    own_pid = os.getpid()
    try:
        names = os.listdir(_PROC)
    except OSError:
        return
    # Read after the listing: every listed pid was handed out before this read.
    is_new = _handed_out_since(pid_after)
    for name in names:
        if not name.isdigit():
            continue
        pid = int(name)
        if pid == own_pid or (is_new is not None and not is_new(pid)):
            continue
        # environ is checked first: it rules out almost every process, so stat is only read for
        # the few that match.
        environ = _read_environ(pid)
        if environ is None:
            continue
        if _has_entry(environ, entry):
            state = process_state(pid)
            # A zombie has already exited; only its parent's wait is missing.
            if state is not None and state[0] != "Z":
                yield pid
        elif not environ and unsettled is not None and _started_since(pid, since_ticks):
            unsettled.append(pid)


def _last_pid() -> int | None:
    """The last pid handed out in the runner's pid namespace (the last field of loadavg)."""
    try:
        with open(f"{_PROC}/loadavg", "rb") as handle:
            return int(handle.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


@functools.cache
def _pid_max() -> int | None:
    try:
        with open(f"{_PROC}/sys/kernel/pid_max", "rb") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return None


def _handed_out_since(pid_after: int | None) -> Callable[[int], bool] | None:
    """A test for pids handed out after ``pid_after``; None when every pid must be read."""
    return pid_window(pid_after, _last_pid(), _pid_max())


def pid_window(
    pid_after: int | None, last: int | None, pid_max: int | None
) -> Callable[[int], bool] | None:
    """A test for pids handed out after ``pid_after`` up to ``last``; None when unknown."""
    if pid_after is None or last is None or pid_max is None:
        return None
    # Far more pids than a short trial makes suggests the counter may have gone round.
    if (last - pid_after) % pid_max > pid_max // 4:
        return None
    if last >= pid_after:
        return lambda pid: pid_after < pid <= last
    return lambda pid: pid > pid_after or pid <= last  # wrapped once since the trial started


def _ticks_now() -> int:
    """Clock ticks since boot, the unit of a process's start time in /proc/<pid>/stat."""
    try:
        with open(f"{_PROC}/uptime", "rb") as handle:
            uptime = float(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return int(uptime * os.sysconf("SC_CLK_TCK"))


def _started_since(pid: int, since_ticks: int) -> bool:
    """True for a live, non-zombie process that started at or after ``since_ticks``."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as handle:
            raw = handle.read()
        fields = raw[raw.rfind(b")") + 1 :].split()
        return fields[0] != b"Z" and int(fields[19]) >= since_ticks
    except (OSError, IndexError, ValueError):
        return False


def _group_has_live_member(pgid: int) -> bool:
    # Reads every stat file, which is why this runs only after a group kill that hit someone.
    try:
        names = os.listdir(_PROC)
    except OSError:
        return False
    for name in names:
        if name.isdigit():
            state = process_state(int(name))
            if state is not None and state[1] == pgid and state[0] != "Z":
                return True
    return False


def command_line(pid: int, proc: str = _PROC) -> str:
    """The command line of ``pid`` in the procfs at ``proc``, its name when it has none."""
    try:
        with open(f"{proc}/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
    except OSError:
        raw = b""
    if raw:
        return " ".join(part.decode("utf-8", "replace") for part in raw.rstrip(b"\0").split(b"\0"))
    # Caught mid-exec or while dying, a process has no command line yet; its name still says
    # what it is.
    try:
        with open(f"{proc}/{pid}/comm", "rb") as handle:
            return f"[{handle.read().strip().decode('utf-8', 'replace')}]"
    except OSError:
        return ""


def _kill(pid: int, entry: bytes) -> None:
    if _HAVE_PIDFD:
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            return
        except OSError:
            pidfd = -1  # ENOSYS on old kernels, EMFILE under a fork storm: fall back to kill().
        if pidfd >= 0:
            try:
                # The pidfd pins whichever process owns the pid now, which may be an unrelated
                # one that recycled the pid since the scan; only signal it if it is tagged.
                if _is_tagged_alive(pid, entry):
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass
            finally:
                os.close(pidfd)
            return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def _settle_group(entry: bytes, pgid: int) -> None:
    deadline = time.monotonic() + _GROUP_SETTLE_SECONDS
    while time.monotonic() < deadline:
        if not any(_group_of(pid) == pgid for pid in _scan_pids(entry)):
            return
        time.sleep(_SWEEP_PAUSE_SECONDS)


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep(
    entry: bytes, since_ticks: int = 0, confirm: bool = False, pid_after: int | None = None
) -> list[LeftBehindProcess]:
    """Kill every live process carrying ``entry``; return them in discovery order.

    ``pid_after``: see :func:`_scan_pids`.
    """
    found: dict[int, LeftBehindProcess] = {}
    empty_rounds = 0
    for _ in range(_SWEEP_ROUNDS):
        unsettled: list[int] = []
        if _sweep_round(entry, found, unsettled, since_ticks, pid_after) or unsettled:
            # A process mid-exec may be ours: look again once its environment is readable.
            empty_rounds = 0
        else:
            empty_rounds += 1
            # A clean trial costs one pass.  Once survivors were seen, one empty pass is weak
            # evidence: a process that forks and exits can move to a pid the listing of that
            # pass did not contain yet.
            if (not found and not confirm) or empty_rounds >= _CONFIRMING_ROUNDS:
                break
        time.sleep(_SWEEP_PAUSE_SECONDS)
    _wait_until_dead(list(found), _DEATH_WAIT_SECONDS)
    return list(found.values())


def _sweep_round(
    entry: bytes,
    found: dict[int, LeftBehindProcess],
    unsettled: list[int],
    since_ticks: int,
    pid_after: int | None,
) -> bool:
    """One pass over /proc; True if any tagged process was alive (and was sent SIGKILL)."""
    any_alive = False
    # Kill on discovery rather than after the pass: a process that keeps forking and exiting
    # gets less time to hand over to a new pid.
    for pid in _scan_pids(entry, unsettled, since_ticks, pid_after):
        any_alive = True
        if pid not in found:
            # Read before the kill: a dead process has an empty cmdline.
            found[pid] = LeftBehindProcess(pid=pid, command=command_line(pid))
        _kill(pid, entry)
    return any_alive


def _wait_until_dead(pids: list[int], limit_seconds: float) -> None:
    # Orphans are reaped by init (or a subreaper), not by us, so "dead" includes "zombie".
    deadline = time.monotonic() + limit_seconds
    pending = pids
    while pending:
        pending = [pid for pid in pending
                   if (state := process_state(pid)) is not None and state[0] != "Z"]
        if not pending or time.monotonic() >= deadline:
            return
        time.sleep(_SWEEP_PAUSE_SECONDS)
