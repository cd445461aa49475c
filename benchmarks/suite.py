"""The test suite's own time, next to the suite of an earlier commit, on the same machine.

    python benchmarks/suite.py                    # this checkout next to BASELINE, 2 rounds
    python benchmarks/suite.py --baseline REV --rounds 3
    python benchmarks/suite.py --quick            # one round of a few test files on each side
    python benchmarks/suite.py --processes        # where each side's CPU goes, and its floor

Each side runs the README's test command, ``python -m pytest -n 2 -q``, in a virtualenv of its
own with the project installed from its own files (``pip install -e '.[test]'``): this
checkout's, and a worktree of the baseline commit made under the temporary directory. Rounds
alternate the sides (baseline, then this checkout), so that a machine getting busier or
quieter weighs on both. A side whose suite fails is reported with its failures: its time is
still a figure, but the comparison says so.

With ``--processes`` each side runs once more with every Python it starts accounted for (a
``sitecustomize`` on ``PYTHONPATH`` notes each interpreter's command line and CPU time when it
ends): how many pytest sessions, xdist workers and other Pythons each suite starts, the CPU of
the whole run, and the floor that pytest's own start-up puts under the suite's wall time
(the pytest processes counted, times the CPU of one bare pytest start, over the cores).
Interpreters started with ``-I`` or ``-S``, inside the sandbox, or ended by a signal are not
seen, so the counts and the floor are low, never high.

Not a test and not run by CI (a round takes minutes): run it on demand on a quiet machine.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
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


# Notes, when the interpreter ends (normally or through os._exit, as execnet's workers do),
# its command line and its own CPU seconds, one JSON line per process.
ACCOUNTING_SITECUSTOMIZE = """
import atexit, json, os, resource, sys

_exit = os._exit
_noted = []

def _note():
    if _noted:
        return
    _noted.append(True)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    line = json.dumps({"argv": sys.orig_argv, "cpu": usage.ru_utime + usage.ru_stime})
    try:
        with open(os.environ["SUITE_ACCOUNTING_LOG"], "a") as log:
            log.write(line + "\\n")
    except OSError:
        pass

def _exit_noted(status):
    _note()
    _exit(status)

if os.environ.get("SUITE_ACCOUNTING_LOG"):
    atexit.register(_note)
    os._exit = _exit_noted
"""


PROCESS_KINDS = ("pytest sessions", "xdist workers", "agentic-evals commands", "other Pythons")


def process_kind(argv: list[str]) -> str:
    """What a Python the suite started was, from its command line."""
    joined = " ".join(argv[1:])
    if "exec(eval(sys.stdin.readline()))" in joined:
        return "xdist workers"
    options = list(itertools.takewhile(lambda word: word.startswith("-"), argv[1:]))
    script = argv[1 + len(options)] if len(argv) > 1 + len(options) else ""
    if ((options[-1:] == ["-m"] and script == "pytest") or "-mpytest" in options
            or re.search(r"(^|/)py\.?test$", script)):
        return "pytest sessions"
    if script.endswith("agentic-evals"):
        return "agentic-evals commands"
    return "other Pythons"


def bare_pytest_cpu(python: Path, scratch: Path, repeat: int = 7) -> float:
    """CPU seconds of the cheapest pytest start this side's virtualenv allows: plugins as
    installed but hypothesis's (which the suite's inner sessions leave out too), one empty test
    file collected; the least of a few, as noise only adds."""
    project = scratch / "bare"
    project.mkdir(exist_ok=True)
    (project / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    spent = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "no:hypothesispytest"],
                       cwd=project, env=env, stdout=subprocess.DEVNULL, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return min(spent)


@dataclass
class Accounted:
    """One run of a suite with every Python it started accounted for."""

    wall: float
    tests: str
    failures: list[str]
    cpu: float  # of the whole run: every process waited for
    bare: float  # CPU of one bare pytest start in the same virtualenv
    kinds: dict[str, list[float]] = field(default_factory=dict)  # kind -> CPU of each process

    def floor(self, cores: int) -> float:
        """Wall seconds that the suite's pytest starts alone take, spread over every core."""
        starts = sum(len(self.kinds.get(kind, [])) for kind in ("pytest sessions",
                                                                 "xdist workers"))
        return starts * self.bare / cores


