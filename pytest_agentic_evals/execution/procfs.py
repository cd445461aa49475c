"""Reading and signalling a trial's processes through ``/proc``: what the runner uses to find
every process a trial left behind (by the tag in its environment), kill it, and make sure it
is dead.

Kept free of pytest imports, like the process runner.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass

PROC = "/proc"
# Survivors can fork between a scan and the kill, so the sweep repeats; the bound keeps a fork
# bomb from trapping the runner forever.
SWEEP_ROUNDS = 50
SWEEP_PAUSE_SECONDS = 0.005
CONFIRMING_ROUNDS = 2
DEATH_WAIT_SECONDS = 5.0
# After the group SIGKILL on timeout, group members need a moment to finish dying; without this
# pause they would be reported as left behind although the group kill already got them.
GROUP_SETTLE_SECONDS = 1.0

# Pids are handed out in increasing order until they wrap at pid_max, so every process a trial
# created has a pid above the last one handed out before it started. After a short trial the
# counter cannot have gone round, and the sweep reads only those pids instead of every process
# on the machine; after a long one (or when the counter cannot be read) it reads them all.
NARROW_SWEEP_MAX_SECONDS = 1.0

HAVE_PIDFD = hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")


@dataclass(frozen=True)
class LeftBehindProcess:
    """A process of a trial that was still alive after the trial's main process ended."""

    pid: int
    command: str  # /proc/<pid>/cmdline joined with spaces ("" if unreadable)


def has_entry(environ: bytes, entry: bytes) -> bool:
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


def read_environ(pid: int) -> bytes | None:
    try:
        with open(f"{PROC}/{pid}/environ", "rb") as handle:
            return handle.read()
    except ProcessLookupError:
        # The leader thread has exited; the process may live on in another thread.
        return _read_from_live_thread(pid, "environ", PROC)
    except OSError:
        # Vanished, or not ours to read: either way not something the sweep can act on.
        return None


def live_thread(pid: int, proc: str = PROC) -> int | None:
    """A running thread of ``pid`` other than its leader, or None.

    A process's leader thread can end alone (the exit system call, not exit_group) while its
    other threads run on: /proc then shows the process as a zombie, with no environment and
    no command line, although it is alive. Its live threads still show both.
    """
    try:
        threads = os.listdir(f"{proc}/{pid}/task")
    except OSError:
        return None
    for name in threads:
        if name.isdigit() and int(name) != pid:
            fields = _stat_fields(f"{proc}/{pid}/task/{name}/stat")
            if fields is not None and fields[0] not in (b"Z", b"X"):
                return int(name)
    return None


def _read_from_live_thread(pid: int, name: str, proc: str) -> bytes | None:
    thread = live_thread(pid, proc)
    if thread is None:
        return None
    try:
        with open(f"{proc}/{pid}/task/{thread}/{name}", "rb") as handle:
            return handle.read()
    except OSError:
        return None


def _stat_fields(path: str) -> list[bytes] | None:
    """The fields of a stat file after the command name: state, ppid, pgrp, ..."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    # The command name in parentheses may itself contain spaces and parentheses, so split after
    # the last closing parenthesis: "pid (comm) state ppid pgrp ...".
    return raw[raw.rfind(b")") + 1 :].split() or None


def group_of(pid: int) -> int | None:
    state = process_state(pid)
    return None if state is None else state[1]


def process_state(pid: int, proc: str = PROC) -> tuple[str, int] | None:
    """(state letter, process group id) of ``pid`` in the procfs at ``proc``, or None when it
    no longer exists. A process whose leader thread has ended while others run is alive: its
    state is a live thread's."""
    fields = _stat_fields(f"{proc}/{pid}/stat")
    if fields is not None and fields[0] == b"Z" and (thread := live_thread(pid, proc)):
        fields = _stat_fields(f"{proc}/{pid}/task/{thread}/stat") or fields
    try:
        return fields[0].decode("ascii", "replace"), int(fields[2])  # type: ignore[index]
    except (TypeError, IndexError, ValueError):
        return None


def is_tagged_alive(pid: int, entry: bytes) -> bool:
    environ = read_environ(pid)
    if environ is None or not has_entry(environ, entry):
        return False
    state = process_state(pid)
    # A zombie has already exited; only its parent's wait is missing.
    return state is not None and state[0] != "Z"


