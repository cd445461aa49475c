"""The fixture report, its gate and its summaries, built in-process from hand-made trial
results.

The same rules are exercised end to end through pytest and the CLI elsewhere; here each rule
of the report builder is one small test, so that a regression names the rule it broke.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.loading import fixture_from_data
from pytest_agentic_evals.model import (
    BLOCKED,
    FAIL,
    INFRA_BLOCKED,
    NOT_READY,
    NOT_TESTED,
    PASS,
    READY,
    USABLE_WITH_GAPS,
    Fixture,
)
from pytest_agentic_evals.report import build_fixture_report, session_report
from pytest_agentic_evals.summary import Line, markdown, terminal_lines
from pytest_agentic_evals.verdicts import excused_failure

TODAY = date(2026, 12, 4)
# A trial that stop on fail left out: its result says NOT_TESTED.
STOPPED = "stopped"


def make_fixture(tmp_path: Path, *extra_cases: dict[str, Any], trials: int = 2) -> Fixture:
    """A skill with a script of its own, and a fixture of three required cases (a real-world
    positive one, a second positive one, a refusal) plus ``extra_cases``."""
    skill = tmp_path / "skill"
    (skill / "fixtures").mkdir(parents=True)
    (skill / "run.sh").write_text("#!/bin/sh\necho hello \"$1\"\n")
    (skill / "run.sh").chmod(0o755)
    data = {
        "version": 2,
        "skill": "greeter",
        "trials": trials,
        "proof_scope": "run.sh greets",
        "cases": [
            {"name": "greets", "type": "positive", "real_world": True,
             "command": ["../run.sh", "Ada"],
             "expected": {"exit_code": 0, "stdout_contains": ["hello Ada"]}},
            {"name": "greets-twice", "type": "positive",
             "command": ["../run.sh", "Bob"],
             "expected": {"exit_code": 0, "stdout_contains": ["hello Bob"]}},
            {"name": "refuses", "type": "negative",
             "command": ["../run.sh", ""],
             "expected": {"exit_code": 2, "stderr_contains": ["name required"]}},
            *extra_cases,
        ],
    }
    return fixture_from_data(data, skill / "fixtures" / "agentic_eval.json")


def trial(number: int, outcome: str, *problems: str) -> dict[str, Any]:
    return {"trial": number, "outcome": outcome, "problems": list(problems),
            "infrastructure": False}


def report_for(
    fixture: Fixture,
    outcomes: Mapping[str, Iterable[str]],
    *,
    selected: Mapping[str, Iterable[int]] | None = None,
    trial_count: int | None = None,
    interrupted: bool = False,
) -> dict[str, Any]:
    """The report of a run in which each case's trials had ``outcomes`` (a case left out
    passed every trial; NOT_TESTED: no result, STOPPED: left out by stop on fail); every
    trial is selected unless ``selected`` says otherwise."""
    count = trial_count or fixture.trials
    results: dict[tuple[str, int], dict[str, Any]] = {}
    for case in fixture.cases:
        for number, outcome in enumerate(outcomes.get(case.name, [PASS] * count), start=1):
            if outcome == STOPPED:
                results[(case.name, number)] = trial(number, NOT_TESTED)
            elif outcome != NOT_TESTED:
                problems = () if outcome == PASS else (f"{outcome.lower()} on purpose",)
                results[(case.name, number)] = trial(number, outcome, *problems)
    if selected is None:
        selected = {case.name: range(1, count + 1) for case in fixture.cases}
    return build_fixture_report(fixture, results, selected, run_id="unit", trial_count=count,
                                interrupted=interrupted, today=TODAY)


def case_entry(report: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    return next(case for case in report["cases"] if case["name"] == name)


def test_every_trial_passing_is_ready(tmp_path: Path) -> None:
    report = report_for(make_fixture(tmp_path), {})
    assert report["readiness"] == READY
    assert report["gate"]["counts"] is True and report["gate"]["passed"] is True
    assert report["gate"]["reason"].endswith(": READY")
    assert report["selection"] == "full" and report["interrupted"] is False
    assert report["summary"]["passed"] == 3 and report["summary"]["failed"] == 0


def test_a_failed_required_trial_fails_its_case_and_the_gate(tmp_path: Path) -> None:
    report = report_for(make_fixture(tmp_path), {"greets-twice": [PASS, FAIL]})
    entry = case_entry(report, "greets-twice")
    assert entry["outcome"] == FAIL
    assert entry["passed_trials"] == 1 and entry["ran_trials"] == 2
    assert entry["problems"] == ["trial 2: fail on purpose"]
    assert report["readiness"] == USABLE_WITH_GAPS
    assert report["gate"]["passed"] is False
    assert "required case(s) failed: greets-twice" in report["gate"]["reason"]


def test_the_same_problem_in_every_trial_is_listed_once(tmp_path: Path) -> None:
    report = report_for(make_fixture(tmp_path), {"refuses": [FAIL, FAIL]})
    assert case_entry(report, "refuses")["problems"] == ["trial 1: fail on purpose"]


def test_only_refusals_passing_is_not_ready(tmp_path: Path) -> None:
    report = report_for(make_fixture(tmp_path),
                        {"greets": [FAIL, FAIL], "greets-twice": [BLOCKED, BLOCKED]})
    assert report["readiness"] == NOT_READY
    assert "passing refusals alone do not make a skill usable" in report["gate"]["reason"]


def test_an_optional_failure_is_shown_and_excused(tmp_path: Path) -> None:
    optional = {"name": "extra", "type": "positive", "required": False,
                "command": ["../run.sh", "Cy"], "expected": {"exit_code": 0}}
    report = report_for(make_fixture(tmp_path, optional), {"extra": [FAIL, FAIL]})
    assert case_entry(report, "extra")["outcome"] == FAIL
    assert report["readiness"] == READY and report["gate"]["passed"] is True
    assert excused_failure(report, "extra") is True
    assert excused_failure(report, "greets") is False


def test_an_optional_failure_is_not_excused_when_the_gate_fails(tmp_path: Path) -> None:
    optional = {"name": "extra", "type": "positive", "required": False,
                "command": ["../run.sh", "Cy"], "expected": {"exit_code": 0}}
    report = report_for(make_fixture(tmp_path, optional),
                        {"extra": [FAIL, FAIL], "refuses": [FAIL, PASS]})
    assert report["gate"]["passed"] is False
    assert excused_failure(report, "extra") is False


def test_infra_blocked_trials_block_the_case_and_are_counted_apart(tmp_path: Path) -> None:
    report = report_for(make_fixture(tmp_path), {"greets": [PASS, INFRA_BLOCKED]})
    entry = case_entry(report, "greets")
    assert entry["outcome"] == BLOCKED
    assert entry["infra_blocked_trials"] == 1
    assert report["readiness"] != READY and report["gate"]["passed"] is False


def test_a_deselected_case_makes_a_partial_run_that_is_never_ready(tmp_path: Path) -> None:
    fixture = make_fixture(tmp_path)
    report = report_for(fixture, {"refuses": [NOT_TESTED, NOT_TESTED]},
                        selected={"greets": [1, 2], "greets-twice": [1, 2]})
    assert case_entry(report, "refuses")["outcome"] == NOT_TESTED
    assert report["selection"] == "partial" and report["readiness"] != READY
    assert "partial run: not every case and trial was selected" in report["readiness_notes"]
    # The gate of a partial run passes when every selected trial ran and passed...
    assert report["gate"]["passed"] is True
    assert "partial run, not READY" in report["gate"]["reason"]


def test_a_partial_run_fails_when_a_selected_trial_did_not_run(tmp_path: Path) -> None:
    report = report_for(make_fixture(tmp_path), {"refuses": [PASS, NOT_TESTED]},
                        selected={"refuses": [1, 2]})
    assert report["gate"]["passed"] is False
    assert "did not pass every trial: refuses" in report["gate"]["reason"]


def test_no_case_selected_does_not_count(tmp_path: Path) -> None:
    fixture = make_fixture(tmp_path)
    report = report_for(fixture, {case.name: [NOT_TESTED] * 2 for case in fixture.cases},
                        selected={})
    assert report["gate"]["counts"] is False


def test_fewer_trials_than_declared_is_never_ready(tmp_path: Path) -> None:
    fixture = make_fixture(tmp_path, trials=3)
    report = report_for(fixture, {case.name: [PASS, PASS] for case in fixture.cases},
                        trial_count=2)
    assert report["readiness"] != READY and report["selection"] == "partial"
    assert any("fewer than the 3 the fixture declares" in note
               for note in report["readiness_notes"])


def test_an_interrupted_run_never_passes_the_gate(tmp_path: Path) -> None:
    report = report_for(make_fixture(tmp_path), {}, interrupted=True)
    assert report["readiness"] != READY
    assert report["gate"]["passed"] is False
    assert "interrupted" in report["gate"]["reason"]
    assert "the run was interrupted" in report["readiness_notes"]


def test_figures_follow_the_trials(tmp_path: Path) -> None:
    fixture = make_fixture(tmp_path, trials=4)
    report = report_for(fixture, {"greets": [PASS, FAIL, PASS, PASS]})
    entry = case_entry(report, "greets")
    assert entry["pass_rate"] == 0.75
    assert entry["reliability"]["passed"] == 3 and entry["reliability"]["ran"] == 4
    assert entry["reliability"]["flaky"] is True


@pytest.mark.parametrize(
    ("readinesses", "expected"),
    [((READY, READY), READY), ((READY, NOT_READY), NOT_READY),
     ((USABLE_WITH_GAPS, READY), USABLE_WITH_GAPS)],
)
def test_a_session_is_as_ready_as_its_worst_fixture(
    tmp_path: Path, readinesses: tuple[str, str], expected: str
) -> None:
    reports = []
    for index, readiness in enumerate(readinesses):
        outcomes = {} if readiness == READY else {"greets-twice": [PASS, FAIL]}
        if readiness == NOT_READY:
            outcomes = {"greets": [FAIL, FAIL], "greets-twice": [FAIL, FAIL]}
        reports.append(report_for(make_fixture(tmp_path / str(index)), outcomes))
    assert [report["readiness"] for report in reports] == list(readinesses)
    assert session_report(reports)["readiness"] == expected


def test_stop_on_fail_leaves_a_note_and_counts_what_ran(tmp_path: Path) -> None:
    fixture = make_fixture(tmp_path, trials=3)
    report = report_for(fixture, {"greets-twice": [FAIL, STOPPED, STOPPED]})
    entry = case_entry(report, "greets-twice")
    assert entry["stopped_trials"] == [2, 3] and entry["ran_trials"] == 1
    assert any(note.startswith("stop on fail: 2 trial(s) not run") and "(greets-twice)" in note
               for note in report["readiness_notes"])
    # A failed trial stopped them: the run is still a full one, and the case a failure.
    assert report["selection"] == "full" and entry["outcome"] == FAIL


def test_trials_left_out_without_a_failure_make_a_partial_run(tmp_path: Path) -> None:
    report = report_for(make_fixture(tmp_path), {"greets": [PASS, STOPPED]})
    assert report["selection"] == "partial" and report["readiness"] != READY


def test_the_summary_counts_cases_by_outcome(tmp_path: Path) -> None:
    optional = {"name": "extra", "type": "positive", "required": False,
                "command": ["../run.sh", "Cy"], "expected": {"exit_code": 0}}
    report = report_for(make_fixture(tmp_path, optional),
                        {"greets-twice": [PASS, FAIL], "refuses": [BLOCKED, INFRA_BLOCKED],
                         "extra": [FAIL, FAIL]})
    assert report["summary"] == {
        "total": 4, "passed": 1, "failed": 2, "blocked": 1, "not_tested": 0, "flaky": 1,
        "infra_blocked": 1,
        "required": {"passed": 1, "failed": 1, "blocked": 1, "not_tested": 0}}


# -- what a person reads: the terminal lines and the Markdown summary --------------------------


def test_a_ready_fixture_is_one_green_line(tmp_path: Path) -> None:
    report = report_for(make_fixture(tmp_path), {})
    where = report["fixture"]
    assert terminal_lines(report) == [
        Line(f"READY            {where} (skill greeter): 3/3 cases passed, 0 failed, 0 blocked",
             "green")]


def test_terminal_lines_keep_capability_failures_apart_from_infrastructure(
    tmp_path: Path
) -> None:
    report = report_for(make_fixture(tmp_path),
                        {"greets-twice": [PASS, FAIL], "refuses": [BLOCKED, INFRA_BLOCKED]})
    where = report["fixture"]
    assert terminal_lines(report) == [
        Line(f"USABLE_WITH_GAPS {where} (skill greeter): 1/3 cases passed, 1 failed, "
             "1 blocked (1 by an external blocker), 1 flaky", "red"),
        Line("  capability failures:"),
        Line("    FAIL     greets-twice (1/2 trials passed, flaky): trial 2: fail on purpose",
             "red"),
        Line("  infrastructure problems:"),
        Line("    BLOCKED  refuses (0/2 trials passed, 1 infra-blocked): trial 1: blocked on "
             "purpose", "yellow"),
    ]


def test_a_partial_run_and_a_scaffold_say_so_in_the_headline(tmp_path: Path) -> None:
    fixture = make_fixture(tmp_path)
    report = report_for(fixture, {"refuses": [NOT_TESTED, NOT_TESTED]},
                        selected={"greets": [1, 2], "greets-twice": [1, 2]})
    assert terminal_lines(report)[0].text.endswith(", partial run")
    scaffold = {**report_for(fixture, {}), "eval_kind": "scaffold"}
    assert terminal_lines(scaffold)[0].text.startswith("READY (scaffold) ")


def test_trials_run_without_the_sandbox_are_counted_by_reason(tmp_path: Path) -> None:
    report = report_for(make_fixture(tmp_path), {})
    trials = [trial for case in report["cases"] for trial in case["trials"]]
    for trial in trials[:3]:
        trial["isolation"] = {"sandbox": "none", "reason": "bwrap is not installed"}
    lines = terminal_lines(report)
    assert lines[-1] == Line("sandbox: 3 of 6 trial(s) not sandboxed: bwrap is not installed",
                             "yellow")
    assert "Sandbox: 3 of 6 trial(s) not sandboxed: bwrap is not installed  " in \
        markdown(report).splitlines()


def test_a_control_that_said_nothing_is_shown_beside_a_ready_verdict(tmp_path: Path) -> None:
    """A passing case whose control could not tell whether its verdict depends on the skill is
    READY on the contract's reading alone: a person sees which, and why."""
    fixture = make_fixture(tmp_path)
    controls = {"greets": {"stand_in": "contrary", "status": "inconclusive",
                           "entrypoint": "script ../run.sh", "stand_in_exit_code": 1,
                           "reason": "the command never started the stand-in: exit code 3"},
                "greets-twice": {"stand_in": "noop", "status": "killed",
                                 "entrypoint": "script ../run.sh", "stand_in_exit_code": 0,
                                 "killed_by": ["stdout: 'hello Bob' not found"]},
                "refuses": {"stand_in": "contrary", "status": "unprobed",
                            "reason": "the case's entrypoint is not one file"}}
    report = report_for(fixture, {})
    for case in report["cases"]:
        case["control"] = controls[case["name"]]
    assert report["readiness"] == READY
    assert terminal_lines(report)[1:] == [
        Line("  controls that said nothing (these verdicts are not shown to depend on the "
             "skill):", "yellow"),
        Line("    greets: inconclusive (contrary): the command never started the stand-in: "
             "exit code 3", "yellow"),
        Line("    refuses: unprobed (contrary): the case's entrypoint is not one file",
             "yellow"),
    ]
    lines = markdown(report).splitlines()
    assert "Controls that said nothing (these verdicts are not shown to depend on the skill):" \
        in lines
    assert "- greets: inconclusive (contrary): the command never started the stand-in: exit " \
        "code 3" in lines
    assert not any("greets-twice:" in line for line in lines)


