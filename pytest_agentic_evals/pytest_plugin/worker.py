"""The worker role: collect fixtures into trial items, run them, and say what was collected.

Every process that collects plays it: an xdist worker, or a serial run. A trial's result goes
on its test report as a plain dict, which is all that crosses from an xdist worker to the
controller besides ``config.workeroutput``; through that, once per worker, goes the catalog of
the fixtures collected and the trials selected. A serial run hands the same catalog to its
controller directly, with the loaded fixtures.
"""

from __future__ import annotations

import fnmatch
import os
import signal
from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from _pytest.runner import runtestprotocol

from pytest_agentic_evals.durations import (
    Durations,
    DurationsError,
    cached_rows,
    longest_first,
    read_durations,
)
from pytest_agentic_evals.execution.environment import RunSettings
from pytest_agentic_evals.execution.rundirs import RunDir
from pytest_agentic_evals.execution.sandbox import SandboxSettings
from pytest_agentic_evals.execution.stops import CaseStops
from pytest_agentic_evals.execution.trialdirs import TrialDirs
from pytest_agentic_evals.expectations.builtin import ExpectationKind
from pytest_agentic_evals.model import Fixture
from pytest_agentic_evals.pytest_plugin.kinds import PluginError, gather_kinds
from pytest_agentic_evals.pytest_plugin.nodes import FixtureFile, RejectedFile, TrialItem
from pytest_agentic_evals.pytest_plugin.settings import Settings
from pytest_agentic_evals.pytest_plugin.termination import Termination
from pytest_agentic_evals.regressions.registry import is_registry

CATALOG_KEY = "agentic_evals_catalog"  # in workeroutput: what the worker collected
RUN_ID_KEY = "agentic_evals_run_id"  # in workerinput: the run the controller opened
RESULT_ATTRIBUTE = "agentic_evals"  # on a trial's test report: its result
# On a trial's test report: the seal of its result, made when the trial ended, before any hook
# saw it; and, in workerinput, the key of the run's seals. A hook that changed the result
# (a pytest_runtest_call or pytest_runtest_makereport wrapper) is found out by the controller.
RESULT_SEAL_ATTRIBUTE = "agentic_evals_seal"
RESULT_KEY = "agentic_evals_result_key"
DURATIONS_CACHE_KEY = "agentic_evals/durations"  # in pytest's cache: the last run's durations
LAST_DURATIONS = "last"  # --agentic-evals-durations last: the durations in pytest's cache
# On a trial's test report: why the trial counts as not tested (a skip or xfail marker).
NOT_TESTED_ATTRIBUTE = "agentic_evals_not_tested"
SKIPPING_MARKERS = ("skip", "skipif", "xfail")

SKILLS = "skills"  # the folder of skills inside an agent's dot-folder (.claude/skills)
SCAN_LIMIT = 2000  # folders looked at under one folder that norecursedirs skips
NOT_SCANNED = (".git", ".hg", ".svn", "__pycache__")

# The catalog (builtins only, so that xdist can send it):
#   {"fixtures": {fixture node id: {"path", "trials", "selected": {case: [trial numbers]},
#                                   "expectation_schemas", "sha256"}},
#    "unknown_cases": [names]}
Catalog = dict[str, Any]
Publish = Callable[[Catalog, Mapping[str, Fixture]], None]


def publish_to_controller(config: pytest.Config) -> Publish:
    """How an xdist worker sends its catalog: through workeroutput; fixtures stay here."""

    def publish(catalog: Catalog, fixtures: Mapping[str, Fixture]) -> None:
        config.workeroutput[CATALOG_KEY] = catalog  # type: ignore[attr-defined]

    return publish


def sandbox_settings(settings: Settings) -> SandboxSettings:
    """The run's sandbox setting, and the files of the runner no trial may see: the reports
    this session writes and the files ``agentic-evals run`` names."""
    paths = (settings.report, settings.markdown, *settings.hide)
    return SandboxSettings(mode=settings.sandbox, source=settings.source("sandbox"),
                           hidden=tuple(Path(os.path.abspath(p)) for p in paths if p))


def load_durations(config: pytest.Config, settings: Settings) -> Durations | None:
    """The durations that order the trials, or None for collection order; a report that cannot
    be read is a usage error naming the setting."""
    if not settings.durations:
        return None
    if settings.durations == LAST_DURATIONS:
        cache = getattr(config, "cache", None)
        rows = cached_rows(cache.get(DURATIONS_CACHE_KEY, None)) if cache is not None else []
    else:
        try:
            rows = read_durations(settings.durations)
        except DurationsError as exc:
            raise pytest.UsageError(f"{settings.source('durations')}: {exc}") from None
    return Durations(rows)


