"""Trial directories: made for a trial, reused when provably restored, removed in the background.

A trial runs in ``<trial dir>/workspace`` (a private copy of the skill directory), with
``scratch/`` for its own files and ``output/`` for its streams. Creating those files and
directories is most of what a trial costs the runner beyond the process itself (on some file
systems an inode costs half a millisecond), and copying a large skill costs far more. So
after a passing trial its directory is checked, what the trial changed in its workspace is
undone file by file, and the directory is kept as a spare that the next trial of the same
skill directory takes over with one rename.

Reuse must never let a trial see what an earlier one did, nor a stale copy of the skill:

- The workspace is recorded (mode, inode, size, modification and change times of every
  entry) when it is copied. Any write, chmod, rename, creation or deletion changes the change
  time of the entry or of its directory, to a time no earlier than the change itself. Before
  the first trial in it starts, the runner makes sure the file-time clock has passed every
  recorded change time (:meth:`TrialDirs.mark_start`), so that no change made by that trial
  or a later one can carry a time equal to the recorded one. Entries the trial added are
  removed; entries it changed or removed are copied again from the skill directory, and the
  repaired workspace is recorded (and must be trusted) anew.
- The skill directory itself is recorded the same way before it is copied and compared again
  before a spare is taken; a spare copied from an older state is removed.
- ``scratch/`` is emptied and ``output/`` must hold nothing but the two stream files, which
  the process runner truncates.

Whatever is not reused is removed by one background thread, so that removal overlaps with the
next trial; :meth:`TrialDirs.close` waits for it.
"""

from __future__ import annotations

import errno
import os
import queue
import shutil
import stat
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from pytest_agentic_evals.execution import overlay
from pytest_agentic_evals.execution.sandbox import SandboxSettings
from pytest_agentic_evals.execution.workspace import (
    CopyIgnore,
    Ignore,
    Workspace,
    copy_at,
    ignore_for_copy,
    remove_path,
)
from pytest_agentic_evals.model import Case, Fixture

# mode, inode, size, modification time, change time (ns) of one directory entry
EntryRecord = tuple[int, int, int, int, int]
TreeRecord = dict[str, EntryRecord]
# Spares kept per process: trials of one skill directory mostly run back to back, and each spare
# holds a whole copy of a skill on disk.
SPARES_KEPT = 4
# Longest wait for the file-time clock to pass a fresh copy's change times: a few coarse ticks.
TRUST_WAIT_SECONDS = 0.05
STAMP_PAUSE_SECONDS = 0.0002
# How often the removal thread looks whether it should stop, when it was told to and the word
# was lost (a KeyboardInterrupt can land inside Queue.put, between the item and the wake-up).
REMOVER_POLL_SECONDS = 0.5
OTHER_CLOCK_MARGIN_NS = 10_000_000  # 10 ms: a tick of the coarsest kernel clock (HZ=100)
OUTPUT_FILES = frozenset({"stdout", "stderr"})
LAYOUT = frozenset({"workspace", "scratch", "output"})


def record_tree(root: Path, ignore: Ignore | None = None) -> TreeRecord:
    """Every entry under ``root`` (``root`` itself as "."), skipping what ``ignore`` names."""
    found: TreeRecord = {".": _entry(os.lstat(root))}
    pending = [(str(root), "")]
    while pending:
        directory, relative = pending.pop()
        with os.scandir(directory) as scan:
            entries = list(scan)
        if isinstance(ignore, CopyIgnore):
            skipped = {entry.name for entry in entries
                       if ignore.skips(directory, entry.name, entry.is_dir())}
        elif ignore is not None:
            skipped = ignore(directory, [entry.name for entry in entries])
        else:
            skipped = set()
        for entry in entries:
            if entry.name in skipped:
                continue
            name = f"{relative}/{entry.name}" if relative else entry.name
            info = entry.stat(follow_symlinks=False)
            found[name] = _entry(info)
            if stat.S_ISDIR(info.st_mode):
                pending.append((entry.path, name))
    return found


