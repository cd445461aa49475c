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
# The tools that start a subagent (Claude Code renamed Task to Agent).
SUBAGENT_TOOLS = ("Task", "Agent")
# The input Claude bills is split into three counts; the budget bounds all of it.
_INPUT_COUNTS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def is_claude_record(record: Mapping[str, Any]) -> bool:
    kind = record.get("type")
    return kind in MESSAGE_TYPES and any(
        key in record for key in ("message", "session_id", "subtype", "parent_tool_use_id"))


def parse(records: list[Any]) -> Transcript:
    events: list[Event] = []
    figures = Figures()
    messages = 0
    delegated: list[str] = []  # ids of the Task calls that started a subagent
    heard_from: set[str] = set()  # ids a subagent's messages name as their parent
    for _, record in typed_records(records, "a Claude Code stream-json message"):
        kind = record["type"]
        agent_id = _subagent(record)
        if agent_id is not None:
            heard_from.add(agent_id)
        if kind in ("assistant", "user") and isinstance(record.get("message"), dict):
            messages += 1
            events += _message_events(kind, record["message"], agent_id, delegated)
        elif kind == "result":
            if isinstance(record.get("result"), str):
                events.append(make_event("output", content=record["result"]))
            _result_figures(record, figures)
    unheard = [i for i in delegated if i not in heard_from]
    # A session file's subagent messages do not name their Task call: each subagent heard from
    # that way stands for one of the calls.
    unheard = unheard[len({a for a in heard_from if a not in delegated}):]
    return Transcript(
        FORMAT, events, figures,
        unresolved_subagents=[f"Task call {i}" for i in unheard],
        # The result message states the whole session's cost, tokens and time.
        understated=("tool_calls", "turns"),
        calls_unknown=None if messages or not events else (
            "it holds the result of the run but none of its messages (the output of "
            "--output-format json): which calls were made is unknown; write the trajectory "
            "with --output-format stream-json --verbose"),
        looked_for="assistant tool_use or text blocks, user tool_result blocks or a result "
                   "message")


def _subagent(record: Mapping[str, Any]) -> str | None:
    """The subagent a message belongs to: stream-json names the Task call that started it in
    ``parent_tool_use_id``; a session file marks a subagent's messages ``isSidechain``."""
    parent = record.get("parent_tool_use_id")
    if isinstance(parent, str) and parent:
        return parent
    if record.get("isSidechain") is True:
        agent = record.get("agentId")
        return agent if isinstance(agent, str) and agent else "sidechain"
    return None


def _message_events(role: str, message: Mapping[str, Any], agent_id: str | None,
                    delegated: list[str]) -> list[Event]:
    """The events of one message; the ids of the calls in it that start a subagent are added
    to ``delegated``."""
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
            if block.get("name") in SUBAGENT_TOOLS and isinstance(block.get("id"), str):
                delegated.append(block["id"])
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
