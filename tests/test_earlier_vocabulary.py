"""The earlier tool's fixture vocabulary, known here with its meaning: top-level statements,
infra_blocked_when, mocked and uses_stub, categories, claims without criticality, exemption
notes, seam claim ids and failure modes, sha256 with its prefix."""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.evidence import coverage
from pytest_agentic_evals.evidence.qualification import qualify
from pytest_agentic_evals.loading import FixtureError, fixture_from_data, load_fixture
from pytest_agentic_evals.report import report_problems

from conftest import MODES, Skill, make_skill, skill_fixture

CLAIM = {"id": "greets-by-name", "claim_semantics": "other",
         "evidence_required": {"deterministic": True}}


def run_session(pytester: pytest.Pytester, data: dict[str, Any],
                mode: list[str]) -> tuple[pytest.RunResult, dict[str, Any]]:
    make_skill(pytester, data)
    args = ["--agentic-evals", "-p", "no:cacheprovider", "--agentic-evals-report",
            "report.json", *mode]
    result = pytester.runpytest(*args)
    report = json.loads((pytester.path / "report.json").read_text())
    assert report_problems(report) == []
    return result, report


def problems_of(tmp_path: Path, data: dict[str, Any]) -> list[str]:
    try:
        fixture_from_data(data, tmp_path / "agentic_eval.json")
    except FixtureError as exc:
        return [f"{p.pointer}: {p.message}" for p in exc.problems]
    return []


# -- infra_blocked_when ----------------------------------------------------------------------

def provider_case(script: str, **changes: Any) -> dict[str, Any]:
    script = "../run.sh Ada >/dev/null && " + script
    return {"name": "asks-provider", "type": "positive", "command": ["bash", "-c", script],
            "infra_blocked_when": ["RATE LIMITED"],
            "expected": {"exit_code": 0, "stdout_contains": ["answer: 42"]}, **changes}


@pytest.mark.parametrize("mode", MODES)
def test_an_external_blocker_seen_while_expectations_fail_is_infra_blocked(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    data = skill_fixture()
    data["cases"][0] = {**data["cases"][0], "infra_blocked_when": ["RATE LIMITED"]}
    data["cases"].append(provider_case("echo 'provider says: RATE LIMITED' >&2; exit 3"))
    result, report = run_session(pytester, data, mode)
    case = report["cases"][2]
    assert [t["outcome"] for t in case["trials"]] == ["INFRA_BLOCKED", "INFRA_BLOCKED"]
    assert case["trials"][0]["problems"][0] == "external blocker: saw 'RATE LIMITED'"
    assert "exit_code: expected 0, got 3" in case["trials"][0]["problems"][1]
    assert case["outcome"] == "BLOCKED"  # counted like BLOCKED, never PASS
    assert case["infra_blocked_trials"] == 2
    assert case["reliability"]["infra_blocked"] == 2 and case["reliability"]["passed"] == 0
    assert report["summary"]["infra_blocked"] == 1 and report["summary"]["blocked"] == 1
    assert report["readiness"] != "READY"
    # The marker on a passing case changes nothing.
    assert report["cases"][0]["outcome"] == "PASS"
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "*1 blocked (1 by an external blocker)*",
        "*BLOCKED*asks-provider (0/2 trials passed, 2 infra-blocked): trial 1: external "
        "blocker: saw 'RATE LIMITED'",
    ])


@pytest.mark.parametrize(("script", "changes", "outcome"), [
    # The blocker is seen but every expectation holds: a pass is a pass.
    pytest.param("echo 'answer: 42 (RATE LIMITED warning)'", {}, "PASS", id="passes"),
    # A timeout is a fault of the trial, whatever it printed first.
    pytest.param("echo RATE LIMITED; sleep 30", {"timeout_seconds": 1}, "FAIL", id="timeout"),
    # Without the marker, a failure is a failure.
    pytest.param("echo 'answer: 41'", {}, "FAIL", id="no-marker"),
    # The marker in stdout counts as well as in stderr.
    pytest.param("echo RATE LIMITED", {}, "INFRA_BLOCKED", id="stdout"),
])
def test_when_a_trial_is_infra_blocked(
    pytester: pytest.Pytester, script: str, changes: dict[str, Any], outcome: str
) -> None:
    data = skill_fixture()
    data["cases"].append(provider_case(script, **changes))
    _, report = run_session(pytester, data, [])
    assert [t["outcome"] for t in report["cases"][2]["trials"]] == [outcome] * 2