def test_markdown_has_a_row_per_fixture_and_per_case(tmp_path: Path) -> None:
    report = report_for(make_fixture(tmp_path),
                        {"greets-twice": [PASS, FAIL], "refuses": [BLOCKED, INFRA_BLOCKED]})
    where = report["fixture"]
    lines = markdown(report).splitlines()
    assert lines[0] == "## agentic-evals: USABLE_WITH_GAPS"
    assert f"| **USABLE_WITH_GAPS** | {where} | greeter | 1/3 | 1 | 1 (1 external) | 1 | - |" \
        in lines
    assert f"### {where}: USABLE_WITH_GAPS" in lines
    assert "| greets | PASS | 2/2 | 100% (34%-100%) | 1.00 |  |  |" in lines
    assert "| greets-twice | FAIL | 1/2 | 50% (9%-91%) | 0.00 | capability | " \
        "trial 2: fail on purpose |" in lines
    assert "| refuses | BLOCKED | 0/2 | 0% (0%-66%) | 0.00 | external blocker | " \
        "trial 1: blocked on purpose |" in lines


def test_markdown_says_a_partial_run_cannot_be_ready(tmp_path: Path) -> None:
    report = report_for(make_fixture(tmp_path), {}, interrupted=True)
    assert "The run was interrupted: it cannot be READY." in markdown(report).splitlines()


