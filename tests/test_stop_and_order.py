"""Stop on fail and longest-first ordering: the report builder's rules for trials left out,
the durations table, and real pytest sessions, serially and under xdist ``-n 2``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_plugin import checked_report

from pytest_agentic_evals.durations import (
    Durations,
    DurationsError,
    cached_rows,
    longest_first,
    read_durations,
    report_durations,
)
from pytest_agentic_evals.execution.stops import stopped_trial
from pytest_agentic_evals.loading import fixture_from_data
from pytest_agentic_evals.model import FAIL, NOT_TESTED, PASS, READY
from pytest_agentic_evals.report import build_fixture_report
from pytest_agentic_evals.verdicts import fixture_gate

from conftest import MODES, child_env


def selftest_fixture(root: Path, cases: list[dict[str, Any]], trials: int) -> Path:
    path = root / "fixtures" / "agentic_eval.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 2, "skill": "selftest", "trials": trials,
                                "eval_kind": "runner_selftest", "cases": cases}))
    return path


def case(name: str, script: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": "positive", "command": ["bash", "-c", script],
            "expected": {"exit_code": 0}, **extra}


def pytest_session(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (root / "pytest.ini").write_text("[pytest]\n")
    env = child_env()
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--agentic-evals", "--agentic-evals-report",
         "report.json", "--agentic-evals-sandbox", "off", "--agentic-evals-allow-exempt",
         "-p", "no:randomly", *args],
        cwd=root, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
        timeout=300,
    )


def entry(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in report["cases"] if c["name"] == name)


# -- the report of a run that stopped trials --------------------------------------------------


def built(tmp_path: Path, outcomes: dict[str, list[str]], trials: int = 3) -> dict[str, Any]:
    fixture = fixture_from_data({"version": 2, "skill": "s", "trials": trials,
                                 "eval_kind": "runner_selftest", "cases": [
                                     case("a", "true", real_world=True), case("b", "true")]},
                                tmp_path / "agentic_eval.json", accept_exemptions=True)
    results = {}
    for name, sequence in outcomes.items():
        for number, outcome in enumerate(sequence, start=1):
            results[(name, number)] = (
                stopped_trial(number, "not run: trial 1 of this case failed (stop on fail)")
                if outcome == NOT_TESTED else
                {"trial": number, "outcome": outcome, "problems": [] if outcome == PASS
                 else ["failed on purpose"], "duration_ms": 5})
    selected = {c.name: range(1, trials + 1) for c in fixture.cases}
    return build_fixture_report(fixture, results, selected, run_id="unit", trial_count=trials)


def test_stopped_trials_are_left_out_of_the_statistics(tmp_path: Path) -> None:
    report = built(tmp_path, {"a": [PASS] * 3, "b": [FAIL, NOT_TESTED, NOT_TESTED]})
    b = entry(report, "b")
    assert b["outcome"] == FAIL and b["stopped_trials"] == [2, 3]
    assert b["ran_trials"] == 1 and b["pass_rate"] == 0.0 and b["reliability"]["ran"] == 1
    assert [t["trial"] for t in b["trials"]] == [1]
    assert "stopped_trials" not in entry(report, "a")
    assert report["readiness"] != READY and not report["gate"]["passed"]
    assert any(note.startswith("stop on fail: 2 trial(s)") for note in report["readiness_notes"])


def test_trials_stopped_without_a_failure_are_missing_evidence(tmp_path: Path) -> None:
    # Whatever left them out, trials that did not run cannot make a case READY.
    report = built(tmp_path, {"a": [PASS] * 3, "b": [PASS, NOT_TESTED, NOT_TESTED]})
    assert entry(report, "b")["outcome"] == PASS
    assert report["selection"] == "partial" and report["readiness"] != READY
    gate = fixture_gate(report)
    assert not gate.passed and "b" in gate.reason


# -- durations ---------------------------------------------------------------------------------


def test_durations_are_each_cases_median_and_unknown_cases_count_as_the_longest() -> None:
    report = {"fixture": "skill/fixtures/agentic_eval.json", "cases": [
        {"name": "slow", "trials": [{"duration_ms": 900}, {"duration_ms": 1000},
                                    {"duration_ms": 5000}]},
        {"name": "quick", "trials": [{"duration_ms": 10}]},
        {"name": "never-ran", "trials": []}]}
    rows = report_durations(report)
    assert rows == [("skill/fixtures/agentic_eval.json", "slow", 1000.0),
                    ("skill/fixtures/agentic_eval.json", "quick", 10.0)]
    durations = Durations(rows)
    elsewhere = Path("/elsewhere/agentic_eval.json")  # matched by file name: it is unique
    assert durations.of(elsewhere, "quick") == 10.0
    assert durations.of(elsewhere, "new-case") == 1000.0
    assert longest_first(["quick", "new-case", "slow"],
                         lambda name: durations.of(elsewhere, name)) == ["new-case", "slow",
                                                                         "quick"]
    assert cached_rows([["f", "c", 3], ["bad"], "x", ["f", 1, 2]]) == [("f", "c", 3.0)]


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read"), ("{", "is not JSON"), ('{"cases": 3}', "not an agentic-evals report"),
])
def test_a_durations_source_that_is_no_report_is_refused(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "durations.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(DurationsError, match=message):
        read_durations(str(path))


# -- real sessions -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_stop_on_fail_ends_a_failing_cases_trials(tmp_path: Path, mode: list[str]) -> None:
    log = tmp_path / "ran.log"
    selftest_fixture(tmp_path, [
        case("passes", "true", real_world=True),
        case("fails", f'echo "$AGENTIC_EVALS_TRIAL" >> {log}; exit 1'),
    ], trials=4)
    finished = pytest_session(tmp_path, "--agentic-evals-stop-on-fail", *mode)
    assert finished.returncode == 1, finished.stdout
    report = checked_report(tmp_path / "report.json")
    fails = entry(report, "fails")
    ran = sorted(int(line) for line in log.read_text().split())
    # Serially trial 1 fails and 2-4 never start; under xdist a trial another worker had
    # already started runs on and counts. Either way what ran is what the report counts.
    assert ran == [t["trial"] for t in fails["trials"]]
    assert sorted(ran + fails["stopped_trials"]) == [1, 2, 3, 4]
    if not mode:
        assert ran == [1] and fails["stopped_trials"] == [2, 3, 4]
    assert fails["outcome"] == FAIL and fails["passed_trials"] == 0
    assert fails["reliability"]["ran"] == len(ran)
    assert entry(report, "passes")["ran_trials"] == 4
    assert report["readiness"] != READY
    assert "stop on fail" in finished.stdout
    # Without the setting every trial runs.
    log.unlink()
    assert pytest_session(tmp_path, *mode).returncode == 1
    assert sorted(int(line) for line in log.read_text().split()) == [1, 2, 3, 4]


def test_under_xdist_a_trial_already_running_runs_on_and_counts(tmp_path: Path) -> None:
    # Four trials on two workers: xdist's load scheduling sends trials 1 and 2 to one, 3 and
    # 4 to the other. Trial 1 fails once trial 3 has started (a worker that starts late must
    # not find the failure already recorded). Trial 3 waits until trial 1's failure is
    # recorded in the run directory, then passes: it was running, so it counts. Trial 4 starts
    # after that on the same worker as trial 3 and is stopped by the failure the other worker
    # recorded; trial 2 by the failure on its own worker.
    script = """
