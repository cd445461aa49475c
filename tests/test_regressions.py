"""Retained regressions: the registry, audit/show, verify, and ``pytest -m regression``.

A skill whose greeting once dropped the name (incident inc-1). ``GREETER_OLD_BUG=1`` brings
that bug back, so a proof can run the retained guard case against the broken behaviour for
real; the current run.sh is fixed, so the same case passes against the current code.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import tempfile
import uuid
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_agentic_evals.regressions.registry import load_registry, parse_date, today_utc
from pytest_agentic_evals.schemas import schema_text

from conftest import MODES, Skill, make_skill, run_cli, skill_fixture

REPO = Path(__file__).resolve().parent.parent

RUN_SH = """#!/usr/bin/env bash
# Greets a name. GREETER_OLD_BUG=1 brings back incident inc-1: the name was dropped.
if [ -z "${1:-}" ]; then echo "error: name required" >&2; exit 2; fi
if [ -n "${GREETER_OLD_BUG:-}" ]; then echo "hello, "; exit 0; fi
echo "hello, $1"
"""
BROKEN_RUN_SH = """#!/usr/bin/env bash
# The fix was lost: the name is dropped again.
echo "hello, "
"""
SIGNATURE = "stdout_contains: 'hello, Ada' not found in stdout"


def proof(**overrides: Any) -> dict[str, Any]:
    """A genuine proof: the retained case, run against the old bug, fails with its signature."""
    data: dict[str, Any] = {
        "proof_command": ["agentic-evals", "run", "agentic_eval.json", "--case", "greets"],
        "env": {"GREETER_OLD_BUG": "1"},
        "timeout_seconds": 120,
        "expected": {"exit_code": 1, "stdout_contains": [SIGNATURE]},
    }
    data.update(overrides)
    return data


def record(regression_id: str = "name-dropped", **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "regression_id": regression_id,
        "incident": {"incident_id": "inc-1", "date": "2026-01-10"},
        "claim_ids": ["greets.by-name"],
        "retained_case": "greets",
        "detection_date": "2026-01-10",
        "fix_date": "2026-01-11",
        "fail_before_fix": proof(),
    }
    data.update(overrides)
    return data


def registry(*records: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "schema": "agentic_evals.regressions.v1",
        "skill": "greeter",
        "incidents": [{"incident_id": "inc-1", "date": "2026-01-10", "status": "closed"}],
        "regressions": list(records) or [record()],
    }
    data.update(overrides)
    return data


def greeter(root: Path, run_sh: str = RUN_SH) -> Skill:
    skill = Skill(root)
    (root / "run.sh").write_text(run_sh)
    skill.fixture()
    return skill


def write_registry(skill: Skill, data: Any) -> Path:
    return skill.write(data, name="regressions.json")


def verify(skill: Skill, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    report = skill.root / "verify.json"
    report.unlink(missing_ok=True)
    result = run_cli("regressions", "verify", ".", "--output", str(report), *args,
                     cwd=skill.root)
    assert "Traceback" not in result.stderr, result.stderr
    return result, (json.loads(report.read_text()) if report.exists() else {})


def verdicts(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["regression_id"]: entry for entry in report["regressions"]}


# -- the registry ---------------------------------------------------------------------------


def test_schema_command_prints_the_registry_schema_and_it_validates_registries() -> None:
    result = run_cli("schema", "regressions")
    assert result.returncode == 0
    schema = json.loads(result.stdout)
    assert "agentic_evals.regressions.v1" in schema["title"]
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(json.loads((REPO / "fixtures" / "regressions.json").read_text()))
    validator.validate(registry())
    assert not validator.is_valid(registry(record(status="RETIRED")))  # no retirement reason
    # A proof without a failure signature is a fault of its record, not of the registry: the
    # loader names it as never verifiable (tests/test_earlier_registry.py).
    unsigned = registry(record(fail_before_fix=proof(expected={"exit_code": 1})))
    assert validator.is_valid(unsigned)
    assert not validator.is_valid(registry(record(fail_before_fix=proof(expected={}))))


def test_every_problem_is_reported_at_once_with_its_pointer(skill: Skill) -> None:
    greeter(skill.root)
    future = (today_utc() + timedelta(days=10)).isoformat()
    data = registry(
        record("typo", retained_cas="greets"),
        record("no-proof", fail_before_fix=None),
        record("retired-without-reason", status="RETIRED"),
        record("bad-dates", detection_date="2026-02-30", fix_date="never", last_proven=future),
        record("fixed-before-found", detection_date="2026-03-02", fix_date="2026-03-01"),
        record("success-is-no-failure", fail_before_fix=proof(
            expected={"exit_code": 0, "stdout_contains": [SIGNATURE]})),
        record("not-found-is-no-failure", fail_before_fix=proof(
            expected={"exit_code": 127, "stderr_contains": ["No such file"]})),
        record("generic-signature", fail_before_fix=proof(
            expected={"nonzero": True, "stderr_contains": ["Error"]})),
        record("no-signature", fail_before_fix=proof(expected={"nonzero": True})),
        record("both", fail_before_fix=proof(
            expected={"exit_code": 1, "nonzero": True, "stdout_contains": [SIGNATURE]})),
        record("both"),
        record("exit-code-as-text", fail_before_fix=proof(
            expected={"exit_code": "1", "stdout_contains": [SIGNATURE]})),
    )
    data["regressions"][0].pop("retained_case")
    data["regressions"][1].pop("fail_before_fix")
    # Structure first: values are interpreted once the structure is right.
    write_registry(skill, data)
    result = run_cli("regressions", "show", ".", cwd=skill.root)
    assert result.returncode == 2
    err = result.stderr
    assert "regressions registry rejected" in err
    for pointer, text in [
        ("/regressions/0/retained_cas", "unknown key 'retained_cas' (did you mean "
                                        "'retained_case'?)"),
        ("/regressions/0", "'retained_case' is a required property"),
        ("/regressions/2", "a RETIRED regression needs a retirement reason"),
        ("/regressions/3/fix_date", '"never" is not an ISO date'),
        ("/regressions/5/fail_before_fix/expected/exit_code", "exit_code 0 is success"),
        ("/regressions/9/fail_before_fix/expected", "exit_code and nonzero exclude each other"),
        ("/regressions/11/fail_before_fix/expected/exit_code", '"1" is a string, expected '
                                                               "integer"),
    ]:
        assert f"fixtures/regressions.json: {pointer}: {text}" in err, (pointer, err)
    assert "Traceback" not in err
    # no proof, or no failure signature: that record is never verified, the others still are
    assert "/regressions/1:" not in err and "/regressions/8/" not in err
    assert result.stdout.startswith("INVALID  fixtures/regressions.json")

    # Then the values: real dates, coherent dates, signatures that identify a bug.
    for position in (0, 1, 2, 5, 8, 9, 11):
        data["regressions"][position] = record(f"fixed-{position}")
    data["regressions"][3]["fix_date"] = "2026-04-31"
    data["regressions"][9] = record("both")
    write_registry(skill, data)
    result = run_cli("regressions", "show", ".", cwd=skill.root)
    assert result.returncode == 2
    err = result.stderr
    for pointer, text in [
        ("/regressions/3/detection_date", "'2026-02-30' is not a real date"),
        ("/regressions/3/fix_date", "'2026-04-31' is not a real date"),
        ("/regressions/3/last_proven", f"{future} is in the future"),
        ("/regressions/4/fix_date", "fix_date 2026-03-01 is before detection_date 2026-03-02"),
        ("/regressions/6/fail_before_fix/expected/exit_code", "exit_code 127 means command not "
                                                              "found"),
        ("/regressions/7/fail_before_fix/expected/stderr_contains/0", "'Error' is too generic"),
        ("/regressions/10/regression_id", "duplicate regression_id 'both' (also "
                                          "/regressions/9/regression_id)"),
    ]:
        assert f"fixtures/regressions.json: {pointer}: {text}" in err, (pointer, err)


@pytest.mark.parametrize("content", [b"\xff\xfe not text", b"{not json", b"[]",
                                     b'{"schema": "x", "regressions": []}'])
def test_an_unreadable_registry_is_invalid_not_empty(skill: Skill, content: bytes) -> None:
    greeter(skill.root)
    (skill.fixtures / "regressions.json").write_bytes(content)
    result = run_cli("regressions", "audit", ".", "--json", cwd=skill.root)
    assert result.returncode == 2
    assert "fixtures/regressions.json" in result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert report["summary"]["invalid_registries"] == 1
    assert report["registries"][0]["valid"] is False
    assert report["gate"]["passed"] is False


def test_dates_are_compared_as_dates() -> None:
    assert parse_date("2026-01-05") == date(2026, 1, 5)
    # 23:30 at UTC-5 is already the next day in UTC.
    assert parse_date("2026-01-05T23:30:00-05:00") == date(2026, 1, 6)
    assert parse_date("2026-01-05T10:00:00Z") == date(2026, 1, 5)
    for text in ("2026-02-30", "never", "2026-13-01", "2026-1-5"):
        assert parse_date(text) is None, text


# -- show and audit: static --------------------------------------------------------------------


def test_show_reports_never_proven_stale_retired_exempt_and_unmapped_incidents(
    skill: Skill,
) -> None:
    greeter(skill.root)
    today = today_utc()
    data = registry(
        record("never-proven"),
        record("fresh", last_proven=(today - timedelta(days=30)).isoformat()),
        record("stale", last_proven=(today - timedelta(days=31)).isoformat()),
        record("retired", status="RETIRED", fail_before_fix=None,
               retirement={"reason": "greeting removed from the product", "date": "2026-02-01"}),
        record("exempt", status="EXEMPT", fail_before_fix=None),
    )
    for entry in data["regressions"]:
        if entry["fail_before_fix"] is None:
            del entry["fail_before_fix"]
    data["incidents"] += [
        {"incident_id": "inc-2", "date": "2026-02-02", "title": "lost a name, no guard yet"},
        {"incident_id": "inc-3", "status": "closed"},
    ]
    write_registry(skill, data)
    output = skill.root / "out" / "show.json"
    result = run_cli("regressions", "show", ".", "--output", str(output), cwd=skill.root)
    assert result.returncode == 0, result.stderr  # warnings only
    report = json.loads(output.read_text())
    assert report["schema"] == "agentic_evals.regressions_audit.v1"
    entry = report["registries"][0]
    assert entry["never_proven"] == ["never-proven"]
    assert entry["stale_live_proof"] == ["stale"]
    assert entry["retired"] == ["retired"]
    assert entry["exempt"] == ["exempt"]
    assert entry["unprotected"] == []
    assert entry["open_incidents"] == ["inc-2"]
    assert {r["regression_id"]: r["proof_age_days"] for r in entry["regressions"]}["fresh"] == 30
    text = result.stdout
    assert "never proven" in text and "STALE" in text and "retired: greeting removed" in text
    assert "open incident inc-2 has no regression mapped to it" in text
    assert "inc-3" not in text.split("findings:")[1]  # closed incidents need no mapping

    # The freshness window is configurable, from the command line or the registry.
    result = run_cli("regressions", "show", ".", "--freshness-days", "60", "--json",
                     cwd=skill.root)
    assert json.loads(result.stdout)["registries"][0]["stale_live_proof"] == []
    write_registry(skill, {**data, "freshness_days": 60})
    result = run_cli("regressions", "show", ".", "--json", cwd=skill.root)
    assert json.loads(result.stdout)["registries"][0]["stale_live_proof"] == []
    # --strict makes warnings fail the command.
    assert run_cli("regressions", "show", ".", "--strict", cwd=skill.root).returncode == 1


def test_a_renamed_or_missing_retained_case_is_unprotected(skill: Skill) -> None:
    greeter(skill.root)
    data = skill_fixture()
    data["cases"][0]["name"] = "greets-by-name"  # the guard was renamed
    skill.fixture(cases=data["cases"])
    write_registry(skill, registry(
        record(),
        record("gone-fixture", retained_fixture="agentic_eval_old.json"),
        record("exempt-and-gone", status="EXEMPT", retained_case="nothing-like-it"),
    ))
    result = run_cli("regressions", "show", ".", cwd=skill.root)
    assert result.returncode == 1
    assert ("retained case 'greets' not found in fixtures/agentic_eval.json (renamed to "
            "'greets-by-name'?)") in result.stdout
    assert "retained fixture fixtures/agentic_eval_old.json not found" in result.stdout
    assert "UNPROTECTED" in result.stdout
    result = run_cli("regressions", "show", ".", "--json", cwd=skill.root)
    entry = json.loads(result.stdout)["registries"][0]
    assert entry["unprotected"] == ["name-dropped", "gone-fixture", "exempt-and-gone"]
    severities = {(f["subject"], f["severity"]) for f in json.loads(result.stdout)["findings"]
                  if f["code"] == "unprotected"}
    assert ("exempt-and-gone", "warning") in severities  # exempt: shown, not failing
    assert ("name-dropped", "error") in severities


def test_audit_walks_a_tree_and_keeps_invalid_registries_apart(tmp_path: Path) -> None:
    good = greeter(tmp_path / "skills" / "good")
    write_registry(good, registry())
    bad = greeter(tmp_path / "skills" / "bad")
    write_registry(bad, registry(record(status="RETIRED")))
    ignored = greeter(tmp_path / "skills" / "good" / "node_modules" / "dep")
    write_registry(ignored, "{broken")
    none = greeter(tmp_path / "skills" / "none")
    result = run_cli("regressions", "audit", "skills", "--output", "audit.json", cwd=tmp_path)
    assert result.returncode == 2
    assert "skills/bad/fixtures/regressions.json: /regressions/0: a RETIRED regression needs" \
        in result.stderr
    assert "INVALID  skills/bad/fixtures/regressions.json" in result.stdout
    report = json.loads((tmp_path / "audit.json").read_text())
    assert [e["path"] for e in report["registries"]] == [
        "skills/bad/fixtures/regressions.json", "skills/good/fixtures/regressions.json"]
    assert report["summary"]["invalid_registries"] == 1
    assert report["summary"]["regressions"] == 1  # the valid registry's, counted apart
    assert report["registries"][1]["never_proven"] == ["name-dropped"]

    result = run_cli("regressions", "audit", "skills/good", cwd=tmp_path)
    assert result.returncode == 0
    result = run_cli("regressions", "show", str(none.root), cwd=tmp_path)
    assert result.returncode == 0
    assert "no regressions.json under" in result.stdout
    assert run_cli("regressions", "audit", "nowhere", cwd=tmp_path).returncode == 2
    assert run_cli("regressions", "verify", str(none.root), cwd=tmp_path).returncode == 2


# -- verify through the CLI ---------------------------------------------------------------------


def test_verify_accepts_a_genuine_guard_and_records_last_proven(skill: Skill) -> None:
    greeter(skill.root)
    write_registry(skill, registry(record(), record(
        "retired", status="RETIRED", retirement="the feature is gone")))
    result, report = verify(skill, "--record")
    assert result.returncode == 0, result.stdout + result.stderr
    entry = verdicts(report)["name-dropped"]
    assert entry["verdict"] == "VERIFIED", entry["reasons"]
    assert entry["fail_before_fix"]["exit_code"] == 1
    assert entry["fail_before_fix"]["signatures_found"] == {"stdout": {SIGNATURE: True}}
    assert entry["retained"]["outcome"] == "PASS"
    assert [t["outcome"] for t in entry["retained"]["trials"]] == ["PASS", "PASS"]
    assert report["skipped"] == [{"regression_id": "retired", "status": "RETIRED"}]
    assert report["recorded"] == ["name-dropped"]
    assert result.stdout.startswith("VERIFIED      name-dropped: the proof failed as declared")
    written = json.loads((skill.fixtures / "regressions.json").read_text())
    assert written["regressions"][0]["last_proven"] == today_utc().isoformat()
    assert "last_proven" not in written["regressions"][1]
    assert load_registry(skill.fixtures / "regressions.json").regressions[0].last_proven
    assert not list(skill.fixtures.glob(".regressions.json.*"))  # no temporary left behind
    shown = run_cli("regressions", "show", ".", "--json", cwd=skill.root)
    assert json.loads(shown.stdout)["registries"][0]["never_proven"] == []


def test_verify_catches_vacuous_guards(skill: Skill) -> None:
    greeter(skill.root)
    edited = skill_fixture()
    # The guard's expectation edited to match the broken output: it now passes either way.
    edited["cases"][0]["expected"]["stdout_contains"] = ["hello, "]
    skill.write(edited, name="agentic_eval_edited.json")
    skill.write({"version": 2, "trials": 1, "cases": [
        {"name": "x", "type": "positive", "command": ["echo", "ok"],
         "expected": {"exit_code": 0}}]}, name="rejected.json")
    marker = f"proof-marker-{uuid.uuid4().hex}"
    sleeper = f"python3 -c 'import time; time.sleep(300)' {marker}"
    write_registry(skill, registry(
        record("genuine"),
        record("missing-script", fail_before_fix=proof(
            proof_command=["bash", "regressions/reproduce-old-bug.sh"],
            expected={"nonzero": True, "stderr_contains": ["reproduce-old-bug.sh"]})),
        record("missing-program", fail_before_fix=proof(
            proof_command=["reproduce-old-bug"],
            expected={"nonzero": True, "stdout_contains": [SIGNATURE]})),
        record("wrong-signature", fail_before_fix=proof(
            proof_command=["python3", "regressions/reproduce_old_bug.py"],
            expected={"exit_code": 2, "stdout_contains": [SIGNATURE]})),
        record("wrong-exit-code", fail_before_fix=proof(
            expected={"exit_code": 3, "stdout_contains": [SIGNATURE]})),
        record("undeclared-traceback", fail_before_fix=proof(
            proof_command=["python3", "-c", "print('hello, '); raise RuntimeError('old bug')"],
            expected={"exit_code": 1, "stdout_contains": ["hello, "]})),
        record("fixture-rejected", fail_before_fix=proof(
            proof_command=["agentic-evals", "run", "rejected.json"],
            expected={"nonzero": True, "stderr_contains": ["rejected.json"]})),
        record("edited-expectation", retained_fixture="agentic_eval_edited.json",
               fail_before_fix=proof(proof_command=[
                   "agentic-evals", "run", "agentic_eval_edited.json", "--case", "greets"])),
        record("hangs", fail_before_fix=proof(
            proof_command=["bash", "-c", f"setsid {sleeper} & exec {sleeper}"],
            timeout_seconds=1, expected={"nonzero": True, "stdout_contains": [SIGNATURE]})),
    ))
    # Runs nothing, yet already sees the proofs that cannot run.
    shown = run_cli("regressions", "show", ".", "--json", cwd=skill.root)
    unrunnable = {f["subject"] for f in json.loads(shown.stdout)["findings"]
                  if f["code"] == "proof_unrunnable"}
    assert unrunnable == {"missing-script", "missing-program", "wrong-signature"}

    result, report = verify(skill)
    assert result.returncode == 1
    found = verdicts(report)
    assert found["genuine"]["verdict"] == "VERIFIED", found["genuine"]["reasons"]
    expected_reasons = {
        "missing-script": "the proof exited 127 (command not found): it never ran",
        "missing-program": "the proof could not start: command not found: reproduce-old-bug",
        "wrong-signature": f"failure signature {SIGNATURE!r} not found in stdout",
        "wrong-exit-code": "the proof exited 1, the declared failure exits 3",
        "undeclared-traceback": "the proof died with an undeclared Python traceback",
        "fixture-rejected": "the proof's fixture was rejected at load",
        "edited-expectation": "the proof exited 0: the guard passed against the broken "
                              "behaviour",
        "hangs": "the proof timed out after 1s",
    }
    for regression_id, reason in expected_reasons.items():
        entry = found[regression_id]
        assert entry["verdict"] == "NOT_VERIFIED", regression_id
        assert any(reason in text for text in entry["reasons"]), (regression_id, entry["reasons"])
        # Each of these fails for its own reason only: the retained case itself is fine.
        assert entry["retained"]["outcome"] == "PASS", regression_id
    # The declared signature of these was present: only the stricter rule catches them.
    assert found["missing-script"]["fail_before_fix"]["signatures_found"] == {
        "stderr": {"reproduce-old-bug.sh": True}}
    assert found["fixture-rejected"]["fail_before_fix"]["signatures_found"] == {
        "stderr": {"rejected.json": True}}
    hung = found["hangs"]["fail_before_fix"]
    assert hung["timed_out"] is True
    # Sandboxed, the proof's PID namespace ends with it: what it started dies there, else it
    # is found and killed.
    assert hung["isolation"]["sandbox"] == "bwrap" or hung["left_behind_processes"]
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 1
    assert "NOT_VERIFIED  edited-expectation: cannot demonstrate fail-before-fix" in result.stdout
    assert report["summary"] == {"active": 9, "verified": 1, "not_verified": 8, "skipped": 0}

    # --regression narrows the run, and an unknown one is bad input.
    result, report = verify(skill, "--regression", "genuine")
    assert result.returncode == 0
    assert list(verdicts(report)) == ["genuine"]
    result, _ = verify(skill, "--regression", "no-such-regression")
    assert result.returncode == 2
    assert "unknown regression(s): no-such-regression" in result.stderr


def test_verify_is_not_fooled_by_a_proof_that_fails_on_its_own(skill: Skill) -> None:
    """Proofs that show nothing about the skill, dressed as its failure: each is caught."""
    greeter(skill.root)
    skill.write({"version": 2, "trials": 1, "cases": [
        {"name": "x", "type": "positive", "command": ["echo", "ok"],
         "expected": {"exit_code": 0}}]}, name="rejected.json")
    (skill.fixtures / "crash.py").write_text(f"print({SIGNATURE!r})\nraise SystemExit(1 / 0)\n")
    write_registry(skill, registry(
        record("echoes-its-signature", fail_before_fix=proof(
            proof_command=["bash", "-c", f"echo \"{SIGNATURE}\"; exit 1"])),
        record("signature-in-quoted-pieces", fail_before_fix=proof(
            proof_command=["bash", "-c", f'echo "{SIGNATURE[:20]}""{SIGNATURE[20:]}"; exit 1'])),
        record("signature-in-variables", fail_before_fix=proof(
            proof_command=["sh", "-c", "A=stdout_contains:; B=stdout; "
                           "printf '%s\\n' \"$A 'hello, Ada' not found in $B\"; exit 1"])),
        record("signature-in-words", fail_before_fix=proof(
            proof_command=["bash", "-c", "echo stdout_contains: \"'hello, Ada'\" not found in "
                           "stdout; exit 1"])),
        record("signature-in-the-environment", fail_before_fix=proof(
            proof_command=["bash", "-c", 'echo "$SIG"; exit 1'], env={"SIG": SIGNATURE})),
        record("signature-in-escapes", fail_before_fix=proof(
            proof_command=["bash", "-c", "printf 'stdout\\x5fcontains: \\x27hello, Ada\\x27 "
                           "not found in stdout\\n'; exit 1"])),
        record("rejected-through-stdout", fail_before_fix=proof(
            proof_command=["bash", "-c", "agentic-evals run rejected.json 2>&1"],
            expected={"exit_code": 2, "stdout_contains": ["rejected.json"]})),
        record("traceback-through-stdout", fail_before_fix=proof(
            proof_command=["bash", "-c", "python3 crash.py 2>&1"])),
        record("usage-error", fail_before_fix=proof(
            proof_command=["agentic-evals", "run", "agentic_eval.json", "--no-such-option"],
            expected={"exit_code": 2, "stderr_contains": ["--no-such-option"]})),
    ))
    result, report = verify(skill)
    assert result.returncode == 1
    found = verdicts(report)
    expected_reasons = {
        "echoes-its-signature": f"the failure signature {SIGNATURE!r} is written in the "
                                "proof's own command",
        **{regression_id: f"the failure signature {SIGNATURE!r} is written in the proof's own "
                          "command" for regression_id in ("signature-in-quoted-pieces",
                                                          "signature-in-variables",
                                                          "signature-in-words",
                                                          "signature-in-the-environment",
                                                          "signature-in-escapes")},
        "rejected-through-stdout": "the proof's fixture was rejected at load",
        "traceback-through-stdout": "the proof died with an undeclared Python traceback",
        "usage-error": "the proof stopped on a usage error",
    }
    for regression_id, reason in expected_reasons.items():
        entry = found[regression_id]
        assert entry["verdict"] == "NOT_VERIFIED", regression_id
        assert any(reason in text for text in entry["reasons"]), (regression_id, entry["reasons"])
        # The declared exit status and signature were there: only these rules catch them.
        assert all(all(found.values()) for found in
                   entry["fail_before_fix"]["signatures_found"].values()), regression_id


def test_a_proof_runs_in_the_sandbox_like_a_trial(skill: Skill, tmp_path: Path) -> None:
    """A registry may be written by the agent under evaluation: its proof must not reach
    what a trial cannot (the skill's files, the rest of the machine, the runner's runs)."""
    greeter(skill.root)
    outside = Path(tempfile.mkdtemp(prefix="proof-", dir="/var/tmp"))
    try:
        (skill.fixtures / "escape.sh").write_text(
            f"touch ../forged {outside}/forged; ls $TMPDIR/..; "
            "echo \"wrote $AGENTIC_EVALS_PROOF_DIR\" > $AGENTIC_EVALS_PROOF_DIR/note; "
            "cat $AGENTIC_EVALS_PROOF_DIR/note; exit 1\n")
        write_registry(skill, registry(record(fail_before_fix=proof(
            proof_command=["bash", "escape.sh"],
            expected={"exit_code": 1, "stdout_contains": ["wrote "]}))))
        _, report = verify(skill)
        ran = verdicts(report)["name-dropped"]["fail_before_fix"]
        assert ran["isolation"]["sandbox"] == "bwrap", ran
        assert ran["exit_code"] == 1 and "wrote " in ran["stdout"]["head"]
        assert "Read-only file system" in ran["stderr"]["head"]
        assert not (skill.root / "forged").exists() and not (outside / "forged").exists()
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def test_verify_requires_the_retained_case_to_pass_on_the_current_code(skill: Skill) -> None:
    # The fix was lost: the proof still fails as declared, but the guard fails today too.
    greeter(skill.root, run_sh=BROKEN_RUN_SH)
    write_registry(skill, registry(record(fail_before_fix=proof(
        proof_command=["agentic-evals", "run", "agentic_eval.json", "--case", "greets"])),
        record("renamed", retained_case="greet")))
    result, report = verify(skill, "--record")
    assert result.returncode == 1
    entry = verdicts(report)["name-dropped"]
    assert entry["fail_before_fix"]["verified"] is True
    assert entry["retained"]["outcome"] == "FAIL"
    assert any("did not pass on the current code (0/2 trials passed)" in reason
               for reason in entry["reasons"])
    assert any("retained case 'greet' not found" in reason
               for reason in verdicts(report)["renamed"]["reasons"])
    assert report["recorded"] == []  # nothing verified, nothing recorded
    assert "last_proven" not in (skill.fixtures / "regressions.json").read_text()


def test_a_retained_guard_that_ignores_the_skill_is_never_verified(skill: Skill) -> None:
    """The proof is a command of its own, so it can fail as declared (here by running another,
    honest case) while the retained guard passes whatever the skill does: the guard's first
    trial gets the run's control, and a guard that passes it too can never fail."""
    greeter(skill.root)
    data = skill_fixture()
    data["cases"].append({"name": "greets-anyway", "type": "positive", "required": False,
                          "command": ["bash", "-c", "bash ../run.sh Ada > /dev/null; "
                                                    "echo hello, Ada"],
                          "expected": {"exit_code": 0, "stdout_contains": ["hello, Ada"]}})
    skill.write(data)
    write_registry(skill, registry(record(retained_case="greets-anyway")))
    result, report = verify(skill)
    entry = verdicts(report)["name-dropped"]
    assert result.returncode == 1 and entry["verdict"] == "NOT_VERIFIED"
    assert entry["fail_before_fix"]["verified"] is True
    assert entry["retained"]["trials"][0]["control"]["status"] == "survived"
    assert any("control: the case passes just as well" in reason for reason in entry["reasons"])


