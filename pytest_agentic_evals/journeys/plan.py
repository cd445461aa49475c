"""Journey planning: binding requirements to what live discovery observed of an application.

Inputs: the skill's fixture (its capability claims and seams), ``requirements.json``
(``agentic_evals.requirements.v1``: journeys of actions on stable control ids, with oracles),
``discovery-inventory.json`` (the controls observed per state) and ``state-graph.json`` (the
states and the transitions between them). The plan (``agentic_evals.journey_plan.v1``) says per
requirement whether its journey is BOUND to observed, reachable controls, and gives the
shortest executable path through the state graph; it also lists claims no requirement traces
to, journeys whose oracles cannot fail, and observed controls no journey uses.

Everything here is pure: no pytest, nothing is executed, nothing is written. The same inputs
give the same plan, byte for byte: every list follows input order or a sort, ties in path
search are broken by input order, and the plan holds no time and no absolute path.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from pytest_agentic_evals.jsonio import decode_json, display_path
from pytest_agentic_evals.loading import fixture_from_data, load_fixture
from pytest_agentic_evals.loading.fixture import FixtureError, fixture_schema
from pytest_agentic_evals.model import CRITICALITIES, Fixture
from pytest_agentic_evals.problems import (
    InputError,
    Problem,
    explain_schema_error,
    pointer_for,
    shown_value,
)
from pytest_agentic_evals.schemas import schema_text
from pytest_agentic_evals.schemas.compiled import Check, compile_check

PLAN_SCHEMA = "agentic_evals.journey_plan.v1"
REQUIREMENTS_SCHEMA = "agentic_evals.requirements.v1"
SCAFFOLD_SCHEMA = "agentic_evals.journey_scaffold.v1"
STEPS_SCHEMA = "agentic_evals.journey_steps.v1"

# Binding status of a requirement's journey.
BOUND = "BOUND"
PARTIALLY_BOUND = "PARTIALLY_BOUND"
UNBOUND = "UNBOUND"
NOT_APPLICABLE = "NOT_APPLICABLE"
BINDING_STATUSES = (BOUND, PARTIALLY_BOUND, UNBOUND, NOT_APPLICABLE)

# Status of one ui action's control, best first.
CONTROL_BOUND = "bound"
CONTROL_NO_ROUTE = "no_route"
CONTROL_UNREACHABLE = "unreachable"
CONTROL_NOT_USABLE = "not_usable"
CONTROL_NOT_OBSERVED = "not_observed"

# Claim traceability, best first.
TRACE_SATISFIABLE = "SATISFIABLE"
TRACE_WEAK = "BOUND_WEAK_ORACLE"
TRACE_NOT_BOUND = "NOT_BOUND"
TRACE_MISSING = "MISSING"

VERDICT_NO_GAPS = "NO_GAPS"
VERDICT_GAPS = "GAPS"
VERDICT_CRITICAL_GAP = "CRITICAL_GAP"

# A control present on every page (a navigation bar) may be observed in thousands of states;
# the plan shows the nearest ones and counts the rest.
STATES_SHOWN = 10
_CRITICALITY_RANK = {name: rank for rank, name in enumerate(CRITICALITIES)}
# Keys people write when they reach for a selector instead of a qid.
_SELECTOR_KEYS = frozenset({"selector", "css", "css_selector", "xpath", "locator"})
_XPATH_START = re.compile(r"^(\(|\.?/|xpath[=:])", re.IGNORECASE)
_CSS_MARKS = re.compile(r"[#\[\]>+~*:=()'\"\s,^$|]|^\.|^css[=:]", re.IGNORECASE)


# ---------------------------------------------------------------------------------------------
# Reading and validating the inputs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    """One JSON input file, decoded."""

    path: Path
    shown: str
    sha256: str
    data: Any


@dataclass(frozen=True)
class Inputs:
    fixture: Fixture
    requirements: Document
    inventory: Document
    graph: Document
    extra_expectations: Mapping[str, Mapping[str, Any]] | None
    network: Network


def load_inputs(
    fixture_path: str | os.PathLike[str],
    requirements_path: str | os.PathLike[str],
    inventory_path: str | os.PathLike[str],
    graph_path: str | os.PathLike[str],
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
) -> Inputs:
    """Read and check the four inputs; raise InputError listing every problem of every file."""
    problems: list[Problem] = []
    fixture: Fixture | None = None
    try:
        fixture = load_fixture(fixture_path, extra_expectations)
    except FixtureError as exc:
        problems += exc.problems
    documents: dict[str, Document | None] = {}
    well_formed: dict[str, bool] = {}
    for key, path, schema in (("requirements", requirements_path, "requirements"),
                              ("inventory", inventory_path, "discovery_inventory"),
                              ("graph", graph_path, "state_graph")):
        document, found = _read_document(path, schema)
        documents[key] = document
        well_formed[key] = document is not None and not found
        problems += found
    requirements, inventory, graph = (documents["requirements"], documents["inventory"],
                                      documents["graph"])
    if requirements is not None:
        # Checked even when the schema found problems: every problem is listed at once.
        problems += _requirement_problems(requirements, extra_expectations)
    network: Network | None = None
    pending = ""
    if inventory is not None and graph is not None and well_formed["inventory"] \
            and well_formed["graph"]:
        network, found = build_network(inventory, graph)
        problems += found
    elif inventory is not None and graph is not None:
        pending = ("; the inventory and the state graph are checked against each other once "
                   "these are fixed")
    if problems or fixture is None or requirements is None or network is None:
        raise InputError(problems, headline="plan-journeys: input rejected" + pending)
    assert inventory is not None and graph is not None  # the network is built from them
    return Inputs(fixture, requirements, inventory, graph, extra_expectations, network)


def _read_document(path: str | os.PathLike[str], schema: str) -> tuple[Document | None,
                                                                        list[Problem]]:
    """Decode one file strictly and check it against its shipped schema."""
    absolute = Path(os.path.abspath(path))
    shown = display_path(absolute)
    try:
        raw = absolute.read_bytes()
    except OSError as exc:
        return None, [Problem(shown, "", f"cannot read file: {exc.strerror}")]
    try:
        data = decode_json(raw, shown)
    except InputError as exc:
        return None, list(exc.problems)
    problems = schema_problems(data, schema, shown)
    return Document(absolute, shown, hashlib.sha256(raw).hexdigest(), data), problems


def schema_problems(data: Any, schema: str, shown: str) -> list[Problem]:
    """Every way ``data`` breaks the shipped schema ``schema``, explained at its pointer."""
    fast = _fast_validator(schema)
    if fast is not None and fast(data):
        # jsonschema takes seconds over a graph of 50,000 transitions; the compiled check
        # below accepts only what the schema accepts, so a clean document is done here and
        # jsonschema is asked only to explain a faulty one.
        return []
    try:
        errors = list(_validator(schema).iter_errors(data))
    except RecursionError:
        return [Problem(shown, "", "document is nested too deeply to validate")]
    problems = {Problem(shown, pointer, message) for error in errors
                for pointer, message in _explain(error)}
    return sorted(problems)


@cache
def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(schema_text(name))
    return loaded


@cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(_schema(name))


def _explain(error: ValidationError) -> list[tuple[str, str]]:
    """Schema errors in planning's own terms: a raw selector is named as one."""
    parts = list(error.absolute_path)
    pointer = pointer_for(*parts)
    if error.validator == "pattern" and parts and parts[-1] == "qid":
        return [(pointer, raw_selector_message(error.instance))]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        explained = []
        for item_pointer, message in explain_schema_error(error):
            key = item_pointer.rsplit("/", 1)[-1]
            if key in _SELECTOR_KEYS:
                message = (f"raw selectors are refused ({key!r}): name the control by its "
                           "stable qid, as discovery records it")
            explained.append((item_pointer, message))
        return explained
    if error.validator == "if" or error.validator == "else" or error.validator == "then":
        return []  # the failing branch reports the error itself
    return explain_schema_error(error)


