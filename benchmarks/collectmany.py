"""Collecting many fixture files, next to a minimal JSON collector.

1,000 skills, each with its own ``fixtures/agentic_eval.json`` (two cases of three trials).
Ours: ``pytest --agentic-evals --collect-only``, which loads, validates and checks every
fixture. The baseline: a conftest-only plugin that reads each file with ``json.load`` and
makes one item per case and trial, checking nothing. Interleaved rounds, medians.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from common import AGENTIC_EVALS, BASE_ENV, PYTEST, skill_dir, timed, write_fixture

MINIMAL_COLLECTOR = '''
import json

import pytest


class Trial(pytest.Item):
    def runtest(self):
        pass


class Fixture(pytest.File):
    def collect(self):
        data = json.loads(self.path.read_text())
        for case in data["cases"]:
            for trial in range(1, data["trials"] + 1):
                yield Trial.from_parent(self, name=f"{case['name']}[trial-{trial}]")


def pytest_collect_file(file_path, parent):
    if file_path.name.startswith("agentic_eval") and file_path.suffix == ".json":
        return Fixture.from_parent(parent, path=file_path)
'''


def write_skills(where: Path, count: int) -> None:
    """``count`` skills, each with a fixture of two cases of three trials."""
    for i in range(count):
        skill = skill_dir(where / f"skill-{i}")
        write_fixture(skill / "fixtures" / "agentic_eval.json", [
            {"name": "greets", "type": "positive", "real_world": True,
             "command": ["../run.sh", str(i)],
             "expected": {"exit_code": 0, "stdout_contains": [f"hello {i}"]}},
            {"name": "refuses", "type": "negative", "command": ["../run.sh", ""],
             "expected": {"exit_code": 2, "stderr_contains": ["name required"]}},
        ], trials=3)


def bench_collect_many(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    count = 200 if quick else 1_000
    root = work / "collectmany"
    write_skills(root / "skills", count)
    (root / "minimal").mkdir(exist_ok=True)
    (root / "minimal" / "conftest.py").write_text(MINIMAL_COLLECTOR)
    ours_command = [*PYTEST, "-p", "no:xdist", *AGENTIC_EVALS, "--collect-only",
                    str(root / "skills")]
    # The minimal collector runs from its own folder (its conftest) over the same files, with
    # this plugin not even imported.
    minimal_command = [*PYTEST, "-p", "no:xdist", "-p", "no:agentic_evals", "--collect-only",
                       "--rootdir", str(root / "minimal"), "-c", "/dev/null",
                       "-p", "conftest", str(root / "skills")]
    env_path = str(root / "minimal")
    times: dict[str, list[float]] = {"ours": [], "minimal": []}
    for _ in range(1 if quick else 5):
        times["ours"].append(timed(ours_command, root))
        times["minimal"].append(timed(minimal_command, root,
                                      env=_with_pythonpath(env_path)))
    ours, minimal = (statistics.median(times[name]) for name in ("ours", "minimal"))
    return [(f"collect {count:,} fixture files (2 cases x 3 trials each)", f"{ours:.2f} s",
             f"{minimal:.2f} s (a minimal JSON collector plugin)",
             f"{ours / minimal:.2f}x (target <= 1.2x)")]


def _with_pythonpath(path: str) -> dict[str, str]:
    env = dict(BASE_ENV)
    env["PYTHONPATH"] = path + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env
