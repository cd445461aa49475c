"""Where the time and memory go, for the figures of docs/performance.md that miss a target.

    python benchmarks/profiles.py                   # every profile (about a minute)
    python benchmarks/profiles.py pertrial memory   # a selection
    python benchmarks/profiles.py --quick           # smaller sizes: checks that it runs

* ``pertrial``: a serial run of 400 trials of the per-trial benchmark's skill (sandbox off),
  under cProfile: the runner's functions by time per trial, beside the spawn and wait that a
  plain test pays too.
* ``startup``: an unrelated project's trivial pytest run with the plugin installed but not
  enabled: the modules only the plugin imports (``-X importtime``), and its hooks' time.
* ``validate``: ``agentic-evals validate`` of one fixture under cProfile, by top-level step.
* ``collection``: ``--collect-only`` of 1,000 fixture files under cProfile, per fixture.
* ``memory``: 5,000 trivial trials with tracemalloc on: what is still allocated at the end
  of the session, by the line that allocated it, per trial.

Profilers slow what they watch (cProfile about 1.5x, tracemalloc more): read the shares, not
the absolute figures, and the timings in docs/performance.md for the real cost.
"""

from __future__ import annotations

import argparse
import os
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path

from collectmany import write_skills
from common import AGENTIC_EVALS, BASE_ENV, PYTEST, skill_dir, write_fixture
from pertrial import SKILL, _sides
from startup import small_skill

PACKAGE = "pytest_agentic_evals"

MEMORY_PLUGIN = """
import os, tracemalloc

def pytest_configure(config):
    tracemalloc.start(1)

def pytest_unconfigure(config):
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(False, tracemalloc.__file__)])
    with open(os.environ["MEMORY_PROFILE"], "w") as out:
        for stat in snapshot.statistics("lineno")[:200]:
            frame = stat.traceback[0]
            out.write(f"{stat.size}\\t{stat.count}\\t{frame.filename}:{frame.lineno}\\n")
"""


def _profiled(command: list[str], cwd: Path, output: Path,
              env: dict[str, str] | None = None) -> pstats.Stats:
    """Run ``python -m cProfile -o output`` + ``command`` (a module and its arguments)."""
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(output), *command],
                          cwd=cwd, env=env or BASE_ENV, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    if not output.exists():
        raise SystemExit(f"profiled command failed ({done.returncode}): {command}\n"
                         f"{done.stderr[-2000:]}")
    return pstats.Stats(str(output))


def _where(key: tuple[str, int, str]) -> str:
    filename, line, function = key
    if PACKAGE in filename:
        filename = PACKAGE + filename.split(PACKAGE, 1)[1]
    elif "site-packages/" in filename:
        filename = filename.split("site-packages/", 1)[1]
    elif filename.startswith("/"):
        filename = Path(filename).name
    return f"{filename}:{line} {function}" if line else function


def _table(stats: pstats.Stats, per: int, unit: str, rows: int = 18,
           only_package: bool = False) -> list[str]:
    """The functions by cumulative time (``own`` is time spent in the function itself)."""
    entries = []
    for key, (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        if only_package and PACKAGE not in key[0]:
            continue
        entries.append((cumulative, own, calls, key))
    entries.sort(reverse=True)
    lines = [f"  {'cumulative':>11} {'own':>9} {'calls':>7}  function ({unit})"]
    for cumulative, own, calls, key in entries[:rows]:
        lines.append(f"  {cumulative * 1000 / per:9.3f}ms {own * 1000 / per:7.3f}ms "
                     f"{calls:7d}  {_where(key)}")
    return lines


def _top_own(stats: pstats.Stats, per: int, unit: str, rows: int = 12) -> list[str]:
    entries = sorted(((own, calls, key) for key, (_, calls, own, _, _) in
                      stats.stats.items()), reverse=True)  # type: ignore[attr-defined]
    lines = [f"  {'own':>9} {'calls':>7}  function ({unit}; any module)"]
    for own, calls, key in entries[:rows]:
        lines.append(f"  {own * 1000 / per:7.3f}ms {calls:7d}  {_where(key)}")
    return lines


def profile_per_trial(work: Path, quick: bool) -> list[str]:
    trials = 40 if quick else 400
    root = work / "pertrial"
    root.mkdir(parents=True, exist_ok=True)
    (root / "run.sh").write_text(SKILL)
    (root / "run.sh").chmod(0o755)
    fixture, _ = _sides(root, trials)
    stats = _profiled(["-m", "pytest", *PYTEST[3:], "-p", "no:xdist",
                       *AGENTIC_EVALS, "--agentic-evals-sandbox", "off", str(fixture)],
                      root, work / "pertrial.prof")
    return [f"per trial: {trials} trials, serial, sandbox off (the whole session / {trials})",
            *_table(stats, trials, "per trial", only_package=True, rows=24),
            *_top_own(stats, trials, "per trial")]


def profile_startup(work: Path, quick: bool) -> list[str]:
    project = work / "startup-project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "test_unrelated.py").write_text("def test_nothing():\n    assert True\n")
    run = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p",
           "no:randomly", "test_unrelated.py"]
    imported = {}
    for name, extra in (("installed", []), ("absent", ["-p", "no:agentic_evals"])):
        done = subprocess.run([sys.executable, "-X", "importtime", *run, *extra], cwd=project,
                              env=BASE_ENV, capture_output=True, text=True)
        imported[name] = {line.rsplit("|", 1)[1].strip(): int(line.split("|")[1])
                          for line in done.stderr.splitlines()
                          if line.startswith("import time:") and "|" in line
                          and line.split("|")[1].strip().isdigit()}
    only = sorted(set(imported["installed"]) - set(imported["absent"]),
                  key=lambda module: -imported["installed"][module])
    lines = ["startup: modules imported only because the plugin is installed (self time)"]
    lines += [f"  {imported['installed'][module] / 1000:7.2f}ms  {module}" for module in only]
    stats = _profiled(run, project, work / "startup.prof")
    lines.append("startup: the plugin's own functions in that run")
    lines += _table(stats, 1, "whole run", rows=8, only_package=True)
    return lines


