"""The controller role: fold the trials' results and the workers' catalogs, judge, write, gate.

Under xdist the controller never collects: it sees test reports and, once per worker, the
worker's catalog. A serial run plays both roles, and its worker hands the catalog over
directly. Either way the verdicts are computed here, from the same data, by the same steps.
"""

from __future__ import annotations

import contextlib
import copy
import hmac
import inspect
import os
import secrets
import shlex
import signal
import sys
from collections import defaultdict
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from pytest_agentic_evals.durations import cached_rows, report_durations
from pytest_agentic_evals.execution.environment import runner_environment
from pytest_agentic_evals.execution.trial import infrastructure_failure, share_parts
from pytest_agentic_evals.expectations.builtin import extra_schemas
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.model import PASS, Fixture, TrialResult
from pytest_agentic_evals.pytest_plugin.kinds import PluginError, gather_kinds
from pytest_agentic_evals.pytest_plugin.nodes import parse_trial_nodeid, rejected_file
from pytest_agentic_evals.pytest_plugin.outputs import Outputs
from pytest_agentic_evals.pytest_plugin.regressions import RegressionResults
from pytest_agentic_evals.pytest_plugin.scheduling import LongestFirstScheduling
from pytest_agentic_evals.pytest_plugin.settings import Settings
from pytest_agentic_evals.pytest_plugin.termination import Termination, signals_blocked
from pytest_agentic_evals.pytest_plugin.worker import (
    CATALOG_KEY,
    DURATIONS_CACHE_KEY,
    NOT_TESTED_ATTRIBUTE,
    RESULT_ATTRIBUTE,
    RESULT_KEY,
    RESULT_SEAL_ATTRIBUTE,
    RUN_ID_KEY,
)
from pytest_agentic_evals.redaction import Redactor, escape_line
from pytest_agentic_evals.report import build_fixture_report, session_report
from pytest_agentic_evals.seals import mac
from pytest_agentic_evals.summary import fixture_reports, markdown, terminal_lines
from pytest_agentic_evals.verdicts import excused_failure, fixture_gate, rewritten

MODIFY_REPORT = "pytest_agentic_evals_modify_report"
REPORT_TAMPERED = 2  # the exit status of a session whose report a hook tried to rewrite

TrialResults = dict[tuple[str, int], TrialResult]  # (case, trial) -> the trial's result


