"""The plugin through real pytest sessions (pytester), serially and under xdist ``-n 2``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_agentic_evals.schemas import schema_text

from conftest import MODES, interruptible, make_skill, pid_alive, skill_fixture


def run(pytester: pytest.Pytester, *args: str, mode: list[str] = ()) -> pytest.RunResult:
    report = pytester.path / "report.json"
    if report.exists():
        report.unlink()
    argv = ["--agentic-evals", "--agentic-evals-report", str(report), "-p", "no:cacheprovider",
            "-p", "no:randomly", *mode, *args]
    if mode:
        return pytester.runpytest_subprocess(*argv, timeout=240)
    return pytester.runpytest(*argv)


def read_report(pytester: pytest.Pytester) -> dict[str, Any]:
    report = json.loads((pytester.path / "report.json").read_text())
    schema_name = "session_report" if "fixtures" in report else "report"
    registry_schema = json.loads(schema_text("report"))
    resolver_store = {registry_schema["$id"]: registry_schema}
    from referencing import Registry, Resource

    registry = Registry().with_resources(
        (uri, Resource.from_contents(contents)) for uri, contents in resolver_store.items()
    )
    jsonschema.Draft202012Validator(json.loads(schema_text(schema_name)),
                                    registry=registry).validate(report)
    return report


def outcomes(report: dict[str, Any]) -> dict[str, str]:
    return {case["name"]: case["outcome"] for case in report["cases"]}


# -- collection ----------------------------------------------------------------------------


def test_items_are_one_per_case_and_trial_in_a_stable_order(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture(trials=3))
    first = run(pytester, "--collect-only", "-q")
    second = run(pytester, "--collect-only", "-q")
    ids = [line for line in first.outlines if "::" in line]
    assert ids == [line for line in second.outlines if "::" in line]
    assert ids == [f"fixtures/agentic_eval.json::{case}[trial-{n}]"
                   for case in ("greets", "refuses-empty-name") for n in (1, 2, 3)]


def test_not_collected_without_the_flag(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture())
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    assert "agentic_eval.json::" not in result.stdout.str()
    pytester.makeini("[pytest]\nagentic_evals = true\n")
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    assert "fixtures/agentic_eval.json::greets[trial-1]" in result.stdout.str()


def test_explicit_json_of_any_name_and_custom_patterns(pytester: pytest.Pytester) -> None:
    path = make_skill(pytester, skill_fixture(), name="my-evals.json")
    result = run(pytester, "--collect-only", "-q")
    assert "my-evals.json" not in result.stdout.str()
    result = run(pytester, str(path), "--collect-only", "-q")
    assert "fixtures/my-evals.json::greets[trial-1]" in result.stdout.str()
    pytester.makeini("[pytest]\nagentic_evals_files = my-*.json\n")
    result = run(pytester, "--collect-only", "-q")
    assert "fixtures/my-evals.json::greets[trial-1]" in result.stdout.str()


def test_k_selects_cases_and_tags(pytester: pytest.Pytester) -> None:
    data = skill_fixture()
    data["cases"][1]["tags"] = ["edge"]
    make_skill(pytester, data)
    result = run(pytester, "--collect-only", "-q", "-k", "greets")
    assert "2/4 tests collected" in result.stdout.str()
    result = run(pytester, "--collect-only", "-q", "-k", "edge")
    assert "refuses-empty-name[trial-1]" in result.stdout.str()
    assert "2/4 tests collected" in result.stdout.str()
    result = run(pytester, "--collect-only", "-q", "-m", "edge", "--strict-markers")
    assert "2/4 tests collected" in result.stdout.str()
    result = run(pytester, "fixtures/agentic_eval.json::greets[trial-2]", "--collect-only", "-q")
    assert "1 test collected" in result.stdout.str()


def test_a_rejected_fixture_is_a_collection_error_without_traceback(
    pytester: pytest.Pytester,
) -> None:
    make_skill(pytester, skill_fixture())
    make_skill(pytester, {"version": 2, "trials": 1, "cases": [
        {"name": "x", "type": "positive", "command": ["echo", "ok"], "expected": {"exit_code": 0}}
    ]}, name="agentic_eval_slush.json")
    result = run(pytester, "--collect-only", "-q")
    text = result.stdout.str()
    assert "fixture rejected (4 problem(s))" in text
    assert "/trials: trials is 1" in text
    assert "proves nothing" in text
    assert "Traceback" not in text
    assert "agentic_eval.json::greets[trial-1]" in text  # the good fixture still collects
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
    report = read_report(pytester)
    assert report["readiness"] == "READY"
    assert report["selection"] == "full"
    assert report["summary"]["passed"] == 2
    assert [t["trial"] for t in report["cases"][0]["trials"]] == [1, 2]
    assert "READY" in result.stdout.str()


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
    text = result.stdout.str()
    assert "case 'greets', trial 1 of 2: FAIL" in text
    assert "stdout_contains: 'goodbye' not found in stdout" in text
    assert "| hello, Ada" in text  # an excerpt of what was seen
    report = read_report(pytester)
    assert report["readiness"] == "USABLE_WITH_GAPS"
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
    result.stdout.fnmatch_lines(["*agentic-evals: session failed, not READY*",
                                 "*required case(s) blocked: greets*"])
    report = read_report(pytester)
    assert outcomes(report)["greets"] == "BLOCKED"
    assert report["readiness"] == "USABLE_WITH_GAPS"


def test_a_marker_does_not_hide_a_passing_trial(pytester: pytest.Pytester) -> None:
    data = skill_fixture()
    data["cases"][0]["blocked_when_stdout_contains"] = ["hello"]
    make_skill(pytester, data)
    result = run(pytester)
    assert result.ret == 0
    report = read_report(pytester)
    assert report["cases"][0]["trials"][0]["blocked_markers_seen"] == ["hello"]
    assert report["readiness"] == "READY"


def test_report_only_keeps_the_report_but_not_the_gate(pytester: pytest.Pytester) -> None:
    data = skill_fixture()
    data["cases"][0]["expected"]["exit_code"] = 5
    data["cases"][0]["required"] = True
    data["cases"][0]["blocked_when_stdout_contains"] = ["hello"]
    make_skill(pytester, data)
    result = run(pytester, "--agentic-evals-report-only")
    assert result.ret == 0
    assert "would fail (report only)" in result.stdout.str()
    assert read_report(pytester)["readiness"] == "USABLE_WITH_GAPS"


@pytest.mark.parametrize("mode", MODES)
def test_partial_runs_are_never_ready_but_exit_on_what_ran(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_skill(pytester, skill_fixture())
    result = run(pytester, "-k", "greets", mode=mode)
    assert result.ret == 0
    report = read_report(pytester)
    assert report["selection"] == "partial"
    assert report["readiness"] != "READY"
    assert outcomes(report) == {"greets": "PASS", "refuses-empty-name": "NOT_TESTED"}
    assert "partial run" in result.stdout.str()


def test_case_option_selects_exactly_and_rejects_unknown_names(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture())
    result = run(pytester, "--agentic-evals-case", "greets")
    assert result.ret == 0
    assert outcomes(read_report(pytester))["refuses-empty-name"] == "NOT_TESTED"
    result = run(pytester, "--agentic-evals-case", "nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "unknown case(s): nope" in result.stdout.str()


def test_trials_override_never_goes_below_the_minimum(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture())
    result = run(pytester, "--agentic-evals-trials", "1", "--collect-only", "-q")
    assert "4 tests collected" in result.stdout.str()
    result = run(pytester, "--agentic-evals-trials", "3", "--collect-only", "-q")
    assert "6 tests collected" in result.stdout.str()
    data = skill_fixture(trials=4)
    make_skill(pytester, data)
    result = run(pytester, "--agentic-evals-trials", "2")
    assert result.ret == 0  # every selected trial passed ...
    report = read_report(pytester)
    assert report["selection"] == "partial"  # ... but two of four trials are not READY
    assert report["readiness"] == "USABLE_WITH_GAPS"
    assert report["readiness_notes"] == [
        "partial run: 2 trials per case, fewer than the 4 the fixture declares"]
    result = run(pytester, "--agentic-evals-trials", "many")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--agentic-evals-trials: 'many' is not a valid int" in result.stderr.str()


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
    xml = (pytester.path / "junit.xml").read_text()
    assert '<property name="case" value="greets"' in xml
    assert '<property name="trial" value="2"' in xml
    assert '<property name="outcome" value="PASS"' in xml
    assert '<property name="evidence_class" value="deterministic"' in xml


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
              'pytest=${PYTEST_CURRENT_TEST:-none}"; ../run.sh x; read line || echo stdin-closed')
    data["cases"][0]["command"] = ["bash", "-c", script]
    data["cases"][0]["env"] = {"FROM_CASE": "c"}
    data["cases"][0]["expected"] = {"exit_code": 0, "stdout_matches": [
        r"trial=(\d) run=(\w+) arg=\1/\2 seed=\d+ fx=f case=c pytest=none"],
        "stdout_contains": ["stdin-closed"]}
    make_skill(pytester, data)
    assert run(pytester).ret == 0, pytester.path.joinpath("report.json").read_text()


# -- bad inputs and process hygiene ----------------------------------------------------------

LEAKS = {
    "background-child": "sleep 300 & echo started",
    "setsid-escape": "setsid sleep 300 & echo started",
    "double-fork": "( ( sleep 300 & ) & ); echo started",
    "ignores-term": "bash -c 'trap \"\" TERM; sleep 300' & echo started",
    "holds-stdout": "(sleep 300; echo late) & echo started",
}


@pytest.mark.parametrize("mode", MODES)
def test_left_behind_processes_fail_the_trial_and_are_killed(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    data = skill_fixture()
    for name, script in LEAKS.items():
        data["cases"].append({"name": name, "type": "adversarial",
                              "command": ["bash", "-c", "../run.sh x; " + script],
                              "expected": {"exit_code": 0, "stdout_contains": ["started"]}})
    data["cases"].append({"name": "times-out", "type": "adversarial", "timeout_seconds": 1,
                          "command": ["bash", "-c", "trap '' TERM; ../run.sh x; sleep 300"],
                          "expected": {"exit_code": 0}})
    make_skill(pytester, data)
    started = time.monotonic()
    result = run(pytester, mode=mode)
    assert time.monotonic() - started < 120
    assert result.ret == 1
    report = read_report(pytester)
    for case in report["cases"][2:]:
        assert case["outcome"] == "FAIL", case["name"]
        for trial in case["trials"]:
            pids = [p["pid"] for p in trial["left_behind_processes"]]
            if case["name"] != "times-out":
                assert pids, case["name"]
                # Caught before its exec, a survivor shows its parent's command line, or the
                # name of the program it is leaving ([setsid]); never nothing.
                commands = [p["command"] for p in trial["left_behind_processes"]]
                assert all(commands) and any("sleep" in c or "setsid" in c for c in commands)
                assert "process(es) behind" in " ".join(trial["problems"])
            else:
                assert trial["timed_out"] is True
                assert "timed out after 1s" in trial["problems"][0]
            assert not [pid for pid in pids if pid_alive(pid)]


def test_missing_and_non_executable_programs_fail_with_a_reason(
    pytester: pytest.Pytester,
) -> None:
    data = skill_fixture()
    (pytester.path / "not-executable.sh").write_text("#!/bin/sh\necho hi\n")
    data["cases"] += [
        {"name": "missing", "type": "negative", "command": ["no-such-program-here"],
         "expected": {"exit_code": 0}},
        {"name": "not-executable", "type": "negative", "command": ["../not-executable.sh"],
         "expected": {"exit_code": 0}},
        {"name": "binary-output", "type": "negative",
         "command": ["bash", "-c", "../run.sh x > /dev/null; printf '\\xff\\xfe\\x80 done'"],
         "expected": {"exit_code": 0, "stdout_contains": ["done"]}},
        {"name": "pointer-into-string", "type": "negative",
         "command": ["bash", "-c", "../run.sh x; echo '\"text\"' > out.json"],
         "expected": {"exit_code": 0, "artifacts": [{"path": "out.json", "json_pointer": "/0"}]}},
    ]
    make_skill(pytester, data)
    result = run(pytester)
    assert result.ret == 1
    assert "Traceback" not in result.stdout.str()
    report = read_report(pytester)
    problems = {case["name"]: case["problems"] for case in report["cases"]}
    assert problems["missing"][0] == "trial 1: command not found: no-such-program-here"
    assert "not executable: ../not-executable.sh" in problems["not-executable"][0]
    assert outcomes(report)["binary-output"] == "PASS"
    assert "does not resolve" in problems["pointer-into-string"][0]
    assert report["cases"][2]["infrastructure_failure"] is True


@pytest.mark.parametrize("mode", MODES)
def test_a_crashed_worker_counts_as_a_failed_trial(
    pytester: pytest.Pytester, mode: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only workers of the inner session may crash, never a worker running this test suite.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makeconftest(
        """
        import os
        from pytest_agentic_evals.expectations import ExpectationKind

        def crash(value, observation):
            if value == "worker" and os.environ.get("PYTEST_XDIST_WORKER"):
                os._exit(1)
            return [] if value == "worker" else ["crash: unexpected value"]

        def pytest_agentic_evals_expectation_kinds():
            return [ExpectationKind("crash", crash, {"type": "string"})]
        """
    )
    data = skill_fixture()
    data["cases"][0]["expected"]["crash"] = "worker"
    make_skill(pytester, data)
    result = run(pytester, mode=mode)
    report = read_report(pytester)
    if mode:
        assert result.ret == 1
        assert outcomes(report)["greets"] == "FAIL"
        assert "crashed" in " ".join(report["cases"][0]["problems"])
    else:
        assert result.ret == 0  # the custom kind passes when no worker is involved
        assert outcomes(report)["greets"] == "PASS"


def test_a_custom_expectation_kind_is_checked_and_validated(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        from pytest_agentic_evals.expectations import ExpectationKind

        def lines(value, observation):
            count = observation.stdout_path.read_text().count("\\n")
            return [] if count == value else [f"stdout_lines: expected {value}, got {count}"]

        def pytest_agentic_evals_expectation_kinds():
            return [ExpectationKind("stdout_lines", lines, {"type": "integer"})]
        """
    )
    data = skill_fixture()
    data["cases"][0]["expected"]["stdout_lines"] = 2
    make_skill(pytester, data)
    result = run(pytester)
    assert result.ret == 1
    assert "stdout_lines: expected 2, got 1" in result.stdout.str()
    data["cases"][0]["expected"]["stdout_lines"] = "two"
    make_skill(pytester, data)
    result = run(pytester)
    assert "/cases/0/expected/stdout_lines" in result.stdout.str()


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


