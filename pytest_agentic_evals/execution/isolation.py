"""How one trial's command runs: sandboxed when its setting and the machine allow it, else as
before; with its domain proxy; and the ``isolation`` entry of its report.

Kept free of pytest imports, like the process runner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentic_evals.execution.confined import run_confined
from pytest_agentic_evals.execution.process import ProcessResult, run_process
from pytest_agentic_evals.execution.rundirs import runs_root
from pytest_agentic_evals.execution.sandbox import (
    MountPlan,
    SandboxSettings,
    available_bwrap,
    decide,
    missing_writable,
)
from pytest_agentic_evals.expectations.domains import DomainPolicy, unenforced_report
from pytest_agentic_evals.expectations.proxy import DomainProxy, proxy_environment
from pytest_agentic_evals.model import Case


@dataclass(frozen=True)
class Place:
    """Where a trial runs, as the sandbox needs to know it."""

    workspace: Path
    cwd: Path
    scratch: Path
    output: Path
    readable: tuple[Path, ...]
    """What must stay visible (read-only) where the sandbox hides its surroundings: the skill
    directory and the working directory."""


@dataclass
class Launched:
    """What became of a trial's command."""

    isolation: dict[str, Any]
    process: ProcessResult | None = None
    domains: dict[str, Any] | None = None
    blocked: str | None = None
    """Why the command did not run although it should have (BLOCKED, infrastructure)."""
    failure: str | None = None
    """Why the command did not run: its domain proxy could not start (FAIL, infrastructure)."""


def launch(
    argv: list[str],
    case: Case,
    env: Mapping[str, str],
    timeout: float,
    place: Place,
    settings: SandboxSettings,
) -> Launched:
    decision = decide(settings, case.sandbox, case.sandbox_source)
    bwrap: str | None = None
    reason: str | None = None
    if decision.mode == "off":
        reason = decision.shown
    else:
        found = available_bwrap()
        if found.problem is None:
            bwrap = found.path
        elif decision.mode == "required":
            reason = f"{decision.shown}, but no trial can be sandboxed here: {found.problem}"
        else:
            reason = f"no sandbox on this machine: {found.problem}"
    isolation = {
        "sandbox": "bwrap" if bwrap else "none",
        "setting": decision.mode,
        "network": "host",
        "reason": reason,
        "writable_paths": [str(path) for path in case.writable_paths],
    }
    if decision.mode == "required" and bwrap is None:
        return Launched(isolation, blocked=reason)
    missing = missing_writable(case.writable_paths) if bwrap else []
    if missing:
        return Launched(isolation, blocked="declared writable path(s) do not exist: "
                                           + ", ".join(map(str, missing)))

    policy = DomainPolicy.from_expected(case.expected)
    proxy = None
    if policy is not None:
        try:  # the command never runs without the guard its case asked for
            proxy = DomainProxy.from_environment(policy)
            proxy.start()
        except (OSError, ValueError) as exc:
            failure = f"could not start the domain proxy: {exc}"
            return Launched(isolation, domains=unenforced_report(policy, failure),
                            failure=failure)
        env = proxy_environment(env, proxy.url)
    try:
        if bwrap is None:
            process = run_process(argv, cwd=place.cwd, env=env, timeout=timeout,
                                  output_dir=place.output)
        else:
            plan = MountPlan(
                workspace=place.workspace, scratch=place.scratch, cwd=place.cwd,
                network="host", writable=case.writable_paths, readable=place.readable,
                hidden=(runs_root(), *settings.hidden),
            )
            process = run_confined(argv, cwd=place.cwd, env=env, timeout=timeout,
                                   output_dir=place.output, plan=plan, bwrap=bwrap)
    finally:
        if proxy is not None:
            proxy.stop()
    return Launched(isolation, process=process,
                    domains=proxy.report() if proxy is not None else None)
