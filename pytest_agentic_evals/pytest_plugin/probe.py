"""``pytest --agentic-evals --agentic-evals-probe``: the vacuity probe as a pytest session.

Instead of trial items, each case of a collected fixture is one item,
``<fixture>::<case>[probe]``, that runs the case against every stand-in of a broken skill
(the core of ``agentic-evals probe``).  The item fails when the case is required and its
oracle survives ``noop`` or ``crash``, so the session's exit status is pytest's own; ``-k``
selects cases as usual.  At the end the results are kept beside each fixture and the report
(``agentic_evals.probe.v1``) goes to ``--agentic-evals-report``; ``--agentic-evals-md`` gets
the Markdown summary.  The probe runs in one process: with ``-n`` it is refused.
"""

from __future__ import annotations

import datetime
import fnmatch
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.execution.environment import DEFAULT_TIMEOUT_SECONDS, RunSettings
from pytest_agentic_evals.execution.rundirs import RunDir
from pytest_agentic_evals.expectations.builtin import ExpectationKind, extra_schemas
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.model import Case, Fixture
from pytest_agentic_evals.probes import results, store
from pytest_agentic_evals.probes.runner import CaseProbe, probe_fixture
from pytest_agentic_evals.pytest_plugin.kinds import PluginError, gather_kinds
from pytest_agentic_evals.pytest_plugin.outputs import Outputs
from pytest_agentic_evals.pytest_plugin.settings import Settings
from pytest_agentic_evals.pytest_plugin.worker import sandbox_settings
from pytest_agentic_evals.regressions.registry import is_registry

PLUGIN_NAME = "agentic-evals-probe"


class ProbeFailed(Exception):
    """A required case's oracle survived noop or crash."""


class Probing:
    """Collects fixtures as probe items, and writes what they found at the end."""

    def __init__(self, config: pytest.Config, settings: Settings, outputs: Outputs) -> None:
        self.config = config
        self.settings = settings
        self.outputs = outputs
        run_id = uuid.uuid4().hex[:12]
        run = RunDir(run_id)
        run_dir = run.open()
        config.add_cleanup(run.close)
        self.run_id = run_id
        self.run_settings = RunSettings(
            run_id=run_id, run_dir=run_dir, sandbox=sandbox_settings(settings),
            default_timeout=settings.timeout or DEFAULT_TIMEOUT_SECONDS)
        self.found: dict[Path, tuple[Fixture, list[CaseProbe]]] = {}
        self.document: dict[str, Any] | None = None
        self.not_kept: list[str] = []

    def kinds(self, hook: Any) -> dict[str, ExpectationKind]:
        try:
            return gather_kinds(hook)
        except PluginError as exc:
            raise pytest.UsageError(str(exc)) from None

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> Any:
        if file_path.suffix != ".json" or is_registry(file_path) or (
                file_path.name == store.FILENAME):
            return None
        if parent.session.isinitpath(file_path) or any(
                fnmatch.fnmatch(file_path.name, p) for p in self.settings.files):
            return ProbeFile.from_parent(parent, path=file_path, probing=self)
        return None

    def probed(self, fixture: Fixture, probe: CaseProbe) -> None:
        self.found.setdefault(fixture.path, (fixture, []))[1].append(probe)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.found:
            return
        now = datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()
        entries = []
        for fixture, probes in self.found.values():
            try:
                stored_at: str | None = str(store.record(fixture, results.store_records(probes),
                                                         now))
            except OSError as exc:
                stored_at = None
                self.not_kept.append(store.not_kept(fixture, exc))
            entries.append(results.fixture_entry(fixture, probes, stored_at))
        self.document = results.report(entries, self.run_id, now, self.settings.sandbox)
        if self.outputs.report:
            self.outputs.report.write_json(self.document)
        if self.outputs.markdown:
            self.outputs.markdown.write_text(results.markdown(self.document))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.document is None:
            return
        terminalreporter.section("agentic-evals probe")
        for line in results.terminal_lines(self.document):
            terminalreporter.write_line(line)
        for line in self.not_kept:
            terminalreporter.write_line(line, red=True)


class ProbeFile(pytest.File):
    def __init__(self, *, probing: Probing, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.probing = probing

    def collect(self) -> Iterator[ProbeItem]:
        kinds = self.probing.kinds(self.ihook)
        try:
            fixture = load_fixture(self.path, extra_schemas(kinds),
                                   accept_exemptions=self.probing.settings.allow_exempt)
        except FixtureError as exc:
            raise self.CollectError(exc.describe()) from None
        wanted = self.probing.settings.cases
        for case in fixture.cases:
            if not wanted or case.name in wanted:
                yield ProbeItem.from_parent(self, name=f"{case.name}[probe]", fixture=fixture,
                                            case=case, kinds=kinds)


class ProbeItem(pytest.Item):
    def __init__(self, *, fixture: Fixture, case: Case, kinds: dict[str, ExpectationKind],
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fixture = fixture
        self.case = case
        self.kinds = kinds

    @property
    def probing(self) -> Probing:
        assert isinstance(self.parent, ProbeFile)
        return self.parent.probing

    def runtest(self) -> None:
        probe = probe_fixture(self.fixture, self.probing.run_settings, self.kinds, [self.case])[0]
        self.probing.probed(self.fixture, probe)
        failures = results.gate_failures(probe)
        if failures:
            raise ProbeFailed("\n".join(failures))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ProbeFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.case.name} [probe]"
