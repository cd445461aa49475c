"""The controller's peak memory over many trivial trials: what it keeps per trial."""

from __future__ import annotations

import os
from pathlib import Path

from common import AGENTIC_EVALS, BASE_ENV, PYTEST, skill_dir, timed, write_fixture

Row = tuple[str, str, str, str]
# Writes the peak resident memory (VmHWM, KiB) of the process that judges: a serial run, or
# the controller of an xdist run (never a worker).
CONTROLLER_PEAK_PLUGIN = """
import os

def pytest_unconfigure(config):
    if hasattr(config, "workerinput"):
        return
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            with open(os.environ["PEAK_RSS_FILE"], "w") as out:
                out.write(line.split()[1])
"""
TRIALS_PER_CASE = 10


def controller_peak(root: Path, trials: int, mode: list[str], plain: bool = False) -> float:
    """Peak RSS in MiB of a session of ``trials`` trials of `true` (or, with ``plain``, as many
    plain pytest tests spawning `true`)."""
    peak_file = root / "peak.txt"
    env = {**BASE_ENV, "PEAK_RSS_FILE": str(peak_file)}
    if plain:
        test = root / f"test_plain_{trials}.py"
        test.write_text("import subprocess\nimport pytest\n\n"
                        f"@pytest.mark.parametrize('n', range({trials}))\ndef test_spawn(n):\n"
                        "    subprocess.run(['true'], check=True)\n")
        target = [str(test)]
    else:
        cases = [{"name": f"case-{i}", "type": "positive", "command": ["true"],
                  "expected": {"exit_code": 0}} for i in range(trials // TRIALS_PER_CASE)]
        fixture = write_fixture(root / f"n{trials}" / "agentic_eval.json", cases,
                                trials=TRIALS_PER_CASE, kind="runner_selftest")
        target = [*AGENTIC_EVALS, "--agentic-evals-sandbox", "off", "--agentic-evals-report",
                  str(root / "report.json"), str(fixture)]
    timed([*PYTEST, "-p", "no:randomly", "--rootdir", str(root), "-c", os.devnull,
           *mode, *target], root, env)
    return int(peak_file.read_text()) / 1024


def bench_trial_memory(work: Path, quick: bool, sizes: tuple[int, ...] = ()) -> list[Row]:
    """Peak RSS of the controller for N trivial trials of one fixture (10 trials per case),
    serially and at -n 2, next to plain pytest running as many tests spawning `true`."""
    sizes = sizes or ((500, 1_000) if quick else (5_000, 10_000))
    root = skill_dir(work / "trial-memory")
    (root / "conftest.py").write_text(CONTROLLER_PEAK_PLUGIN)
    rows = []
    for mode in ([], ["-n", "2"]):
        where = "serial" if not mode else "-n 2 (controller)"
        peaks = {}
        for size in sizes:
            ours = controller_peak(root, size, mode)
            plain = controller_peak(root, size, mode, plain=True)
            peaks[size] = ours, plain
            rows.append((f"peak RSS, {size:,} trivial trials, {where}", f"{ours:.0f} MiB",
                         f"{plain:.0f} MiB (plain pytest, {size:,} tests spawning `true`)",
                         f"+{ours - plain:.0f} MiB (target: 50,000 trials < 200 MiB)"))
        if len(sizes) > 1:
            small, large = sizes[0], sizes[-1]
            slope = (peaks[large][0] - peaks[small][0]) * 1024 / (large - small)
            plain_slope = (peaks[large][1] - peaks[small][1]) * 1024 / (large - small)
            at_50k = peaks[small][0] + slope * (50_000 - small) / 1024
            rows.append((f"memory per trial, {where} (slope {small:,} -> {large:,})",
                         f"{slope:.2f} KiB", f"{plain_slope:.2f} KiB (plain pytest)",
                         f"at 50,000 trials: ~{at_50k:.0f} MiB"))
    return rows