def raw_selector_message(value: Any) -> str:
    """Why a value is not a stable qid; raw CSS selectors and XPath expressions by name."""
    if not isinstance(value, str):
        return f"{shown_value(value)} is not a qid"
    if _XPATH_START.search(value.strip()) or "@" in value:
        kind = "a raw XPath expression"
    elif _CSS_MARKS.search(value):
        kind = "a raw CSS selector"
    else:
        kind = "not a stable qid"
    return (f"{shown_value(value)} is {kind}: name the control by its stable qid as discovery "
            "records it (letters, digits and _ . - only)")


def _requirement_problems(
    document: Document, extra: Mapping[str, Mapping[str, Any]] | None
) -> list[Problem]:
    """What the requirements schema cannot say: unique ids, oracle checks in fixture terms."""
    problems: list[Problem] = []
    first: dict[str, int] = {}
    # Read defensively: these checks also run on a document the schema refused.
    data = document.data if isinstance(document.data, dict) else {}
    listed = data.get("requirements")
    for index, requirement in enumerate(listed if isinstance(listed, list) else ()):
        if not isinstance(requirement, dict):
            continue
        here = pointer_for("requirements", index)
        requirement_id = requirement.get("id")
        if isinstance(requirement_id, str) and requirement_id in first:
            problems.append(Problem(document.shown, here + "/id", (
                f"duplicate requirement id {requirement_id!r} (also "
                f"/requirements/{first[requirement_id]}/id)")))
        elif isinstance(requirement_id, str):
            first[requirement_id] = index
        journey = requirement.get("journey")
        oracles = journey.get("oracles") if isinstance(journey, dict) else None
        for position, oracle in enumerate(oracles if isinstance(oracles, list) else ()):
            if isinstance(oracle, dict) and isinstance(oracle.get("expected"), dict):
                problems += _expected_problems(
                    oracle["expected"], extra, document.shown,
                    f"{here}/journey/oracles/{position}/expected")
    return problems


