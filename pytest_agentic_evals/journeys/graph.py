"""The state network: the state graph and the interaction inventory, checked against each
other and joined into one structure that routes can be searched in.

States are numbered in input order and transitions keep their index in the graph file, so
every answer read from the network is the same for the same inputs.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentic_evals.journeys.documents import Document
from pytest_agentic_evals.problems import Problem, pointer_for


@dataclass
class Transitions:
    """The graph's transitions, numbered as in the file, with the usable ones indexed.

    Only usable transitions are in ``out``/``into`` and ``fires``: one whose control was hidden
    or disabled in its ``from`` state cannot be fired by a plan, and is listed in ``unusable``.
    """

    source: list[int]
    target: list[int]
    qid: list[str]
    action: list[str]
    out: list[list[int]]
    """Per state, the usable transitions leaving it, in input order."""
    into: list[list[int]]
    """Per state, the usable transitions entering it, in input order."""
    fires: dict[tuple[int, str, str], int]
    """(state, qid, action) -> the first usable transition acting so fires from that state."""
    unusable: list[dict[str, Any]]


@dataclass
class Network:
    """The state graph restricted to what can be acted on, with reachability from the start.

    States are numbered in input order.
    """

    state_ids: list[str]
    index: dict[str, int]
    initial: int
    transitions: Transitions
    observed: dict[str, list[tuple[int, bool]]]
    """qid -> (state, usable) for every state it was observed in, in inventory order."""
    distance: list[int]
    """Transitions from the initial state along a shortest path; -1 when unreachable."""
    via: list[int]
    """The transition that enters each state on that shortest path (-1: initial, unreachable)."""
    url: str | None
    run_id: str | None
    form: str = "state_graph.v1"
    """``earlier`` when the graph was the earlier tool's free-form one (journeys/earlier.py)."""


def build_network(inventory: Document, graph: Document) -> tuple[Network | None, list[Problem]]:
    """Cross-check the inventory and the graph, and build the network when they agree.

    Every disagreement is listed (in the order: states, initial state, inventory,
    transitions), and no network is built when there is one."""
    state_ids, index, problems = _states(graph)
    initial_id = graph.data["initial_state"]
    if initial_id not in index:
        problems.append(Problem(graph.shown, "/initial_state", (
            f"initial state {initial_id!r} is not one of /states"
            f"{did_you_mean(initial_id, index)}")))
    controls, observed, found = _controls(inventory, graph.shown, index, initial_id)
    problems += found
    transitions, found = _transitions(graph, inventory.shown, index, controls)
    problems += found
    if problems:
        return None, problems
    initial = index[initial_id]
    distance, via = _shortest_from(initial, transitions.out, transitions.target)
    return Network(
        state_ids, index, initial, transitions, observed, distance, via,
        url=inventory.data.get("url") or graph.data.get("url"),
        run_id=inventory.data.get("run_id") or graph.data.get("run_id"),
    ), []


def _states(graph: Document) -> tuple[list[str], dict[str, int], list[Problem]]:
    """The graph's state ids in input order, and each one's number; a repeated id is a
    problem."""
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
    return state_ids, index, problems


def _controls(
    inventory: Document, graph_shown: str, index: dict[str, int], initial_id: str,
) -> tuple[list[dict[str, bool]], dict[str, list[tuple[int, bool]]], list[Problem]]:
    """Per state, its controls (qid -> usable); per qid, where it was observed. The inventory
    must list states of the graph, each once, and a qid once per state.

    An entry without ``state`` (the earlier tool's inventories) is read as observed in the
    initial state; such entries are merged, a control usable when usable in any of them."""
    problems: list[Problem] = []
    controls: list[dict[str, bool]] = [{} for _ in index]
    observed: dict[str, list[tuple[int, bool]]] = {}
    listed: dict[str, int] = {}
    for position, entry in enumerate(inventory.data["inventory"]):
        # Ids and pointers (``/inventory/N``) hold no characters to escape.
        here = f"/inventory/{position}"
        if "state" not in entry:
            _merge_stateless(entry, index.get(initial_id), controls, observed)
            continue
        state_id = entry["state"]
        if state_id not in index:
            problems.append(Problem(inventory.shown, here + "/state", (
                f"state {state_id!r} is not a state of the state graph "
                f"{graph_shown}{did_you_mean(state_id, index)}")))
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
    return controls, observed, problems


def _merge_stateless(
    entry: dict[str, Any], state: int | None, controls: list[dict[str, bool]],
    observed: dict[str, list[tuple[int, bool]]],
) -> None:
    if state is None:  # an unknown initial state is reported by the caller
        return
    for control in entry["interactives"]:
        qid = control["qid"]
        usable = control["visible"] is True and control["enabled"] is True
        if qid not in controls[state]:
            observed.setdefault(qid, []).append((state, usable))
        elif usable and not controls[state][qid]:
            observed[qid] = [(s, ok or s == state) for s, ok in observed[qid]]
        controls[state][qid] = controls[state].get(qid, False) or usable


def _transitions(
    graph: Document, inventory_shown: str, index: dict[str, int],
    controls: Sequence[dict[str, bool]],
) -> tuple[Transitions, list[Problem]]:
    """The transitions between known states on controls the inventory lists in their ``from``
    state; one on a hidden or disabled control is kept aside as unusable."""
    problems: list[Problem] = []
    edges = Transitions([], [], [], [], [[] for _ in controls], [[] for _ in controls], {}, [])
    for position, transition in enumerate(graph.data["transitions"]):
        start, end, qid = transition["from"], transition["to"], transition["qid"]
        action = transition["action"]
        first, last = index.get(start), index.get(end)
        if first is None or last is None:
            for key, state_id, known in (("from", start, first), ("to", end, last)):
                if known is None:
                    problems.append(Problem(graph.shown, f"/transitions/{position}/{key}", (
                        f"{state_id!r} is not one of /states{did_you_mean(state_id, index)}")))
            continue
        found = controls[first].get(qid)
        if found is None:
            problems.append(Problem(graph.shown, f"/transitions/{position}/qid", (
                f"the transition fires by acting on {qid!r}, which {inventory_shown} does not "
                f"list in state {start!r}")))
            continue
        # Equal to ``position``: an inconsistent transition rejects the whole graph.
        numbered = len(edges.source)
        edges.source.append(first)
        edges.target.append(last)
        edges.qid.append(qid)
        edges.action.append(action)
        if not found:
            edges.unusable.append({
                "transition": position, "from": start, "to": end, "qid": qid, "action": action,
                "reason": "its control is hidden or disabled in the from state"})
            continue
        edges.out[first].append(numbered)
        edges.into[last].append(numbered)
        edges.fires.setdefault((first, qid, action), numbered)
    return edges, problems


def _shortest_from(initial: int, out: Sequence[Sequence[int]],
                   target: Sequence[int]) -> tuple[list[int], list[int]]:
    """Distance from ``initial`` and the transition entering each state on a shortest path
    (-1 for both when unreachable; via is -1 for the initial state).

    One breadth-first search gives reachability and a shortest path to every state;
    transitions are tried in input order, so ties always break the same way."""
    distance = [-1] * len(out)
    via = [-1] * len(out)
    distance[initial] = 0
    frontier = [initial]
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
    return distance, via


def did_you_mean(value: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` with the closest of ``known``, or nothing."""
    close = difflib.get_close_matches(value, sorted(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