def test_verify_a_rejected_retained_fixture_is_bad_input(skill: Skill) -> None:
    greeter(skill.root)
    skill.fixture(trials=1)
    write_registry(skill, registry())
    result, report = verify(skill)
    assert result.returncode == 2
    assert any("retained fixture fixtures/agentic_eval.json is rejected" in reason
               for reason in verdicts(report)["name-dropped"]["reasons"])


def test_a_retained_fixture_out_of_the_skill_is_refused(skill: Skill, tmp_path: Path) -> None:
    """A registry (which the agent under evaluation may write) names its guard in its own
    skill: `../../elsewhere/agentic_eval.json` would verify the regression on another skill's
    fixture."""
    greeter(skill.root)
    elsewhere = greeter(tmp_path / "elsewhere")
    write_registry(skill, registry(record(retained_fixture="../../elsewhere/fixtures/"
                                          "agentic_eval.json")))
    result = run_cli("regressions", "show", ".", cwd=skill.root)
    assert result.returncode == 2, result.stdout + result.stderr
    assert ("/regressions/0/retained_fixture: retained_fixture resolves outside the skill "
            f"directory {skill.root}") in result.stderr
    assert elsewhere.root.is_dir()


def test_a_retained_fixture_that_is_not_a_file_is_said_to_be_so(skill: Skill) -> None:
    greeter(skill.root)
    (skill.fixtures / "guard.json").mkdir()
    write_registry(skill, registry(record(retained_fixture="guard.json")))
    result, report = verify(skill)
    assert result.returncode != 0, result.stderr
    assert any("retained fixture fixtures/guard.json is not a regular file" in reason
               for reason in verdicts(report)["name-dropped"]["reasons"]), report