def accounted_suite(python: Path, checkout: Path, files: list[str], scratch: Path) -> Accounted:
    """One run of the suite with every Python it starts accounted for."""
    site = scratch / f"accounting-{checkout.name}"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(ACCOUNTING_SITECUSTOMIZE)
    log = site / "processes.jsonl"
    log.unlink(missing_ok=True)
    saved = os.environ.copy()
    os.environ["SUITE_ACCOUNTING_LOG"] = str(log)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site),
                                                             saved.get("PYTHONPATH")]))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        wall, last, failures = timed_suite(python, checkout, files, scratch)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    found = Accounted(wall=wall, tests=tests_counted(last), failures=failures,
                      cpu=after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
                      bare=bare_pytest_cpu(python, scratch))
    for line in log.read_text().splitlines() if log.exists() else []:
        record = json.loads(line)
        found.kinds.setdefault(process_kind(record["argv"]), []).append(record["cpu"])
    return found


def print_accounting(sides: dict[str, Accounted]) -> None:
    cores = os.cpu_count() or 1
    print(f"\n# every Python each suite started, one run each ({cores} cores)")
    print("| side | tests | wall | CPU of the run | pytest sessions | xdist workers | "
          "agentic-evals commands | other Pythons | one bare pytest start | floor |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for side, found in sides.items():
        shown = [f"{len(spent)}, {sum(spent):.0f} s CPU" for spent in
                 (found.kinds.get(kind, []) for kind in PROCESS_KINDS)]
        print(f"| {side} | {found.tests} | {found.wall:.0f} s | {found.cpu:.0f} s | "
              + " | ".join(shown) + f" | {found.bare:.2f} s CPU | {found.floor(cores):.0f} s |")
    print("\nfloor: the pytest sessions and xdist workers counted, each at the CPU of one bare "
          "pytest start, spread over every core (wall time that no change inside the tests "
          "removes, short of starting fewer pytest processes)")


def tests_counted(last_line: str) -> str:
    found = re.findall(r"(\d+) (passed|failed|skipped|errors?)", last_line)
    return ", ".join(f"{count} {what}" for count, what in found) or last_line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help=f"a commit (default {BASELINE})")
    parser.add_argument("--rounds", type=int, default=2,
                        help="timed rounds (0 with --processes: the accounted run only)")
    parser.add_argument("--quick", action="store_true",
                        help="one round of a few test files: checks that this script runs")
    parser.add_argument("--processes", action="store_true",
                        help="after the timed rounds, one more run of each side with every "
                             "Python it starts accounted for")
    args = parser.parse_args()
    rounds, files = (1, QUICK_FILES) if args.quick else (args.rounds, [])
    if rounds < 1 and not args.processes:
        parser.error("--rounds 0 needs --processes")
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
            accounted = {side: accounted_suite(python, checkout, files, scratch)
                         for side, (python, checkout) in sides.items()} if args.processes else {}
        finally:
            subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force",
                            str(baseline)], check=False)
            shutil.rmtree(baseline, ignore_errors=True)
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"# the suite, `python -m pytest -n 2 -q`, {rounds} round(s), load average {load}")
    if rounds:
        print("| side | median wall | rounds | tests |")
        print("|---|---|---|---|")
        for side, times in walls.items():
            shown = ", ".join(f"{wall:.0f} s" for wall in times)
            print(f"| {side} | {statistics.median(times):.0f} s | {shown} | {counted[side]} |")
        ratio = statistics.median(walls["this checkout"]) / statistics.median(walls["baseline"])
        print(f"\nthis checkout / baseline ({args.baseline}): {ratio:.2f}x the wall time")
    if accounted:
        print_accounting(accounted)
        failed += [f"{side}, accounted run: {line}" for side, found in accounted.items()
                   for line in found.failures]
    if failed:
        print("\nfailures (the time of a round with failures is not the suite's):")
        print("\n".join(failed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
