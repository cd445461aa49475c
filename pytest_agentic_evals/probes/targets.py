"""What a probe swaps and what it found: the stand-ins' names, a case's entrypoint, statuses.

Pure and cheap (no execution): coverage and claims read stored probe results through
:mod:`store`, which needs the entrypoint's current hash to tell a fresh result from a stale
one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentic_evals.evidence.readback import entrypoint_reader
from pytest_agentic_evals.model import Case
from pytest_agentic_evals.shell import (
    CommandParseError,
    Reached,
    SkillCode,
    entrypoint_reached,
    program_reaching,
)

NOOP = "noop"
CRASH = "crash"
ECHO_ARGS = "echo-args"
PASSTHROUGH = "passthrough"
REPLAY = "replay"
MUTANTS = (NOOP, CRASH, ECHO_ARGS, PASSTHROUGH, REPLAY)
# A required case whose oracle survives one of these fails the probe: a skill that does
# nothing, or that crashes, is the least an oracle must tell from a working one.
GATING = (NOOP, CRASH)
# Not one of the probe's: the stand-in of a run's control (``control``), the opposite of what
# the case expects.
CONTRARY = "contrary"

MUTANT_MEANING = {
    NOOP: "exits with the case's expected exit code, prints nothing, writes nothing",
    CRASH: "exits 1 with a generic error and a Python traceback on stderr",
    ECHO_ARGS: "prints its own arguments and the names of its input files, exits with the "
               "expected code",
    PASSTHROUGH: "copies its inputs unchanged to stdout and to every output path the case "
                 "checks, exits with the expected code",
    REPLAY: "replays the real skill's stdout, stderr, exit code and output files recorded "
            "from another case of the same fixture",
}


def contrary_exit(expected: int) -> int:
    """The status of the ``contrary`` stand-in: 1 where the case expects 0, else 0 (a skill
    that accepts what it should refuse)."""
    return 1 if expected == 0 else 0


# What became of one stand-in.
KILLED = "killed"
SURVIVED = "survived"
NOT_APPLICABLE = "not_applicable"
INCONCLUSIVE = "inconclusive"
STATUSES = (KILLED, SURVIVED, NOT_APPLICABLE, INCONCLUSIVE)


# A control not played: the command reads the file a stand-in would replace, so it could tell
# the stand-in from the skill.
READS_THE_ENTRYPOINT = "reads_the_entrypoint"


def read_by_the_command(case: Case, target: Target) -> str | None:
    """Why no stand-in in place of ``target`` is evidence for this case: a program of its
    command reads the file a stand-in replaces, so it could tell them apart and fail on
    purpose; None when none does."""
    reader = entrypoint_reader(case, target.path)
    if reader is None:
        return None
    return f"{reader!r} reads the file of {target.description}, which a stand-in would replace"


def failed_control(result: Mapping[str, Any]) -> bool:
    """Whether a trial failed by its control (``control``): the case passed it too, or its
    command reads what the stand-in replaces."""
    control = result.get("control")
    return isinstance(control, dict) and control.get("status") in (SURVIVED, READS_THE_ENTRYPOINT)


# The languages a launcher of the stand-in is written in (see ``mutants``).
LANGUAGES = ("shell", "python", "node", "perl", "ruby", "tclsh")


@dataclass(frozen=True)
class Target:
    """A case's entrypoint as a probe swaps it: the file, how it is started, its hash."""

    description: str
    path: Path
    via: str
    sha256: str
    relative: str | None
    """Its path inside the skill directory (a script, an executable); None for a program on
    PATH."""

    @property
    def key(self) -> tuple[str, str]:
        return (str(self.path), self.via)

    @property
    def language(self) -> str:
        return language(self.via) or "shell"

    def as_json(self) -> dict[str, str]:
        return {"description": self.description, "path": str(self.path), "via": self.via,
                "sha256": self.sha256}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


# How a control's target is started when it is the program that runs the skill (a test
# runner, a fetcher, an interpreter with no launcher), shadowed on PATH: see locate_program.
PROGRAM = "program"
# Names a shell resolves itself: a stand-in on PATH never takes their place.
_SHELL_WORDS = frozenset({"source", ".", "exec", "eval", "command", "builtin", "time",
                          "cd", "test", "[", "echo", "printf", "true", "false", ":"})


def language(via: str) -> str | None:
    """The language of the launcher that stands in for an entrypoint started this way."""
    if via in ("exec", "path", "absolute", "shell", PROGRAM):
        return "shell"
    return via if via in LANGUAGES else None


def locate(case: Case) -> tuple[Target | None, str]:
    """The entrypoint a stand-in replaces in this case, or None and why it cannot be swapped."""
    if case.skill_dir is None:
        return None, "the skill's directory is not known"
    environment = {**case.env, "AGENTIC_EVALS_FIXTURE_DIR": str(case.fixture_dir)}
    try:
        reached, why = entrypoint_reached(case.judged_command, case.cwd,
                                          SkillCode(case.skill_dir, case.entrypoints),
                                          environment)
    except CommandParseError as exc:
        return None, f"its command cannot be analysed: {exc}"
    if reached is None:
        return None, why
    return _target(case.skill_dir, reached)


def locate_program(case: Case) -> tuple[Target | None, str]:
    """The control's target: the entrypoint :func:`locate` finds, else the program the
    command starts it with, by name (``jest``, ``curl`` fetching a live URL, ``lua`` running a
    Lua script), which the stand-in shadows on PATH. Not the probe's: a probe's stand-ins
    (``noop`` exits as expected) stand for the skill, not for the test runner that runs it;
    the control's stands for a program that failed and printed nothing, which whatever runs
    the skill must be able to tell."""
    target, why = locate(case)
    if target is not None or case.skill_dir is None:
        return target, why
    environment = {**case.env, "AGENTIC_EVALS_FIXTURE_DIR": str(case.fixture_dir)}
    try:
        name, reached = program_reaching(case.judged_command, case.cwd,
                                         SkillCode(case.skill_dir, case.entrypoints),
                                         environment)
    except CommandParseError:
        return None, why
    if name is None:
        return None, reached
    if name in _SHELL_WORDS:
        return None, f"{reached} is started by {name!r}, which a shell runs itself"
    search = case.env.get("PATH", os.environ.get("PATH", os.defpath))
    found = shutil.which(name, path=search)
    try:
        digest = file_sha256(Path(found)) if found else ""
    except OSError:
        digest = ""
    return Target(f"{reached} (its program {name!r}, shadowed on PATH)",
                  Path(found or name), PROGRAM, digest, None), ""


def _target(skill_dir: Path, reached: Reached) -> tuple[Target | None, str]:
    if language(reached.via) is None:
        return None, (f"{reached.description} is started in a way no stand-in is written for "
                      f"({reached.via})")
    try:
        digest = file_sha256(reached.path)
    except OSError as exc:
        return None, f"{reached.path} cannot be read: {exc.strerror}"
    relative = None
    if reached.via not in ("path", "absolute"):  # a declared program: shadowed, not replaced
        root = os.path.realpath(skill_dir)
        real = os.path.realpath(reached.path)
        if not real.startswith(root + os.sep):
            return None, f"{reached.path} is not inside the skill directory"
        relative = os.path.relpath(real, root)
    return Target(reached.description, reached.path, reached.via, digest, relative), ""
