"""Run one trial command in a bubblewrap sandbox, and name what it left behind.

bwrap makes the namespaces (see :mod:`pytest_agentic_evals.execution.sandbox` for the mounts)
and runs a shell supervisor as the init (pid 1) of the new PID namespace; the supervisor runs
the trial's command as its child and talks to the runner over its stdin, a Unix socket::

    runner                              bwrap (the runner's child: the monitor)
      <- info fd: host pid of init        `-- init: sh -c SUPERVISOR      (pid 1 inside)
      -> "go"                                    `-- the trial's command  (pid 2 inside)
      <- "ready"
      (network mode proxy: the runner makes a socket listening on the namespace's loopback,
       see :mod:`netns`, and its domain proxy accepts on it from outside)
      -> "go": the command starts
      (where the runner cannot enter the namespace: "relay" instead, and pid 2 first starts
       a relay, a loopback port bridged to the proxy's Unix socket, and execs the command
       once the relay listens)
      <- "relay PID"
      <- "exit N"
      the runner lists the namespace's own /proc: every live process but init is left behind
      SIGKILL to init: the kernel kills everything else in the namespace with it

Why nothing escapes and nothing is missed:

* Membership of a PID namespace is the kernel's: no ``env -i``, ``setsid``, double fork, pid
  hop or nested namespace takes a process out of it, and the namespace's ``/proc`` lists all of
  its processes (nested ones included), so no tag is needed.
* The kernel ignores any signal sent to a namespace's init from inside the namespace unless
  init handles it, and the shell handles none: a trial cannot end its namespace before it has
  been listed. Should init be gone anyway, the trial fails.
* ``--die-with-parent``: the monitor dies with the runner (SIGKILL included), init with the
  monitor, and every process of the namespace with init.
* The command gets ``/dev/null`` as stdin and no descriptor of the runner's beyond its output
  pipes (:mod:`.capture`).

The supervisor is a shell, which sees a command killed by signal N as exit status 128+N; the
runner reports that status as it is, except after a timeout, where the signal it sent is
reported as a negative exit code, as for unsandboxed trials.

Kept free of pytest imports, like the process runner.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from pytest_agentic_evals.execution.capture import HELD_OPEN_SECONDS, Capture
from pytest_agentic_evals.execution.interruptions import uninterrupted
from pytest_agentic_evals.execution.process import ProcessResult
from pytest_agentic_evals.execution.procfs import (
    LeftBehindProcess,
    command_line,
    process_state,
    read_command_line,
)
from pytest_agentic_evals.execution.sandbox import (
    SHELL,
    MountPlan,
    bwrap_arguments,
    sandbox_environment,
)
from pytest_agentic_evals.execution.watchdog import watch

__all__ = ["SUPERVISOR", "SUPERVISOR_RELAY", "Bridge", "run_confined"]

# Runs as the namespace's init, with the trial's argv as "$@" and the runner's socket as stdin.
# It ends (and the namespace with it) when the runner closes the socket or kills it. Its own
# messages ("Killed" for a command killed by a signal) go nowhere, as the stderr file is the
# command's: the command runs in a subshell, which takes its redirections after the fork (a
# simple command would take them in the shell itself, also while it reports on the command)
# and becomes the command with exec (one fork, as for a simple command).
SUPERVISOR = ('exec 3>&2 2>/dev/null; echo ready >&0 && read -r go && '
              '{ (exec "$@") </dev/null 2>&3 3>&-; echo "exit $?" >&0; read -r done; }')
# Network mode proxy: the same, with four arguments before the command (python, the relay
# program, the proxy's socket, the port). When the runner says "relay" instead of "go", the
# subshell first starts the relay and execs the command only once the relay listens; the
# relay's pid goes to the runner on the socket.
SUPERVISOR_RELAY = ('exec 3>&2 2>/dev/null; echo ready >&0 && read -r go && '
                    '{ (r=$1 s=$2 u=$3 p=$4; shift 4; if [ "$go" = relay ]; then '
                    '"$r" -I -S "$s" "$u" "$p" >&0 </dev/null || exit; fi; '
                    'exec "$@" </dev/null) 2>&3 3>&-; echo "exit $?" >&0; read -r done; }')
RELAY_PROGRAM = str(Path(__file__).with_name("relay.py"))
SETUP_SECONDS = 30.0
# Left-behind candidates are looked at again after this pause: a process caught while it was
# exiting together with the command is gone by then, one left behind is not.
CONFIRM_SECONDS = 0.01
NAMING_ROUNDS = 5
LISTING_ROUNDS = 50
_SIGKILL_MASK = 1 << (signal.SIGKILL - 1)
_MAX_LINE = 256


class Bridge(Protocol):
    """How a sandbox in network mode ``proxy`` reaches its domain proxy."""

    socket_path: Path
    """Where the proxy listens when the relay is needed (its directory is visible in the
    sandbox)."""
    port: int
    """The port on the sandbox's loopback that the trial is told about."""

    def attach(self, init_pid: int) -> bool:
        """Once the namespace exists (``init_pid``: its init's host pid), serve the proxy on
        ``port`` of its loopback: True; or, where that cannot be done, listen on
        ``socket_path`` for the relay: False. Raises OSError when neither can be done."""
        ...


