"""Case outcomes, readiness and the gate, as pure functions."""

from __future__ import annotations

import json
from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentic_evals.model import (
    BLOCKED,
    FAIL,
    NOT_ESTABLISHED,
    NOT_READY,
    NOT_TESTED,
    PASS,
    READY,
    USABLE_WITH_GAPS,
    CaseOutcome,
    Readiness,
    TrialOutcome,
)
from pytest_agentic_evals.schemas import schema_text
from pytest_agentic_evals.verdicts import CaseVerdict, case_outcome, case_readiness, worst


@pytest.mark.parametrize(
    ("trials", "outcome"),
    [
        ([], NOT_TESTED),
        ([PASS, PASS], PASS),
        ([PASS, FAIL], FAIL),
        ([PASS, BLOCKED], BLOCKED),
        ([BLOCKED, FAIL], FAIL),
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
