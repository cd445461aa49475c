"""Matching events: required events (in order or not), forbidden events, and counts.

A matcher is an object whose every key must hold for an event: ``"name": "Bash"`` equals,
``"parameters.command": "ls"`` equals a nested field (JSON-typed), and a key ending in
``_contains`` is a substring test. Every unmet matcher is its own failure, with a message that
says what was looked for and what the trajectory holds instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentic_evals.expectations.trajectory.events import MAIN, Event, as_text
from pytest_agentic_evals.jsonvalues import json_equal

PREFIX = "trajectory"
NOT_TESTED = "trajectory not tested"
_SHOWN_POSITIONS = 8
# The fields of a normalised event a matcher may name; only parameters has fields of its own.
EVENT_FIELDS = ("type", "name", "parameters", "content", "agent", "agent_id")
CONTAINS = "_contains"


def matcher_key_problem(key: str) -> str | None:
    """Why a matcher key can never hold for any event, or None. A key naming no field of an
    event (``input.command``, ``tool``) matches nothing: a required event would never be
    found, and a forbidden one would pass whatever the agent did."""
    field = key[: -len(CONTAINS)] if key.endswith(CONTAINS) else key
    head, dot, path = field.partition(".")
    if head in EVENT_FIELDS and not dot:
        return None
    if head == "parameters" and all(path.split(".")):
        return None
    return (f"matcher key {key!r} names no field of an event: use type, name, content, agent, "
            "agent_id, parameters or parameters.<field>[.<field>...], each optionally ending "
            f"in {CONTAINS}")


def _lookup(event: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    value: Any = event
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def event_matches(matcher: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
    """Whether every key of the matcher holds for the event."""
    for key, wanted in matcher.items():
        if key.endswith(CONTAINS):
            found, value = _lookup(event, key[: -len(CONTAINS)])
            if not found or value is None or str(wanted) not in as_text(value):
                return False
        else:
            found, value = _lookup(event, key)
            if not found or not json_equal(value, wanted):
                return False
    return True


def show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def positions(hits: Sequence[int]) -> str:
    """``events 0, 3, 7`` for a message, shortened when there are many."""
    if not hits:
        return "no event"
    shown = ", ".join(str(i) for i in hits[:_SHOWN_POSITIONS])
    more = f" and {len(hits) - _SHOWN_POSITIONS} more" if len(hits) > _SHOWN_POSITIONS else ""
    return ("event " if len(hits) == 1 else "events ") + shown + more


def match_trajectory(
    value: Mapping[str, Any], events: list[Event], unresolved: Sequence[str] = ()
) -> list[str]:
    """One readable failure per required matcher not met, per forbidden matcher met, and per
    count not kept. ``unresolved`` names subagent runs the transcript refers to but lacks:
    what they did is unknown, so a check that no call happened cannot pass on their account."""
    failures = _required(value, events)
    for index, matcher in enumerate(value.get("forbidden_events", [])):
        hits = [i for i, e in enumerate(events) if event_matches(matcher, e)]
        where = f"forbidden_events[{index}] {show(matcher)}"
        if hits:
            more = f" (and {len(hits) - 1} more)" if len(hits) > 1 else ""
            failures.append(f"{PREFIX}: {where} matched event {hits[0]} "
                            f"{show(events[hits[0]])}{more}")
        elif unresolved and not _main_only(matcher):
            failures.append(_unjudged(where, unresolved))
    for index, count in enumerate(value.get("event_counts", [])):
        failures += _count(index, count, events, unresolved)
    return failures


def _required(value: Mapping[str, Any], events: list[Event]) -> list[str]:
    failures = []
    required = value.get("required_events", [])
    ordered = bool(value.get("required_order"))
    position, previous = 0, None  # where the next required event may start; who matched last
    for index, matcher in enumerate(required):
        start = position if ordered else 0
        hit = next((i for i in range(start, len(events)) if event_matches(matcher, events[i])),
                   None)
        if hit is not None:
            if ordered:
                position, previous = hit + 1, (index, hit)
            continue
        where = f"{PREFIX}: required_events[{index}] {show(matcher)} not found"
        hits = [i for i, e in enumerate(events) if event_matches(matcher, e)]
        if ordered and hits and previous is not None:
            # Say where the order stands and where the matcher did match: "only before the
            # earlier required events" misled when one of those matches was used by another.
            earlier, at = previous
            failures.append(
                f"{where} after event {at}, where required_events[{earlier}] matched "
                f"(required_order); it matches {positions(hits)} only, none after event {at}")
        else:
            failures.append(f"{where} in {len(events)} events")
    return failures


def _count(index: int, count: Mapping[str, Any], events: list[Event],
           unresolved: Sequence[str]) -> list[str]:
    matcher = count.get("event", {})
    hits = [i for i, e in enumerate(events) if event_matches(matcher, e)]
    where = f"event_counts[{index}] {show(matcher)}"
    found = f"found {len(hits)} ({positions(hits)})" if hits else "found none"
    if "exactly" in count:
        low = high = count["exactly"]
        wanted = f"exactly {low}"
    else:
        low, high = count.get("at_least", 0), count.get("at_most")
        bounds = ([f"at least {low}"] if "at_least" in count else []) + \
                 ([f"at most {high}"] if high is not None else [])
        wanted = " and ".join(bounds)
    failures = []
    if (high is not None and len(hits) > high) or len(hits) < low:
        failures.append(f"{PREFIX}: {where}: expected {wanted} matching events, {found}")
    elif high is not None and unresolved and not _main_only(matcher):
        failures.append(_unjudged(where, unresolved))
    return failures


def _main_only(matcher: Mapping[str, Any]) -> bool:
    return matcher.get("agent") == MAIN


def _unjudged(where: str, unresolved: Sequence[str]) -> str:
    return (f"{NOT_TESTED}: {where} cannot be judged: the subagent run(s) "
            f"{', '.join(unresolved)} are referenced but not in the transcript, and their calls "
            "are unknown (add \"agent\": \"main\" to judge the main agent alone)")
