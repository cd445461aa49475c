"""The plugin through real pytest sessions (pytester), serially and under xdist ``-n 2``.

One scenario per test. Where several scenarios share one costly session (a fixture with many
cases), the session runs once per module and mode, and each scenario is its own test over it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

from pytest_agentic_evals.schemas import schema_text

from conftest import MODES, Skill, child_env, interruptible, make_skill, pid_alive, skill_fixture

RED = "\x1b[31m"


def literal(text: str) -> str:
    """``text`` as an fnmatch pattern that matches only itself (``[`` opens a class there)."""
    return text.replace("[", "[[]")


def run(pytester: pytest.Pytester, *args: str, mode: list[str] = (),
        own_process: bool = False) -> pytest.RunResult:
    """An inner session, in this process unless ``own_process`` (under ``-n 2`` its workers
    are processes of their own either way)."""
    report = pytester.path / "report.json"
    if report.exists():
        report.unlink()
    argv = ["--agentic-evals", "--agentic-evals-report", str(report), "-p", "no:cacheprovider",
            "-p", "no:randomly", *mode, *args]
    if own_process:
        return pytester.runpytest_subprocess(*argv, timeout=240)
    return pytester.runpytest(*argv)


def checked_report(path: Path) -> dict[str, Any]:
    """The JSON report at ``path``, validated against its shipped schema."""
    report = json.loads(path.read_text())
    schema_name = "session_report" if "fixtures" in report else "report"
    fixture_schema = json.loads(schema_text("report"))
    registry = Registry().with_resource(fixture_schema["$id"],
                                        Resource.from_contents(fixture_schema))
    jsonschema.Draft202012Validator(json.loads(schema_text(schema_name)),
                                    registry=registry).validate(report)
    return report


def read_report(pytester: pytest.Pytester) -> dict[str, Any]:
    return checked_report(pytester.path / "report.json")


def outcomes(report: dict[str, Any]) -> dict[str, str]:
    return {case["name"]: case["outcome"] for case in report["cases"]}


def case_of(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(case for case in report["cases"] if case["name"] == name)


@dataclass
class Finished:
    """A session run once for several tests: its exit status, output, and report."""

    ret: int
    stdout: pytest.LineMatcher
    report: dict[str, Any] | None


def run_once(root: Path, mode: list[str]) -> Finished:
    """``pytest --agentic-evals`` in ``root``, as pytester's subprocess run does it."""
    (root / "pytest.ini").write_text("[pytest]\n")
    env = child_env()
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "--agentic-evals", "--agentic-evals-report",
         "report.json", "-p", "no:cacheprovider", "-p", "no:randomly", *mode],
        cwd=root, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
        timeout=300,
    )
    report = root / "report.json"
    return Finished(completed.returncode, pytest.LineMatcher(completed.stdout.splitlines()),
                    checked_report(report) if report.exists() else None)


# -- collection ----------------------------------------------------------------------------

TRIAL_IDS = [f"fixtures/agentic_eval.json::{case}[trial-{n}]"
             for case in ("greets", "refuses-empty-name") for n in (1, 2, 3)]


def test_items_are_one_per_case_and_trial(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture(trials=3))
    result = run(pytester, "--collect-only", "-q")
    result.stdout.fnmatch_lines([*map(literal, TRIAL_IDS), "6 tests collected*"])


def test_items_come_in_the_same_order_on_every_run(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture(trials=3))
    first = run(pytester, "--collect-only", "-q")
    second = run(pytester, "--collect-only", "-q")
    assert [line for line in second.outlines if "::" in line] == TRIAL_IDS
    assert [line for line in first.outlines if "::" in line] == TRIAL_IDS


def test_fixtures_are_not_collected_without_the_flag(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture())
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.no_fnmatch_line("*agentic_eval.json::*")
    result.stdout.fnmatch_lines(["no tests collected*"])


def test_the_ini_value_turns_collection_on(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture())
    pytester.makeini("[pytest]\nagentic_evals = true\n")
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([literal("fixtures/agentic_eval.json::greets[trial-1]")])


@pytest.mark.parametrize(
    ("named", "ini", "collected"),
    [(False, None, False), (True, None, True), (False, "agentic_evals_files = my-*.json", True)],
    ids=["not-by-default", "named-on-the-command-line", "matched-by-ini-patterns"],
)
def test_a_json_file_of_another_name(
    pytester: pytest.Pytester, named: bool, ini: str | None, collected: bool
) -> None:
    path = make_skill(pytester, skill_fixture(), name="my-evals.json")
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    result = run(pytester, *([str(path)] if named else []), "--collect-only", "-q")
    pattern = literal("fixtures/my-evals.json::greets[trial-1]")
    if collected:
        result.stdout.fnmatch_lines([pattern])
    else:
        result.stdout.no_fnmatch_line(pattern)


