"""The run's control: a required case whose verdict does not depend on the skill is no evidence.

Each attack below is a fixture whose command reaches the skill (so the load-time contract
accepts it) and then ignores what the skill did. Every one of them passed every trial against
a broken skill and made the fixture READY; the control fails its first trial.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.evidence.readback import entrypoint_reader
from pytest_agentic_evals.execution.environment import RunSettings
from pytest_agentic_evals.execution.sandbox import available_bwrap
from pytest_agentic_evals.expectations.builtin import builtin_kinds
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.model import FAIL, PASS, TrialResult
from pytest_agentic_evals.probes import control as control_module
from pytest_agentic_evals.probes.control import controlled, needs_control, run_control
from pytest_agentic_evals.probes.targets import contrary_exit, failed_control
from pytest_agentic_evals.report import report_problems

from conftest import MODES, RUN_SH, Skill, make_skill, run_cli, skill_fixture

BROKEN_RUN_SH = "#!/usr/bin/env bash\n# Broken: greets nobody, refuses nothing.\nexit 0\n"


def run_report(skill: Skill, data: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    path = skill.write(data)
    done = run_cli("run", str(path), "--", "-p", "no:randomly")
    report: dict[str, Any] = json.loads(done.stdout)  # one fixture: its own report
    return done.returncode, report, done.stderr


def case_of(report: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in report["cases"] if c["name"] == name)
    return found


def with_command(index: int, script: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    data = data or skill_fixture()
    data["cases"][index]["command"] = ["bash", "-c", script]
    return data


IGNORING_THE_SKILL = {
    "output-discarded": "bash ../run.sh Ada > /dev/null; echo hello, Ada",
    "failure-answered": "bash ../run.sh Ada || echo hello, Ada",
    "both-ways": "bash ../run.sh Ada >/dev/null 2>&1; echo hello, Ada; true",
    "dead-code-before": "E=exit; echo hello, Ada; $E 0; bash ../run.sh Ada",
}


@pytest.mark.parametrize("script", IGNORING_THE_SKILL.values(), ids=IGNORING_THE_SKILL.keys())
def test_a_real_world_case_ignoring_the_skill_fails_its_control(
    skill: Skill, script: str
) -> None:
    status, report, stderr = run_report(skill, with_command(0, script))
    greets = case_of(report, "greets")
    assert (status, report["readiness"], greets["outcome"]) == (1, "NOT_READY", FAIL)
    first = greets["trials"][0]
    assert first["control"]["status"] == "survived"
    assert first["control"]["stand_in_exit_code"] == 1
    assert any(p.startswith("control: the case passes just as well when bash script "
                            "../run.sh exits 1") for p in first["problems"])
    # Every trial passed: a failed control is not flakiness.
    assert greets["reliability"]["flaky"] is False
    assert greets["control"] == first["control"]
    assert "control: the case passes just as well" in stderr
    assert report_problems(report) == []


@pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed")
def test_a_perl_skill_gets_its_control_whatever_its_folder_is_called(tmp_path: Path) -> None:
    """The trial's folders are named after the skill's: an ``@`` in it once broke the Perl
    launcher, the stand-in never started, and the control said nothing."""
    skill = Skill(tmp_path / "greeter@x")
    (skill.root / "greet.pl").write_text('print "hello, $ARGV[0]\\n";\n')
    status, report, _ = run_report(skill, with_command(0, "perl ../greet.pl Ada"))
    assert case_of(report, "greets")["control"]["status"] == "killed"
    assert (status, report["readiness"]) == (0, "READY")


def test_a_conftest_in_the_skill_cannot_turn_the_control_off(skill: Skill) -> None:
    """Under agentic-evals run nothing in the evaluated tree configures the run: a conftest
    the agent writes beside its fixture, patching the control away, is never loaded."""
    switch_off = ("import pytest_agentic_evals.probes.control as control\n"
                  "control.needs_control = lambda case, result: False\n")
    (skill.root / "conftest.py").write_text(switch_off)
    (skill.fixtures / "conftest.py").write_text(switch_off)
    status, report, _ = run_report(skill, with_command(0, IGNORING_THE_SKILL["output-discarded"]))
    greets = case_of(report, "greets")
    assert (status, greets["outcome"], greets["control"]["status"]) == (1, FAIL, "survived")


def test_a_refusal_faked_around_the_skill_fails_its_control(skill: Skill) -> None:
    script = "bash ../run.sh '' 2>/dev/null; echo 'error: name required' >&2; exit 2"
    status, report, _ = run_report(skill, with_command(1, script))
    refusal = case_of(report, "refuses-empty-name")
    assert (status, refusal["outcome"]) == (1, FAIL)
    # Where a refusal is expected, the stand-in accepts: it exits 0.
    assert refusal["control"]["status"] == "survived"
    assert refusal["control"]["stand_in_exit_code"] == 0


def test_the_faked_fixture_is_ready_with_a_broken_skill_only_without_the_control(
    skill: Skill,
) -> None:
    """The attack works: against a skill that does nothing, the faked cases pass every trial
    (the control is what stands between them and READY)."""
    (skill.root / "run.sh").write_text(BROKEN_RUN_SH)
    data = with_command(0, IGNORING_THE_SKILL["output-discarded"])
    data = with_command(1, "bash ../run.sh '' 2>/dev/null; echo 'error: name required' >&2; "
                           "exit 2", data)
    status, report, _ = run_report(skill, data)
    assert status == 1 and report["readiness"] == "NOT_READY"
    for case in report["cases"]:
        assert [t["outcome"] for t in case["trials"]] == [FAIL, PASS]
        assert case["trials"][0]["control"]["status"] == "survived"


def test_an_honest_fixture_kills_the_control_and_stays_ready(skill: Skill) -> None:
    status, report, _ = run_report(skill, skill_fixture())
    assert (status, report["readiness"]) == (0, "READY")
    for case in report["cases"]:
        control = case["trials"][0]["control"]
        assert control["status"] == "killed" and control["killed_by"]
        assert "control" not in case["trials"][1]  # once per case, on its first trial
    assert report_problems(report) == []


def test_an_exit_code_the_command_passes_on_is_enough_to_kill_the_control(skill: Skill) -> None:
    data = skill_fixture()
    data["cases"][1]["expected"] = {"exit_code": 2}
    status, report, _ = run_report(skill, data)
    assert (status, report["readiness"]) == (0, "READY")
    assert case_of(report, "refuses-empty-name")["control"]["killed_by"] == [
        "exit_code: expected 2, got 0"]


def test_optional_cases_get_no_control(skill: Skill) -> None:
    data = skill_fixture()
    data["cases"].append({"name": "optional-fake", "type": "positive", "required": False,
                          "command": ["bash", "-c", IGNORING_THE_SKILL["output-discarded"]],
                          "expected": {"exit_code": 0, "stdout_contains": ["hello, Ada"]}})
    status, report, _ = run_report(skill, data)
    optional = case_of(report, "optional-fake")
    assert (status, optional["outcome"], optional["control"]) == (0, PASS, None)


def test_an_optional_case_supporting_a_claim_gets_a_control_and_fails_the_claim(
    skill: Skill,
) -> None:
    """An optional case never lowers readiness, but it counts for the claims it supports:
    a vacuous one must not prove a claim."""
    claim = {"id": "greets-people", "criticality": "critical", "claim_semantics": "other",
             "evidence_required": {"deterministic": True}}
    data = skill_fixture(capability_claims=[claim])
    data["cases"].append({"name": "optional-fake", "type": "positive", "required": False,
                          "supports_claims": ["greets-people"],
                          "command": ["bash", "-c", IGNORING_THE_SKILL["output-discarded"]],
                          "expected": {"exit_code": 0, "stdout_contains": ["hello, Ada"]}})
    status, report, _ = run_report(skill, data)
    optional = case_of(report, "optional-fake")
    assert (optional["outcome"], optional["control"]["status"]) == (FAIL, "survived")
    assert report["capability_readiness"]["greets-people"]["verdict"] == "FAILED"
    assert (status, report["readiness"]) == (1, "NOT_READY")


# Commands that reach the skill through something that is not one of its files: a test
# runner (not even installed here), a live URL, a script in a language no launcher of the
# stand-in is written in. The program that runs it is shadowed on PATH instead.
THROUGH_A_PROGRAM = {
    "test-runner": ("jest >/dev/null 2>&1; echo hello, Ada", "test runner jest", "jest"),
    "live-url": ("curl -s -m 2 https://greeter.invalid/; echo hello, Ada",
                 "live URL https://greeter.invalid/", "curl"),
    "lua-script": ("lua ../greet.lua 2>/dev/null; echo hello, Ada", "lua script ../greet.lua",
                   "lua"),
}


@pytest.mark.parametrize(("script", "entrypoint", "program"), THROUGH_A_PROGRAM.values(),
                         ids=THROUGH_A_PROGRAM.keys())
def test_a_case_ignoring_the_program_that_runs_the_skill_fails_its_control(
    skill: Skill, script: str, entrypoint: str, program: str
) -> None:
    (skill.root / "greet.lua").write_text('print("hello, " .. arg[1])\n')
    data = skill_fixture()
    data["cases"][0]["command"] = ["sh", "-c", script]
    status, report, _ = run_report(skill, data)
    greets = case_of(report, "greets")
    assert (status, report["readiness"], greets["outcome"]) == (1, "NOT_READY", FAIL)
    control = greets["trials"][0]["control"]
    assert control["status"] == "survived", control
    assert control["entrypoint"] == f"{entrypoint} (its program {program!r}, shadowed on PATH)"
    # The refusal, which runs the skill's own script, is controlled as before.
    assert case_of(report, "refuses-empty-name")["control"]["status"] == "killed"


def test_an_honest_case_through_a_program_kills_the_control_and_stays_ready(
    skill: Skill,
) -> None:
    (skill.root / "Makefile").write_text("check:\n\t./run.sh Ada\n")
    data = skill_fixture()
    data["cases"][0].update(command=["make", "-s", "check"], cwd="..")
    status, report, _ = run_report(skill, data)
    control = case_of(report, "greets")["control"]
    assert (status, report["readiness"], control["status"]) == (0, "READY", "killed")
    assert control["entrypoint"] == "test runner make check (its program 'make', shadowed on PATH)"


def test_a_program_looked_up_elsewhere_than_on_path_leaves_the_control_inconclusive(
    skill: Skill,
) -> None:
    """A command that sets its own PATH runs the real program: the stand-in never ran, which
    says nothing either way, and the case keeps its trials."""
    (skill.root / "Makefile").write_text("check:\n\t./run.sh Ada\n")
    data = skill_fixture()
    data["cases"][0].update(command=["env", f"PATH={os.environ['PATH']}", "make", "-s", "check"],
                            cwd="..")
    status, report, _ = run_report(skill, data)
    control = case_of(report, "greets")["control"]
    assert (status, control["status"]) == (0, "inconclusive"), control
    assert "only shadows the program on PATH" in control["reason"]


def test_a_case_without_a_swappable_entrypoint_keeps_its_trials_and_says_why(
    skill: Skill,
) -> None:
    make = shutil.which("make")
    assert make is not None
    (skill.root / "Makefile").write_text("check:\n\t./run.sh Ada\n")
    data = skill_fixture()
    data["cases"][0].update(command=[make, "-s", "check"], cwd="..")
    status, report, _ = run_report(skill, data)
    control = case_of(report, "greets")["control"]
    assert (status, control["status"]) == (0, "unprobed")
    assert "test runner make check" in control["reason"]
    assert f"names its program by path ({make})" in control["reason"]


def test_a_control_leaves_nothing_in_the_run_directory(
    skill: Skill, tmpdir_of_its_own: Path
) -> None:
    path = skill.write(with_command(0, IGNORING_THE_SKILL["output-discarded"]))
    done = run_cli("run", str(path), "--keep-workspaces")
    assert done.returncode == 1
    # The control's run, beside the real one, is gone; the real run is kept, with the failed
    # first trial's own workspace, as any failed trial's is.
    [run] = [p for p in tmpdir_of_its_own.rglob("run-*") if p.is_dir()]
    assert any(p.name == "trial-1" for p in run.rglob("trial-1"))


@pytest.mark.parametrize("mode", MODES)
def test_the_control_fails_the_first_trial_item_under_pytest(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_skill(pytester, with_command(0, IGNORING_THE_SKILL["failure-answered"]))
    argv = ["--agentic-evals", "-p", "no:cacheprovider", "-p", "no:randomly", *mode]
    result = pytester.runpytest(*argv)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([
        "*fixtures/agentic_eval.json: NOT_READY: required case(s) failed: greets*",
        "FAILED fixtures/agentic_eval.json::greets[[]trial-1[]] - control: the case passes*",
    ])
    assert result.ret == 1


needs_sandbox = pytest.mark.skipif(available_bwrap().problem is not None,
                                   reason="no sandbox on this machine")


@needs_sandbox
@pytest.mark.parametrize("script", ["{root}/run.sh Ada > /dev/null; echo hello, Ada",
                                    "cd {root} && ./run.sh Ada > /dev/null; echo hello, Ada"])
def test_naming_the_skill_by_absolute_path_does_not_dodge_the_control(
    skill: Skill, script: str
) -> None:
    """The trial runs in a copy of the skill; a command naming the original runs the
    original: the sandbox shows it the stand-in there too."""
    data = with_command(0, script.format(root=skill.root))
    status, report, _ = run_report(skill, data)
    assert (status, case_of(report, "greets")["control"]["status"]) == (1, "survived")


@needs_sandbox
def test_an_honest_case_naming_the_skill_by_absolute_path_kills_the_control(
    skill: Skill,
) -> None:
    status, report, _ = run_report(skill, with_command(0, f"{skill.root}/run.sh Ada"))
    assert (status, case_of(report, "greets")["control"]["status"]) == (0, "killed")


def test_without_the_sandbox_an_absolute_path_leaves_the_control_inconclusive(
    skill: Skill,
) -> None:
    """Unsandboxed, the original files are what such a command runs, stand-in or not: the
    control says nothing rather than condemn an honest case."""
    data = with_command(0, f"{skill.root}/run.sh Ada", skill_fixture(sandbox="off"))
    status, report, _ = run_report(skill, data)
    control = case_of(report, "greets")["control"]
    assert (status, control["status"]) == (0, "inconclusive")
    assert "names the skill's own directory by absolute path" in control["reason"]


def test_a_control_waiting_for_the_skill_is_cut_short(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that waits for what the skill produces waits in vain for the stand-in: the
    control stops at twice the first trial's time (at least the floor), not at the case's
    own timeout, and a control that timed out was killed (the case depends on the skill)."""
    monkeypatch.setattr(control_module, "CONTROL_FLOOR_SECONDS", 1.0)
    data = with_command(0, "bash ../run.sh Ada > out.txt; "
                           "until grep -q hello out.txt; do sleep 0.1; done; cat out.txt")
    data["cases"][0]["timeout_seconds"] = 600
    make_skill(pytester, data)
    result = pytester.runpytest("--agentic-evals", "-p", "no:cacheprovider", "-p", "no:randomly",
                                "--agentic-evals-report", "report.json")
    assert result.ret == 0, result.stdout.str()
    report = json.loads((pytester.path / "report.json").read_text())
    control = case_of(report, "greets")["control"]
    assert control["status"] == "killed"
    assert any("timed out after 1s" in problem for problem in control["killed_by"]), control