# The self-serving fixtures the contract exists to refuse, each with the words that name why.
SLUSH = {
    "echo-and-true": ({"command": ["bash", "-c", "echo ok; true"]}, "proves nothing"),
    "login-shell-echo": ({"command": ["bash", "-lc", "echo hi"]}, "proves nothing"),
    "absolute-shell-printf": ({"command": ["/bin/sh", "-c", "printf x"]}, "proves nothing"),
    "env-wrapped-true": ({"command": ["env", "FOO=1", "bash", "-c", "true"]}, "proves nothing"),
    "echo-run-sh": ({"command": ["echo", "run.sh"]}, "is not real-world"),
    "missing-script": ({"command": ["bash", "../missing.sh"]}, "is not real-world"),
}


def slush_fixture(case_override: dict[str, Any]) -> dict[str, Any]:
    data = skill_fixture()
    data["cases"][0].update(case_override)  # the only real-world case
    return data


@pytest.mark.parametrize("mode", MODES)
def test_every_self_serving_fixture_is_refused_at_collection(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    for name, (override, _) in SLUSH.items():
        make_skill(pytester, slush_fixture(override), name=f"agentic_eval_{name}.json")
    compliance = skill_fixture(eval_tier="compliance", eval_kind="scaffold")
    compliance["cases"].append({"name": "sampled", "type": "adversarial",
                                "command": ["../run.sh", "--samples=5"],
                                "expected": {"exit_code": 0}})
    make_skill(pytester, compliance, name="agentic_eval_compliance.json")
    result = run(pytester, mode=mode)
    text = result.stdout.str()
    assert result.ret != 0  # serial pytest says INTERRUPTED, xdist says TESTS_FAILED
    for name, (_, words) in SLUSH.items():
        assert f"agentic_eval_{name}.json: /cases/0/command: real_world case" in text, name
        assert words in text
    assert text.count("proves nothing") >= 4
    assert "compliance fixture can never be exempt" in text
    assert "--samples 5" in text
    assert "Traceback" not in text


def test_the_gate_explains_itself_in_red(pytester: pytest.Pytester) -> None:
    data = skill_fixture()
    data["cases"][0]["expected"] = {"exit_code": 3, "blocked_when_stdout_contains": ["hello"]}
    make_skill(pytester, data)
    result = run(pytester, "--color=yes")
    assert result.ret == 1
    red = "\x1b[31m"
    lines = [line for line in result.outlines if "session failed, not READY" in line]
    assert lines and red in lines[0]
    assert any(red in line and "required case(s) blocked: greets" in line
               for line in result.outlines)


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
    assert result.ret == 1
    assert read_report(pytester)["readiness"] == "READY"  # what is written may be annotated


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


def test_outside_outputs_are_never_deleted_but_must_be_fresh(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    outside = tmp_path / "shared-results.json"
    outside.write_text('{"ok": true}')  # stale: written before the run
    data = skill_fixture()
    data["cases"][0]["expected"]["artifacts"] = [
        {"path": str(outside), "outside_workspace": True, "json_pointer": "/ok", "is_true": True}
    ]
    make_skill(pytester, data)
    assert run(pytester).ret == 1
    assert outside.exists()  # a file outside the workspace is never removed
    problem = read_report(pytester)["cases"][0]["problems"][0]
    assert "not written during this trial" in problem
    write_fresh = f"../run.sh Ada; echo '{{\"ok\": true}}' > {outside}"
    data["cases"][0]["command"] = ["bash", "-c", write_fresh]
    make_skill(pytester, data)
    assert run(pytester).ret == 0