def scan_pids(
    entry: bytes,
    unsettled: list[int] | None = None,
    since_ticks: int = 0,
    pid_after: int | None = None,
    new_pids: _NewPids | None = None,
) -> Iterator[int]:
    """Yield live, non-zombie processes carrying ``entry`` (never the runner itself).

    A process in the middle of ``execve`` shows an empty environment for an instant, so a
    survivor caught then would go unseen. When ``unsettled`` is given, live processes started
    since ``since_ticks`` (clock ticks after boot) whose environment reads empty are appended
    to it, so that the caller can look again. With ``pid_after`` (the last pid handed out
    before the trial started), only pids handed out since then are read.  With ``new_pids``,
    the pids handed out since its last look are read between those of the listing: one that
    forks and exits in a loop is never where the listing saw it, but always among them.
    """
    own_pid = os.getpid()
    try:
        names = os.listdir(PROC)
    except OSError:
        return
    # Read after the listing: every listed pid was handed out before this read.
    is_new = handed_out_since(pid_after)
    for name in names:
        if not name.isdigit():
            continue
        listed = int(name)
        if is_new is not None and not is_new(listed):
            continue
        for pid in (listed, *(new_pids.since_last_look() if new_pids else ())):
            if pid == own_pid:
                continue
            # environ is checked first: it rules out almost every process, so stat is only
            # read for the few that match.
            environ = read_environ(pid)
            if environ is None:
                continue
            if has_entry(environ, entry):
                state = process_state(pid)
                # A zombie has already exited; only its parent's wait is missing.
                if state is not None and state[0] != "Z":
                    yield pid
            elif not environ and unsettled is not None and started_since(pid, since_ticks):
                unsettled.append(pid)