def test_a_retained_case_that_never_runs_the_skill_guards_nothing(skill: Skill) -> None:
    """`stat` of a missing path exits 1 now and before any fix: a guard of nothing."""
    greeter(skill.root)
    data = skill_fixture()
    data["cases"].append({"name": "no-leftover-lock", "type": "negative",
                          "command": ["stat", "/nonexistent-lock-of-a-guard"],
                          "expected": {"exit_code": 1}})
    skill.write(data)
    write_registry(skill, registry(record(retained_case="no-leftover-lock")))
    result, report = verify(skill)
    assert result.returncode != 0, result.stdout + result.stderr
    reasons = verdicts(report)["name-dropped"]["reasons"]
    assert any("retained case 'no-leftover-lock' reaches no code of the skill" in reason
               for reason in reasons), reasons


def test_the_projects_own_regression_is_verified() -> None:
    """fixtures/regressions.json records a real regression of this product, and its proof
    really fails against the old behaviour (see fixtures/regressions/)."""
    result = run_cli("regressions", "show", ".", "--json", cwd=REPO)
    assert result.returncode == 0, result.stderr
    entry = json.loads(result.stdout)["registries"][0]
    assert entry["unprotected"] == [] and entry["regressions"]
    result = run_cli("regressions", "verify", ".", "--json", cwd=REPO)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    report = json.loads(result.stdout)
    assert report["verified"] is True
    entry = verdicts(report)["nested-run-prunes-outer-run"]
    assert entry["fail_before_fix"]["exit_code"] == 1
    assert entry["retained"]["outcome"] == "PASS"


