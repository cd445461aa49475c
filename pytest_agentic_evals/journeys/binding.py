"""One requirement's journey, bound to the state network.

Each ui action's control is looked up where discovery observed it; a control that is usable in
a state reachable from the initial state is bound, and the journey's path reaches it by the
shortest route from where the previous action left the journey, then acts on it. A command
action is bound as given. The binding status says how much of the journey could be bound.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_agentic_evals.journeys.graph import Network, did_you_mean
from pytest_agentic_evals.journeys.router import Router

# Binding status of a requirement's journey.
BOUND = "BOUND"
PARTIALLY_BOUND = "PARTIALLY_BOUND"
UNBOUND = "UNBOUND"
NOT_APPLICABLE = "NOT_APPLICABLE"
BINDING_STATUSES = (BOUND, PARTIALLY_BOUND, UNBOUND, NOT_APPLICABLE)
# A ui action that names no action clicks, as the earlier tool's scaffolds did.
DEFAULT_ACTION = "click"

# Status of one ui action's control, best first.
CONTROL_BOUND = "bound"
CONTROL_NO_ROUTE = "no_route"
CONTROL_UNREACHABLE = "unreachable"
CONTROL_NOT_USABLE = "not_usable"
CONTROL_NOT_OBSERVED = "not_observed"

# A control present on every page (a navigation bar) may be observed in thousands of states;
# the plan shows the nearest ones and counts the rest.
STATES_SHOWN = 10


def bind_journey(
    requirement: Mapping[str, Any],
    net: Network,
    router: Router,
    claims: Mapping[str, Mapping[str, Any]],
    seam_ids: Sequence[str],
) -> dict[str, Any]:
    """The plan's entry for one requirement: its binding status, what is missing, each
    action's control, and the executable path."""
    entry: dict[str, Any] = {
        "requirement_id": requirement["id"],
        "description": requirement.get("description", ""),
        "criticality": requirement["criticality"],
        "capability_claims": list(requirement.get("capability_claims", ())),
        "seams": list(requirement.get("seams", ())),
    }
    # The earlier tool's keys, copied as it copied them: said, never interpreted.
    for key in ("preconditions", "evidence_required"):
        if key in requirement:
            entry[key] = list(requirement[key])
    if requirement.get("applicable", True) is False:
        return {**entry, "binding_status": NOT_APPLICABLE,
                "not_applicable_reason": requirement["not_applicable_reason"],
                "missing": [], "actions": [], "path": [], "path_complete": False,
                "ends_in": None, "oracles": _oracle_counts(requirement), "weak_oracle": None,
                "coverage_satisfiable": False}
    walk = _walk(requirement["journey"]["actions"], net, router)
    missing = _undeclared(entry["capability_claims"], entry["seams"], claims, seam_ids)
    missing += walk.missing
    if not missing:
        status = BOUND
    elif walk.ui_total and not walk.ui_bound:
        status = UNBOUND
    else:
        status = PARTIALLY_BOUND
    oracles = _oracle_counts(requirement)
    weak = oracles["failing_capable"] == 0
    current = walk.current
    return {**entry, "binding_status": status, "missing": missing, "actions": walk.actions,
            "path": walk.path, "path_complete": current is not None,
            "ends_in": net.state_ids[current] if current is not None else None,
            "oracles": oracles, "weak_oracle": weak,
            "coverage_satisfiable": status == BOUND and not weak}


def _undeclared(claim_ids: Sequence[str], seam_ids: Sequence[str],
                claims: Mapping[str, Mapping[str, Any]],
                declared_seams: Sequence[str]) -> list[dict[str, Any]]:
    """The claims and seams a requirement traces to that the fixture does not declare."""
    missing: list[dict[str, Any]] = []
    for claim_id in claim_ids:
        if claim_id not in claims:
            missing.append({"kind": "claim", "claim_id": claim_id, "message": (
                f"capability claim {claim_id!r} is not declared in the fixture"
                f"{did_you_mean(claim_id, claims)}")})
    for seam_id in seam_ids:
        if seam_id not in declared_seams:
            missing.append({"kind": "seam", "seam_id": seam_id, "message": (
                f"seam {seam_id!r} is not declared in the fixture"
                f"{did_you_mean(seam_id, declared_seams)}")})
    return missing


@dataclass
class _Walk:
    """A journey walked through the network, action by action."""

    current: int | None
    """The state the journey is in; None once an action could not be reached."""
    actions: list[dict[str, Any]] = field(default_factory=list)
    path: list[dict[str, Any]] = field(default_factory=list)
    missing: list[dict[str, Any]] = field(default_factory=list)
    ui_total: int = 0
    ui_bound: int = 0