def _copy_content(source: str, target: str) -> None:
    """``shutil.copy2``, leaving out what is no file content: a named pipe or a socket in the
    skill directory (an in-place trial may have made one) is not copied, where copying it
    would wait for a writer or fail the trial's copy."""
    try:
        shutil.copy2(source, target)
    except shutil.SpecialFileError:
        pass  # a named pipe
    except OSError as exc:
        if exc.errno != errno.ENXIO:  # a socket
            raise


def _entry(info: os.stat_result) -> EntryRecord:
    return (info.st_mode, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def newest_change(record: TreeRecord) -> int:
    return max(entry[4] for entry in record.values())


@dataclass
class Lease:
    """What is known about the workspace of one running trial."""

    skill_dir: Path
    source: TreeRecord
    """The skill directory as it was copied."""
    copy: TreeRecord
    """The workspace right after copying."""
    layout: dict[str, int]
    """Inode of the trial directory (".") and of its three directories: a rename keeps them."""
    trusted: bool = False
    """True once a trial started strictly after every recorded change time."""


@dataclass
class TrialDirs:
    """Makes trial directories in ``run_dir``, reuses restorable ones, removes the rest."""

    run_dir: Path
    _spares: OrderedDict[Path, tuple[Path, Lease]] = field(default_factory=OrderedDict)
    _serial: int = 0
    _removals: queue.Queue[Path | None] = field(default_factory=queue.Queue)
    _remover: threading.Thread | None = None
    _closing: bool = False

    def prepare(
        self, fixture: Fixture, case: Case, trial_dir: Path,
        sandbox: SandboxSettings | None = None,
    ) -> tuple[Workspace, Lease | None]:
        """A fresh or reused trial directory at ``trial_dir`` and the workspace in it: an
        overlay of the skill directory when the trial is sandboxed (``sandbox`` is the run's
        setting; None when the trial needs a real copy) and nothing stands in the way, else a
        copy.

        Raises OSError or shutil.Error when the skill directory cannot be copied.
        """
        trial_dir.parent.mkdir(parents=True, exist_ok=True)
        copied = None
        if sandbox is not None:
            copied = overlay.unavailable(fixture, case, sandbox, self.run_dir)
            if copied is None:
                (trial_dir / "scratch").mkdir(parents=True)
                (trial_dir / "output").mkdir()
                layers = overlay.prepare(trial_dir, fixture.skill_dir)
                return copy_at(layers.upper, fixture, case, layers=layers), None
        ignore = ignore_for_copy(self.run_dir)
        spare = self._spares.pop(fixture.skill_dir, None)
        if spare is not None:
            path, lease = spare
            if record_tree(fixture.skill_dir, ignore) == lease.source:
                try:
                    os.rename(path, trial_dir)
                    return copy_at(trial_dir / "workspace", fixture, case, copied=copied), lease
                except OSError:
                    pass  # a fresh copy below
            self.discard(path)  # the skill changed since it was copied, or the move failed
        source = record_tree(fixture.skill_dir, ignore)
        (trial_dir / "scratch").mkdir(parents=True)
        (trial_dir / "output").mkdir()
        root = trial_dir / "workspace"
        shutil.copytree(fixture.skill_dir, root, symlinks=True, ignore=ignore,
                        copy_function=_copy_content)
        layout = {name: os.lstat(trial_dir / name).st_ino for name in (".", *LAYOUT)}
        lease = Lease(fixture.skill_dir, source, record_tree(root), layout)
        return copy_at(root, fixture, case, copied=copied), lease

    def mark_start(self, scratch: Path, lease: Lease | None) -> int:
        """Stamp ``scratch`` and return the stamp: the trial's start on the file-time clock.

        For a fresh workspace, stamps again until the stamp is later than every recorded change
        time, so that any change the trial makes carries a time different from the recorded
        one. Kernels with multigrain timestamps get there on the second stamp (an inode whose
        time was read gets a finer one); others when their coarse clock ticks. After
        ``TRUST_WAIT_SECONDS`` without that (a clock set back), the workspace is not reused.
        """
        os.utime(scratch)
        started = scratch.stat().st_mtime_ns
        if lease is None or lease.trusted:
            return started
        # The skill directory may be on another file system, whose clock may be coarser than
        # the one stamping scratch: its times get a margin of a coarse tick or more.
        newest = max(newest_change(lease.copy),
                     newest_change(lease.source) + OTHER_CLOCK_MARGIN_NS)
        deadline = time.monotonic() + TRUST_WAIT_SECONDS
        stamps = 1
        while started <= newest and time.monotonic() < deadline:
            if stamps > 1:
                time.sleep(STAMP_PAUSE_SECONDS)
            os.utime(scratch)
            started = scratch.stat().st_mtime_ns
            stamps += 1
        lease.trusted = started > newest
        return started

    def release(self, trial_dir: Path, lease: Lease | None) -> None:
        """Keep ``trial_dir`` as a spare when it can be provably restored, else remove it."""
        if lease is not None and lease.trusted and self._reusable(trial_dir, lease):
            self._park(trial_dir, lease)
        else:
            self.discard(trial_dir)

    def _reusable(self, trial_dir: Path, lease: Lease) -> bool:
        try:
            # Before anything is removed: each of these must still be the directory the runner
            # made. A trial can replace one with a symlink, and clearing or repairing through
            # it would delete files elsewhere.
            for name, inode in lease.layout.items():
                info = os.lstat(trial_dir / name)
                if not stat.S_ISDIR(info.st_mode) or info.st_ino != inode:
                    return False
            if set(os.listdir(trial_dir)) != LAYOUT:
                return False
            if not set(os.listdir(trial_dir / "output")) <= OUTPUT_FILES:
                return False
            scratch = trial_dir / "scratch"
            for name in os.listdir(scratch):
                remove_path(scratch / name)
            return _restore(trial_dir / "workspace", lease)
        except (OSError, shutil.Error):
            return False

    def _park(self, trial_dir: Path, lease: Lease) -> None:
        spares = self.run_dir / ".spares"
        spares.mkdir(exist_ok=True)
        self._serial += 1
        spare = spares / f"{os.getpid()}-{self._serial}"
        try:
            os.rename(trial_dir, spare)
        except OSError:
            self.discard(trial_dir)
            return
        self._spares[lease.skill_dir] = (spare, lease)
        while len(self._spares) > SPARES_KEPT:
            _, (oldest, _) = self._spares.popitem(last=False)
            self.discard(oldest)

    def discard(self, path: Path) -> None:
        """Remove ``path`` in the background."""
        if self._remover is None:
            self._closing = False
            self._remover = threading.Thread(
                target=self._remove_queued, name="agentic-evals-remover", daemon=True
            )
            self._remover.start()
        self._removals.put(path)

    def _remove_queued(self) -> None:
        while True:
            try:
                path = self._removals.get(timeout=REMOVER_POLL_SECONDS)
            except queue.Empty:
                if self._closing:
                    return
                continue
            if path is None:
                return
            shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        """Remove the spares and wait until every queued removal is done."""
        while self._spares:
            _, (path, _) = self._spares.popitem()
            self.discard(path)
        if self._remover is not None:
            self._closing = True  # before the word: a lost one still ends the thread
            self._removals.put(None)
            self._remover.join()
            self._remover = None


def _restore(workspace: Path, lease: Lease) -> bool:
    """Undo what a trial changed in ``workspace``, file by file; False when that is not safe.

    Entries the trial added are removed; files and links it changed or removed are copied
    again from the skill directory. A directory that changed other than by its entries (moved,
    replaced, its mode changed) is not repaired. The repaired workspace is recorded anew and
    must be trusted again before its next trial (see :meth:`TrialDirs.mark_start`).
    """
    now = record_tree(workspace)
    if now == lease.copy:
        return True
    for name in sorted(now.keys() - lease.copy.keys()):
        remove_path(workspace / name)  # no-op for what a parent's removal already took
    for name, recorded in lease.copy.items():
        current = now.get(name)
        if current == recorded:
            continue
        if stat.S_ISDIR(recorded[0]):
            # Entries added or removed change a directory's times, and are repaired one by
            # one; anything else done to the directory itself is not.
            if current is None or current[:2] != recorded[:2]:
                return False
            continue
        target = workspace / name
        remove_path(target)
        shutil.copy2(lease.skill_dir / name, target, follow_symlinks=False)
    lease.copy = record_tree(workspace)
    lease.trusted = False
    return True