@pytest.mark.parametrize(
    ("args", "lines"),
    [
        (["-k", "greets"], ["*greets[[]trial-1]", "*greets[[]trial-2]", "2/4 tests collected*"]),
        (["-k", "edge"], ["*refuses-empty-name[[]trial-1]", "*refuses-empty-name[[]trial-2]",
                          "2/4 tests collected*"]),
        (["-m", "edge", "--strict-markers"], ["*refuses-empty-name[[]trial-1]",
                                              "*refuses-empty-name[[]trial-2]",
                                              "2/4 tests collected*"]),
        (["fixtures/agentic_eval.json::greets[trial-2]"], ["*::greets[[]trial-2]",
                                                          "1 test collected*"]),
    ],
    ids=["k-case-name", "k-tag", "m-tag-strict-markers", "node-id"],
)
def test_selection(pytester: pytest.Pytester, args: list[str], lines: list[str]) -> None:
    data = skill_fixture()
    data["cases"][1]["tags"] = ["edge"]
    make_skill(pytester, data)
    result = run(pytester, "--collect-only", "-q", *args)
    result.stdout.fnmatch_lines(lines)


def test_a_rejected_fixture_is_a_collection_error_without_traceback(
    pytester: pytest.Pytester,
) -> None:
    make_skill(pytester, skill_fixture())
    make_skill(pytester, {"version": 2, "trials": 1, "cases": [
        {"name": "x", "type": "positive", "command": ["echo", "ok"], "expected": {"exit_code": 0}}
    ]}, name="agentic_eval_slush.json")
    result = run(pytester, "--collect-only", "-q")
    result.stdout.fnmatch_lines([
        literal("fixtures/agentic_eval.json::greets[trial-1]"),  # the good fixture collects
        "*ERROR collecting fixtures/agentic_eval_slush.json*",
        "fixture rejected (4 problem(s)):",
        "  - fixtures/agentic_eval_slush.json: /trials: trials is 1:*",
        "  - fixtures/agentic_eval_slush.json: /cases: no negative or adversarial case among "
        "the required cases:*",
        "  - fixtures/agentic_eval_slush.json: /cases: no real-world case among the required "
        "cases:*",
        "  - fixtures/agentic_eval_slush.json: /cases/0/command: case 'x' proves nothing:*",
    ])
    result.stdout.no_fnmatch_line("*Traceback*")
    assert result.ret == pytest.ExitCode.INTERRUPTED


# -- running and gating ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_ready_fixture_passes_and_writes_a_valid_report(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_skill(pytester, skill_fixture())
    result = run(pytester, mode=mode)
    result.assert_outcomes(passed=4)
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "*= agentic-evals =*",
        "READY            fixtures/agentic_eval.json (skill greeter): 2/2 cases passed, "
        "0 failed, 0 blocked",
        f"report: {pytester.path / 'report.json'}",
    ])
    report = read_report(pytester)
    assert report["readiness"] == "READY"
    assert report["selection"] == "full"
    assert report["summary"]["passed"] == 2
    assert [t["trial"] for t in report["cases"][0]["trials"]] == [1, 2]


@pytest.mark.parametrize(
    "args", [["-n", "0"], ["-p", "no:xdist"], ["--tx", "popen"]],
    ids=["no-workers", "without-xdist", "tx-without-dist"],
)
def test_a_session_that_xdist_does_not_distribute_runs_its_trials_here(
    pytester: pytest.Pytester, args: list[str]
) -> None:
    # This process is then both worker and controller, whatever xdist options it was given.
    make_skill(pytester, skill_fixture())
    result = run(pytester, *args)
    result.assert_outcomes(passed=4)
    assert read_report(pytester)["readiness"] == "READY"


def test_collect_only_with_workers_collects_here(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture())
    result = run(pytester, "-n", "2", "--collect-only", "-q")
    result.stdout.fnmatch_lines([literal("fixtures/agentic_eval.json::greets[trial-1]"),
                                 "4 tests collected*"])


@pytest.mark.parametrize("listing", ["--fixtures", "--fixtures-per-test"])
def test_a_listing_of_fixtures_runs_and_judges_nothing(
    pytester: pytest.Pytester, listing: str
) -> None:
    """pytest lists and exits 0 whatever plugins decide: the gate printed "session failed,
    not READY" (no trial had run) over a status of 0."""
    make_skill(pytester, skill_fixture())
    result = run(pytester, listing)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.no_fnmatch_line("*= agentic-evals =*")
    result.stdout.no_fnmatch_line("*session failed*")
    assert not (pytester.path / "report.json").exists()


@pytest.mark.parametrize("mode", MODES)
def test_a_failing_required_case_fails_the_session(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    data = skill_fixture()
    data["cases"][0]["expected"]["stdout_contains"] = ["goodbye"]
    make_skill(pytester, data)
    result = run(pytester, mode=mode)
    result.assert_outcomes(passed=2, failed=2)
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "case 'greets', trial 1 of 2: FAIL",
        "command: ['bash', '../run.sh', 'Ada']",
        "cwd: */greets/trial-1/workspace/fixtures",
        "  - stdout_contains: 'goodbye' not found in stdout",
        "stdout (11 bytes):",
        "  | hello, Ada",  # an excerpt of what was seen
        "full output: */greets/trial-1/output",
    ], consecutive=True)
    report = read_report(pytester)
    # Its only passing case is a refusal: not usable.
    assert report["readiness"] == "NOT_READY"
    assert outcomes(report) == {"greets": "FAIL", "refuses-empty-name": "PASS"}