# -- pytest -m regression ---------------------------------------------------------------------


def pytester_skill(pytester: pytest.Pytester, records: list[dict[str, Any]],
                   fixture: dict[str, Any] | None = None) -> None:
    make_skill(pytester, fixture or skill_fixture())
    (pytester.path / "run.sh").write_text(RUN_SH)
    path = pytester.path / "fixtures" / "regressions.json"
    path.write_text(json.dumps(registry(*records), indent=2))


def run_pytest(pytester: pytest.Pytester, *args: str, mode: list[str] = ()) -> pytest.RunResult:
    argv = ["--agentic-evals", "--agentic-evals-report", "report.json", "-p", "no:cacheprovider",
            "-p", "no:randomly", *mode, *args]
    report = pytester.path / "report.json"
    report.unlink(missing_ok=True)
    return pytester.runpytest(*argv)


def read_report(pytester: pytest.Pytester) -> dict[str, Any]:
    from referencing import Registry, Resource

    report = json.loads((pytester.path / "report.json").read_text())
    fixture_schema = json.loads(schema_text("report"))
    name = "session_report" if "fixtures" in report else "report"
    resources = Registry().with_resource(fixture_schema["$id"],
                                         Resource.from_contents(fixture_schema))
    jsonschema.Draft202012Validator(json.loads(schema_text(name)),
                                    registry=resources).validate(report)
    return report