class Worker:
    """Collection of fixtures, selection of cases, and the trials' results on their reports."""

    def __init__(
        self, config: pytest.Config, settings: Settings, run: RunDir, publish: Publish,
        termination: Termination, result_key: bytes,
    ) -> None:
        self.config = config
        self.result_key = result_key
        self.termination = termination
        termination.on_signal = self.signalled
        self.session: pytest.Session | None = None
        self.settings = settings
        self.accept_exemptions = settings.allow_exempt
        self.publish = publish
        self.run = run
        self.trial_dirs = TrialDirs(run.path)
        self.stops = CaseStops(run.path) if settings.stop_on_fail else None
        self.durations = load_durations(config, settings)
        self.run_settings = RunSettings(
            run_id=run.run_id, run_dir=run.path, keep_passed_workspaces=settings.keep_workspaces,
            trial_dirs=self.trial_dirs, sandbox=sandbox_settings(settings),
            **({"default_timeout": settings.timeout} if settings.timeout else {}),
        )
        # node id of a fixture file -> the loaded fixture, and its plugins' kinds' schemas
        self.fixtures: dict[str, Fixture] = {}
        self.expectation_schemas: dict[str, dict[str, Any]] = {}
        self.unknown_cases: set[str] = set()
        # Fixture files that pytest's norecursedirs kept from collection (rootdir-relative).
        self.hidden: set[str] = set()

    # -- what fixture files and trial items ask (nodes.Collecting) ---------------------------
    def kinds(self, hook: Any) -> dict[str, ExpectationKind]:
        """The kinds of the hook implementations that ``hook`` sees."""
        try:
            return gather_kinds(hook)
        except PluginError as exc:
            raise pytest.UsageError(str(exc)) from None

    def trials_for(self, fixture: Fixture) -> int:
        return self.settings.trials_for(fixture.trials, fixture.minimum_trials)

    def loaded(self, nodeid: str, fixture: Fixture, schemas: dict[str, Any]) -> None:
        self.fixtures[nodeid] = fixture
        self.expectation_schemas[nodeid] = schemas

    # -- collection ------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_ignore_collect(
        self, collection_path: Path, config: pytest.Config
    ) -> Generator[None, bool | None, bool | None]:
        """Dot-folders that hold skills (``.claude/skills``, ``.agents/skills``, ...) are
        collected although pytest's ``norecursedirs`` skips dot-folders, and only their
        ``skills`` folder is; a fixture that ``norecursedirs`` hides elsewhere (``build/``) is
        noted, for the summary to name."""
        ignored = yield
        if not collection_path.is_dir():
            return ignored
        if _holds_skills(collection_path.parent) and collection_path.name != SKILLS:
            return True  # .claude/settings, .claude/commands...: not skills
        if not ignored or not _norecursed(config, collection_path) \
                or _excluded_by_user(config, collection_path):
            return ignored
        if _holds_skills(collection_path):
            return False
        self.hidden |= {os.path.relpath(found, config.rootpath)
                        for found in fixtures_under(collection_path, self.settings.files)}
        return ignored

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> FixtureFile | None:
        if not self._wants(file_path, parent):
            return None
        return FixtureFile.from_parent(parent, path=file_path, collecting=self)

    def _wants(self, file_path: Path, parent: pytest.Collector) -> bool:
        if file_path.suffix != ".json" or is_registry(file_path):
            return False  # a regressions.json is collected by the regression items, never here
        if parent.session.isinitpath(file_path):
            return True
        return any(fnmatch.fnmatch(file_path.name, pattern) for pattern in self.settings.files)

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> Iterator[None]:
        # A file that does not load fails whatever the selection (-k, -m, --case): its
        # problems are never deselected out of sight.
        rejected = [item for item in items if isinstance(item, RejectedFile)]
        items[:] = [item for item in items if not isinstance(item, RejectedFile)]
        try:
            result = yield
            self._select_cases(config, items)  # after every other plugin's selection
            if self.durations:
                # Every worker orders the same collection the same way, as xdist requires;
                # its load scheduling hands the trials out in this order.
                durations = self.durations
                items[:] = longest_first(items, lambda item: durations.of(item.fixture.path,
                                                                         item.case.name)
                                         if isinstance(item, TrialItem) else 0.0)
            return result
        finally:
            items[:0] = rejected

    def _select_cases(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Only the trials of the cases --agentic-evals-case names, when it names any."""
        wanted = self.settings.cases
        if not wanted:
            return
        known = {item.case.name for item in items if isinstance(item, TrialItem)}
        self.unknown_cases = set(wanted) - known
        keep: list[pytest.Item] = []
        drop: list[pytest.Item] = []
        for item in items:
            unwanted = isinstance(item, TrialItem) and item.case.name not in wanted
            (drop if unwanted else keep).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        fixtures: dict[str, dict[str, Any]] = {}
        for nodeid, fixture in self.fixtures.items():
            fixtures[nodeid] = {
                "path": str(fixture.path), "trials": self.trials_for(fixture), "selected": {},
                # The controller reloads the fixture without the conftest files of its folder.
                "expectation_schemas": self.expectation_schemas.get(nodeid, {}),
                "sha256": fixture.sha256,
            }
        for item in session.items:
            if isinstance(item, TrialItem):
                selected = fixtures[item.parent.nodeid]["selected"]  # type: ignore[union-attr]
                selected.setdefault(item.case.name, []).append(item.trial)
        self.publish({"fixtures": fixtures, "unknown_cases": sorted(self.unknown_cases),
                      "hidden": sorted(self.hidden)},
                     self.fixtures)

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session
        if self.termination.received is not None:  # before the session began (an xdist worker)
            self.signalled(self.termination.received)

    def signalled(self, signum: int) -> None:
        """SIGTERM or SIGHUP: this session runs no more trials, however the KeyboardInterrupt
        fares (an xdist worker then says it stopped, rather than ending as if done)."""
        if self.session is not None and not self.session.shouldstop:
            self.session.shouldstop = f"interrupted ({signal.Signals(signum).name})"

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        # The run's directory is made when trials are about to run, not before: --help and
        # --collect-only make and remove nothing.
        if not session.config.option.collectonly and session.items:
            self.run.open()

    def pytest_sessionfinish(self) -> None:
        # Nothing of a passing trial outlives the session. Done here, before xdist tells the
        # controller that this worker has finished: the controller may end it right after.
        self.trial_dirs.close()

    # -- running ---------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Any:
        """A trial runs once. pytest's own protocol, so that no rerun plugin (pytest-
        rerunfailures' --reruns, its ini value or its ``flaky`` marker) gets to run a failed
        trial again until it passes: every attempt is evidence, and one trial is one attempt.
        Wrappers (pytest-timeout's) still wrap it."""
        if not isinstance(item, TrialItem):
            return None
        self.termination.interrupt_if_received()
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        runtestprotocol(item, nextitem=nextitem)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    # -- results ---------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Iterator[None]:
        report = yield
        if not isinstance(item, TrialItem):
            return report
        skipping = [m.name for m in item.iter_markers() if m.name in SKIPPING_MARKERS]
        if skipping or hasattr(report, "wasxfail"):
            # Skipped or xfailed by someone (a marker, a conftest): whatever ran is not
            # evidence the gate may count either way; the trial is NOT_TESTED.
            setattr(report, NOT_TESTED_ATTRIBUTE, ", ".join(skipping) or "xfail")
            return report
        result = item.agentic_result
        if call.when == "call" and result is not None:
            setattr(report, RESULT_ATTRIBUTE, result)
            setattr(report, RESULT_SEAL_ATTRIBUTE, item.agentic_seal)
        return report


def _holds_skills(folder: Path) -> bool:
    """A dot-folder of an agent's configuration with skills in it: ``.claude``, ``.agents``,
    ``.codex``..."""
    return folder.name.startswith(".") and (folder / SKILLS).is_dir()


def _norecursed(config: pytest.Config, folder: Path) -> bool:
    return any(
        fnmatch.fnmatch(str(folder) if "/" in pattern else folder.name, pattern)
        for pattern in config.getini("norecursedirs")
    )


def _excluded_by_user(config: pytest.Config, folder: Path) -> bool:
    """Whether the user, not norecursedirs, keeps ``folder`` out: --ignore, --ignore-glob, or
    a virtualenv."""
    ignored = {Path(os.path.abspath(path)) for path in config.getoption("ignore") or ()}
    globs = config.getoption("ignore_glob") or ()
    return (folder in ignored or any(fnmatch.fnmatch(str(folder), os.path.abspath(glob))
                                     for glob in globs)
            or (folder / "pyvenv.cfg").is_file())


def fixtures_under(folder: Path, patterns: tuple[str, ...]) -> list[Path]:
    """Fixture files under ``folder`` (at most SCAN_LIMIT folders looked at; no virtualenv,
    no version-control folder, no symbolic link followed)."""
    found: list[Path] = []
    for visited, (root, dirs, files) in enumerate(os.walk(folder)):
        if visited >= SCAN_LIMIT:
            break
        dirs[:] = [d for d in dirs if d not in NOT_SCANNED
                   and not os.path.isfile(os.path.join(root, d, "pyvenv.cfg"))]
        found += [Path(root, name) for name in files if name.endswith(".json")
                  and any(fnmatch.fnmatch(name, pattern) for pattern in patterns)
                  and not is_registry(Path(root, name))]
    return sorted(found)
