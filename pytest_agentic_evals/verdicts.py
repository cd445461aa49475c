"""Case outcomes, fixture readiness and the session gate, as plain functions over plain data."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentic_evals.model import (
    BLOCKED,
    FAIL,
    INFRA_BLOCKED,
    NOT_ESTABLISHED,
    NOT_READY,
    NOT_TESTED,
    PASS,
    READINESS_ORDER,
    READY,
    USABLE_WITH_GAPS,
    CaseOutcome,
    Readiness,
)


def case_outcome(trial_outcomes: Sequence[str]) -> CaseOutcome:
    """PASS when every trial that ran passed; FAIL on any failure; BLOCKED otherwise (an
    infra-blocked trial counts as blocked)."""
    if not trial_outcomes:
        return NOT_TESTED
    if FAIL in trial_outcomes:
        return FAIL
    if BLOCKED in trial_outcomes or INFRA_BLOCKED in trial_outcomes:
        return BLOCKED
    return PASS


@dataclass(frozen=True)
class CaseVerdict:
    name: str
    required: bool
    outcome: CaseOutcome
    selected_trials: int
    ran_trials: int
    shows_use: bool
    """A positive or real-world case: its passing shows the skill doing its job, where a
    passing refusal (negative, adversarial) only shows it can say no."""


def case_readiness(cases: Iterable[CaseVerdict], partial: bool) -> Readiness:
    """Readiness from required cases only; a partial run is never READY.

    READY: every required case passed every trial. USABLE_WITH_GAPS: not that, but a required
    positive or real-world case did; a skill whose only passing cases are refusals is not
    usable, so without one it is NOT_READY. A required BLOCKED case is absence of evidence,
    not evidence of success, so it keeps the fixture from READY like a failure does. An
    optional case never counts, either way.
    """
    required = [case for case in cases if case.required]
    if not any(case.outcome != NOT_TESTED for case in required):
        return NOT_ESTABLISHED
    if not partial and all(case.outcome == PASS for case in required):
        return READY
    if any(case.outcome == PASS and case.shows_use for case in required):
        return USABLE_WITH_GAPS
    return NOT_READY


def worst(readinesses: Iterable[Readiness]) -> Readiness:
    ranked = [READINESS_ORDER.index(value) for value in readinesses]
    return READINESS_ORDER[max(ranked)] if ranked else NOT_ESTABLISHED


@dataclass(frozen=True)
class Gate:
    """Whether one fixture lets the session pass, and why not."""

    counts: bool
    """False when none of the fixture's cases was selected: it then cannot affect the exit."""
    passed: bool
    reason: str


def fixture_gate(report: Mapping[str, Any]) -> Gate:
    """READY passes; a partial run passes when every selected trial ran and passed."""
    cases = report["cases"]
    selected = [case for case in cases if case["selected_trials"] > 0]
    name = report["fixture"]
    if not selected:
        return Gate(False, True, f"{name}: no case selected")
    if report.get("interrupted"):
        return Gate(True, False, f"{name}: the run was interrupted before every trial ran")
    if report["selection"] == "partial":
        bad = [case["name"] for case in selected
               if case["outcome"] != PASS or case["ran_trials"] < case["selected_trials"]]
        if bad:
            return Gate(True, False, f"{name}: selected case(s) did not pass every trial: "
                                     + _some(bad))
        return Gate(True, True, f"{name}: every selected case passed (partial run, not READY)")
    if report["readiness"] == READY:
        return Gate(True, True, f"{name}: READY")
    return Gate(True, False, f"{name}: {report['readiness']}: {readiness_reason(report)}")


def excused_failure(report: Mapping[str, Any] | None, case_name: str) -> bool:
    """Whether a failed trial leaves the session's exit status alone: a trial of an optional
    case, in a fixture whose gate passed. An optional case's failure is shown, and never
    fails a READY fixture; any other failed test keeps the failure pytest counted."""
    if report is None or not report["gate"]["passed"]:
        return False
    return any(case["name"] == case_name and not case["required"] for case in report["cases"])


def readiness_reason(report: Mapping[str, Any]) -> str:
    """One line saying why a fixture is not READY."""
    reasons = []
    for outcome, label in ((FAIL, "failed"), (BLOCKED, "blocked"), (NOT_TESTED, "not tested")):
        names = [c["name"] for c in report["cases"] if c["required"] and c["outcome"] == outcome]
        if names:
            reasons.append(f"required case(s) {label}: {_some(names)}")
    useful = [c for c in report["cases"] if c["required"]
              and (c.get("type") == "positive" or c.get("real_world"))]
    if report.get("readiness") == NOT_READY and useful \
            and not any(c["outcome"] == PASS for c in useful):
        reasons.append("no required positive or real-world case passed every trial (passing "
                       "refusals alone do not make a skill usable)")
    for note in report.get("readiness_notes", ()):
        reasons.append(note)
    if not [c for c in report["cases"] if c["required"]]:
        reasons.append("no required case")
    return "; ".join(reasons) or "not every required case passed every trial"


def _some(names: Sequence[str], shown: int = 8) -> str:
    """A list of names for one line of text: the first few, then how many more."""
    if len(names) <= shown:
        return ", ".join(names)
    return ", ".join(names[:shown]) + f" and {len(names) - shown} more"


def rewritten(before: Any, after: Any, pointer: str = "") -> list[str]:
    """The JSON pointers of ``before`` that ``after`` changed or removed: what a report hook
    may not do. Keys added to an object are fine; a list must keep its items, and each of
    them what it had (a case or a trial cannot be added, dropped or reordered)."""
    if isinstance(before, dict):
        if not isinstance(after, dict):
            return [pointer or "/"]
        changed = []
        for key, value in before.items():
            where = f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"
            changed += [where] if key not in after else rewritten(value, after[key], where)
        return changed
    if isinstance(before, list):
        if not isinstance(after, list) or len(after) != len(before):
            return [pointer or "/"]
        return [p for i, (b, a) in enumerate(zip(before, after, strict=True))
                for p in rewritten(b, a, f"{pointer}/{i}")]
    same = type(before) is type(after) and before == after
    return [] if same else [pointer or "/"]