REGRESSION_IDS = ["fixtures/regressions.json::genuine"]


@pytest.mark.parametrize(
    ("args", "ids"),
    [
        (["-m", "regression"], REGRESSION_IDS),
        (["fixtures/agentic_eval.json", "-m", "regression"], REGRESSION_IDS),
        (["fixtures/regressions.json", "-m", "regression"], REGRESSION_IDS),
        (["fixtures/agentic_eval.json", "fixtures", "-m", "regression"], REGRESSION_IDS),
        (["-k", "greets.by-name"], REGRESSION_IDS),
        (["-m", "not regression"], None),
        # run --case asks for cases only
        (["--agentic-evals-case", "greets"], None),
    ],
    ids=["m-regression", "m-regression-fixture", "m-regression-registry",
         "m-regression-fixture-and-folder", "k-regression-title", "m-not-regression",
         "case-option"],
)
def test_items_are_one_per_active_regression_and_marked(
    pytester: pytest.Pytester, args: list[str], ids: list[str] | None
) -> None:
    """Only the ACTIVE regression is an item, selected by its marker or its name; ``ids``
    None: the selection leaves regressions out."""
    pytester_skill(pytester, [
        record("genuine"),
        record("retired", status="RETIRED", retirement="gone"),
        record("exempt", status="EXEMPT"),
    ])
    result = run_pytest(pytester, *args, "--collect-only", "-q")
    if ids is None:
        result.stdout.fnmatch_lines(["fixtures/agentic_eval.json::*"])
        result.stdout.no_fnmatch_line("*regressions.json*")
    else:
        assert [line for line in result.outlines if "::" in line] == ids


