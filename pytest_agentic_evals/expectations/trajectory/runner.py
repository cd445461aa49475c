"""The runner's own JSON Lines: one event per line, already in the normalised shape.

``{"type": "tool_use", "name": "Bash", "parameters": {"command": "ls"}}``; ``name``,
``parameters``, ``content``, ``agent`` and ``agent_id`` may be left out. A line of type
``usage`` is not an event: it states figures of the run (``cost_usd``, ``input_tokens``,
``output_tokens``, ``turns``, ``duration_seconds``; several such lines add up), for agents
that write their own trajectory.

This is also what any JSON with a ``type`` is read as when no other format claims it, so it
is read strictly: a record of another type or with another key (an API response, a session
file of an agent, ``input`` where ``parameters`` is meant) is not understood, and the checks on
it are not judged, never passed on what was silently skipped.
"""

from __future__ import annotations

from typing import Any

from pytest_agentic_evals.expectations.trajectory.events import (
    FIGURES,
    SUBAGENT,
    Event,
    Figures,
    TrajectoryError,
    TrajectoryNotUnderstood,
    Transcript,
    make_event,
    typed_records,
)

FORMAT = "the runner's JSON Lines"
_STATED = tuple(name for name in FIGURES if name != "tool_calls")
EVENT_TYPES = ("tool_use", "tool_result", "output")
EVENT_KEYS = ("type", "name", "parameters", "content", "agent", "agent_id")


def parse(records: list[Any]) -> Transcript:
    events: list[Event] = []
    figures = Figures()
    for number, record in typed_records(records, "a recognised trajectory event"):
        _understood(number, record)
        if record["type"] == "usage":
            for name in _STATED:
                figures.add(name, record.get(name), f"usage records' {name}")
            continue
        params = record.get("parameters")
        if params is not None and not isinstance(params, dict):
            raise TrajectoryError(f"record {number}: \"parameters\" must be an object")
        agent_id = record.get("agent_id")
        if not isinstance(agent_id, str):
            agent_id = "" if record.get("agent") == SUBAGENT else None
        events.append(make_event(record["type"], record.get("name"), params,
                                 record.get("content"), agent_id))
    return Transcript(FORMAT, events, figures, looked_for="events (objects with a \"type\")")


def _understood(number: int, record: dict[str, Any]) -> None:
    kind = record["type"]
    if kind != "usage" and kind not in EVENT_TYPES:
        raise TrajectoryNotUnderstood(
            f"record {number} has type {kind!r}, which is neither an event of {FORMAT} "
            f"({', '.join(EVENT_TYPES)}, or usage) nor a record of another format this version "
            "reads")
    known = ("type", *_STATED) if kind == "usage" else EVENT_KEYS
    unknown = sorted(key for key in record if key not in known)
    if unknown:
        raise TrajectoryNotUnderstood(
            f"record {number} ({kind}) has {', '.join(map(repr, unknown))}, which {FORMAT} do "
            f"not have (a {kind} record has {', '.join(known)})")
