"""Overlay workspaces: a sandboxed trial's private view of the skill directory, without a copy.

Under the sandbox, a trial in ``copy`` mode does not get a copy of the skill directory. Its
mount namespace gets an overlay instead: the skill directory is the read-only lower layer,
and the trial's ``workspace/`` directory is the upper layer, mounted at its own path. The
trial sees the skill as it is, and everything it writes, creates, removes, renames or
chmods lands in the upper layer, in its own trial directory; the skill directory is never
written. Nothing is copied before the trial and nothing needs restoring after it, so the
cost of a trial does not depend on the size of the skill.

Outside the sandbox the upper layer is an ordinary directory holding what the trial changed
(the runner writes input artifacts there before the trial, in the same way): a file the
trial wrote or changed, in full; a file or directory it removed, as a *whiteout* (a
character device 0/0); a directory it replaced, marked *opaque* (an extended attribute).
:class:`Layers` reads the trial's view from the two layers, as the overlay showed it, for the
artifact checks.

Where an overlay cannot give the trial exactly what a copy would, the trial gets a copy:
:func:`unavailable` says why.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pytest_agentic_evals.execution.rundirs import runs_root
from pytest_agentic_evals.execution.sandbox import (
    MountPlan,
    SandboxSettings,
    available_bwrap,
    decide,
    try_plan,
)
from pytest_agentic_evals.model import Case, Fixture

OPAQUE_ATTRIBUTES = ("user.overlay.opaque", "trusted.overlay.opaque")
SYMLINK_HOPS_MAX = 40  # as the kernel follows them
# What an entry the trial did not see is read at: a path that cannot exist (below a device).
ABSENT = Path(os.devnull)
WORK = "work"
"""The overlay's work directory, beside the upper layer in the trial directory; removed as
soon as the trial's command has ended."""


@dataclass(frozen=True)
class Layers:
    """The trial's view of its workspace, read from the overlay's layers after the trial."""

    upper: Path
    """The upper layer, which is also where the trial saw its workspace (same path)."""
    lower: Path
    """The skill directory."""
    work: Path
    """The overlay's work directory."""
    real: Path
    """The upper layer's real path (the runner's temporary directory may be reached through
    a symlink, and symlinks the trial made lead to it)."""

    def locate(self, path: Path) -> tuple[Path, Path]:
        """Where to read what the trial saw at ``path`` (absolute), and the path it led to
        in the trial's view, symlinks followed as the kernel follows them. What the trial did
        not see is read below ``/dev/null``, where nothing exists; so is a path caught in a
        loop of symlinks."""
        if not path.is_absolute():
            return path, path
        resolved = Path("/")
        pending = list(reversed(path.parts[1:]))
        below = self._relative(path)
        if below is not None and ".." not in below:
            # The directories above the workspace are the host's, and lead to it: the walk
            # starts at the workspace (a path below it is looked up for every trial).
            resolved, pending = self.upper, list(reversed(below))
        hops = 0
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            if name == "..":
                resolved = resolved.parent
                continue
            candidate = resolved / name
            held = self.holder(candidate)
            if held is not None and held.is_symlink():
                hops += 1
                if hops > SYMLINK_HOPS_MAX:
                    return ABSENT.joinpath(*path.parts[1:]), self._shown(candidate)
                target = os.readlink(held)
                pending.extend(reversed(Path(target).parts))
                if os.path.isabs(target):
                    pending.pop()  # the leading "/"
                    resolved = Path("/")
                continue
            resolved = candidate
        held = self.holder(resolved)
        shown = self._shown(resolved)
        return (held if held is not None else ABSENT.joinpath(*shown.parts[1:])), shown

    def covers(self, path: Path) -> bool:
        """Whether ``path``, as written, names the workspace or something in it."""
        return not path.is_absolute() or self._relative(path) is not None

    def _relative(self, path: Path) -> tuple[str, ...] | None:
        """``path``'s parts below the workspace (reached by its own path or its real one)."""
        # By string, not Path.parents: it is asked for every component of every path looked
        # up, and paths here are absolute and normalized by pathlib already.
        text = str(path)
        for root in (str(self.upper), str(self.real)):
            if text == root:
                return ()
            if text.startswith(root) and text[len(root)] == "/":
                return tuple(text[len(root) + 1:].split("/"))
        return None

    def _shown(self, path: Path) -> Path:
        """``path`` with the workspace named as the runner names it."""
        parts = self._relative(path)
        return path if parts is None else self.upper.joinpath(*parts)

    def holder(self, path: Path) -> Path | None:
        """The host path holding the entry at ``path`` of the trial's view (not following a
        final symlink), or None when the trial saw nothing there. Outside the workspace, the
        host's own path."""
        parts = self._relative(path)
        if parts is None:
            return path if os.path.lexists(path) else None
        upper = self.upper
        for depth, name in enumerate(parts):
            upper = upper / name
            try:
                info = os.lstat(upper)
            except FileNotFoundError:
                return self._lower(parts, depth)
            if _whiteout(info):
                return None
            if depth == len(parts) - 1:
                return upper
            if not stat.S_ISDIR(info.st_mode) or _opaque(upper):
                # Below an upper non-directory or opaque directory, the lower layer is hidden.
                found = self.upper.joinpath(*parts)
                return found if os.path.lexists(found) else None
        return self.upper

    def _lower(self, parts: tuple[str, ...], depth: int) -> Path | None:
        """The lower layer's entry at ``parts``: the upper layer has nothing from
        ``parts[depth]`` down and merges every directory above, so the lower layer shows
        through where its own entries above are directories (not symlinks: the overlay merges
        directories only)."""
        lower = self.lower
        for name in parts[:depth]:
            lower = lower / name
            try:
                if not stat.S_ISDIR(os.lstat(lower).st_mode):
                    return None
            except FileNotFoundError:
                return None
        found = self.lower.joinpath(*parts)
        return found if os.path.lexists(found) else None


