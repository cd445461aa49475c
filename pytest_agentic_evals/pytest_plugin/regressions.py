"""Retained regressions as pytest items: one per ACTIVE record of a ``regressions.json``.

A registry is collected when it is named on the command line, met while pytest walks a
directory, or sits beside a fixture named on the command line. pytest only collects what its
arguments lead to, so such a sibling registry is added to the session's arguments before
collection. Each item carries the ``regression`` marker: ``pytest --agentic-evals -m
regression`` runs the verifications and deselects every trial.

Two plugins, as for trials: ``RegressionItems`` where items are collected and run (a worker,
or a serial run), ``RegressionResults`` where results are judged (the controller, or a serial
run). A verification's result travels on its test report as a plain dict, so the controller
of an xdist run receives exactly what a serial run sees; it adds the results to the JSON
report under ``"regressions"``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from pytest_agentic_evals.execution.environment import RunSettings
from pytest_agentic_evals.expectations.builtin import ExpectationKind, extra_schemas
from pytest_agentic_evals.model import Fixture
from pytest_agentic_evals.pytest_plugin.nodes import REJECTED, rejected
from pytest_agentic_evals.regressions.registry import (
    REGISTRY_FILENAME,
    Registry,
    RegistryError,
    Regression,
    is_registry,
    load_registry,
)
from pytest_agentic_evals.regressions.verify import (
    GUARD_VARIABLE,
    VERIFIED,
    crashed_result,
    verification_lines,
    verify_regression,
)

PLUGIN_NAME = "agentic-evals-regressions"
RESULTS_PLUGIN_NAME = "agentic-evals-regression-results"
MARKER = "regression"
RESULT_ATTRIBUTE = "agentic_evals_regression"


def collected_here() -> bool:
    """Whether this process may collect regressions: not inside a proof (or a run a proof
    started), where verifying them would start the proof again, without end."""
    return not os.environ.get(GUARD_VARIABLE)


def _registry_nodeid(nodeid: str) -> tuple[str, str] | None:
    path, sep, name = nodeid.rpartition("::")
    if not sep or Path(path).name != REGISTRY_FILENAME:
        return None
    return path, name


class Verifying(Protocol):
    """What regression items need of the process that collects and runs them (the worker)."""

    run_settings: RunSettings

    def kinds(self, hook: Any) -> dict[str, ExpectationKind]: ...

    def trials_for(self, fixture: Fixture) -> int: ...


class RegressionNotVerified(Exception):
    """An active regression whose guard could not demonstrate fail-before-fix."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class RegressionItems:
    """The worker's side: registries collected, their items run, results on the reports."""

    def __init__(self, verifying: Verifying, cases_wanted: tuple[str, ...]) -> None:
        self.verifying = verifying
        self.cases_wanted = cases_wanted

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        config = session.config
        siblings = sibling_registries(config.invocation_params.dir, config.args)
        if siblings:
            config.args = [*config.args, *siblings]

    def pytest_collect_file(
        self, file_path: Path, parent: pytest.Collector
    ) -> RegistryFile | None:
        if not is_registry(file_path):
            return None
        return RegistryFile.from_parent(parent, path=file_path, verifying=self.verifying)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        # --agentic-evals-case (run --case) asks for those cases and nothing else.
        if not self.cases_wanted:
            return
        drop = [item for item in items if isinstance(item, RegressionItem)]
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = [item for item in items if not isinstance(item, RegressionItem)]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Iterator[None]:
        report = yield
        result = getattr(item, "agentic_regression", None)
        if call.when == "call" and result is not None:
            setattr(report, RESULT_ATTRIBUTE, result)
        return report


