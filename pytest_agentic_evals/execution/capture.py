"""A trial's stdout and stderr: pipes the runner copies into files no process of the trial holds.

The output files are the evidence a trial's expectations read, and the command that writes them
is the one being judged.  Given a file as its stdout, any process of the trial could rewrite
what it had printed: ``ftruncate(1, 0)``, ``: > /proc/self/fd/1`` (which opens the file anew,
truncating it), or a seek back and a write over it.  A skill that printed a secret could erase
it before ``stdout_excludes`` looked, and an agent could cut a forbidden call out of its own
transcript.  A pipe only ever takes more bytes at its end: the trial gets the pipes, and a
thread of the runner copies what comes out of them into the files.

Memory stays bounded (the copy goes a chunk at a time).  Once the trial is torn down, every
writer is dead and the pipes report their end at once; a process that escaped the teardown
(possible without the sandbox only) and still holds one cannot make the runner wait: the copy
stops after :data:`HELD_OPEN_SECONDS`, and the trial is told so.

Kept free of pytest imports, like the process runner.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import sys
import termios
import threading
import time
from pathlib import Path

__all__ = ["HELD_OPEN_SECONDS", "Capture", "new_file"]

HELD_OPEN_SECONDS = 2.0
_CHUNK = 1 << 20
# A larger pipe means fewer wake-ups for a command that prints a lot (the default is 64 KiB).
_PIPE_SIZE = 1 << 20


def new_file(path: Path) -> int:
    """``path`` opened for writing as a new, empty file (a descriptor).

    A trial directory is reused, and truncating the previous trial's output would wait for
    its data to reach the disk first (a file system flushes a truncated file's pending
    writes); a file unlinked and made anew does not wait."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)


class Capture:
    """The two pipes of one trial and the thread that copies them into ``stdout_path`` and
    ``stderr_path``.  Use: give :attr:`stdout` and :attr:`stderr` to the child, call
    :meth:`start` once it is started, and :meth:`close` once every process of the trial is
    gone (always, also when the child never started)."""

    def __init__(self, stdout_path: Path, stderr_path: Path) -> None:
        self._files: dict[int, int] = {}
        self._writers: list[int] = []
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._failed: set[int] = set()  # files a write failed on: the rest is not kept
        self._stop_read, self._stop_write = os.pipe()
        self.problem: str | None = None
        """Why the output is not complete (a file that could not be written, a pipe still
        held open after the trial); None when it is."""
        try:
            for path in (stdout_path, stderr_path):
                file = new_file(path)
                reader, writer = os.pipe()  # both ends close on exec: only the child's copy lives
                self._files[reader] = file
                self._writers.append(writer)
                with contextlib.suppress(OSError, AttributeError):
                    fcntl.fcntl(writer, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)
        except BaseException:
            self._close_all()
            raise

    @property
    def stdout(self) -> int:
        return self._writers[0]

    @property
    def stderr(self) -> int:
        return self._writers[1]

    def start(self) -> None:
        """Close the runner's copies of the write ends (the child has its own) and begin
        copying."""
        self._close_writers()
        self._thread = threading.Thread(target=self._copy, name="agentic-evals-capture",
                                        daemon=True)
        self._thread.start()

    @property
    def inodes(self) -> tuple[int, ...]:
        """The pipes' inode numbers: ``pipe:[N]`` in the ``/proc/<pid>/fd`` of a holder."""
        return tuple(os.fstat(reader).st_ino for reader in self._files)

    def ended(self, timeout: float) -> bool:
        """Whether both pipes ended (every writer gone), waiting at most ``timeout``."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def settle(self, timeout: float) -> None:
        """Wait (at most ``timeout``) until everything written so far is in the files: for a
        runner about to read them while a process may still hold the pipes (bwrap's errors)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:  # held by the copy from a read to the end of its write
                if self._thread is None or all(_pending(fd) == 0 for fd in self._files):
                    return
            time.sleep(0.001)

    def close(self, timeout: float = HELD_OPEN_SECONDS) -> None:
        """Copy to the end of both pipes (waiting at most ``timeout`` for the last writer to
        be gone), then close everything; the files are complete, or :attr:`problem` says
        why not."""
        self._close_writers()  # the child never started: the pipes end now
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                os.write(self._stop_write, b"x")
                self._thread.join()
                self.problem = self.problem or (
                    "a process the runner could not find kept the trial's output open after "
                    "the trial ended; what it wrote afterwards was not kept")
        self._close_all()

    def _copy(self) -> None:
        poller = select.poll()
        for reader in self._files:
            poller.register(reader, select.POLLIN)
        poller.register(self._stop_read, select.POLLIN)
        open_readers = set(self._files)
        while open_readers:
            for fd, _ in poller.poll():
                if fd == self._stop_read:
                    for reader in open_readers:
                        self._take_what_is_there(reader)
                    return
                if not self._take(fd):
                    poller.unregister(fd)
                    open_readers.discard(fd)

    def _take(self, reader: int) -> bool:
        """Copy one chunk; False at the end of the pipe."""
        with self._lock:
            chunk = os.read(reader, _CHUNK)
            if chunk:
                self._write(self._files[reader], chunk)
            return bool(chunk)

    def _take_what_is_there(self, reader: int) -> None:
        """Copy what is in the pipe now, and no more: its writer may go on writing."""
        with self._lock:
            left = _pending(reader)
            while left > 0:
                chunk = os.read(reader, min(left, _CHUNK))
                if not chunk:
                    return
                self._write(self._files[reader], chunk)
                left -= len(chunk)

    def _write(self, file: int, chunk: bytes) -> None:
        view = memoryview(chunk)
        while view and file not in self._failed:
            try:
                view = view[os.write(file, view):]
            except OSError as exc:
                # The pipe is still drained (the command must not block on a full pipe), and
                # the trial is told its output is incomplete.
                self._failed.add(file)
                self.problem = self.problem or (
                    f"the trial's output could not be kept: {exc.strerror or exc}")

    def _close_writers(self) -> None:
        for writer in self._writers:
            with contextlib.suppress(OSError):
                os.close(writer)
        self._writers = []

    def _close_all(self) -> None:
        self._close_writers()
        for fd in (*self._files, *self._files.values(), self._stop_read, self._stop_write):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._files = {}


def _pending(fd: int) -> int:
    """Bytes waiting in a pipe."""
    buffer = bytearray(4)
    try:
        fcntl.ioctl(fd, termios.FIONREAD, buffer)
    except OSError:
        return 0
    return int.from_bytes(buffer, sys.byteorder)
