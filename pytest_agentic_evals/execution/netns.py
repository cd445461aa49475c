"""The runner's side of :mod:`nsjoin`: a listening socket on a sandbox's own loopback.

``listen_inside(pid, port)`` returns a socket listening on ``127.0.0.1:port`` in the network
namespace of process ``pid`` (a sandbox's init), made by the small helper program
``nsjoin.py``, which is started once per runner process, on first use, and ends with it.

Kept free of pytest imports, like the process runner.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

__all__ = ["listen_inside"]

HELPER_PROGRAM = str(Path(__file__).with_name("nsjoin.py"))
REPLY_SECONDS = 10.0


class _Helper:
    """One running nsjoin.py and the runner's end of its socket."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.channel, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", HELPER_PROGRAM], stdin=theirs.fileno(),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                # Out of the terminal's reach (Ctrl-C): it ends when the runner closes its end.
                start_new_session=True)
        except BaseException:
            self.channel.close()
            raise
        finally:
            theirs.close()
        self.channel.settimeout(REPLY_SECONDS)

    def ask(self, port: int, net: int) -> socket.socket:
        socket.send_fds(self.channel, [str(port).encode()], [net])
        message, fds, _, _ = socket.recv_fds(self.channel, 256, 1)
        if message == b"ok" and len(fds) == 1:
            return socket.socket(fileno=fds[0])
        for fd in fds:
            os.close(fd)
        said = message.decode("utf-8", "replace") or "the helper ended"
        raise OSError(said.removeprefix("error: "))

    def close(self) -> None:
        self.channel.close()  # the helper sees the end of its input and exits
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=REPLY_SECONDS)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


_lock = threading.Lock()
_helper: _Helper | None = None


def listen_inside(pid: int, port: int) -> socket.socket:
    """A socket listening on ``127.0.0.1:port`` in the network namespace of ``pid``.

    Raises OSError saying why when it cannot be made (a namespace this user may not enter: a
    setuid bwrap, say).
    """
    global _helper
    net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        with _lock:
            if _helper is None or _helper.owner != os.getpid():
                # A forked runner (pytest-forked, say) starts its own: one channel, one asker.
                _helper = _Helper()
            try:
                return _helper.ask(port, net)
            except (TimeoutError, BrokenPipeError, ConnectionError):
                # The helper is stuck or gone: the next call starts a new one.
                _helper.close()
                _helper = None
                raise
    finally:
        os.close(net)


@atexit.register
def _stop() -> None:
    global _helper
    with _lock:
        if _helper is not None and _helper.owner == os.getpid():
            _helper.close()
            _helper = None
