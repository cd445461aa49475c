"""A regressions.json written for the earlier tool: read with its meaning, every record audited,
what can be verified verified, and each record that cannot be named (exit 1, never 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.regressions import earlier
from pytest_agentic_evals.regressions.registry import registry_from_data

from conftest import run_cli

CORPUS = Path(__file__).parent / "data" / "earlier" / "greeter"


@pytest.fixture
def greeter(tmp_path: Path) -> Path:
    return Path(shutil.copytree(CORPUS, tmp_path / "greeter"))


def registry_data(skill: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((skill / "fixtures" / "regressions.json").read_text())
    return data


def test_show_audits_every_record_and_names_the_unverifiable(greeter: Path) -> None:
    result = run_cli("regressions", "show", ".", "--json", cwd=greeter)
    assert result.returncode == 1, result.stderr  # a gate finding, not a rejected registry
    assert "rejected" not in result.stderr
    report = json.loads(result.stdout)
    entry = report["registries"][0]
    assert entry["valid"] is True
    assert entry["unverifiable"] == ["name-dropped", "empty-name-accepted",
                                     "greeting-file-empty"]
    first, second, third = entry["regressions"]
    assert first["protected"] is True and second["protected"] is True
    assert first["incident_id"] == "#12"  # the earlier key: issue before id
    assert first["earlier_notes"] == {
        "failure_code": "NAME_DROPPED", "first_added": "2026-01-10",
        "repair_revision": "3f2a9c1", "expected_fail": True, "proven": True,
        "proven_date": "2026-01-11", "rationale": "with the old bug the greeting has no name"}
    assert [i["regressions"] for i in entry["incidents"]] == [["name-dropped"],
                                                             ["empty-name-accepted"]]
    codes = [(f["subject"], f["code"]) for f in report["findings"]]
    assert ("name-dropped", "self_reported_proof") in codes  # proven: true is not trusted
    messages = [f["message"] for f in report["findings"] if f["code"] == "unverifiable"]
    assert any("no failure signature" in m for m in messages)
    assert any("expected_fail is false" in m for m in messages)
    # A proof with nothing to run is named, its other fields still shown and audited.
    assert third["fail_before_fix_proof_command"] is None
    assert third["earlier_notes"]["rationale"].startswith("seen by hand")
    assert ("greeting-file-empty", "self_reported_proof") in codes
    assert any(m.startswith("greeting-file-empty can never be verified: fail_before_fix has "
                            "no proof_command") for m in messages)


def test_verify_names_each_record_it_cannot_verify_and_exits_1(greeter: Path) -> None:
    result = run_cli("regressions", "verify", ".", "--json", "--timeout-seconds", "20",
                     cwd=greeter)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    verdicts = {r["regression_id"]: r for r in report["regressions"]}
    assert {rid: r["verdict"] for rid, r in verdicts.items()} == {
        "name-dropped": "NOT_VERIFIED", "empty-name-accepted": "NOT_VERIFIED",
        "greeting-file-empty": "NOT_VERIFIED"}
    assert "no failure signature" in verdicts["name-dropped"]["reasons"][0]
    no_command = verdicts["greeting-file-empty"]
    assert "has no proof_command" in no_command["reasons"][0]
    assert no_command["fail_before_fix"] is None
    assert verdicts["name-dropped"]["fail_before_fix"] is None  # never run: it proves nothing
    # What can be verified is: both retained cases pass on the current code.
    assert [r["retained"]["outcome"] for r in report["regressions"]] == ["PASS"] * 3
    report_only = run_cli("regressions", "verify", ".", "--report-only", cwd=greeter)
    assert report_only.returncode == 0
    assert "NOT_VERIFIED  name-dropped" in report_only.stdout


def test_a_signature_added_verifies_the_record_with_its_proof_run_from_the_skill_dir(
    greeter: Path
) -> None:
    data = registry_data(greeter)
    # The earlier tool ran proofs from the skill's directory: fixtures/prove_name_dropped.sh
    # only exists from there.
    data["regressions"][0]["fail_before_fix"]["expected"] = {
        "exit_code": 1, "stdout_contains": ["name dropped"]}
    (greeter / "fixtures" / "regressions.json").write_text(json.dumps(data))
    result = run_cli("regressions", "verify", ".", "--json", cwd=greeter)
    assert result.returncode == 1, result.stderr
    verdicts = {r["regression_id"]: r for r in json.loads(result.stdout)["regressions"]}
    assert verdicts["name-dropped"]["verdict"] == "VERIFIED", verdicts["name-dropped"]
    assert verdicts["name-dropped"]["fail_before_fix"]["cwd"] == "."  # shown from cwd
    assert verdicts["empty-name-accepted"]["verdict"] == "NOT_VERIFIED"
    assert verdicts["greeting-file-empty"]["verdict"] == "NOT_VERIFIED"


def test_cwd_is_from_the_skill_dir_only_in_a_registry_written_for_the_earlier_tool(
    tmp_path: Path
) -> None:
    path = tmp_path / "skill" / "fixtures" / "regressions.json"
    proof = {"proof_command": ["bash", "p.sh"],
             "expected": {"exit_code": 1, "stdout_contains": ["name dropped"]}}
    today = {"schema": "agentic_evals.regressions.v1", "regressions": [
        {"regression_id": "r", "retained_case": "greets", "fail_before_fix": proof}]}
    loaded = registry_from_data(today, path)
    assert loaded.earlier is False
    assert loaded.regressions[0].proof is not None
    assert loaded.regressions[0].proof.cwd == path.parent
    assert loaded.regressions[0].unverifiable == ()
    for marker in ({"version": 1}, {"note": "x"}):
        loaded = registry_from_data({**today, **marker}, path)
        assert loaded.earlier is True
        assert loaded.regressions[0].proof is not None
        assert loaded.regressions[0].proof.cwd == path.parent.parent


@pytest.mark.parametrize(("record", "reasons"), [
    ({"status": "ACTIVE"}, [earlier.NO_PROOF]),
    ({"fail_before_fix": {"proven": True, "rationale": "seen by hand"}},
     [earlier.NO_PROOF_COMMAND, earlier.NO_SIGNATURE]),
    ({"fail_before_fix": {"proof_command": ["x"], "expected": {"nonzero": True}}},
     [earlier.NO_SIGNATURE]),
    ({"fail_before_fix": {"proof_command": ["x"], "expected_fail": False, "expected": {
        "nonzero": True, "stdout_contains": ["name dropped"]}}}, [earlier.PASSING_PROOF]),
    ({"fail_before_fix": {"proof_command": ["x"], "expected": {
        "nonzero": True, "stdout_contains": ["name dropped"]}}}, []),
])
def test_why_a_record_can_never_be_verified(record: dict[str, Any], reasons: list[str]) -> None:
    assert earlier.unverifiable_reasons(record, active=True) == reasons
    assert earlier.unverifiable_reasons(record, active=False) == []


@pytest.mark.parametrize(("value", "key"), [
    ("INC-9", "INC-9"),
    ({"incident_id": "a", "issue": "#1"}, "a"),
    ({"id": "INC-7", "issue": 12}, "12"),
    ({"id": "INC-7", "receipt": "r-1"}, "r-1"),
    ({"id": "INC-7"}, "INC-7"),
    (None, None),
])
def test_incident_keys_as_the_earlier_tool_matched_them(value: Any, key: str | None) -> None:
    assert earlier.incident_key(value) == key
