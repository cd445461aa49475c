"""Steps of the runner that an interruption must not split in two.

A signal handler that raises KeyboardInterrupt (Python's own for SIGINT, the plugin's for
SIGTERM and SIGHUP) raises it between any two bytecodes of the main thread. Inside
``subprocess.Popen`` that is after the fork: the child runs, but the Popen object, and with it
the child's pid, is lost, so nothing can end it. A sandbox lost that way is half made (bwrap
waits for its monitor forever once the runner is gone). Such steps run in
:func:`uninterrupted`: an interruption that comes meanwhile is raised when the step is over,
where the caller's cleanup already knows what the step started.

Only the main thread is concerned: it is where Python runs signal handlers.

Kept free of pytest imports, like the process runner.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

_depth = 0
_pending: BaseException | None = None


@contextlib.contextmanager
def uninterrupted() -> Iterator[None]:
    """Hold back :func:`interrupt` until the block is over, then raise what it held back."""
    global _depth, _pending
    if threading.current_thread() is not threading.main_thread():
        yield  # no signal handler runs in this thread
        return
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _pending is not None:
            held, _pending = _pending, None
            raise held


def interrupt(exc: BaseException) -> None:
    """Raise ``exc`` from a signal handler: now, or when the uninterrupted step under way ends
    (the first one held back is the one raised)."""
    global _pending
    if _depth:
        if _pending is None:
            _pending = exc
        return
    raise exc


def keyboard_interrupt(signum: int, frame: FrameType | None) -> None:
    """Python's SIGINT handler, but one that waits for an uninterrupted step to end."""
    interrupt(KeyboardInterrupt())


def defer_keyboard_interrupt() -> signal.Handlers | object | None:
    """Install :func:`keyboard_interrupt` for SIGINT where Python's default handler is in place
    (in the main thread only; a handler someone else installed is left alone). Returns the
    handler it replaced, or None when it changed nothing."""
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return None
    return signal.signal(signal.SIGINT, keyboard_interrupt)
