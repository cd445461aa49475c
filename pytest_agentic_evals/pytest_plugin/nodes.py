"""The collection tree: a fixture file is collected like a test module, one item per (case, trial).

A failed trial raises ``TrialFailed``, which carries the parts of the failure (the case, the
trial, the command, the problems, excerpts of the output); ``TrialItem.repr_failure`` renders
them for a person, as pytest's doctest items render their failures. The rendering is one of
pytest's own exception representations, so that its crash line (the short summary, JUnit's
``message``, ``--tb=line``) is the trial's first problem, also when it crosses from an xdist
worker. Anything else that interrupts a trial (pytest-timeout, an expectation kind that raised)
is shown from the trial's own frames, without pytest's and pluggy's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest
from _pytest._code.code import (
    ReprEntryNative,
    ReprExceptionInfo,
    ReprFileLocation,
    ReprTraceback,
    Traceback,
    TracebackEntry,
    filter_traceback,
)

from pytest_agentic_evals.evidence.qualification import qualify
from pytest_agentic_evals.execution.environment import RunSettings
from pytest_agentic_evals.execution.stops import CaseStops, stopped_trial
from pytest_agentic_evals.execution.trial import run_trial
from pytest_agentic_evals.expectations.builtin import ExpectationKind, extra_schemas
from pytest_agentic_evals.jsonio import read_input
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.model import BLOCKED, FAIL, INFRA_BLOCKED, Case, Fixture, TrialResult
from pytest_agentic_evals.probes import store as probe_store
from pytest_agentic_evals.probes.control import controlled, needs_control, run_control
from pytest_agentic_evals.redaction import escape_controls
from pytest_agentic_evals.seals import mac

EXCERPT_LINES = 20  # of each stream, in a failure's text


def trial_name(case: str, trial: int) -> str:
    return f"{case}[trial-{trial}]"


def parse_trial_nodeid(nodeid: str) -> tuple[str, str, int] | None:
    """(fixture node id, case, trial) of a trial item's node id, or None for any other item."""
    path, sep, name = nodeid.rpartition("::")
    if not sep or not path.endswith(".json") or not name.endswith("]"):
        return None
    case, sep, trial = name[:-1].rpartition("[trial-")
    if not sep or not trial.isdigit():
        return None
    return path, case, int(trial)


def _worth_showing(entry: TracebackEntry) -> bool:
    return filter_traceback(entry) and Path(str(entry.path)).name != "pytest_timeout.py"


class Collecting(Protocol):
    """What fixture files and trial items need of the process that collects and runs them."""

    run_settings: RunSettings
    stops: CaseStops | None  # None: every trial runs, whatever the case's earlier trials did
    result_key: bytes  # seals each trial's result as it ends (see worker.RESULT_SEAL_ATTRIBUTE)
    accept_exemptions: bool  # the session grants scaffold and runner_selftest their exemption

    def kinds(self, hook: Any) -> dict[str, ExpectationKind]: ...

    def trials_for(self, fixture: Fixture) -> int: ...

    def loaded(self, nodeid: str, fixture: Fixture, schemas: dict[str, Any]) -> None: ...


