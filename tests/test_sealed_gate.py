"""Attacks on the verdict from inside a fixture, through the real CLI and real pytest sessions.

Each attack must end not READY and non-zero (or refused with exit 2 and a clear message), and
the same skill without the attack must keep its honest verdict: optional cases that carry the
anti-slush contract, generic programs passed off as real-world, a stub fallback behind a
blocked marker filling a live slot, exit statuses that disagree with the verdict, and case
names that break a pytest node id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import MODES, Skill, make_skill, run_cli, skill_fixture, with_failing_optional_case


def run_pytest(pytester: pytest.Pytester, mode: list[str], *args: str) -> pytest.RunResult:
    argv = ["--agentic-evals", "--agentic-evals-report", "report.json", "-p", "no:cacheprovider",
            "-p", "no:randomly", *mode, *args]
    return pytester.runpytest(*argv)


def pytest_report(pytester: pytest.Pytester) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((pytester.path / "report.json").read_text())
    return report


def outcomes(report: dict[str, Any]) -> dict[str, str]:
    return {case["name"]: case["outcome"] for case in report["cases"]}


def refused_by_cli(path: Path, cwd: Path, *messages: str) -> None:
    """Both validate and run refuse the fixture with exit 2, naming every message."""
    for command in ("validate", "run"):
        result = run_cli(command, str(path), cwd=cwd)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert "VALID" not in result.stdout
        if command == "run":
            assert result.stdout == ""  # nothing ran, no report
        for message in messages:
            assert message in result.stderr, (command, result.stderr)
        assert "Traceback" not in result.stderr


def refused_by_pytest(pytester: pytest.Pytester, mode: list[str], *messages: str) -> None:
    result = run_pytest(pytester, mode)
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), \
        result.stdout.str()
    result.stdout.fnmatch_lines(["fixture rejected*"])
    for message in messages:  # each on a line of its own, in any order
        result.stdout.fnmatch_lines(["*" + message.replace("[", "[[]") + "*"])
    result.stdout.no_fnmatch_line("*Traceback*")
    assert not (pytester.path / "report.json").exists() or \
        pytest_report(pytester)["readiness"] != "READY"


# -- attack 5: optional cases carrying the contract ------------------------------------------


def optional_duties(blocked: bool = True) -> dict[str, Any]:
    """The only negative case and the only real-world case are optional (and BLOCKED every
    trial); one required, ordinary positive case does the rest."""
    data = skill_fixture()
    for case in data["cases"]:
        case["required"] = False
        if blocked:
            case["command"] = ["bash", "../run.sh", "SERVICE DOWN"]
            case["expected"] = {"exit_code": 0,
                                "blocked_when_stdout_contains": ["SERVICE DOWN"]}
    data["cases"].append({"name": "greets-bob", "type": "positive",
                          "command": ["bash", "../run.sh", "Bob"],
                          "expected": {"exit_code": 0, "stdout_contains": ["hello, Bob"]}})
    return data


OPTIONAL_MESSAGES = (
    "/cases: no negative or adversarial case among the required cases",
    "'refuses-empty-name' is \"required\": false, and an optional case never counts for the "
    "contract",
    "/cases: no real-world case among the required cases",
    "'greets' is \"required\": false",
)


def test_optional_cases_cannot_carry_the_contract_cli(skill: Skill) -> None:
    refused_by_cli(skill.write(optional_duties()), skill.root, *OPTIONAL_MESSAGES)
    honest = skill_fixture()
    honest["cases"].append(optional_duties()["cases"][-1])
    result = run_cli("run", str(skill.write(honest)), cwd=skill.root)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["readiness"] == "READY"


@pytest.mark.parametrize("mode", MODES)
def test_optional_cases_cannot_carry_the_contract_pytest(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_skill(pytester, optional_duties())
    refused_by_pytest(pytester, mode, *OPTIONAL_MESSAGES)


# -- attack 6: generic programs passed off as real-world -------------------------------------


GENERIC = {
    "bash-c-date": ["bash", "-c", "date"],
    "mktemp": ["mktemp", "-d"],
    "cp": ["cp", "../run.sh", "copy.sh"],
}


def with_real_world(command: list[str]) -> dict[str, Any]:
    data = skill_fixture()
    data["cases"][0]["command"] = command
    data["cases"][0]["expected"] = {"exit_code": 0}
    return data


@pytest.mark.parametrize("name", sorted(GENERIC))
def test_generic_programs_are_not_real_world_cli(skill: Skill, name: str) -> None:
    refused_by_cli(skill.write(with_real_world(GENERIC[name])), skill.root,
                   "/cases/0/command: real_world case 'greets' is not real-world:",
                   "is a generic program found on PATH", "not the skill's own code")


@pytest.mark.parametrize("mode", MODES)
def test_generic_programs_are_not_real_world_pytest(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_skill(pytester, with_real_world(["bash", "-c", "date"]))
    refused_by_pytest(pytester, mode, "is a generic program found on PATH")


@pytest.mark.parametrize("script", ["R=../run.sh; $R Ada", "R={root}/run.sh; $R Ada"])
def test_the_skills_own_entrypoint_through_a_variable_is_real_world(
    skill: Skill, script: str
) -> None:
    data = skill_fixture()
    data["cases"][0]["command"] = ["bash", "-c", script.format(root=skill.root)]
    result = run_cli("run", str(skill.write(data)), cwd=skill.root)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["readiness"] == "READY"


def test_an_undeclared_program_on_path_is_not_the_skills_own(skill: Skill) -> None:
    refused_by_cli(skill.write(with_real_world(["sort", "--version"])), skill.root,
                   "sort is a generic program found on PATH")


def test_a_declared_entrypoint_counts(skill: Skill) -> None:
    data = with_real_world(["sort", "--version"])
    data["entrypoints"] = ["sort"]
    result = run_cli("run", str(skill.write(data)), cwd=skill.root)
    assert result.returncode == 0, result.stderr


def test_a_declared_entrypoint_that_is_not_installed_is_refused(skill: Skill) -> None:
    data = with_real_world(["sort", "--version"])
    data["entrypoints"] = ["sort", "greeter-cli-not-installed"]
    refused_by_cli(skill.write(data), skill.root,
                   "/entrypoints/1: entrypoint 'greeter-cli-not-installed' is not a program "
                   "found on PATH")


# -- attack 7: a stub fallback behind a blocked marker ---------------------------------------

LIVE_CLAIM = {"id": "greets-people", "description": "a person is greeted by name",
              "criticality": "critical", "claim_semantics": "other",
              "evidence_required": {"deterministic": True, "live_e2e": True}}


def fallback_fixture(stream: str | None) -> dict[str, Any]:
    """The live case passes its expectations; with ``stream`` set, the skill also says on it
    that the provider was unavailable (and so the answer came from a stub)."""
    announce = {None: "", "stdout": "; echo PROVIDER_UNAVAILABLE",
                "stderr": "; echo PROVIDER_UNAVAILABLE >&2"}[stream]
    data = skill_fixture(capability_claims=[LIVE_CLAIM])
    data["cases"][0].update({
        "supports_claims": ["greets-people"], "evidence_class": "live_e2e",
        "command": ["bash", "-c", f"../run.sh Ada > greeting.txt{announce}; cat greeting.txt"],
        "expected": {"exit_code": 0, "stdout_contains": ["hello, Ada"],
                     "blocked_when_stdout_contains": ["PROVIDER_UNAVAILABLE"],
                     "artifacts": [{"path": "greeting.txt", "lines_contain": ["hello, Ada"]}]},
    })
    data["cases"][1]["supports_claims"] = ["greets-people"]
    return data


def check_blocked_fallback(report: dict[str, Any]) -> None:
    greets = report["cases"][0]
    assert greets["outcome"] == "BLOCKED"
    assert report["readiness"] == "NOT_READY"
    assert report["capability_readiness"]["greets-people"]["verdict"] == "BLOCKED_EXTERNAL"
    for trial in greets["trials"]:
        assert trial["outcome"] == "BLOCKED"
        assert trial["blocked_markers_seen"] == ["PROVIDER_UNAVAILABLE"]
        assert trial["problems"] == [
            "blocked: precondition not met (the output says 'PROVIDER_UNAVAILABLE')",
            "the expectations passed, but a trial whose precondition was unmet is no evidence",
        ]


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_stub_fallback_never_fills_a_live_slot_cli(skill: Skill, stream: str) -> None:
    result = run_cli("run", str(skill.write(fallback_fixture(stream))), cwd=skill.root)
    assert result.returncode == 1, result.stderr
    check_blocked_fallback(json.loads(result.stdout))
    honest = run_cli("run", str(skill.write(fallback_fixture(None))), cwd=skill.root)
    assert honest.returncode == 0, honest.stderr
    report = json.loads(honest.stdout)
    assert report["readiness"] == "READY"
    assert report["capability_readiness"]["greets-people"]["verdict"] == "PROVEN"


@pytest.mark.parametrize("mode", MODES)
def test_a_stub_fallback_never_fills_a_live_slot_pytest(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_skill(pytester, fallback_fixture("stdout"))
    result = run_pytest(pytester, mode)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(["*agentic-evals: session failed, not READY*",
                                 "*required case(s) blocked: greets*"])
    check_blocked_fallback(pytest_report(pytester))


# -- readiness and exit status ----------------------------------------------------------------


def only_refusals_pass() -> dict[str, Any]:
    data = skill_fixture()
    data["cases"][0]["expected"]["stdout_contains"] = ["goodbye"]  # fails every trial
    return data


def test_a_failing_optional_case_is_shown_and_a_ready_fixture_exits_0_cli(skill: Skill) -> None:
    result = run_cli("run", str(skill.write(with_failing_optional_case())), cwd=skill.root)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["readiness"] == "READY"
    assert outcomes(report)["greets-in-french"] == "FAIL"
    assert "greets-in-french" in result.stderr


def test_the_same_case_required_is_usable_with_gaps_and_exits_1_cli(skill: Skill) -> None:
    required = with_failing_optional_case()
    required["cases"][-1]["required"] = True
    result = run_cli("run", str(skill.write(required)), cwd=skill.root)
    assert result.returncode == 1
    assert json.loads(result.stdout)["readiness"] == "USABLE_WITH_GAPS"


def test_only_the_refusal_passing_is_not_ready_and_exits_1_cli(skill: Skill) -> None:
    # Every positive and real-world case fails; only the refusal passes: NOT_READY.
    result = run_cli("run", str(skill.write(only_refusals_pass())), cwd=skill.root)
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["readiness"] == "NOT_READY"
    assert outcomes(report) == {"greets": "FAIL", "refuses-empty-name": "PASS"}
    assert "no required positive or real-world case passed every trial" in \
        report["gate"]["reason"]


@pytest.mark.parametrize("mode", MODES)
def test_an_optional_failure_does_not_fail_a_ready_fixture_pytest(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_skill(pytester, with_failing_optional_case())
    result = run_pytest(pytester, mode)
    result.assert_outcomes(passed=4, failed=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([
        "*agentic-evals: 2 failed trial(s) of optional case(s) shown above; optional cases "
        "do not fail the session*"])
    report = pytest_report(pytester)
    assert report["readiness"] == "READY"
    assert outcomes(report)["greets-in-french"] == "FAIL"


OTHER_FAILURES = {
    "failed-test": ("def test_ordinary():\n    assert False\n", []),
    # A file that does not import, with --continue-on-collection-errors: a failure that
    # pytest counts without a test report.
    "collection-error": ("import not_a_module_anywhere\n", ["--continue-on-collection-errors"]),
    # pytest.exit() with a failing status: the session ends before the rest runs.
    "pytest-exit": ("import pytest\n\ndef test_fatal():\n    pytest.exit('unreachable', "
                    "returncode=1)\n\ndef test_never_runs():\n    pass\n", []),
}


@pytest.mark.parametrize("other", sorted(OTHER_FAILURES))
@pytest.mark.parametrize("mode", MODES)
def test_an_optional_failure_never_excuses_another_failure_pytest(
    pytester: pytest.Pytester, mode: list[str], other: str
) -> None:
    make_skill(pytester, with_failing_optional_case())
    source, options = OTHER_FAILURES[other]
    pytester.makepyfile(test_zz_ordinary=source)
    result = run_pytest(pytester, mode, *options)
    if other == "failed-test":
        result.assert_outcomes(passed=4, failed=3)
    if other == "pytest-exit" and mode:
        # xdist itself ends with an internal error when a worker exits in the middle of a test.
        assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
    else:
        assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.no_fnmatch_line("*optional cases do not fail the session*")


@pytest.mark.parametrize("mode", MODES)
def test_passing_refusals_alone_are_not_ready_pytest(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_skill(pytester, only_refusals_pass())
    result = run_pytest(pytester, mode)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*agentic-evals: session failed, not READY*",
        "*NOT_READY: required case(s) failed: greets; no required positive or real-world "
        "case passed every trial*"])
    assert pytest_report(pytester)["readiness"] == "NOT_READY"


# -- case names that break a node id --------------------------------------------------------


def named(name: str) -> dict[str, Any]:
    data = skill_fixture()
    data["cases"][1]["name"] = name
    return data


@pytest.mark.parametrize("name", ["refuses::empty", "refuses[empty]"])
def test_names_that_break_a_node_id_are_refused_cli(skill: Skill, name: str) -> None:
    refused_by_cli(skill.write(named(name)), skill.root, "/cases/1/name:",
                   "::" if "::" in name else "'[' or ']'")


@pytest.mark.parametrize("mode", MODES)
def test_names_that_break_a_node_id_are_refused_pytest(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_skill(pytester, named("refuses::empty"))
    refused_by_pytest(pytester, mode, '/cases/1/name: "refuses::empty" contains \'::\'')


@pytest.mark.parametrize("mode", MODES)
def test_a_single_colon_is_fine(pytester: pytest.Pytester, mode: list[str]) -> None:
    make_skill(pytester, named("refuses:empty"))
    result = run_pytest(pytester, mode)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert outcomes(pytest_report(pytester))["refuses:empty"] == "PASS"


# -- attack 8: a fixture that exempts itself from the contract ------------------------------


def self_exempted(kind: str) -> dict[str, Any]:
    """What the contract refuses three times over (one trial, no case that says no, nothing
    that runs the skill), calling itself a scaffold or a test of this runner."""
    return {"version": 2, "skill": "greeter", "eval_kind": kind, "trials": 1,
            "cases": [{"name": "works", "type": "positive", "command": ["true"],
                       "expected": {"exit_code": 0}}]}


@pytest.mark.parametrize("kind", ["scaffold", "runner_selftest"])
def test_a_fixture_cannot_exempt_itself_cli(skill: Skill, kind: str) -> None:
    path = skill.write(self_exempted(kind))
    # A grant written into the skill's tree is not the run's: run reads no configuration there.
    (skill.root / "pytest.ini").write_text("[pytest]\nagentic_evals_allow_exempt = true\n")
    refused_by_cli(path, skill.root, f"/eval_kind: eval_kind {kind!r} asks",
                   "--allow-exempt", "/trials: trials is 1", "no real-world case")
    probed = run_cli("probe", str(path), "--no-store", cwd=skill.root)
    assert probed.returncode == 2 and "--allow-exempt" in probed.stderr, probed.stderr
    for command in ("validate", "run"):  # granted by whoever runs it: the earlier meaning
        result = run_cli(command, str(path), "--allow-exempt", cwd=skill.root)
        assert result.returncode == 0, (command, result.stdout, result.stderr)
        if command == "validate":
            assert result.stdout.endswith(
                f"(1 cases, trials=1, eval_kind {kind}: exempt from the contract by "
                "--allow-exempt)\n")
    assert f"READY ({kind})" in result.stderr
    probed = run_cli("probe", str(path), "--no-store", "--allow-exempt", cwd=skill.root)
    assert probed.returncode != 2, probed.stderr


@pytest.mark.parametrize("mode", MODES)
def test_a_fixture_cannot_exempt_itself_pytest(pytester: pytest.Pytester, mode: list[str]) -> None:
    make_skill(pytester, self_exempted("scaffold"))
    refused_by_pytest(pytester, mode, "/eval_kind: eval_kind 'scaffold' asks*"
                                      "--agentic-evals-allow-exempt")
    result = run_pytest(pytester, mode, "--agentic-evals-allow-exempt")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert pytest_report(pytester)["readiness"] == "READY"
    # The repository's ini file is the user's, as its conftest files are: it may grant it too.
    pytester.makeini("[pytest]\nagentic_evals_allow_exempt = true\n")
    assert run_pytest(pytester, mode).ret == pytest.ExitCode.OK


def test_a_declared_exemption_that_keeps_the_contract_needs_no_grant(skill: Skill) -> None:
    """An honest fixture that also calls itself a test of this runner is judged as a skill's."""
    path = skill.fixture(eval_kind="runner_selftest")
    for command in ("validate", "run"):
        result = run_cli(command, str(path), cwd=skill.root)
        assert result.returncode == 0, (command, result.stdout, result.stderr)
        if command == "validate":  # judged by the contract, and kept it
            assert result.stdout.endswith("(2 cases, trials=2)\n"), result.stdout
    assert "READY (runner_selftest)" in result.stderr


