"""The plugin's entry point (``pytest11``, name ``agentic_evals``): options, hooks, and turning on.

pytest imports this module in every session of every project where the package is installed,
so it stays cheap: it loads the option table and the hookspecs, nothing of the core. Only
when ``--agentic-evals`` (or ini ``agentic_evals``) is on does it load the roles this process
plays (``roles.register_roles``), and with them the fixture loader, the runner and the rest.
"""

from __future__ import annotations

import importlib

import pytest

from pytest_agentic_evals.pytest_plugin import hookspecs
from pytest_agentic_evals.pytest_plugin.settings import (
    add_plugin_options,
    enabled,
    resolve_settings,
)

MARKER_LINE = "regression: verification of a retained regression (agentic-evals)"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_plugin_options(parser)


# Late, after the plugins that configure what this one builds on (the role this process plays
# does not depend on running after xdist's own trylast hook: see roles.distributes).
@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_LINE)
    if not enabled(config):
        return
    settings = resolve_settings(config)
    if getattr(config.option, "dist", None) == "each":
        # Every worker would run every trial, and a trial is one piece of evidence, not n.
        raise pytest.UsageError(
            "--agentic-evals: --dist each runs every trial on every worker; use -n N or "
            f"--dist load (set the number of trials with {settings.spelling('trials')})"
        )
    roles = importlib.import_module("pytest_agentic_evals.pytest_plugin.roles")
    roles.register_roles(config, settings)
