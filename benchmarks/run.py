"""Benchmarks of pytest-agentic-evals, each measured side by side with a baseline in one run.

These machines are noisy: every figure is the median of several repetitions, and each is
printed next to its baseline and the ratio between them. Nothing here is a test; run it on
demand:

    python benchmarks/run.py            # every benchmark
    python benchmarks/run.py --quick    # one repetition, smaller sizes: a check, not figures
    python benchmarks/run.py collection memory overhead   # a selection
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from collectmany import bench_collect_many
from common import (
    AGENTIC_EVALS,
    BASE_ENV,
    PEAK_RSS_PLUGIN,
    PYTEST,
    UNSANDBOXED,
    median_of,
    skill_dir,
    timed,
    write_fixture,
)
from isolation import bench_isolation_size, bench_overlay_mount
from memory import bench_trial_memory
from pertrial import bench_per_trial
from scheduling import bench_ordering, bench_stop
from startup import bench_startup


def bench_collection(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """Collecting 10,000 cases x 3 trials, next to pytest collecting 30,000 parametrized tests."""
    cases_count = 2_000 if quick else 10_000
    root = skill_dir(work / "collection")
    cases = [{"name": f"case-{i}", "type": "negative" if i % 2 else "positive",
              "real_world": i == 0, "command": ["../run.sh", str(i)],
              "expected": {"exit_code": 0, "stdout_contains": [f"item {i}"]}}
             for i in range(cases_count)]
    fixture = write_fixture(root / "fixtures" / "agentic_eval.json", cases, trials=3)
    plain = root / "test_plain.py"
    plain.write_text(f"import pytest\n\n@pytest.mark.parametrize('n', range({cases_count * 3}))\n"
                     "def test_plain(n):\n    pass\n")
    repeat = 1 if quick else 3
    ours = median_of(repeat, lambda: timed(
        [*PYTEST, *AGENTIC_EVALS, "--collect-only", str(fixture)], root))
    baseline = median_of(repeat, lambda: timed([*PYTEST, "--collect-only", str(plain)], root))
    return [(f"collect {cases_count:,} cases x 3 trials ({cases_count * 3:,} items)",
             f"{ours:.2f} s", f"{baseline:.2f} s (plain pytest, {cases_count * 3:,} parametrized)",
             f"{ours / baseline:.2f}x")]


def bench_memory(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """Peak RSS of the runner while a trial prints 1 GiB, next to a trial printing nothing."""
    size = 256 * 1024**2 if quick else 1024**3
    root = work / "memory"
    root.mkdir(parents=True, exist_ok=True)
    (root / "conftest.py").write_text(PEAK_RSS_PLUGIN)
    loud = ["bash", "-c", f"head -c {size} /dev/zero | tr '\\0' x; echo END-OF-STREAM-MARKER"]
    quiet = ["bash", "-c", "echo END-OF-STREAM-MARKER"]
    figures = []
    for label, command in (("loud", loud), ("quiet", quiet)):
        fixture = write_fixture(root / label.replace(" ", "") / "agentic_eval.json", [
            {"name": "prints", "type": "positive", "command": command, "timeout_seconds": 600,
             "expected": {"exit_code": 0, "stdout_contains": ["END-OF-STREAM-MARKER"],
                          "stdout_excludes": ["never printed"]}}
        ], trials=1, kind="runner_selftest")
        peak_file = root / f"peak-{label}.txt"
        env = {**BASE_ENV, "PEAK_RSS_FILE": str(peak_file)}
        seconds = timed([*PYTEST, *AGENTIC_EVALS, "--rootdir", str(root), "-c",
                         os.devnull, str(fixture)], root, env)
        figures.append((int(peak_file.read_text()) / 1024, seconds))
    (loud_mib, loud_s), (quiet_mib, _) = figures
    return [(f"runner peak RSS, trial printing {size // 1024**2:,} MiB + marker",
             f"{loud_mib:.0f} MiB",
             f"{quiet_mib:.0f} MiB (trial printing one line)",
             f"+{loud_mib - quiet_mib:.0f} MiB; run took {loud_s:.1f} s")]


def bench_overhead(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """100 cases x 5 trials of `true`, next to a plain pytest file and a plain spawning loop.

    The marginal cost per trial is the slope between 1 and 5 trials per case (so start-up and
    collection cancel out), minus the cost of one raw spawn.
    """
    root = skill_dir(work / "overhead")
    cases = [{"name": f"true-{i}", "type": "positive", "command": ["true"],
              "expected": {"exit_code": 0}} for i in range(100)]
    five = write_fixture(root / "five" / "agentic_eval.json", cases, trials=5,
                         kind="runner_selftest")
    one = write_fixture(root / "one" / "agentic_eval.json", cases, trials=1,
                        kind="runner_selftest")
    plain = root / "test_plain.py"
    plain.write_text("import subprocess\nimport pytest\n\n"
                     "@pytest.mark.parametrize('n', range(500))\ndef test_spawn(n):\n"
                     "    subprocess.run(['true'], start_new_session=True, check=True)\n")
    loop = root / "spawn_loop.py"
    loop.write_text("import subprocess, sys\nfor _ in range(int(sys.argv[1])):\n"
                    "    subprocess.run(['true'], start_new_session=True, check=True)\n")
    repeat = 1 if quick else 3
    # The runner's own cost: the sandbox's is measured by bench_sandbox.
    ours = median_of(repeat, lambda: timed([*PYTEST, *UNSANDBOXED, str(five)], root))
    ours_one = median_of(repeat, lambda: timed([*PYTEST, *UNSANDBOXED, str(one)], root))
    pytest_file = median_of(repeat, lambda: timed([*PYTEST, str(plain)], root))
    loop_500 = median_of(repeat, lambda: timed([sys.executable, str(loop), "500"], root))
    loop_100 = median_of(repeat, lambda: timed([sys.executable, str(loop), "100"], root))
    spawn_ms = (loop_500 - loop_100) / 400 * 1000
    trial_ms = (ours - ours_one) / 400 * 1000
    return [
        ("100 cases x 5 trials of `true` (wall)", f"{ours:.2f} s",
         f"{pytest_file:.2f} s (plain pytest file, 500 tests spawning `true`)",
         f"{ours / pytest_file:.2f}x (target <= 1.5x)"),
        ("the same, next to a Python loop spawning `true` 500 times", f"{ours:.2f} s",
         f"{loop_500:.2f} s (loop)", f"{ours / loop_500:.1f}x"),
        ("marginal cost per trial (slope 1 -> 5 trials per case)", f"{trial_ms:.2f} ms",
         f"{spawn_ms:.2f} ms (one raw spawn, slope 100 -> 500)",
         f"+{trial_ms - spawn_ms:.2f} ms (target <= 2 ms)"),
    ]


def bench_parallel(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """80 trials of `sleep 0.5` serially and with -n 2, 4 and 8 (whole wall, worker start-up
    included)."""
    seconds = "0.1" if quick else "0.5"
    root = skill_dir(work / "parallel")
    cases = [{"name": f"sleep-{i}", "type": "positive", "command": ["sleep", seconds],
              "expected": {"exit_code": 0}} for i in range(16)]
    fixture = write_fixture(root / "fixtures" / "agentic_eval.json", cases, trials=5,
                            kind="runner_selftest")
    serial = timed([*PYTEST, "-p", "no:xdist", *AGENTIC_EVALS, str(fixture)], root)
    rows = []
    for workers in (2, 8) if quick else (2, 4, 8):
        wall = timed([*PYTEST, *AGENTIC_EVALS, "-n", str(workers), str(fixture)], root)
        target = {2: 1.8, 8: 6.0}.get(workers)
        rows.append((f"80 trials of `sleep {seconds}` with -n {workers} (wall)", f"{wall:.2f} s",
                     f"{serial:.2f} s (serial)",
                     f"{serial / wall:.2f}x speed-up"
                     + (f" (target >= {target:g}x)" if target else "")))
    # What bounds the speed-up on a machine with few cores: starting eight workers (each an
    # interpreter importing pytest and its plugins, then collecting) competes for the cores.
    instant = write_fixture(root / "instant" / "agentic_eval.json",
                            [{**case, "command": ["true"]} for case in cases], trials=5,
                            kind="runner_selftest")
    startup = timed([*PYTEST, *AGENTIC_EVALS, "-n", "8", str(instant)], root)
    rows.append(("the same 80 trials with -n 8, running `true` instead of sleeping",
                 f"{startup:.2f} s", f"{os.cpu_count()} cores",
                 "worker start-up and per-trial work, without the sleeps"))
    return rows


REPORT_SCRIPT = """
import json, sys, time
from pathlib import Path
from pytest_agentic_evals.jsonio import write_json_atomically
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.report import build_fixture_report, session_report
from pytest_agentic_evals.summary import markdown

