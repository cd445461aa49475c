"""Running one trial of one case: workspace, environment, process, expectations, outcome.

The result is a plain dict (JSON types only) so that it can travel on a pytest report from
an xdist worker to the controller unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from pytest_agentic_evals.execution import workspace as ws
from pytest_agentic_evals.execution.environment import RunSettings, trial_environment
from pytest_agentic_evals.execution.isolation import Launched, Place, launch
from pytest_agentic_evals.execution.process import ProcessResult
from pytest_agentic_evals.execution.rundirs import mark_kept
from pytest_agentic_evals.execution.trialdirs import Lease, TrialDirs
from pytest_agentic_evals.expectations.builtin import (
    UNTESTED_PREFIXES,
    ExpectationKind,
    check_expectations,
    file_sha256,
    stream_needles,
)
from pytest_agentic_evals.expectations.domains import FAILURE_PREFIXES
from pytest_agentic_evals.expectations.observation import ArtifactError, Observation
from pytest_agentic_evals.expectations.output import excerpt, first_hole
from pytest_agentic_evals.expectations.trajectory import trial_usage
from pytest_agentic_evals.model import (
    BLOCKED,
    FAIL,
    INFRA_BLOCKED,
    PASS,
    Case,
    Fixture,
    TrialOutcome,
    TrialResult,
    unrun_trial,
)
from pytest_agentic_evals.redaction import Redactor


class Substitute(Protocol):
    """Something put in place of the skill for one trial (a vacuity probe's stand-in), and what
    it keeps of the finished trial.  Only ever used with a private copy of the skill."""

    def install(self, workspace: ws.Workspace, scratch: Path, env: dict[str, str]) -> str | None:
        """Put the stand-in in place (files in the workspace, ``env``); a problem, or None."""

    def observe(self, observation: Observation) -> None:
        """Read what the trial left (streams, files) before its workspace is released."""

    @property
    def shadowed(self) -> tuple[tuple[Path, Path], ...]:
        """Files a sandboxed trial is shown in place of others: (file, path it covers)."""


def expand_placeholders(argv: tuple[str, ...], values: Mapping[str, str]) -> list[str]:
    expanded = []
    for word in argv:
        for name, value in values.items():
            word = word.replace("{" + name + "}", value)
        expanded.append(word)
    return expanded


def output_paths(case: Case) -> list[tuple[str, bool]]:
    """Paths the case expects the command to produce, with their outside_workspace flag."""
    inputs = {artifact.path for artifact in case.input_artifacts}
    paths = []
    for assertion in case.expected.get("artifacts", ()):
        outside = bool(assertion.get("outside_workspace"))
        for path in (assertion["path"], assertion.get("equals_artifact", {}).get("path")):
            if path and path not in inputs:
                paths.append((path, outside))
    return paths


def run_trial(
    fixture: Fixture,
    case: Case,
    trial: int,
    settings: RunSettings,
    kinds: Mapping[str, ExpectationKind],
    substitute: Substitute | None = None,
) -> TrialResult:
    if settings.trial_dirs is not None:
        return _run_trial(fixture, case, trial, settings, kinds, settings.trial_dirs, substitute)
    dirs = TrialDirs(settings.run_dir)
    try:
        return _run_trial(fixture, case, trial, settings, kinds, dirs, substitute)
    finally:
        dirs.close()


def _run_trial(
    fixture: Fixture,
    case: Case,
    trial: int,
    settings: RunSettings,
    kinds: Mapping[str, ExpectationKind],
    dirs: TrialDirs,
    substitute: Substitute | None = None,
) -> TrialResult:
    trial_dir = settings.run_dir / ws.trial_dir_name(fixture, case, trial)
    if trial_dir.exists():
        shutil.rmtree(trial_dir)
    context = _Context(case, trial, settings, kinds, dirs, trial_dir, fixture, substitute)
    if case.workspace == "inplace" and substitute is None:
        (trial_dir / "scratch").mkdir(parents=True)
        (trial_dir / "output").mkdir()
        with ws.exclusive(fixture.skill_dir):
            return _run_in(ws.in_place(fixture, case), None, context)
    try:
        # A stand-in is written over the skill's own files: it gets a real copy.
        workspace, lease = dirs.prepare(fixture, case, trial_dir,
                                        settings.sandbox if substitute is None else None)
    except (OSError, shutil.Error) as exc:
        return infrastructure_failure(trial, f"could not copy the skill directory: {exc}")
    return _run_in(workspace, lease, context)


@dataclass(frozen=True)
class _Context:
    """What one trial runs with, gathered to keep signatures short."""

    case: Case
    trial: int
    settings: RunSettings
    kinds: Mapping[str, ExpectationKind]
    dirs: TrialDirs
    trial_dir: Path
    fixture: Fixture
    substitute: Substitute | None = None

    @property
    def skill_dir(self) -> Path:
        return self.fixture.skill_dir


def _run_in(workspace: ws.Workspace, lease: Lease | None, context: _Context) -> TrialResult:
    case, trial, settings = context.case, context.trial, context.settings
    trial_dir, scratch = context.trial_dir, context.trial_dir / "scratch"
    problems = _prepare_files(workspace, case)
    if problems:
        return infrastructure_failure(trial, *problems, workspace=workspace.to_dict())

    seed = str(secrets.randbelow(2**31))
    argv = expand_placeholders(case.command, {
        "trial": str(trial),
        "trial_dir": str(scratch),
        "fixture_dir": str(workspace.fixture_dir),
        "run_id": settings.run_id,
        "random_seed": seed,
    })
    env = trial_environment(case, trial, settings, scratch, workspace.fixture_dir)
    if context.substitute is not None:
        problem = context.substitute.install(workspace, scratch, env)
        if problem is not None:
            return infrastructure_failure(trial, problem, workspace=workspace.to_dict())
    timeout = case.timeout_seconds or settings.default_timeout
    # File times come from the kernel's coarse clock, which lags time.time_ns() by up to a
    # tick; a file's own timestamp is on the same clock as the outputs it is compared with.
    started_ns = context.dirs.mark_start(scratch, lease)
    place = Place(workspace=workspace.root, cwd=workspace.cwd, scratch=scratch,
                  output=trial_dir / "output",
                  readable=(context.skill_dir, case.cwd, workspace.cwd),
                  skill_dir=context.skill_dir, layers=workspace.layers,
                  shadowed=context.substitute.shadowed if context.substitute else (),
                  hidden=ws.fixture_views(context.fixture, workspace))
    launched = launch(argv, case, env, timeout, place, settings.sandbox)
    if launched.process is None:
        return _not_run(launched, trial, workspace)
    observation = Observation(
        not_before_ns=started_ns,
        exit_code=launched.process.exit_code,
        stdout_path=launched.process.stdout_path,
        stderr_path=launched.process.stderr_path,
        cwd=workspace.cwd,
        workspace=workspace.root,
        # Blocked and external-blocker markers are both looked for in either stream.
        needles=stream_needles(case.expected, case.blocked_markers + case.infra_markers),
        trajectory_path=workspace.cwd / env["AGENTIC_EVALS_TRAJECTORY"],
        domains=launched.domains,
        view=workspace.layers,
    )
    result = _observed(launched, observation, context, argv=argv, seed=seed, timeout=timeout,
                       workspace=workspace, hidden=Redactor.of_environment(env))
    keep = result["outcome"] != PASS or settings.keep_passed_workspaces
    entry = result.get("workspace")
    if entry is not None:
        entry["kept"] = keep or workspace.mode == "inplace"
    if keep:
        mark_kept(settings.run_dir)  # no other run removes it: the user does
    else:
        # Repaired and reused when that is provably safe, else removed in the background.
        context.dirs.release(trial_dir, lease)
        result["output_dir"] = None
    return result


def _not_run(launched: Launched, trial: int, workspace: ws.Workspace) -> TrialResult:
    """The result of a trial whose command never ran (BLOCKED, or an infrastructure FAIL)."""
    problem = launched.blocked or launched.failure or "the command did not run"
    failed = infrastructure_failure(trial, problem, workspace=workspace.to_dict())
    failed["isolation"] = launched.isolation
    if launched.blocked is not None:
        failed["outcome"] = BLOCKED
    if launched.domains is not None:
        failed["domains"] = launched.domains
    return failed


def _observed(launched: Launched, observation: Observation, context: _Context, *,
              argv: list[str], seed: str, timeout: float, workspace: ws.Workspace,
              hidden: Redactor) -> TrialResult:
    """The result of a trial whose command ran: judged, and redacted."""
    case, process = context.case, launched.process
    assert process is not None
    outcome, problems, markers = _judge(case, process, observation, context.kinds, timeout)
    if context.substitute is not None:
        context.substitute.observe(observation)
    result: TrialResult = {
        "trial": context.trial,
        "outcome": outcome,
        "exit_code": process.exit_code,
        "duration_ms": process.duration_ms,
        "timed_out": process.timed_out,
        "left_behind_processes": [
            {"pid": p.pid, "command": p.command} for p in process.left_behind
        ],
        "stray_detection": process.stray_detection,
        "problems": problems,
        # A command that could not start says nothing about the skill's capability.
        "infrastructure": process.start_error is not None or process.setup_error is not None,
        "blocked_markers_seen": markers,
        "argv": argv,
        "random_seed": int(seed),
        "stdout": excerpt(process.stdout_path, hidden),
        "stderr": excerpt(process.stderr_path, hidden),
        "artifact_hashes": _artifact_hashes(case, observation),
        "usage": trial_usage(case.expected, observation),
        "domains": launched.domains,
        "isolation": launched.isolation,
        "workspace": workspace.to_dict(),
        "output_dir": str(context.trial_dir / "output"),
    }
    # Failure values, left-behind command lines, argv: nothing of the trial's leaves unredacted.
    return hidden.document(result)


def _prepare_files(workspace: ws.Workspace, case: Case) -> list[str]:
    """Remove stale outputs, then write input artifacts; return problems instead of raising."""
    problems = []
    probe = Observation(None, Path(), Path(), workspace.cwd, workspace.root)
    for relative, outside in output_paths(case):
        if outside:
            continue  # never deleted outside the workspace: checked for freshness instead
        try:
            ws.remove_path(probe.resolve(relative, outside))
        except (ArtifactError, OSError) as exc:
            problems.append(f"cannot clear expected output {relative}: {exc}")
    for artifact in case.input_artifacts:
        try:
            target = probe.resolve(artifact.path, artifact.outside_workspace)
            target.parent.mkdir(parents=True, exist_ok=True)
            artifact.write(target)
        except (ArtifactError, OSError) as exc:
            problems.append(f"cannot write input artifact {artifact.path}: {exc}")
    return problems


def _judge(
    case: Case,
    process: ProcessResult,
    observation: Observation,
    kinds: Mapping[str, ExpectationKind],
    timeout: float,
) -> tuple[TrialOutcome, list[str], list[str]]:
    if process.start_error:
        return FAIL, [process.start_error], []
    if process.setup_error:
        return BLOCKED, [process.setup_error], []
    hygiene = [process.integrity_error] if process.integrity_error else []
    hygiene += _cut_unwritten_output(process)
    if process.timed_out:
        hygiene.append(f"timed out after {timeout:g}s; the process group was killed")
    if process.left_behind:
        shown = ", ".join(f"pid {p.pid} ({p.command or '?'})" for p in process.left_behind)
        hygiene.append(f"left {len(process.left_behind)} process(es) behind, killed: {shown}")
    failures = check_expectations(case.expected, observation, kinds)
    markers = [m for m in case.blocked_markers
               if observation.contains("stdout", m) or observation.contains("stderr", m)]
    # A declared marker means the precondition was unmet (the provider was unavailable and
    # the skill may have fallen back to a stub): absence of evidence, BLOCKED even when every
    # expectation passed, so it can never fill a live slot. What happened whatever the
    # precondition stays a FAIL: a host the proxy refused, a timeout, a process left behind.
    refused = any(f.startswith(FAILURE_PREFIXES) for f in failures)
    if markers and not hygiene and not refused:
        blocked = (f"blocked: precondition not met (the output says "
                   f"{', '.join(map(repr, markers))})")
        if not failures:
            failures = ["the expectations passed, but a trial whose precondition was unmet is "
                        "no evidence"]
        return BLOCKED, [blocked, *failures], markers
    if not hygiene and not failures:
        return PASS, [], markers
    # An external blocker (a provider down, a quota spent) seen while the checks failed: not
    # evidence against the skill, and never a pass either.
    external = [m for m in case.infra_markers
                if observation.contains("stdout", m) or observation.contains("stderr", m)]
    if external and failures and not hygiene and not refused:
        seen = [f"external blocker: saw {marker!r}" for marker in external]
        return INFRA_BLOCKED, [*seen, *failures], markers
    # A check that could not be carried out (no trajectory, one that yielded no events, a
    # budget figure the transcript does not state) is NOT_TESTED: when that is all that went
    # wrong, the trial is BLOCKED with that reason; any real failure keeps it FAIL.
    if failures and not hygiene and all(f.startswith(UNTESTED_PREFIXES) for f in failures):
        return BLOCKED, failures, markers
    return FAIL, hygiene + failures, markers


def _cut_unwritten_output(process: ProcessResult) -> list[str]:
    """Cut stdout and stderr where the trial extended them without writing (see first_hole),
    so that nothing reads them for hours; such a trial fails.  The trial's own streams are
    pipes: only an unsandboxed trial can reach these files, by their path."""
    problems = []
    for name, path in (("stdout", process.stdout_path), ("stderr", process.stderr_path)):
        hole = first_hole(path)
        if hole is not None:
            os.truncate(path, hole)
            problems.append(f"{name} was extended without being written (a hole at byte "
                            f"{hole}, by truncate or a seek): kept up to there")
    return problems


def _artifact_hashes(case: Case, observation: Observation) -> dict[str, str]:
    hashes = {}
    for relative, outside in output_paths(case):
        try:
            path = observation.resolve(relative, outside)
            if path.is_file() and first_hole(path) is None:
                hashes[relative] = file_sha256(path)
        except (ArtifactError, OSError):
            continue
    return hashes


# Parts of a trial's result that are often the same from trial to trial (the isolation, the
# network domains, empty lists, the excerpts of a command that prints the same each time).
SHAREABLE = ("isolation", "domains", "usage", "stdout", "stderr", "argv", "problems",
             "left_behind_processes", "blocked_markers_seen", "artifact_hashes",
             "stray_detection")
SHARED_BYTES_MAX = 8192  # larger parts are kept as they are


def share_parts(result: TrialResult, pool: dict[bytes, Any]) -> TrialResult:
    """``result`` with each part equal to one seen before replaced by that one, so that many
    trials keep one copy of what they have in common. The parts are never changed afterwards
    (a report is built from them and written), so sharing is safe.

    A result that crossed from an xdist worker was rebuilt there with strings of its own for
    every key: those are interned too, so that each key is kept once, not once per trial."""
    parts: dict[str, Any]  # the result, typed loosely to be indexed by the names above
    if all(key is sys.intern(key) for key in result):
        parts = cast(dict[str, Any], result)
    else:
        parts = {sys.intern(key): value for key, value in result.items()}
        workspace = parts.get("workspace")
        if isinstance(workspace, dict):
            parts["workspace"] = {sys.intern(key): value for key, value in workspace.items()}
    for key in SHAREABLE:
        value = parts.get(key)
        if not isinstance(value, (dict, list)):
            continue
        text = json.dumps(value, sort_keys=True, default=str).encode()
        if len(text) <= SHARED_BYTES_MAX:
            # A digest, not the text, names it: a part no other trial shares costs 16 bytes.
            digest = hashlib.blake2b(key.encode() + b"\0" + text, digest_size=16).digest()
            parts[key] = pool.setdefault(digest, value)
    return cast(TrialResult, parts)


def infrastructure_failure(
    trial: int, *problems: str, workspace: dict[str, Any] | None = None
) -> TrialResult:
    """The result of a trial that failed for a reason of the runner's, not the skill's: it
    could not be prepared or started, or (seen by the pytest layer) it did not complete."""
    result = unrun_trial(trial, FAIL, list(problems))
    result["infrastructure"] = True
    result["workspace"] = workspace
    return result
