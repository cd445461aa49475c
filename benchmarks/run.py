"""Benchmarks of pytest-agentic-evals, each measured side by side with a baseline in one run.

These machines are noisy: every figure is the median of several repetitions, and each is
printed next to its baseline and the ratio between them. Nothing here is a test; run it on
demand:

    python benchmarks/run.py            # every benchmark
    python benchmarks/run.py --quick    # fewer repetitions, smaller sizes where possible
    python benchmarks/run.py collection memory overhead   # a selection
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
# Reports the peak resident memory of the pytest process itself, in KiB, at the very end.
PEAK_RSS_PLUGIN = """
import os

def pytest_unconfigure(config):
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            with open(os.environ["PEAK_RSS_FILE"], "w") as out:
                out.write(line.split()[1])
"""


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    if result.returncode not in (0,):
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


def bench_collection(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """Collecting 10,000 cases x 3 trials, next to pytest collecting 30,000 parametrized tests."""
    cases_count = 10_000
    root = skill_dir(work / "collection")
    cases = [{"name": f"case-{i}", "type": "negative" if i % 2 else "positive",
              "real_world": i == 0, "command": ["../run.sh", str(i)],
              "expected": {"exit_code": 0, "stdout_contains": [f"item {i}"]}}
             for i in range(cases_count)]
    fixture = write_fixture(root / "fixtures" / "agentic_eval.json", cases, trials=3)
    plain = root / "test_plain.py"
    plain.write_text("import pytest\n\n@pytest.mark.parametrize('n', range(30_000))\n"
                     "def test_plain(n):\n    pass\n")
    repeat = 3 if quick else 5
    ours = median_of(repeat, lambda: timed(
        [*PYTEST, "--agentic-evals", "--collect-only", str(fixture)], root))
    baseline = median_of(repeat, lambda: timed([*PYTEST, "--collect-only", str(plain)], root))
    return [("collect 10,000 cases x 3 trials (30,000 items)", f"{ours:.2f} s",
             f"{baseline:.2f} s (plain pytest, 30,000 parametrized)", f"{ours / baseline:.2f}x")]


def bench_memory(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """Peak RSS of the runner while a trial prints 1 GiB, next to a trial printing nothing."""
    gib = 1024**3
    root = work / "memory"
    root.mkdir(parents=True, exist_ok=True)
    (root / "conftest.py").write_text(PEAK_RSS_PLUGIN)
    loud = ["bash", "-c", f"head -c {gib} /dev/zero | tr '\\0' x; echo END-OF-STREAM-MARKER"]
    quiet = ["bash", "-c", "echo END-OF-STREAM-MARKER"]
    figures = []
    for label, command in (("1 GiB", loud), ("quiet", quiet)):
        fixture = write_fixture(root / label.replace(" ", "") / "agentic_eval.json", [
            {"name": "prints", "type": "positive", "command": command, "timeout_seconds": 600,
             "expected": {"exit_code": 0, "stdout_contains": ["END-OF-STREAM-MARKER"],
                          "stdout_excludes": ["never printed"]}}
        ], trials=1, kind="runner_selftest")
        peak_file = root / f"peak-{label}.txt"
        env = {**os.environ, "PEAK_RSS_FILE": str(peak_file)}
        seconds = timed([*PYTEST, "--agentic-evals", "--rootdir", str(root), "-c",
                         os.devnull, str(fixture)], root, env)
        figures.append((int(peak_file.read_text()) / 1024, seconds))
    (loud_mib, loud_s), (quiet_mib, _) = figures
    return [("runner peak RSS, trial printing 1 GiB + marker", f"{loud_mib:.0f} MiB",
             f"{quiet_mib:.0f} MiB (trial printing one line)",
             f"+{loud_mib - quiet_mib:.0f} MiB; run took {loud_s:.1f} s")]


def bench_overhead(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """100 cases x 5 trials of `true`, next to a plain loop spawning `true` 500 times."""
    root = skill_dir(work / "overhead")
    cases = [{"name": f"true-{i}", "type": "positive", "command": ["true"],
              "expected": {"exit_code": 0}} for i in range(100)]
    fixture = write_fixture(root / "fixtures" / "agentic_eval.json", cases, trials=5,
                            kind="runner_selftest")
    loop = root / "spawn_loop.py"
    loop.write_text("import subprocess\nfor _ in range(500):\n"
                    "    subprocess.run(['true'], start_new_session=True, check=True)\n")
    repeat = 1 if quick else 3
    ours = median_of(repeat, lambda: timed([*PYTEST, "--agentic-evals", str(fixture)], root))
    baseline = median_of(repeat, lambda: timed([sys.executable, str(loop)], root))
    per_trial = (ours - baseline) / 500 * 1000
    return [("100 cases x 5 trials of `true` (wall)", f"{ours:.2f} s",
             f"{baseline:.2f} s (Python loop spawning `true` 500x)",
             f"{ours / baseline:.1f}x; +{per_trial:.1f} ms per trial")]


def bench_audit_skills(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """`audit-skills` over 5,000 skills, next to `find ROOT -name SKILL.md` on the same tree."""
    root = work / "skill-tree"
    valid = {"version": 2, "skill": "s", "trials": 2, "eval_kind": "scaffold", "cases": [
        {"name": "sanity", "type": "positive", "command": ["bash", "../sanity.sh"],
         "expected": {"exit_code": 0}}]}
    for i in range(5_000):
        # 50 categories of 100 skills, in a realistic mix: an entrypoint on most, a fixture
        # on one in ten, a foreign eval on one in twenty, a broken frontmatter on one in fifty.
        skill = root / f"category-{i // 100}" / f"group-{i % 10}" / f"skill-{i}"
        (skill / "scripts").mkdir(parents=True)
        name = f"skill-{i}" if i % 50 else "[broken"
        (skill / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: skill number {i}\ntriggers: [a, b]\n"
            f"allowed-tools: [Bash, Read]\nmetadata:\n  owner: team-{i % 7}\n---\n# body\n")
        (skill / "scripts" / "tool.py").write_text("print('x')\n")
        if i % 4:
            (skill / "run.sh").write_text("#!/bin/sh\nexit 0\n")
        if i % 10 == 0:
            write_fixture(skill / "fixtures" / "agentic_eval.json", valid["cases"], 2,
                          kind="scaffold")
        if i % 20 == 5:
            (skill / "evals").mkdir()
            (skill / "evals" / "evals.json").write_text("[]")
    for skipped in ("node_modules/pkg", ".git/objects", ".venv/lib"):
        (root / skipped).mkdir(parents=True)
    repeat = 3 if quick else 5
    command = [str(Path(sys.executable).parent / "agentic-evals"), "audit-skills", str(root),
               "--output", str(work / "audit.json")]
    ours = median_of(repeat, lambda: timed(command, root))
    baseline = median_of(repeat, lambda: timed(["find", str(root), "-name", "SKILL.md"], root))
    audited = json.loads((work / "audit.json").read_text())["summary"]["skills"]
    return [(f"audit-skills over {audited:,} skills (wall, whole command)", f"{ours:.2f} s",
             f"{baseline:.2f} s (find ROOT -name SKILL.md)", f"{ours / baseline:.1f}x")]


def bench_coverage_audit(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """`coverage audit` over 2,000 skills declaring seams, next to `audit-skills` on the tree."""
    root = work / "coverage-tree"
    greet = "#!/bin/sh\nif [ -z \"$1\" ]; then echo 'error: name required' >&2; exit 2; fi\n" \
            "echo \"hello, $1\"\n"
    for i in range(2_000):
        skill = skill_dir(root / f"category-{i // 100}" / f"skill-{i}")
        (skill / "run.sh").write_text(greet)
        (skill / "SKILL.md").write_text(f"---\nname: skill-{i}\ndescription: greets {i}\n---\n")
        # Three seams: a critical one capably guarded, an important one guarded only by bare
        # exit-0 cases on one skill in three (weak_only: a GAP, not a critical one), and an
        # optional one requiring a live proof that only a downgraded pseudo-live case claims.
        cases = [
            {"name": "greets", "type": "positive", "real_world": True, "seams": ["routing"],
             "command": ["sh", "../run.sh", "Ada"],
             "expected": {"exit_code": 0, "stdout_contains": ["hello, Ada"]}},
            {"name": "refuses-empty", "type": "negative", "seams": ["routing", "input"],
             "command": ["sh", "../run.sh", ""],
             "expected": {"exit_code": 2, "stderr_contains": ["name required"]}},
            {"name": "pseudo-live", "type": "positive", "evidence_class": "live_e2e",
             "seams": ["live-path"], "command": ["sh", "../run.sh", "Bo"],
             "expected": {"exit_code": 0, "stdout_contains": ["hello, Bo"]}},
        ] + [{"name": f"smoke-{n}", "type": "positive", "seams": ["input"] if i % 3 else [],
              "command": ["sh", "../run.sh", f"x{n}"], "expected": {"exit_code": 0}}
             for n in range(5)]
        fixture = {"version": 2, "skill": f"skill-{i}", "trials": 2, "cases": cases, "seams": [
            {"seam_id": "routing", "seam_type": "router", "criticality": "critical",
             "required_evidence": ["deterministic"]},
            {"seam_id": "input", "seam_type": "parser", "criticality": "important"},
            {"seam_id": "live-path", "seam_type": "boundary", "criticality": "optional",
             "required_evidence": ["live_e2e"]}]}
        (skill / "fixtures").mkdir()
        (skill / "fixtures" / "agentic_eval.json").write_text(json.dumps(fixture))
    repeat = 3 if quick else 5
    executable = str(Path(sys.executable).parent / "agentic-evals")
    command = [executable, "coverage", "audit", str(root), "--output", str(work / "cov.json")]
    ours = median_of(repeat, lambda: timed(command, root))
    baseline = median_of(repeat, lambda: timed([executable, "audit-skills", str(root)], root))
    report = json.loads((work / "cov.json").read_text())
    seams = report["summary"]["seams"]
    return [(f"coverage audit over {report['summary']['skills']:,} skills, {seams:,} seams "
             f"(wall, whole command; verdict {report['verdict']})", f"{ours:.2f} s",
             f"{baseline:.2f} s (audit-skills ROOT)", f"{ours / baseline:.1f}x")]


BENCHMARKS = {"collection": bench_collection, "memory": bench_memory, "overhead": bench_overhead,
              "skills": bench_audit_skills, "coverage": bench_coverage_audit}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"benchmarks to run: {', '.join(BENCHMARKS)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    names = args.names or list(BENCHMARKS)
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    print(f"# pytest-agentic-evals benchmarks, {time.strftime('%Y-%m-%d')}, "
          f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print("| benchmark | ours | baseline | ratio |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="agentic-evals-bench-") as scratch:
        for name in names:
            for row in BENCHMARKS[name](Path(scratch), args.quick):
                print("| " + " | ".join(row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
