"""The pytest layer: collect fixtures as test files, one item per (case, trial), and gate.

Under xdist the controller never collects. Trial results travel on test reports as plain
dicts; each worker sends the catalog of what it collected and selected through
``config.workeroutput``; the controller folds both and computes every verdict, exactly as a
serial run does.
"""

from __future__ import annotations

import argparse
import fcntl
import fnmatch
import os
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from pytest_agentic_evals.evidence.qualification import qualify
from pytest_agentic_evals.execution.environment import RunSettings
from pytest_agentic_evals.execution.rundirs import IN_USE_MARKER, new_run_dir, runs_root
from pytest_agentic_evals.execution.trial import TrialResult, run_trial
from pytest_agentic_evals.execution.trialdirs import TrialDirs
from pytest_agentic_evals.expectations.builtin import ExpectationKind, builtin_kinds, extra_schemas
from pytest_agentic_evals.jsonio import write_json_atomically, write_text_atomically
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.model import BLOCKED, FAIL, Case, Fixture
from pytest_agentic_evals.pytest_plugin import hookspecs
from pytest_agentic_evals.pytest_plugin.regressions import RegressionPlugin, regression_results
from pytest_agentic_evals.regressions.registry import is_registry
from pytest_agentic_evals.report import build_fixture_report, session_report
from pytest_agentic_evals.summary import fixture_reports, markdown, terminal_lines
from pytest_agentic_evals.verdicts import fixture_gate

STATE_KEY = pytest.StashKey["AgenticEvalsSession"]()
CATALOG_KEY = "agentic_evals_catalog"
RUN_ID_KEY = "agentic_evals_run_id"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentic-evals", "agentic-evals: evaluate agent skills")
    group.addoption("--agentic-evals", action="store_true", default=None,
                    help="collect agentic_eval*.json fixtures and run their cases as trials")
    group.addoption("--agentic-evals-report", metavar="PATH", default=None,
                    help="write the JSON report here (atomically)")
    group.addoption("--agentic-evals-report-unannounced", action="store_true", default=False,
                    help=argparse.SUPPRESS)  # the CLI prints the report itself
    group.addoption("--agentic-evals-report-only", action="store_true", default=None,
                    help="report readiness without failing the session when not READY")
    group.addoption("--agentic-evals-trials", metavar="N", default=None,
                    help="trials per case (never below a fixture's minimum)")
    group.addoption("--agentic-evals-timeout", metavar="SECONDS", default=None,
                    help="default per-trial timeout (30 s)")
    group.addoption("--agentic-evals-md", metavar="PATH", default=None,
                    help="write a Markdown summary here (also appended to "
                         "$GITHUB_STEP_SUMMARY when set)")
    group.addoption("--agentic-evals-case", metavar="NAME", action="append", default=[],
                    help="run only this case (repeatable); the run is then partial")
    group.addoption("--agentic-evals-keep-workspaces", action="store_true", default=False,
                    help="keep the private workspaces of passing trials too")
    parser.addini("agentic_evals", type="bool", default=False,
                  help="collect agentic-evals fixtures (like --agentic-evals)")
    parser.addini("agentic_evals_files", type="args", default=["agentic_eval*.json"],
                  help="glob patterns of fixture file names")
    parser.addini("agentic_evals_report", default="", help="path of the JSON report")
    parser.addini("agentic_evals_md", default="", help="path of the Markdown summary")
    parser.addini("agentic_evals_report_only", type="bool", default=False,
                  help="report without gating the exit status")
    parser.addini("agentic_evals_trials", default="", help="trials per case")
    parser.addini("agentic_evals_timeout", default="", help="default per-trial timeout (s)")


def _setting(config: pytest.Config, name: str) -> tuple[Any, str]:
    """A setting from its option, else its ini value; with where it came from, for errors."""
    value = config.getoption(name)
    if value not in (None, [], ""):
        return value, "--" + name.replace("_", "-")
    return config.getini(name), f"ini {name}"