class RegressionResults:
    """The controller's side: the verifications' results, from their reports."""

    def __init__(self) -> None:
        # node id of a regression item -> its verification result
        self.results: dict[str, dict[str, Any]] = {}

    def in_order(self) -> list[dict[str, Any]]:
        """The results, in node id order."""
        return [self.results[nodeid] for nodeid in sorted(self.results)]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        key = _registry_nodeid(report.nodeid)
        if key is None or key[1] == REJECTED:  # a registry that does not load: no regression
            return
        result = getattr(report, RESULT_ATTRIBUTE, None)
        if result is not None:
            self.results[report.nodeid] = result
        elif report.failed and report.nodeid not in self.results:
            # A crashed worker's report carries none of our data: not verified, not nothing.
            crashed = str(report.when) == "???"
            problem = ("the worker running this verification crashed" if crashed
                       else f"verification did not complete ({report.when})")
            result = crashed_result(key[0], key[1], problem)
            result["nodeid"] = report.nodeid
            self.results[report.nodeid] = result

    @pytest.hookimpl(trylast=True)  # after the fixtures' section
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.results:
            return
        terminalreporter.section("agentic-evals regressions")
        for result in self.in_order():
            colour = {"green": True} if result["verdict"] == VERIFIED else {"red": True}
            lines = verification_lines([result])
            terminalreporter.write_line(f"{lines[0]} ({result['registry']})", **colour)
            for line in lines[1:]:
                terminalreporter.write_line(line, red=True)


def sibling_registries(invocation_dir: Path, args: list[str]) -> list[str]:
    """Registries beside fixture files named in ``args`` that no argument already covers."""
    named = [Path(os.path.abspath(invocation_dir / arg.split("::")[0])) for arg in args]
    found: list[Path] = []
    for path in named:
        if path.suffix != ".json" or is_registry(path) or not path.is_file():
            continue
        candidate = path.parent / REGISTRY_FILENAME
        covered = any(candidate == other or (other.is_dir() and other in candidate.parents)
                      for other in named)
        if candidate.is_file() and not covered and candidate not in found:
            found.append(candidate)
    return [str(path) for path in found]


class RegistryFile(pytest.File):
    """A ``regressions.json``, collected like a test module: one item per ACTIVE record."""

    def __init__(self, *, verifying: Verifying, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.verifying = verifying

    def collect(self) -> Iterator[pytest.Item]:
        try:
            registry = load_registry(self.path)
        except RegistryError as exc:
            # Invalid is reported as invalid, never as a registry without regressions; as a
            # failed test of its own, so that the fixtures beside it still run and are judged.
            yield rejected(self, exc.describe())
            return
        for regression in registry.active:
            yield RegressionItem.from_parent(
                self, name=regression.regression_id, registry=registry, regression=regression,
                verifying=self.verifying,
            )


class RegressionItem(pytest.Item):
    """Verification of one active regression: fail-before-fix, then the retained case."""

    def __init__(
        self, *, registry: Registry, regression: Regression, verifying: Verifying, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.verifying = verifying
        self.registry = registry
        self.regression = regression
        self.agentic_regression: dict[str, Any] | None = None
        self.add_marker(MARKER)
        # -k can then pick the regressions of a claim or a seam.
        self.extra_keyword_matches.update(regression.claim_ids + regression.seam_ids)

    def runtest(self) -> None:
        # ihook sees the conftest files of the registry's folder, as for the fixture beside it.
        kinds = self.verifying.kinds(self.ihook)
        result = verify_regression(
            self.registry, self.regression, self.verifying.run_settings, kinds,
            trials_for=self.verifying.trials_for, extra_expectations=extra_schemas(kinds),
        )
        result["nodeid"] = self.nodeid
        self.agentic_regression = result
        self.user_properties += [
            ("regression_id", self.regression.regression_id),
            ("verdict", result["verdict"]),
            ("retained_case", self.regression.retained_case),
        ]
        if result["verdict"] != VERIFIED:
            raise RegressionNotVerified("\n".join(verification_lines([result])))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, RegressionNotVerified):
            return excinfo.value.text
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        proof = self.regression.proof
        argv = list(proof.argv) if proof else []
        return self.path, None, f"regression {self.regression.regression_id}: {argv}"
