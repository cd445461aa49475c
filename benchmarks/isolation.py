"""Isolation cost per trial against the skill's size: skills of 200, 2,000 and 20,000 files,
each trial in a private copy (the default) next to the same trials in place, with the
sandbox off and on."""

from __future__ import annotations

import statistics
from pathlib import Path

from common import PYTEST, skill_dir, timed, write_fixture

Row = tuple[str, str, str, str]


def _skill(root: Path, files: int) -> Path:
    skill = skill_dir(root)
    for i in range(files):
        folder = skill / f"d{i % 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.txt").write_bytes(b"x" * 512)
    return skill


def bench_isolation_size(work: Path, quick: bool) -> list[Row]:
    """Per trial after the first (the slope between a short and a long run, so start-up and
    the first full copy cancel out), for a trial that reads one file of the skill."""
    sizes = (200, 2_000) if quick else (200, 2_000, 20_000)
    short, long = (2, 4) if quick else (2, 10)
    repeat = 1 if quick else 3
    rows = []
    for files in sizes:
        skill = _skill(work / f"isolation-{files}", files)
        walls: dict[tuple[str, str, int], list[float]] = {}
        for _ in range(repeat):  # interleaved rounds
            for sandbox in ("off", "auto"):
                for mode in ("copy", "inplace"):
                    for trials in (short, long):
                        fixture = write_fixture(
                            skill / "fixtures" / f"{mode}-{trials}.json",
                            [{"name": "reads", "type": "positive", "workspace": mode,
                              "command": ["sh", "-c", "test -s ../d0/f0.txt"],
                              "expected": {"exit_code": 0}}],
                            trials=trials, kind="runner_selftest")
                        walls.setdefault((sandbox, mode, trials), []).append(timed(
                            [*PYTEST, "--agentic-evals", "--agentic-evals-sandbox", sandbox,
                             "-p", "no:xdist", str(fixture)], skill))
        for sandbox in ("off", "auto"):
            slope = {mode: (statistics.median(walls[sandbox, mode, long])
                            - statistics.median(walls[sandbox, mode, short]))
                     / (long - short) * 1000 for mode in ("copy", "inplace")}
            rows.append((f"isolation of a {files:,}-file skill, per trial after the first, "
                         f"sandbox {sandbox}", f"{slope['copy']:.1f} ms per trial (copy)",
                         f"{slope['inplace']:.1f} ms per trial in place",
                         f"+{slope['copy'] - slope['inplace']:.1f} ms (target <= +5 ms)"))
    return rows
