"""Which roles this process plays, registered as plugins once the plugin is on.

Like pytest-xdist, which registers its scheduling session only on the controller and keeps
the worker's behaviour apart, the plugin is two roles:

- an xdist worker collects and runs trials (``worker.Worker``) and sends its catalog;
- the controller of an xdist run judges what the workers send (``controller.Controller``)
  and talks to them (``controller.XdistHooks``);
- a serial run plays both, its worker handing the catalog to its controller directly.

Retained regressions follow the same split (``regressions.RegressionItems`` where items run,
``regressions.RegressionResults`` where they are judged). The built-in expectation kinds are
registered wherever fixtures are loaded.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from pytest_agentic_evals.execution.rundirs import join_run_dir, new_run_dir
from pytest_agentic_evals.pytest_plugin.controller import Controller, XdistHooks
from pytest_agentic_evals.pytest_plugin.kinds import BUILTIN_KINDS_PLUGIN, BuiltinKinds
from pytest_agentic_evals.pytest_plugin.regressions import (
    PLUGIN_NAME,
    RESULTS_PLUGIN_NAME,
    RegressionItems,
    RegressionResults,
    collected_here,
)
from pytest_agentic_evals.pytest_plugin.settings import Settings
from pytest_agentic_evals.pytest_plugin.worker import (
    RUN_ID_KEY,
    Publish,
    Worker,
    publish_to_controller,
)

WORKER_PLUGIN = "agentic-evals-worker"
CONTROLLER_PLUGIN = "agentic-evals-controller"
XDIST_PLUGIN = "agentic-evals-xdist"


def register_roles(config: pytest.Config, settings: Settings) -> None:
    config.pluginmanager.register(BuiltinKinds(), BUILTIN_KINDS_PLUGIN)
    if hasattr(config, "workerinput"):
        _register_worker(config, settings)
    elif config.pluginmanager.has_plugin("dsession"):
        _register_controller(config, settings)
    else:
        _register_serial_run(config, settings)


def _register_worker(config: pytest.Config, settings: Settings) -> None:
    """An xdist worker: it joins the run its controller opened."""
    run_id = config.workerinput[RUN_ID_KEY]  # type: ignore[attr-defined]
    run_dir, in_use = join_run_dir(run_id)
    config.add_cleanup(in_use.close)  # the run is over here: its directory may be pruned
    _add_worker(config, settings, run_id, run_dir, publish_to_controller(config))


def _register_controller(config: pytest.Config, settings: Settings) -> None:
    """The controller of an xdist run: it opens the run, and collects and runs nothing."""
    run_id, _ = _open_run(config)
    controller = _add_controller(config, settings, run_id)
    config.pluginmanager.register(XdistHooks(controller), XDIST_PLUGIN)


def _register_serial_run(config: pytest.Config, settings: Settings) -> None:
    run_id, run_dir = _open_run(config)
    controller = _add_controller(config, settings, run_id)
    _add_worker(config, settings, run_id, run_dir, controller.fold_catalog)


def _open_run(config: pytest.Config) -> tuple[str, Path]:
    run_id = uuid.uuid4().hex[:12]
    run_dir, in_use = new_run_dir(run_id)
    config.add_cleanup(in_use.close)  # the run is over: its directory may now be pruned
    return run_id, run_dir


def _add_controller(config: pytest.Config, settings: Settings, run_id: str) -> Controller:
    results = RegressionResults() if collected_here() else None
    if results is not None:
        config.pluginmanager.register(results, RESULTS_PLUGIN_NAME)
    controller = Controller(config, settings, run_id, results)
    config.pluginmanager.register(controller, CONTROLLER_PLUGIN)
    return controller


def _add_worker(
    config: pytest.Config, settings: Settings, run_id: str, run_dir: Path, publish: Publish
) -> None:
    worker = Worker(config, settings, run_id, run_dir, publish)
    config.pluginmanager.register(worker, WORKER_PLUGIN)
    if collected_here():
        config.pluginmanager.register(RegressionItems(worker, settings.cases), PLUGIN_NAME)