def _expected_problems(
    expected: Mapping[str, Any], extra: Mapping[str, Mapping[str, Any]] | None, shown: str,
    here: str,
) -> list[Problem]:
    """An oracle's ``expected`` must be a valid fixture ``expected`` (exit_code may be left out:
    a scaffolded case then expects 0), so that a scaffolded case always loads."""
    validator = _expected_validator() if not extra else Draft202012Validator(
        _expected_schema(extra))
    checked = {"exit_code": 0, **expected}
    problems = []
    for error in validator.iter_errors(checked):
        for pointer, message in explain_schema_error(error):
            problems.append(Problem(shown, here + pointer, message))
    return problems


def _expected_schema(extra: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any]:
    schema = fixture_schema(extra)
    return {"$defs": schema["$defs"], "$ref": "#/$defs/expected"}


@cache
def _expected_validator() -> Draft202012Validator:
    return Draft202012Validator(_expected_schema(None))


@cache
def _fast_validator(name: str) -> Check | None:
    """A predicate true only for documents the schema accepts, or None (see schemacheck)."""
    return compile_check(_schema(name))


# ---------------------------------------------------------------------------------------------
# The state graph and the inventory, as one network
# ---------------------------------------------------------------------------------------------


@dataclass
class Network:
    """The state graph restricted to what can be acted on, with reachability from the start.

    States are numbered in input order; transitions keep their index in the graph file. Only
    usable transitions are in ``out``/``into``: one whose control was hidden or disabled in its
    ``from`` state cannot be fired by a plan.
    """

    state_ids: list[str]
    index: dict[str, int]
    initial: int
    source: list[int]
    target: list[int]
    qid: list[str]
    action: list[str]
    out: list[list[int]]
    into: list[list[int]]
    fires: dict[tuple[int, str, str], int]
    unusable: list[dict[str, Any]]
    observed: dict[str, list[tuple[int, bool]]]
    """qid -> (state, usable) for every state it was observed in, in inventory order."""
    distance: list[int]
    """Transitions from the initial state along a shortest path; -1 when unreachable."""
    via: list[int]
    """The transition that enters each state on that shortest path (-1: initial, unreachable)."""
    url: str | None
    run_id: str | None

    def reachable(self, state: int) -> bool:
        return self.distance[state] >= 0