fixture = load_fixture(sys.argv[1], accept_exemptions=True)
template = json.loads(Path(sys.argv[2]).read_text())
trials = fixture.trials
results = {}
for case in fixture.cases:
    for trial in range(1, trials + 1):
        results[(case.name, trial)] = {**template, "trial": trial}
selected = {case.name: list(range(1, trials + 1)) for case in fixture.cases}
out = Path(sys.argv[3])
started = time.perf_counter()
report = session_report([build_fixture_report(fixture, results, selected, run_id="bench",
                                              trial_count=trials)])
write_json_atomically(out / "report.json", report)
(out / "summary.md").write_text(markdown(report))
ours = time.perf_counter() - started
started = time.perf_counter()
(out / "raw.json").write_text(json.dumps(list(results.values()), indent=2))
baseline = time.perf_counter() - started
print(json.dumps({"ours": ours, "baseline": baseline, "trials": len(results),
                  "bytes": (out / "report.json").stat().st_size}))
"""


def bench_report(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """Building and writing the report of 100,000 trials (10,000 cases x 10), next to dumping
    the same trial results as JSON."""
    root = skill_dir(work / "report")
    cases = [{"name": f"case-{i}", "type": "negative" if i % 2 else "positive",
              "real_world": i == 0, "command": ["true"],
              "expected": {"exit_code": 0, "stdout_contains": ["ok"]}}
             for i in range(2_000 if quick else 10_000)]
    fixture = write_fixture(root / "fixtures" / "agentic_eval.json", cases, trials=10,
                            kind="runner_selftest")
    # One real trial result, run by the real runner, is the template of all 100,000.
    template_fixture = write_fixture(root / "template" / "agentic_eval.json", [
        {"name": "prints", "type": "positive", "command": ["echo", "ok"],
         "expected": {"exit_code": 0, "stdout_contains": ["ok"]}}], trials=1,
        kind="runner_selftest")
    report_path = root / "template-report.json"
    timed([*PYTEST, *AGENTIC_EVALS, "--agentic-evals-report", str(report_path),
           str(template_fixture)], root)
    template = json.loads(report_path.read_text())["cases"][0]["trials"][0]
    (root / "template.json").write_text(json.dumps(template))
    figures = []
    for _ in range(1 if quick else 3):
        output = subprocess.run([sys.executable, "-c", REPORT_SCRIPT, str(fixture),
                                 str(root / "template.json"), str(root)],
                                capture_output=True, text=True, check=True).stdout
        figures.append(json.loads(output))
    ours = statistics.median(f["ours"] for f in figures)
    baseline = statistics.median(f["baseline"] for f in figures)
    size = figures[0]["bytes"] / 2**20
    return [(f"report of {figures[0]['trials']:,} trials: build, write JSON ({size:.0f} MiB) "
             "and Markdown", f"{ours:.2f} s",
             f"{baseline:.2f} s (json.dumps(indent=2) of the bare trial results)",
             f"{ours / baseline:.1f}x (target < 5 s)")]


WORKSPACE_CASES = {
    "reads": ["sh", "-c", "test -s ../d0/f0.bin"],
    "writes": ["sh", "-c", "test -s ../d0/f0.bin && echo x > ../out.txt"],
}


def bench_workspace(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """Isolation cost per trial for a skill of 200 files / 20 MB: trials in private workspaces
    next to the same trials run in place (no isolation).

    The first trial of a skill in each worker pays for one full copy; later trials take over
    the previous trial's directory once what it changed is undone. The cost of a later trial
    is the slope between a short and a long run, so the first copy cancels out; the full copy
    is timed on its own (shutil.copytree of the same folder).
    """
    root = skill_dir(work / "workspace")
    for i in range(200):
        folder = root / f"d{i % 10}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.bin").write_bytes(os.urandom(100 * 1024))
    short, long = (2, 10) if quick else (4, 44)
    repeat = 1 if quick else 3
    rows = []
    for label, command in WORKSPACE_CASES.items():
        walls = {}
        for mode in ("copy", "inplace"):
            for trials in (short, long):
                cases = [{"name": f"{label}-{i}", "type": "positive", "command": command,
                          "workspace": mode, "expected": {"exit_code": 0}} for i in range(5)]
                fixture = write_fixture(root / "fixtures" / f"{label}-{mode}-{trials}.json",
                                        cases, trials=trials, kind="runner_selftest")
                walls[mode, trials] = median_of(repeat, lambda f=fixture: timed(
                    [*PYTEST, *UNSANDBOXED, "-p", "no:xdist", str(f)], root))
        added = 5 * (long - short)
        copy_slope = (walls["copy", long] - walls["copy", short]) / added * 1000
        inplace_slope = (walls["inplace", long] - walls["inplace", short]) / added * 1000
        rows.append((f"isolating a 200-file / 20 MB skill, each trial after the first, trial "
                     f"that {label}", f"{copy_slope:.1f} ms per trial",
                     f"{inplace_slope:.1f} ms per trial in place (no isolation)",
                     f"+{copy_slope - inplace_slope:.1f} ms per trial (target < 5 ms)"))

    def full_copy() -> float:
        target = work / "workspace-copy"
        started = time.perf_counter()
        shutil.copytree(root, target, symlinks=True)
        elapsed = time.perf_counter() - started
        shutil.rmtree(target)
        return elapsed

    first = median_of(repeat, full_copy)
    rows.append(("isolating the same skill, first trial per worker: one full copy",
                 f"{first * 1000:.0f} ms", "-", "paid once per skill and worker"))
    return rows


def bench_sandbox(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """The sandbox's cost per trial: the same trials with it and with `sandbox: off`.

    Per trial, as the slope between a short and a long run (start-up and collection cancel
    out), for `true` in the default network mode and for a trial that reads a skill of 200
    files / 20 MB from its private copy. Then the same without pytest: run_confined next to
    run_process, one `true` each, alternating.
    """
    root = skill_dir(work / "sandbox")
    for i in range(200):
        folder = root / f"d{i % 10}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.bin").write_bytes(os.urandom(100 * 1024))
    short, long = (2, 10) if quick else (4, 44)
    repeat = 1 if quick else 3
    rows = []
    for label, command in (("`true`", ["true"]),
                           ("that reads the 200-file skill", WORKSPACE_CASES["reads"])):
        fixtures = {}
        for trials in (short, long):
            cases = [{"name": f"case-{i}", "type": "positive", "command": command,
                      "expected": {"exit_code": 0}} for i in range(5)]
            fixtures[trials] = write_fixture(root / "fixtures" / f"{len(rows)}-{trials}.json",
                                             cases, trials=trials, kind="runner_selftest")
        # Interleaved (sandboxed, then not, at each size and repetition), so that a change in
        # the machine's load weighs on both sides alike.
        timings: dict[tuple[str, int], list[float]] = {}
        for _ in range(repeat):
            for trials in (short, long):
                for mode in ("auto", "off"):
                    timings.setdefault((mode, trials), []).append(timed(
                        [*PYTEST, *AGENTIC_EVALS, "--agentic-evals-sandbox", mode,
                         "-p", "no:xdist", str(fixtures[trials])], root))
        slopes = {}
        for mode in ("auto", "off"):
            walls = {trials: statistics.median(timings[mode, trials]) for trials in (short, long)}
            slopes[mode] = (walls[long] - walls[short]) / (5 * (long - short)) * 1000
        rows.append((f"sandbox, per trial, trial running {label}",
                     f"{slopes['auto']:.1f} ms per trial",
                     f"{slopes['off']:.1f} ms per trial with sandbox: off",
                     f"+{slopes['auto'] - slopes['off']:.1f} ms per trial, "
                     f"{slopes['auto'] / slopes['off']:.2f}x (target < +5 ms)"))
    rows += _network_modes(root, short, long, repeat)
    script = work / "sandbox_calls.py"
    script.write_text(SANDBOX_CALLS)
    result = subprocess.run([sys.executable, str(script), str(work / "calls"),
                             "50" if quick else "300"], capture_output=True, text=True,
                            check=True, env=BASE_ENV, stdin=subprocess.DEVNULL)
    proxied, relayed, confined, plain = (float(x) for x in result.stdout.split())
    rows.append(("sandbox, one `true`, run_confined next to run_process (median of calls)",
                 f"{confined:.2f} ms", f"{plain:.2f} ms (run_process)",
                 f"+{confined - plain:.2f} ms, {confined / plain:.2f}x"))
    rows.append(("sandbox, one `true` in network proxy (proxy served on the sandbox's loopback) "
                 "next to none", f"{proxied:.2f} ms", f"{confined:.2f} ms (network none)",
                 f"+{proxied - confined:.2f} ms, {proxied / confined:.2f}x"))
    rows.append(("sandbox, one `true` in network proxy through the relay (where the runner "
                 "cannot enter the namespace) next to none", f"{relayed:.2f} ms",
                 f"{confined:.2f} ms (network none)",
                 f"+{relayed - confined:.2f} ms, {relayed / confined:.2f}x"))
    return rows


def _network_modes(root: Path, short: int, long: int,
                   repeat: int) -> list[tuple[str, str, str, str]]:
    """Per trial of `true`: network proxy (the default), network host and sandbox off, side by
    side in one run, as slopes between a short and a long run."""
    fixtures: dict[tuple[str, int], Path] = {}
    for network in ("proxy", "host"):
        for trials in (short, long):
            cases = [{"name": f"case-{i}", "type": "positive", "command": ["true"],
                      "network": network, "expected": {"exit_code": 0}} for i in range(5)]
            fixtures[network, trials] = write_fixture(
                root / "fixtures" / f"net-{network}-{trials}.json", cases, trials=trials,
                kind="runner_selftest")
    variants = {"proxy": ("auto", "proxy"), "host": ("auto", "host"), "off": ("off", "proxy")}
    timings: dict[tuple[str, int], list[float]] = {}
    for _ in range(repeat):
        for trials in (short, long):
            for name, (mode, network) in variants.items():
                timings.setdefault((name, trials), []).append(timed(
                    [*PYTEST, *AGENTIC_EVALS, "--agentic-evals-sandbox", mode,
                     "-p", "no:xdist", str(fixtures[network, trials])], root))
    slopes = {}
    for name in variants:
        walls = {trials: statistics.median(timings[name, trials]) for trials in (short, long)}
        slopes[name] = (walls[long] - walls[short]) / (5 * (long - short)) * 1000
    return [("sandbox network, per trial of `true`: proxy, host, sandbox off",
             f"{slopes['proxy']:.1f} ms (proxy)",
             f"{slopes['host']:.1f} ms (host), {slopes['off']:.1f} ms (off)",
             f"proxy +{slopes['proxy'] - slopes['host']:.1f} ms over host, "
             f"+{slopes['proxy'] - slopes['off']:.1f} ms over off")]


# Times run_confined in network mode proxy (the domain proxy served on a socket made on the
# sandbox's loopback, and, for comparison, through the relay to a Unix socket that is used where
# the runner cannot make one there), run_confined in network mode none, and run_process, on
# `true`, alternating, and prints the four medians in ms.
SANDBOX_CALLS = """
import os, statistics, sys, time
from pathlib import Path
from pytest_agentic_evals.execution.confined import run_confined
from pytest_agentic_evals.execution.netns import listen_inside
from pytest_agentic_evals.execution.process import run_process
from pytest_agentic_evals.execution.sandbox import (
    PROXY_PORT, MountPlan, available_bwrap, runner_installation)
