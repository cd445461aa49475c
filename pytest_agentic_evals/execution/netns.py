"""A listening socket inside the network namespace of another process.

A sandboxed trial has a network namespace of its own with nothing but loopback. Its domain
proxy runs in the runner, outside, and the trial reaches it at a loopback port of its own
namespace: the runner makes a listening socket in the sandbox's namespace and serves it from
outside. A socket belongs to the namespace it was made in, whoever holds it afterwards, so no
bridge process runs in the sandbox and nothing else of the host is reachable from there.

Entering a network namespace takes CAP_SYS_ADMIN over it and in one's own user namespace. A
runner that has it (root) enters from a short-lived thread, since a thread's network namespace
is its own. An unprivileged runner's sandbox lives in a user namespace that bwrap made and in
which the runner's user holds every capability, but only a single-threaded process may enter a
user namespace: a child forked for the purpose enters both, makes the socket, hands it over a
Unix socket and exits.

Kept free of pytest imports, like the process runner.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import os
import socket
import threading
import warnings
from typing import Any

__all__ = ["listener_in"]

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
NS_GET_USERNS = 0xB701  # _IO(0xb7, 0x1), linux/nsfs.h
BACKLOG = 128
_MESSAGE_BYTES = 4096


def listener_in(pid: int, port: int) -> socket.socket:
    """A TCP socket listening on 127.0.0.1:``port`` in the network namespace of ``pid``.

    Raises OSError when the namespace cannot be entered or the port is taken.
    """
    net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        # The user namespace that owns the network namespace: not always the process's own
        # (bwrap nests a second one when it mounts /dev).
        owner = fcntl.ioctl(net, NS_GET_USERNS)
        try:
            if os.fstat(owner).st_ino == os.stat("/proc/self/ns/user").st_ino:
                return _from_thread(net, port)
            return _from_child(owner, net, port)
        finally:
            os.close(owner)
    finally:
        os.close(net)


@functools.cache
def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _setns(fd: int, kind: int) -> None:
    native = getattr(os, "setns", None)  # Python 3.12 and later
    if native is not None:
        native(fd, kind)
        return
    if _libc().setns(fd, kind) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"setns: {os.strerror(error)}")


def _listen(port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", port))
        listener.listen(BACKLOG)
    except OSError:
        listener.close()
        raise
    return listener


def _from_thread(net: int, port: int) -> socket.socket:
    outcome: list[socket.socket | OSError] = []

    def enter_and_listen() -> None:
        # This thread ends right after: nothing else ever runs in the sandbox's namespace.
        try:
            _setns(net, CLONE_NEWNET)
            outcome.append(_listen(port))
        except OSError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=enter_and_listen, name="agentic-evals-netns")
    thread.start()
    thread.join()
    if isinstance(outcome[0], OSError):
        raise outcome[0]
    return outcome[0]


def _from_child(user: int, net: int, port: int) -> socket.socket:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours:
        with theirs, warnings.catch_warnings():
            # Python warns that a fork of a threaded process may deadlock in the child; this
            # child only makes system calls on objects made before the fork, then exits.
            warnings.simplefilter("ignore", DeprecationWarning)
            child = os.fork()
            if child == 0:  # pragma: no cover - runs in the child, which never returns
                _child(theirs, user, net, port)
        try:
            message, fds, _, _ = socket.recv_fds(ours, _MESSAGE_BYTES, 1)
        finally:
            os.waitpid(child, 0)
    if fds and message == b"ok":
        return socket.socket(fileno=fds[0])
    for fd in fds:
        os.close(fd)
    raise OSError(message.decode("utf-8", "replace") or "the namespace helper died")


def _child(channel: socket.socket, user: int, net: int, port: int) -> None:  # pragma: no cover
    status = 1
    try:
        _setns(user, CLONE_NEWUSER)
        _setns(net, CLONE_NEWNET)
        listener = _listen(port)
        socket.send_fds(channel, [b"ok"], [listener.fileno()])
        status = 0
    except BaseException as exc:
        with contextlib.suppress(OSError):
            channel.sendall(str(exc).encode("utf-8", "replace")[:_MESSAGE_BYTES])
    finally:
        os._exit(status)