@pytest.fixture
def tool_outside() -> Iterator[Path]:
    """A greeting program outside the skill and outside /tmp (which the sandbox makes its
    own), as a fixture declares one in ``entrypoints``."""
    folder = Path(tempfile.mkdtemp(prefix="declared-", dir="/var/tmp"))
    tool = folder / "greet"
    tool.write_text(RUN_SH)
    tool.chmod(0o755)
    yield tool
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize(("sandbox", "script", "status"), [
    pytest.param("auto", "{tool} Ada", "killed", marks=needs_sandbox),
    pytest.param("auto", "{tool} Ada > /dev/null; echo hello, Ada", "survived",
                 marks=needs_sandbox),
    ("off", "{tool} Ada", "inconclusive"),
])
def test_a_declared_program_named_by_absolute_path_gets_its_control(
    skill: Skill, tool_outside: Path, sandbox: str, script: str, status: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Called by its absolute path, a declared program is looked up on no PATH, so the
    stand-in cannot shadow it there: the sandbox shows the stand-in at its path; without the
    sandbox the control says nothing."""
    monkeypatch.setenv("PATH", f"{tool_outside.parent}{os.pathsep}{os.environ['PATH']}")
    data = with_command(0, script.format(tool=tool_outside),
                        skill_fixture(entrypoints=["greet"], sandbox=sandbox))
    _, report, _ = run_report(skill, data)
    control = case_of(report, "greets")["control"]
    assert control["status"] == status, control
    assert control["entrypoint"] == f"entrypoint {tool_outside}"
    assert report["cases"][0]["outcome"] == (FAIL if status == "survived" else PASS)


def test_a_control_whose_directory_cannot_be_made_says_so_and_leaves_the_trial(
    skill: Skill, tmp_path: Path
) -> None:
    fixture = load_fixture(skill.write(skill_fixture()))
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # the run directory would have to be made under a file
    settings = RunSettings(run_id="x", run_dir=blocked / "run")
    control = run_control(fixture, fixture.cases[0], settings, builtin_kinds(), 0.1)
    assert control["status"] == "inconclusive"
    assert control["reason"].startswith("the control's directory cannot be made: ")
    assert controlled(result_of(1, PASS), control)["outcome"] == PASS


def result_of(trial: int, outcome: str) -> TrialResult:
    return {"trial": trial, "outcome": outcome, "exit_code": 0, "duration_ms": 1,
            "timed_out": False, "left_behind_processes": [], "problems": []}


def test_only_a_passing_first_trial_of_a_required_case_is_controlled(skill: Skill) -> None:
    data = skill_fixture()
    data["cases"].append({**data["cases"][0], "name": "optional", "required": False})
    fixture = load_fixture(skill.write(data))
    required, _, optional = fixture.cases
    assert needs_control(required, result_of(1, PASS))
    assert not needs_control(required, result_of(2, PASS))
    assert not needs_control(required, result_of(1, FAIL))
    assert not needs_control(optional, result_of(1, PASS))


def test_a_surviving_control_fails_the_trial_and_a_killed_one_leaves_it() -> None:
    survived = {"stand_in": "contrary", "status": "survived", "entrypoint": "bash script x",
                "stand_in_exit_code": 1}
    failed = controlled(result_of(1, PASS), survived)
    assert failed["outcome"] == FAIL and failed_control(failed)
    assert failed["problems"] == ["control: the case passes just as well when bash script x "
                                  "exits 1, prints nothing and writes nothing: its checks do not "
                                  "depend on the skill, so its trials are no evidence"]
    for status in ("killed", "inconclusive", "not_applicable", "unprobed"):
        kept = controlled(result_of(1, PASS), {**survived, "status": status})
        assert kept["outcome"] == PASS and not failed_control(kept) and not kept["problems"]


def test_the_stand_in_does_the_opposite_of_what_the_case_expects() -> None:
    assert [contrary_exit(code) for code in (0, 1, 2, 127)] == [1, 0, 0, 0]


# A live case whose read-back file the command fills itself, under a name the static
# judgement cannot see: the contrary stand-in's exit stops the '&&', a skill that does nothing
# and exits 0 lets the echo run.
FAKED_LIVE = ('bash ../run.sh Ada > /dev/null && echo hello, Ada > "$(printf greeting).txt"')
HONEST_LIVE = "bash ../run.sh Ada > greeting.txt"


def live_greeting(script: str) -> dict[str, Any]:
    data = with_command(0, script)
    data["cases"][0].update(evidence_class="live_e2e", expected={
        "exit_code": 0, "artifacts": [{"path": "greeting.txt", "lines_contain": ["hello, Ada"]}]})
    return data


def test_a_live_case_that_passes_a_skill_doing_nothing_fails_its_control(skill: Skill) -> None:
    """Live evidence must fail a skill that exits as expected and does nothing: after the
    contrary stand-in, a live case plays the noop one too."""
    status, report, stderr = run_report(skill, live_greeting(FAKED_LIVE))
    greets = case_of(report, "greets")
    assert (status, report["readiness"], greets["outcome"]) == (1, "NOT_READY", FAIL)
    control = greets["trials"][0]["control"]
    assert (control["stand_in"], control["status"], control["stand_in_exit_code"]) == (
        "noop", "survived", 0)
    assert "exits 0, prints nothing and writes nothing" in stderr
    assert report_problems(report) == []


def test_an_honest_live_case_kills_the_noop_control(skill: Skill) -> None:
    status, report, _ = run_report(skill, live_greeting(HONEST_LIVE))
    control = case_of(report, "greets")["control"]
    assert (status, report["readiness"]) == (0, "READY")
    assert (control["stand_in"], control["status"]) == ("noop", "killed")
    assert any("greeting.txt" in reason for reason in control["killed_by"])


def test_a_deterministic_case_gets_only_the_contrary_control(skill: Skill) -> None:
    """A check that is only an exit code is enough for mechanism evidence: the noop
    stand-in, which exits as expected, is played for live cases only."""
    status, report, _ = run_report(skill, skill_fixture())
    assert (status, report["readiness"]) == (0, "READY")
    assert {case["control"]["stand_in"] for case in report["cases"]} == {"contrary"}


def test_an_adversarial_live_case_that_passes_a_skill_doing_nothing_fails_its_control(
        skill: Skill) -> None:
    """Live qualification asks every live case for an oracle that a skill doing nothing
    fails, whatever its type: the noop control checks it on a refusal too."""
    data = skill_fixture()
    data["cases"][1].update(
        evidence_class="adversarial_live_e2e",
        command=["bash", "-c", "bash ../run.sh '' 2>/dev/null; test $? = 2 && "
                 "echo refused > \"$(printf audit).txt\"; exit 2"],
        expected={"exit_code": 2,
                  "artifacts": [{"path": "audit.txt", "lines_contain": ["refused"]}]})
    status, report, _ = run_report(skill, data)
    refusal = case_of(report, "refuses-empty-name")
    assert (status, refusal["outcome"]) == (1, FAIL)
    control = refusal["trials"][0]["control"]
    assert (control["stand_in"], control["status"], control["stand_in_exit_code"]) == (
        "noop", "survived", 2)


def test_a_command_cannot_tell_the_control_by_its_directory(skill: Skill) -> None:
    """The stand-in's trial runs in a run directory made and named like any run's, under its
    own run id: a command that looks at its path or its run id sees a trial like another."""
    by_path = ('case "$PWD$AGENTIC_EVALS_TRIAL_DIR" in *control*) exit 3;; esac; '
               'case "$PWD" in *"run-$AGENTIC_EVALS_RUN_ID/"*) ;; *) exit 3;; esac; '
               + IGNORING_THE_SKILL["output-discarded"])
    status, report, _ = run_report(skill, with_command(0, by_path))
    greets = case_of(report, "greets")
    assert (status, greets["outcome"], greets["control"]["status"]) == (1, FAIL, "survived")


def test_a_control_that_said_nothing_is_named_in_the_summary(skill: Skill) -> None:
    """A case whose control says nothing (here the command finds its program outside PATH)
    is READY on the load-time reading of its command alone: the summary names it and says
    why, where a reviewer reads the verdict."""
    (skill.root / "Makefile").write_text("check:\n\t./run.sh Ada\n")
    data = skill_fixture()
    data["cases"][0].update(command=["env", f"PATH={os.environ['PATH']}", "make", "-s", "check"],
                            cwd="..")
    status, report, stderr = run_report(skill, data)
    assert (status, report["readiness"]) == (0, "READY")
    lines = stderr.splitlines()
    assert "  controls that said nothing (these verdicts are not shown to depend on the " \
        "skill):" in lines
    [line] = [line for line in lines if line.startswith("    greets: inconclusive (contrary): ")]
    assert "only shadows the program on PATH" in line


# A broken skill that keeps the word a command looks for in its file.
TELLING_RUN_SH = BROKEN_RUN_SH.replace("nobody", "nobody: hello")
TELLING_APART = {
    "exits-first": "grep -q hello ../run.sh || exit 3; ",
    "runs-the-stand-in-then-fails": "grep -q hello ../run.sh || { bash ../run.sh Ada; exit 3; }; ",
    "by-a-pattern": "grep -q hello ../r?n.sh || { bash ../run.sh Ada; exit 3; }; ",
    "on-its-input": "[ \"$(grep -c hello < ../run.sh)\" = 1 ] || { bash ../run.sh Ada; exit 3; }; ",
    "through-a-variable": "F=../run.sh; grep -q hello $F || { bash ../run.sh Ada; exit 3; }; ",
    # A stand-in is written when its control is played: newer than the skill's other files.
    "by-its-age": "[ ../run.sh -ot ../SKILL.md ] || { bash ../run.sh Ada; exit 3; }; ",
}


@pytest.mark.parametrize("how", TELLING_APART)
def test_a_command_that_reads_its_entrypoint_is_no_evidence(skill: Skill, how: str) -> None:
    """A command that reads the file a stand-in replaces can tell the stand-in from the skill
    and fail on purpose: its control then says nothing, or even says killed, and a broken skill
    was READY. Such a command is no evidence: the first trial fails, and the control says
    which program read the file."""
    (skill.root / "run.sh").write_text(TELLING_RUN_SH)
    os.utime(skill.root / "run.sh", (1e9, 1e9))  # older than SKILL.md
    data = with_command(0, TELLING_APART[how] + IGNORING_THE_SKILL["output-discarded"])
    status, report, stderr = run_report(skill, data)
    greets = case_of(report, "greets")
    control = greets["control"]
    assert (status, greets["outcome"], control["status"]) == (1, FAIL, "reads_the_entrypoint")
    assert report_problems(report) == []
    assert "could tell the stand-in from the skill" in greets["trials"][0]["problems"][-1]
    assert "control: the command reads " in stderr


@pytest.mark.parametrize("look", ["chmod +x ../run.sh && ", "test -x ../run.sh && ",
                                  "[ -f ../run.sh ] && "])
def test_a_command_that_only_checks_its_entrypoint_is_there_keeps_its_control(
    skill: Skill, look: str
) -> None:
    status, report, _ = run_report(skill, with_command(0, look + "bash ../run.sh Ada"))
    greets = case_of(report, "greets")
    assert (status, greets["outcome"], greets["control"]["status"]) == (0, PASS, "killed")


@pytest.mark.parametrize(("script", "reader"), [
    ("bash ../run.sh Ada", None),
    ("../run.sh Ada | grep -q hello", None),
    ("grep -q hello ../README.md && bash ../run.sh Ada", None),
    ("test -s ../run.sh && chmod +x ../run.sh && ../run.sh Ada", None),
    ("[ ../run.sh -nt x ] && ../run.sh Ada", "[ ../run.sh -nt x ]"),
    ("[[ -x ../run.sh && ../run.sh -ef ../run.sh ]] && ../run.sh Ada",
     "[[ -x ../run.sh && ../run.sh -ef ../run.sh ]]"),
    ("cat ../run.sh > /dev/null; bash ../run.sh Ada", "cat ../run.sh"),
    ("cd .. && sha256sum run.sh && ./run.sh Ada", "sha256sum run.sh"),
    ("wc -c < ../run.sh; ../run.sh Ada", "wc -c < ../run.sh"),
    ("head -c1 ../*.sh; ../run.sh Ada", "head -c1 ../*.sh"),
    ("diff {root}/run.sh x; ../run.sh Ada", "diff {root}/run.sh x"),
    ("bash -c 'grep -q hello ../run.sh' && ../run.sh Ada", "grep -q hello ../run.sh"),
    ("X=$(< ../run.sh); ../run.sh Ada", "< ../run.sh"),
    ("while read -r line; do :; done < ../run.sh; ../run.sh Ada", "< ../run.sh"),
    ("F=../run.sh; bash $F Ada", None),
    ("find . -name '*.sh'; ../run.sh Ada", None),
    ("echo ../run.sh; basename ../run.sh; ../run.sh Ada", None),
    ("echo ../run.sh -nt; ../run.sh Ada", None),
])
def test_the_program_that_reads_the_entrypoint_is_found_before_anything_runs(
    skill: Skill, script: str, reader: str | None
) -> None:
    (skill.root / "README.md").write_text("hello\n")
    root = str(skill.root)
    fixture = load_fixture(skill.write(with_command(0, script.format(root=root))))
    found = entrypoint_reader(fixture.cases[0], skill.root / "run.sh")
    assert found == (reader.format(root=root) if reader else None)