from pytest_agentic_evals.expectations.domains import DomainPolicy
from pytest_agentic_evals.expectations.proxy import DomainProxy

class Bridge:
    def __init__(self, proxy, socket_path, inside):
        self.proxy, self.socket_path, self.inside = proxy, socket_path, inside
        self.port = PROXY_PORT
    def attach(self, init_pid):
        if self.inside:
            self.proxy.serve(listen_inside(init_pid, self.port), self.port)
            return True
        self.proxy.start(str(self.socket_path), self.port)
        return False

base, count = Path(sys.argv[1]), int(sys.argv[2])
for name in ("workspace", "scratch", "proxy"):
    (base / name).mkdir(parents=True, exist_ok=True)
bwrap = available_bwrap()
if bwrap.problem:
    raise SystemExit(bwrap.problem)
plan = MountPlan(workspace=base / "workspace", scratch=base / "scratch",
                 cwd=base / "workspace", network="none")
proxy_plan = MountPlan(workspace=base / "workspace", scratch=base / "scratch",
                       cwd=base / "workspace", network="proxy",
                       readable=(base / "proxy", *runner_installation()))  # the relay's python
env = dict(os.environ)
times = {"proxy": [], "relayed": [], "confined": [], "plain": []}
for _ in range(count):
    for kind in times:
        started = time.perf_counter()
        if kind in ("proxy", "relayed"):
            proxy = DomainProxy(DomainPolicy(allowed=None))
            try:
                done = run_confined(["true"], cwd=base / "workspace", env=env, timeout=30,
                                    output_dir=base / "out", plan=proxy_plan, bwrap=bwrap.path,
                                    bridge=Bridge(proxy, base / "proxy" / "s", kind == "proxy"))
            finally:
                proxy.stop()
                if kind == "relayed":
                    os.unlink(base / "proxy" / "s")
        elif kind == "confined":
            done = run_confined(["true"], cwd=base / "workspace", env=env, timeout=30,
                                output_dir=base / "out", plan=plan, bwrap=bwrap.path)
        else:
            done = run_process(["true"], cwd=base / "workspace", env=env, timeout=30,
                               output_dir=base / "out")
        times[kind].append((time.perf_counter() - started) * 1000)
        if done.exit_code != 0:  # a sandbox that failed early would look fast
            raise SystemExit(f"{kind}: {done.setup_error or done.start_error or done.exit_code}")
