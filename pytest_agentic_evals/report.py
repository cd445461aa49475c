"""The JSON report (``agentic_evals.report.v2``) and its atomic writing."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from functools import cache
from pathlib import Path
from typing import Any

from pytest_agentic_evals.evidence.claims import capability_readiness
from pytest_agentic_evals.evidence.provenance import case_provenance, execution_provenance
from pytest_agentic_evals.evidence.qualification import qualify
from pytest_agentic_evals.jsonio import display_path
from pytest_agentic_evals.model import (
    BLOCKED,
    FAIL,
    INFRA_BLOCKED,
    NOT_READY,
    NOT_TESTED,
    PASS,
    READY,
    USABLE_WITH_GAPS,
    Case,
    Fixture,
    Readiness,
    TrialResult,
)
from pytest_agentic_evals.probes import store as probe_store
from pytest_agentic_evals.probes.targets import failed_control
from pytest_agentic_evals.problems import pointer_for
from pytest_agentic_evals.reliability import case_reliability
from pytest_agentic_evals.schemas import schema_text
from pytest_agentic_evals.usage import case_usage
from pytest_agentic_evals.verdicts import (
    CaseVerdict,
    case_outcome,
    case_readiness,
    fixture_gate,
    worst,
)

REPORT_SCHEMA = "agentic_evals.report.v2"
SESSION_SCHEMA = "agentic_evals.session_report.v1"


def build_fixture_report(
    fixture: Fixture,
    trials: Mapping[tuple[str, int], TrialResult],
    selected: Mapping[str, Iterable[int]],
    *,
    run_id: str,
    trial_count: int,
    interrupted: bool = False,
    today: date | None = None,
) -> dict[str, Any]:
    """The report of one fixture from the trials that ran and the trials that were selected.

    ``trials`` maps (case name, trial number) to a trial result; ``selected`` maps case names
    to the trial numbers that were selected to run (absent or empty: deselected). The
    report's top-level keys stand in one literal, in the order of the report schema.
    """
    today = today or datetime.now(UTC).date()
    repo = git_state(fixture.path.parent)
    # Fewer trials than the fixture declares is less evidence than it asks for: never READY.
    too_few_trials = trial_count < fixture.trials
    cases, verdicts, some_unselected = _case_reports(fixture, trials, selected, trial_count,
                                                     repo)
    partial = interrupted or too_few_trials or some_unselected
    readiness_from_cases, notes = _eligible_readiness(case_readiness(verdicts, partial), cases)
    readiness = readiness_from_cases
    claims, claim_readiness, claim_lines = _claims_report(fixture, cases, today)
    if claim_readiness is not None:
        readiness = worst([readiness_from_cases, claim_readiness])
    notes += claim_lines
    notes += _run_notes(fixture, trial_count, partial, interrupted)
    notes += _stop_notes(cases)
    disqualified = {entry["name"]: entry["evidence_disqualifiers"] for entry in cases
                    if entry["evidence_disqualifiers"]}

    report = {
        "version": 2,
        "schema": REPORT_SCHEMA,
        "skill": fixture.skill,
        "fixture": display_path(fixture.path),
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "run_id": run_id,
        "fixture_sha256": fixture.sha256,
        "repo": repo,
        "trials": trial_count,
        "eval_kind": fixture.eval_kind,
        "eval_tier": fixture.eval_tier,
        **_statements(fixture, cases),
        "readiness": readiness,
        "case_readiness": readiness_from_cases,
        "readiness_notes": notes,
        "selection": "partial" if partial else "full",
        "interrupted": interrupted,
        "summary": summarize(cases),
        "cases": cases,
        "capability_readiness": claims,
        "evidence_disqualifiers": disqualified or None,
    }
    gate = fixture_gate(report)
    report["gate"] = {"counts": gate.counts, "passed": gate.passed, "reason": gate.reason}
    return report


def _claims_report(
    fixture: Fixture, cases: Sequence[Mapping[str, Any]], today: date
) -> tuple[dict[str, Any], Readiness | None, list[str]]:
    """The capability claims judged (empty without claims), their readiness, and its notes."""
    if not fixture.data.get("capability_claims"):
        return {}, None, []
    # Deselected cases are NOT_TESTED here, so claims only count what ran.
    # Observed outcomes: a claim judges provenance itself, per case and per admission.
    observed = {entry["name"]: entry["observed_outcome"] for entry in cases}
    return capability_readiness(fixture, observed, today)


def _statements(fixture: Fixture, cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the fixture says of its own proof, carried into the report as written."""
    return {
        "proof_scope": fixture.data.get("proof_scope"),
        "application_identity": fixture.data.get("application_identity"),
        "claims": fixture.data.get("claims"),
        # The earlier tool's statements about the run, carried as written: they inform a
        # reader and never change a verdict.
        "live": fixture.data.get("live", any(c["real_world"] and c["ran_trials"]
                                                for c in cases)),
        "mocked": fixture.data.get("mocked", False),
        "what_was_exercised": fixture.data.get("what_was_exercised"),
        "what_remains_unverified": fixture.data.get("what_remains_unverified"),
    }


