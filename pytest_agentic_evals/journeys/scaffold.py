"""Candidate fixture cases for the BOUND journeys of a plan (``--scaffold-output``).

A journey of one command becomes a case running that command; a journey through the user
interface becomes a case that runs the requirements' driver on a steps file holding the
journey's path. The failing-capable oracles' ``expected`` checks are merged into the case's
``expected``. Every candidate is checked by loading the fixture with it appended: one the
loader would refuse is listed under ``skipped`` with the loader's reasons, never written.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentic_evals.journeys.binding import BOUND
from pytest_agentic_evals.journeys.inputs import Inputs, shown_from_output
from pytest_agentic_evals.loading import fixture_from_data
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.model import Fixture
from pytest_agentic_evals.problems import shown_value

SCAFFOLD_SCHEMA = "agentic_evals.journey_scaffold.v1"
STEPS_SCHEMA = "agentic_evals.journey_steps.v1"


def build_scaffold(inputs: Inputs, plan_data: Mapping[str, Any],
                   output: str | os.PathLike[str]) -> dict[str, Any]:
    """Candidate fixture cases for the BOUND journeys, checked by loading the fixture with
    them appended: a candidate the loader would refuse is listed under ``skipped`` with the
    loader's reasons, never written as a case."""
    fixture = inputs.fixture
    driver = (inputs.requirements.data.get("driver") or {}).get("command")
    by_id = {r["id"]: r for r in inputs.requirements.data["requirements"]}
    existing = {case.name for case in fixture.cases}
    candidates: list[tuple[str, dict[str, Any]]] = []
    skipped: list[dict[str, Any]] = []
    for journey in plan_data["journeys"]:
        rid = journey["requirement_id"]
        if journey["binding_status"] != BOUND:
            continue
        case, reason = _candidate(by_id[rid], journey, driver, plan_data)
        if case is not None and case["name"] in existing:
            reason = f"the fixture already has a case named {case['name']!r}"
            case = None
        if case is None:
            skipped.append({"requirement_id": rid, "reason": reason})
        else:
            candidates.append((rid, case))
    accepted, refused = _loadable(fixture, candidates, inputs.extra_expectations)
    skipped += refused
    order = {journey["requirement_id"]: n for n, journey in enumerate(plan_data["journeys"])}
    skipped.sort(key=lambda item: order[item["requirement_id"]])
    return {
        "schema": SCAFFOLD_SCHEMA,
        "fixture": shown_from_output(fixture.path, output),
        "how_to_use": "append these cases to the fixture's cases; with them the fixture "
                      "loads as it is",
        "cases": [case for _, case in accepted],
        "skipped": skipped,
    }


def _candidate(
    requirement: Mapping[str, Any], journey: Mapping[str, Any], driver: list[str] | None,
    plan_data: Mapping[str, Any],
) -> tuple[dict[str, Any] | None, str]:
    """One BOUND journey's case, or None and why it cannot have one."""
    rid = journey["requirement_id"]
    oracles = [o for o in requirement["journey"]["oracles"]
               if o.get("failing_capable") is True and "expected" in o]
    if not oracles:
        return None, ("no failing_capable oracle gives an expected check: a case that checks "
                      "only exit 0 proves nothing (add expected to an oracle)")
    expected, conflict = _merged_expected([o["expected"] for o in oracles])
    if expected is None:
        return None, conflict
    name = f"journey-{rid}"
    case: dict[str, Any] = {
        "name": name,
        "type": "positive",
        "description": (f"{requirement.get('description') or rid} (journey planned by "
                        "agentic-evals plan-journeys)"),
    }
    actions = requirement["journey"]["actions"]
    if len(actions) == 1 and actions[0]["kind"] == "command":
        case["command"] = list(actions[0]["command"])
    elif driver:
        steps_file = f"{name}.steps.json"
        case["command"] = [*driver, steps_file]
        case["artifacts"] = [{"path": steps_file, "content": {
            "schema": STEPS_SCHEMA, "requirement_id": rid,
            "url": plan_data["application"]["url"],
            "initial_state": plan_data["graph"]["initial_state"],
            "steps": journey["path"]}}]
    else:
        return None, ("requirements.json declares no driver to replay a journey of several "
                      "steps (set driver.command)")
    if journey["capability_claims"]:
        case["supports_claims"] = list(journey["capability_claims"])
    if journey["seams"]:
        case["seams"] = list(journey["seams"])
    case["expected"] = expected
    return case, ""


def _merged_expected(checks: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any] | None, str]:
    """One ``expected`` from several oracles: lists are joined, anything else must agree."""
    merged: dict[str, Any] = {"exit_code": 0}
    given: set[str] = set()
    for check in checks:
        for key, value in check.items():
            if isinstance(value, list):
                known = merged.setdefault(key, [])
                for item in value:
                    if item not in known:
                        known.append(item)
            elif key in given and merged[key] != value:
                return None, (f"oracles disagree on expected {key}: {shown_value(merged[key])} "
                              f"and {shown_value(value)}")
            else:
                merged[key] = value
                given.add(key)
    return merged, ""


def _loadable(
    fixture: Fixture, candidates: list[tuple[str, dict[str, Any]]],
    extra: Mapping[str, Mapping[str, Any]] | None,
) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
    """Keep the candidates with which the fixture still loads; the others, with the reasons."""
    refused: list[dict[str, Any]] = []
    base = list(fixture.data["cases"])
    while candidates:
        data = {**fixture.data, "cases": base + [case for _, case in candidates]}
        try:
            fixture_from_data(data, fixture.path, extra_expectations=extra,
                              accept_exemptions=fixture.exemptions_accepted)
            break
        except FixtureError as exc:
            blamed: dict[int, list[str]] = {}
            for problem in exc.problems:
                position = _case_position(problem.pointer)
                if position is not None and position >= len(base):
                    blamed.setdefault(position - len(base), []).append(problem.message)
            if not blamed:
                # The fixture loaded alone, so the candidates broke it together; no case of
                # them is written rather than one that might not load.
                refused += [{"requirement_id": rid, "reason": "with the other candidates the "
                             f"fixture does not load: {exc.problems[0].message}"}
                            for rid, _ in candidates]
                candidates = []
                break
            refused += [{"requirement_id": candidates[n][0],
                         "reason": "the fixture would refuse it: " + "; ".join(messages)}
                        for n, messages in sorted(blamed.items())]
            candidates = [item for n, item in enumerate(candidates) if n not in blamed]
    return candidates, refused


def _case_position(pointer: str) -> int | None:
    parts = pointer.split("/")
    if len(parts) >= 3 and parts[1] == "cases" and parts[2].isdigit():
        return int(parts[2])
    return None
