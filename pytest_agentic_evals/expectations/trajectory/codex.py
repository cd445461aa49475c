"""Codex ``exec --json``: JSON Lines of thread, turn and item events.

An item (a command, a patch, an MCP tool call, a message...) is reported as it starts, updates
and completes; its last state counts, in the order items first appeared. Items name their kind
in ``type``; Codex releases before the current schema (up to 0.44) named it ``item_type`` and
called the agent's message ``assistant_message``: both are read. ``turn.completed`` carries
the turn's token usage.

Subagents: the thread of the first ``thread.started`` is the main agent's. A
``collab_tool_call`` (``spawn_agent``, ``send_input``, ``wait``...) names the thread that made
it in ``sender_thread_id``; a stream that goes on with another ``thread.started`` (a subagent's
thread written to the same file) has its items attributed to that thread. A thread a
``collab_tool_call`` names in ``receiver_thread_ids`` that never starts in the stream is a
subagent whose calls are unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_agentic_evals.expectations.trajectory.events import (
    Event,
    Figures,
    Transcript,
    json_object,
    make_event,
    mapping,
    typed_records,
)

FORMAT = "Codex exec --json"


def is_codex_record(record: Mapping[str, Any]) -> bool:
    kind = record.get("type")
    return isinstance(kind, str) and kind.startswith(("item.", "thread.", "turn."))


def parse(records: list[Any]) -> Transcript:
    main_thread: str | None = None
    thread: str | None = None
    threads: set[str] = set()
    order: list[tuple[str | None, str]] = []
    items: dict[tuple[str | None, str], tuple[Mapping[str, Any], str | None]] = {}
    figures = Figures()
    for number, record in typed_records(records, "a Codex exec --json event"):
        kind = record["type"]
        if kind == "thread.started" and isinstance(record.get("thread_id"), str):
            thread = record["thread_id"]
            main_thread = main_thread or thread
            threads.add(thread)
        elif kind == "turn.completed":
            usage = mapping(record.get("usage"))
            # Codex counts cached input inside input_tokens (cached_input_tokens is a subset).
            figures.add("input_tokens", usage.get("input_tokens"), "turn.completed usage "
                        "input_tokens")
            figures.add("output_tokens", usage.get("output_tokens"), "turn.completed usage "
                        "output_tokens")
            figures.add("turns", 1, "turn.completed events (Codex's turns)")
        elif kind.startswith("item.") and isinstance(record.get("item"), dict):
            item = record["item"]
            key = (thread, str(item.get("id", f"#{number}")))
            if key not in items:
                order.append(key)
            subagent = thread if thread is not None and thread != main_thread else None
            items[key] = (item, subagent)  # started, updated, completed: the last state counts
    events: list[Event] = []
    spawned: list[str] = []
    for key in order:
        item, subagent = items[key]
        if item.get("type", item.get("item_type")) == "collab_tool_call":
            receivers = item.get("receiver_thread_ids")
            spawned += [t for t in receivers if isinstance(t, str) and t not in spawned] \
                if isinstance(receivers, list) else []
        sender = item.get("sender_thread_id")
        if isinstance(sender, str) and main_thread is not None:
            subagent = sender if sender != main_thread else None
        events += _item_events(item, subagent)
    return Transcript(FORMAT, events, figures,
                      unresolved_subagents=[f"thread {t}" for t in spawned if t not in threads],
                      looked_for="items of a known type (command_execution, file_change, "
                                 "mcp_tool_call, collab_tool_call, web_search, agent_message)")


def _item_events(item: Mapping[str, Any], agent_id: str | None) -> list[Event]:
    kind = item.get("type", item.get("item_type"))
    if kind == "command_execution":
        return [make_event("tool_use", "shell", {"command": item.get("command")},
                           item.get("aggregated_output"), agent_id)]
    if kind == "file_change":
        return [make_event("tool_use", "apply_patch", {"changes": item.get("changes")},
                           agent_id=agent_id)]
    if kind == "mcp_tool_call":
        return [make_event("tool_use", item.get("tool"), dict(json_object(item.get("arguments"))),
                           item.get("result"), agent_id)]
    if kind == "collab_tool_call":
        parameters = {key: item[key] for key in ("prompt", "receiver_thread_ids") if key in item}
        return [make_event("tool_use", item.get("tool"), parameters, agent_id=agent_id)]
    if kind == "web_search":
        return [make_event("tool_use", "web_search", {"query": item.get("query")},
                           agent_id=agent_id)]
    if kind in ("agent_message", "assistant_message"):
        return [make_event("output", content=item.get("text", ""), agent_id=agent_id)]
    return []  # reasoning, plans, to-do lists, errors: not calls