# -- attack 9: a program that runs what it is given, declared the skill's own ----------------

# Each declared program computes what its cases expect from the command line alone: the
# fixture's commands do the work, and no file of the skill is ever run.
WRITTEN_IN_ARGV = {
    "awk": (["awk", 'BEGIN { print "hello, Ada" }'],
            ["awk", 'BEGIN { print "name required" > "/dev/stderr"; exit 2 }'], 2),
    "sed": (["sed", "-n", "$s/.*/hello, Ada/p", "../SKILL.md"], ["sed", "-n", "q2", "../SKILL.md"],
            2),
    "xargs": (["xargs", "echo", "hello, Ada"], ["xargs", "false"], 123),
    "find": (["find", "../SKILL.md", "-exec", "echo", "hello, Ada", ";"],
             ["find", "../no-such-file"], 1),
}


@pytest.mark.parametrize("program", sorted(WRITTEN_IN_ARGV))
def test_a_program_that_runs_what_it_is_given_is_no_entrypoint(
    skill: Skill, program: str
) -> None:
    greets, refuses, status = WRITTEN_IN_ARGV[program]
    data = {"version": 2, "skill": "greeter", "trials": 2, "entrypoints": [program], "cases": [
        {"name": "greets", "type": "positive", "real_world": True, "command": greets,
         "expected": {"exit_code": 0, "stdout_contains": ["hello, Ada"]}},
        {"name": "refuses", "type": "negative", "command": refuses,
         "expected": {"exit_code": status}}]}
    refused_by_cli(skill.write(data), skill.root,
                   f"/entrypoints/0: entrypoint {program!r} runs the code or the commands "
                   "it is given")