@pytest.mark.parametrize("mode", MODES)
def test_blocked_is_a_skip_that_still_fails_the_session(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    data = skill_fixture()
    data["cases"][0]["command"] = ["bash", "../run.sh", "SERVICE DOWN"]
    data["cases"][0]["expected"] = {"exit_code": 3,
                                    "blocked_when_stdout_contains": ["SERVICE DOWN"]}
    make_skill(pytester, data)
    result = run(pytester, mode=mode)
    result.assert_outcomes(passed=2, skipped=2)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["agentic-evals: session failed, not READY:",
                                 "  *: NOT_READY: required case(s) blocked: greets; no "
                                 "required positive or real-world case passed every trial*"])
    report = read_report(pytester)
    assert outcomes(report)["greets"] == "BLOCKED"
    assert report["readiness"] == "NOT_READY"


def test_report_only_keeps_the_report_but_not_the_gate(pytester: pytest.Pytester) -> None:
    data = skill_fixture()
    data["cases"][0]["expected"]["exit_code"] = 5
    data["cases"][0]["required"] = True
    data["cases"][0]["blocked_when_stdout_contains"] = ["hello"]
    make_skill(pytester, data)
    result = run(pytester, "--agentic-evals-report-only")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["agentic-evals: session would fail (report only), not READY:"])
    assert read_report(pytester)["readiness"] == "NOT_READY"


@pytest.mark.parametrize("mode", MODES)
def test_partial_runs_are_never_ready_but_exit_on_what_ran(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_skill(pytester, skill_fixture())
    result = run(pytester, "-k", "greets", mode=mode)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["USABLE_WITH_GAPS fixtures/agentic_eval.json (skill greeter): "
                                 "1/2 cases passed, 0 failed, 0 blocked, partial run"])
    report = read_report(pytester)
    assert report["selection"] == "partial"
    assert report["readiness"] != "READY"
    assert outcomes(report) == {"greets": "PASS", "refuses-empty-name": "NOT_TESTED"}


def test_the_case_option_selects_exactly_that_case(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture())
    result = run(pytester, "--agentic-evals-case", "greets")
    assert result.ret == 0
    assert outcomes(read_report(pytester)) == {"greets": "PASS",
                                               "refuses-empty-name": "NOT_TESTED"}


@pytest.mark.parametrize("mode", MODES)
def test_an_unknown_case_is_a_usage_error(pytester: pytest.Pytester, mode: list[str]) -> None:
    make_skill(pytester, skill_fixture())
    result = run(pytester, "--agentic-evals-case", "nope", mode=mode)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["agentic-evals: session failed, not READY:",
                                 "  unknown case(s): nope"])


@pytest.mark.parametrize(("trials", "collected"), [("1", 4), ("3", 6)])
def test_the_trials_override_never_goes_below_the_minimum(
    pytester: pytest.Pytester, trials: str, collected: int
) -> None:
    make_skill(pytester, skill_fixture())  # declares 2 trials, the minimum
    result = run(pytester, "--agentic-evals-trials", trials, "--collect-only", "-q")
    result.stdout.fnmatch_lines([f"{collected} tests collected*"])


def test_fewer_trials_than_declared_is_a_partial_run(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture(trials=4))
    result = run(pytester, "--agentic-evals-trials", "2")
    assert result.ret == 0  # every selected trial passed ...
    report = read_report(pytester)
    assert report["selection"] == "partial"  # ... but two of four trials are not READY
    assert report["readiness"] == "USABLE_WITH_GAPS"
    assert report["readiness_notes"] == [
        "partial run: 2 trials per case, fewer than the 4 the fixture declares"]


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [(["--agentic-evals-trials", "many"], None,
      "*--agentic-evals-trials: 'many' is not a valid int*"),
     ([], "agentic_evals_timeout = never",
      "*ini agentic_evals_timeout: 'never' is not a valid float*")],
    ids=["option", "ini"],
)
def test_a_bad_setting_is_a_usage_error_naming_its_source(
    pytester: pytest.Pytester, args: list[str], ini: str | None, message: str
) -> None:
    make_skill(pytester, skill_fixture())
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_several_fixtures_give_a_session_report(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture())
    broken = skill_fixture(skill="second")
    broken["cases"][1]["expected"]["exit_code"] = 0
    make_skill(pytester, broken, name="agentic_eval_second.json")
    result = run(pytester)
    assert result.ret == 1
    report = read_report(pytester)
    assert report["schema"] == "agentic_evals.session_report.v1"
    assert report["readiness"] == "USABLE_WITH_GAPS"
    assert [f["readiness"] for f in report["fixtures"]] == ["READY", "USABLE_WITH_GAPS"]