def test_markdown_cells_cannot_break_the_table(tmp_path: Path) -> None:
    report = report_for(make_fixture(tmp_path), {"greets-twice": [PASS, FAIL]})
    case_entry(report, "greets-twice")["problems"] = ["got `a|b` and *c*\\\nsecond line"]
    row = next(line for line in markdown(report).splitlines()
               if line.startswith("| greets-twice |"))
    assert row.endswith(r"| got \`a\|b\` and \*c\*\\ |")


def test_session_markdown_heads_with_the_worst_fixture(tmp_path: Path) -> None:
    reports = [report_for(make_fixture(tmp_path / "a"), {}),
               report_for(make_fixture(tmp_path / "b"), {"greets-twice": [PASS, FAIL]})]
    lines = markdown(session_report(reports)).splitlines()
    assert lines[0] == "## agentic-evals: USABLE_WITH_GAPS"
    assert sum(line.startswith("| **") for line in lines) == 2
    assert [line for line in lines if line.startswith("### ")] == [
        f"### {reports[0]['fixture']}: READY", f"### {reports[1]['fixture']}: USABLE_WITH_GAPS"]


def test_a_fixture_with_no_case_selected_does_not_weigh_on_the_session(tmp_path: Path) -> None:
    ready = report_for(make_fixture(tmp_path / "a"), {})
    unselected_fixture = make_fixture(tmp_path / "b")
    unselected = report_for(unselected_fixture,
                            {case.name: [NOT_TESTED] * 2 for case in unselected_fixture.cases},
                            selected={})
    assert unselected["readiness"] != READY
    session = session_report([ready, unselected])
    assert session["readiness"] == READY
    assert session["fixtures"] == [ready, unselected]  # listed, all the same


def test_a_single_fixture_is_its_own_session_report(tmp_path: Path) -> None:
    report = report_for(make_fixture(tmp_path), {})
    assert session_report([report]) is report