def _number(config: pytest.Config, name: str, kind: type, minimum: float) -> Any:
    raw, source = _setting(config, name)
    if raw in (None, ""):
        return None
    try:
        value = kind(raw)
    except ValueError:
        raise pytest.UsageError(f"{source}: {raw!r} is not a valid {kind.__name__}") from None
    if value < minimum:
        raise pytest.UsageError(f"{source}: {raw!r} must be at least {minimum:g}")
    return value


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "regression: verification of a retained regression (agentic-evals)"
    )
    enabled, _ = _setting(config, "agentic_evals")
    if not enabled:
        return
    if getattr(config.option, "dist", None) == "each":
        # Every worker would run every trial, and a trial is one piece of evidence, not n.
        raise pytest.UsageError(
            "--agentic-evals: --dist each runs every trial on every worker; use -n N or "
            "--dist load (set the number of trials with --agentic-evals-trials)"
        )
    state = AgenticEvalsSession(config)
    config.stash[STATE_KEY] = state
    config.pluginmanager.register(state, "agentic-evals-session")
    RegressionPlugin.install(config, state)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistController(state), "agentic-evals-xdist")


class XdistController:
    """Hooks that only exist when pytest-xdist is installed."""

    def __init__(self, state: AgenticEvalsSession) -> None:
        self.state = state

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[RUN_ID_KEY] = self.state.run_id

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        catalog = getattr(node, "workeroutput", {}).get(CATALOG_KEY)
        if catalog:
            self.state.merge_catalog(catalog)