def test_junit_properties(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture())
    run(pytester, "--junitxml", "junit.xml")
    suite = ElementTree.parse(pytester.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    trial = next(case for case in suite.iter("testcase")
                 if case.get("name") == "greets[trial-2]")
    properties = {p.get("name"): p.get("value") for p in trial.iter("property")}
    assert properties["case"] == "greets"
    assert properties["trial"] == "2"
    assert properties["outcome"] == "PASS"
    assert properties["evidence_class"] == "deterministic"
    assert "control" not in properties  # only the first trial has one
    first = next(case for case in suite.iter("testcase") if case.get("name") == "greets[trial-1]")
    assert {p.get("name"): p.get("value") for p in first.iter("property")}["control"] == "killed"


# -- isolation -------------------------------------------------------------------------------

ISOLATION_SCRIPT = (
    "test ! -e ../shared.txt || { echo 'saw another trial'; exit 9; }; "
    "echo $AGENTIC_EVALS_TRIAL > ../shared.txt; sleep 0.4; "
    "grep -qx $AGENTIC_EVALS_TRIAL ../shared.txt && ../run.sh isolated"
)


@pytest.mark.parametrize("mode", MODES)
def test_trials_never_see_each_others_files(pytester: pytest.Pytester, mode: list[str]) -> None:
    data = skill_fixture(trials=4)
    data["cases"][0]["command"] = ["bash", "-c", ISOLATION_SCRIPT]
    data["cases"][0]["expected"] = {"exit_code": 0, "stdout_contains": ["hello, isolated"]}
    make_skill(pytester, data)
    result = run(pytester, mode=mode)
    assert result.ret == 0, result.stdout.str()
    assert not (pytester.path / "shared.txt").exists()  # the source tree is untouched
    workspaces = {t["workspace"]["root"] for t in read_report(pytester)["cases"][0]["trials"]}
    assert len(workspaces) == 4


@pytest.mark.parametrize("workspace", ["copy", "inplace"])
def test_a_stale_output_never_satisfies_an_artifact_check(
    pytester: pytest.Pytester, workspace: str
) -> None:
    data = skill_fixture(workspace=workspace)
    data["cases"][0]["expected"]["artifacts"] = [
        {"path": "../out/result.json", "json_pointer": "/ok", "is_true": True}
    ]
    make_skill(pytester, data)
    (pytester.path / "out").mkdir()
    (pytester.path / "out" / "result.json").write_text('{"ok": true}')
    result = run(pytester)
    assert result.ret == 1
    report = read_report(pytester)
    assert "file not found after the run" in report["cases"][0]["problems"][0]


def test_inplace_trials_are_serialized_across_workers(pytester: pytest.Pytester) -> None:
    data = skill_fixture(trials=4, workspace="inplace")
    data["cases"][0]["command"] = ["bash", "-c", ISOLATION_SCRIPT + "; rm -f ../shared.txt"]
    data["cases"][0]["expected"] = {"exit_code": 0, "stdout_contains": ["hello, isolated"]}
    make_skill(pytester, data)
    result = run(pytester, mode=["-n", "2"])
    assert result.ret == 0, result.stdout.str()
    roots = {t["workspace"]["root"] for t in read_report(pytester)["cases"][0]["trials"]}
    assert roots == {str(pytester.path)}


def test_input_artifacts_are_written_before_the_command(pytester: pytest.Pytester) -> None:
    data = skill_fixture()
    data["cases"][0]["command"] = ["bash", "-c", "../run.sh \"$(cat input/name.txt)\" > out.txt"]
    data["cases"][0]["artifacts"] = [{"path": "input/name.txt", "content": "Grace"},
                                     {"path": "input/doc.json", "content": {"n": 1}}]
    data["cases"][0]["expected"] = {"exit_code": 0, "artifacts": [
        {"path": "out.txt", "lines_contain": ["hello, Grace"]},
        {"path": "input/doc.json", "json_pointer": "/n", "equals": 1},
    ]}
    make_skill(pytester, data)
    assert run(pytester).ret == 0


def test_environment_and_placeholders(pytester: pytest.Pytester) -> None:
    data = skill_fixture(env={"FROM_FIXTURE": "f"})
    script = ('echo "trial=$AGENTIC_EVALS_TRIAL run=$AGENTIC_EVALS_RUN_ID '
              'arg={trial}/{run_id} seed={random_seed} fx=$FROM_FIXTURE case=$FROM_CASE '
              'pytest=${PYTEST_CURRENT_TEST:-none}"; ../run.sh x || exit 1; '
              'read line || echo stdin-closed')
    data["cases"][0]["command"] = ["bash", "-c", script]
    data["cases"][0]["env"] = {"FROM_CASE": "c"}
    data["cases"][0]["expected"] = {"exit_code": 0, "stdout_matches": [
        r"trial=(\d) run=(\w+) arg=\1/\2 seed=\d+ fx=f case=c pytest=none"],
        "stdout_contains": ["stdin-closed"]}
    make_skill(pytester, data)
    assert run(pytester).ret == 0, pytester.path.joinpath("report.json").read_text()


# -- process hygiene: one session per mode, one test per way of leaving a process behind -----

LEAKS = {
    "background-child": "sleep 300 & echo started",
    "setsid-escape": "setsid sleep 300 & echo started",
    "double-fork": "( ( sleep 300 & ) & ); echo started",
    "ignores-term": "bash -c 'trap \"\" TERM; sleep 300' & echo started",
    "holds-stdout": "(sleep 300; echo late) & echo started",
}


@pytest.fixture(scope="module", params=MODES)
def leaky(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Finished:
    data = skill_fixture()
    for name, script in LEAKS.items():
        data["cases"].append({"name": name, "type": "adversarial",
                              "command": ["bash", "-c", "../run.sh x; " + script],
                              "expected": {"exit_code": 0, "stdout_contains": ["started"]}})
    data["cases"].append({"name": "times-out", "type": "adversarial", "timeout_seconds": 1,
                          "command": ["bash", "-c", "trap '' TERM; ../run.sh x; sleep 300"],
                          "expected": {"exit_code": 0}})
    skill = Skill(tmp_path_factory.mktemp("leaky"))
    skill.write(data)
    return run_once(skill.root, request.param)


def test_a_session_with_leaking_trials_fails(leaky: Finished) -> None:
    assert leaky.ret == 1
    assert leaky.report is not None
    assert [outcomes(leaky.report)[name] for name in [*LEAKS, "times-out"]] == ["FAIL"] * 6


@pytest.mark.parametrize("name", LEAKS)
def test_a_process_left_behind_fails_its_trial_and_is_killed(leaky: Finished, name: str) -> None:
    assert leaky.report is not None
    for trial in case_of(leaky.report, name)["trials"]:
        assert trial["outcome"] == "FAIL"
        # The runner did not wait for the leaked process: the trial ended before its timeout.
        assert trial["timed_out"] is False
        assert "process(es) behind" in " ".join(trial["problems"])
        left = trial["left_behind_processes"]
        # Caught before its exec, a survivor shows its parent's command line, or the name of
        # the program it is leaving ([setsid]); never nothing.
        assert left and all(process["command"] for process in left)
        assert any("sleep" in p["command"] or "setsid" in p["command"] for p in left)
        assert not [p["pid"] for p in left if pid_alive(p["pid"])]


def test_a_trial_past_its_timeout_is_killed(leaky: Finished) -> None:
    assert leaky.report is not None
    for trial in case_of(leaky.report, "times-out")["trials"]:
        assert trial["timed_out"] is True
        assert "timed out after 1s" in trial["problems"][0]
        assert not [p["pid"] for p in trial["left_behind_processes"] if pid_alive(p["pid"])]


# -- commands that cannot run: one session, one test per way ---------------------------------

BAD_PROGRAMS = {
    "missing": ["no-such-program-here"],
    "not-executable": ["../not-executable.sh"],
    "binary-output": ["bash", "-c", "../run.sh x > /dev/null && printf '\\xff\\xfe\\x80 done'"],
    "pointer-into-string": ["bash", "-c", "../run.sh x; echo '\"text\"' > out.json"],
}


@pytest.fixture(scope="module")
def bad_programs(tmp_path_factory: pytest.TempPathFactory) -> Finished:
    data = skill_fixture()
    for name, command in BAD_PROGRAMS.items():
        data["cases"].append({"name": name, "type": "negative", "command": command,
                              "expected": {"exit_code": 0}})
    data["cases"][-2]["expected"]["stdout_contains"] = ["done"]
    data["cases"][-1]["expected"]["artifacts"] = [{"path": "out.json", "json_pointer": "/0"}]
    skill = Skill(tmp_path_factory.mktemp("bad-programs"))
    (skill.root / "not-executable.sh").write_text("#!/bin/sh\necho hi\n")
    skill.write(data)
    return run_once(skill.root, [])


def test_a_session_whose_commands_cannot_run_fails_without_traceback(
    bad_programs: Finished,
) -> None:
    assert bad_programs.ret == 1
    bad_programs.stdout.no_fnmatch_line("*Traceback*")


@pytest.mark.parametrize(
    ("name", "problem"),
    [("missing", "trial 1: command not found: no-such-program-here"),
     ("not-executable", "trial 1: not executable: ../not-executable.sh*"),
     ("pointer-into-string", "trial 1: artifacts[[]0] out.json /0: *does not resolve*")],
)
def test_a_command_that_cannot_run_fails_with_its_reason(
    bad_programs: Finished, name: str, problem: str
) -> None:
    assert bad_programs.report is not None
    case = case_of(bad_programs.report, name)
    assert case["outcome"] == "FAIL"
    pytest.LineMatcher(case["problems"][:1]).fnmatch_lines([problem])


def test_a_command_that_cannot_start_is_an_infrastructure_failure(
    bad_programs: Finished,
) -> None:
    assert bad_programs.report is not None
    assert case_of(bad_programs.report, "missing")["infrastructure_failure"] is True


def test_binary_output_is_searched_as_bytes(bad_programs: Finished) -> None:
    assert bad_programs.report is not None
    assert case_of(bad_programs.report, "binary-output")["outcome"] == "PASS"


# -- the order installed plugins are found in -------------------------------------------------


def found_before_xdist(pytester: pytest.Pytester) -> None:
    """This plugin's entry point found before xdist's, as where the file system happens to list
    its distribution first (a session pytester starts has its directory first on PYTHONPATH;
    pytest loads the first entry point of a name and skips the installed one)."""
    info = pytester.path / "aaa_agentic_evals_first-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: aaa-agentic-evals-first\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[pytest11]\nagentic_evals = pytest_agentic_evals.pytest_plugin.entry\n")


def test_xdist_runs_the_trials_whichever_plugin_is_found_first(pytester: pytest.Pytester) -> None:
    """Both plugins configure late (trylast), where the order is the order they were found in:
    found first, this plugin's controller took itself for a serial run and every worker failed
    at configure (INTERNALERROR)."""
    found_before_xdist(pytester)
    make_skill(pytester, skill_fixture())
    # In a process of its own: the order plugins are found in is fixed when pytest starts.
    result = run(pytester, mode=["-n", "2"], own_process=True)
    result.stdout.fnmatch_lines(["plugins: aaa-agentic-evals-first-1.0, *xdist-*"])
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.OK
    assert checked_report(pytester.path / "report.json")["readiness"] == "READY"


def test_the_probe_refuses_xdist_whichever_plugin_is_found_first(
    pytester: pytest.Pytester,
) -> None:
    found_before_xdist(pytester)
    make_skill(pytester, skill_fixture())
    # Refused at configure, before pytest names its plugins: the test above shows the order.
    result = run(pytester, "--agentic-evals-probe", mode=["-n", "2"], own_process=True)
    result.stderr.fnmatch_lines(["ERROR: --agentic-evals-probe runs in one process: drop -n"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


# -- crashes and hooks ------------------------------------------------------------------------

CRASHING_KIND = """
import os
from pytest_agentic_evals.expectations import ExpectationKind

def crash(value, observation):
    if value == "worker" and os.environ.get("PYTEST_XDIST_WORKER"):
        os._exit(1)
    return [] if value == "worker" else ["crash: unexpected value"]

def pytest_agentic_evals_expectation_kinds():
    return [ExpectationKind("crash", crash, {"type": "string"})]
"""


def crashing_skill(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind that kills the xdist worker running the check, and passes outside xdist."""
    # Only workers of the inner session may crash, never a worker running this test suite.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makeconftest(CRASHING_KIND)
    data = skill_fixture()
    data["cases"][0]["expected"]["crash"] = "worker"
    make_skill(pytester, data)


def test_a_crashed_worker_counts_as_a_failed_trial(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    crashing_skill(pytester, monkeypatch)
    result = run(pytester, mode=["-n", "2"])
    assert result.ret == 1
    report = read_report(pytester)
    assert outcomes(report)["greets"] == "FAIL"
    assert "the worker running this trial crashed" in report["cases"][0]["problems"][0]


def test_the_crashing_kind_passes_where_no_worker_runs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The control for the test above: the crash, not the kind, fails the trial there.
    crashing_skill(pytester, monkeypatch)
    result = run(pytester)
    assert result.ret == 0
    assert outcomes(read_report(pytester))["greets"] == "PASS"


STDOUT_LINES_KIND = """
from pytest_agentic_evals.expectations import ExpectationKind

def lines(value, observation):
    count = observation.stdout_path.read_text().count("\\n")
    return [] if count == value else [f"stdout_lines: expected {value}, got {count}"]

def pytest_agentic_evals_expectation_kinds():
    return [ExpectationKind("stdout_lines", lines, {"type": "integer"})]
"""


def test_a_custom_expectation_kind_is_checked(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(STDOUT_LINES_KIND)
    data = skill_fixture()
    data["cases"][0]["expected"]["stdout_lines"] = 2
    make_skill(pytester, data)
    result = run(pytester)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["  - stdout_lines: expected 2, got 1"])


def test_a_custom_expectation_kinds_value_is_validated(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(STDOUT_LINES_KIND)
    data = skill_fixture()
    data["cases"][0]["expected"]["stdout_lines"] = "two"
    make_skill(pytester, data)
    result = run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the fixture's own failed test
    result.stdout.fnmatch_lines(["*fixtures/agentic_eval.json: /cases/0/expected/stdout_lines: *"])


@pytest.mark.parametrize(
    ("key", "where"),
    [("exit_code", "fixtures/conftest.py"), ("stdout_lines", "fixtures/conftest.py")],
    ids=["a-built-in-kind", "a-kind-of-another-conftest"],
)
def test_a_kind_defined_twice_is_refused(pytester: pytest.Pytester, key: str, where: str) -> None:
    pytester.makeconftest(STDOUT_LINES_KIND)
    make_skill(pytester, skill_fixture())
    (pytester.path / where).write_text(
        "from pytest_agentic_evals.expectations import ExpectationKind\n\n"
        "def pytest_agentic_evals_expectation_kinds():\n"
        f"    return [ExpectationKind({key!r}, lambda value, observation: [])]\n"
    )
    result = run(pytester)
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        [f"*expectation kind {key!r} is defined twice (by a plugin or a conftest.py)*"])


def test_report_hook_can_change_the_report(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        def pytest_agentic_evals_modify_report(report, config):
            report["ci_build"] = "1234"
        """
    )
    make_skill(pytester, skill_fixture())
    run(pytester)
    assert read_report(pytester)["ci_build"] == "1234"


def test_ctrl_c_leaves_no_process_and_no_half_written_report(pytester: pytest.Pytester) -> None:
    marker = f"ctrl-c-marker-{os.getpid()}"
    data = skill_fixture()
    sleeper = f"python3 -c 'import time; time.sleep(300)' {marker}"
    data["cases"][0]["command"] = ["bash", "-c", f"{sleeper}; ../run.sh x"]
    data["cases"][0]["timeout_seconds"] = 600
    make_skill(pytester, data)
    report = pytester.path / "report.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--agentic-evals", "--agentic-evals-report", str(report),
         "-p", "no:cacheprovider"],
        cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, preexec_fn=interruptible,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _processes_with(marker):
        time.sleep(0.1)
    assert _processes_with(marker), "the trial never started"
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output.decode()
    assert not _processes_with(marker)
    if report.exists():
        data = json.loads(report.read_text())
        assert data["interrupted"] is True
        assert data["readiness"] != "READY"


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and pid_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def test_large_output_is_matched_to_its_last_byte(pytester: pytest.Pytester) -> None:
    data = skill_fixture()
    mib = 1024 * 1024
    data["cases"][0]["command"] = [
        "bash", "-c", f"../run.sh x; head -c {64 * mib} /dev/zero | tr '\\0' y; echo TAIL-MARKER"
    ]
    data["cases"][0]["expected"] = {"exit_code": 0, "stdout_contains": ["hello, x", "TAIL-MARKER"],
                                    "stdout_matches": ["TAIL-MARK(ER)$"],
                                    "stdout_excludes": ["never printed"]}
    make_skill(pytester, data)
    assert run(pytester).ret == 0
    trial = read_report(pytester)["cases"][0]["trials"][0]
    assert trial["stdout"]["bytes"] > 64 * mib
    assert trial["stdout"]["truncated"] is True
    assert trial["stdout"]["tail"].endswith("TAIL-MARKER\n")
    assert len(trial["stdout"]["head"]) + len(trial["stdout"]["tail"]) < 10_000


# -- the fixture contract at collection: one session per mode, one test per refusal -----------

# The self-serving fixtures the contract exists to refuse, with the refusals each must get.
NOT_REAL_WORLD = "real_world case 'greets' is not real-world: "
PROVES_NOTHING = "case 'greets' proves nothing: trivial: every simple command is a constant builtin"
SLUSH = {
    "echo-and-true": (["bash", "-c", "echo ok; true"],
                      [NOT_REAL_WORLD + "echo ok reaches no entrypoint: *", PROVES_NOTHING + "*"]),
    "login-shell-echo": (["bash", "-lc", "echo hi"],
                         [NOT_REAL_WORLD + "echo hi reaches no entrypoint: *",
                          PROVES_NOTHING + "*"]),
    "absolute-shell-printf": (["/bin/sh", "-c", "printf x"],
                              [NOT_REAL_WORLD + "printf x reaches no entrypoint: *",
                               PROVES_NOTHING + "*"]),
    "env-wrapped-true": (["env", "FOO=1", "bash", "-c", "true"],
                         [NOT_REAL_WORLD + "true reaches no entrypoint: *", PROVES_NOTHING + "*"]),
    "echo-run-sh": (["echo", "run.sh"],
                    [NOT_REAL_WORLD + "echo run.sh names no entrypoint: *", PROVES_NOTHING + "*"]),
    "missing-script": (["bash", "../missing.sh"],
                       [NOT_REAL_WORLD + "script ../missing.sh does not exist *"]),
}
COMPLIANCE = {
    "exempt-scaffold": "*compliance fixture can never be exempt*",
    "unseeded-samples": "*--samples 5*",
}


@pytest.fixture(scope="module", params=MODES)
def refused(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Finished:
    skill = Skill(tmp_path_factory.mktemp("refused"))
    for name, (command, _) in SLUSH.items():
        data = skill_fixture()
        data["cases"][0]["command"] = command  # the only real-world case
        skill.write(data, name=f"agentic_eval_{name}.json")
    compliance = skill_fixture(eval_tier="compliance", eval_kind="scaffold")
    compliance["cases"].append({"name": "sampled", "type": "adversarial",
                                "command": ["../run.sh", "--samples=5"],
                                "expected": {"exit_code": 0}})
    skill.write(compliance, name="agentic_eval_compliance.json")
    return run_once(skill.root, request.param)


def test_a_session_with_refused_fixtures_fails_without_traceback(refused: Finished) -> None:
    assert refused.ret != 0  # serial pytest says INTERRUPTED, xdist says TESTS_FAILED
    refused.stdout.no_fnmatch_line("*Traceback*")


@pytest.mark.parametrize("name", SLUSH)
def test_a_self_serving_real_world_case_is_refused_at_collection(
    refused: Finished, name: str
) -> None:
    prefix = literal(f"  - fixtures/agentic_eval_{name}.json: /cases/0/command: ")
    refused.stdout.fnmatch_lines([prefix + refusal for refusal in SLUSH[name][1]])


@pytest.mark.parametrize("name", COMPLIANCE)
def test_the_compliance_tier_is_enforced_at_collection(refused: Finished, name: str) -> None:
    refused.stdout.fnmatch_lines(["  - fixtures/agentic_eval_compliance.json: " + COMPLIANCE[name]])


def test_the_gate_explains_itself_in_red(pytester: pytest.Pytester) -> None:
    data = skill_fixture()
    data["cases"][0]["expected"] = {"exit_code": 3, "blocked_when_stdout_contains": ["hello"]}
    make_skill(pytester, data)
    result = run(pytester, "--color=yes")
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        literal(f"{RED}") + "*agentic-evals: session failed, not READY:*",
        literal(f"{RED}") + "  *: NOT_READY: required case(s) blocked: greets*",
    ])


def test_a_report_hook_cannot_open_the_gate(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        def pytest_agentic_evals_modify_report(report, config):
            report["readiness"] = "READY"
        """
    )
    data = skill_fixture()
    data["cases"][0]["expected"]["exit_code"] = 9
    make_skill(pytester, data)
    result = run(pytester)
    assert result.ret == 2  # refused, naming the conftest.py (tests/test_gate_plugins.py)
    result.stdout.fnmatch_lines(["*changed /readiness*"])
    assert read_report(pytester)["readiness"] != "READY"  # the runner's report is written


@pytest.mark.parametrize("mode", MODES)
def test_a_kind_from_the_fixture_folders_conftest(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    data = skill_fixture()
    data["cases"][0]["expected"]["stdout_words"] = 2
    make_skill(pytester, data)
    (pytester.path / "fixtures" / "conftest.py").write_text(
        "from pytest_agentic_evals.expectations import ExpectationKind\n\n"
        "def words(value, observation):\n"
        "    count = len(observation.stdout_path.read_text().split())\n"
        "    return [] if count == value else [f'stdout_words: expected {value}, got {count}']\n\n"
        "def pytest_agentic_evals_expectation_kinds():\n"
        "    return [ExpectationKind('stdout_words', words, {'type': 'integer'})]\n"
    )
    result = run(pytester, mode=mode)
    assert result.ret == 0, result.stdout.str()
    assert read_report(pytester)["readiness"] == "READY"


def test_pytest_timeout_is_a_backstop_that_names_itself(pytester: pytest.Pytester) -> None:
    data = skill_fixture()
    data["cases"][0]["command"] = ["bash", "-c", "../run.sh x; sleep 30"]
    data["cases"][0]["timeout_seconds"] = 60  # longer than the backstop: pytest-timeout fires
    make_skill(pytester, data)
    result = run(pytester, "--timeout", "2", "--timeout-method", "signal")
    assert result.ret == 1
    report = read_report(pytester)
    problem = report["cases"][0]["problems"][0]
    assert "trial did not complete (call): Failed: Timeout" in problem


OUTSIDE_CHECK = {"outside_workspace": True, "json_pointer": "/ok", "is_true": True}


def test_a_stale_output_outside_the_workspace_fails_and_is_kept(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    outside = tmp_path / "shared-results.json"
    outside.write_text('{"ok": true}')  # stale: written before the run
    data = skill_fixture()
    data["cases"][0]["expected"]["artifacts"] = [{"path": str(outside), **OUTSIDE_CHECK}]
    make_skill(pytester, data)
    assert run(pytester).ret == 1
    assert outside.exists()  # a file outside the workspace is never removed
    problem = read_report(pytester)["cases"][0]["problems"][0]
    assert "not written during this trial" in problem


def test_a_fresh_output_outside_the_workspace_passes(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    outside = tmp_path / "shared-results.json"
    outside.write_text('{"ok": false}')
    data = skill_fixture()
    data["cases"][0]["command"] = ["bash", "-c",
                                   f"../run.sh Ada; echo '{{\"ok\": true}}' > {outside}"]
    data["cases"][0]["writable_paths"] = [str(tmp_path)]  # the sandbox lets it write there
    data["cases"][0]["expected"]["artifacts"] = [{"path": str(outside), **OUTSIDE_CHECK}]
    make_skill(pytester, data)
    assert run(pytester).ret == 0


def test_the_core_is_not_loaded_when_the_plugin_is_off(pytester: pytest.Pytester) -> None:
    # Installed, the plugin is part of every pytest session; off, it must cost (almost) nothing.
    pytester.makepyfile(
        """
        import sys

        def test_only_the_entry_point_is_loaded():
            loaded = sorted(m for m in sys.modules if m.startswith("pytest_agentic_evals"))
            assert loaded == ["pytest_agentic_evals", "pytest_agentic_evals.pytest_plugin",
                              "pytest_agentic_evals.pytest_plugin.entry",
                              "pytest_agentic_evals.pytest_plugin.hookspecs",
                              "pytest_agentic_evals.pytest_plugin.settings"]
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