class FixtureFile(pytest.File):
    """An agentic-evals fixture, collected like a test module."""

    def __init__(self, *, collecting: Collecting, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.collecting = collecting
        self._classes: dict[str, str] = {}

    def evidence_class(self, fixture: Fixture, case: Case) -> str:
        """The class a case's evidence counts as, after live qualification: judged once per
        case and process (the probe results are read once), not once per trial."""
        if not self._classes:
            stored = probe_store.load(fixture)
            self._classes = {c.name: qualify(c, stored[c.name]).effective
                             for c in fixture.cases}
        return self._classes[case.name]

    def collect(self) -> Iterator[pytest.Item]:
        # ihook sees the conftest files of this fixture's folder and above, as for any test.
        kinds = self.collecting.kinds(self.ihook)
        schemas = extra_schemas(kinds)
        try:
            fixture = load_fixture(self.path, schemas,
                                   accept_exemptions=self.collecting.accept_exemptions)
        except FixtureError as exc:
            yield rejected(self, exc.describe())
            return
        self.collecting.loaded(self.nodeid, fixture, schemas)
        trials = self.collecting.trials_for(fixture)
        for case in fixture.cases:
            for tag in case.tags:
                self.config.addinivalue_line("markers", f"{tag}: tag of an agentic-evals case")
            for trial in range(1, trials + 1):
                name = trial_name(case.name, trial)
                # The node id given as text, which every pytest of the supported range reads
                # as pytest writes it in its cache (pytest 9.2 parses "[trial-N]" as the
                # parameters of the id): --lf, --ff, --sw and node ids on the command line
                # find the trial again.
                yield TrialItem.from_parent(
                    self, name=name, nodeid=f"{self.nodeid}::{name}", fixture=fixture, case=case,
                    trial=trial, trials=trials, kinds=kinds,
                    run_settings=self.collecting.run_settings, stops=self.collecting.stops,
                    result_key=self.collecting.result_key,
                )


REJECTED = "rejected"  # the one item of a file that does not load


class FileRejected(Exception):
    """An input file of the session that does not load."""


class RejectedFile(pytest.Item):
    """The one item of a fixture or registry that does not load: a failed test that names the
    file and its problems. It is not a collection error, which would interrupt the session:
    the other fixtures still run and are judged, and this one fails on its own account."""

    def __init__(self, *, text: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.text = text

    def runtest(self) -> None:
        raise FileRejected(self.text)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, FileRejected):
            return self.text
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.path.name}: {self.text.splitlines()[0]}"


def rejected(collector: pytest.File, text: str) -> RejectedFile:
    """The item of a file that does not load; under ``--collect-only``, which runs nothing and
    so has nothing to keep going for, the collection error that shows its problems."""
    if collector.config.option.collectonly:
        raise collector.CollectError(text)
    return RejectedFile.from_parent(collector, name=REJECTED, text=text)


def rejected_file(nodeid: str) -> str | None:
    """The file of a ``RejectedFile`` item's node id, or None for any other item."""
    path, sep, name = nodeid.rpartition("::")
    return path if sep and name == REJECTED else None


@dataclass(frozen=True)
class TrialFailure:
    """What a person needs to see of a failed trial."""

    case: str
    trial: int
    trials: int
    problems: tuple[str, ...]
    argv: Any = None
    cwd: str | None = None
    excerpts: tuple[tuple[str, int, str], ...] = ()  # (stream, its size in bytes, its excerpt)
    output_dir: str | None = None

    @classmethod
    def of(cls, case: Case, trial: int, trials: int, result: TrialResult) -> TrialFailure:
        excerpts = []
        for stream, captured in (("stdout", result.get("stdout")),
                                 ("stderr", result.get("stderr"))):
            if captured and captured["bytes"]:
                gap = "\n[...]\n" if captured["truncated"] else ""
                excerpts.append((stream, captured["bytes"],
                                 captured["head"] + gap + captured["tail"]))
        workspace = result.get("workspace")
        return cls(
            case=case.name, trial=trial, trials=trials, problems=tuple(result["problems"]),
            argv=result.get("argv"), cwd=workspace["cwd"] if workspace else None,
            excerpts=tuple(excerpts), output_dir=result.get("output_dir"),
        )

    @property
    def headline(self) -> str:
        """The first line of the first problem: what the short summary and JUnit show."""
        first = self.problems[0] if self.problems else "FAIL"
        return escape_controls(first.split("\n", 1)[0])

    def render(self, style: str = "long") -> str:
        """The failure for a person: ``short`` stops after the problems; captured text never
        reaches the terminal raw (ESC, NUL and other controls are escaped)."""
        lines = [f"case {self.case!r}, trial {self.trial} of {self.trials}: FAIL"]
        if style != "short" and self.argv:
            lines.append(f"command: {self.argv}")
        if style != "short" and self.cwd:
            lines.append(f"cwd: {self.cwd}")
        lines += [f"  - {problem}" for problem in self.problems]
        for stream, size, text in self.excerpts if style != "short" else ():
            lines.append(f"{stream} ({size} bytes):")
            lines += ["  | " + line for line in text.rstrip("\n").splitlines()[-EXCERPT_LINES:]]
        if self.output_dir:
            lines.append(f"full output: {self.output_dir}")
        return escape_controls("\n".join(lines))


