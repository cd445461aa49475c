"""Isolation cost per trial against the skill's size: skills of 200, 2,000 and 20,000 files.

Each trial runs in its private workspace (``copy``, the default: an overlay of the skill
directory under the sandbox, a copy without it), next to the same trial in place (no
isolation: the baseline), with the sandbox off and on, for a trial that reads the skill and
one that also writes into it (changes a file, removes one, adds one).

The trials run in one process through the runner's own trial function, timed one by one and
interleaved (copy, in place, copy, in place, ...), so that a busy machine weighs on both
alike; the figure is the median of the differences between a trial and the in-place trial
run right after it, the first trials (a first full copy) left out. With
``ISOLATION_BEFORE=/path/to/checkout`` an earlier version's copy mode is timed beside it, in
its own process, round after round with this one's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import BASE_ENV, skill_dir, write_fixture

from pytest_agentic_evals.execution import overlay
from pytest_agentic_evals.execution.sandbox import MountPlan, available_bwrap, bwrap_arguments

Row = tuple[str, str, str, str]
SCRIPTS = {"reads": "test -s ../d0/f0.txt",
           "writes": "test -s ../d0/f0.txt && echo changed > ../d1/f1.txt"
                     " && rm -f ../d2/f2.txt && echo new > ../new.txt"}
BEFORE = os.environ.get("ISOLATION_BEFORE")
WARM_UP = 2  # trials of each kind left out: the first one copies the whole skill

# Runs in a process of its own (with the version under test on sys.path): times trials one by
# one, copy and in place interleaved, and prints the times in milliseconds as JSON.
DRIVER = r"""
import json, sys, time, uuid
from pathlib import Path
from pytest_agentic_evals.execution.environment import RunSettings
from pytest_agentic_evals.execution.sandbox import SandboxSettings
from pytest_agentic_evals.execution.trial import run_trial
from pytest_agentic_evals.execution.trialdirs import TrialDirs
from pytest_agentic_evals.expectations.builtin import builtin_kinds
from pytest_agentic_evals.loading import load_fixture

sandbox, count, run_root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fixtures = [load_fixture(Path(path), accept_exemptions=True) for path in sys.argv[4:]]
cases = {case.name: (fixture, case) for fixture in fixtures for case in fixture.cases}
run_dir = Path(run_root) / f"run-{uuid.uuid4().hex[:8]}"
run_dir.mkdir(parents=True)
dirs = TrialDirs(run_dir)
settings = RunSettings(run_id="bench", run_dir=run_dir, trial_dirs=dirs,
                       sandbox=SandboxSettings(sandbox))
kinds = builtin_kinds()
times = {name: [] for name in cases}
shown = {}
for trial in range(1, count + 1):
    for name, (fixture, case) in cases.items():
        started = time.perf_counter()
        result = run_trial(fixture, case, trial, settings, kinds)
        times[name].append((time.perf_counter() - started) * 1000)
        if result["outcome"] != "PASS":
            sys.exit(f"trial failed: {name}: {result.get('problems')}")
        shown[name] = (result.get("workspace") or {}).get("overlay") and "overlay" or "copy"
