"""Programs a fixture's commands start that are not there: found by ``validate``, before a run.

A real-world case must reach the skill's own code, which the anti-slush contract checks at
load. Any other case may start any program; one that is not installed is not a load error
(the trial FAILs with "command not found", an outcome like any other), but ``validate`` says
so at once rather than after the trials ran.
"""

from __future__ import annotations

import os
import shutil

from pytest_agentic_evals.jsonio import display_path
from pytest_agentic_evals.model import Fixture
from pytest_agentic_evals.problems import pointer_for


def missing_programs(fixture: Fixture) -> list[str]:
    """One line per case of ``fixture`` whose program cannot be found."""
    found: list[str] = []
    for case in fixture.cases:
        if case.real_world or not case.command:
            continue
        program = case.command[0]
        if "{" in program or any(a.path == program for a in case.input_artifacts):
            continue  # a placeholder, or a file the trial writes before it runs
        if "/" in program:
            path = case.cwd / program
            if path.is_file() and os.access(path, os.X_OK):
                continue
            where = f"{path} is not an executable file"
        else:
            search = case.env.get("PATH", os.environ.get("PATH", os.defpath))
            if shutil.which(program, path=search) is not None:
                continue
            where = "it is not on PATH"
        pointer = pointer_for("cases", case.index, "command", 0)
        found.append(f"{display_path(fixture.path)}: {pointer}: "
                     f"program {program!r} not found ({where}): the trials of case "
                     f"{case.name!r} will FAIL with \"command not found\"")
    return found