def profile_validate(work: Path, quick: bool) -> list[str]:
    skill, fixture = small_skill(work / "validate-skill")
    command = work / "agentic_evals_command.py"  # what the installed command runs
    command.write_text("import sys\nfrom pytest_agentic_evals.cli.main import main\n"
                       "sys.exit(main())\n")
    stats = _profiled([str(command), "validate", str(fixture)], skill, work / "validate.prof")
    return ["validate: agentic-evals validate of one fixture (whole command)",
            *_table(stats, 1, "whole command", rows=14),
            "validate: the package's own functions",
            *_table(stats, 1, "whole command", rows=14, only_package=True)]


def profile_collection(work: Path, quick: bool) -> list[str]:
    count = 100 if quick else 1_000
    root = work / "collectmany"
    write_skills(root / "skills", count)
    stats = _profiled(["-m", "pytest", *PYTEST[3:], "-p", "no:xdist",
                       *AGENTIC_EVALS, "--collect-only", str(root / "skills")], root,
                      work / "collection.prof")
    return [f"collection: --collect-only of {count:,} fixture files (per fixture file)",
            *_table(stats, count, "per fixture", rows=22, only_package=True),
            *_top_own(stats, count, "per fixture")]


def _allocated(root: Path, trials: int, output: Path) -> dict[str, tuple[int, int]]:
    cases = [{"name": f"case-{i}", "type": "positive", "command": ["true"],
              "expected": {"exit_code": 0}} for i in range(trials // 10)]
    fixture = write_fixture(root / f"n{trials}" / "agentic_eval.json", cases, trials=10,
                            kind="runner_selftest")
    subprocess.run([*PYTEST, "-p", "no:xdist", "--rootdir", str(root), "-c", os.devnull,
                    *AGENTIC_EVALS, "--agentic-evals-sandbox", "off",
                    "--agentic-evals-report", str(root / "report.json"), str(fixture)],
                   cwd=root, env={**BASE_ENV, "MEMORY_PROFILE": str(output)},
                   stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, check=True)
    found = {}
    for row in output.read_text().splitlines():
        size, count, where = row.split("\t")
        found[where] = (int(size), int(count))
    return found


def profile_memory(work: Path, quick: bool) -> list[str]:
    sizes = (200, 1_000) if quick else (1_000, 5_000)
    root = skill_dir(work / "memory")
    (root / "conftest.py").write_text(MEMORY_PLUGIN)
    small, large = (_allocated(root, trials, work / f"memory-{trials}.txt") for trials in sizes)
    grown = sorted(((large[where][0] - small.get(where, (0, 0))[0],
                     large[where][1] - small.get(where, (0, 0))[1], where) for where in large),
                   reverse=True)
    lines = [f"memory: what grows with the trials, still allocated at the session's end "
             f"(slope {sizes[0]:,} -> {sizes[1]:,} trials, by allocating line, per trial)"]
    for size, count, where in grown[:18]:
        filename, _, line = where.rpartition(":")
        lines.append(f"  {size / (sizes[1] - sizes[0]):7.0f} B {count / (sizes[1] - sizes[0]):5.1f}"
                     f" blocks  {_where((filename, int(line), ''))}")
    return lines


PROFILES = {"pertrial": profile_per_trial, "startup": profile_startup,
            "validate": profile_validate, "collection": profile_collection,
            "memory": profile_memory}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME", help=", ".join(PROFILES))
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes (checks the script, not the figures)")
    arguments = parser.parse_args()
    names = arguments.names or list(PROFILES)
    unknown = [name for name in names if name not in PROFILES]
    if unknown:
        parser.error(f"unknown profile {unknown[0]!r}; choose from {', '.join(PROFILES)}")
    with tempfile.TemporaryDirectory(prefix="agentic-evals-profiles-") as work:
        for name in names:
            print("\n".join(PROFILES[name](Path(work), arguments.quick)), end="\n\n",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
