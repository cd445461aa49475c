"""What the benchmarks share: how a command is timed, and the skills and fixtures they use."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

# The plugins this project's own tests install (pytest-rerunfailures, -repeat, -randomly) are
# turned off on both sides of every comparison: a user's machine need not have them, and
# rerunfailures alone keeps about 0.8 KiB per test until the session ends.
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
          "-p", "no:rerunfailures", "-p", "no:repeat", "-p", "no:randomly"]
# Reports the peak resident memory of the pytest process itself, in KiB, at the very end.
PEAK_RSS_PLUGIN = """
import os

def pytest_unconfigure(config):
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            with open(os.environ["PEAK_RSS_FILE"], "w") as out:
                out.write(line.split()[1])
"""


# The runner's own costs are measured without the sandbox, whose cost bench_sandbox measures.
# The benchmarks' fixtures are tests of this runner (eval_kind runner_selftest, or a scaffold):
# the run grants their exemption from the anti-slush contract, as a user's run must.
AGENTIC_EVALS = ["--agentic-evals", "--agentic-evals-allow-exempt"]
UNSANDBOXED = [*AGENTIC_EVALS, "--agentic-evals-sandbox", "off"]
# Measured as users run: with the compiled (and assertion-rewritten) modules cached on disk.
BASE_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None,
          allowed: tuple[int, ...] = (0,)) -> float:
    started = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env or BASE_ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    if result.returncode not in allowed:
        raise SystemExit(f"benchmark command failed ({result.returncode}): {command}\n"
                         f"{result.stderr[-2000:]}")
    return elapsed


def median_of(repeat: int, measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(repeat))


def write_fixture(path: Path, cases: list[dict], trials: int, kind: str = "skill") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 2, "skill": path.parent.name, "trials": trials,
                                "eval_kind": kind, "cases": cases}))
    return path


def skill_dir(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    run = root / "run.sh"
    run.write_text("#!/bin/sh\nexit 0\n")
    run.chmod(0o755)
    return root
