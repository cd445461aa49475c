"""ATIF, the Agent Trajectory Interchange Format (Harbor, Terminal-Bench): one JSON document.

``steps`` hold the agent's ``message``, its ``tool_calls`` (``function_name``, ``arguments``)
and the ``observation`` results. A result that delegated to a subagent carries
``subagent_trajectory_ref``; the subagent's own trajectory is either embedded in the root's
``subagent_trajectories`` (ATIF 1.7, matched by ``trajectory_id``, or by ``session_id`` as 1.6
did) or kept in a file of its own (``trajectory_path``). Embedded subagents are read, their
events placed after the call that delegated to them and attributed to them; a subagent that is
only referenced is not in the document, so the figures of the run are withheld and checks that
need every call cannot be judged.

Figures: ``final_metrics`` (``total_cost_usd``, ``total_prompt_tokens``, which includes cached
input, ``total_completion_tokens``), else the sum of the steps' ``metrics``; the turns are the
agent's steps. ATIF states no duration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_agentic_evals.expectations.trajectory.events import (
    Event,
    Figures,
    TrajectoryError,
    Transcript,
    json_object,
    make_event,
    mapping,
)

FORMAT = "ATIF"
_METRICS = (("cost_usd", "total_cost_usd", "cost_usd"),
            ("input_tokens", "total_prompt_tokens", "prompt_tokens"),
            ("output_tokens", "total_completion_tokens", "completion_tokens"))


def is_atif_document(record: Mapping[str, Any]) -> bool:
    return isinstance(record.get("steps"), list)


class _Reader:
    """One ATIF document with the subagent trajectories it embeds."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.embedded: dict[str, Mapping[str, Any]] = {}
        for child in root.get("subagent_trajectories") or []:
            child = mapping(child)
            for key in ("trajectory_id", "session_id"):
                if isinstance(child.get(key), str):
                    self.embedded.setdefault(child[key], child)
        self.read: set[int] = {id(root)}
        self.unresolved: list[str] = []
        self.figures = Figures()

    def events(self, document: Mapping[str, Any], agent_id: str | None) -> list[Event]:
        steps = document.get("steps")
        if not isinstance(steps, list):
            raise TrajectoryError("ATIF \"steps\" is not a list")
        self._figures(document, steps)
        events: list[Event] = []
        for step in steps:
            if not isinstance(step, dict):
                raise TrajectoryError("an ATIF step is not an object")
            events += self._step(step, agent_id)
        return events

    def _step(self, step: Mapping[str, Any], agent_id: str | None) -> list[Event]:
        events = []
        message = step.get("message")
        if isinstance(message, str) and message and step.get("source", "agent") == "agent":
            events.append(make_event("output", content=message, agent_id=agent_id))
        for call in step.get("tool_calls") or []:
            if isinstance(call, dict):
                events.append(make_event("tool_use", call.get("function_name", call.get("name")),
                                         json_object(call.get("arguments")), agent_id=agent_id))
        observation = step.get("observation")
        results = mapping(observation).get("results")
        if isinstance(results, list):
            for result in results:
                content = result.get("content") if isinstance(result, dict) else result
                if content is not None:
                    events.append(make_event("tool_result", content=content, agent_id=agent_id))
                for ref in mapping(result).get("subagent_trajectory_ref") or []:
                    events += self._subagent(mapping(ref), step.get("step_id"))
        elif observation:
            events.append(make_event("tool_result", content=observation, agent_id=agent_id))
        return events

    def _subagent(self, ref: Mapping[str, Any], step_id: Any) -> list[Event]:
        key = next((ref[k] for k in ("trajectory_id", "session_id") if isinstance(ref.get(k), str)),
                   None)
        child = self.embedded.get(key) if key is not None else None
        if child is None:
            where = ref.get("trajectory_path") or key or "?"
            self.unresolved.append(f"{where!r} (step {step_id})")
            return []
        if id(child) in self.read:
            return []  # referenced twice, or a reference loop: read once
        self.read.add(id(child))
        return self.events(child, key)

    def leftovers(self) -> list[Event]:
        """Embedded subagents no step refers to: their calls still happened."""
        events: list[Event] = []
        for key, child in self.embedded.items():
            if id(child) not in self.read:
                self.read.add(id(child))
                events += self.events(child, key)
        return events

    def _figures(self, document: Mapping[str, Any], steps: list[Any]) -> None:
        final = mapping(document.get("final_metrics"))
        steps_metrics = [mapping(mapping(step).get("metrics")) for step in steps]
        for figure, total_key, step_key in _METRICS:
            if total_key in final:
                self.figures.add(figure, final[total_key], f"final_metrics {total_key}")
            else:
                for metrics in steps_metrics:
                    self.figures.add(figure, metrics.get(step_key), f"steps' metrics {step_key}")
        agent_steps = sum(mapping(step).get("source") == "agent" for step in steps)
        self.figures.add("turns", agent_steps, "agent steps")


def parse(records: list[Any]) -> Transcript:
    if len(records) != 1 or not isinstance(records[0], dict):
        raise TrajectoryError("an ATIF trajectory is one JSON document with \"steps\"")
    reader = _Reader(records[0])
    events = reader.events(records[0], None)
    events += reader.leftovers()
    return Transcript(FORMAT, events, reader.figures, unresolved_subagents=reader.unresolved,
                      looked_for="steps with tool_calls, agent messages or observations")