def _walk(actions: Sequence[Mapping[str, Any]], net: Network, router: Router) -> _Walk:
    """Bind each action in turn, the path growing from the initial state; after an action
    that cannot be reached the path stops, and later controls are still looked up."""
    walk = _Walk(current=net.initial)
    for position, action in enumerate(actions):
        if action["kind"] == "command":
            # A command has no control to bind: it is bound as given and leaves the
            # application's state where it was.
            walk.actions.append({"index": position, "kind": "command",
                                 "command": action["command"], "status": CONTROL_BOUND})
            if walk.current is not None:
                walk.path.append({"step": len(walk.path) + 1, "kind": "command",
                                  "action_index": position, "command": action["command"],
                                  "in_state": net.state_ids[walk.current]})
            continue
        walk.ui_total += 1
        detail, targets = _control(action, position, net)
        if targets:
            walk.ui_bound += 1
            if walk.current is not None:
                walk.current = _route_to(action, position, detail, targets, walk.current, net,
                                         router, walk.path)
                if walk.current is None:
                    walk.missing.append({"kind": "route", "action_index": position,
                                         "qid": action["qid"], "message": detail["message"]})
        else:
            walk.missing.append({"kind": "control", "action_index": position,
                                 "qid": action["qid"], "reason": detail["status"],
                                 "message": detail["message"]})
            walk.current = None
        walk.actions.append(detail)
    return walk


def _control(action: Mapping[str, Any], position: int,
             net: Network) -> tuple[dict[str, Any], list[int]]:
    """Where a ui action's control was observed, and the usable states reachable from the
    initial state (empty when the control cannot be bound)."""
    qid = action["qid"]
    seen = net.observed.get(qid, [])
    usable = [state for state, ok in seen if ok]
    targets = [state for state in usable if net.distance[state] >= 0]
    # Nearest first, so that the states shown are the ones a person would go to.
    ordered = sorted(seen, key=lambda item: (not item[1], net.distance[item[0]] < 0,
                                             net.distance[item[0]], item[0]))
    detail: dict[str, Any] = {
        "index": position, "kind": "ui", "qid": qid, "action": action.get("action", DEFAULT_ACTION),
        **({"value": action["value"]} if "value" in action else {}),
        "observed_in": [{"state": net.state_ids[state], "usable": ok,
                         "reachable": net.distance[state] >= 0,
                         "distance": net.distance[state] if net.distance[state] >= 0 else None}
                        for state, ok in ordered[:STATES_SHOWN]],
        "observed_in_count": len(seen),
        "usable_in_count": len(usable),
        "reachable": bool(targets),
        "nearest_from_initial": None,
        "acted_in": None,
    }
    if targets:
        nearest = min(targets, key=lambda state: (net.distance[state], state))
        detail["nearest_from_initial"] = {"state": net.state_ids[nearest],
                                          "distance": net.distance[nearest]}
        detail["status"] = CONTROL_BOUND
        detail["message"] = None
    elif usable:
        detail["status"] = CONTROL_UNREACHABLE
        detail["message"] = (
            f"control {qid!r} is observed only in state(s) unreachable from the initial state "
            f"{net.state_ids[net.initial]!r}: {_state_list(net, usable)}")
    elif seen:
        detail["status"] = CONTROL_NOT_USABLE
        detail["message"] = (f"control {qid!r} is observed only hidden or disabled, in "
                             f"{_state_list(net, [state for state, _ in seen])}")
    else:
        detail["status"] = CONTROL_NOT_OBSERVED
        detail["message"] = (f"control {qid!r} was not observed in any state"
                             f"{did_you_mean(qid, net.observed)}")
    return detail, targets


def _state_list(net: Network, states: Sequence[int]) -> str:
    shown = ", ".join(repr(net.state_ids[state]) for state in states[:STATES_SHOWN])
    more = len(states) - STATES_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _route_to(
    action: Mapping[str, Any], position: int, detail: dict[str, Any], targets: list[int],
    current: int, net: Network, router: Router, path: list[dict[str, Any]],
) -> int | None:
    """Append the steps that reach the control from ``current`` and act on it; return the
    state the journey is in afterwards, or None when the control cannot be reached from
    where the previous action left the journey."""
    qid = action["qid"]
    if current == net.initial:
        found: tuple[int, list[int]] | None = router.from_initial(targets)
    else:
        found = router.between(current, qid, targets)
    if found is None:
        detail["status"] = CONTROL_NO_ROUTE
        detail["message"] = (
            f"control {qid!r} is reachable from the initial state but not from state "
            f"{net.state_ids[current]!r}, where action {position - 1} left the journey")
        return None
    state, route = found
    moves = net.transitions
    for transition in route:
        path.append({"step": len(path) + 1, "kind": "navigate", "for_action": position,
                     "from": net.state_ids[moves.source[transition]],
                     "to": net.state_ids[moves.target[transition]],
                     "qid": moves.qid[transition], "action": moves.action[transition],
                     "transition": transition})
    fired = moves.fires.get((state, qid, action.get("action", DEFAULT_ACTION)))
    after = moves.target[fired] if fired is not None else state
    step: dict[str, Any] = {"step": len(path) + 1, "kind": "act", "action_index": position,
                            "state": net.state_ids[state], "qid": qid,
                            "action": action.get("action", DEFAULT_ACTION)}
    if "value" in action:
        step["value"] = action["value"]
    step["to"] = net.state_ids[after]
    step["transition"] = fired
    path.append(step)
    detail["acted_in"] = net.state_ids[state]
    return after


def _oracle_counts(requirement: Mapping[str, Any]) -> dict[str, int]:
    oracles = (requirement.get("journey") or {}).get("oracles", [])
    return {"total": len(oracles),
            "failing_capable": sum(oracle.get("failing_capable") is True for oracle in oracles)}