def run_confined(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    output_dir: Path,
    plan: MountPlan,
    bwrap: str,
    grace_seconds: float = 1.0,
    bridge: Bridge | None = None,
    locate: Callable[[Path], Path] | None = None,
) -> ProcessResult:
    """Run ``argv`` (no shell) in a sandbox made from ``plan``; nothing of it survives the call.

    ``env`` is the complete environment of the command (HOME and the temporary directory are
    set to the sandbox's private ones). ``bridge``: network mode proxy, the domain proxy to
    attach before the command starts. ``locate``: where the runner reads what the sandbox
    will show at a path (an overlay workspace), for the check that the command can start.
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    stdout_path, stderr_path = output_dir / "stdout", output_dir / "stderr"
    result = ProcessResult(exit_code=None, timed_out=False, duration_ms=0, start_error=None,
                           left_behind=[], stdout_path=stdout_path, stderr_path=stderr_path,
                           stray_detection=True)
    sandbox: _Sandbox | None = None
    capture = Capture(stdout_path, stderr_path)
    finished = False
    try:
        result.start_error = start_problem(argv, cwd, env, locate)
        if result.start_error is None:
            # An interruption inside Popen, after the fork, would lose bwrap's pid.
            with uninterrupted():
                sandbox = _Sandbox.start(bwrap, plan, argv, env, capture, bridge)
            sandbox.run(result, stderr_path, timeout, grace_seconds)
        finished = True
    finally:
        if sandbox is not None:
            sandbox.destroy()
        # Nothing of the sandbox is alive any more: the pipes end at once.
        capture.close(HELD_OPEN_SECONDS if finished else 0)
    result.integrity_error = result.integrity_error or capture.problem
    return result


class _Sandbox:
    """One running bwrap: its monitor process, the supervisor's socket, and init."""

    def __init__(self, monitor: subprocess.Popen[bytes], channel: socket.socket,
                 info: int, bridge: Bridge | None, capture: Capture) -> None:
        self.monitor = monitor
        self.capture = capture
        self.channel = channel
        self.info = info
        self.bridge = bridge
        self.buffer = b""
        self.init_pid: int | None = None
        self.init_fd: int | None = None
        self.relay_pid: int | None = None

    @classmethod
    def start(cls, bwrap: str, plan: MountPlan, argv: Sequence[str], env: Mapping[str, str],
              capture: Capture, bridge: Bridge | None) -> _Sandbox:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        info_read, info_write = os.pipe()
        supervisor = [SHELL, "-c", SUPERVISOR, "sh"]
        if bridge is not None:
            supervisor = [SHELL, "-c", SUPERVISOR_RELAY, "sh", sys.executable, RELAY_PROGRAM,
                          str(bridge.socket_path), str(bridge.port)]
        command = [bwrap, *bwrap_arguments(plan), "--info-fd", str(info_write),
                   "--", *supervisor, *argv]
        watch(None)  # started before bwrap is: telling it about bwrap is then one write
        try:
            monitor = subprocess.Popen(
                command, env=sandbox_environment(env), stdin=theirs.fileno(),
                stdout=capture.stdout, stderr=capture.stderr, pass_fds=(info_write,),
                close_fds=True, start_new_session=True,
            )
        except BaseException:
            ours.close()
            os.close(info_read)
            raise
        finally:
            theirs.close()
            os.close(info_write)
        capture.start()
        # Should the runner die while bwrap sets the sandbox up, the watchdog ends it: bwrap's
        # inner process only takes --die-with-parent once its monitor has set it up, and
        # would wait for a dead monitor forever. The group is bwrap's (a session of its own).
        watch(f"+{monitor.pid}")
        return cls(monitor, ours, info_read, bridge, capture)

    def run(self, result: ProcessResult, stderr_path: Path, timeout: float,
            grace_seconds: float) -> None:
        setup_deadline = time.monotonic() + SETUP_SECONDS
        try:
            if self.bridge is None:
                # Said before the supervisor asks: the command starts as soon as bwrap is
                # done, without a round trip through the runner.
                self.channel.sendall(b"go\n")
            ready = self._line(setup_deadline)
        except (OSError, TimeoutError):  # bwrap gone already, or stuck
            ready = None
        if ready != "ready" or not self._find_init(setup_deadline):
            result.setup_error = _bwrap_failure(stderr_path, self.monitor, self.capture)
            return
        if self.bridge is not None and not self._attach(result, stderr_path, setup_deadline):
            return
        root = f"/proc/{self.init_pid}/root/proc"
        started = time.monotonic()
        try:
            status = self._line(started + timeout)
        except TimeoutError:
            result.timed_out = True
            status = self._terminate(root, grace_seconds)
        result.duration_ms = int((time.monotonic() - started) * 1000)
        result.exit_code = _exit_code(status, result.timed_out)
        # After a timeout the command itself (pid 2) may still be alive: it timed out, it was
        # not left behind.
        exclude = {1, 2} if result.timed_out else {1}
        if self.relay_pid is not None:
            exclude.add(self.relay_pid)  # the runner's, not the trial's
        try:
            result.left_behind = _left_behind(self.init_pid, root, exclude)  # type: ignore[arg-type]
        except OSError:
            result.integrity_error = "the sandbox ended before it could be searched"
        if (status is None and not result.timed_out) or not self._init_alive():
            result.integrity_error = ("the sandbox's supervisor was gone before the runner "
                                      "ended it: what the trial left behind is unknown")

    def _attach(self, result: ProcessResult, stderr_path: Path, deadline: float) -> bool:
        """Attach the domain proxy, then let the command start (through the relay where the
        proxy could not be served inside); else the trial is a setup error (it never ran)."""
        assert self.bridge is not None and self.init_pid is not None
        try:
            served_inside = self.bridge.attach(self.init_pid)
        except OSError as exc:
            result.setup_error = f"could not start the domain proxy: {exc}"
            return False
        try:
            self.channel.sendall(b"go\n" if served_inside else b"relay\n")
        except OSError:
            result.setup_error = _bwrap_failure(stderr_path, self.monitor, self.capture)
            return False
        return served_inside or self._relay_started(result, stderr_path, deadline)

    def _relay_started(self, result: ProcessResult, stderr_path: Path,
                       deadline: float) -> bool:
        """Wait for the relay's pid; else the trial is a setup error (it never ran)."""
        try:
            said = self._line(deadline)
        except (OSError, TimeoutError):
            said = None
        word, _, number = (said or "").partition(" ")
        if word == "relay" and number.isdigit():
            self.relay_pid = int(number)
            return True
        self.capture.settle(1.0)
        try:
            tail = stderr_path.read_bytes()[-2000:].decode("utf-8", "replace").strip()
        except OSError:
            tail = ""
        detail = tail.splitlines()[-1] if tail else f"the supervisor said {said!r}"
        result.setup_error = f"could not start the network relay in the sandbox: {detail}"
        return False

    def _find_init(self, deadline: float) -> bool:
        """Learn init's host pid from bwrap, and pin it with a pidfd; False when bwrap failed
        before it made the namespace."""
        if self.init_fd is None:
            pid = _child_pid(self.info, deadline)
            if pid is None:
                return False
            self.init_pid, self.init_fd = pid, os.pidfd_open(pid)
        return True

    def _terminate(self, root: str, grace_seconds: float) -> str | None:
        """SIGTERM to every process but init, then the command's status if it comes in time."""
        with contextlib.suppress(OSError):
            for pid in _members(root, {1}):
                _signal(root, pid, signal.SIGTERM)
        try:
            return self._line(time.monotonic() + max(grace_seconds, 0.0))
        except TimeoutError:
            return None

    def _line(self, deadline: float) -> str | None:
        """The supervisor's next line; None when it closed the socket (or said nonsense)."""
        poller = select.poll()
        poller.register(self.channel, select.POLLIN)
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not poller.poll(remaining * 1000):
                raise TimeoutError
            chunk = self.channel.recv(_MAX_LINE)
            if not chunk or len(self.buffer) > _MAX_LINE:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode("ascii", "replace")

    def _init_alive(self) -> bool:
        if self.init_fd is None:
            return False
        poller = select.poll()
        poller.register(self.init_fd, select.POLLIN)
        return not poller.poll(0)  # a pidfd becomes readable when its process ends

    def destroy(self) -> None:
        """Kill the namespace and wait for bwrap: afterwards nothing of the trial is alive."""
        try:
            if self.init_fd is not None:
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(self.init_fd, signal.SIGKILL)
                # init ends only once every other process of its namespace is gone.
                select.select([self.init_fd], [], [])
            else:
                # init, if it exists yet, dies with the monitor (--die-with-parent).
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.monitor.pid, signal.SIGKILL)
            self.monitor.wait()  # bwrap exits as soon as init has
            watch(f"-{self.monitor.pid}")
        finally:
            self.channel.close()
            os.close(self.info)
            if self.init_fd is not None:
                os.close(self.init_fd)
                self.init_fd = None


