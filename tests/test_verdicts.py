"""Case outcomes, readiness and the gate, as pure functions."""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentic_evals.execution.stops import stopped_trial
from pytest_agentic_evals.execution.trial import infrastructure_failure
from pytest_agentic_evals.model import (
    BLOCKED,
    FAIL,
    INFRA_BLOCKED,
    NOT_ESTABLISHED,
    NOT_READY,
    NOT_TESTED,
    PASS,
    READY,
    USABLE_WITH_GAPS,
    CaseOutcome,
    Readiness,
    TrialOutcome,
    TrialResult,
    unrun_trial,
)
from pytest_agentic_evals.schemas import schema_text
from pytest_agentic_evals.verdicts import (
    CaseVerdict,
    case_outcome,
    case_readiness,
    excused_failure,
    fixture_gate,
    readiness_reason,
    worst,
)


@pytest.mark.parametrize(
    ("trials", "outcome"),
    [
        ([], NOT_TESTED),
        ([PASS, PASS], PASS),
        ([PASS, FAIL], FAIL),
        ([PASS, BLOCKED], BLOCKED),
        ([BLOCKED, FAIL], FAIL),
        ([PASS, INFRA_BLOCKED], BLOCKED),
        ([INFRA_BLOCKED, FAIL], FAIL),
    ],
)
def test_case_outcome(trials: list[str], outcome: str) -> None:
    assert case_outcome(trials) == outcome


def case(name: str, outcome: str, required: bool = True, shows_use: bool = True) -> CaseVerdict:
    """A case verdict; ``shows_use`` False makes it a refusal (negative or adversarial)."""
    ran = 0 if outcome == NOT_TESTED else 2
    return CaseVerdict(name, required, outcome, 2, ran, shows_use=shows_use)


def refusal(name: str, outcome: str, required: bool = True) -> CaseVerdict:
    return case(name, outcome, required, shows_use=False)


@pytest.mark.parametrize(
    ("cases", "partial", "readiness"),
    [
        ([case("a", PASS), case("b", PASS)], False, READY),
        ([case("a", PASS), case("b", FAIL)], False, USABLE_WITH_GAPS),
        ([case("a", PASS), case("b", BLOCKED)], False, USABLE_WITH_GAPS),
        ([case("a", BLOCKED)], False, NOT_READY),
        ([case("a", FAIL), case("b", FAIL)], False, NOT_READY),
        ([case("a", NOT_TESTED), case("b", NOT_TESTED)], False, NOT_ESTABLISHED),
        ([case("a", PASS), case("b", FAIL, required=False)], False, READY),
        ([case("a", PASS, required=False)], False, NOT_ESTABLISHED),
        ([case("a", PASS), case("b", PASS)], True, USABLE_WITH_GAPS),
        ([case("a", PASS), case("b", NOT_TESTED)], True, USABLE_WITH_GAPS),
        # Passing refusals alone do not make a skill usable.
        ([case("a", FAIL), refusal("b", PASS)], False, NOT_READY),
        ([case("a", FAIL), case("b", BLOCKED), refusal("c", PASS)], False, NOT_READY),
        ([case("a", FAIL), refusal("b", PASS), case("c", PASS, required=False)], False,
         NOT_READY),
        ([case("a", PASS), refusal("b", FAIL)], False, USABLE_WITH_GAPS),
        ([refusal("a", PASS), refusal("b", PASS)], False, READY),
        ([refusal("a", PASS), refusal("b", FAIL)], False, NOT_READY),
        ([case("a", NOT_TESTED), refusal("b", PASS)], True, NOT_READY),
        # An optional case never counts, however it ends.
        ([case("a", PASS), refusal("b", PASS), case("c", FAIL, required=False)], False, READY),
        ([case("a", PASS), refusal("b", PASS), refusal("c", BLOCKED, required=False)], False,
         READY),
    ],
)
def test_case_readiness(cases: list[CaseVerdict], partial: bool, readiness: str) -> None:
    assert case_readiness(cases, partial) == readiness


outcomes = st.sampled_from([PASS, FAIL, BLOCKED, NOT_TESTED])


