"""The audit of retained regressions: static, nothing is executed.

Each record is judged as it stands: is its retained case still there to guard, can its proof
run at all, was it ever shown to fail before its fix, and how long ago. Open incidents with no
regression mapped to them are reported too. ``audit`` folds every registry under a root into
one report (``agentic_evals.regressions_audit.v1``) with a gate.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from pytest_agentic_evals.jsonio import display_path
from pytest_agentic_evals.problems import InputError
from pytest_agentic_evals.regressions import earlier
from pytest_agentic_evals.regressions.registry import (
    ACTIVE,
    DEFAULT_FRESHNESS_DAYS,
    EXEMPT,
    RETIRED,
    Proof,
    Registry,
    RegistryError,
    Regression,
    load_registry,
    retained_case_problems,
    today_utc,
)

AUDIT_SCHEMA = "agentic_evals.regressions_audit.v1"
ERROR, WARNING, INFO = "error", "warning", "info"
# The groups a registry's entry lists regressions (or incidents) in, and the summary counts.
GROUPS = ("unprotected", "never_proven", "stale_live_proof", "retired", "exempt",
          "open_incidents", "unverifiable")
# Interpreters whose first operand is a script that must exist for the proof to run.
_SCRIPT_INTERPRETERS = frozenset({
    "python", "python3", "bash", "sh", "zsh", "dash", "node", "ruby", "perl",
})


@dataclass(frozen=True)
class Finding:
    severity: str
    code: str
    registry: str
    pointer: str
    subject: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)


def _program_problem(proof: Proof) -> str | None:
    """A proof whose program or script does not exist fails without reproducing anything."""
    program = proof.argv[0]
    env_path = proof.env.get("PATH", os.environ.get("PATH"))
    if "/" in program:
        if not (proof.cwd / program).exists():
            return f"proof program {program} not found (from {display_path(proof.cwd)})"
    elif shutil.which(program, path=env_path) is None:
        return f"proof program {program} not found on PATH"
    if Path(program).name.rstrip("0123456789.") in _SCRIPT_INTERPRETERS and len(proof.argv) > 1:
        script = proof.argv[1]
        if not script.startswith("-") and Path(script).suffix and not (proof.cwd / script).exists():
            return f"proof script {script} not found (from {display_path(proof.cwd)})"
    return None


@dataclass
class _Findings:
    """What the audit of one registry has found so far, and the groups it sorted records into."""

    registry: str
    found: list[Finding] = field(default_factory=list)
    groups: dict[str, list[str]] = field(
        default_factory=lambda: {key: [] for key in GROUPS})

    def add(self, severity: str, code: str, pointer: str, subject: str, message: str) -> None:
        self.found.append(Finding(severity, code, self.registry, pointer, subject, message))


def audit_registry(
    registry: Registry,
    *,
    today: date | None = None,
    freshness_days: int | None = None,
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[dict[str, Any], list[Finding]]:
    """One registry's entry in an audit, and its findings."""
    today = today or today_utc()
    window = freshness_days or registry.freshness_days or DEFAULT_FRESHNESS_DAYS
    findings = _Findings(registry.shown)
    entries = []
    for regression in registry.regressions:
        entry = _regression_entry(regression)
        entries.append(entry)
        _judge_regression(regression, entry, findings, today, window, extra_expectations)
    entry_dict = {
        "path": registry.shown,
        "skill": registry.skill,
        "valid": True,
        "problems": [],
        "freshness_days": window,
        "regressions": entries,
        "incidents": _incident_entries(registry, findings),
        **findings.groups,
    }
    return entry_dict, findings.found


def _regression_entry(regression: Regression) -> dict[str, Any]:
    """A record as the audit shows it, before it is judged."""
    return {
        "regression_id": regression.regression_id,
        "title": regression.title,
        "status": regression.status,
        "incident_id": regression.incident_id,
        "claim_ids": list(regression.claim_ids),
        "seam_ids": list(regression.seam_ids),
        "retained_case": regression.retained_case,
        "retained_fixture": display_path(regression.retained_fixture),
        "evidence_class": regression.evidence_class,
        "detection_date": _iso(regression.detection_date),
        "fix_date": _iso(regression.fix_date),
        "last_proven": _iso(regression.last_proven),
        "proof_age_days": None,
        "fail_before_fix_proof_command": list(regression.proof.argv)
        if regression.proof else None,
        "retirement": regression.retirement,
        "protected": None,
        "problems": [],
        "unverifiable": list(regression.unverifiable),
        "earlier_notes": dict(regression.notes),
    }