if [ "$AGENTIC_EVALS_TRIAL" = 1 ]; then
  for _ in $(seq 600); do [ -e "$SYNC/trial-3-started" ] && exit 1; sleep 0.05; done
  exit 1
fi
if [ "$AGENTIC_EVALS_TRIAL" = 3 ]; then
  touch "$SYNC/trial-3-started"
  d="$AGENTIC_EVALS_TRIAL_DIR"; while [ ! -e "$d/.in-use" ]; do d=$(dirname "$d"); done
  for _ in $(seq 600); do ls "$d"/stopped-cases/* >/dev/null 2>&1 && exit 0; sleep 0.05; done
  exit 3
fi
exit 0
"""
    sync = tmp_path / "sync"
    sync.mkdir()
    selftest_fixture(tmp_path, [case("flaky", script, real_world=True, env={"SYNC": str(sync)})],
                     trials=4)
    finished = pytest_session(tmp_path, "--agentic-evals-stop-on-fail", "-n", "2")
    report = checked_report(tmp_path / "report.json")
    flaky = entry(report, "flaky")
    assert {t["trial"]: t["outcome"] for t in flaky["trials"]} == {1: FAIL, 3: PASS}, \
        finished.stdout
    assert flaky["stopped_trials"] == [2, 4]
    assert flaky["outcome"] == FAIL and flaky["passed_trials"] == 1
    assert flaky["pass_rate"] == 0.5 and finished.returncode == 1


@pytest.mark.parametrize("mode", MODES)
def test_the_longest_trials_run_first(tmp_path: Path, mode: list[str]) -> None:
    log = tmp_path / "started.log"
    names = ["a", "b", "c", "d"]
    selftest_fixture(tmp_path, [case(name, f"echo {name} >> {log}") for name in names],
                     trials=1)
    earlier = {"fixture": "elsewhere/agentic_eval.json", "cases": [
        {"name": name, "trials": [{"duration_ms": ms}]}
        for name, ms in zip(names, (10, 30, 20, 40), strict=True)]}
    (tmp_path / "earlier.json").write_text(json.dumps(earlier))
    finished = pytest_session(tmp_path, "--agentic-evals-durations", "earlier.json", *mode)
    assert finished.returncode == 0, finished.stdout
    started = log.read_text().split()
    if mode:
        # Handed out round robin, longest first: one worker runs d then c, the other b then a
        # (xdist's own batches would give one worker a and b, the other c and d, in the
        # fixture's order). Which worker starts first is up to the machine.
        assert started.index("d") < started.index("c")
        assert started.index("b") < started.index("a")
    else:
        assert started == ["d", "b", "c", "a"]
    # This run's durations are now in pytest's cache, for `--agentic-evals-durations last`.
    listed = pytest_session(tmp_path, "--agentic-evals-durations", "last", "--collect-only",
                            "-q")
    assert listed.returncode == 0
    cache = tmp_path / ".pytest_cache" / "v" / "agentic_evals" / "durations"
    rows = json.loads(cache.read_text())
    assert sorted(row[1] for row in rows) == names
    order = [line.split("::")[1] for line in listed.stdout.splitlines() if "::" in line]
    by_duration = sorted(rows, key=lambda row: -row[2])
    assert order == [f"{row[1]}[trial-1]" for row in by_duration]


@pytest.mark.parametrize("mode", MODES)
def test_a_durations_report_that_cannot_be_read_is_a_usage_error(
    tmp_path: Path, mode: list[str]
) -> None:
    selftest_fixture(tmp_path, [case("a", "true")], trials=1)
    finished = pytest_session(tmp_path, "--agentic-evals-durations", "missing.json", *mode)
    assert finished.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--agentic-evals-durations: cannot read missing.json" in finished.stderr
    assert "Traceback" not in finished.stderr + finished.stdout