@given(st.lists(st.tuples(outcomes, st.booleans(), st.booleans()), max_size=8), st.booleans())
def test_readiness_rules_hold_for_any_cases(
    spec: list[tuple[str, bool, bool]], partial: bool
) -> None:
    cases = [case(str(i), outcome, required, shows_use)
             for i, (outcome, required, shows_use) in enumerate(spec)]
    readiness = case_readiness(cases, partial)
    required = [c for c in cases if c.required]
    if readiness == READY:
        assert not partial and required and all(c.outcome == PASS for c in required)
    if any(c.outcome in (FAIL, BLOCKED) for c in required):
        assert readiness != READY
    if readiness == USABLE_WITH_GAPS:
        assert any(c.outcome == PASS and c.shows_use for c in required)
    # Optional cases never change the verdict.
    assert case_readiness(required, partial) == readiness


def test_worst_readiness() -> None:
    assert worst([READY, USABLE_WITH_GAPS]) == USABLE_WITH_GAPS
    assert worst([READY, NOT_ESTABLISHED]) == NOT_ESTABLISHED
    assert worst([NOT_ESTABLISHED, NOT_READY]) == NOT_READY
    assert worst([]) == NOT_ESTABLISHED


@pytest.mark.parametrize(("literal", "pointer"), [
    (TrialOutcome, ("$defs", "trial", "properties", "outcome")),
    (CaseOutcome, ("$defs", "outcome")),
    (Readiness, ("$defs", "readiness")),
])
def test_the_typed_values_are_the_ones_the_report_schema_allows(
    literal: object, pointer: tuple[str, ...]
) -> None:
    node = json.loads(schema_text("report"))
    for key in pointer:
        node = node[key]
    assert set(get_args(literal)) == set(node["enum"])


def test_the_trial_result_type_is_the_trial_the_report_schema_describes() -> None:
    trial = json.loads(schema_text("report"))["$defs"]["trial"]
    assert TrialResult.__required_keys__ == set(trial["required"])
    keys = TrialResult.__required_keys__ | TrialResult.__optional_keys__
    assert set(trial["properties"]) <= keys


def test_every_trial_result_that_never_ran_has_the_keys_every_result_has() -> None:
    results = [infrastructure_failure(2, "could not copy"), stopped_trial(3, "stop on fail"),
               unrun_trial(1, BLOCKED, ["no sandbox"])]
    for result in results:
        assert TrialResult.__required_keys__ <= set(result)
        assert result["exit_code"] is None and result["duration_ms"] == 0
    assert [r["outcome"] for r in results] == [FAIL, NOT_TESTED, BLOCKED]
    assert results[0]["infrastructure"] and results[1]["stopped"]


# -- the gate, over a report's plain data -------------------------------------------------------


def entry(name: str, outcome: str, *, required: bool = True, selected: int = 2,
          ran: int | None = None, type: str = "positive", real_world: bool = False
          ) -> dict[str, Any]:
    """A case entry of a report, as far as the gate and its reasons read one."""
    ran = (0 if outcome == NOT_TESTED else selected) if ran is None else ran
    return {"name": name, "outcome": outcome, "required": required, "selected_trials": selected,
            "ran_trials": ran, "type": type, "real_world": real_world}


def report(readiness: str, *cases: dict[str, Any], selection: str = "full",
           interrupted: bool = False, notes: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"fixture": "greeter/fixtures/agentic_eval.json", "readiness": readiness,
            "selection": selection, "interrupted": interrupted,
            "readiness_notes": list(notes), "cases": list(cases)}


def test_a_ready_fixture_passes_the_gate() -> None:
    gate = fixture_gate(report(READY, entry("a", PASS), entry("b", PASS, type="negative")))
    assert (gate.counts, gate.passed) == (True, True)
    assert gate.reason == "greeter/fixtures/agentic_eval.json: READY"


@pytest.mark.parametrize("readiness", [USABLE_WITH_GAPS, NOT_READY, NOT_ESTABLISHED])
def test_a_full_run_short_of_ready_fails_the_gate_and_says_why(readiness: str) -> None:
    gate = fixture_gate(report(readiness, entry("a", PASS), entry("b", FAIL)))
    assert (gate.counts, gate.passed) == (True, False)
    assert gate.reason == (f"greeter/fixtures/agentic_eval.json: {readiness}: "
                           "required case(s) failed: b")


def test_a_fixture_with_no_case_selected_does_not_count() -> None:
    gate = fixture_gate(report(NOT_ESTABLISHED, entry("a", NOT_TESTED, selected=0)))
    assert (gate.counts, gate.passed) == (False, True)
    assert gate.reason.endswith(": no case selected")