def _run_notes(fixture: Fixture, trial_count: int, partial: bool, interrupted: bool) -> list[str]:
    """What a reader must know about how much of the fixture this run ran."""
    notes = []
    if trial_count < fixture.trials:
        notes.append(f"partial run: {trial_count} trials per case, fewer than the "
                     f"{fixture.trials} the fixture declares")
    elif partial and not interrupted:
        notes.append("partial run: not every case and trial was selected")
    if interrupted:
        notes.append("the run was interrupted")
    if fixture.eval_kind == "scaffold":
        notes.append("scaffold fixture (eval_kind: scaffold): exempt from the anti-slush "
                     "contract, so its readiness says the skill starts, not that it works")
    return notes


def _stop_notes(cases: list[dict[str, Any]]) -> list[str]:
    """Which trials stop on fail left out."""
    stopped = [entry["name"] for entry in cases if entry.get("stopped_trials")]
    if not stopped:
        return []
    count = sum(len(entry.get("stopped_trials", ())) for entry in cases)
    return [f"stop on fail: {count} trial(s) not run after a failed trial of their case "
            f"({', '.join(stopped)}); those cases' statistics count the trials that ran"]


def _ran_and_stopped(
    trials: Mapping[tuple[str, int], TrialResult], case: str, trial_count: int
) -> tuple[list[TrialResult], list[int]]:
    """The results of a case's trials that ran, and the numbers of those that stop on fail
    left out (NOT_TESTED)."""
    results, stopped = [], []
    for number in range(1, trial_count + 1):
        result = trials.get((case, number))
        if result is None:
            continue
        if result["outcome"] == NOT_TESTED:
            stopped.append(number)
        else:
            results.append(result)
    return results, stopped


def _case_reports(
    fixture: Fixture,
    trials: Mapping[tuple[str, int], TrialResult],
    selected: Mapping[str, Iterable[int]],
    trial_count: int,
    repo: Mapping[str, Any] | None,
) -> tuple[list[dict[str, Any]], list[CaseVerdict], bool]:
    """Each case's report entry and verdict, and whether a case had trials left unselected
    (or left out without a failed trial)."""
    cases, verdicts, some_unselected = [], [], False
    probes = probe_store.load(fixture)
    for case in fixture.cases:
        chosen = sorted(set(selected.get(case.name, ())))
        some_unselected = some_unselected or len(chosen) < trial_count
        results, stopped = _ran_and_stopped(trials, case.name, trial_count)
        entry = _case_entry(fixture, case, results, len(chosen), repo, probes[case.name])
        if stopped:
            entry["stopped_trials"] = stopped
            # Only a failed trial stops a case: without one, what did not run is missing
            # evidence, as in a partial run.
            some_unselected = some_unselected or entry["observed_outcome"] != FAIL
        cases.append(entry)
        verdicts.append(CaseVerdict(case.name, case.required, entry["outcome"], len(chosen),
                                    len(results),
                                    shows_use=case.type == "positive" or case.real_world))
    return cases, verdicts, some_unselected


def _eligible_readiness(
    readiness: Readiness, cases: list[dict[str, Any]]
) -> tuple[Readiness, list[str]]:
    """The readiness the cases earn once ineligible evidence is set aside, and why it fell.

    Only an unchanged replay is evidence: a candidate that passed is not yet proof. Usable
    still needs a required positive or real-world case among the eligible ones.
    """
    ineligible = [entry["name"] for entry in cases if entry["required"] and entry["ran_trials"]
                  and not entry["evidence_eligibility"]["eligible"]]
    if not ineligible or readiness != READY:
        return readiness, []
    eligible_passed = any(
        entry["required"] and (entry["type"] == "positive" or entry["real_world"])
        and entry["outcome"] == PASS and entry["name"] not in ineligible
        for entry in cases)
    return (USABLE_WITH_GAPS if eligible_passed else NOT_READY,
            ["required case(s) not eligible as evidence (only an unchanged regression_replay "
             "is): " + ", ".join(ineligible)])