def _child_pid(info: int, deadline: float) -> int | None:
    """The host pid of init, from bwrap's --info-fd; None when bwrap failed before it."""
    data = b""
    poller = select.poll()
    poller.register(info, select.POLLIN)
    while not data.rstrip().endswith(b"}"):  # one JSON object, written before init runs
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not poller.poll(remaining * 1000):
            return None
        chunk = os.read(info, 4096)
        if not chunk:
            break
        data += chunk
    try:
        return int(json.loads(data)["child-pid"])
    except (ValueError, KeyError, TypeError):
        return None


def _bwrap_failure(stderr_path: Path, monitor: subprocess.Popen[bytes], capture: Capture) -> str:
    """What bwrap said when it could not make the sandbox (its errors go to the stderr file)."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        monitor.wait(timeout=1)
    capture.settle(1.0)
    try:
        said = stderr_path.read_bytes()[-2000:].decode("utf-8", "replace").strip()
    except OSError:
        said = ""
    last = said.splitlines()[-1] if said else f"bwrap exited with status {monitor.poll()}"
    return f"could not make the sandbox: {last}"


def _exit_code(status: str | None, timed_out: bool) -> int | None:
    if status is None:
        # Killed with its namespace, or its init was gone before it said anything.
        return -signal.SIGKILL if timed_out else None
    word, _, number = status.partition(" ")
    if word != "exit" or not number.isdigit():
        return None
    code = int(number)
    if timed_out and code == 128 + signal.SIGTERM:
        return -signal.SIGTERM  # what the runner sent it
    return code


def _signal(root: str, pid: int, sig: int) -> None:
    """Signal a process of the sandbox by its /proc directory, which pins it (no pid reuse)."""
    try:
        handle = os.open(f"{root}/{pid}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return  # gone already
    try:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(handle, sig)
    finally:
        os.close(handle)


def _killed(pid: int, root: str) -> bool:
    """True when ``pid`` has a SIGKILL pending: it is dying, not left behind."""
    try:
        with open(f"{root}/{pid}/status", "rb") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return False
    for line in lines:
        if line.startswith((b"SigPnd:", b"ShdPnd:")):
            with contextlib.suppress(ValueError):
                if int(line.split()[1], 16) & _SIGKILL_MASK:
                    return True
    return False


def _members(root: str, exclude: set[int]) -> dict[int, str]:
    """Live processes of the namespace (not zombies, not dying) with their command lines.

    A process that forks and exits in a loop can vanish between the listing and the look at
    it, be caught exiting (its command line already gone), or be a zombie by the time it is
    looked at, its successor born after the listing: the listing is then taken again, and
    finds its successor. A round counts only when no process was born while it ran (a second
    listing shows no new pid). If that keeps happening, those processes count as they are.
    Raises OSError when the namespace's /proc cannot be read (the namespace is gone).
    """
    found: dict[int, str] = {}
    for round_number in range(LISTING_ROUNDS):
        passing: dict[int, str] = {}
        listed = {int(name) for name in os.listdir(root) if name.isdigit()} - exclude
        for pid in sorted(listed):
            state = process_state(pid, root)
            if state is None:
                passing[pid] = "[vanished while being listed]"
            elif state[0] not in "ZX" and not _killed(pid, root):
                # Read once: a process can start exiting between two reads.
                command = _command_line(pid, root)
                if command:
                    found.setdefault(pid, command)
                else:
                    passing[pid] = command_line(pid, root)  # its name, in brackets
        born = {int(name) for name in os.listdir(root) if name.isdigit()} - exclude - listed
        for pid in born:
            passing[pid] = command_line(pid, root) or "[born while being listed]"
        if not passing:
            break
        if round_number == LISTING_ROUNDS - 1:
            for pid, command in passing.items():
                found.setdefault(pid, command)
    return found


def _command_line(pid: int, root: str) -> str:
    """The command line of ``pid``; empty for a process that is exiting (its memory, and so
    its command line, is gone) or gone."""
    raw = read_command_line(pid, root)
    return " ".join(part.decode("utf-8", "replace") for part in raw.rstrip(b"\0").split(b"\0"))


def _left_behind(init_pid: int, root: str, exclude: set[int]) -> list[LeftBehindProcess]:
    """The processes of the namespace still alive (but init and ``exclude``), by host pid."""
    if not _members(root, exclude):
        return []
    for _ in range(NAMING_ROUNDS):
        time.sleep(CONFIRM_SECONDS)
        found = _members(root, exclude)
        # Named only by what exits or vanishes: a hopping process, caught between two of its
        # pids; another look shows it under a command line.
        if all(not command.startswith("[") for command in found.values()):
            break
    host = _host_pids(init_pid, root, found) if found else {}
    # A process gone before its host pid was found keeps its pid inside the sandbox.
    return [LeftBehindProcess(pid=host.get(pid, pid), command=command)
            for pid, command in sorted(found.items())]


def _host_pids(init_pid: int, root: str, inside: Mapping[int, str]) -> dict[int, int]:
    """Host pids of processes of the namespace, paired by their pid at the namespace's level
    and their start time. Reads every process of the host: only done when some are left."""
    level = len(_pids_by_level(f"/proc/{init_pid}")) - 1
    started = {pid: _start_ticks(f"{root}/{pid}") for pid in inside}
    namespace = os.stat(f"/proc/{init_pid}/ns/pid").st_ino
    found: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        levels = _pids_by_level(f"/proc/{name}")
        if len(levels) <= level or levels[level] not in started:
            continue
        pid = levels[level]
        if started[pid] is None or _start_ticks(f"/proc/{name}") != started[pid]:
            continue
        try:
            # Another sandbox started at the same tick can have a process of the same pid:
            # a member of this namespace itself says so. One of a namespace nested in it
            # cannot, and counts when nothing better is found.
            own = os.stat(f"/proc/{name}/ns/pid").st_ino == namespace
        except OSError:
            continue
        if own or pid not in found:
            found[pid] = int(name)
    return found


def _pids_by_level(path: str) -> list[int]:
    """The pids of a process in its PID namespace and each one above it, outermost first."""
    try:
        with open(f"{path}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"NSpid:"):
                    return [int(field) for field in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []


def _start_ticks(path: str) -> int | None:
    try:
        with open(f"{path}/stat", "rb") as handle:
            raw = handle.read()
        return int(raw[raw.rfind(b")") + 1:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def start_problem(argv: Sequence[str], cwd: Path, env: Mapping[str, str],
                  locate: Callable[[Path], Path] | None = None) -> str | None:
    """Why ``argv`` cannot start in ``cwd``, worded as for an unsandboxed trial; else None.

    The sandbox's shell would only say "not found" with exit status 127, which a command can
    also return, so the program is looked up here first, the way execvp does.
    """
    if not argv:
        return "empty command"
    seen_at = locate or (lambda path: path)
    if not seen_at(cwd).is_dir():
        return f"working directory not found: {cwd}"
    program = argv[0]
    if "/" in program:
        candidates: Iterable[Path] = [seen_at(cwd / program)]
    else:
        # Lazily, in PATH's order: the lookup ends at the first directory that has it.
        candidates = (seen_at(cwd / directory / program)
                      for directory in os.get_exec_path(dict(env)))
    seen = False
    for candidate in candidates:
        # os.path, not pathlib: a directory on PATH that the user cannot search is skipped,
        # as execvp skips it, instead of raising.
        if os.path.isfile(candidate):
            if os.access(candidate, os.X_OK):
                return None
            seen = True
        elif os.path.exists(candidate):
            seen = True
    if seen:
        return f"not executable: {program} (permission denied)"
    return f"command not found: {program}"