class TrialFailed(Exception):
    """A trial that did not meet its case's expectations."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class AgenticEvalsSession:
    """Per-session state: settings, the catalog of selected trials, and results."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.is_worker = hasattr(config, "workerinput")
        self.run_id: str = (
            config.workerinput[RUN_ID_KEY] if self.is_worker  # type: ignore[attr-defined]
            else uuid.uuid4().hex[:12]
        )
        self.run_dir_in_use: IO[str] | None = None
        if self.is_worker:
            run_dir = runs_root() / f"run-{self.run_id}"
            run_dir.mkdir(parents=True, exist_ok=True)
            # On a host of its own (--tx ssh=..., socket=...) no controller marks this run in
            # use: the worker does, or a run starting there meanwhile could prune it.
            self.run_dir_in_use = open(run_dir / IN_USE_MARKER, "a")  # noqa: SIM115
            fcntl.flock(self.run_dir_in_use, fcntl.LOCK_SH)
        else:
            run_dir, self.run_dir_in_use = new_run_dir(self.run_id)
        timeout = _number(config, "agentic_evals_timeout", float, 0.001)
        self.settings = RunSettings(
            run_id=self.run_id,
            run_dir=run_dir,
            keep_passed_workspaces=bool(config.getoption("agentic_evals_keep_workspaces")),
            trial_dirs=TrialDirs(run_dir),
            **({"default_timeout": timeout} if timeout else {}),
        )
        self.trials_override: int | None = _number(config, "agentic_evals_trials", int, 1)
        report_path, _ = _setting(config, "agentic_evals_report")
        self.report_path = str(report_path) if report_path else None
        self.report_only = bool(_setting(config, "agentic_evals_report_only")[0])
        self.cases_wanted: list[str] = list(config.getoption("agentic_evals_case"))
        self.patterns: list[str] = list(config.getini("agentic_evals_files"))
        # nodeid of a fixture file -> the loaded fixture (collecting processes only)
        self.fixtures: dict[str, Fixture] = {}
        # nodeid of a fixture file -> schemas of the plugin expectation kinds it was loaded with
        self.expectation_schemas: dict[str, dict[str, Any]] = {}
        # nodeid of a fixture file -> {"path", "trials", "selected": {case: [trials]}}
        self.catalog: dict[str, dict[str, Any]] = {}
        self.unknown_cases: set[str] = set()
        # nodeid of a fixture file -> sha256 of the copies the workers collected
        self.worker_hashes: dict[str, set[str]] = defaultdict(set)
        self.results: dict[str, dict[tuple[str, int], TrialResult]] = defaultdict(dict)
        self.reports: list[dict[str, Any]] = []
        self.session_report: dict[str, Any] | None = None
        markdown_path, _ = _setting(config, "agentic_evals_md")
        self.markdown_path = str(markdown_path) if markdown_path else None
        self.gate_failures: list[str] = []

    # -- expectation kinds -------------------------------------------------------------
    @staticmethod
    def kinds_from(hook: Any) -> dict[str, ExpectationKind]:
        """Built-in kinds plus those the plugins and conftest files visible to ``hook`` add."""
        kinds = builtin_kinds()
        for contributed in hook.pytest_agentic_evals_expectation_kinds():
            for kind in contributed or ():
                if kind.key in kinds:
                    raise pytest.UsageError(
                        f"expectation kind {kind.key!r} is defined twice "
                        "(by a plugin or a conftest.py)"
                    )
                kinds[kind.key] = kind
        return kinds

    def trials_for(self, fixture: Fixture) -> int:
        if self.trials_override is None:
            return fixture.trials
        return max(self.trials_override, fixture.minimum_trials)

    # -- collection --------------------------------------------------------------------
    def wants(self, file_path: Path, parent: pytest.Collector) -> bool:
        if file_path.suffix != ".json" or is_registry(file_path):
            return False  # a regressions.json is collected by regression_items, never a fixture
        if parent.session.isinitpath(file_path):
            return True
        return any(fnmatch.fnmatch(file_path.name, pattern) for pattern in self.patterns)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if not self.cases_wanted:
            return
        known = {item.case.name for item in items if isinstance(item, TrialItem)}
        self.unknown_cases = set(self.cases_wanted) - known
        keep: list[pytest.Item] = []
        drop: list[pytest.Item] = []
        for item in items:
            unwanted = isinstance(item, TrialItem) and item.case.name not in self.cases_wanted
            (drop if unwanted else keep).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for nodeid, fixture in self.fixtures.items():
            self.catalog[nodeid] = {
                "path": str(fixture.path), "trials": self.trials_for(fixture), "selected": {},
                # The controller reloads the fixture without the conftest files of its folder.
                "expectation_schemas": self.expectation_schemas.get(nodeid, {}),
                "sha256": fixture.sha256,
            }
        for item in session.items:
            if isinstance(item, TrialItem):
                selected = self.catalog[item.parent.nodeid]["selected"]  # type: ignore[union-attr]
                selected.setdefault(item.case.name, []).append(item.trial)
        if self.is_worker:
            self.config.workeroutput[CATALOG_KEY] = {  # type: ignore[attr-defined]
                "fixtures": self.catalog, "unknown_cases": sorted(self.unknown_cases),
            }

    def merge_catalog(self, catalog: dict[str, Any]) -> None:
        for nodeid, entry in catalog["fixtures"].items():
            self.catalog.setdefault(nodeid, entry)
            if entry.get("sha256"):
                self.worker_hashes[nodeid].add(entry["sha256"])
        self.unknown_cases |= set(catalog["unknown_cases"])

    # -- results -----------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Iterator[None]:
        report = yield
        result = getattr(item, "agentic_result", None)
        if call.when == "call" and result is not None:
            report.agentic_evals = result  # type: ignore[attr-defined]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.is_worker:
            return
        key = _parse_trial_nodeid(report.nodeid)
        if key is None:
            return
        fixture_nodeid, case, trial = key
        result = getattr(report, "agentic_evals", None)
        if result is not None:
            self.results[fixture_nodeid][(case, trial)] = result
        elif report.failed and (case, trial) not in self.results[fixture_nodeid]:
            # A crashed worker's report carries none of our data: a failed trial, not nothing.
            crashed = str(report.when) == "???"  # how xdist marks a crashed worker's trial
            problem = ("the worker running this trial crashed" if crashed
                       else f"trial did not complete ({report.when}): "
                       + _crash_message(report))
            self.results[fixture_nodeid][(case, trial)] = {
                "trial": trial, "outcome": FAIL, "exit_code": None, "duration_ms": 0,
                "timed_out": False, "left_behind_processes": [], "problems": [problem],
                "infrastructure": True,
            }

    # -- verdicts ----------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Iterator[None]:
        # --collect-only runs nothing, so there is no evidence to judge and nothing to gate.
        if not self.is_worker and not self.config.option.collectonly:
            self._finish(session, exitstatus)
        return (yield)

    def _finish(self, session: pytest.Session, exitstatus: int) -> None:
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        for nodeid in sorted(set(self.results) - set(self.catalog)):
            # Every worker that collected this fixture died before sending its catalog.
            path = self.config.rootpath / nodeid
            selected: dict[str, list[int]] = defaultdict(list)
            for case, trial in self.results[nodeid]:
                selected[case].append(trial)
            self.catalog[nodeid] = {"path": str(path), "trials": None, "selected": selected}
        for nodeid in sorted(self.catalog):
            entry = self.catalog[nodeid]
            fixture = self.fixtures.get(nodeid)
            if fixture is None:
                try:
                    schemas = entry.get("expectation_schemas")
                    if schemas is None:
                        schemas = extra_schemas(self.kinds_from(self.config.hook))
                    # A worker on another host names a path of its own file system; node ids
                    # are relative to the rootdir on every host, so read the controller's copy.
                    local = self.config.rootpath / nodeid
                    fixture = load_fixture(local if local.is_file() else entry["path"], schemas)
                except FixtureError as exc:
                    self.gate_failures.append(exc.describe())
                    continue
            other = sorted(h[:12] for h in self.worker_hashes.get(nodeid, set()) - {fixture.sha256})
            if other:  # the trials were run against another fixture than the one judging them
                self.gate_failures.append(
                    f"{nodeid}: the workers ran another version of this fixture (sha256 "
                    f"{', '.join(other)}) than the controller's (sha256 {fixture.sha256[:12]})"
                )
                continue
            report = build_fixture_report(
                fixture, self.results.get(nodeid, {}), entry["selected"],
                run_id=self.run_id, trial_count=entry["trials"] or self.trials_for(fixture),
                interrupted=interrupted,
            )
            self.reports.append(report)
        if self.unknown_cases:
            self.gate_failures.append("unknown case(s): " + ", ".join(sorted(self.unknown_cases)))
            if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
        # The gate is decided before plugins see the report: a hook may annotate what is
        # written, never turn a failing session into a passing one.
        for report in self.reports:
            gate = fixture_gate(report)
            if gate.counts and not gate.passed:
                self.gate_failures.append(gate.reason)
        if self.reports or regression_results(self.config):
            full = session_report(self.reports)
            self.config.hook.pytest_agentic_evals_modify_report(report=full, config=self.config)
            self.session_report = full
            if self.report_path:
                write_json_atomically(self.report_path, full)
            self._publish_summaries(full)
        if self.gate_failures and not self.report_only and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _publish_summaries(self, report: dict[str, Any]) -> None:
        """The Markdown summary for CI, and the readiness as JUnit test-suite properties."""
        text = markdown(report)
        if self.markdown_path:
            write_text_atomically(self.markdown_path, text)
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if step_summary:
            with open(step_summary, "a", encoding="utf-8") as stream:
                stream.write(text)
        junit = _junit_xml(self.config)
        if junit is not None:
            junit.add_global_property("agentic_evals_readiness", report["readiness"])
            for fixture in fixture_reports(report):
                junit.add_global_property(
                    f"agentic_evals_readiness:{fixture['fixture']}", fixture["readiness"]
                )

    def pytest_unconfigure(self) -> None:
        if self.settings.trial_dirs is not None:
            self.settings.trial_dirs.close()  # nothing of a passing trial outlives the session
        if self.run_dir_in_use is not None:
            self.run_dir_in_use.close()  # the run is over: its directory may now be pruned

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or not (self.session_report or self.gate_failures):
            return
        write = terminalreporter.write_line
        terminalreporter.section("agentic-evals")
        if self.session_report:
            for line in terminal_lines(self.session_report):
                write(line.text, **({line.colour: True} if line.colour else {}))
        if self.report_path and not self.config.getoption("agentic_evals_report_unannounced"):
            write(f"report: {self.report_path}")
        if self.markdown_path:
            write(f"markdown summary: {self.markdown_path}")
        if self.gate_failures:
            verb = "would fail (report only)" if self.report_only else "failed"
            write(f"agentic-evals: session {verb}, not READY:", red=True, bold=True)
            for reason in self.gate_failures:
                write(f"  {reason}", red=True)


