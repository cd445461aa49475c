"""What a command run by the runner (a trial, a regression proof) finds in its environment.

The runner's environment, minus the variables of its own Python and pytest and of an
enclosing run, plus what the command is told about its run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pytest_agentic_evals.execution.sandbox import SandboxSettings
from pytest_agentic_evals.execution.trialdirs import TrialDirs
from pytest_agentic_evals.model import Case

DEFAULT_TIMEOUT_SECONDS = 30.0
# Variables of the runner's own Python or pytest that must not leak into a skill's run.
DROPPED_VARIABLES = frozenset({"VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT", "PYTHONHOME"})
DROPPED_PREFIXES = ("PYTEST_", "AGENTIC_EVALS_")


@dataclass(frozen=True)
class RunSettings:
    run_id: str
    run_dir: Path
    default_timeout: float = DEFAULT_TIMEOUT_SECONDS
    keep_passed_workspaces: bool = False
    # Shared by the trials of one process so that directories can be reused; None: one per trial.
    trial_dirs: TrialDirs | None = field(default=None, compare=False)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)


def runner_environment() -> dict[str, str]:
    """The runner's environment without its own Python's, pytest's and an outer run's variables."""
    return {
        name: value
        for name, value in os.environ.items()
        if name not in DROPPED_VARIABLES and not name.startswith(DROPPED_PREFIXES)
    }


def trial_environment(
    case: Case, trial: int, settings: RunSettings, scratch: Path, fixture_dir: Path
) -> dict[str, str]:
    env = runner_environment()
    env.update({
        "AGENTIC_EVALS_TRIAL": str(trial),
        "AGENTIC_EVALS_TRIAL_DIR": str(scratch),
        "AGENTIC_EVALS_RUN_ID": settings.run_id,
        "AGENTIC_EVALS_FIXTURE_DIR": str(fixture_dir),
        "AGENTIC_EVALS_TRAJECTORY": str(scratch / "trajectory.jsonl"),
    })
    env.update(case.env)
    return env
