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
* The interruption does not depend on the one KeyboardInterrupt landing: the signal is
  recorded first, and a process that has received one starts no trial (an exception raised
  inside a finalizer is lost; a worker that was not interrupted would end its session as if
  nothing had happened, and xdist would take the item it held for a crash). The controller
  also stops xdist's scheduling, so that a worker the signal killed before it could handle
  it is not replaced by one that runs the remaining trials.
* The interruption waits for the end of a step that must not be split (the start of a
  sandbox: see :mod:`pytest_agentic_evals.execution.interruptions`); so does Ctrl-C's.
* Workers start with these signals blocked (the controller blocks them while it starts
  them): a signal sent while a worker is still importing is taken when its handlers are in
  place, rather than killing it.

A signal the user ignores (``nohup`` makes SIGHUP ignored) stays ignored.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from pytest_agentic_evals.execution.interruptions import defer_keyboard_interrupt, interrupt

TERMINATING = (signal.SIGTERM, signal.SIGHUP)


class Termination:
    """The handlers of one session; :attr:`received` is the first signal, or None.

    ``on_signal`` is called with the first signal before anything is raised: what the role
    must do whether or not the KeyboardInterrupt reaches pytest.
    """

    def __init__(self, forward_to_children: bool = False,
                 on_signal: Callable[[int], None] | None = None) -> None:
        self.forward_to_children = forward_to_children
        self.on_signal = on_signal
        self.received: int | None = None
        self.count = 0
        self.previous: dict[int, Any] = {}

    def install(self, add_cleanup: Callable[[Callable[[], None]], None],
                unblock: bool = False) -> None:
        """Handle the signals in this process (only the main thread can), until cleanup.

        ``unblock``: an xdist worker, started with the signals blocked; one that arrived
        before now is taken as received (the session then runs no trial), and they are
        unblocked.
        """
        if threading.current_thread() is threading.main_thread():
            for sig in TERMINATING:
                if signal.getsignal(sig) != signal.SIG_IGN:
                    self.previous[sig] = signal.signal(sig, self.handle)
            replaced = defer_keyboard_interrupt()
            if replaced is not None:
                self.previous[signal.SIGINT] = replaced
            add_cleanup(self.restore)
            if unblock:
                for sig in sorted(signal.sigpending() & set(self.previous)):
                    if signal.sigtimedwait([sig], 0) is not None:
                        self.count += 1
                        self.note(sig)
        if unblock:
            # In any thread: the trials this one starts must not inherit the signals blocked
            # (a trial that ignores its timeout's SIGTERM would only end with SIGKILL).
            signal.pthread_sigmask(signal.SIG_UNBLOCK, TERMINATING)

    def restore(self) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        self.previous = {}

    def note(self, signum: int) -> None:
        if self.received is None:
            self.received = signum
            if self.on_signal is not None:
                self.on_signal(signum)

    def handle(self, signum: int, frame: FrameType | None) -> None:
        # Read once: a signal handled while this one runs increments it too.
        count = self.count = self.count + 1
        if count == 1:
            self.note(signum)
            if self.forward_to_children and signal_children(signum):
                return  # the workers stop and report; xdist then ends the session
            interrupt(KeyboardInterrupt(signal.Signals(signum).name))
        elif count == 2 and self.forward_to_children:
            interrupt(KeyboardInterrupt(signal.Signals(signum).name))
        # Otherwise the teardown is under way: nothing may cut it short.

    def interrupt_if_received(self) -> None:
        """Raise the interruption again where it is safe to: before a trial starts."""
        if self.received is not None:
            raise KeyboardInterrupt(signal.Signals(self.received).name)


@contextlib.contextmanager
def signals_blocked() -> Iterator[None]:
    """The terminating signals held back in this thread, and in the processes it starts."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, TERMINATING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


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
