"""The watchdog of a runner process: should the runner die (SIGKILL included) while a trial
runs, it kills the process groups of the trials still running and every process carrying a
tag of this runner.

Kept free of pytest imports, like the process runner.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid

from pytest_agentic_evals.execution import procfs

# Every tag of this runner process starts with it, so that the watchdog knows them all.
RUNNER_TAG = uuid.uuid4().hex[:16]
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


def watch(line: str | None) -> None:
    """Tell the watchdog of this runner process about a trial's group (``line``), starting the
    watchdog first when it is not running."""
    global _watchdog
    if not os.path.isdir(os.path.join(procfs.PROC, "self")):
        return  # the watchdog finds processes through /proc
    if _watchdog is None or _watchdog[0] != os.getpid() or _watchdog[1].poll() is not None:
        if line is not None and line.startswith("-"):
            return
        read, write = os.pipe()
        try:
            watchdog = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", WATCHDOG, RUNNER_TAG], stdin=read,
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