class TrialFailed(Exception):
    """A trial that did not meet its case's expectations."""

    def __init__(self, failure: TrialFailure) -> None:
        super().__init__(failure.problems[0] if failure.problems else "FAIL")
        self.failure = failure


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
        run_settings: RunSettings,
        result_key: bytes,
        stops: CaseStops | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.result_key = result_key
        self.kinds = kinds
        self.fixture = fixture
        self.case = case
        self.trial = trial
        self.trials = trials
        self.run_settings = run_settings
        self.stops = stops
        # The trial's result, for the worker to put on the test report.
        self.agentic_result: TrialResult | None = None
        self.agentic_seal: str | None = None
        self.extra_keyword_matches.update(case.tags)
        for tag in case.tags:
            self.add_marker(tag)

    def runtest(self) -> None:
        stop = self.stops.reason(self.fixture, self.case) if self.stops else None
        if stop is not None:
            self.ended(stopped_trial(self.trial, stop))
            pytest.skip(stop)
        result = run_trial(self.fixture, self.case, self.trial, self.run_settings, self.kinds)
        if needs_control(self.case, result):
            control = run_control(self.fixture, self.case, self.run_settings, self.kinds,
                                  result["duration_ms"] / 1000)
            result = controlled(result, control)
        self.ended(result)
        self.user_properties += [
            ("case", self.case.name),
            ("trial", str(self.trial)),
            ("outcome", result["outcome"]),
            # The class the evidence counts as, after live qualification, not the one declared.
            ("evidence_class", self._file.evidence_class(self.fixture, self.case)),
            ("duration_ms", str(result["duration_ms"])),
        ]
        if "control" in result:
            self.user_properties.append(("control", result["control"]["status"]))
        if result["outcome"] == FAIL:
            if self.stops is not None:
                self.stops.record(self.fixture, self.case, self.trial)
            raise TrialFailed(TrialFailure.of(self.case, self.trial, self.trials, result))
        if result["outcome"] in (BLOCKED, INFRA_BLOCKED):
            pytest.skip(result["problems"][0])

    @property
    def _file(self) -> FixtureFile:
        assert isinstance(self.parent, FixtureFile)
        return self.parent

    def ended(self, result: TrialResult) -> None:
        """Keep the trial's result, sealed before any hook sees it."""
        self.agentic_result = result
        self.agentic_seal = mac(self.result_key, result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        tbstyle = style or self.config.getoption("tbstyle", "auto")
        if not isinstance(excinfo.value, TrialFailed):
            # Cut to the trial's frames (see _traceback_filter), one line each unless asked.
            return super().repr_failure(excinfo, "short" if tbstyle == "auto" else tbstyle)
        failure = excinfo.value.failure
        # --tb=line: pytest prints the crash line alone; the body is left empty.
        body = [] if tbstyle == "line" else [ReprEntryNative([failure.render(tbstyle) + "\n"])]
        crash = ReprFileLocation(self.fspath_display(), self.case_line(), failure.headline)
        return ReprExceptionInfo(ReprTraceback(body, None, "native"), crash)

    def fspath_display(self) -> str:
        return self.nodeid.split("::", 1)[0]

    def case_line(self) -> int:
        """The line of the fixture where this case is named (1 when it cannot be found)."""
        try:
            # Bounded, and without waiting on a pipe: an in-place trial may have put anything
            # at the fixture's path since it was loaded.
            text = read_input(self.path).decode("utf-8", errors="replace")
        except OSError:
            return 1
        name = re.escape(json.dumps(self.case.name))
        found = re.search(r'"name"\s*:\s*' + name, text)
        return text.count("\n", 0, found.start()) + 1 if found else 1

    def _traceback_filter(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Traceback:
        """The frames from this item's ``runtest`` down, without pytest's, pluggy's and
        pytest-timeout's own, rather than the whole way through pytest's hook calls."""
        traceback: Traceback = excinfo.traceback
        if self.config.getoption("fulltrace", False):
            return traceback
        cut = traceback.cut(path=Path(__file__))
        kept = cut.filter(_worth_showing).filter(excinfo)
        return kept or traceback.filter(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # A line number (the top of the file): pytest needs one to report a skip applied by a
        # marker, and to locate a warning.
        return self.path, 0, f"{trial_name(self.case.name, self.trial)}: {self.case.command}"
