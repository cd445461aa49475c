"""Run directories: where one run's trials live, what is kept of them, and their removal.

Each run gets ``<tmp>/agentic-evals-<uid>/run-<run id>``, made when its first trial is about to
run (``--help`` and ``--collect-only`` make and remove nothing). While the run lasts, every
process of it (the run's opener, and each xdist worker that joins it) holds a shared lock on
its ``.in-use`` marker, so that nothing removes a run in progress.

What is left of a run when it ends:

* nothing, when every trial passed: the run removes its own directory;
* the directories of failed or blocked trials (and, with ``--agentic-evals-keep-workspaces``,
  of every trial): the run is then marked ``.kept`` and stays until the user removes it
  (``agentic-evals clean``). No other run ever removes a kept run.

A run that starts removes the finished runs that kept nothing (runs of a runner that was
killed, or of an older version). One run prunes at a time (an exclusive lock on
``.pruning``; a run that finds it taken skips pruning), and an entry that vanishes meanwhile
(removed by ``agentic-evals clean`` or by the run itself) is skipped.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

RUN_PREFIX = "run-"
IN_USE_MARKER = ".in-use"
KEPT_MARKER = ".kept"
PRUNING_LOCK = ".pruning"


def runs_root() -> Path:
    return Path(tempfile.gettempdir()) / f"agentic-evals-{os.getuid()}"


def runs_root_problem() -> str | None:
    """Why the runs' directory cannot be used, or None (it may not exist yet).

    Its name in a shared temporary directory is known in advance: anyone could put a file
    there, or a link to a directory of theirs (or of the user's) in which runs would be made,
    pruned and cleaned.
    """
    root = runs_root()
    try:
        info = os.lstat(root)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{root}: {exc.strerror}"
    if stat.S_ISLNK(info.st_mode):
        return (f"{root} is a symbolic link; the runs' directory must be a directory of its own "
                "(remove the link)")
    if not stat.S_ISDIR(info.st_mode):
        return f"{root} is not a directory (remove it: the runs' directory is made there)"
    if info.st_uid != os.getuid():
        return f"{root} belongs to another user (uid {info.st_uid}); remove it"
    return None


@dataclass
class RunDir:
    """The directory of one run: its path is known at once, the directory is made by
    :meth:`open`, when the first trial is about to run."""

    run_id: str
    prune: bool = True
    """Whether this process opens the run for itself: opening it then removes finished runs
    that kept nothing, and closing it removes the run's directory unless it kept something.
    An xdist worker joins its controller's run and does neither: the controller, which
    outlives its workers, removes the directory (:func:`remove_if_finished`)."""
    path: Path = field(init=False)
    _in_use: IO[str] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.path = runs_root() / f"{RUN_PREFIX}{self.run_id}"

    @property
    def opened(self) -> bool:
        return self._in_use is not None

    def open(self) -> Path:
        """Make (or join) the directory and mark it in use; then prune, when asked to."""
        if self._in_use is None:
            self._in_use = _enter(self.path)
            if self.prune:
                prune(self.path.parent, current=self.path)
        return self.path

    def close(self) -> None:
        """The run is over here: its directory is removed unless it kept something or another
        process of the run still uses it."""
        if self._in_use is None:
            return
        self._in_use.close()
        self._in_use = None
        if self.prune:
            remove_if_finished(self.path)


def remove_if_finished(run_dir: Path) -> None:
    """Remove ``run_dir`` unless it kept something or a process still uses it."""
    if run_dir.is_dir() and not is_kept(run_dir) and not _in_use(run_dir):
        shutil.rmtree(run_dir, ignore_errors=True)


def new_run_dir(run_id: str) -> tuple[Path, IO[str]]:
    """A directory for a run outside pytest (``regressions verify``), opened at once, and the
    handle that marks it in use."""
    root = runs_root()
    run_dir = root / f"{RUN_PREFIX}{run_id}"
    in_use = _enter(run_dir)
    prune(root, current=run_dir)
    return run_dir, in_use


def enter_run_dir(run_dir: Path) -> IO[str]:
    """Make ``run_dir`` (or join it), marked in use; the handle keeps it so until closed."""
    return _enter(run_dir)


def mark_kept(run_dir: Path) -> None:
    """Something of this run is kept for the user: no other run removes it."""
    with contextlib.suppress(OSError):
        (run_dir / KEPT_MARKER).touch()


def is_kept(run_dir: Path) -> bool:
    return os.path.exists(run_dir / KEPT_MARKER)


def _enter(run_dir: Path) -> IO[str]:
    """Join ``run_dir``, or make it already marked in use: the directory is made under another
    name, its marker locked, and then renamed into place, so that no pruning ever sees a run
    directory without its lock."""
    root = run_dir.parent
    root.mkdir(parents=True, exist_ok=True)
    for _ in range(3):
        if run_dir.is_dir():
            try:
                in_use = open(run_dir / IN_USE_MARKER, "a")  # noqa: SIM115 - held for the run
            except FileNotFoundError:
                continue  # removed meanwhile: make it again
            fcntl.flock(in_use, fcntl.LOCK_SH)
            if run_dir.is_dir():
                return in_use
            in_use.close()  # removed meanwhile: make it again
            continue
        making = root / f".making-{uuid.uuid4().hex}"
        making.mkdir()
        in_use = open(making / IN_USE_MARKER, "w")  # noqa: SIM115 - held for the run
        fcntl.flock(in_use, fcntl.LOCK_SH)
        try:
            os.rename(making, run_dir)
            return in_use
        except OSError:  # another process of this run made it first: join that one
            in_use.close()
            shutil.rmtree(making, ignore_errors=True)
    raise OSError(f"cannot make the run directory {run_dir}")


def prune(root: Path, current: Path | None = None) -> list[Path]:
    """Remove the finished runs under ``root`` that kept nothing; return them.

    Never a run in use or a kept run, never ``current``. Skipped when another run is pruning.
    """
    removed: list[Path] = []
    try:
        lock = open(root / PRUNING_LOCK, "a")  # noqa: SIM115 - closed below
    except OSError:
        return removed
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return removed  # another run is pruning: it removes what this one would
        for candidate in _run_dirs(root):
            if candidate != current and not is_kept(candidate) and not _in_use(candidate):
                shutil.rmtree(candidate, ignore_errors=True)
                removed.append(candidate)
        _remove_abandoned(root)
    return removed


def finished_runs(root: Path) -> Iterator[tuple[Path, float]]:
    """Every run under ``root`` not in use, kept or not, and when it last changed."""
    for candidate in _run_dirs(root):
        try:
            changed = candidate.stat().st_mtime
            with contextlib.suppress(FileNotFoundError):
                changed = max(changed, (candidate / KEPT_MARKER).stat().st_mtime)
        except FileNotFoundError:
            continue  # removed meanwhile
        if not _in_use(candidate):
            yield candidate, changed


def clean(root: Path, older_than: float | None = None, dry_run: bool = False) -> list[Path]:
    """Remove the finished runs under ``root`` (kept ones included), or only those unchanged
    for more than ``older_than`` seconds; return them. Never a run in progress."""
    now = time.time()
    chosen = sorted(path for path, changed in finished_runs(root)
                    if older_than is None or now - changed > older_than)
    if not dry_run:
        for path in chosen:
            shutil.rmtree(path, ignore_errors=True)
    return chosen


def _run_dirs(root: Path) -> Iterator[Path]:
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.name.startswith(RUN_PREFIX) and entry.is_dir(follow_symlinks=False):
                yield Path(entry.path)
        except OSError:
            continue  # vanished between the listing and the look


ABANDONED_SECONDS = 3600.0


def _remove_abandoned(root: Path) -> None:
    """Directories a killed process was making (``.making-*``), once surely abandoned."""
    for entry in list(os.scandir(root)):
        if entry.name.startswith(".making-"):
            with contextlib.suppress(OSError):
                if time.time() - entry.stat(follow_symlinks=False).st_mtime > ABANDONED_SECONDS:
                    shutil.rmtree(entry.path, ignore_errors=True)


def _in_use(run_dir: Path) -> bool:
    try:
        with open(run_dir / IN_USE_MARKER) as marker:
            fcntl.flock(marker, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False  # no marker: a run of an older version, or already half removed
    return False