def last_pid() -> int | None:
    """The last pid handed out in the runner's pid namespace (the last field of loadavg)."""
    try:
        with open(f"{PROC}/loadavg", "rb") as handle:
            return int(handle.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


@functools.cache
def pid_max_setting() -> int | None:
    try:
        with open(f"{PROC}/sys/kernel/pid_max", "rb") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return None


def handed_out_since(pid_after: int | None) -> Callable[[int], bool] | None:
    """A test for pids handed out after ``pid_after``; None when every pid must be read."""
    return pid_window(pid_after, last_pid(), pid_max_setting())


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


def ticks_now() -> int:
    """Clock ticks since boot, the unit of a process's start time in /proc/<pid>/stat."""
    try:
        with open(f"{PROC}/uptime", "rb") as handle:
            uptime = float(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return int(uptime * os.sysconf("SC_CLK_TCK"))


def started_since(pid: int, since_ticks: int) -> bool:
    """True for a live, non-zombie process that started at or after ``since_ticks``."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as handle:
            raw = handle.read()
        fields = raw[raw.rfind(b")") + 1 :].split()
        return fields[0] != b"Z" and int(fields[19]) >= since_ticks
    except (OSError, IndexError, ValueError):
        return False


def group_has_live_member(pgid: int) -> bool:
    # Reads every stat file, which is why this runs only after a group kill that hit someone.
    try:
        names = os.listdir(PROC)
    except OSError:
        return False
    for name in names:
        if name.isdigit():
            state = process_state(int(name))
            if state is not None and state[1] == pgid and state[0] != "Z":
                return True
    return False


def read_command_line(pid: int, proc: str = PROC) -> bytes:
    """The raw command line of ``pid``; empty for a process that is exiting (its memory, and
    so its command line, is gone) or gone. Read from a live thread when the leader has ended."""
    try:
        with open(f"{proc}/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
    except OSError:
        raw = b""
    return raw or _read_from_live_thread(pid, "cmdline", proc) or b""


def command_line(pid: int, proc: str = PROC) -> str:
    """The command line of ``pid`` in the procfs at ``proc``, its name when it has none."""
    raw = read_command_line(pid, proc)
    if raw:
        return " ".join(part.decode("utf-8", "replace") for part in raw.rstrip(b"\0").split(b"\0"))
    # Caught mid-exec or while dying, a process has no command line yet; its name still says
    # what it is.
    try:
        with open(f"{proc}/{pid}/comm", "rb") as handle:
            return f"[{handle.read().strip().decode('utf-8', 'replace')}]"
    except OSError:
        return ""


def kill_tagged(pid: int, entry: bytes) -> None:
    if HAVE_PIDFD:
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
                if is_tagged_alive(pid, entry):
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass
            finally:
                os.close(pidfd)
            return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def settle_group(entry: bytes, pgid: int) -> None:
    deadline = time.monotonic() + GROUP_SETTLE_SECONDS
    while time.monotonic() < deadline:
        if not any(group_of(pid) == pgid for pid in scan_pids(entry)):
            return
        time.sleep(SWEEP_PAUSE_SECONDS)


def group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep(
    entry: bytes, since_ticks: int = 0, confirm: bool = False, pid_after: int | None = None
) -> list[LeftBehindProcess]:
    """Kill every live process carrying ``entry``; return them in discovery order.

    ``pid_after``: see :func:`scan_pids`.
    """
    found: dict[int, LeftBehindProcess] = {}
    empty_rounds = 0
    new_pids = _NewPids()
    for _ in range(SWEEP_ROUNDS):
        unsettled: list[int] = []
        if sweep_round(entry, found, unsettled, since_ticks, pid_after, new_pids) or unsettled:
            # A process mid-exec may be ours: look again once its environment is readable.
            empty_rounds = 0
        else:
            empty_rounds += 1
            # A clean trial costs one pass.  Once survivors were seen, one empty pass is weak
            # evidence: a process that forks and exits can move to a pid the listing of that
            # pass did not contain yet.
            if (not found and not confirm) or empty_rounds >= CONFIRMING_ROUNDS:
                break
        time.sleep(SWEEP_PAUSE_SECONDS)
    wait_until_dead(list(found), DEATH_WAIT_SECONDS)
    return list(found.values())


def sweep_round(
    entry: bytes,
    found: dict[int, LeftBehindProcess],
    unsettled: list[int],
    since_ticks: int,
    pid_after: int | None,
    new_pids: _NewPids | None = None,
) -> bool:
    """One pass over /proc; True if any tagged process was alive (and was sent SIGKILL)."""
    any_alive = False
    # Kill on discovery rather than after the pass: a process that keeps forking and exiting
    # gets less time to hand over to a new pid.
    for pid in scan_pids(entry, unsettled, since_ticks, pid_after, new_pids):
        any_alive = True
        if pid not in found:
            # Read before the kill: a dead process has an empty cmdline.
            found[pid] = LeftBehindProcess(pid=pid, command=command_line(pid))
        kill_tagged(pid, entry)
    return any_alive


def wait_until_dead(pids: list[int], limit_seconds: float) -> None:
    # Orphans are reaped by init (or a subreaper), not by us, so "dead" includes "zombie".
    deadline = time.monotonic() + limit_seconds
    pending = pids
    while pending:
        pending = [pid for pid in pending
                   if (state := process_state(pid)) is not None and state[0] != "Z"]
        if not pending or time.monotonic() >= deadline:
            return
        time.sleep(SWEEP_PAUSE_SECONDS)


def sweep_holders(inodes: Collection[int], held: Callable[[], bool],
                  seconds: float) -> list[LeftBehindProcess]:
    """Kill every other process holding one of the pipes ``inodes`` (a trial's output: no one
    but the trial was given them) until ``held()`` says they are held no more, for at most
    ``seconds``; return them.  It finds what left the trial's group and dropped its tag but kept
    stdout open, which the tag sweep cannot.

    A holder may fork and exit in a loop, a new pid every few milliseconds: it is never where
    a listing of /proc saw it a moment ago, and other processes of the machine may take the
    pids next to its own.  So while going through the listing, every pid handed out since the
    last look is looked at too: each new incarnation is seen before it can move on."""
    links = frozenset(f"pipe:[{inode}]".encode() for inode in inodes)
    found: dict[int, LeftBehindProcess] = {}
    new_pids = _NewPids()
    me = os.getpid()

    def look(pid: int) -> None:
        # Killed on discovery, as in the tag sweep: one that forks gets no time to move on.
        if pid != me and _holds(pid, links):
            found.setdefault(pid, LeftBehindProcess(pid=pid, command=command_line(pid)))
            _kill_holder(pid, links)

    deadline = time.monotonic() + seconds
    while held() and time.monotonic() < deadline:
        for pid in _listed_pids():
            for new in new_pids.since_last_look():
                look(new)
            look(pid)
        time.sleep(SWEEP_PAUSE_SECONDS)  # a killed process holds its files until it is gone
    wait_until_dead(list(found), DEATH_WAIT_SECONDS)
    return list(found.values())


class _NewPids:
    """The processes created since the last look (the first look: since this was made), by the
    pid counter: pids are handed out in increasing order until they wrap at pid_max.  Made
    before a listing of /proc, it yields every pid the listing could not contain."""

    def __init__(self) -> None:
        self._last = last_pid()

    def since_last_look(self) -> Iterator[int]:
        last = last_pid()
        if last is None or self._last is None:
            return
        first, self._last = self._last + 1, last
        pids = range(first, last + 1) if last >= first - 1 else (
            *range(first, (pid_max_setting() or first) + 1), *range(1, last + 1))
        for pid in pids:
            # A pid handed out may be a thread's (of the runner, too: the thread copying the
            # trial's output); its process is the one that holds files.
            group = _thread_group(pid)
            if group is not None:
                yield group


def _listed_pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir(PROC) if name.isdigit()]
    except OSError:
        return []


def _thread_group(pid: int) -> int | None:
    """The process a pid belongs to (itself, unless it is a thread's); None when it is gone."""
    try:
        with open(f"{PROC}/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"Tgid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _holds(pid: int, links: frozenset[bytes]) -> bool:
    directory = f"{PROC}/{pid}/fd".encode()
    try:
        fds = os.listdir(directory)
    except OSError:
        return False  # gone, or another user's
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(directory + b"/" + fd) in links:
                return True
    return False


def _kill_holder(pid: int, links: frozenset[bytes]) -> None:
    """SIGKILL ``pid``, just seen holding one of the pipes, and its process group, which the
    trial made (the runner's own is another session's): one that forks and exits in a loop is
    in it under its next pid, while the one seen may be exiting already.  The pid itself is
    pinned with a pidfd and looked at again (it may have been handed out anew since); the
    group is signalled at once, microseconds after the look, far too soon for its id to be
    handed out again."""
    group = group_of(pid)
    if group is not None and group not in (0, os.getpgrp()):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
    if not HAVE_PIDFD:
        if _holds(pid, links):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        return
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        if _holds(pid, links):
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    finally:
        os.close(pidfd)
