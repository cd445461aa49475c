"""Execution provenance in real sessions: a fix that quietly rewrote its test or its oracle
proves nothing, an unchanged replay does, and admission pins select exactly one generation.
Every scenario runs serially and under xdist, and one through the CLI."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from pytest_agentic_evals.evidence import provenance as prov

from conftest import MODES, Skill, make_skill, run_cli, skill_fixture

CLAIM = {"id": "greets-by-name", "description": "a person is greeted by name",
         "criticality": "critical", "claim_semantics": "other",
         "evidence_required": {"deterministic": True}}
# The greeting the skill should print, and the one the broken skill does print.
RIGHT = {"exit_code": 0, "stdout_contains": ["hello, Ada!"]}
BROKEN = {"exit_code": 0, "stdout_contains": ["hello, Ada"]}


def fixture(**greets: Any) -> dict[str, Any]:
    data = skill_fixture(capability_claims=[copy.deepcopy(CLAIM)])
    data["cases"][0].update({"supports_claims": ["greets-by-name"], **greets})
    return data


def original_case() -> dict[str, Any]:
    return {**skill_fixture()["cases"][0], "supports_claims": ["greets-by-name"],
            "expected": RIGHT}


def unchanged_replay() -> dict[str, Any]:
    case = fixture()["cases"][0]
    return fixture(provenance={"prior_test_source_sha256": prov.source_test_sha256(case),
                               "prior_oracle_sha256": prov.source_oracle_sha256(case)})


def oracle_edited_quietly() -> dict[str, Any]:
    return fixture(expected=BROKEN, provenance={
        "prior_oracle_sha256": prov.source_oracle_sha256(original_case())})


def oracle_edited_openly() -> dict[str, Any]:
    return fixture(expected=BROKEN, mutation_provenance={"expected_output_changed": True},
                   provenance={"prior_oracle_sha256": prov.source_oracle_sha256(original_case())})


def edited_quietly() -> dict[str, Any]:
    """The command was changed (the test itself), its prior hash kept, no flag declared."""
    return fixture(command=["bash", "../run.sh", "Ada", "--loud"], provenance={
        "prior_test_source_sha256": prov.source_test_sha256(original_case())})


def repair_candidate(**repair: Any) -> dict[str, Any]:
    """A repair of the test's steps, declared, with the hashes of the test it repairs."""
    case = fixture()["cases"][0]
    priors = {"prior_test_source_sha256": prov.source_test_sha256(case),
              "prior_oracle_sha256": prov.source_oracle_sha256(case), **repair}
    return fixture(execution_mode="test_repair", mutation_provenance={"step_changed": True},
                   repair={k: v for k, v in priors.items() if v is not None})


def external_pass_after_healing() -> dict[str, Any]:
    return fixture(external_result={"provider": "browser-agent", "status": "passed",
                                    "mutation_provenance": {"locator_healed": True}})


def exploration_candidate() -> dict[str, Any]:
    return fixture(execution_mode="exploration", generated_test_lineage={"generation_id": "g1"})


def two_generations(pin: str) -> dict[str, Any]:
    """gen-2 passes; gen-1, kept beside it as an optional case, expects what is not printed."""
    data = fixture(generated_test_lineage={"generation_id": "gen-2"})
    data["cases"].append({**original_case(), "name": "greets-gen-1", "required": False,
                          "generated_test_lineage": {"generation_id": "gen-1"}})
    by_name = {case["name"]: case for case in data["cases"]}
    pinned = {"gen-2": by_name["greets"], "gen-1": by_name["greets-gen-1"],
              "original-hashes": original_case()}[pin]
    data["capability_claims"][0]["admitted_evidence"] = [{
        "case": pinned["name"] if pin != "original-hashes" else "greets",
        "test_source_sha256": prov.source_test_sha256(pinned),
        "oracle_sha256": prov.source_oracle_sha256(pinned),
    }]
    return data


