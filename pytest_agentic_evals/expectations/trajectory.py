"""Trajectory checks: which calls an agent made, and in what order (``expected.trajectory``).

A trajectory is read from the file at ``AGENTIC_EVALS_TRAJECTORY`` (source ``"env"``, the
default), from the trial's captured stdout (``"stdout"``) or from a path relative to the
case's working directory, then normalised into a list of events::

    {"type": "tool_use" | "tool_result" | "output", "name": str | None,
     "parameters": dict, "content": str | None}

Recognised formats, detected from the text itself:

1. The runner's own JSONL: one event per line, already in the shape above (``name``,
   ``parameters`` and ``content`` may be left out), e.g.
   ``{"type": "tool_use", "name": "Bash", "parameters": {"command": "git status"}}``.
2. Claude Code ``--output-format stream-json`` (JSONL of ``assistant``/``user``/``result``
   messages).
3. Codex ``exec --json`` (JSONL of ``item.*`` events).
4. OpenTelemetry GenAI spans, as one JSON document: a list of spans or an OTLP export
   (``{"resourceSpans": [...]}``); ``execute_tool`` spans become ``tool_use`` events.
5. ATIF, one JSON document with ``steps``.

A trajectory that cannot be found (no file, empty) is reported with a message starting with
``TRAJECTORY_NOT_FOUND``: the check was not carried out, and the trial judges that BLOCKED,
never PASS. A malformed one (bad JSON, unknown shape, too large) is an ordinary failure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_agentic_evals.expectations.observation import ArtifactError, Observation
from pytest_agentic_evals.jsonvalues import json_equal

MAX_TRAJECTORY_BYTES = 64 * 1024 * 1024
TRAJECTORY_NOT_FOUND = "trajectory not found"

Event = dict[str, Any]


class TrajectoryNotFound(Exception):
    """No trajectory to check; the message says where it was looked for."""


class TrajectoryError(Exception):
    """A trajectory that is there but cannot be read as one."""


def check_trajectory(value: Mapping[str, Any], observation: Observation) -> list[str]:
    """The ``trajectory`` expectation kind."""
    source = value.get("source", "env")
    try:
        events = parse_trajectory(read_trajectory_text(source, observation))
    except TrajectoryNotFound as exc:
        return [f"{TRAJECTORY_NOT_FOUND}: {exc}"]
    except TrajectoryError as exc:
        return [f"trajectory: {exc}"]
    return match_trajectory(value, events)


def read_trajectory_text(source: str, observation: Observation) -> str:
    if source == "stdout":
        path, label = observation.stdout_path, "stdout"
    elif source == "env":
        if observation.trajectory_path is None:
            raise TrajectoryNotFound("AGENTIC_EVALS_TRAJECTORY is not set for this trial")
        path = observation.trajectory_path
        label = f"{path} (AGENTIC_EVALS_TRAJECTORY)"
    else:
        try:
            path = observation.resolve(source)
        except ArtifactError as exc:
            raise TrajectoryError(str(exc)) from None
        label = source
        if path.is_file() and observation.not_before_ns is not None and \
                path.stat().st_mtime_ns < observation.not_before_ns:
            raise TrajectoryNotFound(f"{label} was not written during this trial")
    return read_bounded(path, label)


def read_bounded(path: Path, label: str) -> str:
    if not path.is_file():
        raise TrajectoryNotFound(f"{label} does not exist")
    size = path.stat().st_size
    if size > MAX_TRAJECTORY_BYTES:
        raise TrajectoryError(f"{label} is {size} bytes, larger than the "
                              f"{MAX_TRAJECTORY_BYTES // (1024 * 1024)} MiB a trajectory may be")
    text = path.read_bytes().decode("utf-8", errors="replace")
    if not text.strip():
        raise TrajectoryNotFound(f"{label} is empty")
    return text


def parse_trajectory(text: str) -> list[Event]:
    """Normalised events from a trajectory in any recognised format."""
    if not text.strip():
        raise TrajectoryNotFound("the trajectory is empty")
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        document = None
    except RecursionError:
        raise TrajectoryError("the trajectory is nested too deeply to parse") from None
    if isinstance(document, list):
        if document and all(isinstance(item, dict) and _is_span(item) for item in document):
            return _otel_events(document)
        return _jsonl_events(document)
    if isinstance(document, dict):
        if "resourceSpans" in document:
            return _otel_events(_otlp_spans(document))
        if "steps" in document:
            return _atif_events(document)
        return _jsonl_events([document])  # a JSONL trajectory of a single line
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise TrajectoryError(f"line {number} is not valid JSON ({exc})") from None
        except RecursionError:
            raise TrajectoryError(f"line {number} is nested too deeply to parse") from None
    return _jsonl_events(records)


def _event(kind: str, name: Any = None, parameters: Any = None, content: Any = None) -> Event:
    return {
        "type": kind,
        "name": name if isinstance(name, str) else None,
        "parameters": parameters if isinstance(parameters, dict) else {},
        "content": _as_text(content) if content is not None else None,
    }


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, dict) and "text" in b for b in value):
        return "\n".join(str(b["text"]) for b in value)
    return json.dumps(value, ensure_ascii=False)


def _jsonl_events(records: Iterable[Any]) -> list[Event]:
    events: list[Event] = []
    codex_items: dict[Any, Mapping[str, Any]] = {}  # by id: the item's last state, in order
    for number, record in enumerate(records, 1):
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            raise TrajectoryError(f"record {number} is not a recognised trajectory event "
                                  "(an object with a string \"type\")")
        kind = record["type"]
        if kind in ("assistant", "user") and isinstance(record.get("message"), dict):
            events += _claude_message(kind, record["message"])
        elif kind == "result" and "result" in record:
            events.append(_event("output", content=record["result"]))
        elif kind == "system" and "subtype" in record:
            continue  # Claude Code's init record: tools and model, no calls
        elif kind.startswith("item.") and isinstance(record.get("item"), dict):
            item = record["item"]
            key = item.get("id", f"#{number}")
            if key not in codex_items:
                events.append({"_codex": key})
            codex_items[key] = item  # started, updated, completed: the last state counts
        elif kind.startswith(("thread.", "turn.")):
            continue  # Codex bookkeeping
        else:
            params = record.get("parameters")
            if params is not None and not isinstance(params, dict):
                raise TrajectoryError(f"record {number}: \"parameters\" must be an object")
            events.append(_event(kind, record.get("name"), params, record.get("content")))
    resolved: list[Event] = []
    for event in events:
        if "_codex" in event:
            resolved += _codex_item(codex_items[event["_codex"]])
        else:
            resolved.append(event)
    return resolved


def _claude_message(role: str, message: Mapping[str, Any]) -> list[Event]:
    content = message.get("content")
    if not isinstance(content, list):
        return []  # a plain-string user prompt
    events = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_use":
            events.append(_event("tool_use", block.get("name"), block.get("input")))
        elif kind == "text" and role == "assistant":
            events.append(_event("output", content=block.get("text", "")))
        elif kind == "tool_result":
            events.append(_event("tool_result", content=block.get("content", "")))
    return events


def _codex_item(item: Mapping[str, Any]) -> list[Event]:
    kind = item.get("type")
    if kind == "command_execution":
        return [_event("tool_use", "shell", {"command": item.get("command")},
                       item.get("aggregated_output"))]
    if kind == "file_change":
        return [_event("tool_use", "apply_patch", {"changes": item.get("changes")})]
    if kind == "mcp_tool_call":
        arguments = item.get("arguments")
        if isinstance(arguments, str):
            arguments = _json_object(arguments)
        params = dict(arguments) if isinstance(arguments, dict) else {}
        return [_event("tool_use", item.get("tool"), params, item.get("result"))]
    if kind == "web_search":
        return [_event("tool_use", "web_search", {"query": item.get("query")})]
    if kind == "agent_message":
        return [_event("output", content=item.get("text", ""))]
    return []  # reasoning, todo lists, errors: not calls


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return {"_raw": text}
    return value if isinstance(value, dict) else {"_raw": value}


def _is_span(item: Mapping[str, Any]) -> bool:
    return "attributes" in item and ("spanId" in item or "span_id" in item or "name" in item)


def _otlp_spans(document: Mapping[str, Any]) -> list[Any]:
    spans: list[Any] = []
    for resource in document.get("resourceSpans") or []:
        for scope in (resource or {}).get("scopeSpans") or []:
            spans += (scope or {}).get("spans") or []
    return spans


def _otlp_value(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_otlp_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return _attributes(value["kvlistValue"].get("values", []))
    return value


def _attributes(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, list):
        return {a["key"]: _otlp_value(a.get("value")) for a in raw
                if isinstance(a, dict) and "key" in a}
    return {}


def _otel_events(spans: list[Any]) -> list[Event]:
    def start(indexed: tuple[int, Any]) -> tuple[int, int]:
        span = indexed[1]
        raw = span.get("startTimeUnixNano", span.get("start_time")) if isinstance(span, dict) \
            else None
        try:
            return (int(raw), indexed[0]) if raw is not None else (0, indexed[0])
        except (TypeError, ValueError):
            return (0, indexed[0])

    events = []
    for _, span in sorted(enumerate(spans), key=start):
        if not isinstance(span, dict):
            raise TrajectoryError("an OpenTelemetry span is not an object")
        attrs = _attributes(span.get("attributes"))
        if attrs.get("gen_ai.operation.name") != "execute_tool":
            continue
        arguments = attrs.get("gen_ai.tool.call.arguments")
        if isinstance(arguments, str):
            arguments = _json_object(arguments)
        events.append(_event("tool_use", attrs.get("gen_ai.tool.name"), arguments,
                             attrs.get("gen_ai.tool.call.result")))
    return events


def _atif_events(document: Mapping[str, Any]) -> list[Event]:
    steps = document.get("steps")
    if not isinstance(steps, list):
        raise TrajectoryError("ATIF \"steps\" is not a list")
    events = []
    for step in steps:
        if not isinstance(step, dict):
            raise TrajectoryError("an ATIF step is not an object")
        message = step.get("message")
        if isinstance(message, str) and message and step.get("source", "agent") == "agent":
            events.append(_event("output", content=message))
        for call in step.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            arguments = call.get("arguments")
            if isinstance(arguments, str):
                arguments = _json_object(arguments)
            events.append(_event("tool_use", call.get("function_name", call.get("name")),
                                 arguments))
        observation = step.get("observation")
        if observation:
            results = observation.get("results") if isinstance(observation, dict) else None
            if isinstance(results, list):
                for result in results:
                    content = result.get("content") if isinstance(result, dict) else result
                    events.append(_event("tool_result", content=content))
            else:
                events.append(_event("tool_result", content=observation))
    return events


# Matching


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
        if key.endswith("_contains"):
            found, value = _lookup(event, key[: -len("_contains")])
            if not found or value is None or str(wanted) not in _as_text(value):
                return False
        else:
            found, value = _lookup(event, key)
            if not found or not json_equal(value, wanted):
                return False
    return True


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def match_trajectory(value: Mapping[str, Any], events: list[Event]) -> list[str]:
    """One readable failure per required matcher not met and per forbidden matcher met."""
    failures = []
    required = value.get("required_events", [])
    if value.get("required_order"):
        position = 0
        for index, matcher in enumerate(required):
            hit = next((i for i in range(position, len(events))
                        if event_matches(matcher, events[i])), None)
            if hit is not None:
                position = hit + 1
                continue
            anywhere = any(event_matches(matcher, e) for e in events)
            where = ("only before the earlier required events (required_order)" if anywhere
                     else f"in {len(events)} events")
            failures.append(f"trajectory: required_events[{index}] {_show(matcher)} "
                            f"not found {where}")
    else:
        for index, matcher in enumerate(required):
            if not any(event_matches(matcher, e) for e in events):
                failures.append(f"trajectory: required_events[{index}] {_show(matcher)} "
                                f"not found in {len(events)} events")
    for index, matcher in enumerate(value.get("forbidden_events", [])):
        hits = [i for i, e in enumerate(events) if event_matches(matcher, e)]
        if hits:
            more = f" (and {len(hits) - 1} more)" if len(hits) > 1 else ""
            failures.append(f"trajectory: forbidden_events[{index}] {_show(matcher)} matched "
                            f"event {hits[0]} {_show(events[hits[0]])}{more}")
    return failures