print(*(statistics.median(times[kind]) for kind in times))
"""


def bench_audit_skills(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """`audit-skills` over 5,000 skills, next to `find ROOT -name SKILL.md` on the same tree."""
    root = work / "skill-tree"
    valid = {"version": 2, "skill": "s", "trials": 2, "eval_kind": "scaffold", "cases": [
        {"name": "sanity", "type": "positive", "command": ["bash", "../sanity.sh"],
         "expected": {"exit_code": 0}}]}
    for i in range(1_000 if quick else 5_000):
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
    repeat = 1 if quick else 3
    command = [str(Path(sys.executable).parent / "agentic-evals"), "audit-skills", str(root),
               "--output", str(work / "audit.json")]
    ours = median_of(repeat, lambda: timed(command, root))
    baseline = median_of(repeat, lambda: timed(["find", str(root), "-name", "SKILL.md"], root))
    audited = json.loads((work / "audit.json").read_text())["summary"]["skills"]
    return [(f"audit-skills over {audited:,} skills (wall, whole command)", f"{ours:.2f} s",
             f"{baseline:.2f} s (find ROOT -name SKILL.md)", f"{ours / baseline:.1f}x")]


def bench_coverage_audit(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """`coverage audit` over 5,000 skills declaring seams, next to `audit-skills` on the tree."""
    root = work / "coverage-tree"
    greet = "#!/bin/sh\nif [ -z \"$1\" ]; then echo 'error: name required' >&2; exit 2; fi\n" \
            "echo \"hello, $1\"\n"
    for i in range(1_000 if quick else 5_000):
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
    repeat = 1 if quick else 3
    executable = str(Path(sys.executable).parent / "agentic-evals")
    command = [executable, "coverage", "audit", str(root), "--output", str(work / "cov.json")]
    ours = median_of(repeat, lambda: timed(command, root))
    baseline = median_of(repeat, lambda: timed([executable, "audit-skills", str(root)], root))
    report = json.loads((work / "cov.json").read_text())
    seams = report["summary"]["seams"]
    return [(f"coverage audit over {report['summary']['skills']:,} skills, {seams:,} seams "
             f"(wall, whole command; verdict {report['verdict']})", f"{ours:.2f} s",
             f"{baseline:.2f} s (audit-skills ROOT)", f"{ours / baseline:.1f}x")]


def _journey_inputs(root: Path, seed: int, local: float) -> list[str]:
    """A discovered application of 10,000 states and 50,000 transitions, with 1,000
    requirements; returns the plan-journeys arguments.

    Every state has its navigation controls (one per outgoing transition) and three inputs;
    one input in 50 is disabled; the last 100 states have no way in. A requirement is a walk
    of 3 to 6 actions: with probability ``local`` the next action is on a control near where
    the walk stands (a real user flow), else on a control of a random state (a long route
    through the graph)."""
    import random

    rng = random.Random(seed)
    states, transitions_wanted, unreachable = 10_000, 50_000, 100
    reachable = states - unreachable
    edges: list[tuple[int, int]] = [(rng.randrange(i), i) for i in range(1, reachable)]
    edges += [(reachable + rng.randrange(unreachable), rng.randrange(states))
              for _ in range(unreachable)]
    while len(edges) < transitions_wanted:
        edges.append((rng.randrange(states), rng.randrange(states)))
    out: list[list[tuple[str, int]]] = [[] for _ in range(states)]
    transitions = []
    for source, target in edges:
        qid = f"s{source}.nav{len(out[source])}"
        out[source].append((qid, target))
        transitions.append({"from": f"s{source}", "to": f"s{target}", "action": "click",
                            "qid": qid})
    inventory = []
    for state in range(states):
        controls = [{"qid": qid, "tag": "a", "visible": True, "enabled": True}
                    for qid, _ in out[state]]
        controls += [{"qid": f"s{state}.input{k}", "tag": "input", "visible": True,
                      "enabled": rng.random() > 0.02} for k in range(3)]
        inventory.append({"state": f"s{state}", "interactives": controls})
    claims = [{"id": f"claim-{n}", "criticality": "important",
               "evidence_required": ["deterministic"]} for n in range(60)]
    requirements = []
    for n in range(1_000):
        state = rng.randrange(states)
        actions = []
        for _ in range(rng.randint(3, 6)):
            if rng.random() > local:
                state = rng.randrange(states)
            if out[state] and rng.random() < 0.6:
                qid, state = rng.choice(out[state])
                actions.append({"kind": "ui", "qid": qid, "action": "click"})
            else:
                actions.append({"kind": "ui", "qid": f"s{state}.input{rng.randrange(3)}",
                                "action": "fill", "value": "x"})
        requirements.append({
            "id": f"req-{n}", "criticality": "important",
            "capability_claims": [f"claim-{n % 50}"],
            "journey": {"actions": actions, "oracles": [{
                "description": "checks the outcome", "failing_capable": n % 7 != 0,
                "expected": {"stdout_contains": [f"order {n}"]}}]}})
    root.mkdir(parents=True, exist_ok=True)
    fixture = {"version": 2, "skill": "shop", "trials": 2, "eval_kind": "runner_selftest",
               "capability_claims": claims, "cases": [
                   {"name": "smoke", "type": "negative", "command": ["false"],
                    "expected": {"exit_code": 1}}]}
    files = {"agentic_eval.json": fixture,
             "requirements.json": {"schema": "agentic_evals.requirements.v1",
                                   "driver": {"command": ["python3", "drive.py"]},
                                   "requirements": requirements},
             "discovery-inventory.json": {"run_id": "bench", "inventory": inventory},
             "state-graph.json": {"initial_state": "s0", "states": [
                 {"id": f"s{i}"} for i in range(states)], "transitions": transitions}}
    for name, data in files.items():
        (root / name).write_text(json.dumps(data))
    return ["--fixture", "agentic_eval.json", "--requirements", "requirements.json",
            "--interaction-inventory", "discovery-inventory.json",
            "--state-graph", "state-graph.json", "--output", "plan.json",
            "--scaffold-output", "scaffold.json", "--report-only"]


def bench_plan_journeys(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """`plan-journeys` over 10,000 states, 50,000 transitions and 1,000 requirements, next to
    a Python process that only decodes the same four JSON files."""
    executable = str(Path(sys.executable).parent / "agentic-evals")
    load = ("import json, sys\nfor name in sys.argv[1:]:\n"
            "    with open(name, 'rb') as f: json.load(f)\n")
    names = ["agentic_eval.json", "requirements.json", "discovery-inventory.json",
             "state-graph.json"]
    repeat = 1 if quick else 3
    rows = []
    variants = (("user-flow journeys", 0.9), ("random long routes", 0.0))
    for label, local in variants[:1] if quick else variants:
        root = work / "journeys" / label.replace(" ", "-")
        args = _journey_inputs(root, seed=7, local=local)
        command = [executable, "plan-journeys", *args]
        decode = [sys.executable, "-c", load, *names]
        ours = median_of(repeat, lambda c=command, r=root: timed(c, r))  # type: ignore[misc]
        baseline = median_of(repeat, lambda c=decode, r=root: timed(c, r))  # type: ignore[misc]
        summary = json.loads((root / "plan.json").read_text())["summary"]
        rows.append((f"plan-journeys, 10,000 states / 50,000 transitions / 1,000 requirements, "
                     f"{label} (wall, whole command; {summary['bound']} BOUND)",
                     f"{ours:.2f} s", f"{baseline:.2f} s (python: json.load of the 4 inputs)",
                     f"{ours / baseline:.1f}x"))
    return rows


PROBE_SKILL = """#!/bin/sh
# Doubles the number in the file $1 into the file $2.
[ -r "$1" ] || { echo "error: unreadable input" >&2; exit 1; }
echo $(( $(cat "$1") * 2 )) > "$2"
"""


def doubler_fixture(root: Path, name: str, count: int, trials: int,
                    optional: bool = False) -> Path:
    """A fixture of ``count`` cases of the doubler skill in ``root`` (made on first use):
    doubling cases and one refusal; ``optional``: every doubling case but the real-world one
    is optional."""
    if not (root / "run.sh").exists():
        root.mkdir(parents=True, exist_ok=True)
        (root / "run.sh").write_text(PROBE_SKILL)
        (root / "run.sh").chmod(0o755)
    cases = [{"name": f"doubles-{i}", "type": "positive", "real_world": i == 0,
              "required": i == 0 or not optional,
              "command": ["sh", "run.sh", "in.txt", "out.txt"],
              "artifacts": [{"path": "in.txt", "content": f"{i}\n"}],
              "expected": {"exit_code": 0,
                           "artifacts": [{"path": "out.txt", "equals": f"{2 * i}\n"}]}}
             for i in range(count - 1)]
    cases.append({"name": "refuses-missing-input", "type": "negative",
                  "command": ["sh", "run.sh", "missing.txt", "out.txt"],
                  "expected": {"exit_code": 1, "stderr_contains": ["unreadable input"]}})
    path = root / name
    path.write_text(json.dumps({"version": 2, "skill": "doubler", "trials": trials,
                                "cases": cases}))
    return path


def bench_probe(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """Probing a 50-case fixture (five stand-ins per case, one real run per replayed case)
    next to one plain `agentic-evals run` of it (two trials per case), both sandboxed as by
    default, interleaved so that the machine's load weighs on both alike."""
    root = work / "probe"
    count = 10 if quick else 50
    fixture = doubler_fixture(root, "agentic_eval.json", count, trials=2)
    cli = str(Path(sys.executable).parent / "agentic-evals")
    timings: dict[str, list[float]] = {"probe": [], "run": []}
    for _ in range(1 if quick else 3):
        timings["probe"].append(timed([cli, "probe", str(fixture), "--no-store"], root))
        timings["run"].append(timed([cli, "run", str(fixture)], root))
    probe, run = (statistics.median(timings[k]) for k in ("probe", "run"))
    return [(f"probe of a {count}-case fixture (5 stand-ins per case) vs one plain run "
             "(2 trials per case)", f"{probe:.1f} s", f"{run:.1f} s", f"{probe / run:.2f}x")]


