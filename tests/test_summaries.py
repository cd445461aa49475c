"""What people read: the terminal summary, Markdown for CI, JUnit properties, and `report`."""

from __future__ import annotations

import json
import os
import stat
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.jsonio import write_json_atomically

from conftest import MODES, make_skill, run_cli, skill_fixture


def mixed_run(pytester: pytest.Pytester) -> None:
    """Three fixtures: one READY, one with a flaky failing case, one blocked and broken."""
    make_skill(pytester, skill_fixture(skill="steady"), name="agentic_eval_steady.json")

    flaky = skill_fixture(skill="flaky", trials=3)
    flaky["cases"][0]["command"] = [
        "bash", "-c", '../run.sh Ada; [ "$AGENTIC_EVALS_TRIAL" != 2 ] || echo "lost the name"'
    ]
    flaky["cases"][0]["expected"]["stdout_excludes"] = ["lost the name"]
    make_skill(pytester, flaky, name="agentic_eval_flaky.json")

    blocked = skill_fixture(skill="upstream")
    blocked["cases"][0]["command"] = ["bash", "../run.sh", "SERVICE UNAVAILABLE"]
    blocked["cases"][0]["expected"] = {
        "exit_code": 0, "stdout_contains": ["hello, Ada"],
        "blocked_when_stdout_contains": ["SERVICE UNAVAILABLE"],
    }
    blocked["cases"].append({"name": "needs-tool", "type": "negative",
                             "command": ["some-tool-that-is-not-installed", "--check"],
                             "expected": {"exit_code": 1}})
    make_skill(pytester, blocked, name="agentic_eval_upstream.json")


@pytest.mark.parametrize("mode", MODES)
def test_terminal_summary_of_a_mixed_run(pytester: pytest.Pytester, mode: list[str]) -> None:
    mixed_run(pytester)
    args = ["--agentic-evals", "-p", "no:cacheprovider", *mode]
    result = pytester.runpytest(*args)
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "READY            fixtures/agentic_eval_steady.json (skill steady): "
        "2/2 cases passed, 0 failed, 0 blocked",
    ])
    # Its only fully passing case is a refusal: not usable (NOT_READY), and it says why.
    result.stdout.fnmatch_lines([
        "NOT_READY        fixtures/agentic_eval_flaky.json (skill flaky): "
        "1/2 cases passed, 1 failed, 0 blocked, 1 flaky",
        "  capability failures:",
        "    FAIL     greets (2/3 trials passed, flaky): trial 2: stdout_excludes: "
        "'lost the name' found in stdout",
    ], consecutive=True)
    # Nothing of the upstream fixture is the skill's own fault: no capability failures.
    result.stdout.fnmatch_lines([
        "* fixtures/agentic_eval_upstream.json (skill upstream): *",
        "  infrastructure problems:",
        "    BLOCKED  greets (0/2 trials passed): trial 1: blocked: precondition not met*",
        "    FAIL     needs-tool (0/2 trials passed): trial 1: command not found: "
        "some-tool-that-is-not-installed*",
    ], consecutive=True)


def test_colour_follows_pytest(pytester: pytest.Pytester) -> None:
    mixed_run(pytester)
    coloured = pytester.runpytest("--agentic-evals", "-p", "no:cacheprovider", "--color=yes")
    plain = pytester.runpytest("--agentic-evals", "-p", "no:cacheprovider", "--color=no")
    assert "\x1b[32mREADY" in coloured.stdout.str()
    assert "\x1b[" not in plain.stdout.str()


@pytest.mark.parametrize("mode", MODES)
def test_markdown_summary_and_github_step_summary(
    pytester: pytest.Pytester, mode: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    mixed_run(pytester)
    step_summary = pytester.path / "step-summary.md"
    step_summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    args = ["--agentic-evals", "-p", "no:cacheprovider", "--agentic-evals-md", "summary.md",
            *mode]
    result = pytester.runpytest(*args)
    assert result.ret == 1
    text = (pytester.path / "summary.md").read_text()
    assert text.startswith("## agentic-evals: NOT_READY\n")
    assert ("| **READY** | fixtures/agentic_eval_steady.json | steady | 2/2 | 0 | 0 | 0 | - |"
            in text)
    assert ("| greets | FAIL | 2/3 | 67% (21%-94%) | 0.00 | capability | trial 2: "
            "stdout_excludes: 'lost the name' found in stdout |") in text
    assert "| needs-tool | FAIL | 0/2 | 0% (0%-66%) | 0.00 | infrastructure |" in text
    assert step_summary.read_text() == "earlier step\n" + text


@pytest.mark.parametrize("mode", MODES)
def test_junit_xml_carries_trials_and_readiness(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    mixed_run(pytester)
    args = ["--agentic-evals", "-p", "no:cacheprovider", "--junitxml", "junit.xml", *mode]
    pytester.runpytest(*args)
    root = ElementTree.parse(pytester.path / "junit.xml").getroot()
    suite = root.find("testsuite")
    assert suite is not None
    suite_properties = {p.get("name"): p.get("value")
                        for p in suite.findall("properties/property")}
    assert suite_properties["agentic_evals_readiness"] == "NOT_READY"
    assert suite_properties["agentic_evals_readiness:fixtures/agentic_eval_flaky.json"] == (
        "NOT_READY")
    cases = {(c.get("classname"), c.get("name")): c for c in suite.iter("testcase")}
    flaky_trial = cases[("fixtures.agentic_eval_flaky.json", "greets[trial-2]")]
    properties = {p.get("name"): p.get("value") for p in flaky_trial.iter("property")}
    assert properties["case"] == "greets"
    assert properties["trial"] == "2"
    assert properties["outcome"] == "FAIL"
    assert properties["evidence_class"] == "deterministic"
    assert int(properties["duration_ms"]) >= 0


def test_report_command_renders_a_saved_report(pytester: pytest.Pytester) -> None:
    mixed_run(pytester)
    pytester.runpytest("--agentic-evals", "-p", "no:cacheprovider",
                       "--agentic-evals-report", "report.json")
    report = pytester.path / "report.json"
    table = run_cli("report", str(report))
    assert table.returncode == 0
    pytest.LineMatcher(table.stdout.splitlines()).fnmatch_lines(
        ["NOT_READY        fixtures/agentic_eval_flaky.json (skill flaky): *"])
    md = run_cli("report", str(report), "--format", "md")
    assert md.stdout.startswith("## agentic-evals: NOT_READY\n")


def test_report_command_refuses_what_is_not_a_report(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"schema": "agentic_evals.report.v2"}))
    result = run_cli("report", str(broken))
    assert result.returncode == 2
    assert "'readiness' is a required property" in result.stderr


