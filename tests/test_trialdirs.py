"""Reused trial directories: cheaper trials, and never a trace of an earlier trial."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.execution import trialdirs
from pytest_agentic_evals.execution.trialdirs import TrialDirs, record_tree
from pytest_agentic_evals.execution.workspace import Workspace
from pytest_agentic_evals.loading import load_fixture

from conftest import MODES, Skill, make_skill, skill_fixture


def run(pytester: pytest.Pytester, mode: list[str],
        *extra: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    """A session whose copy-mode trials run in copies: under the sandbox they would run on
    overlays (tests/test_overlay.py), which need no reuse."""
    report = pytester.path / "report.json"
    argv = ["--agentic-evals", "--agentic-evals-report", str(report), "-p", "no:cacheprovider",
            "--agentic-evals-sandbox", "off", *mode, *extra]
    result = pytester.runpytest(*argv)
    return result, json.loads(report.read_text())


def trials_of(report: dict[str, Any], case: str) -> list[dict[str, Any]]:
    return next(c for c in report["cases"] if c["name"] == case)["trials"]


# Each case changes the workspace in a way the next trial would notice, in the same size where
# that matters: a reused directory that hid any of these would fail a later trial.
TAMPERING = {
    "overwrites-same-size": "grep -qx original ../data.txt && printf 'ORIGINAL\\n' > ../data.txt",
    "creates-a-file": "test ! -e ../leftover && touch ../leftover",
    "removes-a-file": "test -e ../data.txt && rm ../data.txt",
    "changes-a-mode": "test -x ../run.sh && chmod a-x ../run.sh",
    "renames-a-file": "test -e ../data.txt && mv ../data.txt ../moved.txt",
    "fills-scratch": 'test ! -e "$AGENTIC_EVALS_TRIAL_DIR/mine" && '
                     'touch "$AGENTIC_EVALS_TRIAL_DIR/mine"',
}


def tampering_fixture() -> dict[str, Any]:
    data = skill_fixture(trials=3)
    data["cases"] += [
        {"name": name, "type": "positive", "command": ["sh", "-c", script],
         "expected": {"exit_code": 0}}
        for name, script in TAMPERING.items()
    ]
    # Read-only trials between the tampering ones: they are the ones that reuse directories.
    data["cases"] += [
        {"name": f"reads-{n}", "type": "positive", "command": ["sh", "-c",
         "grep -qx original ../data.txt && test -x ../run.sh && test ! -e ../leftover "
         "&& test ! -e ../moved.txt && stat -c 'inode %i' ../data.txt"],
         "expected": {"exit_code": 0}}
        for n in range(3)
    ]
    return data


@pytest.mark.parametrize("mode", MODES)
def test_no_trial_sees_what_an_earlier_trial_changed(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_skill(pytester, tampering_fixture())
    (pytester.path / "data.txt").write_text("original\n")
    result, report = run(pytester, mode)
    assert result.ret == 0, result.stdout.str()
    assert report["readiness"] == "READY"
    # The originals are untouched too.
    assert (pytester.path / "data.txt").read_text() == "original\n"
    assert not (pytester.path / "leftover").exists()


def test_read_only_trials_reuse_one_directory(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A directory is reused once the file clock has passed its copy; the wait allowed for that
    # is made long enough that a busy machine does not decide the count (the session runs in
    # this process).
    monkeypatch.setattr(trialdirs, "TRUST_WAIT_SECONDS", 5.0)
    make_skill(pytester, tampering_fixture())
    (pytester.path / "data.txt").write_text("original\n")
    # In the fixture's order: the nine reads come after every tampering trial. Shuffled (by
    # pytest-randomly, when installed), a read that follows a tampering trial meets data.txt
    # copied again, under a new inode, in a reused directory, and the count says nothing.
    result, report = run(pytester, [], "-p", "no:randomly")
    assert result.ret == 0, result.stdout.str()
    inodes = [trial["stdout"]["head"]
              for n in range(3) for trial in trials_of(report, f"reads-{n}")]
    # Nine read-only trials in one process: copies are made only after tampering trials, so
    # most of them ran in a directory an earlier trial had left untouched.
    assert len(set(inodes)) < len(inodes) // 2, inodes


def test_a_change_to_the_skill_reaches_the_next_trial(pytester: pytest.Pytester) -> None:
    # Each trial reads the skill's data, then appends to the original outside its workspace,
    # as an in-place case or a person editing the skill during a run would (the sandbox keeps
    # the original read-only, so this case goes without it).
    original = pytester.path / "data.txt"
    original.write_text("")
    data = skill_fixture(trials=4)
    data["cases"].append({
        "name": "counts", "type": "positive",
        "command": ["sh", "-c",
                    f"bash ../run.sh x >/dev/null && wc -l < ../data.txt; echo x >> {original}"],
        # Optional: a required case is played once more against a stand-in of the skill (its
        # control), which would append to the original too.
        "sandbox": "off", "required": False, "expected": {"exit_code": 0}})
    make_skill(pytester, data)
    result, report = run(pytester, [])
    assert result.ret == 0, result.stdout.str()
    seen = [int(trial["stdout"]["head"]) for trial in trials_of(report, "counts")]
    assert sorted(seen) == [0, 1, 2, 3]


def test_a_failed_trial_keeps_its_own_directory(pytester: pytest.Pytester) -> None:
    data = skill_fixture(trials=3)
    data["cases"].append({
        "name": "fails-first", "type": "positive",
        "command": ["sh", "-c", 'bash ../run.sh "trial $AGENTIC_EVALS_TRIAL" > ../evidence.txt; '
                    'test "$AGENTIC_EVALS_TRIAL" != 1'],
        "expected": {"exit_code": 0}})
    make_skill(pytester, data)
    result, report = run(pytester, [])
    assert result.ret == 1
    failed = trials_of(report, "fails-first")[0]
    assert failed["outcome"] == "FAIL" and failed["workspace"]["kept"]
    assert (Path(failed["workspace"]["root"]) / "evidence.txt").read_text() == "hello, trial 1\n"
    assert (Path(failed["output_dir"]) / "stdout").exists()


@pytest.mark.parametrize("mode", MODES)
def test_nothing_of_passing_trials_outlives_the_session(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_skill(pytester, skill_fixture(trials=3))
    result, report = run(pytester, mode)
    assert result.ret == 0, result.stdout.str()
    roots = [Path(t["workspace"]["root"]) for c in report["cases"] for t in c["trials"]]
    assert roots and not any(root.parent.exists() for root in roots)
    run_dir = roots[0].parents[3]
    assert not run_dir.exists()  # nothing kept: the run removed its own directory


# -- the rule itself, without a session ------------------------------------------------------


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[TrialDirs]:
    trial_dirs = TrialDirs(tmp_path / "run")
    yield trial_dirs
    trial_dirs.close()


@pytest.fixture
def held_open() -> Iterator[contextlib.ExitStack]:
    """Files kept open until the test ends."""
    with contextlib.ExitStack() as stack:
        yield stack


def after_one_trial(
    dirs: TrialDirs, tmp_path: Path, change: Callable[[Path], None],
    held_open: contextlib.ExitStack,
) -> tuple[int, Workspace, Path]:
    """Prepare a trial, let ``change`` act on its workspace right after the start, release
    it, and prepare the next trial: the inode run.sh had in the first workspace, the next
    trial's workspace, and the first trial's directory. That run.sh is held open, so that its
    inode stays in use even once the file is removed: a fresh copy cannot be given the same
    number (the file system hands a freed one out again)."""
    skill = Skill(tmp_path / "skill")
    (skill.root / "data.txt").write_text("original\n")
    fixture = load_fixture(skill.fixture())
    trial_dir = dirs.run_dir / "trial"
    workspace, lease = dirs.prepare(fixture, fixture.cases[0], trial_dir)
    inode = (workspace.root / "run.sh").stat().st_ino
    held_open.enter_context((workspace.root / "run.sh").open("rb"))
    dirs.mark_start(trial_dir / "scratch", lease)
    change(workspace.root)
    dirs.release(trial_dir, lease)
    again, _ = dirs.prepare(fixture, fixture.cases[0], trial_dir.with_name("next"))
    return inode, again, trial_dir


def test_an_untouched_directory_is_kept_for_the_next_trial(
    dirs: TrialDirs, tmp_path: Path, held_open: contextlib.ExitStack
) -> None:
    inode, again, _ = after_one_trial(dirs, tmp_path, lambda root: None, held_open)
    assert (again.root / "run.sh").stat().st_ino == inode


def test_a_same_size_write_right_after_the_start_is_undone(
    dirs: TrialDirs, tmp_path: Path, held_open: contextlib.ExitStack
) -> None:
    def change(root: Path) -> None:
        before = record_tree(root)
        # Within microseconds of the start, in the same coarse clock tick: same size and name.
        (root / "data.txt").write_text("ORIGINAL\n")
        (root / "added.txt").write_text("mine\n")
        assert record_tree(root) != before

    inode, again, _ = after_one_trial(dirs, tmp_path, change, held_open)
    assert (again.root / "data.txt").read_text() == "original\n"
    assert not (again.root / "added.txt").exists()
    # Repaired, not copied again: what the trial did not touch is the same file.
    assert (again.root / "run.sh").stat().st_ino == inode


def test_a_directory_changed_in_itself_is_not_reused(
    dirs: TrialDirs, tmp_path: Path, held_open: contextlib.ExitStack
) -> None:
    inode, again, trial_dir = after_one_trial(
        dirs, tmp_path, lambda root: (root / "fixtures").chmod(0o700), held_open)
    assert (again.root / "run.sh").stat().st_ino != inode  # a fresh copy
    assert (again.root / "fixtures").stat().st_mode & 0o777 != 0o700
    dirs.close()
    assert not trial_dir.exists()


@pytest.mark.parametrize("swapped", ["scratch", "workspace", "output", "."])
def test_a_directory_swapped_for_a_symlink_is_never_cleared_through_it(
    pytester: pytest.Pytester, swapped: str
) -> None:
    # A trial replaces one of its directories with a link to a folder outside the run; the
    # runner must not clear or repair anything through that link. (A sandboxed trial cannot:
    # there they are mount points, in a trial directory that is not its own.)
    outside = pytester.path.parent / f"precious-{swapped.strip('.') or 'trial'}"
    for name in ("workspace", "scratch", "output"):
        (outside / name).mkdir(parents=True)
        (outside / name / "keep.txt").write_text("mine\n")
    target = '"$T"' if swapped == "." else f'"$T/{swapped}"'
    data = skill_fixture(trials=3)
    data["cases"].append({
        "name": "swaps", "type": "positive",
        "command": ["sh", "-c", 'T=$(dirname "$AGENTIC_EVALS_TRIAL_DIR") && cd / && '
                    f'bash {pytester.path}/run.sh x >/dev/null && '
                    f'rm -rf {target} && ln -s {outside} {target}'],
        "sandbox": "off", "expected": {"exit_code": 0}})
    make_skill(pytester, data)
    result, report = run(pytester, [])
    assert [t["outcome"] for t in trials_of(report, "swaps")] == ["PASS"] * 3, result.stdout
    assert sorted(p.name for p in outside.iterdir()) == ["output", "scratch", "workspace"]
    for name in ("workspace", "scratch", "output"):
        assert (outside / name / "keep.txt").read_text() == "mine\n"


def test_a_copy_leaves_out_tool_folders_virtualenvs_and_the_run_directory(
    tmp_path: Path
) -> None:
    skill = Skill(tmp_path / "skill")
    for kept in ("lib/venv.txt", "lib/node_modules.md/x", "assets/a.txt"):
        (skill.root / kept).parent.mkdir(parents=True, exist_ok=True)
        (skill.root / kept).write_text("kept\n")
    for left_out in (".git/config", "node_modules/pkg/index.js", "deep/.venv/bin/python",
                     "myenv/lib/x.py", "runs/run-1/trial/file", "deep/__pycache__/m.pyc"):
        (skill.root / left_out).parent.mkdir(parents=True, exist_ok=True)
        (skill.root / left_out).write_text("left out\n")
    (skill.root / "myenv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    fixture = load_fixture(skill.fixture())
    run_dir = skill.root / "runs" / "run-1"
    dirs = TrialDirs(run_dir)
    try:
        workspace, lease = dirs.prepare(fixture, fixture.cases[0], run_dir / "trial")
        copied = {str(path.relative_to(workspace.root)) for path in workspace.root.rglob("*")}
        assert lease is not None
        assert set(lease.copy) - {"."} == copied
        # The record of the skill skips exactly what the copy left out.
        assert {name for name in lease.source if not name.startswith("fixtures")} - {"."} == {
            name for name in copied if not name.startswith("fixtures")}
    finally:
        dirs.close()
    assert {"lib/venv.txt", "lib/node_modules.md/x", "assets/a.txt", "run.sh"} <= copied
    assert not any(name.split("/")[0] in (".git", "node_modules", "myenv")
                   or name.startswith("runs/") or "/.venv" in name or "__pycache__" in name
                   for name in copied), copied


def test_closing_ends_even_when_the_word_to_stop_never_wakes_the_remover(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A KeyboardInterrupt can land inside Queue.put between queueing the item and waking the
    thread that waits for it: a session ending on a signal then hung for good in close()."""
    dirs = TrialDirs(tmp_path / "run")
    doomed = tmp_path / "doomed"
    doomed.mkdir()
    dirs.discard(doomed)
    while doomed.exists():  # the remover has done it and waits for the next word
        time.sleep(0.01)
    removals = dirs._removals

    def put_without_waking(item: Path | None) -> None:  # what the interrupted put leaves
        with removals.mutex:
            removals.queue.append(item)

    monkeypatch.setattr(removals, "put", put_without_waking)
    closing = threading.Thread(target=dirs.close, daemon=True)
    closing.start()
    closing.join(30)
    assert not closing.is_alive(), "close() waits for a remover that was never woken"