def _whiteout(info: os.stat_result) -> bool:
    return stat.S_ISCHR(info.st_mode) and info.st_rdev == 0


def _opaque(directory: Path) -> bool:
    for name in OPAQUE_ATTRIBUTES:
        try:
            if os.getxattr(directory, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def unavailable(fixture: Fixture, case: Case, sandbox: SandboxSettings,
                run_dir: Path) -> str | None:
    """Why a trial of ``case`` in ``copy`` mode gets a copy of the skill directory rather than
    an overlay; None when it gets an overlay."""
    decision = decide(sandbox, case.sandbox, case.sandbox_source)
    found = available_bwrap() if decision.mode != "off" else None
    if found is None or found.path is None or found.problem is not None:
        return "the trial is not sandboxed"
    skill = fixture.skill_dir
    for runs in (runs_root(), run_dir):
        if _runs_inside(str(runs), str(skill)):
            # Through the overlay the trial would see every run directory (other trials'
            # workspaces and outputs) that the sandbox hides.
            return f"the runner's run directory {runs} lies inside the skill directory"
    if os.geteuid() != 0:
        info = os.stat(skill)
        if (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
            # Unprivileged, the sandbox maps only the runner's own user and group: a trial
            # could not change what belongs to others, which a copy would let it change.
            return (f"the skill directory belongs to another user or group (uid {info.st_uid}, "
                    f"gid {info.st_gid}) than the runner's")
    problem = _prepared_paths(fixture, case)
    if problem is not None:
        return problem
    return _probe(found.path, str(skill), str(run_dir))


def _inside(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


@functools.cache
def _runs_inside(runs: str, skill: str) -> bool:
    """Whether the run directory ``runs`` lies inside ``skill``, by their real paths; asked
    for every trial, and neither moves while the runner runs (no trial can write to their
    parents: a sandboxed trial writes only its own workspace, scratch and declared paths)."""
    return _inside(Path(os.path.realpath(runs)), Path(os.path.realpath(skill)))


def _prepared_paths(fixture: Fixture, case: Case) -> str | None:
    """The runner writes input artifacts into the upper layer before the trial and must
    remove stale outputs from the trial's view: it can when nothing of the skill directory
    stands in the way (a stale output there would need a whiteout, which an unprivileged
    runner cannot make; a symlink or file where a directory is written through would be
    written around, not through)."""
    cwd = case.cwd.relative_to(fixture.skill_dir)
    inputs = {artifact.path for artifact in case.input_artifacts
              if not artifact.outside_workspace}
    outputs = set()
    for assertion in case.expected.get("artifacts", ()):
        if assertion.get("outside_workspace"):
            continue
        for path in (assertion["path"], assertion.get("equals_artifact", {}).get("path")):
            if path and path not in inputs:
                outputs.add(path)
    for relative in sorted(inputs | outputs):
        parts = Path(os.path.normpath(cwd / relative)).parts
        lower = fixture.skill_dir
        for name in parts[:-1]:
            lower = lower / name
            try:
                if not stat.S_ISDIR(os.lstat(lower).st_mode):
                    return f"{relative}: {lower} is not a directory in the skill directory"
            except FileNotFoundError:
                break
        else:
            target = fixture.skill_dir.joinpath(*parts)
            if relative in outputs and os.path.lexists(target):
                return f"expected output {relative} exists in the skill directory"
            if os.path.islink(target) or (os.path.lexists(target) and not os.path.isfile(target)):
                return f"input artifact {relative} is not a regular file in the skill directory"
    return None


@functools.cache
def _probe(bwrap: str, lower: str, run_dir: str) -> str | None:
    """None when ``bwrap`` can mount an overlay of ``lower`` with its upper layer in
    ``run_dir`` here, else why not (the kernel, the file systems or bwrap)."""
    try:
        os.makedirs(run_dir, exist_ok=True)
        where = Path(tempfile.mkdtemp(prefix=".overlay-probe-", dir=run_dir))
    except OSError as exc:
        return f"cannot make an overlay's upper layer in {run_dir}: {exc}"
    try:
        upper, work, scratch = where / "upper", where / WORK, where / "scratch"
        for directory in (upper, work, scratch):
            directory.mkdir()
        plan = MountPlan(workspace=upper, scratch=scratch, cwd=upper, network="none",
                         lower=Path(lower), work=work)
        failed, detail = try_plan(bwrap, plan)
        if failed is None:
            return None
        return detail if failed == "run" else f"no overlay of the skill directory here: {detail}"
    finally:
        remove(where)


def prepare(trial_dir: Path, lower: Path) -> Layers:
    """The layers of a trial's overlay: an empty upper layer (``workspace/``, with the skill
    directory's mode, as a copy would have it) and its work directory."""
    upper, work = trial_dir / "workspace", trial_dir / WORK
    upper.mkdir()
    work.mkdir()
    os.chmod(upper, stat.S_IMODE(os.stat(lower).st_mode))
    return Layers(upper, lower, work, Path(os.path.realpath(upper)))


def remove(path: Path) -> None:
    """Remove ``path``, also the overlay's work directories, which it leaves without any
    permission (mode 000)."""
    def unlock(function: object, name: str, error: object) -> None:
        del function, error
        parent = os.path.dirname(name)
        try:
            os.chmod(parent, 0o700)
            os.chmod(name, 0o700)
        except OSError:
            return
        shutil.rmtree(name, ignore_errors=True)

    shutil.rmtree(path, onerror=unlock)
