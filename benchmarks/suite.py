"""The test suite's own time, next to the suite of an earlier commit, on the same machine.

    python benchmarks/suite.py                    # this checkout next to BASELINE, 2 rounds
    python benchmarks/suite.py --baseline REV --rounds 3
    python benchmarks/suite.py --quick            # one round of a few test files on each side

Each side runs the README's test command, ``python -m pytest -n 2 -q``, in a virtualenv of its
own with the project installed from its own files (``pip install -e '.[test]'``): this
checkout's, and a worktree of the baseline commit made under the temporary directory. Rounds
alternate the sides (baseline, then this checkout), so that a machine getting busier or
quieter weighs on both. A side whose suite fails is reported with its failures: its time is
still a figure, but the comparison says so.

Not a test and not run by CI (a round takes minutes): run it on demand on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
# The suite as it was when its time was first held up for a target (issue: the package laid
# out as the architecture it has): 912 tests.
BASELINE = "06d8e64"
QUICK_FILES = ["tests/test_verdicts.py", "tests/test_cli.py"]


def prepared_side(checkout: Path, scratch: Path) -> Path:
    """The Python of a fresh virtualenv with ``checkout`` installed with its test extra."""
    venv = scratch / f"venv-{checkout.name}"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-e", ".[test]"],
                   cwd=checkout, check=True)
    return python


def timed_suite(python: Path, checkout: Path, files: list[str],
                scratch: Path) -> tuple[float, str, list[str]]:
    """Wall seconds of one run of the suite, pytest's last line, and its FAILED and ERROR
    lines."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["TMPDIR"] = str(scratch / f"tmp-{checkout.name}")
    Path(env["TMPDIR"]).mkdir(exist_ok=True)
    started = time.perf_counter()
    done = subprocess.run([str(python), "-m", "pytest", "-n", "2", "-q", *files], cwd=checkout,
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    failures = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return (elapsed, lines[-1] if lines else f"no output (exit status {done.returncode})",
            failures)


def tests_counted(last_line: str) -> str:
    found = re.findall(r"(\d+) (passed|failed|skipped|errors?)", last_line)
    return ", ".join(f"{count} {what}" for count, what in found) or last_line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help=f"a commit (default {BASELINE})")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--quick", action="store_true",
                        help="one round of a few test files: checks that this script runs")
    args = parser.parse_args()
    rounds, files = (1, QUICK_FILES) if args.quick else (args.rounds, [])
    with tempfile.TemporaryDirectory(prefix="suite-benchmark-") as name:
        scratch = Path(name)
        baseline = scratch / "baseline"
        made = subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach",
                               "--quiet", str(baseline), args.baseline],
                              capture_output=True, text=True)
        if made.returncode != 0:
            raise SystemExit(f"the baseline {args.baseline} cannot be checked out here "
                             f"(a shallow clone lacks it?): {made.stderr.strip()}")
        try:
            sides = {"baseline": (prepared_side(baseline, scratch), baseline),
                     "this checkout": (prepared_side(HERE, scratch), HERE)}
            walls: dict[str, list[float]] = {side: [] for side in sides}
            counted: dict[str, str] = {}
            failed: list[str] = []
            for number in range(1, rounds + 1):
                for side, (python, checkout) in sides.items():
                    wall, last, failures = timed_suite(python, checkout, files, scratch)
                    walls[side].append(wall)
                    counted[side] = tests_counted(last)
                    failed += [f"{side}, round {number}: {line}" for line in failures]
        finally:
            subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force",
                            str(baseline)], check=False)
            shutil.rmtree(baseline, ignore_errors=True)
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"# the suite, `python -m pytest -n 2 -q`, {rounds} round(s), load average {load}")
    print("| side | median wall | rounds | tests |")
    print("|---|---|---|---|")
    for side, times in walls.items():
        shown = ", ".join(f"{wall:.0f} s" for wall in times)
        print(f"| {side} | {statistics.median(times):.0f} s | {shown} | {counted[side]} |")
    ratio = statistics.median(walls["this checkout"]) / statistics.median(walls["baseline"])
    print(f"\nthis checkout / baseline ({args.baseline}): {ratio:.2f}x the wall time")
    if failed:
        print("\nfailures (the time of a round with failures is not the suite's):")
        print("\n".join(failed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