def test_a_proof_does_not_collect_regressions(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester_skill(pytester, [record()])
    monkeypatch.setenv("AGENTIC_EVALS_REGRESSION_ID", "name-dropped")
    result = run_pytest(pytester, "--collect-only", "-q")
    result.stdout.no_fnmatch_line("*regressions.json*")
    result.stdout.fnmatch_lines(["fixtures/agentic_eval.json::greets[[]trial-1]"])


def test_an_invalid_registry_is_a_failed_test_of_its_own(pytester: pytest.Pytester) -> None:
    pytester_skill(pytester, [record(status="RETIRED")])
    result = run_pytest(pytester, "-m", "regression", "-rf")
    result.stdout.fnmatch_lines([
        "*regressions registry rejected (1 problem(s))*",
        "*fixtures/regressions.json: /regressions/0: a RETIRED regression needs*",
        "FAILED fixtures/regressions.json::rejected*",  # kept whatever -m selects
    ])
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*Interrupted*")
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def broken_fixture() -> dict[str, Any]:
    """The greeter's fixture with a case that fails if it runs."""
    failing = copy.deepcopy(skill_fixture())
    failing["cases"][1]["expected"]["exit_code"] = 0
    return failing


@pytest.mark.parametrize("mode", MODES)
def test_regression_items_verify_and_gate(pytester: pytest.Pytester, mode: list[str]) -> None:
    pytester_skill(pytester, [
        record("genuine"),
        record("missing-script", fail_before_fix=proof(
            proof_command=["bash", "regressions/reproduce-old-bug.sh"],
            expected={"nonzero": True, "stderr_contains": ["reproduce-old-bug.sh"]})),
        record("wrong-signature", fail_before_fix=proof(
            proof_command=["python3", "regressions/reproduce_old_bug.py"],
            expected={"exit_code": 2, "stdout_contains": [SIGNATURE]})),
    ], fixture=broken_fixture())
    result = run_pytest(pytester, "fixtures/agentic_eval.json", "-m", "regression", mode=mode)
    result.assert_outcomes(passed=1, failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "NOT_VERIFIED  missing-script: cannot demonstrate fail-before-fix*",
        "  - fail-before-fix: the proof exited 127 (command not found)*",
    ], consecutive=True)
    result.stdout.fnmatch_lines([f"*failure signature {SIGNATURE!r} not found in stdout*"])
    report = read_report(pytester)
    assert {r["regression_id"]: r["verdict"] for r in report["regressions"]} == {
        "genuine": "VERIFIED", "missing-script": "NOT_VERIFIED",
        "wrong-signature": "NOT_VERIFIED"}
    assert report["regressions"][0]["nodeid"] == "fixtures/regressions.json::genuine"
    assert report["gate"]["counts"] is False  # no trial ran: the fixture does not weigh


@pytest.mark.parametrize("mode", MODES)
def test_a_verified_guard_passes_the_session_whatever_the_unselected_cases_would_do(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    pytester_skill(pytester, [record("genuine")], fixture=broken_fixture())
    result = run_pytest(pytester, "-m", "regression", mode=mode)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    report = read_report(pytester)
    assert [r["verdict"] for r in report["regressions"]] == ["VERIFIED"]
    assert report["regressions"][0]["retained"]["outcome"] == "PASS"


@pytest.mark.parametrize("mode", MODES)
def test_an_edited_expectation_fails_the_regression_item(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    edited = skill_fixture()
    edited["cases"][0]["expected"]["stdout_contains"] = ["hello, "]
    pytester_skill(pytester, [record()], fixture=edited)
    result = run_pytest(pytester, "fixtures/regressions.json", mode=mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*the proof exited 0: the guard passed against the broken behaviour*"])
    report = read_report(pytester)
    assert report["schema"] == "agentic_evals.session_report.v1"  # no fixture, regressions only
    assert report["fixtures"] == []
    assert [r["verdict"] for r in report["regressions"]] == ["NOT_VERIFIED"]
