"""Run directories: where one run's trials live, and the pruning of finished runs.

Each run gets ``<tmp>/agentic-evals-<uid>/run-<run id>``. A run in progress holds a shared
lock on its marker file for as long as it lasts, so that no other run prunes it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from pathlib import Path
from typing import IO

RUNS_KEPT = 3
IN_USE_MARKER = ".in-use"


def runs_root() -> Path:
    return Path(tempfile.gettempdir()) / f"agentic-evals-{os.getuid()}"


def new_run_dir(run_id: str) -> tuple[Path, IO[str]]:
    """A directory for this run's trials, and the handle that marks it in use.

    Finished runs beyond the last few are removed. A run in progress (for example an outer run
    whose trial starts a nested run) holds a shared lock on its marker file until the handle is
    closed, and is never removed.
    """
    root = runs_root()
    root.mkdir(parents=True, exist_ok=True)
    run_dir = root / f"run-{run_id}"
    run_dir.mkdir(parents=True, exist_ok=True)
    in_use = open(run_dir / IN_USE_MARKER, "w")  # noqa: SIM115 - held for the whole run
    fcntl.flock(in_use, fcntl.LOCK_SH)
    finished = []
    for candidate in root.glob("run-*"):
        if candidate != run_dir and candidate.is_dir() and not _in_use(candidate):
            finished.append(candidate)
    finished.sort(key=lambda path: path.stat().st_mtime)
    for stale in finished[: max(0, len(finished) - (RUNS_KEPT - 1))]:
        shutil.rmtree(stale, ignore_errors=True)
    return run_dir, in_use


def join_run_dir(run_id: str) -> tuple[Path, IO[str]]:
    """The directory of a run another process opened, and the handle that marks it in use.

    An xdist worker joins its controller's run. On a host of its own (``--tx ssh=...``,
    ``socket=...``) no controller marks the run in use there: the worker does, or a run
    starting on that host meanwhile could prune it.
    """
    run_dir = runs_root() / f"run-{run_id}"
    run_dir.mkdir(parents=True, exist_ok=True)
    in_use = open(run_dir / IN_USE_MARKER, "a")  # noqa: SIM115 - held for the whole run
    fcntl.flock(in_use, fcntl.LOCK_SH)
    return run_dir, in_use


def _in_use(run_dir: Path) -> bool:
    try:
        with open(run_dir / IN_USE_MARKER) as marker:
            fcntl.flock(marker, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False  # no marker: a run of an older version, or already half removed
    return False
