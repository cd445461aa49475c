"""Claude Code ``-p --output-format stream-json`` (``--verbose``): one JSON message per line.

``assistant`` messages carry ``tool_use`` and ``text`` blocks, ``user`` messages the
``tool_result`` blocks; a message a subagent produced carries the id of the tool call that
started it in ``parent_tool_use_id`` (null for the main agent). The closing ``result`` message
holds the run's figures: ``total_cost_usd``, ``usage``, ``num_turns``, ``duration_ms``.
Other messages (``system`` init, partial ``stream_event`` messages) carry no calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_agentic_evals.expectations.trajectory.events import (
    Event,
    Figures,
    Transcript,
    make_event,
    mapping,
    typed_records,
)

FORMAT = "Claude Code stream-json"
MESSAGE_TYPES = ("assistant", "user", "result", "system", "stream_event")
# The input Claude bills is split into three counts; the budget bounds all of it.
_INPUT_COUNTS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def is_claude_record(record: Mapping[str, Any]) -> bool:
    kind = record.get("type")
    return kind in MESSAGE_TYPES and any(
        key in record for key in ("message", "session_id", "subtype", "parent_tool_use_id"))


def parse(records: list[Any]) -> Transcript:
    events: list[Event] = []
    figures = Figures()
    for _, record in typed_records(records, "a Claude Code stream-json message"):
        kind = record["type"]
        parent = record.get("parent_tool_use_id")
        agent_id = parent if isinstance(parent, str) and parent else None
        if kind in ("assistant", "user") and isinstance(record.get("message"), dict):
            events += _message_events(kind, record["message"], agent_id)
        elif kind == "result":
            if isinstance(record.get("result"), str):
                events.append(make_event("output", content=record["result"]))
            _result_figures(record, figures)
    return Transcript(FORMAT, events, figures,
                      looked_for="assistant tool_use or text blocks, user tool_result blocks "
                                 "or a result message")


def _message_events(role: str, message: Mapping[str, Any], agent_id: str | None) -> list[Event]:
    content = message.get("content")
    if not isinstance(content, list):
        return []  # a plain-string user prompt
    events = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_use":
            events.append(make_event("tool_use", block.get("name"), block.get("input"),
                                     agent_id=agent_id))
        elif kind == "text" and role == "assistant":
            events.append(make_event("output", content=block.get("text", ""), agent_id=agent_id))
        elif kind == "tool_result":
            events.append(make_event("tool_result", content=block.get("content", ""),
                                     agent_id=agent_id))
    return events


def _result_figures(record: Mapping[str, Any], figures: Figures) -> None:
    cost_key = "total_cost_usd" if "total_cost_usd" in record else "cost_usd"
    figures.add("cost_usd", record.get(cost_key), f"result {cost_key}")
    usage = mapping(record.get("usage"))
    counts = [usage.get(key) for key in _INPUT_COUNTS if key in usage]
    if counts and all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
        figures.add("input_tokens", sum(counts), "result usage input_tokens + cache_creation_"
                    "input_tokens + cache_read_input_tokens")
    figures.add("output_tokens", usage.get("output_tokens"), "result usage output_tokens")
    figures.add("turns", record.get("num_turns"), "result num_turns")
    duration = record.get("duration_ms")
    if isinstance(duration, (int, float)) and not isinstance(duration, bool):
        figures.add("duration_seconds", duration / 1000, "result duration_ms")
