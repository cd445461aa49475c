"""What every trajectory format is normalised into: events, the run's figures, and errors.

An event is a plain dict, so that matchers can address any field with a dotted path::

    {"type": "tool_use" | "tool_result" | "output", "name": str | None,
     "parameters": dict, "content": str | None,
     "agent": "main" | "subagent", "agent_id": str | None}

``agent`` tells the main agent's calls from a subagent's; ``agent_id`` names the subagent
(the id of the call that started it, its thread or its trajectory, as the format says it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

Event = dict[str, Any]
MAIN, SUBAGENT = "main", "subagent"

# The figures of a run a budget can bound, with the words messages use for them.
FIGURES = {
    "cost_usd": "cost",
    "input_tokens": "input token count",
    "output_tokens": "output token count",
    "turns": "turn count",
    "tool_calls": "tool call count",
    "duration_seconds": "duration",
}


class TrajectoryNotFound(Exception):
    """No trajectory to check; the message says where it was looked for."""


class TrajectoryError(Exception):
    """A trajectory that is there but cannot be read as one."""


class TrajectoryNotUnderstood(Exception):
    """A trajectory in a shape this version does not read: its checks cannot be judged (a
    forbidden call it holds in a field no parser reads would pass as never made)."""


def make_event(
    kind: str,
    name: Any = None,
    parameters: Any = None,
    content: Any = None,
    agent_id: str | None = None,
) -> Event:
    """An event in the normalised shape; a call made under ``agent_id`` is a subagent's."""
    return {
        "type": kind,
        "name": name if isinstance(name, str) else None,
        "parameters": parameters if isinstance(parameters, dict) else {},
        "content": as_text(content) if content is not None else None,
        "agent": MAIN if agent_id is None else SUBAGENT,
        "agent_id": agent_id,
    }


def as_text(value: Any) -> str:
    """Text for substring matching: strings as they are, text blocks joined, the rest as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, dict) and "text" in b for b in value):
        return "\n".join(str(b["text"]) for b in value)
    return json.dumps(value, ensure_ascii=False)


def json_object(value: Any) -> dict[str, Any]:
    """Tool arguments as an object: formats carry them as objects or as JSON text."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # not JSON, or a number too long to read
            return {"_raw": value}
        return value if isinstance(value, dict) else {"_raw": value}
    return {} if value is None else {"_raw": value}


def _representable(value: int | float) -> bool:
    """Whether a figure is a finite float, or an integer within a float's range (what every
    JSON reader and every sum over trials can take)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def number(value: Any) -> int | float | None:
    """A figure as the transcript states it: a finite, non-negative JSON number, else None.

    A figure in another shape (a string, a boolean, NaN) is treated as absent, so that a
    budget over it is not tested rather than judged on a guess.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if value >= 0 else None


@dataclass
class Figures:
    """The run's figures as a transcript states them, and where each one came from."""

    values: dict[str, int | float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    withheld: dict[str, str] = field(default_factory=dict)
    """Figures the transcript seems to give but that would understate the run, or that are
    more than a number can hold, with why."""

    def add(self, name: str, value: Any, source: str) -> None:
        """Add a figure (several records of one run add up); ignore one that is not a number.
        A figure that is (or adds up to) more than a float holds is no figure of a run: it is
        withheld, so that a budget over it is not tested and the report stays JSON."""
        if name in self.withheld:
            return
        too_large = isinstance(value, float) and math.isinf(value)
        amount = number(value)
        if amount is not None:
            total = self.values.get(name, 0) + amount
            too_large = not _representable(total)
        if too_large:
            self.withhold(f"the {FIGURES[name]} ({source}) is more than a number can hold",
                          name)
            return
        if amount is None:
            return
        self.values[name] = total
        self.sources.setdefault(name, source)

    def add_all(self, other: Figures) -> None:
        for name, value in other.values.items():
            self.add(name, value, other.sources[name])

    def withhold(self, reason: str, *names: str) -> None:
        for name in names:
            self.values.pop(name, None)
            self.withheld[name] = reason


@dataclass
class Transcript:
    """A trajectory read and normalised: its events and the figures of the run."""

    format: str
    """The format it was read as, for messages ("Claude Code stream-json", ...)."""
    events: list[Event]
    figures: Figures = field(default_factory=Figures)
    unresolved_subagents: list[str] = field(default_factory=list)
    """Subagent runs the transcript refers to but does not contain (ATIF file references, a
    Claude Code Task call or a Codex spawned thread with none of its messages)."""
    understated: tuple[str, ...] = tuple(FIGURES)
    """The figures those missing runs would understate (all of them, unless the format states
    the run's totals elsewhere)."""
    calls_unknown: str | None = None
    """Why the transcript cannot tell which calls were made (it only states the outcome)."""
    looked_for: str = "events"
    """What the parser recognises, for the message when it found nothing."""
    label: str = "the trajectory"
    """Where it was read from."""

    def __post_init__(self) -> None:
        # The count of calls is known whenever the calls themselves are: never for a
        # transcript that yielded nothing (a format not understood is not "no calls").
        if self.calls_unknown is not None:
            self.figures.withhold(self.calls_unknown, "tool_calls")
        if self.events and "tool_calls" not in self.figures.withheld:
            count = sum(event["type"] == "tool_use" for event in self.events)
            self.figures.values["tool_calls"] = count
            self.figures.sources["tool_calls"] = "tool_use events in the transcript"
        if self.unresolved_subagents:
            self.figures.withhold(
                f"the subagent run(s) {', '.join(self.unresolved_subagents)} are referenced "
                "but not in the transcript, so its figures understate the run",
                *self.understated,
            )

    def figure(self, name: str) -> int | float | None:
        return self.figures.values.get(name)

    def missing_reason(self, name: str) -> str:
        """Why the transcript gives no figure ``name``."""
        if name in self.figures.withheld:
            return self.figures.withheld[name]
        if name == "tool_calls" and not self.events:
            return f"{self.label} yielded no events, so its calls cannot be counted"
        return f"{self.label} ({self.format}) states no {FIGURES[name]}"

    def usage(self) -> dict[str, Any]:
        """The figures for the report: every figure, None where the transcript gives none."""
        return {"format": self.format, **{name: self.figure(name) for name in FIGURES}}


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is an object, else an empty one: transcripts are read defensively."""
    return value if isinstance(value, dict) else {}


def typed_records(records: list[Any], what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of a JSON Lines transcript, numbered from 1, each checked to be an object
    with a string ``type``; ``what`` names a record of the format in the error."""
    for number, record in enumerate(records, 1):
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            raise TrajectoryError(f"record {number} is not {what} "
                                  "(an object with a string \"type\")")
        yield number, record
