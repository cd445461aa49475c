"""The journey plan: every requirement's journey bound to the state network, and what the
fixture's claims look like through them.

Beside each journey (see binding.py) the plan lists, per capability claim, whether a
requirement gives it a journey a fixture case could prove it with; the claims no requirement
traces to (missing journeys); journeys whose oracles cannot fail; observed controls no journey
uses; and the critical gaps that make ``plan-journeys`` exit 1. It also renders the plan for a
person, one line per requirement.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentic_evals.journeys.binding import (
    BINDING_STATUSES,
    BOUND,
    NOT_APPLICABLE,
    bind_journey,
)
from pytest_agentic_evals.journeys.documents import Document
from pytest_agentic_evals.journeys.graph import Network
from pytest_agentic_evals.journeys.inputs import Inputs, shown_from_output
from pytest_agentic_evals.journeys.router import Router
from pytest_agentic_evals.model import CRITICALITIES, Fixture, claims_data, declared_seams

PLAN_SCHEMA = "agentic_evals.journey_plan.v1"

# Claim traceability, best first.
TRACE_SATISFIABLE = "SATISFIABLE"
TRACE_WEAK = "BOUND_WEAK_ORACLE"
TRACE_NOT_BOUND = "NOT_BOUND"
TRACE_MISSING = "MISSING"

VERDICT_NO_GAPS = "NO_GAPS"
VERDICT_GAPS = "GAPS"
VERDICT_CRITICAL_GAP = "CRITICAL_GAP"

_CRITICALITY_RANK = {name: rank for rank, name in enumerate(CRITICALITIES)}


def build_plan(inputs: Inputs, output: str | os.PathLike[str]) -> dict[str, Any]:
    """The journey plan. ``output`` is where it will be written: input paths are shown
    relative to its folder, so the plan does not depend on the working directory."""
    net = inputs.network
    router = Router(net)
    claims = _claims(inputs.fixture)
    seam_ids = _seam_ids(inputs.fixture)
    journeys = [bind_journey(requirement, net, router, claims, seam_ids)
                for requirement in inputs.requirements.data["requirements"]]
    traceability = _traceability(claims, journeys)
    missing_journeys = _missing_journeys(traceability)
    unlinked = _unlinked_controls(net, journeys)
    gaps = _critical_gaps(journeys, traceability)
    counts = {status: sum(j["binding_status"] == status for j in journeys)
              for status in BINDING_STATUSES}
    applicable = [j for j in journeys if j["binding_status"] != NOT_APPLICABLE]
    weak = [j["requirement_id"] for j in applicable if j["weak_oracle"]]
    has_gap = (counts[BOUND] != len(applicable) or weak or missing_journeys)
    verdict = (VERDICT_CRITICAL_GAP if gaps else VERDICT_GAPS if has_gap else VERDICT_NO_GAPS)
    return {
        "schema": PLAN_SCHEMA,
        "verdict": verdict,
        "inputs": _inputs_section(inputs, output),
        "application": {"name": inputs.requirements.data.get("application"), "url": net.url,
                        "run_id": net.run_id},
        "graph": _graph_section(net),
        "journeys": journeys,
        "claim_traceability": traceability,
        "missing_journeys": missing_journeys,
        "weak_oracles": weak,
        "unlinked_controls": unlinked,
        "critical_gaps": gaps,
        "summary": {
            "requirements": len(journeys),
            **{status.lower(): counts[status] for status in BINDING_STATUSES},
            "coverage_satisfiable": sum(j["coverage_satisfiable"] for j in journeys),
            "weak_oracles": len(weak),
            "claims": len(traceability),
            "missing_journeys": len(missing_journeys),
            "critical_missing_journeys": sum(m["criticality"] == "critical"
                                             for m in missing_journeys),
            "unlinked_controls": len(unlinked),
            "critical_gaps": len(gaps),
        },
    }


def _inputs_section(inputs: Inputs, output: str | os.PathLike[str]) -> dict[str, Any]:
    """Each input's path (relative to the plan) and hash: what the plan was made from."""
    fixture = inputs.fixture

    def entry(document: Document) -> dict[str, Any]:
        return {"path": shown_from_output(document.path, output), "sha256": document.sha256}

    return {
        "fixture": {"path": shown_from_output(fixture.path, output), "sha256": fixture.sha256,
                    "skill": fixture.skill},
        "requirements": entry(inputs.requirements),
        "interaction_inventory": entry(inputs.inventory),
        "state_graph": entry(inputs.graph),
    }


def _graph_section(net: Network) -> dict[str, Any]:
    return {
        "form": net.form,
        "initial_state": net.state_ids[net.initial],
        "states": len(net.state_ids),
        "transitions": len(net.transitions.source),
        "reachable_states": sum(1 for d in net.distance if d >= 0),
        "unreachable_states": [s for i, s in enumerate(net.state_ids) if net.distance[i] < 0],
        "unusable_transitions": net.transitions.unusable,
    }


def _claims(fixture: Fixture) -> dict[str, Mapping[str, Any]]:
    """The fixture's claims by id, in fixture order (the first of a repeated id)."""
    found: dict[str, Mapping[str, Any]] = {}
    for claim in claims_data(fixture):
        if isinstance(claim.get("id"), str):
            found.setdefault(claim["id"], claim)
    return found


def _seam_ids(fixture: Fixture) -> list[str]:
    return [seam["seam_id"] for _, seam in declared_seams(fixture)]