def build_network(inventory: Document, graph: Document) -> tuple[Network | None, list[Problem]]:
    """Cross-check the inventory and the graph, and build the network when they agree."""
    problems: list[Problem] = []
    state_ids: list[str] = []
    index: dict[str, int] = {}
    for position, state in enumerate(graph.data["states"]):
        state_id = state["id"]
        if state_id in index:
            problems.append(Problem(graph.shown, pointer_for("states", position, "id"), (
                f"duplicate state id {state_id!r} (also /states/{index[state_id]}/id)")))
            continue
        index[state_id] = len(state_ids)
        state_ids.append(state_id)
    initial_id = graph.data["initial_state"]
    if initial_id not in index:
        problems.append(Problem(graph.shown, "/initial_state", (
            f"initial state {initial_id!r} is not one of /states"
            f"{_did_you_mean(initial_id, index)}")))

    controls: list[dict[str, bool]] = [{} for _ in state_ids]
    observed: dict[str, list[tuple[int, bool]]] = {}
    listed: dict[str, int] = {}
    for position, entry in enumerate(inventory.data["inventory"]):
        # Ids and pointers (``/inventory/N``) hold no characters to escape.
        here = f"/inventory/{position}"
        state_id = entry["state"]
        if state_id not in index:
            problems.append(Problem(inventory.shown, here + "/state", (
                f"state {state_id!r} is not a state of the state graph "
                f"{graph.shown}{_did_you_mean(state_id, index)}")))
            continue
        if state_id in listed:
            problems.append(Problem(inventory.shown, here + "/state", (
                f"state {state_id!r} is listed twice (also /inventory/{listed[state_id]}/state)")))
            continue
        listed[state_id] = position
        state = index[state_id]
        here_controls = controls[state]
        for item_position, control in enumerate(entry["interactives"]):
            qid = control["qid"]
            if qid in here_controls:
                problems.append(Problem(
                    inventory.shown, f"{here}/interactives/{item_position}/qid",
                    f"qid {qid!r} appears twice in state {state_id!r}: a qid names one control"))
                continue
            usable = control["visible"] is True and control["enabled"] is True
            here_controls[qid] = usable
            observed.setdefault(qid, []).append((state, usable))

    source: list[int] = []
    target: list[int] = []
    qids: list[str] = []
    actions: list[str] = []
    out: list[list[int]] = [[] for _ in state_ids]
    into: list[list[int]] = [[] for _ in state_ids]
    fires: dict[tuple[int, str, str], int] = {}
    unusable: list[dict[str, Any]] = []
    for position, transition in enumerate(graph.data["transitions"]):
        start, end, qid = transition["from"], transition["to"], transition["qid"]
        action = transition["action"]
        first, last = index.get(start), index.get(end)
        if first is None or last is None:
            for key, state_id, known in (("from", start, first), ("to", end, last)):
                if known is None:
                    problems.append(Problem(graph.shown, f"/transitions/{position}/{key}", (
                        f"{state_id!r} is not one of /states{_did_you_mean(state_id, index)}")))
            continue
        found = controls[first].get(qid)
        if found is None:
            problems.append(Problem(graph.shown, f"/transitions/{position}/qid", (
                f"the transition fires by acting on {qid!r}, which {inventory.shown} does not "
                f"list in state {start!r}")))
            continue
        # Equal to ``position``: an inconsistent transition rejects the whole graph.
        numbered = len(source)
        source.append(first)
        target.append(last)
        qids.append(qid)
        actions.append(action)
        if not found:
            unusable.append({"transition": position, "from": start, "to": end, "qid": qid,
                             "action": action,
                             "reason": "its control is hidden or disabled in the from state"})
            continue
        out[first].append(numbered)
        into[last].append(numbered)
        fires.setdefault((first, qid, action), numbered)
    if problems:
        return None, problems

    initial = index[initial_id]
    distance = [-1] * len(state_ids)
    via = [-1] * len(state_ids)
    distance[initial] = 0
    frontier = [initial]
    # One breadth-first search from the initial state gives reachability and a shortest path
    # to every state; transitions are tried in input order, so ties always break the same way.
    while frontier:
        following = []
        for state in frontier:
            step = distance[state] + 1
            for transition in out[state]:
                reached = target[transition]
                if distance[reached] < 0:
                    distance[reached] = step
                    via[reached] = transition
                    following.append(reached)
        frontier = following
    url = inventory.data.get("url") or graph.data.get("url")
    run_id = inventory.data.get("run_id") or graph.data.get("run_id")
    return Network(state_ids, index, initial, source, target, qids, actions, out, into, fires,
                   unusable, observed, distance, via, url, run_id), []