def test_an_interrupted_run_fails_the_gate_even_when_every_case_passed() -> None:
    gate = fixture_gate(report(USABLE_WITH_GAPS, entry("a", PASS), selection="partial",
                               interrupted=True))
    assert (gate.counts, gate.passed) == (True, False)
    assert "interrupted" in gate.reason


def test_a_partial_run_passes_when_every_selected_trial_ran_and_passed() -> None:
    gate = fixture_gate(report(USABLE_WITH_GAPS, entry("a", PASS),
                               entry("b", NOT_TESTED, selected=0), selection="partial"))
    assert (gate.counts, gate.passed) == (True, True)
    assert gate.reason.endswith("every selected case passed (partial run, not READY)")


@pytest.mark.parametrize(
    "bad",
    [entry("b", FAIL), entry("b", BLOCKED), entry("b", PASS, selected=2, ran=1)],
    ids=["failed", "blocked", "a-selected-trial-did-not-run"],
)
def test_a_partial_run_fails_on_a_selected_case_that_did_not_pass_every_trial(
    bad: dict[str, Any]
) -> None:
    gate = fixture_gate(report(USABLE_WITH_GAPS, entry("a", PASS), bad, selection="partial"))
    assert (gate.counts, gate.passed) == (True, False)
    assert gate.reason.endswith("selected case(s) did not pass every trial: b")


def test_the_gate_names_at_most_eight_cases_and_counts_the_rest() -> None:
    failed = [entry(f"c{i}", FAIL) for i in range(11)]
    gate = fixture_gate(report(NOT_READY, *failed, selection="partial"))
    assert gate.reason.endswith(": " + ", ".join(f"c{i}" for i in range(8)) + " and 3 more")


# -- why a fixture is not READY -----------------------------------------------------------------


def test_the_reason_lists_required_cases_by_outcome_and_leaves_optional_ones_out() -> None:
    reason = readiness_reason(report(
        USABLE_WITH_GAPS, entry("f", FAIL), entry("b", BLOCKED), entry("n", NOT_TESTED),
        entry("optional", FAIL, required=False), entry("p", PASS, type="negative")))
    assert reason == ("required case(s) failed: f; required case(s) blocked: b; "
                      "required case(s) not tested: n")


def test_the_reason_says_when_only_refusals_passed() -> None:
    reason = readiness_reason(report(NOT_READY, entry("uses", FAIL, real_world=True),
                                     entry("refuses", PASS, type="negative")))
    assert "passing refusals alone do not make a skill usable" in reason
    # A positive case that passed does not earn that sentence, whatever the readiness.
    passed = readiness_reason(report(USABLE_WITH_GAPS, entry("uses", PASS),
                                     entry("other", FAIL)))
    assert "refusals" not in passed


def test_the_reason_carries_the_readiness_notes() -> None:
    reason = readiness_reason(report(USABLE_WITH_GAPS, entry("a", PASS),
                                     notes=("the run was interrupted",)))
    assert reason == "the run was interrupted"


def test_the_reason_of_a_fixture_without_a_required_case() -> None:
    assert readiness_reason(report(NOT_ESTABLISHED, entry("a", PASS, required=False))) == \
        "no required case"
    assert readiness_reason(report(NOT_ESTABLISHED)) == "no required case"


def test_a_reason_is_never_empty() -> None:
    assert readiness_reason(report(USABLE_WITH_GAPS, entry("a", PASS))) == \
        "not every required case passed every trial"


# -- which failures leave the exit status alone -------------------------------------------------


def gated(passed: bool, *cases: dict[str, Any]) -> dict[str, Any]:
    return {**report(READY, *cases), "gate": {"counts": True, "passed": passed, "reason": ""}}


def test_only_an_optional_case_of_a_passing_fixture_is_excused() -> None:
    passing = gated(True, entry("a", PASS), entry("extra", FAIL, required=False))
    assert excused_failure(passing, "extra") is True
    assert excused_failure(passing, "a") is False
    assert excused_failure(passing, "not-a-case") is False


def test_nothing_is_excused_when_the_gate_failed_or_there_is_no_report() -> None:
    failing = gated(False, entry("a", FAIL), entry("extra", FAIL, required=False))
    assert excused_failure(failing, "extra") is False
    assert excused_failure(None, "extra") is False
