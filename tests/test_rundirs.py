"""Run directories: made only when trials run, kept while anything of them is the user's,
pruned by one run at a time, and inplace trials serialized by the real directory.

Each test has a runs root of its own ($TMPDIR in a temporary directory), so that no real run
beside it is pruned and no stale run of the machine counts. Concurrency is real: parallel
processes, parallel pytest sessions, two CLI runs with different $TMPDIR on one skill.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_agentic_evals.cli.main import main as cli_main
from pytest_agentic_evals.execution.rundirs import (
    IN_USE_MARKER,
    KEPT_MARKER,
    RunDir,
    mark_kept,
    prune,
    runs_root,
)

from conftest import MODES, child_env, make_skill, run_cli, skill_fixture

NO_HANG_SECONDS = 120.0


def listing(root: Path) -> list[str]:
    """Everything under ``root``, for before-and-after comparisons."""
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def stale_runs(count: int) -> list[Path]:
    """Finished runs that kept nothing, as a killed runner leaves them."""
    root = runs_root()
    root.mkdir(parents=True, exist_ok=True)
    made = []
    for n in range(count):
        path = root / f"run-stale{n:05d}"
        path.mkdir()
        (path / IN_USE_MARKER).touch()
        made.append(path)
    return made


# -- the rule itself --------------------------------------------------------------------------


def test_a_run_removes_finished_runs_that_kept_nothing(tmpdir_of_its_own: Path) -> None:
    stale = stale_runs(3)
    kept = runs_root() / "run-kept"
    kept.mkdir()
    mark_kept(kept)
    older = RunDir("older")
    older.open()  # in progress
    run = RunDir("current")
    run.open()
    try:
        assert not any(path.exists() for path in stale)
        assert kept.is_dir() and older.path.is_dir() and run.path.is_dir()
    finally:
        older.close()
        run.close()
    # Neither kept anything: each removed its own directory when it ended.
    assert not older.path.exists() and not run.path.exists()
    assert kept.is_dir()


def test_a_run_that_kept_something_stays(tmpdir_of_its_own: Path) -> None:
    run = RunDir("keeps")
    run.open()
    mark_kept(run.path)
    run.close()
    assert (run.path / KEPT_MARKER).exists()
    later = RunDir("later")
    later.open()
    later.close()
    assert run.path.is_dir()


def test_pruning_skips_entries_that_vanish_and_runs_one_at_a_time(
    tmpdir_of_its_own: Path
) -> None:
    stale_runs(5)
    root = runs_root()
    with open(root / ".pruning", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert prune(root) == []  # another run is pruning: this one leaves it to that one
    # A run directory that is gone by the time it is looked at.
    (root / "run-stale00000" / IN_USE_MARKER).unlink()
    (root / "run-stale00000").rmdir()
    assert len(prune(root)) == 4


PRUNER = textwrap.dedent("""
    import sys
    from pytest_agentic_evals.execution.rundirs import RunDir
    run = RunDir(sys.argv[1])
    run.open()
    print(run.path.is_dir(), flush=True)
    sys.stdin.read()  # in progress until the test says so
    run.close()