def _traceability(claims: Mapping[str, Mapping[str, Any]],
                  journeys: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per claim of the fixture, in fixture order: which requirements trace to it, and
    whether one of them gives a journey a fixture case could prove it with."""
    rows = []
    for claim_id, claim in claims.items():
        tracing = [j for j in journeys if claim_id in j["capability_claims"]]
        applicable = [j for j in tracing if j["binding_status"] != NOT_APPLICABLE]
        bound = [j["requirement_id"] for j in applicable if j["binding_status"] == BOUND]
        satisfiable = [j["requirement_id"] for j in applicable if j["coverage_satisfiable"]]
        status = (TRACE_SATISFIABLE if satisfiable else TRACE_WEAK if bound
                  else TRACE_NOT_BOUND if applicable else TRACE_MISSING)
        rows.append({
            "claim_id": claim_id,
            "criticality": str(claim.get("criticality", "critical")),
            "description": str(claim.get("description", "")),
            "status": status,
            "requirements": [j["requirement_id"] for j in applicable],
            "bound": bound,
            "coverage_satisfiable": satisfiable,
            "traced_by_not_applicable": [j["requirement_id"] for j in tracing
                                         if j["binding_status"] == NOT_APPLICABLE],
        })
    return rows


def _missing_journeys(traceability: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The claims no applicable requirement traces to, critical first."""
    missing = sorted((entry for entry in traceability if entry["status"] == TRACE_MISSING),
                     key=lambda entry: _CRITICALITY_RANK.get(entry["criticality"], 0))
    return [{"claim_id": entry["claim_id"], "criticality": entry["criticality"],
             "description": entry["description"],
             "traced_by_not_applicable": entry["traced_by_not_applicable"]}
            for entry in missing]


def _unlinked_controls(net: Network, journeys: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Observed controls no applicable journey acts on: features no requirement covers, or
    controls a plan only passes through (``navigated_through``)."""
    used = {action["qid"] for j in journeys if j["binding_status"] != NOT_APPLICABLE
            for action in j["actions"] if action["kind"] == "ui"}
    navigated = {step["qid"] for j in journeys for step in j["path"] if step["kind"] == "navigate"}
    distance = net.distance
    rows = []
    for qid in sorted(net.observed.keys() - used):
        seen = net.observed[qid]
        rows.append({"qid": qid, "observed_in_count": len(seen),
                     "first_state": net.state_ids[seen[0][0]],
                     "usable_and_reachable": any(ok and distance[state] >= 0
                                                 for state, ok in seen),
                     "navigated_through": qid in navigated})
    return rows


def _critical_gaps(journeys: Sequence[Mapping[str, Any]],
                   traceability: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What makes the plan exit 1: a critical requirement or claim without a journey a
    fixture case could prove it with."""
    gaps: list[dict[str, Any]] = []
    for journey in journeys:
        if journey["criticality"] != "critical" or journey["binding_status"] == NOT_APPLICABLE:
            continue
        rid = journey["requirement_id"]
        if journey["binding_status"] != BOUND:
            reasons = "; ".join(item["message"] for item in journey["missing"])
            gaps.append({"kind": "requirement_not_bound", "requirement_id": rid,
                         "message": f"critical requirement {rid!r} is "
                                    f"{journey['binding_status']}: {reasons}"})
        if journey["weak_oracle"]:
            gaps.append({"kind": "requirement_weak_oracle", "requirement_id": rid,
                         "message": f"critical requirement {rid!r} has no failing_capable "
                                    "oracle: its journey could pass while broken"})
    for row in traceability:
        if row["criticality"] != "critical" or row["status"] == TRACE_SATISFIABLE:
            continue
        cid = row["claim_id"]
        if row["status"] == TRACE_MISSING:
            gaps.append({"kind": "claim_without_journey", "claim_id": cid,
                         "message": f"critical claim {cid!r} has no applicable requirement "
                                    "tracing to it (a missing journey)"})
        else:
            gaps.append({"kind": "claim_without_satisfiable_journey", "claim_id": cid,
                         "message": f"critical claim {cid!r} is traced by "
                                    f"{', '.join(row['requirements'])}, but none is BOUND "
                                    "with a failing_capable oracle"})
    return gaps


def exit_status(plan_data: Mapping[str, Any], report_only: bool) -> int:
    """1 on a critical gap unless ``report_only``; else 0."""
    return 1 if plan_data["critical_gaps"] and not report_only else 0


def lines(plan_data: Mapping[str, Any]) -> list[str]:
    """The plan for a person: one row per requirement, then the gaps."""
    summary = plan_data["summary"]
    out = [f"{'REQUIREMENT':<28} {'CRIT':<9} {'BINDING':<16} {'STEPS':>5}  NOTE"]
    for journey in plan_data["journeys"]:
        note = "; ".join(item["message"] for item in journey["missing"])
        if journey["binding_status"] == NOT_APPLICABLE:
            note = f"not applicable: {journey['not_applicable_reason']}"
        elif journey["weak_oracle"]:
            note = ("weak oracle (none failing_capable)" + (f"; {note}" if note else ""))
        out.append(f"{journey['requirement_id']:<28} {journey['criticality']:<9} "
                   f"{journey['binding_status']:<16} {len(journey['path']):>5}  {note or '-'}")
    for entry in plan_data["missing_journeys"]:
        out.append(f"  missing journey: claim {entry['claim_id']} ({entry['criticality']}) "
                   "has no applicable requirement")
    if summary["unlinked_controls"]:
        out.append(f"  {summary['unlinked_controls']} observed control(s) no journey uses "
                   "(unlinked_controls)")
    for gap in plan_data["critical_gaps"]:
        out.append(f"  CRITICAL GAP: {gap['message']}")
    out.append(f"{summary['requirements']} requirement(s): {summary['bound']} BOUND, "
               f"{summary['partially_bound']} PARTIALLY_BOUND, {summary['unbound']} UNBOUND, "
               f"{summary['not_applicable']} NOT_APPLICABLE; verdict {plan_data['verdict']}")
    return out
