"""Per-trial cost next to a plain pytest test doing the same work.

The skill prints a line and writes a small JSON file. Our side: a fixture whose cases check
the exit status, the output and a JSON pointer of the file. The baseline: a plain pytest
file whose tests run the same command with ``subprocess.run`` and assert the same three
things. Both run at two sizes (100 and 400 trials); the cost per trial is the slope between
them, so start-up and collection cancel out. Rounds are interleaved (ours, then plain, at
each size), and each figure is the median over the rounds.

Our side runs with the sandbox off (the plain test has none; the sandbox's own cost is
measured by the ``sandbox`` benchmark), and once more with the default setting, to show
what a user pays by default.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from common import AGENTIC_EVALS, PYTEST, UNSANDBOXED, timed, write_fixture

SKILL = """#!/bin/sh
echo "done: $1"
printf '{"status": "ok", "input": "%s"}\\n' "$1" > result.json
"""

PLAIN_TEST = """import json
import subprocess
from pathlib import Path

import pytest

@pytest.mark.parametrize("n", range({trials}))
def test_trial(n, tmp_path_factory):
    where = tmp_path_factory.mktemp("t")
    done = subprocess.run([{skill!r}, "x"], cwd=where, capture_output=True, text=True,
                          start_new_session=True, timeout=60)
    assert done.returncode == 0
    assert "done: x" in done.stdout
    assert json.loads((where / "result.json").read_text())["status"] == "ok"
"""

CASES = 20


def _sides(root: Path, trials: int) -> tuple[Path, Path]:
    skill = root / "run.sh"
    cases = [{"name": f"writes-{i}", "type": "positive", "command": ["../run.sh", "x"],
              "expected": {"exit_code": 0, "stdout_contains": ["done: x"],
                           "artifacts": [{"path": "result.json",
                                          "json_pointer": "/status", "equals": "ok"}]}}
             for i in range(CASES)]
    ours = write_fixture(root / "fixtures" / f"per-{trials}.json", cases,
                         trials=trials // CASES, kind="runner_selftest")
    plain = root / f"test_plain_{trials}.py"
    plain.write_text(PLAIN_TEST.format(trials=trials, skill=str(skill)))
    return ours, plain


def bench_per_trial(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    root = work / "pertrial"
    root.mkdir(parents=True, exist_ok=True)
    (root / "run.sh").write_text(SKILL)
    (root / "run.sh").chmod(0o755)
    short, long = (40, 100) if quick else (100, 400)
    sides = {trials: _sides(root, trials) for trials in (short, long)}
    sandboxed = [*AGENTIC_EVALS, "-p", "no:xdist"]
    commands = {
        "ours": lambda trials: [*PYTEST, *UNSANDBOXED, "-p", "no:xdist", str(sides[trials][0])],
        "ours, sandbox auto": lambda trials: [*PYTEST, *sandboxed, str(sides[trials][0])],
        "plain": lambda trials: [*PYTEST, "-p", "no:xdist", str(sides[trials][1])],
    }
    walls: dict[tuple[str, int], list[float]] = {}
    for _ in range(1 if quick else 3):
        for trials in (short, long):
            for name, command in commands.items():
                walls.setdefault((name, trials), []).append(timed(command(trials), root))
    slope = {name: (statistics.median(walls[name, long]) - statistics.median(walls[name, short]))
             / (long - short) * 1000 for name in commands}
    plain = slope["plain"]
    return [
        (f"per trial, a skill that prints and writes a JSON file (slope {short} -> {long} "
         "trials, sandbox off)", f"{slope['ours']:.2f} ms",
         f"{plain:.2f} ms (plain pytest test, same command and asserts)",
         f"{slope['ours'] / plain:.2f}x (target <= 1.2x)"),
        ("the same with the default sandbox setting (sandboxed here)",
         f"{slope['ours, sandbox auto']:.2f} ms", f"{plain:.2f} ms (plain pytest test)",
         f"{slope['ours, sandbox auto'] / plain:.2f}x"),
    ]
