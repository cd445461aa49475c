"""OpenTelemetry spans: OTLP JSON exports, the Collector's file exporter, and single spans.

Accepted containers:

- an OTLP JSON export ``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}``, and the
  older spelling ``instrumentationLibrarySpans`` (OTLP before 0.15);
- the Collector's ``file`` exporter: one such export per line;
- spans themselves: a JSON list of spans, one span object, or spans one after another (the
  Python SDK's console exporter prints them so).

A span is a tool call when it follows the GenAI semantic conventions
(``gen_ai.operation.name`` = ``execute_tool``) or an older or vendor spelling: a
``gen_ai.tool.name`` or ``tool.name`` attribute, or an OpenInference ``TOOL`` span. Its name,
arguments and result are read from the first attribute present in ``NAME_KEYS``,
``ARGUMENT_KEYS`` and ``RESULT_KEYS``. Events are ordered by start time.

A tool span under two or more ``invoke_agent`` spans was made by a subagent: the nearest one
names it. Token counts come from the inference spans (``chat`` and the like), or, when none
carries them, from the outermost agent spans; the duration runs from the first span's start to
the last one's end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
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

FORMAT = "OpenTelemetry spans"
NAME_KEYS = ("gen_ai.tool.name", "tool.name", "tool_call.function.name")
ARGUMENT_KEYS = (
    "gen_ai.tool.call.arguments",      # GenAI semantic conventions
    "tool.arguments", "tool.args",     # older and vendor spellings
    "gcp.vertex.agent.tool_call_args",  # Google ADK
    "tool_call.function.arguments",    # OpenInference
    "input.value",                     # OpenInference, on TOOL spans
)
RESULT_KEYS = (
    "gen_ai.tool.call.result", "tool.result", "tool.output",
    "gcp.vertex.agent.tool_response", "output.value",
)
INPUT_TOKEN_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens",
                    "llm.token_count.prompt")
OUTPUT_TOKEN_KEYS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                     "llm.token_count.completion")
_INFERENCE = ("chat", "text_completion", "generate_content")
_SCOPE_KEYS = ("scopeSpans", "instrumentationLibrarySpans", "scope_spans",
               "instrumentation_library_spans")


def is_otlp_export(record: Mapping[str, Any]) -> bool:
    return "resourceSpans" in record or "resource_spans" in record


def is_span(record: Mapping[str, Any]) -> bool:
    return "attributes" in record and any(
        key in record for key in ("spanId", "span_id", "context", "traceId", "name"))


@dataclass(frozen=True)
class Span:
    id: str | None
    parent: str | None
    name: str
    start: int | None
    end: int | None
    attributes: Mapping[str, Any]

    @property
    def operation(self) -> Any:
        return self.attributes.get("gen_ai.operation.name")

    @property
    def is_tool(self) -> bool:
        if self.operation == "execute_tool":
            return True
        if str(self.attributes.get("openinference.span.kind", "")).upper() == "TOOL":
            return True
        return self.operation is None and any(key in self.attributes for key in NAME_KEYS)

    @property
    def is_agent(self) -> bool:
        return self.operation == "invoke_agent" or \
            str(self.attributes.get("openinference.span.kind", "")).upper() == "AGENT"

    @property
    def is_inference(self) -> bool:
        """A model call: by its operation, or a span of no operation that counts tokens."""
        if self.operation in _INFERENCE or \
                str(self.attributes.get("openinference.span.kind", "")).upper() == "LLM":
            return True
        return self.operation is None and not self.is_tool and not self.is_agent and \
            _usage(self) != (None, None)


def parse(records: list[Any]) -> Transcript:
    spans: list[Span] = []
    for number, record in enumerate(records, 1):
        if isinstance(record, dict) and is_otlp_export(record):
            spans += [_span(raw) for raw in _exported_spans(record)]
        elif isinstance(record, dict) and is_span(record):
            spans.append(_span(record))
        else:
            raise TrajectoryError(f"record {number} is neither an OTLP export "
                                  "(resourceSpans) nor a span (an object with attributes)")
    by_id = {span.id: span for span in spans if span.id}
    ordered = [span for _, span in sorted(
        enumerate(spans), key=lambda pair: (pair[1].start or 0, pair[0]))]
    events = [_tool_event(span, _agents_above(span, by_id)) for span in ordered if span.is_tool]
    return Transcript(FORMAT, events, _figures(spans, by_id),
                      looked_for="tool spans (gen_ai.operation.name execute_tool, "
                                 "gen_ai.tool.name, tool.name or an OpenInference TOOL span)")


def _exported_spans(export: Mapping[str, Any]) -> list[Any]:
    spans: list[Any] = []
    for resource in export.get("resourceSpans", export.get("resource_spans")) or []:
        for key in _SCOPE_KEYS:
            for scope in mapping(resource).get(key) or []:
                spans += mapping(scope).get("spans") or []
    for position, span in enumerate(spans):
        if not isinstance(span, dict):
            raise TrajectoryError(f"span {position} of an OTLP export is not an object")
    return spans


def _span(raw: Mapping[str, Any]) -> Span:
    context = mapping(raw.get("context"))
    return Span(
        id=_text(raw.get("spanId", raw.get("span_id", context.get("span_id")))),
        parent=_text(raw.get("parentSpanId", raw.get("parent_span_id", raw.get("parent_id")))),
        name=str(raw.get("name", "")),
        start=_time(raw.get("startTimeUnixNano", raw.get("start_time_unix_nano",
                                                         raw.get("start_time")))),
        end=_time(raw.get("endTimeUnixNano", raw.get("end_time_unix_nano",
                                                     raw.get("end_time")))),
        attributes=_attributes(raw.get("attributes")),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _time(value: Any) -> int | None:
    """Nanoseconds since the epoch from OTLP's integer (often a string) or an ISO time."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        return None
    if value.isdigit():
        return int(value)
    text = value.replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:  # datetime takes at most six fraction digits before Python 3.11
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = f"{head}.{rest[:min(digits, 6)]}{rest[digits:]}"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return int(moment.timestamp() * 1_000_000) * 1000


