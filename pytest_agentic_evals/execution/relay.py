"""The sandbox's side of a trial's domain proxy: a loopback port bridged to a Unix socket.

A sandboxed trial in network mode ``proxy`` has a network namespace with only loopback. Its
domain proxy runs outside, in the runner, listening on a Unix socket that is mounted
read-only into the sandbox. This program runs inside the sandbox before the trial's command
(``python -I -S relay.py SOCKET PORT``): it listens on ``127.0.0.1:PORT``, tells the runner
its pid on standard output, moves to the background and exits, and from then on connects
each accepted connection to the Unix socket and copies bytes both ways.

It is started by path: standard library only, no package imports (the domain proxy imports
its ``pump``, which is the same copy loop on both sides of the socket). It sees
nothing the trial cannot see, and the trial can do nothing to it that reaches further than
its own traffic (killing it only cuts the trial off the network).
"""

from __future__ import annotations

import os
import selectors
import socket
import sys
import threading

_CHUNK = 64 * 1024


def pump(client: socket.socket, server: socket.socket) -> None:
    """Copy bytes both ways until both directions are closed, passing each half-close on.

    A reset or a peer gone raises OSError: the caller ends the connection. The domain proxy
    copies its allowed connections with this too."""
    peers = {client: server, server: client}
    with selectors.DefaultSelector() as selector:
        for sock in peers:
            selector.register(sock, selectors.EVENT_READ)
        open_directions = 2
        while open_directions:
            for key, _ in selector.select():
                source = key.fileobj
                assert isinstance(source, socket.socket)
                data = source.recv(_CHUNK)
                if data:
                    peers[source].sendall(data)
                    continue
                selector.unregister(source)
                open_directions -= 1
                peers[source].shutdown(socket.SHUT_WR)


def _pipe(client: socket.socket, path: str) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.connect(path)
        pump(client, server)
    except OSError:
        pass
    finally:
        client.close()
        server.close()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            continue
        threading.Thread(target=_pipe, args=(client, path), daemon=True).start()


def main(argv: list[str]) -> int:
    path, port = argv[1], int(argv[2])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    child = os.fork()
    if child:
        # The runner reads this before the command starts, and never counts the relay as a
        # process the trial left behind.
        sys.stdout.write(f"relay {child}\n")
        sys.stdout.flush()
        return 0
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    _serve(listener, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