def _case_entry(
    fixture: Fixture, case: Case, results: list[TrialResult], selected: int,
    repo: Mapping[str, Any] | None, probe: probe_store.Stored,
) -> dict[str, Any]:
    """A case's report entry from the trials of it that ran. Over 60 lines only by the
    entry's fields, one per line: it reads as the report's case, field by field."""
    observed = case_outcome([result["outcome"] for result in results])
    passed = sum(result["outcome"] == PASS for result in results)
    control = next((result["control"] for result in results if "control" in result), None)
    infra_blocked = sum(result["outcome"] == INFRA_BLOCKED for result in results)
    problems, seen = [], set()
    for result in results:
        for problem in result.get("problems", ()):
            if problem not in seen:  # the same failure in every trial is listed once
                seen.add(problem)
                problems.append(f"trial {result['trial']}: {problem}")
    provenance = case_provenance(case)
    block = execution_provenance(fixture, case, provenance, repo)
    outcome = observed
    if results and provenance.fails_integrity:
        # A pass of a test or oracle that changed under a replay is no pass at all.
        outcome = FAIL if observed == PASS else observed
        problems += [f"evidence integrity: {code}"
                     for code in provenance.eligibility.reason_codes]
    return {
        "name": case.name,
        "type": case.type,
        "required": case.required,
        "real_world": case.real_world,
        "outcome": outcome,
        "observed_outcome": observed,
        "problems": problems,
        "infrastructure_failure": any(r.get("infrastructure") for r in results
                                      if r["outcome"] != PASS),
        "infra_blocked_trials": infra_blocked,
        "argv": list(case.command),
        "tags": list(case.tags),
        **qualify(case, probe).as_report(),
        "supports_claims": list(case.supports_claims),
        "seams": list(case.seams),
        "category": case.source.get("category"),
        "category_id": case.source.get("category_id"),
        "execution_mode": provenance.execution_mode,
        "test_source_sha256": provenance.test_source_sha256,
        "oracle_sha256": provenance.oracle_sha256,
        "generation_id": provenance.generation_id,
        "generated_test_lineage": block["generated_test_lineage"],
        "application_identity": block["application_identity"],
        "evidence_eligibility": block["evidence_eligibility"],
        "execution_provenance": block,
        "selected_trials": selected,
        "ran_trials": len(results),
        "passed_trials": passed,
        "pass_rate": round(passed / len(results), 4) if results else None,
        # A trial failed by its control alone is not a sign of flakiness: every trial passed.
        "reliability": case_reliability(
            passed, sum(r["outcome"] == FAIL and not failed_control(r) for r in results),
            len(results), infra_blocked=infra_blocked,
        ),
        "control": control,
        "usage": case_usage(results),
        "trials": _with_provenance(results, block),
    }


def _with_provenance(results: list[TrialResult], block: dict[str, Any]) -> list[TrialResult]:
    """The trials, each naming the provenance block of its case: the one block, shared, and
    the results themselves rather than copies, so that a report of many trials costs little
    more memory than its trials' results."""
    for result in results:
        result["execution_provenance"] = block
    return results


def summarize(cases: list[dict[str, Any]]) -> dict[str, Any]:
    def count(subset: list[dict[str, Any]]) -> dict[str, int]:
        outcomes = [case["outcome"] for case in subset]
        return {
            "passed": outcomes.count(PASS),
            "failed": outcomes.count(FAIL),
            "blocked": outcomes.count(BLOCKED),
            "not_tested": outcomes.count(NOT_TESTED),
        }

    return {"total": len(cases), **count(cases),
            "flaky": sum(bool(case["reliability"]["flaky"]) for case in cases),
            # Kept apart from failures: an external blocker is not a fault of the skill.
            "infra_blocked": sum(bool(case.get("infra_blocked_trials")) for case in cases),
            "required": count([case for case in cases if case["required"]])}


def session_report(fixture_reports: list[dict[str, Any]]) -> dict[str, Any]:
    """One fixture's report as is; several fixtures wrapped with their worst readiness.

    A fixture none of whose cases was selected (say, under ``-m regression``) is listed but
    does not weigh on the session's readiness, as it does not weigh on its exit status.
    """
    if len(fixture_reports) == 1:
        return fixture_reports[0]
    counted = [r["readiness"] for r in fixture_reports if r["gate"]["counts"]]
    return {"schema": SESSION_SCHEMA, "readiness": worst(counted), "fixtures": fixture_reports}


@cache
def git_state(directory: Path) -> dict[str, str] | None:
    """The commit and ref a fixture was run at, when it lives in a git work tree."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True,
                             text=True, timeout=10, stdin=subprocess.DEVNULL)
        ref = subprocess.run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=directory,
                             capture_output=True, text=True, timeout=10,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    if sha.returncode != 0:
        return None
    return {"sha": sha.stdout.strip(), "ref": ref.stdout.strip()}


def report_problems(report: Any) -> list[str]:
    """Why a document is not a report this version can render (empty when it is)."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource


    fixture_report = json.loads(schema_text("report"))
    registry: Registry[Any] = Registry().with_resource(
        fixture_report["$id"], Resource.from_contents(fixture_report)
    )
    is_session = isinstance(report, dict) and report.get("schema") == SESSION_SCHEMA
    schema = json.loads(schema_text("session_report")) if is_session else fixture_report
    validator = Draft202012Validator(schema, registry=registry)
    return [f"{pointer_for(*error.absolute_path) or '(document)'}: {error.message}"
            for error in validator.iter_errors(report)]
