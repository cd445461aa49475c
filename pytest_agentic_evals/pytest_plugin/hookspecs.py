"""Hooks that pytest-agentic-evals adds, for plugins and ``conftest.py`` files to implement.

Implement them like any pytest hook (a plain function named after the hook, in a plugin
module or a ``conftest.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import pytest

    from pytest_agentic_evals.expectations.builtin import ExpectationKind

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_agentic_evals_expectation_kinds() -> list[ExpectationKind] | None:
    """Return expectation kinds to accept in a case's ``expected`` object.

    Each :class:`~pytest_agentic_evals.expectations.ExpectationKind` names its key, gives the
    JSON Schema of its value (checked when a fixture is loaded, like the built-in keys) and a
    ``check(value, observation)`` function returning one message per failed check (an empty
    list when the trial meets the expectation). A key that a built-in kind or another plugin
    already owns is a usage error.

    The built-in kinds are this hook's default implementation (``kinds.BuiltinKinds``, marked
    ``trylast``), contributed like any plugin's.
    """


@hookspec
def pytest_agentic_evals_modify_report(report: dict[str, Any], config: pytest.Config) -> None:
    """Add to the JSON report, in place, before it is written.

    ``report`` is a fixture report (``agentic_evals.report.v2``) or, when the session ran
    several fixtures, a session report (``agentic_evals.session_report.v1``). Keys may be
    added at any depth; changing or removing anything the runner wrote (a readiness, an
    outcome, any verdict) is refused: the change is undone and the session exits 2, naming
    the plugin.
    """