# -- mocked and uses_stub --------------------------------------------------------------------

@pytest.mark.parametrize("key", ["mocked", "uses_stub"])
def test_a_mocked_case_is_never_live_evidence(skill: Skill, key: str) -> None:
    data = skill_fixture()
    live = data["cases"][0]
    live.update({"evidence_class": "live_e2e",
                 "command": ["bash", "-c", "../run.sh Ada > greeting.txt"],
                 "expected": {"exit_code": 0, "artifacts": [
                     {"path": "greeting.txt", "lines_contain": ["hello, Ada"]}]}})
    assert qualify(load_fixture(skill.write(data)).cases[0]).live_qualified is True
    live[key] = True
    qualification = qualify(load_fixture(skill.write(data)).cases[0])
    assert qualification.live_qualified is False
    assert qualification.effective == "fault_injected_deterministic"
    assert any(f"{key}: true" in reason for reason in qualification.disqualifiers)
    live[key] = False
    assert qualify(load_fixture(skill.write(data)).cases[0]).live_qualified is True


# -- claims, exemptions, seams -----------------------------------------------------------------

def test_a_claim_without_criticality_is_critical(tmp_path: Path) -> None:
    data = skill_fixture(capability_claims=[{k: v for k, v in CLAIM.items()
                                             if k != "claim_semantics"}])
    assert problems_of(tmp_path, data) == [
        "/capability_claims/0/claim_semantics: claim 'greets-by-name' is critical (criticality "
        "defaults to critical) and must say what kind of invariant it is: claim_semantics is "
        "one of value_bearing, protocol, timing, control_flow, human_perceptual, other"]