def _judge_regression(
    regression: Regression,
    entry: dict[str, Any],
    findings: _Findings,
    today: date,
    window: int,
    extra_expectations: Mapping[str, Mapping[str, Any]] | None,
) -> None:
    """A retired record is only listed; an exempt one is checked for its guard but not its
    proof; an active one for its guard, its proof and the proof's age."""
    rid, here = regression.regression_id, regression.pointer
    if regression.status == RETIRED:
        findings.groups["retired"].append(rid)
        findings.add(INFO, "retired", here, rid, f"{rid} is retired: {regression.retirement}")
        return
    _judge_guard(regression, entry, findings, extra_expectations)
    if regression.status == EXEMPT:
        findings.groups["exempt"].append(rid)
        findings.add(INFO, "exempt", here + "/status", rid,
                     f"{rid} is exempt: its guard is not verified")
        return
    _judge_proof(regression, findings)
    _judge_freshness(regression, entry, findings, today, window)


def _judge_guard(
    regression: Regression,
    entry: dict[str, Any],
    findings: _Findings,
    extra_expectations: Mapping[str, Mapping[str, Any]] | None,
) -> None:
    """Is the retained case still there, and can its failure fail a run?"""
    rid, here = regression.regression_id, regression.pointer + "/retained_case"
    problems, _, fixture = retained_case_problems(regression, extra_expectations)
    entry["protected"] = not problems
    entry["problems"] = problems
    if problems:
        findings.groups["unprotected"].append(rid)
        severity = ERROR if regression.status == ACTIVE else WARNING
        for problem in problems:
            findings.add(severity, "unprotected", here, rid, problem)
    elif fixture is not None and not fixture.case(regression.retained_case).required:
        findings.add(WARNING, "retained_case_optional", here, rid,
                     f"retained case {regression.retained_case!r} is \"required\": false, so "
                     "its failure never fails a run")


def _judge_proof(regression: Regression, findings: _Findings) -> None:
    """Can the proof ever show the declared failure, and can its program run at all?"""
    rid, here = regression.regression_id, regression.pointer + "/fail_before_fix"
    if regression.unverifiable:
        findings.groups["unverifiable"].append(rid)
        for reason in regression.unverifiable:
            findings.add(ERROR, "unverifiable", here, rid,
                         f"{rid} can never be verified: {reason}")
    if regression.notes.get("proven") is True:
        findings.add(INFO, "self_reported_proof", here + "/proven", rid,
                     f"{rid}: {earlier.SELF_REPORTED}")
    if regression.proof is not None:
        missing = _program_problem(regression.proof)
        if missing:
            findings.add(WARNING, "proof_unrunnable", here + "/proof_command", rid,
                         f"{missing}: the proof would fail without reproducing anything")


def _judge_freshness(
    regression: Regression, entry: dict[str, Any], findings: _Findings, today: date, window: int
) -> None:
    """Was the proof ever run, and within the freshness window?"""
    rid, here = regression.regression_id, regression.pointer
    if regression.last_proven is None:
        findings.groups["never_proven"].append(rid)
        findings.add(WARNING, "never_proven", here, rid, f"{rid} was never proven to fail "
                     "before its fix (possibly vacuous): run regressions verify --record")
        return
    age = (today - regression.last_proven).days
    entry["proof_age_days"] = age
    if age > window:
        findings.groups["stale_live_proof"].append(rid)
        findings.add(WARNING, "stale_live_proof", here + "/last_proven", rid,
                     f"{rid} was last proven {age} days ago ({_iso(regression.last_proven)}), "
                     f"beyond the {window}-day freshness window")


def _incident_entries(registry: Registry, findings: _Findings) -> list[dict[str, Any]]:
    """Each incident with the regressions mapped to it; an open one with none is a finding."""
    mapped: dict[str, list[str]] = {}
    for regression in registry.regressions:
        if regression.incident_id:
            mapped.setdefault(regression.incident_id, []).append(regression.regression_id)
    incidents = []
    for incident in registry.incidents:
        regressions = mapped.get(incident.incident_id, [])
        incidents.append({"incident_id": incident.incident_id, "status": incident.status,
                          "date": _iso(incident.date), "title": incident.title,
                          "regressions": regressions})
        if incident.status == "open" and not regressions:
            findings.groups["open_incidents"].append(incident.incident_id)
            findings.add(WARNING, "open_incident", incident.pointer, incident.incident_id,
                         f"open incident {incident.incident_id} has no regression mapped to "
                         "it: the failure is not yet permanent evidence")
    return incidents