""")


def test_parallel_runs_prune_many_stale_runs_without_error(tmpdir_of_its_own: Path) -> None:
    stale = stale_runs(2000)
    runs = [subprocess.Popen([sys.executable, "-c", PRUNER, f"p{n}"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for n in range(12)]
    try:
        opened = [run.stdout.readline() for run in runs]  # type: ignore[union-attr]
        # Every run made its own directory, and no run removed another's in progress.
        assert opened == ["True\n"] * len(runs)
        assert all((runs_root() / f"run-p{n}").is_dir() for n in range(len(runs)))
    finally:
        outputs = [run.communicate("", timeout=NO_HANG_SECONDS) for run in runs]
    assert [run.returncode for run in runs] == [0] * len(runs), outputs
    assert not any(path.exists() for path in stale)
    assert listing(runs_root()) == [".pruning"]


# -- sessions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("what", [["--help"], ["--collect-only"]], ids=["help", "collect-only"])
def test_help_and_collect_only_make_and_remove_nothing(
    pytester: pytest.Pytester, tmpdir_of_its_own: Path, mode: list[str], what: list[str]
) -> None:
    make_skill(pytester, skill_fixture())
    stale_runs(2)
    before = listing(runs_root())
    result = pytester.runpytest_subprocess("--agentic-evals", "-p", "no:cacheprovider",
                                           *what, *mode, timeout=NO_HANG_SECONDS)
    assert result.ret == 0, result.stdout.str()
    assert listing(runs_root()) == before


def test_the_cli_collect_only_and_help_make_and_remove_nothing(
    pytester: pytest.Pytester, tmpdir_of_its_own: Path
) -> None:
    fixture = make_skill(pytester, skill_fixture())
    stale_runs(2)
    before = listing(runs_root())
    collected = run_cli("run", str(fixture), "--", "--collect-only", cwd=pytester.path)
    assert "greets[trial-1]" in collected.stdout + collected.stderr
    helped = run_cli("run", "--help")
    assert helped.returncode == 0 and "--output" in helped.stdout
    assert listing(runs_root()) == before


def test_32_parallel_collect_only_sessions_over_2000_stale_runs(
    pytester: pytest.Pytester, tmpdir_of_its_own: Path
) -> None:
    make_skill(pytester, skill_fixture())
    stale = stale_runs(2000)
    argv = [sys.executable, "-m", "pytest", "--agentic-evals", "--collect-only", "-q",
            "-p", "no:cacheprovider"]
    env = child_env()
    sessions = [subprocess.Popen(argv, cwd=pytester.path, env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for _ in range(32)]
    outputs = [session.communicate(timeout=NO_HANG_SECONDS * 3)[0] for session in sessions]
    for session, output in zip(sessions, outputs, strict=True):
        assert session.returncode == 0 and "INTERNALERROR" not in output, output
        assert "4 tests collected" in output, output
    assert all(path.is_dir() for path in stale)


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_trials_output_survives_ten_later_runs(
    pytester: pytest.Pytester, tmpdir_of_its_own: Path, mode: list[str]
) -> None:
    data = skill_fixture()
    data["cases"].append({"name": "fails", "type": "positive",
                          "command": ["sh", "-c",
                                      "bash ../run.sh evidence > ../evidence.txt; exit 3"],
                          "expected": {"exit_code": 0}})
    make_skill(pytester, data)
    report = pytester.path / "report.json"
    argv = ["--agentic-evals", "--agentic-evals-report", str(report), "-p", "no:cacheprovider"]

    def run() -> pytest.RunResult:
        if mode:  # under xdist: the workers make the run directory, the controller prunes
            return pytester.runpytest_subprocess(*argv, *mode, timeout=NO_HANG_SECONDS)
        return pytester.runpytest(*argv)

    assert run().ret == 1
    failed = next(c for c in json.loads(report.read_text())["cases"]
                  if c["name"] == "fails")["trials"][0]
    evidence = Path(failed["workspace"]["root"]) / "evidence.txt"
    output = Path(failed["output_dir"]) / "stdout"
    assert evidence.read_text() == "hello, evidence\n" and output.exists()
    (pytester.path / "fixtures" / "agentic_eval.json").write_text(json.dumps(skill_fixture()))
    for later in range(10):
        # Under xdist, the first and the last of the later runs are xdist runs too.
        assert (run() if later in (0, 9) else pytester.runpytest(*argv)).ret == 0
    assert evidence.read_text() == "hello, evidence\n" and output.exists()
    # The passing runs left nothing behind; the failed one is the only run left.
    failed_run = Path(failed["output_dir"]).relative_to(runs_root()).parts[0]
    assert [p.name for p in runs_root().glob("run-*")] == [failed_run]


def test_clean_removes_finished_runs_and_never_one_in_progress(
    tmpdir_of_its_own: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = runs_root() / "run-old", runs_root() / "run-new"
    for path in (old, new):
        path.mkdir(parents=True)
        mark_kept(path)
    week_ago = time.time() - 8 * 86400
    os.utime(old, (week_ago, week_ago))
    os.utime(old / KEPT_MARKER, (week_ago, week_ago))
    running = RunDir("running")
    running.open()
    try:
        assert cli_main(["clean", "--older-than", "7d", "--dry-run"]) == 0
        assert capsys.readouterr().out == f"{old}\n" and old.exists()
        assert cli_main(["clean", "--older-than", "7d"]) == 0
        assert not old.exists() and new.exists()
        assert cli_main(["clean"]) == 0
        assert not new.exists() and running.path.is_dir()
    finally:
        running.close()


def test_clean_refuses_a_bad_duration(tmpdir_of_its_own: Path) -> None:
    result = run_cli("clean", "--older-than", "a week")
    assert result.returncode == 2 and "not a duration" in result.stderr
    assert "Traceback" not in result.stderr


# -- inplace trials of one directory, whatever the runs' $TMPDIR ------------------------------

HOLDER = """
if [ -e busy ]; then echo "another trial is in here"; exit 1; fi
touch busy
i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
rm busy
"""


def waiting_on(directory: Path) -> bool:
    """Whether a process waits for a lock on ``directory`` (a blocked flock in /proc/locks)."""
    inode = f":{os.stat(directory).st_ino} "
    return any("-> FLOCK" in line and inode in line
               for line in Path("/proc/locks").read_text().splitlines())


@pytest.fixture
def inplace_skill(pytester: pytest.Pytester) -> Iterator[Path]:
    data = skill_fixture()
    data["cases"] = [dict(case, workspace="inplace") for case in data["cases"]]
    data["cases"].append({"name": "holds", "type": "positive", "workspace": "inplace",
                          "command": ["sh", "-c", HOLDER], "timeout_seconds": 120,
                          "expected": {"exit_code": 0}})
    yield make_skill(pytester, data)
    (pytester.path / "fixtures" / "go").touch()  # whatever happened, no trial waits on


def test_two_runs_with_different_tmpdir_take_turns_in_one_directory(
    pytester: pytest.Pytester, tmp_path: Path, inplace_skill: Path
) -> None:
    agentic_evals = str(Path(sys.executable).parent / "agentic-evals")
    runs = []
    for name in ("first", "second"):
        tmp = tmp_path / f"tmp-{name}"
        tmp.mkdir()
        env = {**child_env(),
               "TMPDIR": str(tmp)}
        runs.append(subprocess.Popen([agentic_evals, "run", str(inplace_skill), "--case", "holds"],
                                     cwd=pytester.path, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        deadline = time.monotonic() + NO_HANG_SECONDS
        if name == "first":  # the first run's trial is in the directory before the second starts
            while not (pytester.path / "fixtures" / "busy").exists():
                assert runs[0].poll() is None, runs[0].communicate()
                assert time.monotonic() < deadline, "the first run's trial never started"
                time.sleep(0.05)
    deadline = time.monotonic() + NO_HANG_SECONDS
    while not waiting_on(pytester.path):  # the second waits for the first: it does not run
        assert runs[1].poll() is None, runs[1].communicate()
        assert time.monotonic() < deadline, "the second run never waited for the first"
        time.sleep(0.05)
    (pytester.path / "fixtures" / "go").touch()
    outputs = [run.communicate(timeout=NO_HANG_SECONDS) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
