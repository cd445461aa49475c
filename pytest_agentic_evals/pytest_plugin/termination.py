"""SIGTERM and SIGHUP end a session the way Ctrl-C does.

A CI system cancelling a job, ``timeout``, or a closed terminal sends SIGTERM or SIGHUP, not
SIGINT. Left to their default, they would kill pytest on the spot: trials left running (when
they are not sandboxed), no report, and a CI that cannot tell an interrupted run from a crash.
Handled, they raise KeyboardInterrupt where pytest runs trials, so that the trial under way is
torn down by the runner (nothing of it survives), the session ends as interrupted, the report
is written and marked ``interrupted`` (never READY) and the exit status is pytest's
"interrupted" (2).

* A serial run and an xdist worker raise KeyboardInterrupt at the first signal.
* The controller of an xdist run forwards the signal to its local workers and lets xdist end
  the session: each worker tears its trial down and sends what it collected and ran, so the
  report covers every fixture. A second signal interrupts the controller at once.
* Later signals never cut the teardown short: a process group signalled as a whole, and then
  again by ``agentic-evals run`` forwarding the same signal, is interrupted once.

A signal the user ignores (``nohup`` makes SIGHUP ignored) stays ignored.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

TERMINATING = (signal.SIGTERM, signal.SIGHUP)


class Termination:
    """The handlers of one session; :attr:`received` is the first signal, or None."""

    def __init__(self, forward_to_children: bool = False) -> None:
        self.forward_to_children = forward_to_children
        self.received: int | None = None
        self.count = 0
        self.previous: dict[int, Any] = {}

    def install(self, add_cleanup: Callable[[Callable[[], None]], None]) -> None:
        """Handle the signals in this process (only the main thread can), until cleanup."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in TERMINATING:
            if signal.getsignal(sig) != signal.SIG_IGN:
                self.previous[sig] = signal.signal(sig, self.handle)
        add_cleanup(self.restore)

    def restore(self) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        self.previous = {}

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count == 1:
            self.received = signum
            if self.forward_to_children and signal_children(signum):
                return  # the workers stop and report; xdist then ends the session
            raise KeyboardInterrupt(signal.Signals(signum).name)
        if self.count == 2 and self.forward_to_children:
            raise KeyboardInterrupt(signal.Signals(signum).name)
        # Otherwise the teardown is under way: nothing may cut it short.


def signal_children(signum: int) -> bool:
    """Send ``signum`` to every child of this process; False when it has none."""
    me = os.getpid()
    sent = False
    try:
        names = os.listdir("/proc")
    except OSError:
        return False
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            if int(fields[1]) == me and fields[0] != b"Z":
                os.kill(int(name), signum)
                sent = True
        except (OSError, IndexError, ValueError):
            continue
    return sent
