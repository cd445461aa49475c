"""Capability claims end to end: the incident that motivated them, and the ways to fake proof.

The incident: "no PII reaches the output" was narrowed to "no PII *strings* reach the
output", and phone numbers written as JSON integers passed through untouched while every
eval was green. These tests replay it through the real CLI, and check that each way of
faking a capability is NOT READY, serially and under xdist.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import MODES, make_skill, run_cli, skill_fixture

REDACTOR = Path(__file__).parent / "data" / "redactor" / "redact.py"
CLAIM = {
    "id": "no-phone-in-output",
    "description": "no phone number reaches the output in any representation",
    "criticality": "critical",
    "claim_semantics": "value_bearing",
    "domain_profile": "json-scalar-v1",
    "evidence_required": {"deterministic": True},
}


def redaction_case(name: str, phone: str, representation: str) -> dict[str, Any]:
    """An adversarial case feeding one phone number, given as raw JSON text: written as a
    JSON value, 5.550103e6 would reach the file as 5550103.0 and test nothing new."""
    return {
        "name": name,
        "type": "adversarial",
        "representation": representation,
        "supports_claims": ["no-phone-in-output"],
        "seams": ["value-representation"],
        "command": ["python3", "../redact.py", "input/records.json", "out/redacted.json"],
        "artifacts": [{"path": "input/records.json",
                       "content": f'[{{"name": "Ada", "phone": {phone}}}]'}],
        "expected": {"exit_code": 0, "artifacts": [
            {"path": "out/redacted.json", "json_pointer": "/0/phone", "equals": "[REDACTED]"},
        ]},
    }


def redaction_fixture(representations: dict[str, str]) -> dict[str, Any]:
    cases = [
        {**redaction_case("redacts-a-record", '"555-0100"', "string"), "type": "positive",
         "real_world": True},
        {"name": "unreadable-input-refused", "type": "negative",
         "command": ["python3", "../redact.py", "input/missing.json", "out/redacted.json"],
         "expected": {"exit_code": 1, "stderr_contains": ["cannot read input/missing.json"],
                      "artifacts": [{"path": "out/redacted.json", "not_exists": True}]}},
    ]
    cases += [redaction_case(f"{name}-phone-redacted", phone, name)
              for name, phone in representations.items()]
    return {
        "version": 2,
        "skill": "redactor",
        "trials": 2,
        "capability_claims": [CLAIM],
        "seams": [{"seam_id": "value-representation", "seam_type": "transform",
                   "criticality": "critical", "required_evidence": ["deterministic"]}],
        "cases": cases,
    }


@pytest.fixture
def redactor(tmp_path: Path) -> Path:
    root = tmp_path / "redactor"
    (root / "fixtures").mkdir(parents=True)
    shutil.copy(REDACTOR, root / "redact.py")
    return root


def run_redactor(root: Path, representations: dict[str, str]) -> tuple[int, dict[str, Any]]:
    path = root / "fixtures" / "agentic_eval.json"
    path.write_text(json.dumps(redaction_fixture(representations), indent=2))
    result = run_cli("run", str(path), cwd=root)
    assert result.stdout, result.stderr
    return result.returncode, json.loads(result.stdout)


def test_the_phone_number_incident_replayed_through_the_cli(redactor: Path) -> None:
    # 1. Only string phone numbers are tested: every case passes, and it is still not READY.
    status, report = run_redactor(redactor, {"string": '"+1 (555) 010-3"'})
    claim = report["capability_readiness"]["no-phone-in-output"]
    assert status == 1
    assert [case["outcome"] for case in report["cases"]] == ["PASS"] * 3
    assert report["readiness"] != "READY"
    assert claim["verdict"] != "PROVEN"
    assert sorted(claim["missing_representations"]) == ["float", "integer", "scientific"]

    # 2. One adversarial case per representation: the leak shows, and the claim FAILS.
    every = {"string": '"+1 (555) 010-3"', "integer": "5550101", "float": "5550102.0",
             "scientific": "5.550103e6"}
    status, report = run_redactor(redactor, every)
    claim = report["capability_readiness"]["no-phone-in-output"]
    outcomes = {case["name"]: case["outcome"] for case in report["cases"]}
    assert status == 1
    assert claim["verdict"] == "FAILED"
    assert outcomes["string-phone-redacted"] == "PASS"
    for leaking in ("integer", "float", "scientific"):
        assert outcomes[f"{leaking}-phone-redacted"] == "FAIL"
    assert report["readiness"] == "NOT_READY"

    # 3. The fix: redact the field whatever its type. Now, and only now, READY.
    script = redactor / "redact.py"
    script.write_text(script.read_text().replace(
        'if isinstance(record.get("phone"), str):', 'if "phone" in record:'))
    status, report = run_redactor(redactor, every)
    assert status == 0, json.dumps(report["readiness_notes"])
    assert report["readiness"] == "READY"
    assert report["capability_readiness"]["no-phone-in-output"]["verdict"] == "PROVEN"


# -- ways to fake a capability, each of which must be NOT READY ---------------------------

LIVE_CLAIM = {"id": "greets-people", "description": "a person is greeted by name",
              "criticality": "critical", "claim_semantics": "other",
              "evidence_required": {"deterministic": True, "live_e2e": True}}


def claim_fixture(**case_changes: Any) -> dict[str, Any]:
    """A fixture whose first case is meant to be the live evidence of a critical claim."""
    data = skill_fixture(capability_claims=[LIVE_CLAIM])
    data["cases"][0].update({"supports_claims": ["greets-people"], "evidence_class": "live_e2e"})
    data["cases"][0]["command"] = ["bash", "-c", "../run.sh Ada > greeting.txt; cat greeting.txt"]
    data["cases"][0]["expected"] = {"exit_code": 0, "stdout_contains": ["hello, Ada"],
                                    "artifacts": [{"path": "greeting.txt",
                                                   "lines_contain": ["hello, Ada"]}]}
    data["cases"][1]["supports_claims"] = ["greets-people"]
    data["cases"][0].update(case_changes)
    return data


def deterministic_only() -> dict[str, Any]:
    data = claim_fixture()
    data["cases"][0]["evidence_class"] = "deterministic"
    return data


def fed_from_fixtures() -> dict[str, Any]:
    data = claim_fixture()
    # The contract already refuses a real-world case fed from fixtures/; here another case
    # carries the real-world duty, and the stub-fed one claims to be live evidence.
    data["cases"].append({**data["cases"][0], "name": "greets-for-real",
                          "supports_claims": [], "evidence_class": "deterministic"})
    data["cases"][0]["real_world"] = False
    data["cases"][0]["command"] = [
        "bash", "-c", '../run.sh "$(cat ../fixtures/canned-name.txt)" > greeting.txt']
    data["cases"][0]["expected"] = {"exit_code": 0, "artifacts": [
        {"path": "greeting.txt", "lines_contain": ["hello, Ada"]}]}
    return data


def no_read_back() -> dict[str, Any]:
    data = claim_fixture()
    data["cases"][0]["expected"] = {"exit_code": 0, "stdout_contains": ["hello, Ada"],
                                    "stdout_excludes": ["Traceback"]}
    return data


def one_case_two_claims() -> dict[str, Any]:
    data = claim_fixture()
    second = {**LIVE_CLAIM, "id": "greets-politely", "description": "greetings are polite"}
    data["capability_claims"].append(second)
    data["cases"][0]["supports_claims"] = ["greets-people", "greets-politely"]
    return data


def live_slot_blocked() -> dict[str, Any]:
    data = claim_fixture()
    data["cases"][0]["blocked_when_stdout_contains"] = ["hello"]
    data["cases"][0]["expected"]["exit_code"] = 7
    return data


def exempted(expires: str) -> dict[str, Any]:
    data = deterministic_only()
    data["capability_claims"] = [{**LIVE_CLAIM, "exemptions": [{
        "evidence_class": "live_e2e", "reason_code": "NO_SANDBOX",
        "justification": "the provider has no test tenant yet", "owner": "skills-team",
        "expires": expires,
    }]}]
    return data


FAKES = {
    "deterministic-only": (deterministic_only, "NOT_ESTABLISHED|PARTIALLY_PROVEN"),
    "live-fed-from-fixtures": (fed_from_fixtures, "PARTIALLY_PROVEN|NOT_ESTABLISHED"),
    "live-without-read-back": (no_read_back, "PARTIALLY_PROVEN|NOT_ESTABLISHED"),
    "one-live-case-two-claims": (one_case_two_claims, "PARTIALLY_PROVEN|NOT_ESTABLISHED"),
    "live-slot-only-blocked": (live_slot_blocked, "BLOCKED_EXTERNAL"),
    "valid-exemption": (lambda: exempted("2099-12-31"), "PARTIALLY_PROVEN|NOT_ESTABLISHED"),
    "exemption-that-never-expires": (lambda: exempted("never"),
                                     "PARTIALLY_PROVEN|NOT_ESTABLISHED"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fake", sorted(FAKES))
def test_faked_capabilities_are_not_ready(
    pytester: pytest.Pytester, fake: str, mode: list[str]
) -> None:
    build, verdicts = FAKES[fake]
    (pytester.path / "fixtures").mkdir(exist_ok=True)
    (pytester.path / "fixtures" / "canned-name.txt").write_text("Ada\n")
    make_skill(pytester, build())
    report_path = pytester.path / "report.json"
    args = ["--agentic-evals", "-p", "no:cacheprovider", "--agentic-evals-report",
            str(report_path), *mode]
    result = pytester.runpytest(*args)
    report = json.loads(report_path.read_text())
    claim = report["capability_readiness"]["greets-people"]
    assert result.ret == 1, fake
    assert report["readiness"] != "READY"
    assert claim["verdict"] in verdicts.split("|"), (fake, claim)
    assert claim["reasons"], "a claim that is not PROVEN says why"
    # The terminal names the claim's verdict, one the fake may earn, and why.
    result.stdout.re_match_lines([rf"  claim greets-people \(critical\): ({verdicts}): \S"])
    if fake.startswith("live-") and fake != "live-slot-only-blocked":
        assert report["cases"][0]["effective_evidence_class"] != "live_e2e"
        assert report["cases"][0]["evidence_disqualifiers"]
    if fake == "valid-exemption":
        assert claim["exempt_evidence"]
    if fake == "exemption-that-never-expires":
        assert claim["ignored_exemptions"]
        assert not claim["exempt_evidence"]


def test_the_honest_version_of_the_claim_is_ready(pytester: pytest.Pytester) -> None:
    make_skill(pytester, claim_fixture())
    result = pytester.runpytest("--agentic-evals", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["READY * (skill greeter): 2/2 cases passed, 0 failed, 0 blocked, "
                                 "claims 1/1 PROVEN"])