def invalid_registry_entry(path: Path, error: InputError) -> tuple[dict[str, Any], Finding]:
    shown = display_path(path)
    entry = {"path": shown, "skill": None, "valid": False,
             "problems": [str(problem) for problem in error.problems]}
    finding = Finding(ERROR, "invalid_registry", shown, "", shown,
                      f"registry is invalid ({len(error.problems)} problem(s)): its regressions "
                      "are unknown, not zero")
    return entry, finding


def audit(
    paths: Sequence[Path],
    *,
    root: str,
    today: date | None = None,
    freshness_days: int | None = None,
    strict: bool = False,
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The audit of every registry in ``paths``: invalid ones are listed as invalid."""
    today = today or today_utc()
    entries, findings = [], []
    for path in paths:
        try:
            registry = load_registry(path)
        except RegistryError as exc:
            entry, finding = invalid_registry_entry(path, exc)
            entries.append(entry)
            findings.append(finding)
            continue
        entry_dict, found = audit_registry(registry, today=today, freshness_days=freshness_days,
                                           extra_expectations=extra_expectations)
        entries.append(entry_dict)
        findings += found
    valid = [entry for entry in entries if entry["valid"]]
    summary = {
        "registries": len(entries),
        "invalid_registries": len(entries) - len(valid),
        "regressions": sum(len(e["regressions"]) for e in valid),
        "active": sum(r["status"] == ACTIVE for e in valid for r in e["regressions"]),
        **{key: sum(len(e[key]) for e in valid) for key in GROUPS},
    }
    failing = [f for f in findings if f.severity == ERROR or (strict and f.severity == WARNING)]
    if summary["invalid_registries"]:
        reason = f"{summary['invalid_registries']} invalid registry(ies)"
    elif failing:
        reason = "; ".join(f"{f.subject}: {f.code}" for f in failing[:8])
    else:
        reason = "every active regression is protected"
    return {
        "schema": AUDIT_SCHEMA,
        "root": root,
        "today": today.isoformat(),
        "freshness_days": freshness_days,
        "strict": strict,
        "registries": entries,
        "findings": [finding.to_dict() for finding in findings],
        "summary": summary,
        "gate": {"passed": not failing and not summary["invalid_registries"], "reason": reason},
    }


def _iso(value: date | None) -> str | None:
    return value.isoformat() if value else None


def audit_lines(report: Mapping[str, Any]) -> list[str]:
    """The audit as a table a person reads at a glance."""
    lines = []
    for entry in report["registries"]:
        if not entry["valid"]:
            lines.append(f"INVALID  {entry['path']}: {len(entry['problems'])} problem(s) "
                         "(listed on stderr): its regressions are unknown, not zero")
            continue
        count = len(entry["regressions"])
        lines.append(f"{entry['path']} (skill {entry['skill']}): {count} regression(s), "
                     f"freshness window {entry['freshness_days']} days")
        for record in entry["regressions"]:
            lines.append(f"  {record['status']:<8} {record['regression_id']:<32} "
                         f"case {record['retained_case']:<28} {_state_text(record, entry)}")
        for incident in entry["incidents"]:
            mapped = ", ".join(incident["regressions"]) or "no regression"
            lines.append(f"  incident {incident['incident_id']} ({incident['status']}): {mapped}")
    findings = [f for f in report["findings"] if f["code"] != "invalid_registry"]
    if findings:
        lines.append("findings:")
        lines += [f"  {f['severity'].upper():<8} {f['code']:<22} {f['registry']}: "
                  f"{f['pointer'] or '(document)'}: {f['message']}" for f in findings]
    summary = report["summary"]
    lines.append(
        f"summary: {summary['registries']} registry(ies) ({summary['invalid_registries']} "
        f"invalid), {summary['regressions']} regression(s), {summary['active']} active: "
        f"{summary['unprotected']} unprotected, {summary['never_proven']} never proven, "
        f"{summary['stale_live_proof']} stale, {summary['retired']} retired, "
        f"{summary['exempt']} exempt, {summary['open_incidents']} open incident(s) unmapped")
    return lines


def _state_text(record: Mapping[str, Any], entry: Mapping[str, Any]) -> str:
    rid = record["regression_id"]
    if record["status"] == RETIRED:
        return f"retired: {record['retirement']}"
    if rid in entry["unprotected"]:
        return "UNPROTECTED"
    if rid in entry["unverifiable"]:
        return "UNVERIFIABLE (see findings)"
    if rid in entry["never_proven"]:
        return "never proven"
    age = record["proof_age_days"]
    when = f"proven {record['last_proven']} ({age} days ago)" if age is not None else ""
    if rid in entry["stale_live_proof"]:
        return "STALE, " + when
    return when or "exempt"