dirs.close()
print(json.dumps({"times": times, "shown": shown}))
"""


def _skill(root: Path, files: int) -> Path:
    skill = skill_dir(root)
    for i in range(files):
        folder = skill / f"d{i % 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.txt").write_bytes(b"x" * 512)
    return skill


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _drive(fixtures: list[Path], sandbox: str, count: int, work: Path,
           checkout: str | None) -> dict[str, object]:
    env = dict(BASE_ENV)
    if checkout:
        env["PYTHONPATH"] = checkout
    done = subprocess.run([sys.executable, "-c", DRIVER, sandbox, str(count),
                           str(work / "runs"), *map(str, fixtures)],
                          env=env, capture_output=True, text=True, check=False, cwd=work)
    if done.returncode != 0:
        raise SystemExit(f"isolation driver failed: {done.stderr[-2000:]}")
    result: dict[str, object] = json.loads(done.stdout)
    return result


def bench_isolation_size(work: Path, quick: bool) -> list[Row]:
    sizes = (200, 2_000) if quick else (200, 2_000, 20_000)
    count = 6 if quick else 24
    rounds = 1 if quick else 3
    rows = []
    for files in sizes:
        skill = _skill(work / f"isolation-{files}", files)
        for sandbox in ("off", "auto"):
            for script, command in SCRIPTS.items():
                # The in-place trial writes into the skill itself: it gets a skill of its own.
                inplace_skill = _skill(work / f"isolation-{files}-{script}-inplace", 3)
                fixtures = [write_fixture(root / "fixtures" / f"{script}.json",
                                          [{"name": mode, "type": "positive", "workspace": mode,
                                            "command": ["sh", "-c", command],
                                            "expected": {"exit_code": 0}}],
                                          trials=count, kind="runner_selftest")
                            for mode, root in (("copy", skill), ("inplace", inplace_skill))]
                times: dict[str, list[float]] = {"copy": [], "inplace": [], "added": [],
                                                 "before": []}
                shown = "?"
                for _ in range(rounds):
                    now = _drive(fixtures, sandbox, count, work, None)
                    got = now["times"]
                    assert isinstance(got, dict)
                    times["copy"] += got["copy"][WARM_UP:]
                    times["inplace"] += got["inplace"][WARM_UP:]
                    times["added"] += [c - i for c, i in zip(got["copy"][WARM_UP:],
                                                             got["inplace"][WARM_UP:],
                                                             strict=True)]
                    shown = str(now["shown"]["copy"])  # type: ignore[index]
                    if BEFORE:
                        then = _drive(fixtures, sandbox, count, work, BEFORE)["times"]
                        assert isinstance(then, dict)
                        times["before"] += [t - i for t, i in zip(then["copy"][WARM_UP:],
                                                                   then["inplace"][WARM_UP:],
                                                                   strict=True)]
                copy, inplace = _median(times["copy"]), _median(times["inplace"])
                before = (f"; before: +{_median(times['before']):.1f} ms" if BEFORE else "")
                rows.append((f"isolation of a {files:,}-file skill, trial that {script}, "
                             f"sandbox {sandbox}, median per trial after the first {WARM_UP}",
                             f"{copy:.1f} ms per trial ({shown})",
                             f"{inplace:.1f} ms per trial in place",
                             f"+{_median(times['added']):.1f} ms (target <= +5 ms){before}"))
    return rows


def bench_overlay_mount(work: Path, quick: bool) -> list[Row]:
    """The overlay's own cost, without a trial around it: bwrap running ``/bin/true`` with the
    workspace an overlay of the skill (its layers made before, its work directory removed
    after) next to bwrap with the workspace a bound directory, interleaved, medians."""
    found = available_bwrap()
    if found.path is None or found.problem is not None:
        return [("the overlay's own cost", "-", "-", f"no sandbox here: {found.problem}")]
    count = 10 if quick else 60
    rows = []
    for files in (200, 20_000):
        skill = _skill(work / f"mount-{files}", files)
        times: dict[str, list[float]] = {"bind": [], "overlay": []}
        for number in range(count):
            trial = work / f"mount-{files}-{number}"
            scratch = trial / "scratch"
            scratch.mkdir(parents=True)
            bound = trial / "bound"
            bound.mkdir()
            for kind in ("bind", "overlay"):
                started = time.perf_counter()
                if kind == "overlay":
                    layers = overlay.prepare(trial, skill)
                    plan = MountPlan(workspace=layers.upper, scratch=scratch, cwd=layers.upper,
                                     network="none", lower=skill, work=layers.work)
                else:
                    plan = MountPlan(workspace=bound, scratch=scratch, cwd=bound,
                                     network="none")
                subprocess.run([found.path, *bwrap_arguments(plan), "--", "/bin/true"],
                               check=True)
                if kind == "overlay":
                    overlay.remove(layers.work)
                times[kind].append((time.perf_counter() - started) * 1000)
            shutil.rmtree(trial)
        added = [o - b for o, b in zip(times["overlay"], times["bind"], strict=True)]
        rows.append((f"the overlay's own cost, {files:,}-file skill: bwrap /bin/true on an "
                     f"overlay, layers made and work directory removed (median of {count})",
                     f"{_median(times['overlay']):.1f} ms",
                     f"{_median(times['bind']):.1f} ms with a bound directory",
                     f"+{_median(added):.1f} ms"))
    return rows
