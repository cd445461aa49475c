"""Where a trial runs: a private copy of the skill directory, or the real one under a lock.

Trials must never see each other's files, also when xdist runs them at once, and a stale
output from an earlier trial or run must never satisfy an artifact check.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentic_evals.execution.overlay import Layers
from pytest_agentic_evals.model import Case, Fixture

# Folders a skill does not need at run time: version control, dependency trees, caches.
SKIPPED_NAMES = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".pytest_cache",
    ".mypy_cache", ".ruff_cache", ".tox", ".nox", ".hypothesis", ".cache", ".eggs",
})


@dataclass(frozen=True)
class Workspace:
    mode: str
    root: Path
    """The directory the trial sees as the skill directory."""
    cwd: Path
    fixture_dir: Path
    layers: Layers | None = None
    """In ``copy`` mode under the sandbox: the overlay whose upper layer is ``root``."""
    copied: str | None = None
    """In ``copy`` mode: why the trial got a copy rather than an overlay."""

    def to_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"mode": self.mode, "root": str(self.root), "cwd": str(self.cwd)}
        if self.mode == "copy":
            shown["overlay"] = None if self.layers is None else str(self.layers.lower)
            shown["copied"] = self.copied
        return shown


Ignore = Callable[[str, list[str]], set[str]]


@dataclass(frozen=True)
class CopyIgnore:
    """What a private copy leaves out: tool folders, virtualenvs, and the run directory.

    Called as ``shutil.copytree``'s ``ignore``; :func:`skips` answers for one entry whose type
    is known (a directory listing says it without a system call), so that a scan of a large
    skill looks into directories only."""

    skip_below: str | None

    def __call__(self, directory: str, names: list[str]) -> set[str]:
        return {name for name in names if self.skips(directory, name, None)}

    def skips(self, directory: str, name: str, is_dir: bool | None) -> bool:
        if name in SKIPPED_NAMES:
            return True
        if is_dir is False:
            return False  # neither a virtualenv nor the run directory
        full = os.path.join(directory, name)
        # A virtualenv under any name; and never the run directory, copied into itself.
        return full == self.skip_below or os.path.isfile(os.path.join(full, "pyvenv.cfg"))


def ignore_for_copy(skip_below: Path | None) -> CopyIgnore:
    """What a private copy leaves out: tool folders, virtualenvs, and the run directory."""
    return CopyIgnore(None if skip_below is None else str(skip_below))


def copy_at(root: Path, fixture: Fixture, case: Case, layers: Layers | None = None,
            copied: str | None = None) -> Workspace:
    return Workspace(
        mode="copy",
        root=root,
        cwd=root / case.cwd.relative_to(fixture.skill_dir),
        fixture_dir=root / fixture.path.parent.relative_to(fixture.skill_dir),
        layers=layers,
        copied=copied,
    )


def in_place(fixture: Fixture, case: Case) -> Workspace:
    return Workspace("inplace", fixture.skill_dir, case.cwd, fixture.path.parent)


def fixture_views(fixture: Fixture, workspace: Workspace) -> tuple[Path, ...]:
    """Every path at which a trial could read the fixture it belongs to: its own (and its
    real one), any other name the file has in the skill directory (a hard link), and the place
    of each in the workspace.  The sandbox shows them empty: a skill that read its cases'
    expectations and printed them back would pass every case, one added tomorrow included."""
    skill = Path(os.path.realpath(fixture.skill_dir))
    real = Path(os.path.realpath(fixture.path))
    names = {fixture.path, real}
    try:
        info = real.stat()
    except OSError:
        return tuple(sorted(names))
    if info.st_nlink > 1:
        names |= _same_file_in(skill, (info.st_dev, info.st_ino))
    for name in list(names):
        for base in (skill, fixture.skill_dir):
            if base in name.parents:
                names.add(workspace.root / name.relative_to(base))
    return tuple(sorted(names))


def _same_file_in(directory: Path, identity: tuple[int, int]) -> set[Path]:
    """Every name of the file ``identity`` under ``directory``, in the folders a copy leaves
    out too (``node_modules``, virtualenvs): a trial sees those in its overlay, or in the
    original skill directory, read-only."""
    device, inode = identity
    found: set[Path] = set()
    pending = [str(directory)]
    while pending:
        with contextlib.suppress(OSError), os.scandir(pending.pop()) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif entry.inode() == inode and \
                            entry.stat(follow_symlinks=False).st_dev == device:
                        found.add(Path(entry.path))
    return found


@contextlib.contextmanager
def exclusive(directory: Path) -> Iterator[None]:
    """Serialize in-place trials of one directory across processes: xdist workers, and runs
    whatever their ``$TMPDIR`` or user. The lock is on the real directory itself (its inode,
    reached through any symlink), so it needs no file of its own anywhere."""
    handle = os.open(os.path.realpath(directory), os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # releases the lock


def trial_dir_name(fixture: Fixture, case: Case, trial: int) -> Path:
    """A path unique per fixture file, case and trial, readable by a person."""
    fixture_key = hashlib.sha256(os.fsencode(fixture.path)).hexdigest()[:10]
    return Path(f"{fixture.skill_dir.name}-{fixture_key}") / case.name / f"trial-{trial}"


def remove_path(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