@pytest.mark.parametrize("mode", MODES)
def test_an_unproven_claim_without_criticality_gates_the_fixture(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    # Two claims: the proven one is important, the unproven one says nothing, so is critical.
    important = {**CLAIM, "id": "refuses-empty", "criticality": "important"}
    data = skill_fixture(capability_claims=[copy.deepcopy(CLAIM), important])
    data["cases"][1]["supports_claims"] = ["refuses-empty"]
    result, report = run_session(pytester, data, mode)
    claims = report["capability_readiness"]
    assert claims["greets-by-name"]["criticality"] == "critical"
    assert claims["greets-by-name"]["verdict"] == "NOT_ESTABLISHED"
    assert claims["refuses-empty"]["verdict"] == "PROVEN"
    assert report["readiness"] == "USABLE_WITH_GAPS"
    assert result.ret == 1


def test_exemption_notes_are_shown_and_prove_nothing(pytester: pytest.Pytester) -> None:
    exemption = {"evidence_class": "live_e2e", "reason_code": "NO_TENANT",
                 "justification": "no test tenant yet", "owner": "skills-team",
                 "expires": "2099-12-31", "review_date": "2099-06-30",
                 "manual_proof": {"ticket": "OPS-12", "checked_by": "ada"},
                 "forfeits": ["live_e2e"]}
    claim = {**CLAIM, "criticality": "critical", "exemptions": [exemption],
             "evidence_required": {"deterministic": True, "live_e2e": True}}
    data = skill_fixture(capability_claims=[claim])
    data["cases"][0]["supports_claims"] = ["greets-by-name"]
    result, report = run_session(pytester, data, [])
    entry = report["capability_readiness"]["greets-by-name"]
    assert entry["exempt_evidence"] == [exemption]
    assert entry["verdict"] == "PARTIALLY_PROVEN"
    assert result.ret == 1


def test_seam_claim_ids_and_failure_modes_are_shown_by_coverage(skill: Skill) -> None:
    data = skill_fixture(capability_claims=[{**CLAIM, "criticality": "critical"}], seams=[
        {"seam_id": "greeting", "claim_id": "greets-by-name", "seam_type": "router",
         "required_evidence": ["deterministic"],
         "failure_modes": ["empty name accepted", "name not echoed"]}])
    data["cases"][0]["seams"] = ["greeting"]
    path = skill.write(data)
    report = coverage.show(skill.root, [path], datetime.date.today())
    [seam] = report["skills"][0]["fixtures"][0]["seams"]
    assert seam["claim_id"] == "greets-by-name"
    assert seam["failure_modes"] == ["empty name accepted", "name not echoed"]


# -- artifacts, categories, statements ---------------------------------------------------------

GREETING = hashlib.sha256(b"hello, Ada\n").hexdigest()


@pytest.mark.parametrize(("written", "outcome"), [
    ("sha256:" + GREETING, "PASS"), (GREETING.upper(), "PASS"),
    ("sha256:" + "0" * 64, "FAIL"), ("0" * 64, "FAIL"),
])
def test_sha256_with_or_without_its_prefix(
    pytester: pytest.Pytester, written: str, outcome: str
) -> None:
    data = skill_fixture()
    data["cases"][0]["command"] = ["bash", "-c", "../run.sh Ada > greeting.txt"]
    data["cases"][0]["expected"] = {"exit_code": 0, "artifacts": [
        {"path": "greeting.txt", "sha256": written}]}
    _, report = run_session(pytester, data, [])
    assert report["cases"][0]["outcome"] == outcome


@pytest.mark.parametrize("written", ["sha256:" + GREETING[:-1], "sha1:" + GREETING, "sha256:"])
def test_a_malformed_sha256_is_refused(tmp_path: Path, written: str) -> None:
    data = skill_fixture()
    data["cases"][0]["expected"]["artifacts"] = [{"path": "x.txt", "sha256": written}]
    [problem] = problems_of(tmp_path, data)
    assert problem.startswith("/cases/0/expected/artifacts/0/sha256: ")


@pytest.mark.parametrize("mocked", [True, False])
def test_the_statements_are_carried_and_never_change_a_verdict(
    pytester: pytest.Pytester, mocked: bool
) -> None:
    statements = {"live": not mocked, "mocked": mocked,
                  "what_was_exercised": ["run.sh greets", "run.sh refuses"],
                  "what_remains_unverified": "greetings in other languages",
                  "application_identity": {"repo": "greeter", "sha": "abc123"}}
    data = skill_fixture(**statements)
    data["cases"][0].update({"category": "greeting", "category_id": "x:greeter:greeting"})
    result, report = run_session(pytester, data, [])
    for key, value in statements.items():
        assert report[key] == value
    assert report["cases"][0]["category_id"] == "x:greeter:greeting"
    assert report["cases"][0]["application_identity"] == statements["application_identity"]
    assert report["readiness"] == "READY" and result.ret == 0


@pytest.mark.parametrize(("where", "value", "expected"), [
    ("/live", "yes", "\"yes\" is a string, expected boolean"),
    ("/mocked", 1, "1 is an integer, expected boolean"),
    ("/cases/0/uses_stub", "true", "\"true\" is a string, expected boolean"),
    ("/cases/0/infra_blocked_when", "RATE LIMITED", "is a string, expected array"),
    ("/cases/0/category_id", "", "should be non-empty"),
    ("/seams/0/failure_modes", "slow", "is a string, expected array"),
])
def test_the_vocabulary_keeps_its_types(
    tmp_path: Path, where: str, value: Any, expected: str
) -> None:
    data = skill_fixture(seams=[{"seam_id": "greeting"}])
    target: Any = data
    *parents, last = where.strip("/").split("/")
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    target[last] = value
    problems = problems_of(tmp_path, data)
    assert any(p.startswith(where + ":") and expected in p for p in problems), problems
