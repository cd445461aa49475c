"""Spending less on failing agents and on the tail of a parallel run: stop on fail, and
trials ordered longest first under xdist."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

from common import AGENTIC_EVALS, PYTEST, skill_dir, timed, write_fixture

Row = tuple[str, str, str, str]
# Each trial logs when it started and ended, so that the makespan is the trials' own span,
# without the workers' start-up.
SPAN_LOG = ('echo "$(date +%s.%N) start" >> {log}; sleep {seconds}; '
            'echo "$(date +%s.%N) end" >> {log}')


def _span(log: Path) -> float:
    stamps = [float(line.split()[0]) for line in log.read_text().splitlines()]
    return max(stamps) - min(stamps)


def bench_ordering(work: Path, quick: bool) -> list[Row]:
    """40 cases of one trial sleeping 0.1 to 3 s, at -n 4, in the fixture's order and longest
    first by the durations of the previous run; makespan against its lower bound (the total
    over 4 workers, or the longest trial when that is more)."""
    count, scale, workers = (12, 0.3, 4) if quick else (40, 1.0, 4)
    rng = random.Random(4)
    seconds = [round(0.1 + (3.0 - 0.1) * i / (count - 1), 2) * scale for i in range(count)]
    rng.shuffle(seconds)  # the fixture's order is neither longest nor shortest first
    root = skill_dir(work / "ordering")
    log = root / "spans.log"
    cases = [{"name": f"sleep-{i}", "type": "positive",
              "command": ["bash", "-c", SPAN_LOG.format(log=log, seconds=s)],
              "expected": {"exit_code": 0}} for i, s in enumerate(seconds)]
    fixture = write_fixture(root / "fixtures" / "agentic_eval.json", cases, trials=1,
                            kind="runner_selftest")
    earlier = root / "earlier.json"
    base = [*PYTEST, *AGENTIC_EVALS, "--agentic-evals-sandbox", "off", "-n", str(workers),
            str(fixture)]
    timed([*base, "--agentic-evals-report", str(earlier)], root)  # the durations to order by
    spans: dict[str, list[float]] = {"default": [], "longest": []}
    walls: dict[str, list[float]] = {"default": [], "longest": []}
    for _ in range(1 if quick else 3):  # interleaved rounds
        for label, extra in (("default", []), ("longest", ["--agentic-evals-durations",
                                                           str(earlier)])):
            log.unlink(missing_ok=True)
            walls[label].append(timed([*base, *extra], root))
            spans[label].append(_span(log))
    bound = max(sum(seconds) / workers, max(seconds))
    rows = []
    for label, text in (("default", "in the fixture's order"),
                        ("longest", "longest first (--agentic-evals-durations)")):
        span = statistics.median(spans[label])
        rows.append((f"{count} trials of 0.1-3 s at -n {workers}, {text}: makespan of the "
                     "trials", f"{span:.2f} s", f"{bound:.2f} s (lower bound)",
                     f"{span / bound:.2f}x the bound (target <= 1.10x); wall "
                     f"{statistics.median(walls[label]):.2f} s"))
    return rows


def bench_stop(work: Path, quick: bool) -> list[Row]:
    """20 cases x 5 trials of 0.2 s, a quarter of them failing every trial, with and without
    --agentic-evals-stop-on-fail: trials run and wall time, serially and at -n 2."""
    cases_count, trials, seconds = (8, 3, 0.05) if quick else (20, 5, 0.2)
    root = skill_dir(work / "stop")
    cases = [{"name": f"case-{i}", "type": "positive",
              "command": ["bash", "-c", f"sleep {seconds}; exit {1 if i % 4 == 0 else 0}"],
              "expected": {"exit_code": 0}} for i in range(cases_count)]
    fixture = write_fixture(root / "fixtures" / "agentic_eval.json", cases, trials=trials,
                            kind="runner_selftest")
    report = root / "report.json"
    rows = []
    for mode in ([], ["-n", "2"]):
        walls: dict[str, list[float]] = {"all": [], "stop": []}
        ran: dict[str, int] = {}
        for _ in range(1 if quick else 3):
            for label, extra in (("all", []), ("stop", ["--agentic-evals-stop-on-fail"])):
                walls[label].append(timed(
                    [*PYTEST, *AGENTIC_EVALS, "--agentic-evals-sandbox", "off",
                     "--agentic-evals-report", str(report),
                     *mode, *extra, str(fixture)], root, allowed=(0, 1)))
                ran[label] = sum(c["ran_trials"] for c in json.loads(report.read_text())["cases"])
        all_wall, stop_wall = (statistics.median(walls[k]) for k in ("all", "stop"))
        where = "serial" if not mode else "-n 2"
        rows.append((f"{cases_count} cases x {trials} trials of {seconds:g} s, a quarter "
                     f"failing, {where}: with --agentic-evals-stop-on-fail",
                     f"{ran['stop']} trials, {stop_wall:.2f} s",
                     f"{ran['all']} trials, {all_wall:.2f} s (without)",
                     f"{stop_wall / all_wall:.2f}x the wall time"))
    return rows
