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

import pytest

from pytest_agentic_evals.execution.rundirs import (
    RunDir,
    prune,
    remove_if_finished,
    runs_root,
    runs_root_problem,
)
from pytest_agentic_evals.jsonio import output_path_problem, same_path
from pytest_agentic_evals.pytest_plugin.controller import Controller, XdistHooks
from pytest_agentic_evals.pytest_plugin.kinds import BUILTIN_KINDS_PLUGIN, BuiltinKinds
from pytest_agentic_evals.pytest_plugin.outputs import pin_outputs
from pytest_agentic_evals.pytest_plugin.probe import PLUGIN_NAME as PROBE_PLUGIN
from pytest_agentic_evals.pytest_plugin.probe import Probing
from pytest_agentic_evals.pytest_plugin.regressions import (
    PLUGIN_NAME,
    RESULTS_PLUGIN_NAME,
    RegressionItems,
    RegressionResults,
    collected_here,
)
from pytest_agentic_evals.pytest_plugin.settings import Settings
from pytest_agentic_evals.pytest_plugin.termination import Termination
from pytest_agentic_evals.pytest_plugin.worker import (
    RESULT_KEY,
    RUN_ID_KEY,
    Publish,
    Worker,
    load_durations,
    publish_to_controller,
)

WORKER_PLUGIN = "agentic-evals-worker"
CONTROLLER_PLUGIN = "agentic-evals-controller"
XDIST_PLUGIN = "agentic-evals-xdist"
PRUNING_PLUGIN = "agentic-evals-pruning"


# The parts the plugin registers itself. `-p no:NAME` blocks a plugin by name before it is
# registered, and pluggy then drops its registration without a word: one of these blocked would
# take the trials or the gate out of a run that asked for them, and the session end green.
PARTS = (BUILTIN_KINDS_PLUGIN, PROBE_PLUGIN, WORKER_PLUGIN, CONTROLLER_PLUGIN, XDIST_PLUGIN,
         PRUNING_PLUGIN, PLUGIN_NAME, RESULTS_PLUGIN_NAME)


def register_roles(config: pytest.Config, settings: Settings) -> None:
    blocked = [name for name in PARTS if config.pluginmanager.is_blocked(name)]
    if blocked:
        raise pytest.UsageError(
            f"-p no:{blocked[0]}: {blocked[0]} is a part of agentic-evals, which "
            "--agentic-evals needs whole; to run without agentic-evals, drop --agentic-evals "
            "(or turn it off with -p no:agentic_evals)")
    problem = runs_root_problem()
    if problem:
        raise pytest.UsageError(f"agentic-evals: {problem}")
    if not hasattr(config, "workerinput"):
        check_output_paths(settings)
    config.pluginmanager.register(BuiltinKinds(), BUILTIN_KINDS_PLUGIN)
    if settings.probe:
        if hasattr(config, "workerinput") or distributes(config):
            raise pytest.UsageError("--agentic-evals-probe runs in one process: drop -n")
        # Probe items instead of trials: no trial runs, so no readiness is judged.
        config.pluginmanager.register(Probing(config, settings, pin_outputs(config, settings)),
                                      PROBE_PLUGIN)
    elif hasattr(config, "workerinput"):
        _register_worker(config, settings)
    elif distributes(config):
        _register_controller(config, settings)
    else:
        _register_serial_run(config, settings)


def distributes(config: pytest.Config) -> bool:
    """Whether xdist hands this session's items out to workers from this process.

    xdist decides it in its own pytest_configure, and registers its scheduling session
    ("dsession") when it does. That hook and ours are both trylast, and between the two the
    order is the order the plugins were found in, which the file system decides: where this
    plugin came first, its controller took itself for a serial run (and its workers failed at
    configure). So xdist's rule is read here from the options its pytest_cmdline_main settled
    (``-n`` and ``--dist`` into ``dist`` and ``tx``), whichever hook runs first.
    """
    if config.pluginmanager.has_plugin("dsession"):
        return True
    return (config.pluginmanager.has_plugin("xdist")
            and not config.getvalue("collectonly")
            and config.getoption("dist", "no") != "no"
            and bool(config.getoption("tx", None)))


def check_output_paths(settings: Settings) -> None:
    """The files the session writes at its end can be written: a usage error before any
    trial runs, rather than a run whose report is lost."""
    for name in ("report", "markdown"):
        path = getattr(settings, name)
        problem = output_path_problem(path) if path else None
        if problem:
            raise pytest.UsageError(f"{settings.source(name)}: {path}: {problem}")
    if settings.report and settings.markdown and same_path(settings.report, settings.markdown):
        raise pytest.UsageError(f"{settings.source('markdown')}: {settings.markdown}: is also "
                                f"{settings.source('report')}: name two files")


def _register_worker(config: pytest.Config, settings: Settings) -> None:
    """An xdist worker: it joins the run its controller named (on a host of its own, it makes
    the directory there)."""
    run_id = config.workerinput[RUN_ID_KEY]  # type: ignore[attr-defined]
    result_key = bytes.fromhex(config.workerinput[RESULT_KEY])  # type: ignore[attr-defined]
    termination = Termination()
    termination.install(config.add_cleanup, unblock=True)  # the controller started it blocked
    _add_worker(config, settings, RunDir(run_id, prune=False), publish_to_controller(config),
                termination, result_key)


def _register_controller(config: pytest.Config, settings: Settings) -> None:
    """The controller of an xdist run: it names the run, prunes finished runs, and collects
    and runs nothing; the workers make the run's directory."""
    load_durations(config, settings)  # a bad report is refused before any worker starts
    controller = _add_controller(config, settings, uuid.uuid4().hex[:12])
    xdist = XdistHooks(controller)
    controller.termination = Termination(
        forward_to_children=True, on_signal=lambda signum: xdist.stop_scheduling())
    controller.termination.install(config.add_cleanup)
    config.pluginmanager.register(xdist, XDIST_PLUGIN)
    config.pluginmanager.register(Pruning(), PRUNING_PLUGIN)
    # After the workers are gone: the run's directory goes unless it kept something.
    run_dir = RunDir(controller.run_id).path
    config.add_cleanup(lambda: remove_if_finished(run_dir))


def _register_serial_run(config: pytest.Config, settings: Settings) -> None:
    run = RunDir(uuid.uuid4().hex[:12])
    controller = _add_controller(config, settings, run.run_id)
    controller.termination = Termination()
    controller.termination.install(config.add_cleanup)
    _add_worker(config, settings, run, controller.fold_catalog, controller.termination,
                controller.result_key)


class Pruning:
    """The xdist controller's share of the run directories: the pruning of finished runs, when
    trials are about to run (never under --collect-only)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        if not session.config.option.collectonly:
            prune(runs_root())


def _add_controller(config: pytest.Config, settings: Settings, run_id: str) -> Controller:
    results = RegressionResults() if collected_here() else None
    if results is not None:
        config.pluginmanager.register(results, RESULTS_PLUGIN_NAME)
    controller = Controller(config, settings, run_id, results, pin_outputs(config, settings))
    config.pluginmanager.register(controller, CONTROLLER_PLUGIN)
    return controller


def _add_worker(config: pytest.Config, settings: Settings, run: RunDir, publish: Publish,
                termination: Termination, result_key: bytes) -> None:
    worker = Worker(config, settings, run, publish, termination, result_key)
    config.add_cleanup(run.close)  # the run is over here: its directory goes unless it kept any
    config.pluginmanager.register(worker, WORKER_PLUGIN)
    if collected_here():
        config.pluginmanager.register(RegressionItems(worker, settings.cases), PLUGIN_NAME)
