"""Expectation kinds, gathered through the ``pytest_agentic_evals_expectation_kinds`` hook.

The built-in kinds are the hook's default implementation, contributed the way a plugin's are.
A pytest session asks the hook of each fixture's folder (installed plugins and the conftest
files that apply); the CLI, which has no session, asks a plugin manager of its own that holds
the same hookspecs and the installed plugins.
"""

from __future__ import annotations

import os
from importlib import metadata
from typing import Any

import pytest

from pytest_agentic_evals.expectations.builtin import ExpectationKind, builtin_kinds
from pytest_agentic_evals.pytest_plugin import hookspecs

BUILTIN_KINDS_PLUGIN = "agentic-evals-builtin-kinds"
ENTRY_POINT_GROUP = "pytest11"


class PluginError(Exception):
    """An installed plugin that cannot be loaded, or kinds that contradict each other."""


class BuiltinKinds:
    """The default implementation of the kinds hook: the kinds the product ships."""

    @pytest.hookimpl(trylast=True)
    def pytest_agentic_evals_expectation_kinds(self) -> list[ExpectationKind]:
        return list(builtin_kinds().values())


def gather_kinds(hook: Any) -> dict[str, ExpectationKind]:
    """Every kind that the implementations visible to ``hook`` contribute, by key.

    Raises PluginError when two of them define the same key: which of the two a fixture meant
    cannot be known.
    """
    kinds: dict[str, ExpectationKind] = {}
    for contributed in hook.pytest_agentic_evals_expectation_kinds():
        for kind in contributed or ():
            if kind.key in kinds:
                raise PluginError(
                    f"expectation kind {kind.key!r} is defined twice "
                    "(by a plugin or a conftest.py)"
                )
            kinds[kind.key] = kind
    return kinds


def installed_kinds() -> dict[str, ExpectationKind]:
    """The built-in kinds and those of installed pytest plugins (``pytest11`` entry points).

    Kinds of a ``conftest.py`` are only known to a pytest session. A plugin that cannot be
    loaded is a PluginError naming it, as pytest would refuse to start with it.
    """
    manager = pytest.PytestPluginManager()
    manager.add_hookspecs(hookspecs)
    manager.register(BuiltinKinds(), BUILTIN_KINDS_PLUGIN)
    # pytest's own switch for plugin autoloading applies to the CLI as to a session.
    if not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if manager.get_plugin(entry.name) is None:
                _register(manager, entry)
    try:
        return gather_kinds(manager.hook)
    except PluginError:
        raise
    except Exception as exc:  # a plugin's hook that raised: the CLI names it, no traceback
        raise PluginError(
            f"pytest_agentic_evals_expectation_kinds of an installed plugin raised "
            f"{type(exc).__name__}: {exc}"
        ) from None


def _register(manager: pytest.PytestPluginManager, entry: metadata.EntryPoint) -> None:
    try:
        manager.register(entry.load(), entry.name)
    except Exception as exc:  # an import error, or a hook pluggy refuses
        raise PluginError(
            f"the installed pytest plugin {entry.name!r} ({entry.value}) cannot be loaded: "
            f"{type(exc).__name__}: {exc}"
        ) from None