def _did_you_mean(value: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(value, sorted(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class Router:
    """Shortest routes through the network, from the initial state or from anywhere."""

    def __init__(self, network: Network) -> None:
        self.network = network
        self._cache: dict[tuple[int, str], tuple[int, list[int]] | None] = {}
        self._pairs: tuple[list[list[tuple[int, int]]],
                           list[list[tuple[int, int]]]] | None = None

    def from_initial(self, targets: Sequence[int]) -> tuple[int, list[int]]:
        """The nearest target (fewest transitions, then input order) and the route to it."""
        net = self.network
        nearest = min(targets, key=lambda state: (net.distance[state], state))
        route = []
        state = nearest
        while net.via[state] >= 0:
            route.append(net.via[state])
            state = net.source[net.via[state]]
        route.reverse()
        return nearest, route

    def between(self, start: int, qid: str, targets: Sequence[int]) -> tuple[int, list[int]] | None:
        """The nearest target reachable from ``start`` and a shortest route to it, or None.

        A bidirectional breadth-first search: from ``start`` forwards and from every target
        backwards, a whole level at a time on the smaller side. It meets after visiting about
        the square root of what a one-sided search visits, which is what keeps a thousand
        journeys over a large graph within seconds. The first level where the two sides meet
        holds a shortest route; among its meetings the shortest total wins, then the first
        found, which input order decides: the answer is the same for the same inputs.
        """
        key = (start, qid)
        if key not in self._cache:
            self._cache[key] = self._search(start, targets)
        return self._cache[key]

    def _search(self, start: int, targets: Sequence[int]) -> tuple[int, list[int]] | None:
        goals = set(targets)
        if start in goals:
            return start, []
        # Adjacency as (transition, neighbour) pairs, bound to locals: this loop is the hot
        # spot of planning over a large graph.
        forward_edges, backward_edges = self._edges()
        ahead: dict[int, int] = {start: -1}  # state -> transition that entered it
        ahead_depth = {start: 0}
        behind: dict[int, int] = dict.fromkeys(goals, -1)  # state -> transition towards a goal
        behind_depth = dict.fromkeys(goals, 0)
        forward, backward = [start], sorted(goals)
        depth_ahead = depth_behind = 0
        while forward and backward:
            # Grow the smaller side by one level; stop at the first level where they meet.
            if len(forward) <= len(backward):
                depth_ahead += 1
                forward, meeting = _grow(forward, forward_edges, ahead, ahead_depth,
                                         depth_ahead, behind_depth)
            else:
                depth_behind += 1
                backward, meeting = _grow(backward, backward_edges, behind, behind_depth,
                                          depth_behind, ahead_depth)
            if meeting >= 0:
                return self._join(meeting, ahead, behind)
        return None

    def _edges(self) -> tuple[list[list[tuple[int, int]]], list[list[tuple[int, int]]]]:
        if self._pairs is None:
            net = self.network
            self._pairs = ([[(t, net.target[t]) for t in out] for out in net.out],
                           [[(t, net.source[t]) for t in into] for into in net.into])
        return self._pairs

    def _join(self, meeting: int, ahead: Mapping[int, int],
              behind: Mapping[int, int]) -> tuple[int, list[int]]:
        net = self.network
        route: list[int] = []
        state = meeting
        while ahead[state] >= 0:
            route.append(ahead[state])
            state = net.source[ahead[state]]
        route.reverse()
        state = meeting
        while behind[state] >= 0:
            route.append(behind[state])
            state = net.target[behind[state]]
        return state, route


def _grow(frontier: list[int], edges: Sequence[Sequence[tuple[int, int]]],
          seen: dict[int, int], seen_depth: dict[int, int], depth: int,
          other_depth: Mapping[int, int]) -> tuple[list[int], int]:
    """One level of one side of the bidirectional search: the next frontier, and the state
    where this level meets the other side by the shortest total (-1 when it does not)."""
    best_total, meeting = -1, -1
    following = []
    for state in frontier:
        for transition, reached in edges[state]:
            if reached in seen:
                continue
            seen[reached] = transition
            seen_depth[reached] = depth
            following.append(reached)
            if reached in other_depth:
                total = depth + other_depth[reached]
                if best_total < 0 or total < best_total:
                    best_total, meeting = total, reached
    return following, meeting


# ---------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------


def plan(inputs: Inputs, output: str | os.PathLike[str]) -> dict[str, Any]:
    """The journey plan. ``output`` is where it will be written: input paths are shown
    relative to its folder, so the plan does not depend on the working directory."""
    net = inputs.network
    router = Router(net)
    fixture = inputs.fixture
    claims = _claims(fixture)
    seam_ids = _seam_ids(fixture)
    requirements = inputs.requirements.data["requirements"]
    journeys = [_journey(requirement, net, router, claims, seam_ids)
                for requirement in requirements]

    traceability = _traceability(claims, journeys)
    missing = sorted((entry for entry in traceability if entry["status"] == TRACE_MISSING),
                     key=lambda entry: _CRITICALITY_RANK.get(entry["criticality"], 0))
    missing_journeys = [{"claim_id": entry["claim_id"], "criticality": entry["criticality"],
                         "description": entry["description"],
                         "traced_by_not_applicable": entry["traced_by_not_applicable"]}
                        for entry in missing]
    unlinked = _unlinked_controls(net, journeys)
    gaps = _critical_gaps(journeys, traceability)
    counts = {status: sum(j["binding_status"] == status for j in journeys)
              for status in BINDING_STATUSES}
    applicable = [j for j in journeys if j["binding_status"] != NOT_APPLICABLE]
    weak = [j["requirement_id"] for j in applicable if j["weak_oracle"]]
    has_gap = (counts[BOUND] != len(applicable) or weak or missing_journeys)
    verdict = (VERDICT_CRITICAL_GAP if gaps else VERDICT_GAPS if has_gap else VERDICT_NO_GAPS)
    reachable = sum(1 for d in net.distance if d >= 0)
    folder = Path(os.path.abspath(output)).parent
    return {
        "schema": PLAN_SCHEMA,
        "verdict": verdict,
        "inputs": {
            "fixture": {"path": _relative(fixture.path, folder), "sha256": fixture.sha256,
                        "skill": fixture.skill},
            "requirements": _input_entry(inputs.requirements, folder),
            "interaction_inventory": _input_entry(inputs.inventory, folder),
            "state_graph": _input_entry(inputs.graph, folder),
        },
        "application": {"name": inputs.requirements.data.get("application"), "url": net.url,
                        "run_id": net.run_id},
        "graph": {
            "initial_state": net.state_ids[net.initial],
            "states": len(net.state_ids),
            "transitions": len(net.source),
            "reachable_states": reachable,
            "unreachable_states": [s for i, s in enumerate(net.state_ids)
                                   if net.distance[i] < 0],
            "unusable_transitions": net.unusable,
        },
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


def _relative(path: Path, folder: Path) -> str:
    return Path(os.path.relpath(path, folder)).as_posix()


def _input_entry(document: Document, folder: Path) -> dict[str, Any]:
    return {"path": _relative(document.path, folder), "sha256": document.sha256}


def _claims(fixture: Fixture) -> dict[str, Mapping[str, Any]]:
    raw = fixture.data.get("capability_claims")
    found: dict[str, Mapping[str, Any]] = {}
    for claim in raw if isinstance(raw, list) else ():
        if isinstance(claim, Mapping) and isinstance(claim.get("id"), str):
            found.setdefault(claim["id"], claim)
    return found


def _seam_ids(fixture: Fixture) -> list[str]:
    raw = fixture.data.get("seams")
    return [seam["seam_id"] for seam in raw if isinstance(seam, Mapping)] \
        if isinstance(raw, list) else []


def _journey(
    requirement: Mapping[str, Any],
    net: Network,
    router: Router,
    claims: Mapping[str, Mapping[str, Any]],
    seam_ids: Sequence[str],
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "requirement_id": requirement["id"],
        "description": requirement.get("description", ""),
        "criticality": requirement["criticality"],
        "capability_claims": list(requirement.get("capability_claims", ())),
        "seams": list(requirement.get("seams", ())),
    }
    if requirement.get("applicable", True) is False:
        return {**entry, "binding_status": NOT_APPLICABLE,
                "not_applicable_reason": requirement["not_applicable_reason"],
                "missing": [], "actions": [], "path": [], "path_complete": False,
                "ends_in": None, "oracles": _oracle_counts(requirement), "weak_oracle": None,
                "coverage_satisfiable": False}

    missing: list[dict[str, Any]] = []
    for claim_id in entry["capability_claims"]:
        if claim_id not in claims:
            missing.append({"kind": "claim", "claim_id": claim_id, "message": (
                f"capability claim {claim_id!r} is not declared in the fixture"
                f"{_did_you_mean(claim_id, claims)}")})
    for seam_id in entry["seams"]:
        if seam_id not in seam_ids:
            missing.append({"kind": "seam", "seam_id": seam_id, "message": (
                f"seam {seam_id!r} is not declared in the fixture"
                f"{_did_you_mean(seam_id, seam_ids)}")})

    actions: list[dict[str, Any]] = []
    path: list[dict[str, Any]] = []
    current: int | None = net.initial
    ui_total = ui_bound = 0
    for position, action in enumerate(requirement["journey"]["actions"]):
        if action["kind"] == "command":
            # A command has no control to bind: it is bound as given and leaves the
            # application's state where it was.
            actions.append({"index": position, "kind": "command", "command": action["command"],
                            "status": CONTROL_BOUND})
            if current is not None:
                path.append({"step": len(path) + 1, "kind": "command", "action_index": position,
                             "command": action["command"], "in_state": net.state_ids[current]})
            continue
        ui_total += 1
        detail, targets = _control(action, position, net)
        if targets:
            ui_bound += 1
            if current is not None:
                current = _route_to(action, position, detail, targets, current, net, router,
                                    path)
                if current is None:
                    missing.append({"kind": "route", "action_index": position,
                                    "qid": action["qid"], "message": detail["message"]})
        else:
            missing.append({"kind": "control", "action_index": position, "qid": action["qid"],
                            "reason": detail["status"], "message": detail["message"]})
            current = None
        actions.append(detail)

    if not missing:
        status = BOUND
    elif ui_total and not ui_bound:
        status = UNBOUND
    else:
        status = PARTIALLY_BOUND
    oracles = _oracle_counts(requirement)
    weak = oracles["failing_capable"] == 0
    return {**entry, "binding_status": status, "missing": missing, "actions": actions,
            "path": path, "path_complete": current is not None,
            "ends_in": net.state_ids[current] if current is not None else None,
            "oracles": oracles, "weak_oracle": weak,
            "coverage_satisfiable": status == BOUND and not weak}


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
        "index": position, "kind": "ui", "qid": qid, "action": action["action"],
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
                             f"{_did_you_mean(qid, net.observed)}")
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
    for transition in route:
        path.append({"step": len(path) + 1, "kind": "navigate", "for_action": position,
                     "from": net.state_ids[net.source[transition]],
                     "to": net.state_ids[net.target[transition]], "qid": net.qid[transition],
                     "action": net.action[transition], "transition": transition})
    fired = net.fires.get((state, qid, action["action"]))
    after = net.target[fired] if fired is not None else state
    step: dict[str, Any] = {"step": len(path) + 1, "kind": "act", "action_index": position,
                            "state": net.state_ids[state], "qid": qid,
                            "action": action["action"]}
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
            "failing_capable": sum(oracle["failing_capable"] is True for oracle in oracles)}


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


# ---------------------------------------------------------------------------------------------
# Candidate fixture cases
# ---------------------------------------------------------------------------------------------


def scaffold(inputs: Inputs, plan_data: Mapping[str, Any],
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
    folder = Path(os.path.abspath(output)).parent
    return {
        "schema": SCAFFOLD_SCHEMA,
        "fixture": _relative(fixture.path, folder),
        "how_to_use": "append these cases to the fixture's cases; with them the fixture "
                      "loads as it is",
        "cases": [case for _, case in accepted],
        "skipped": skipped,
    }


def _candidate(
    requirement: Mapping[str, Any], journey: Mapping[str, Any], driver: list[str] | None,
    plan_data: Mapping[str, Any],
) -> tuple[dict[str, Any] | None, str]:
    rid = journey["requirement_id"]
    oracles = [o for o in requirement["journey"]["oracles"]
               if o["failing_capable"] is True and "expected" in o]
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
            fixture_from_data(data, fixture.path, extra_expectations=extra)
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