def bench_control(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """What the control costs a run: a 50-case fixture whose cases are all required (each
    first trial is played once more against the ``contrary`` stand-in) next to the same
    fixture with all but two cases optional (two controls), three trials per case, sandboxed
    as by default, interleaved."""
    root = work / "control"
    count = 10 if quick else 50
    controlled = doubler_fixture(root, "agentic_eval.json", count, trials=3)
    two = doubler_fixture(root, "agentic_eval_two.json", count, trials=3, optional=True)
    cli = str(Path(sys.executable).parent / "agentic-evals")
    timings: dict[str, list[float]] = {"controlled": [], "two": []}
    for _ in range(1 if quick else 5):
        timings["controlled"].append(timed([cli, "run", str(controlled)], root))
        timings["two"].append(timed([cli, "run", str(two)], root))
    ours, base = (statistics.median(timings[k]) for k in ("controlled", "two"))
    return [(f"run of a {count}-case fixture, 3 trials, every case controlled vs two",
             f"{ours:.1f} s", f"{base:.1f} s", f"{ours / base:.2f}x")]


PROCESS_SCRIPT = """
import os, statistics, subprocess, sys, tempfile, time
from pathlib import Path
from pytest_agentic_evals.execution.process import run_process
count, rounds = int(sys.argv[1]), int(sys.argv[2])
where = Path(tempfile.mkdtemp())
env = dict(os.environ)
def ours():
    for _ in range(count):
        run_process(["true"], cwd=where, env=env, timeout=10, output_dir=where / "o")
def plain():
    for _ in range(count):
        with open(where / "stdout", "wb") as out, open(where / "stderr", "wb") as err:
            subprocess.run(["true"], stdout=out, stderr=err, start_new_session=True)
times = {"ours": [], "plain": []}
for _ in range(rounds):  # interleaved, so that a machine getting busier weighs on both
    for name, run in (("ours", ours), ("plain", plain)):
        started = time.perf_counter()
        run()
        times[name].append((time.perf_counter() - started) / count * 1000)
print(statistics.median(times["ours"]), statistics.median(times["plain"]))
"""


def bench_process(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    """One command run by the runner's process layer (output through pipes and a copying
    thread, the left-behind sweep, the group kill), next to `subprocess.run` writing into
    files: what the runner adds to every unsandboxed trial below the pytest layer."""
    count, rounds = (50, 1) if quick else (200, 5)
    done = subprocess.run([sys.executable, "-c", PROCESS_SCRIPT, str(count), str(rounds)],
                          cwd=work, env=BASE_ENV, capture_output=True, text=True, check=True)
    ours, plain = (float(x) for x in done.stdout.split())
    return [("run_process of `true`, median per run", f"{ours:.2f} ms",
             f"{plain:.2f} ms (subprocess.run into files)", f"+{ours - plain:.2f} ms")]


BENCHMARKS = {"overhead": bench_overhead, "process": bench_process, "parallel": bench_parallel,
              "memory": bench_memory, "collection": bench_collection, "report": bench_report,
              "skills": bench_audit_skills, "coverage": bench_coverage_audit,
              "workspace": bench_workspace, "sandbox": bench_sandbox,
              "journeys": bench_plan_journeys, "ordering": bench_ordering, "stop": bench_stop,
              "trialmemory": bench_trial_memory, "isolation": bench_isolation_size,
              "overlay": bench_overlay_mount, "pertrial": bench_per_trial,
              "startup": bench_startup, "collectmany": bench_collect_many,
              "probe": bench_probe, "control": bench_control}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"benchmarks to run: {', '.join(BENCHMARKS)} (default: all)")
    parser.add_argument("--quick", action="store_true",
                        help="one repetition and smaller sizes: checks the script, not targets")
    parser.add_argument("--trial-memory-sizes", metavar="N,N", default="",
                        help="trial counts of trialmemory (default 5000,10000; quick 500,1000),"
                             " for example 5000,50000")
    args = parser.parse_args()
    names = args.names or list(BENCHMARKS)
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    print(f"# pytest-agentic-evals benchmarks, {time.strftime('%Y-%m-%d')}, "
          f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the start")
    print("| benchmark | ours | baseline | ratio |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="agentic-evals-bench-") as scratch:
        for name in names:
            bench = BENCHMARKS[name]
            if name == "trialmemory" and args.trial_memory_sizes:
                sizes = tuple(int(n) for n in args.trial_memory_sizes.split(","))
                bench = functools.partial(bench_trial_memory, sizes=sizes)
            for row in bench(Path(scratch), args.quick):
                print("| " + " | ".join(row) + " |", flush=True)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