class Controller:
    """Results and catalogs in; reports, the summary and the exit status out."""

    def __init__(
        self, config: pytest.Config, settings: Settings, run_id: str,
        regressions: RegressionResults | None, outputs: Outputs,
    ) -> None:
        self.config = config
        self.settings = settings
        self.outputs = outputs
        # The key of the run's result seals (worker.RESULT_SEAL_ATTRIBUTE), for its workers.
        self.result_key = secrets.token_bytes(32)
        self.run_id = run_id
        self.regressions = regressions
        # node id of a fixture file -> {"path", "trials", "selected", ...} (see worker.Catalog)
        self.catalog: dict[str, dict[str, Any]] = {}
        # node id of a fixture file -> the fixture a serial run's worker loaded
        self.fixtures: dict[str, Fixture] = {}
        # node id of a fixture file -> sha256 of the copies the workers collected
        self.worker_hashes: dict[str, set[str]] = defaultdict(set)
        self.unknown_cases: set[str] = set()
        self.results: dict[str, TrialResults] = defaultdict(dict)
        self.shared: dict[bytes, Any] = {}  # the parts trials have in common (share_parts)
        self.reports: list[dict[str, Any]] = []
        self.session_report: dict[str, Any] | None = None
        self.judged: dict[str, dict[str, Any]] = {}  # node id of a fixture file -> its report
        self.gate_failures: list[str] = []
        self.notes: list[str] = []  # what a person should know of how the run was set up
        self.rejected: list[str] = []  # files of the session that did not load
        # Every failed test: (fixture node id, case) for a trial, None for any other test.
        self.failed_tests: list[tuple[str, str] | None] = []
        # Whether every failed test is a trial of an optional case of a passing fixture.
        self.failures_excused = False
        # Whether the session was stopped (pytest.exit, Ctrl-C) before it ran what it collected.
        self.stopped_early = False
        # Node ids of the fixture files xdist's workers collected trials of.
        self.collected_fixtures: set[str] = set()
        # SIGTERM and SIGHUP, handled as Ctrl-C (set by the roles).
        self.termination: Termination | None = None
        # Fixture files that pytest's norecursedirs kept from collection, for the summary.
        self.hidden: set[str] = set()
        # One line per report hook that tried to change what the runner wrote (refused).
        self.tampering: list[str] = []
        # The exit status the gate decided, applied again after every other plugin's
        # pytest_sessionfinish and pytest_unconfigure.
        self.decided_status: int | None = None
        self.session: pytest.Session | None = None

    # -- what the workers send ----------------------------------------------------------------
    def fold_catalog(
        self, catalog: dict[str, Any], fixtures: Mapping[str, Fixture] | None = None
    ) -> None:
        """Add one worker's catalog, and the fixtures it loaded when it shares this process."""
        for nodeid, entry in catalog["fixtures"].items():
            self.catalog.setdefault(nodeid, entry)
            if entry.get("sha256"):
                self.worker_hashes[nodeid].add(entry["sha256"])
        self.unknown_cases |= set(catalog["unknown_cases"])
        self.hidden |= set(catalog.get("hidden", ()))
        self.fixtures.update(fixtures or {})

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:  # a file that did not collect is a failed test that no gate excuses
            self.failed_tests.append(None)

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.stopped_early = True  # pytest.exit() or Ctrl-C: whatever the status it asked for

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        rejected = rejected_file(report.nodeid)
        if rejected is not None and report.failed:
            self.rejected.append(rejected)
            self.gate_failures.append(f"{rejected}: rejected at load (its problems are above)")
        key = parse_trial_nodeid(report.nodeid)
        if report.failed:
            self.failed_tests.append(None if key is None else (key[0], key[1]))
        if key is None or getattr(report, NOT_TESTED_ATTRIBUTE, None):
            return  # not a trial; or a trial skipped or xfailed by a marker: NOT_TESTED
        fixture_nodeid, case, trial = key
        result = getattr(report, RESULT_ATTRIBUTE, None)
        earlier = self.results[fixture_nodeid].get((case, trial))
        if earlier is not None and earlier["outcome"] != PASS:
            return  # every attempt counts: a later attempt never turns a trial that did not
            # pass (failed, blocked) into a pass
        if result is not None and not hmac.compare_digest(
                mac(self.result_key, result), str(getattr(report, RESULT_SEAL_ATTRIBUTE, ""))):
            # Changed after the trial ended, by a hook: what the trial did is not known.
            self.tampering.append(f"{report.nodeid}: its result was changed after the trial "
                                  "ended (by a pytest_runtest_call or pytest_runtest_makereport "
                                  "hook): refused, the trial counts as failed")
            result = _incomplete_trial(report, trial)
            result["problems"] = ["its result was changed by a hook after the trial ended"]
            result["infrastructure"] = False
        if result is not None:
            result = share_parts(result, self.shared)
            # The report keeps the compact result too (pytest keeps every report to the end).
            setattr(report, RESULT_ATTRIBUTE, result)
            self.results[fixture_nodeid][(case, trial)] = result
        elif report.failed and (case, trial) not in self.results[fixture_nodeid]:
            # A crashed worker's report carries none of our data: a failed trial, not nothing.
            result = _incomplete_trial(report, trial)
            if self.termination is not None and self.termination.received is not None:
                # The worker stopped on the signal: the trial was interrupted, not crashed.
                name = signal.Signals(self.termination.received).name
                result["problems"] = [f"interrupted ({name}) while this trial ran"]
            self.results[fixture_nodeid][(case, trial)] = result

    # -- the end of the session ---------------------------------------------------------------
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Iterator[None]:
        signalled = self.termination is not None and self.termination.received is not None
        if not lists_only(self.config):
            self.session = session
            stepwise = exitstatus == pytest.ExitCode.INTERRUPTED and _stepwise_stop(session)
            self.finish(session, interrupted=signalled or (
                exitstatus == pytest.ExitCode.INTERRUPTED and not stepwise))
        if signalled:  # however the session ended after SIGTERM or SIGHUP: interrupted
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        result = yield
        # Every other implementation has run (also a trylast one, or one that set
        # session.exitstatus): the gate's exit status is applied again.
        self.reapply_exit_status()
        return result

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_unconfigure(self, config: pytest.Config) -> Iterator[None]:
        result = yield
        self.reapply_exit_status()  # pytest returns session.exitstatus after this hook
        return result

    def finish(self, session: pytest.Session, interrupted: bool) -> None:
        """Judge every fixture, gate, publish the report, then apply the exit status."""
        self.catalog_lost_fixtures()
        self.reports = self.judge_fixtures(interrupted)
        if self.unknown_cases:
            self.gate_failures.append("unknown case(s): " + ", ".join(sorted(self.unknown_cases)))
        # The gate is decided before plugins see the report: a hook may annotate what is
        # written, never turn a failing session into a passing one.
        self.gate_failures += self.gate_reasons()
        self.failures_excused = self.only_optional_failures()
        regressions = self.regressions.in_order() if self.regressions else []
        if not (self.catalog or regressions or self.rejected or self.collected_fixtures):
            where = ", ".join(self.config.args) or str(self.config.invocation_params.dir)
            self.notes.append(f"no fixture found: looked for {', '.join(self.settings.files)} "
                              f"under {where}")
        if self.reports or regressions:
            self.session_report = self.publish(regressions)
        self.record_durations()
        self.apply_exit_status(session)

    def catalog_lost_fixtures(self) -> None:
        """Fixtures whose workers ended before reporting them: collected, with no result and
        no catalog (the workers died, or were stopped, before any trial); or with results but
        no catalog (before saying what was selected). Either fails the gate: what was selected
        is not known. What their results show is all that is known of them."""
        for nodeid in sorted(self.collected_fixtures - set(self.results) - set(self.catalog)):
            self.gate_failures.append(
                f"{nodeid}: collected, but no trial of it was run or reported (the workers "
                "ended before): the run cannot be judged")
        for nodeid in sorted(set(self.results) - set(self.catalog)):
            self.gate_failures.append(
                f"{nodeid}: the workers that ran its trials ended before saying which trials "
                "were selected: the run cannot be judged whole")
            selected: dict[str, list[int]] = defaultdict(list)
            for case, trial in self.results[nodeid]:
                selected[case].append(trial)
            path = self.config.rootpath / nodeid
            self.catalog[nodeid] = {"path": str(path), "trials": None, "selected": selected}

    def judge_fixtures(self, interrupted: bool) -> list[dict[str, Any]]:
        """One report per fixture of the catalog whose copy here is the one the trials ran."""
        reports = []
        self.judged = {}
        for nodeid in sorted(self.catalog):
            entry = self.catalog[nodeid]
            fixture = self.fixtures.get(nodeid)
            if fixture is None:
                fixture = self._reload(nodeid, entry)
            if fixture is None:
                continue
            other = sorted(h[:12] for h in self.worker_hashes[nodeid] - {fixture.sha256})
            if other:  # the trials were run against another fixture than the one judging them
                self.gate_failures.append(
                    f"{nodeid}: the workers ran another version of this fixture (sha256 "
                    f"{', '.join(other)}) than the controller's (sha256 {fixture.sha256[:12]})"
                )
                continue
            trial_count = entry["trials"] or self.settings.trials_for(
                fixture.trials, fixture.minimum_trials)
            asked = self.settings.trials
            if asked is not None and trial_count > asked:
                self.notes.append(f"{self.settings.source('trials')} {asked} raised to "
                                  f"{trial_count} for {nodeid}: its minimum number of trials")
            report = build_fixture_report(
                fixture, self.results.get(nodeid, {}), entry["selected"], run_id=self.run_id,
                trial_count=trial_count, interrupted=interrupted,
            )
            reports.append(report)
            self.judged[nodeid] = report
        return reports

    def _reload(self, nodeid: str, entry: Mapping[str, Any]) -> Fixture | None:
        """The controller's own copy of a fixture that workers collected; None when it does
        not load, with the reason among the gate's failures."""
        try:
            schemas = entry.get("expectation_schemas")
            if schemas is None:
                schemas = extra_schemas(gather_kinds(self.config.hook))
            # A worker on another host names a path of its own file system; node ids are
            # relative to the rootdir on every host, so read the controller's copy.
            local = self.config.rootpath / nodeid
            return load_fixture(local if local.is_file() else entry["path"], schemas,
                                accept_exemptions=self.settings.allow_exempt)
        except FixtureError as exc:
            self.gate_failures.append(exc.describe())
        except PluginError as exc:
            self.gate_failures.append(f"{nodeid}: {exc}")
        return None

    def record_durations(self) -> None:
        """The durations of the cases that ran, in pytest's cache, for the next run's
        ``--agentic-evals-durations last``; the cases that did not run keep theirs."""
        cache = getattr(self.config, "cache", None)
        if cache is None or not self.reports:
            return
        rows = {(fixture, case): ms for fixture, case, ms in
                cached_rows(cache.get(DURATIONS_CACHE_KEY, None))}
        for report in self.reports:
            rows.update({(fixture, case): ms for fixture, case, ms in report_durations(report)})
        # pytest's cache is UTF-8: a fixture in a folder named in other bytes is not kept.
        with contextlib.suppress(UnicodeError):
            cache.set(DURATIONS_CACHE_KEY, [[fixture, case, ms] for (fixture, case), ms
                                            in sorted(rows.items())])

    def gate_reasons(self) -> list[str]:
        reasons = []
        for report in self.reports:
            gate = fixture_gate(report)
            if gate.counts and not gate.passed:
                reasons.append(gate.reason)
        return reasons

    def only_optional_failures(self) -> bool:
        """Whether every failed test is a trial of an optional case of a fixture that passes
        the gate: such failures are shown, and leave the exit status 0. Decided before the
        report hook runs, so that nothing a hook writes can widen it."""
        return not self.stopped_early and bool(self.failed_tests) and all(
            failed is not None and excused_failure(self.judged.get(failed[0]), failed[1])
            for failed in self.failed_tests
        )

    def publish(self, regressions: list[dict[str, Any]]) -> dict[str, Any]:
        """The session's report, after the plugins' hook: redacted, written, summarised,
        returned. Each trial redacted its own result; this pass also covers what no trial
        wrote (a crashed trial's message, the fixture's own argv) and what a hook added."""
        redactor = self.redactor()
        report = session_report(self.reports)
        if regressions:
            report["regressions"] = regressions
        report = redactor.document(report)
        self.tampering += self.call_report_hooks(report)
        report = redactor.document(report)
        if self.outputs.report:
            self.outputs.report.write_json(report)
        text = markdown(report)
        if self.outputs.markdown:
            self.outputs.markdown.write_text(text)
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if step_summary:
            with open(step_summary, "a", encoding="utf-8") as stream:
                stream.write(text)
        self._record_junit_properties(report)
        return report

    def redactor(self) -> Redactor:
        """The secrets of the runner's environment and of the cases' own ``env``."""
        envs = [case.env for fixture in self.fixtures.values() for case in fixture.cases]
        return Redactor.of_environment(runner_environment(), *envs)

    def call_report_hooks(self, report: dict[str, Any]) -> list[str]:
        """Call each plugin's report hook in turn; a plugin that changed or removed anything the
        runner wrote (a verdict above all) has its changes undone, and is named in the result.

        Under xdist the controller collects nothing, so it loads the conftest.py files of each
        fixture's folder itself, as collection does in a serial run."""
        for nodeid in sorted(self.catalog):
            _load_conftests(self.config, (self.config.rootpath / nodeid).parent)
        manager = self.config.pluginmanager
        plugins: list[Any] = []
        for impl in reversed(getattr(self.config.hook, MODIFY_REPORT).get_hookimpls()):
            if impl.plugin not in plugins:
                plugins.append(impl.plugin)  # in the order pluggy calls them
        refused = []
        for plugin in plugins:
            others = [other for other in manager.get_plugins() if other is not plugin]
            before = copy.deepcopy(report)
            manager.subset_hook_caller(MODIFY_REPORT, others)(report=report, config=self.config)
            changed = rewritten(before, report)
            if changed:
                report.clear()
                report.update(before)
                shown = ", ".join(changed[:5]) + (", ..." if len(changed) > 5 else "")
                refused.append(f"{_plugin_name(manager, plugin)} changed {shown}")
        return refused

    def _record_junit_properties(self, report: dict[str, Any]) -> None:
        junit = _junit_xml(self.config)
        if junit is None:
            return
        junit.add_global_property("agentic_evals_readiness", report["readiness"])
        for fixture in fixture_reports(report):
            junit.add_global_property(
                f"agentic_evals_readiness:{fixture['fixture']}", fixture["readiness"]
            )

    def apply_exit_status(self, session: pytest.Session) -> None:
        """The gate's effect on the exit status: raised when the gate fails; lowered only from
        "tests failed" to 0 when every fixture passes the gate and every failed test is a
        trial of an optional case, so that an interrupted session, an ordinary failed test or
        a failed required trial never turns into a success."""
        if _stepwise_stop(session) and session.exitstatus == pytest.ExitCode.INTERRUPTED:
            # --sw stopped at a failed trial: a partial run that failed, not an interruption.
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.unknown_cases and session.exitstatus in (
            pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED
        ):
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        if (self.gate_failures and not self.settings.report_only
                and session.exitstatus == pytest.ExitCode.OK):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif (self.failures_excused and not self.gate_failures
                and session.exitstatus == pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = pytest.ExitCode.OK
        else:
            self.failures_excused = False  # nothing was excused: no note in the summary
        if self.tampering:
            session.exitstatus = REPORT_TAMPERED
        self.decided_status = session.exitstatus

    def reapply_exit_status(self) -> None:
        """The gate's exit status again, after other plugins had their say: a plugin may make a
        failing session fail otherwise, never pass."""
        session, decided = self.session, self.decided_status
        if session is None or decided is None or decided == pytest.ExitCode.OK:
            return
        if _may_read_as_success(session.exitstatus):
            session.exitstatus = decided
        elif self.tampering:
            session.exitstatus = REPORT_TAMPERED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not (self.session_report or self.gate_failures or self.notes or self.tampering
                or self.hidden):
            return
        write = terminalreporter.write_line
        terminalreporter.section("agentic-evals")
        if self.hidden:
            write(f"agentic-evals: {len(self.hidden)} fixture(s) not collected: pytest's "
                  "norecursedirs skips their folder (name them, or change norecursedirs):",
                  yellow=True)
            for path in sorted(self.hidden):
                write(f"  {path}", yellow=True)
        if self.session_report:
            for line in terminal_lines(self.session_report):
                write(escape_line(line.text), **({line.colour: True} if line.colour else {}))
        for note in self.notes:
            write(f"agentic-evals: {note}", yellow=True)
        if self.settings.report and not self.settings.report_unannounced:
            write(f"report: {self.settings.report}")
        if self.settings.markdown:
            write(f"markdown summary: {self.settings.markdown}")
        if self.failures_excused:
            write(f"agentic-evals: {len(self.failed_tests)} failed trial(s) of optional case(s) "
                  "shown above; optional cases do not fail the session", yellow=True)
        if self.gate_failures:
            verb = "would fail (report only)" if self.settings.report_only else "failed"
            write(f"agentic-evals: session {verb}, not READY:", red=True, bold=True)
            for reason in self.gate_failures:
                write(f"  {escape_line(reason)}", red=True)
        if self.tampering:
            write("agentic-evals: session failed: a hook may add to the report, never change what "
                  "the runner wrote (its changes were undone):", red=True, bold=True)
            for refused in self.tampering:
                write(f"  {escape_line(refused)}", red=True)


class XdistHooks:
    """The controller's side of xdist: the run id out to each worker, the catalog back."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> Iterator[None]:
        # xdist starts the workers here: they inherit the signals blocked, and unblock them
        # once they handle them (termination.py).
        with signals_blocked():
            return (yield)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[RUN_ID_KEY] = self.controller.run_id
        node.workerinput[RESULT_KEY] = self.controller.result_key.hex()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: list[Any]) -> None:
        """Local workers start as safely as this process did: when it runs without the
        current directory on ``sys.path`` (``python -P``, as ``agentic-evals run`` starts
        pytest), so do they. xdist starts them with ``python -c``, which puts the current
        directory first on ``sys.path`` until xdist replaces it, after the worker has imported
        pytest: a folder named like a module (``json``) there would be imported instead."""
        if not sys.flags.safe_path:
            return
        for spec in specs:
            if spec.popen and not spec.python and not spec.via:
                spec.python = f"{shlex.quote(sys.executable)} -P"

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """With durations, under ``--dist load`` (what ``-n`` means), the trials are handed
        out longest first; a scheduling the user chose is left alone."""
        if self.controller.settings.durations and config.getvalue("dist") == "load":
            return LongestFirstScheduling(config, log)
        return None

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        for nodeid in ids:
            key = parse_trial_nodeid(nodeid)
            if key is not None:
                self.controller.collected_fixtures.add(key[0])

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        catalog = getattr(node, "workeroutput", {}).get(CATALOG_KEY)
        if catalog:
            self.controller.fold_catalog(catalog)
        self.stop_scheduling()

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodeready(self, node: Any) -> None:
        self.stop_scheduling()

    def stop_scheduling(self) -> None:
        """After SIGTERM or SIGHUP, xdist hands out no more trials, and a worker it starts in
        place of one that died is shut down once ready: a worker the signal killed while it
        started would otherwise be replaced by one that runs the rest. Called at the signal and
        again from xdist's loop (xdist clears its flag when the loop starts)."""
        termination = self.controller.termination
        if termination is None or termination.received is None:
            return
        dsession = self.controller.config.pluginmanager.getplugin("dsession")
        if dsession is not None and not getattr(dsession, "shouldstop", False):
            dsession.shouldstop = f"interrupted ({signal.Signals(termination.received).name})"


def _stepwise_stop(session: pytest.Session) -> bool:
    """Whether --sw (pytest's stepwise) stopped the session at a failed test."""
    return bool(session.config.getoption("stepwise", False) and session.shouldstop)


def _plugin_name(manager: pytest.PytestPluginManager, plugin: Any) -> str:
    """A plugin's name as a person finds it: a conftest.py's path, a module's file."""
    name = manager.get_name(plugin) or repr(plugin)
    path = getattr(plugin, "__file__", None)
    return name if not path or name == path else f"{name} ({path})"


def _load_conftests(config: pytest.Config, folder: Any) -> None:
    """The conftest.py files of ``folder`` and above, loaded as collection loads them (none
    under --noconftest). pytest offers no public call for this; its collector uses this one."""
    load = getattr(config.pluginmanager, "_loadconftestmodules", None)
    if load is None or not folder.is_dir():
        return
    kwargs: dict[str, Any] = {}
    if "consider_namespace_packages" in inspect.signature(load).parameters:
        kwargs["consider_namespace_packages"] = config.getini("consider_namespace_packages")
    load(folder, config.getoption("importmode"), rootpath=config.rootpath, **kwargs)


def _incomplete_trial(report: pytest.TestReport, trial: int) -> TrialResult:
    """The result of a trial that failed outside the runner: a crashed worker, or an error
    pytest recorded (pytest-timeout's, a plugin's check that raised)."""
    crashed = str(report.when) == "???"  # how xdist marks a crashed worker's trial
    problem = ("the worker running this trial crashed" if crashed
               else f"trial did not complete ({report.when}): " + _crash_message(report))
    return infrastructure_failure(trial, problem)


def _crash_message(report: pytest.TestReport) -> str:
    """What went wrong, in one line: the exception pytest recorded (e.g. pytest-timeout's
    "Failed: Timeout >5.0s"), else the last line of the failure text."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = str(getattr(crash, "message", "") or "")
    if message:
        return message.splitlines()[0]
    lines = [line for line in str(report.longrepr).strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no detail"


def _junit_xml(config: pytest.Config) -> Any:
    """pytest's JUnit XML writer, when --junitxml is on; pytest offers test-suite properties
    only to tests (the record_testsuite_property fixture), so the plugin reaches its writer."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # a pytest that moved it: the properties are an extra, not a verdict
        return None
    return config.stash.get(xml_key, None)


def lists_only(config: pytest.Config) -> bool:
    """Whether pytest only lists what it collected (``--collect-only``, ``--fixtures``,
    ``--fixtures-per-test``): no trial runs, so there is no evidence to judge and nothing to
    gate (pytest's status for a listing is its own: a verdict printed there would not be the
    session's)."""
    option = config.option
    return bool(option.collectonly or getattr(option, "showfixtures", False)
                or getattr(option, "show_fixtures_per_test", False))


def _may_read_as_success(status: object) -> bool:
    """Whether an exit status may end a session as a success: 0 or "no tests", and also what
    the shell reads as 0 (256, -256: only the low byte reaches it) or what sys.exit ends with
    0 (None, any value that is not a whole number)."""
    if not isinstance(status, int):
        return True
    return status % 256 in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
