"""Listening sockets made inside a sandbox's network namespace, for the runner's domain proxy.

Started by path, not imported (``python -I -S nsjoin.py``), with a Unix socket to the runner as
standard input; standard library only. Each request is a port number sent with a descriptor of
the sandbox's network namespace. For each, a child process joins the user namespace that owns
it (unless it is this process's own: the runner is root) and the network namespace, listens on
``127.0.0.1:PORT`` there, sends the listening socket back (``ok``, with the descriptor) or says
what failed (``error: ...``), and exits. The runner's proxy then accepts on that socket from
outside the sandbox: the trial reaches it on its own loopback, and nothing of the runner's runs
inside.

Why a program of its own: without root, only a process of the user namespace that owns a
network namespace may enter it, the kernel refuses to let a multi-threaded process join a user
namespace, and the runner has threads. (That owner is not the user namespace the sandbox's
processes end up in: bwrap nests another one inside.) This program has no threads, and a fork
of it costs about a millisecond. It ends when the runner closes its end (the runner's death
included).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
NS_GET_USERNS = 0xB701  # ioctl: the user namespace that owns a namespace
_libc = ctypes.CDLL(None, use_errno=True)


def _join(fd: int, kind: int) -> None:
    if _libc.setns(fd, kind) != 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))


def _listen(channel: socket.socket, port: int, net: int, own_user: int) -> None:
    """In the child: join, listen, send the socket back."""
    try:
        owner = fcntl.ioctl(net, NS_GET_USERNS)
        if os.fstat(owner).st_ino != own_user:
            _join(owner, CLONE_NEWUSER)
        _join(net, CLONE_NEWNET)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        socket.send_fds(channel, [b"ok"], [listener.fileno()])
    except OSError as exc:
        channel.sendall(f"error: {exc.strerror or exc}".encode())


def main() -> int:
    channel = socket.socket(fileno=0)
    own_user = os.stat("/proc/self/ns/user").st_ino
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(channel, 64, 1)
        except OSError:
            return 0
        if not message:
            return 0  # the runner is gone
        if len(fds) != 1 or not message.isdigit():
            channel.sendall(b"error: a request is a port with a network namespace descriptor")
        else:
            child = os.fork()
            if child == 0:
                _listen(channel, int(message), fds[0], own_user)
                os._exit(0)
            os.waitpid(child, 0)
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    sys.exit(main())