def _junit_xml(config: pytest.Config) -> Any:
    """pytest's JUnit XML writer, when --junitxml is on; pytest offers test-suite properties
    only to tests (the record_testsuite_property fixture), so the plugin reaches its writer."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # a pytest that moved it: the properties are an extra, not a verdict
        return None
    return config.stash.get(xml_key, None)


def _parse_trial_nodeid(nodeid: str) -> tuple[str, str, int] | None:
    path, sep, name = nodeid.rpartition("::")
    if not sep or not path.endswith(".json") or not name.endswith("]"):
        return None
    case, sep, trial = name[:-1].rpartition("[trial-")
    if not sep or not trial.isdigit():
        return None
    return path, case, int(trial)


def _crash_message(report: pytest.TestReport) -> str:
    """What went wrong, in one line: the exception pytest recorded (e.g. pytest-timeout's
    "Failed: Timeout >5.0s"), else the last line of the failure text."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = str(getattr(crash, "message", "") or "")
    if message:
        return message.splitlines()[0]
    lines = [line for line in str(report.longrepr).strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no detail"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> FixtureFile | None:
    state = parent.config.stash.get(STATE_KEY, None)
    if state is None or not state.wants(file_path, parent):
        return None
    return FixtureFile.from_parent(parent, path=file_path)


class FixtureFile(pytest.File):
    """An agentic-evals fixture, collected like a test module."""

    def collect(self) -> Iterator[TrialItem]:
        state = self.config.stash[STATE_KEY]
        # ihook sees the conftest files of this fixture's folder and above, as for any test.
        kinds = state.kinds_from(self.ihook)
        schemas = extra_schemas(kinds)
        try:
            fixture = load_fixture(self.path, schemas)
        except FixtureError as exc:
            raise self.CollectError(exc.describe()) from None
        state.fixtures[self.nodeid] = fixture
        state.expectation_schemas[self.nodeid] = schemas
        trials = state.trials_for(fixture)
        for case in fixture.cases:
            for tag in case.tags:
                self.config.addinivalue_line("markers", f"{tag}: tag of an agentic-evals case")
            for trial in range(1, trials + 1):
                yield TrialItem.from_parent(
                    self, name=f"{case.name}[trial-{trial}]", fixture=fixture, case=case,
                    trial=trial, trials=trials, kinds=kinds,
                )


class TrialItem(pytest.Item):
    """One trial of one case."""

    def __init__(
        self,
        *,
        fixture: Fixture,
        case: Case,
        trial: int,
        trials: int,
        kinds: dict[str, ExpectationKind],
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.kinds = kinds
        self.fixture = fixture
        self.case = case
        self.trial = trial
        self.trials = trials
        self.agentic_result: TrialResult | None = None
        self.extra_keyword_matches.update(case.tags)
        for tag in case.tags:
            self.add_marker(tag)

    def runtest(self) -> None:
        state = self.config.stash[STATE_KEY]
        result = run_trial(self.fixture, self.case, self.trial, state.settings, self.kinds)
        self.agentic_result = result
        self.user_properties += [
            ("case", self.case.name),
            ("trial", str(self.trial)),
            ("outcome", result["outcome"]),
            # The class the evidence counts as, after live qualification, not the one declared.
            ("evidence_class", qualify(self.case).effective),
            ("duration_ms", str(result["duration_ms"])),
        ]
        if result["outcome"] == FAIL:
            raise TrialFailed(self._failure_text(result))
        if result["outcome"] == BLOCKED:
            pytest.skip(result["problems"][0])

    def _failure_text(self, result: TrialResult) -> str:
        lines = [f"case {self.case.name!r}, trial {self.trial} of {self.trials}: FAIL"]
        if result.get("argv"):
            lines.append(f"command: {result['argv']}")
        if result.get("workspace"):
            lines.append(f"cwd: {result['workspace']['cwd']}")
        lines += [f"  - {problem}" for problem in result["problems"]]
        for stream in ("stdout", "stderr"):
            captured = result.get(stream)
            if not captured or not captured["bytes"]:
                continue
            text = captured["head"] + (
                "\n[...]\n" if captured["truncated"] else ""
            ) + captured["tail"]
            lines.append(f"{stream} ({captured['bytes']} bytes):")
            lines += ["  | " + line for line in text.rstrip("\n").splitlines()[-20:]]
        if result.get("output_dir"):
            lines.append(f"full output: {result['output_dir']}")
        return "\n".join(lines)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, TrialFailed):
            return excinfo.value.text
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.case.name}[trial-{self.trial}]: {self.case.command}"