def _value(value: Any) -> Any:
    """An OTLP AnyValue as a plain JSON value."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "arrayValue" in value:
        return [_value(v) for v in mapping(value["arrayValue"]).get("values") or []]
    if "kvlistValue" in value:
        return _attributes(mapping(value["kvlistValue"]).get("values") or [])
    return value


def _attributes(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, list):
        return {item["key"]: _value(item.get("value")) for item in raw
                if isinstance(item, dict) and isinstance(item.get("key"), str)}
    return {}


def _first(attributes: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    return next((attributes[key] for key in keys if key in attributes), None)


def _agents_above(span: Span, by_id: Mapping[str, Span]) -> list[Span]:
    """The agent spans above ``span``, nearest first (a loop in the parents ends the walk)."""
    agents, seen, parent = [], {span.id}, span.parent
    while parent is not None and parent in by_id and parent not in seen:
        seen.add(parent)
        above = by_id[parent]
        if above.is_agent:
            agents.append(above)
        parent = above.parent
    return agents


def _tool_event(span: Span, agents: list[Span]) -> Event:
    attributes = span.attributes
    name = _first(attributes, NAME_KEYS)
    if not isinstance(name, str) or not name:
        name = span.name.removeprefix("execute_tool").strip() or None
    subagent = None
    if len(agents) >= 2:  # the outermost agent is the main one
        nearest = agents[0].attributes
        subagent = str(nearest.get("gen_ai.agent.name") or nearest.get("gen_ai.agent.id")
                       or agents[0].name or agents[0].id)
    arguments = _first(attributes, ARGUMENT_KEYS)
    return make_event("tool_use", name, json_object(arguments) if arguments is not None else {},
                      _first(attributes, RESULT_KEYS), subagent)


def _figures(spans: list[Span], by_id: Mapping[str, Span]) -> Figures:
    figures = Figures()
    inference = [span for span in spans if span.is_inference]
    counted = [span for span in inference if _usage(span) != (None, None)]
    source = "inference spans"
    if not counted:  # agent spans may carry the run's totals; count the outermost only
        counted = [span for span in spans if span.is_agent and _usage(span) != (None, None)
                   and not _agents_above(span, by_id)]
        source = "outermost agent spans"
    for span in counted:
        given, made = _usage(span)
        figures.add("input_tokens", given, f"gen_ai.usage input tokens of the {source}")
        figures.add("output_tokens", made, f"gen_ai.usage output tokens of the {source}")
    if inference:
        figures.add("turns", len(inference), "inference spans (chat and the like)")
    starts = [span.start for span in spans if span.start is not None]
    ends = [span.end for span in spans if span.end is not None]
    if starts and ends and max(ends) >= min(starts):
        figures.add("duration_seconds", (max(ends) - min(starts)) / 1e9,
                    "first span start to last span end")
    return figures


def _usage(span: Span) -> tuple[Any, Any]:
    return _first(span.attributes, INPUT_TOKEN_KEYS), _first(span.attributes, OUTPUT_TOKEN_KEYS)
