"""The expectation kinds a command knows: the built-in ones and those of installed plugins.

They come from the pytest layer's own hook machinery (``pytest_plugin.kinds``), so the CLI
and a pytest session agree on what a plugin adds. Kinds of a ``conftest.py`` are only known
to a pytest session. A plugin that cannot be loaded ends the command with one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_agentic_evals.cli.common import CommandFailed
from pytest_agentic_evals.expectations.builtin import ExpectationKind, extra_schemas
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.model import Fixture
from pytest_agentic_evals.pytest_plugin.kinds import PluginError, installed_kinds


def plugin_kinds() -> dict[str, ExpectationKind]:
    """Every kind a fixture may use outside a pytest session, built-in ones included."""
    try:
        return installed_kinds()
    except PluginError as exc:
        raise CommandFailed(str(exc)) from None


def plugin_schemas() -> dict[str, Any]:
    """The JSON Schemas of the kinds installed plugins add, for the fixture loader."""
    return extra_schemas(plugin_kinds())


def load_fixtures(
    paths: Sequence[str], accept_exemptions: bool
) -> tuple[list[Fixture], list[str]]:
    """The fixtures that load, and one description per fixture that does not."""
    schemas = plugin_schemas()
    fixtures, errors = [], []
    for path in paths:
        try:
            fixtures.append(load_fixture(path, schemas, accept_exemptions=accept_exemptions))
        except FixtureError as exc:
            errors.append(exc.describe())
    return fixtures, errors
