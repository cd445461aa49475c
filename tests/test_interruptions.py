"""An interruption raised by a signal handler waits for the end of a step that must not be
split (see tests/test_sandbox.py for the step it protects, with real signals and bwrap)."""

from __future__ import annotations

import pytest

from pytest_agentic_evals.execution.interruptions import interrupt, uninterrupted


def test_outside_a_step_the_interruption_is_raised_at_once() -> None:
    with pytest.raises(KeyboardInterrupt, match="now"):
        interrupt(KeyboardInterrupt("now"))


def test_inside_nested_steps_the_first_interruption_waits_for_the_outermost_end() -> None:
    done = []
    with pytest.raises(KeyboardInterrupt, match="first"), uninterrupted():
        with uninterrupted():
            interrupt(KeyboardInterrupt("first"))
            interrupt(KeyboardInterrupt("second"))
            done.append("inner")
        done.append("outer")
    assert done == ["inner", "outer"]
    with uninterrupted():  # nothing is left held back for the next step
        done.append("next")
    assert done[-1] == "next"


def test_an_error_of_the_step_gives_way_to_the_interruption() -> None:
    with pytest.raises(KeyboardInterrupt) as raised, uninterrupted():
        interrupt(KeyboardInterrupt())
        raise OSError("the step failed")
    assert isinstance(raised.value.__context__, OSError)