def test_report_command_refuses_a_missing_file(tmp_path: Path) -> None:
    result = run_cli("report", str(tmp_path / "missing.json"))
    assert result.returncode == 2
    assert "missing.json" in result.stderr and "Traceback" not in result.stderr


def figures(report: dict[str, Any], case: str) -> dict[str, Any]:
    return next(c["reliability"] for c in report["cases"] if c["name"] == case)


def test_report_figures_match_the_trials(pytester: pytest.Pytester) -> None:
    mixed_run(pytester)
    pytester.runpytest("--agentic-evals", "-p", "no:cacheprovider",
                       "--agentic-evals-report", "report.json")
    reports = json.loads(Path(pytester.path / "report.json").read_text())["fixtures"]
    flaky = next(r for r in reports if r["skill"] == "flaky")
    assert figures(flaky, "greets") == {
        "passed": 2, "ran": 3, "pass_rate": 0.6667, "wilson_95": [0.2077, 0.9385],
        "pass_hat_k": {"1": 0.6667, "2": 0.3333, "3": 0.0}, "flaky": True, "infra_blocked": 0,
    }
    assert flaky["summary"]["flaky"] == 1
    assert figures(flaky, "refuses-empty-name")["flaky"] is False


def test_written_files_get_the_mode_of_any_new_file(tmp_path: Path) -> None:
    # A temporary file is private to its owner; a report others read must not stay so.
    target = tmp_path / "report.json"
    previous = os.umask(0o022)
    try:
        write_json_atomically(target, {"readiness": "READY"})
    finally:
        os.umask(previous)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert json.loads(target.read_text()) == {"readiness": "READY"}


def test_reports_are_indented_json_with_one_trial_per_line(tmp_path: Path) -> None:
    report = {"readiness": "READY", "cases": [
        {"name": "greets", "problems": [], "trials": [
            {"trial": 1, "outcome": "PASS", "stdout": {"head": "hello\n", "bytes": 6}},
            {"trial": 2, "outcome": "FAIL", "problems": ["exit code 1, expected 0"]}]}]}
    target = tmp_path / "report.json"
    write_json_atomically(target, report)
    text = target.read_text()
    assert json.loads(text) == report
    lines = text.splitlines()
    assert '        {"trial": 1, "outcome": "PASS", "stdout": {"head": "hello\\n", "bytes": 6}},' \
        in lines
    # Everything but the trials is laid out as json.dumps(indent=2) lays it out.
    without_trials = {"readiness": "READY", "cases": [{"name": "greets", "problems": []}]}
    write_json_atomically(target, without_trials)
    assert target.read_text() == json.dumps(without_trials, indent=2) + "\n"


@pytest.mark.parametrize("mode", MODES)
def test_a_scaffold_fixture_says_so_wherever_its_readiness_is_shown(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    scaffold = {"version": 2, "skill": "greeter", "trials": 2, "eval_kind": "scaffold",
                "cases": [{"name": "starts", "type": "positive",
                           "command": ["bash", "../run.sh", "Ada"],
                           "expected": {"exit_code": 0}}]}
    make_skill(pytester, scaffold)
    args = ["--agentic-evals", "-p", "no:cacheprovider", "--agentic-evals-md", "summary.md",
            "--agentic-evals-report", "report.json", "--agentic-evals-allow-exempt", *mode]
    result = pytester.runpytest(*args)
    result.stdout.fnmatch_lines([
        "READY (scaffold) fixtures/agentic_eval.json (skill greeter): 1/1 cases passed*"])
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["readiness"] == "READY" and report["eval_kind"] == "scaffold"
    assert any(note.startswith("scaffold fixture (eval_kind: scaffold)")
               for note in report["readiness_notes"])
    markdown = (pytester.path / "summary.md").read_text()
    assert markdown.startswith("## agentic-evals: READY (scaffold)\n")
    assert "| **READY (scaffold)** | fixtures/agentic_eval.json | greeter |" in markdown
    assert "### fixtures/agentic_eval.json: READY (scaffold)" in markdown
