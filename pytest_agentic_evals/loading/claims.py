"""Load-time rules for capability claims that a schema cannot express.

Called by the loader after the schema passed. Exemptions are deliberately not judged here: an
expired or incomplete exemption is ignored and reported when verdicts are computed, so that
time passing cannot turn a fixture that loaded yesterday into a rejected one today.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_agentic_evals.model import (
    CLAIM_SEMANTICS,
    DOMAIN_PROFILES,
    Case,
    Fixture,
    artifact_assertions,
    representation_of,
    representations,
    required_classes,
)
from pytest_agentic_evals.problems import Problem, pointer_for


def claim_problems(fixture: Fixture, shown: str) -> list[Problem]:
    """Load-time checks a schema cannot express (called by the loader after the schema passed).

    Every problem names the fixture (``shown``) and the JSON pointer of the offending value.
    Exemptions are deliberately not judged here: an expired or incomplete exemption is
    ignored and reported when verdicts are computed, so that time passing cannot turn a
    fixture that loaded yesterday into a rejected one today.
    """
    problems: list[Problem] = []

    def problem(pointer: str, message: str) -> None:
        problems.append(Problem(shown, pointer, message))

    raw_claims = fixture.data.get("capability_claims")
    claims: list[tuple[int, Mapping[str, Any]]] = []
    if isinstance(raw_claims, list):
        claims = [(i, c) for i, c in enumerate(raw_claims) if isinstance(c, Mapping)]

    declared: dict[str, Mapping[str, Any]] = {}
    first_index: dict[str, int] = {}
    for index, claim in claims:
        here = pointer_for("capability_claims", index)
        claim_id = claim.get("id")
        if not isinstance(claim_id, str) or not claim_id:
            continue  # the schema reports it
        if claim_id in first_index:
            problem(here + "/id", f"duplicate claim id {claim_id!r} (also "
                    f"/capability_claims/{first_index[claim_id]}/id)")
            continue
        first_index[claim_id] = index
        declared[claim_id] = claim

    for index, claim in claims:
        problems += _one_claim_problems(index, claim, declared, shown)

    for case in fixture.cases:
        problems += _case_claim_problems(fixture, case, declared, shown)
    return problems


def _one_claim_problems(
    index: int, claim: Mapping[str, Any], declared: Mapping[str, Any], shown: str
) -> list[Problem]:
    problems: list[Problem] = []
    here = pointer_for("capability_claims", index)
    claim_id = claim.get("id")
    label = f"claim {claim_id!r}" if isinstance(claim_id, str) else "this claim"

    if "evidence_required" in claim and not required_classes(claim):
        problems.append(Problem(shown, here + "/evidence_required", (
            f"{label} requires no evidence class: name at least one class as required "
            "(a claim that requires nothing would be proven by nothing)")))

    semantics = claim.get("claim_semantics")
    if claim.get("criticality", "critical") == "critical" and "claim_semantics" not in claim:
        implied = "" if "criticality" in claim else " (criticality defaults to critical)"
        problems.append(Problem(shown, here + "/claim_semantics", (
            f"{label} is critical{implied} and must say what kind of invariant it is: "
            f"claim_semantics is one of {', '.join(CLAIM_SEMANTICS)}")))

    profile = claim.get("domain_profile")
    if isinstance(profile, str) and profile not in DOMAIN_PROFILES:
        problems.append(Problem(shown, here + "/domain_profile", (
            f"unknown domain_profile {profile!r}; known profiles: "
            f"{', '.join(sorted(DOMAIN_PROFILES))} (or list the representations explicitly)")))
    if semantics == "value_bearing" and not representations(claim):
        problems.append(Problem(shown, here, (
            f"{label} is value_bearing but enumerates no representation: give a known "
            "domain_profile or a non-empty representations list (every representation the "
            "input format admits, e.g. JSON string, integer, float, scientific notation)")))

    other = claim.get("independent_of")
    if isinstance(other, str):
        if other == claim_id:
            problems.append(Problem(shown, here + "/independent_of", (
                f"{label} cannot be independent of itself: independent_of names the "
                "producer claim whose data generator this checker must not share")))
        elif other not in declared:
            problems.append(Problem(shown, here + "/independent_of", (
                f"independent_of names {other!r}, which is not a declared claim")))
    return problems


def _case_claim_problems(
    fixture: Fixture, case: Case, declared: Mapping[str, Mapping[str, Any]], shown: str
) -> list[Problem]:
    problems: list[Problem] = []
    known = [claim_id for claim_id in case.supports_claims if claim_id in declared]
    for position, claim_id in enumerate(case.supports_claims):
        if claim_id not in declared:
            hint = ("" if declared else " (the fixture declares no capability_claims)")
            problems.append(Problem(
                shown, f"{case.pointer}/supports_claims/{position}",
                f"case {case.name!r} supports {claim_id!r}, which is not a declared claim{hint}",
            ))

    representation = representation_of(fixture, case)
    if representation is not None:
        offered = {rep for claim_id in known for rep in representations(declared[claim_id])}
        if representation not in offered:
            if not case.supports_claims:
                why = "the case supports no claim"
            elif not offered:
                why = (f"none of the claims it supports ({', '.join(case.supports_claims)}) "
                       "enumerates representations")
            else:
                why = f"the claims it supports admit {', '.join(sorted(offered))}"
            problems.append(Problem(
                shown, case.pointer + "/representation",
                f"representation {representation!r} of case {case.name!r} is not one of the "
                f"representations of a claim it supports: {why}",
            ))

    for position, assertion in enumerate(artifact_assertions(case)):
        tagged = assertion.get("claim")
        if isinstance(tagged, str) and tagged not in case.supports_claims:
            problems.append(Problem(
                shown, f"{case.pointer}/expected/artifacts/{position}/claim",
                f"artifact assertion names claim {tagged!r}, which case {case.name!r} does "
                "not list in supports_claims",
            ))
    return problems