# name: (fixture, exit status, readiness ("|" between alternatives), claim verdict,
#        case outcome, observed outcome, reason codes)
EITHER = "NOT_READY|NOT_ESTABLISHED"
SCENARIOS: dict[str, tuple[Any, int, str, str, str, str, list[str]]] = {
    "unchanged-replay": (unchanged_replay, 0, "READY", "PROVEN", "PASS", "PASS", []),
    "oracle-edited-quietly": (oracle_edited_quietly, 1, EITHER, "NOT_ESTABLISHED", "FAIL",
                              "PASS", [prov.UNDECLARED_ORACLE_MUTATION]),
    "oracle-edited-openly": (oracle_edited_openly, 1, EITHER, "NOT_ESTABLISHED", "FAIL", "PASS",
                             [prov.PROTECTED_SURFACE_CHANGED, prov.REPLAY_DECLARED_MUTATION]),
    "exploration-candidate": (exploration_candidate, 1, EITHER, "NOT_ESTABLISHED", "PASS",
                              "PASS", [prov.EXPLORATION_NOT_ADMITTED]),
    "test-edited-quietly": (edited_quietly, 1, EITHER, "NOT_ESTABLISHED", "FAIL", "PASS",
                            [prov.UNDECLARED_TEST_MUTATION]),
    "test-repair-candidate": (repair_candidate, 1, EITHER, "NOT_ESTABLISHED", "PASS", "PASS",
                              [prov.REPAIR_REQUIRES_REQUALIFICATION]),
    "test-repair-without-prior-oracle": (
        lambda: repair_candidate(prior_oracle_sha256=None), 1, EITHER, "NOT_ESTABLISHED", "FAIL",
        "PASS", [prov.REPAIR_REQUIRES_REQUALIFICATION, prov.REPAIR_WITHOUT_PRIORS]),
    "external-pass-after-healing": (
        external_pass_after_healing, 1, EITHER, "NOT_ESTABLISHED", "FAIL", "PASS",
        [prov.EXTERNAL_PASS_AFTER_MUTATION, prov.REPLAY_DECLARED_MUTATION]),
    # READY, and exit 0: the optional gen-1 trials that failed are shown, never fatal.
    "pinned-gen-2": (lambda: two_generations("gen-2"), 0, "READY", "PROVEN", "PASS", "PASS", []),
    "pinned-gen-1": (lambda: two_generations("gen-1"), 1, "NOT_READY", "FAILED", "PASS", "PASS",
                     []),
    "pinned-original-hashes": (lambda: two_generations("original-hashes"), 1, EITHER,
                               "NOT_ESTABLISHED", "PASS", "PASS", []),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_provenance_decides_what_counts(
    pytester: pytest.Pytester, scenario: str, mode: list[str]
) -> None:
    build, status, readiness, verdict, outcome, observed, reasons = SCENARIOS[scenario]
    data = build()
    make_skill(pytester, data)
    report_path = pytester.path / "report.json"
    args = ["--agentic-evals", "-p", "no:cacheprovider", "--agentic-evals-report",
            str(report_path), *mode]
    result = pytester.runpytest(*args)
    report = json.loads(report_path.read_text())
    greets = report["cases"][0]
    claim = report["capability_readiness"]["greets-by-name"]
    assert result.ret == status, result.stdout.str()
    assert report["readiness"] in readiness.split("|")
    assert claim["verdict"] == verdict, claim["reasons"]
    assert (greets["outcome"], greets["observed_outcome"]) == (outcome, observed)
    eligibility = greets["evidence_eligibility"]
    assert eligibility["reason_codes"] == reasons
    assert eligibility["eligible"] is (not reasons)
    # The identity in the report is the one computed from the case as written.
    written = data["cases"][0]
    block = greets["execution_provenance"]
    assert block["test_source_sha256"] == prov.source_test_sha256(written)
    assert block["oracle_sha256"] == prov.source_oracle_sha256(written)
    assert [trial["execution_provenance"] for trial in greets["trials"]] == [block, block]
    for code in reasons:
        if outcome == "FAIL":
            assert f"evidence integrity: {code}" in greets["problems"]
        assert code in "\n".join(claim["reasons"])
    if scenario == "oracle-edited-quietly":
        assert block["mutation_provenance"]["oracle_hash_changed"] is True
        assert eligibility["integrity_errors"] == [prov.UNDECLARED_ORACLE_MUTATION]
        result.stdout.fnmatch_lines(["*greets*evidence integrity: undeclared_oracle_mutation*"])
    if scenario == "pinned-original-hashes":
        [entry] = claim["ineligible_supporting_cases"][:1]
        assert entry["name"] == "greets" and entry["admitted_for_claim"] is False


def test_the_cli_reports_the_same_identity(skill: Skill) -> None:
    path = skill.write(oracle_edited_quietly())
    result = run_cli("run", str(path), "--", "-n", "2", cwd=skill.root)
    report = json.loads(result.stdout)
    assert result.returncode == 1, result.stderr
    assert report["cases"][0]["outcome"] == "FAIL"
    assert report["cases"][0]["execution_provenance"]["evidence_eligibility"][
        "integrity_errors"] == ["undeclared_oracle_mutation"]
    assert report["cases"][1]["execution_provenance"]["execution_mode"] == "regression_replay"
