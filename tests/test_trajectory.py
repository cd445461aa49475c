"""Trajectory checks: normalising each format, matching, and the trial outcomes they lead to.

Every sample under tests/data/trajectories was written for these tests in the shape the
format's public documentation gives; none is copied from a third party.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.expectations import trajectory as tj
from pytest_agentic_evals.expectations.builtin import builtin_kinds, check_expectations
from pytest_agentic_evals.expectations.observation import Observation
from pytest_agentic_evals.expectations.trajectory import reading
from pytest_agentic_evals.loading import fixture_from_data
from pytest_agentic_evals.loading.fixture import FixtureError, fixture_schema

from conftest import MODES, Skill, make_skill, run_cli, skill_fixture

DATA = Path(__file__).parent / "data" / "trajectories"


def transcript(name: str) -> tj.Transcript:
    return tj.parse_trajectory((DATA / name).read_text())


def events(name: str) -> list[dict[str, Any]]:
    return transcript(name).events


def calls(name: str) -> list[tuple[str | None, dict[str, Any], str]]:
    """(name, parameters, agent) of each tool call."""
    return [(e["name"], e["parameters"], e["agent"]) for e in events(name)
            if e["type"] == "tool_use"]


def observation(tmp_path: Path, trajectory: str | None = None) -> Observation:
    (tmp_path / "stdout").write_text("")
    (tmp_path / "stderr").write_text("")
    path = tmp_path / "trajectory.jsonl"
    if trajectory is not None:
        path.write_text(trajectory)
    return Observation(0, tmp_path / "stdout", tmp_path / "stderr", tmp_path, tmp_path,
                       trajectory_path=path)


def check(value: dict[str, Any], obs: Observation) -> list[str]:
    return check_expectations({"trajectory": value}, obs, builtin_kinds())


def main(**fields: Any) -> dict[str, Any]:
    """An event of the main agent, as the parsers produce it."""
    return {"type": "tool_use", "name": None, "parameters": {}, "content": None,
            "agent": "main", "agent_id": None, **fields}


# Normalisation: one test per format and spelling


def test_runner_jsonl_is_taken_as_is() -> None:
    got = events("runner.jsonl")
    assert got[0] == main(name="Bash", parameters={"command": "git status --short"})
    assert got[1] == main(type="tool_result", content="M README.md")
    assert [e["type"] for e in got] == ["tool_use", "tool_result", "tool_use", "output"]


def test_runner_jsonl_may_attribute_events_and_state_figures() -> None:
    got = tj.parse_trajectory(
        '{"type": "tool_use", "name": "Bash", "agent": "subagent", "agent_id": "w1"}\n'
        '{"type": "usage", "cost_usd": 0.25, "input_tokens": 100}\n'
        '{"type": "usage", "cost_usd": 0.5}\n')
    assert got.events == [main(name="Bash", agent="subagent", agent_id="w1")]
    assert got.figure("cost_usd") == 0.75 and got.figure("input_tokens") == 100
    assert got.figure("tool_calls") == 1 and got.figure("turns") is None


def test_claude_stream_json() -> None:
    got = events("claude-stream.jsonl")
    assert [(e["type"], e["name"]) for e in got] == [
        ("output", None), ("tool_use", "Bash"), ("tool_result", None),
        ("tool_use", "Read"), ("tool_result", None), ("output", None),
    ]
    assert got[1]["parameters"] == {"command": "git status", "description": "Show status"}
    assert [got[0]["content"], got[2]["content"], got[4]["content"], got[5]["content"]] == [
        "Checking the tree.", "nothing to commit", "# Repo", "The tree is clean."]


def test_claude_subagent_calls_carry_parent_tool_use_id_and_the_result_its_figures() -> None:
    got = transcript("claude-subagent.jsonl")
    assert calls("claude-subagent.jsonl") == [
        ("Task", {"description": "Find failing test",
                  "prompt": "Run the tests and report which one fails.",
                  "subagent_type": "general-purpose"}, "main"),
        ("Bash", {"command": "python -m pytest -q", "description": "Run the test suite"},
         "subagent"),
        ("Read", {"file_path": "/work/repo/dates.py"}, "main"),
    ]
    bash = next(e for e in got.events if e["name"] == "Bash")
    assert bash["agent_id"] == "toolu_task"
    assert got.figures.values == {"cost_usd": 0.0831, "input_tokens": 1520 + 4200 + 18000,
                                  "output_tokens": 910, "turns": 6, "duration_seconds": 48.213,
                                  "tool_calls": 3}


def test_codex_exec_json_keeps_one_event_per_item() -> None:
    assert events("codex-exec.jsonl") == [
        main(name="shell", parameters={"command": "bash -lc ls"}, content="README.md\n"),
        main(name="apply_patch", parameters={"changes": [{"path": "README.md", "kind": "update"}]}),
        main(name="search", parameters={"query": "pytest"}),
        main(type="output", content="Done."),
    ]
    assert transcript("codex-exec.jsonl").figures.values == {
        "input_tokens": 10, "output_tokens": 5, "turns": 1, "tool_calls": 3}


def test_codex_older_item_type_schema() -> None:
    assert calls("codex-item-type.jsonl") == [
        ("shell", {"command": "bash -lc 'rm -rf build'"}, "main"),
        ("apply_patch", {"changes": [{"path": "setup.cfg", "kind": "update"}]}, "main"),
        ("search_issues", {"query": "is:open build"}, "main"),
    ]
    assert events("codex-item-type.jsonl")[-1]["content"] == "Cleaned the build directory."


def test_codex_collab_calls_and_a_subagent_thread() -> None:
    assert calls("codex-subagent.jsonl") == [
        ("shell", {"command": "bash -lc 'git status --short'"}, "main"),
        ("spawn_agent", {"prompt": "Run the linter and fix what it reports.",
                         "receiver_thread_ids": ["thread-worker"]}, "main"),
        ("wait", {"prompt": None, "receiver_thread_ids": ["thread-worker"]}, "main"),
        ("shell", {"command": "bash -lc 'ruff check --fix .'"}, "subagent"),
    ]
    worker = [e for e in events("codex-subagent.jsonl") if e["agent"] == "subagent"]
    assert {e["agent_id"] for e in worker} == {"thread-worker"}
    assert transcript("codex-subagent.jsonl").figures.values == {
        "input_tokens": 12000, "output_tokens": 900, "turns": 2, "tool_calls": 4}


def test_otel_span_list_in_start_order() -> None:
    assert calls("otel-spans.json") == [
        ("read_file", {"path": "notes.txt"}, "main"), ("grep", {"pattern": "TODO"}, "main")]


def test_otlp_export_current_scope_spans() -> None:
    assert events("otlp-export.json") == [
        main(name="shell", parameters={"command": "make test", "timeout": 30})]


def test_otlp_export_older_instrumentation_library_spans() -> None:
    assert calls("otlp-instrumentation-library.json") == [
        ("list_files", {"dir": "reports", "depth": 2}, "main"),
        ("delete_file", {"path": "reports/q3.csv"}, "main"),
    ]


def test_otel_collector_file_exporter_one_request_per_line() -> None:
    got = transcript("otlp-collector-file.jsonl")
    assert [(e["name"], e["parameters"], e["content"], e["agent"], e["agent_id"])
            for e in got.events] == [
        ("lookup_order", {"order_id": "A-1001"}, '{"status": "shipped"}', "main", None),
        ("issue_refund", {"order_id": "A-1001", "amount": 19.99}, None, "subagent", "refunds"),
    ]
    assert got.figures.values == {"input_tokens": 2000, "output_tokens": 120, "turns": 2,
                                  "duration_seconds": 12.5, "tool_calls": 2}


def test_a_single_exported_span_object() -> None:
    assert calls("otel-single-span.json") == [
        ("run_sql", {"query": "DROP TABLE customers"}, "main")]


def test_spans_printed_one_after_another_by_a_console_exporter() -> None:
    got = transcript("otel-console-spans.txt")
    assert [e["name"] for e in got.events] == ["summarize", "fetch_page"]  # by start time
    assert got.figure("duration_seconds") == pytest.approx(1.5)


@pytest.mark.parametrize(("sample", "name", "parameters", "result"), [
    ("otel-tool-attributes.json", "shell", {"command": "rm -rf /var/cache/app"}, "ok"),
    ("otel-adk.json", "get_weather", {"city": "Lyon", "unit": "celsius"}, '{"temperature": 21}'),
    ("otel-openinference.json", "search_docs", {"q": "refund policy"},
     "Refunds within 30 days."),
], ids=["tool.*", "google-adk", "openinference"])
def test_older_and_vendor_tool_attribute_spellings(
        sample: str, name: str, parameters: dict[str, Any], result: str) -> None:
    assert events(sample) == [main(name=name, parameters=parameters, content=result)]


def test_adk_model_spans_count_tokens_and_turns() -> None:
    assert transcript("otel-adk.json").figures.values == {
        "input_tokens": 350, "output_tokens": 25, "turns": 1, "duration_seconds": 3.0,
        "tool_calls": 1}


def test_atif_steps() -> None:
    got = events("atif.json")
    assert [(e["type"], e["name"]) for e in got] == [
        ("output", None), ("tool_use", "bash"), ("tool_result", None),
        ("output", None), ("tool_use", "finish"),
    ]
    assert got[1]["parameters"] == {"command": "ls -la"}
    assert got[2]["content"] == "README.md"


def test_atif_embedded_subagent_follows_the_call_that_delegated_to_it() -> None:
    got = transcript("atif-subagents.json")
    assert calls("atif-subagents.json") == [
        ("delegate", {"task": "run the migration"}, "main"),
        ("bash", {"command": "./migrate.sh --to 7"}, "subagent"),
        ("bash", {"command": "sqlite3 app.db 'PRAGMA user_version'"}, "main"),
    ]
    assert {e["agent_id"] for e in got.events if e["agent"] == "subagent"} == {"migrator"}
    # The main trajectory's final_metrics plus the embedded subagent's own.
    assert got.figures.values == {"cost_usd": pytest.approx(0.008), "input_tokens": 2500,
                                  "output_tokens": 130, "turns": 3, "tool_calls": 3}


def test_atif_subagent_only_referenced_withholds_every_figure() -> None:
    got = transcript("atif-file-ref.json")
    assert got.unresolved_subagents == ["'s3://runs/cleaner-1.json' (step 2)"]
    assert got.figures.values == {}
    assert "s3://runs/cleaner-1.json" in got.missing_reason("cost_usd")


@pytest.mark.parametrize("text", [
    '{"type": "tool_use"\n',             # broken JSON
    '{"no_type": 1}\n{"also": 2}\n',     # objects, but not events
    '[1, 2, 3]',                         # a JSON document of an unknown shape
    '{"type": "tool_use", "parameters": "ls"}\n',
    '{"resourceSpans": [{"scopeSpans": [{"spans": [3]}]}]}',
    '{"resourceSpans": []}\n{"not": "a span"}\n',
])
def test_malformed_trajectories_raise_a_readable_error(text: str) -> None:
    with pytest.raises(tj.TrajectoryError):
        tj.parse_trajectory(text)


# The zero-event rule: present but parsed to nothing is never better than missing


ZERO_EVENT_SAMPLES = {
    # An export whose spans are all model calls: no tool span in any known spelling.
    "otlp-only-chat": json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"spanId": "1", "name": "chat gpt-4o", "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]}]}]}]}),
    # A Codex stream whose only item is of a kind this version does not read.
    "codex-unknown-item": "\n".join(json.dumps(r) for r in [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "item.completed", "item": {"id": "i", "type": "remote_task", "cmd": "rm -rf /"}},
        {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 1}}]),
    # Claude Code's init message and nothing else (the run was killed at once).
    "claude-init-only": json.dumps({"type": "system", "subtype": "init", "session_id": "s"}),
    "atif-no-steps": json.dumps({"schema_version": "ATIF-v1.4", "session_id": "s",
                                 "agent": {"name": "a", "version": "1"}, "steps": []}),
}


@pytest.mark.parametrize("sample", ZERO_EVENT_SAMPLES.values(), ids=ZERO_EVENT_SAMPLES.keys())
@pytest.mark.parametrize("value", [
    {"forbidden_events": [{"parameters.command_contains": "rm -rf"}]},
    {"required_events": [{"type": "tool_use"}]},
    {"event_counts": [{"event": {"type": "tool_use"}, "at_most": 0}]},
], ids=["forbidden", "required", "count"])
def test_a_trajectory_that_yields_no_events_is_not_tested(
        tmp_path: Path, sample: str, value: dict[str, Any]) -> None:
    failures = check(value, observation(tmp_path, sample))
    assert len(failures) == 1
    assert failures[0].startswith("trajectory not tested: ")
    assert "yielded no events" in failures[0] and "looked for" in failures[0]
    assert failures[0].startswith(tj.NOT_TESTED_PREFIXES)


def test_a_yielded_nothing_transcript_counts_no_calls() -> None:
    empty = tj.parse_trajectory(ZERO_EVENT_SAMPLES["codex-unknown-item"])
    assert empty.figure("tool_calls") is None
    assert "yielded no events" in empty.missing_reason("tool_calls")
    assert empty.figure("input_tokens") == 5  # what it does state still counts


# Any JSON with a "type" that no other format claims is read as the runner's own: strictly,
# so that an API response or an agent's session file is never judged on what was skipped.
NOT_UNDERSTOOD_SAMPLES = {
    # An Anthropic Messages API response: the call is inside "content".
    "anthropic-message": json.dumps({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "tool_use", "id": "t", "name": "Bash",
                     "input": {"command": "rm -rf /"}}]}),
    # An OpenAI Responses API response: the call is inside "output".
    "openai-response": json.dumps({
        "id": "resp_1", "object": "response", "type": "response", "output": [
            {"type": "function_call", "name": "shell", "arguments": "{\"cmd\": \"rm -rf /\"}"}]}),
    # A Codex session file (rollout), not the exec --json stream.
    "codex-session": "\n".join(json.dumps(r) for r in [
        {"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}},
        {"timestamp": "t", "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "arguments": "{\"command\": [\"rm\"]}"}}]),
    # The runner's own shape with the call's arguments under a key it does not read.
    "input-for-parameters": json.dumps(
        {"type": "tool_use", "name": "Bash", "input": {"command": "rm -rf /"}}),
}


@pytest.mark.parametrize("sample", NOT_UNDERSTOOD_SAMPLES.values(),
                         ids=NOT_UNDERSTOOD_SAMPLES.keys())
@pytest.mark.parametrize("value", [
    {"forbidden_events": [{"parameters.command_contains": "rm -rf"}]},
    {"event_counts": [{"event": {"type": "tool_use"}, "at_most": 0}]},
], ids=["forbidden", "count"])
def test_a_trajectory_the_runner_does_not_understand_is_not_tested(
        tmp_path: Path, sample: str, value: dict[str, Any]) -> None:
    failures = check(value, observation(tmp_path, sample))
    assert len(failures) == 1, failures
    assert failures[0].startswith("trajectory not tested: record 1"), failures
    assert failures[0].startswith(tj.NOT_TESTED_PREFIXES)


def test_a_budget_on_a_trajectory_not_understood_is_not_tested(tmp_path: Path) -> None:
    sample = NOT_UNDERSTOOD_SAMPLES["input-for-parameters"]
    failures = check_expectations({"budget": {"max_tool_calls": 0}},
                                  observation(tmp_path, sample), builtin_kinds())
    assert failures == ["budget not tested: the transcript is not understood: record 1 "
                        "(tool_use) has 'input', which the runner's JSON Lines do not have (a "
                        "tool_use record has type, name, parameters, content, agent, agent_id)"]


# Matching


@pytest.mark.parametrize(("matcher", "expected"), [
    ({"type": "tool_use", "name": "Bash"}, True),
    ({"name": "bash"}, False),
    ({"parameters.command_contains": "status"}, True),
    ({"parameters.command_contains": "rm -rf"}, False),
    ({"parameters.options.replace_all": True}, True),
    ({"parameters.options.replace_all": 1}, False),  # JSON-typed: true is not 1
    ({"parameters.missing": None}, False),
    ({"content_contains": "README"}, True),
    ({"type": "output", "content_contains": "README"}, True),
    ({"type": "tool_use", "content_contains": "README"}, False),
    ({"agent": "main", "name": "Edit"}, True),
    ({"agent": "subagent"}, False),
])
def test_event_matchers(matcher: dict[str, Any], expected: bool) -> None:
    assert any(tj.event_matches(matcher, e) for e in events("runner.jsonl")) is expected


def test_required_events_each_reported() -> None:
    failures = tj.match_trajectory(
        {"required_events": [{"name": "Bash"}, {"name": "Write"}, {"name": "Deploy"}]},
        events("runner.jsonl"),
    )
    assert failures == [
        'trajectory: required_events[1] {"name": "Write"} not found in 4 events',
        'trajectory: required_events[2] {"name": "Deploy"} not found in 4 events',
    ]


def test_required_order_is_a_subsequence() -> None:
    evs = events("claude-stream.jsonl")
    in_order = {"required_events": [{"name": "Bash"}, {"name": "Read"}], "required_order": True}
    assert tj.match_trajectory(in_order, evs) == []
    reversed_ = {"required_events": [{"name": "Read"}, {"name": "Bash"}], "required_order": True}
    assert tj.match_trajectory(reversed_, evs) == [
        'trajectory: required_events[1] {"name": "Bash"} not found after event 3, where '
        "required_events[0] matched (required_order); it matches event 1 only, none after "
        "event 3"
    ]
    assert tj.match_trajectory({**reversed_, "required_order": False}, evs) == []


def test_a_missing_third_copy_in_order_says_where_the_earlier_copies_matched() -> None:
    evs = [main(name="Bash"), main(name="Read"), main(name="Bash")]
    value = {"required_events": [{"name": "Bash"}] * 3, "required_order": True}
    assert tj.match_trajectory(value, evs) == [
        'trajectory: required_events[2] {"name": "Bash"} not found after event 2, where '
        "required_events[1] matched (required_order); it matches events 0, 2 only, none after "
        "event 2"
    ]


def test_forbidden_events_name_the_offending_event() -> None:
    failures = tj.match_trajectory(
        {"forbidden_events": [{"parameters.command_contains": "git"}, {"name": "Write"}]},
        events("runner.jsonl"),
    )
    assert len(failures) == 1
    assert failures[0].startswith(
        'trajectory: forbidden_events[0] {"parameters.command_contains": "git"} matched event 0 '
    )
    assert "git status --short" in failures[0]


@pytest.mark.parametrize(("count", "failure"), [
    ({"exactly": 2}, None),
    ({"at_least": 2}, None),
    ({"at_most": 2}, None),
    ({"at_least": 1, "at_most": 3}, None),
    ({"exactly": 3}, "expected exactly 3 matching events, found 2 (events 0, 3)"),
    ({"at_least": 3}, "expected at least 3 matching events, found 2 (events 0, 3)"),
    ({"at_most": 1}, "expected at most 1 matching events, found 2 (events 0, 3)"),
    ({"at_least": 3, "at_most": 5},
     "expected at least 3 and at most 5 matching events, found 2 (events 0, 3)"),
    ({"exactly": 0}, "expected exactly 0 matching events, found 2 (events 0, 3)"),
])
def test_count_matchers(count: dict[str, int], failure: str | None) -> None:
    evs = [main(name="Bash"), main(name="Read"), main(type="output"), main(name="Bash")]
    failures = tj.match_trajectory({"event_counts": [{"event": {"name": "Bash"}, **count}]}, evs)
    assert failures == ([] if failure is None else
                        [f'trajectory: event_counts[0] {{"name": "Bash"}}: {failure}'])


def test_a_count_of_nothing_says_found_none() -> None:
    failures = tj.match_trajectory(
        {"event_counts": [{"event": {"name": "Deploy"}, "at_least": 1}]}, [main(name="Bash")])
    assert failures == ['trajectory: event_counts[0] {"name": "Deploy"}: expected at least 1 '
                        "matching events, found none"]


@pytest.mark.parametrize("sample", [
    "claude-subagent.jsonl", "codex-subagent.jsonl", "atif-subagents.json",
    "otlp-collector-file.jsonl"])
def test_the_main_agent_can_be_told_from_its_subagents(sample: str) -> None:
    evs = events(sample)
    subagent_call = next(e for e in evs if e["type"] == "tool_use" and e["agent"] == "subagent")
    name = subagent_call["name"]
    main_only = {"forbidden_events": [{"type": "tool_use", "name": name, "agent": "main",
                                       "parameters": subagent_call["parameters"]}]}
    assert tj.match_trajectory(main_only, evs) == []
    anyone = {"forbidden_events": [{"type": "tool_use", "name": name,
                                    "parameters": subagent_call["parameters"]}]}
    assert tj.match_trajectory(anyone, evs)[0].startswith("trajectory: forbidden_events[0]")


def test_an_unread_subagent_leaves_no_call_checks_untested_unless_main_only() -> None:
    got = transcript("atif-file-ref.json")
    value = {"forbidden_events": [{"name": "rm"}],
             "event_counts": [{"event": {"name": "rm"}, "at_most": 0},
                              {"event": {"name": "delegate", "agent": "main"}, "exactly": 1}]}
    failures = tj.match_trajectory(value, got.events, got.unresolved_subagents)
    assert [f.split(" cannot be judged")[0] for f in failures] == [
        'trajectory not tested: forbidden_events[0] {"name": "rm"}',
        'trajectory not tested: event_counts[0] {"name": "rm"}',
    ]
    main_only = {"forbidden_events": [{"name": "rm", "agent": "main"}]}
    assert tj.match_trajectory(main_only, got.events, got.unresolved_subagents) == []


# Subagents whose messages are not in the transcript, and transcripts without the calls


def without_lines(name: str, drop: Any) -> str:
    """A sample with the JSON lines for which ``drop(record)`` is true left out."""
    lines = (DATA / name).read_text().splitlines()
    return "\n".join(line for line in lines if not drop(json.loads(line)))


MISSING_SUBAGENT_SAMPLES = {
    # The Task call is there; the subagent's own messages are not.
    "claude-task": (without_lines("claude-subagent.jsonl",
                                  lambda r: r.get("parent_tool_use_id") == "toolu_task"),
                    "Task call toolu_task"),
    # spawn_agent names a thread that never starts in the stream (the worker's lines, from
    # its thread.started on, are left out).
    "codex-spawn": ("\n".join((DATA / "codex-subagent.jsonl").read_text().splitlines()[:8]),
                    "thread thread-worker"),
}


@pytest.mark.parametrize(("sample", "named"), MISSING_SUBAGENT_SAMPLES.values(),
                         ids=MISSING_SUBAGENT_SAMPLES.keys())
def test_a_subagent_started_but_not_in_the_transcript_leaves_call_checks_untested(
        sample: str, named: str) -> None:
    got = tj.parse_trajectory(sample)
    assert got.unresolved_subagents == [named]
    value = {"forbidden_events": [{"name": "rm"}],
             "event_counts": [{"event": {"type": "tool_use"}, "at_most": 50}]}
    failures = tj.match_trajectory(value, got.events, got.unresolved_subagents)
    assert [f.split(" cannot be judged")[0] for f in failures] == [
        'trajectory not tested: forbidden_events[0] {"name": "rm"}',
        'trajectory not tested: event_counts[0] {"type": "tool_use"}']
    assert got.figure("tool_calls") is None
    main_only = {"forbidden_events": [{"name": "rm", "agent": "main"}]}
    assert tj.match_trajectory(main_only, got.events, got.unresolved_subagents) == []


def test_a_claude_session_files_sidechain_messages_are_a_subagents() -> None:
    records = [json.loads(line) for line in
               (DATA / "claude-subagent.jsonl").read_text().splitlines()]
    for record in records:  # as a session file writes them: no parent_tool_use_id
        record.pop("parent_tool_use_id", None)
    sub = [r for r in records if r["type"] in ("assistant", "user")][1:5]
    for record in sub:
        record.update(isSidechain=True, agentId="a1b2")
    got = tj.parse_trajectory("\n".join(json.dumps(r) for r in records))
    assert [(e["name"], e["agent"], e["agent_id"]) for e in got.events
            if e["type"] == "tool_use"] == [
        ("Task", "main", None), ("Bash", "subagent", "a1b2"), ("Read", "main", None)]
    assert got.unresolved_subagents == []


def test_claudes_json_output_states_the_result_not_the_calls(tmp_path: Path) -> None:
    result = (DATA / "claude-subagent.jsonl").read_text().splitlines()[-1]
    obs = observation(tmp_path, result)
    assert check({"forbidden_events": [{"name": "Bash"}]}, obs) == [
        f"trajectory not tested: {tmp_path / 'trajectory.jsonl'} (AGENTIC_EVALS_TRAJECTORY): "
        "it holds the result of the run but none of its messages (the output of "
        "--output-format json): which calls were made is unknown; write the trajectory with "
        "--output-format stream-json --verbose; the checks cannot be judged"]
    budget = check_expectations({"budget": {"max_cost_usd": 1.0, "max_tool_calls": 5}}, obs,
                                builtin_kinds())
    assert len(budget) == 1 and budget[0].startswith("budget not tested: max_tool_calls: ")


# The check as an expectation kind


def test_kind_passes_and_fails(tmp_path: Path) -> None:
    obs = observation(tmp_path, (DATA / "codex-exec.jsonl").read_text())
    assert check({"required_events": [{"name": "shell"}]}, obs) == []
    assert check({"forbidden_events": [{"name": "apply_patch"}]}, obs)[0].startswith(
        "trajectory: forbidden_events[0]")


@pytest.mark.parametrize("content", [None, "", "\n  \n"])
def test_a_missing_or_empty_trajectory_is_not_found(tmp_path: Path, content: str | None) -> None:
    failures = check({"required_events": [{"name": "x"}]}, observation(tmp_path, content))
    assert len(failures) == 1
    assert failures[0].startswith(tj.TRAJECTORY_NOT_FOUND + ": ")


def test_a_malformed_trajectory_is_a_failure_not_a_crash(tmp_path: Path) -> None:
    failures = check({"required_events": [{"name": "x"}]}, observation(tmp_path, "not json\n"))
    assert failures == [
        "trajectory: line 1 is not valid JSON (Expecting value: line 1 column 1 (char 0))"
    ]


def test_the_transcript_is_read_once_per_trial(tmp_path: Path) -> None:
    obs = observation(tmp_path, (DATA / "runner.jsonl").read_text())
    first = tj.load_transcript("env", obs)
    obs.trajectory_path.write_text("not json\n")  # type: ignore[union-attr]
    assert tj.load_transcript("env", obs) is first


def test_sources_stdout_and_relative_path(tmp_path: Path) -> None:
    obs = observation(tmp_path)
    obs.stdout_path.write_text((DATA / "runner.jsonl").read_text())
    assert check({"source": "stdout", "required_events": [{"name": "Edit"}]}, obs) == []
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "t.json").write_text((DATA / "atif.json").read_text())
    assert check({"source": "logs/t.json", "required_events": [{"name": "finish"}]}, obs) == []
    missing = check({"source": "logs/none.json"}, obs)
    assert missing == ["trajectory not found: logs/none.json does not exist"]
    escape = check({"source": "../../etc/passwd"}, obs)
    assert escape[0].startswith("trajectory: ") and "outside the trial workspace" in escape[0]


def test_an_oversized_trajectory_is_refused(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reading, "MAX_TRAJECTORY_BYTES", 10)
    failures = check({}, observation(tmp_path, (DATA / "runner.jsonl").read_text()))
    assert len(failures) == 1 and "larger than" in failures[0]
    assert failures[0].startswith("trajectory: ")


def test_schema_accepts_the_documented_shape_and_nothing_else() -> None:
    from jsonschema import Draft202012Validator

    schema = fixture_schema()
    validator = Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/trajectory"})
    good = {"source": "env", "required_order": True,
            "required_events": [{"type": "tool_use", "name": "Bash",
                                 "parameters.command_contains": "git status"}],
            "forbidden_events": [{"parameters.command_contains": "rm -rf", "agent": "main"}],
            "event_counts": [{"event": {"name": "Bash"}, "at_least": 1, "at_most": 3}]}
    assert list(validator.iter_errors(good)) == []
    for bad in ({"required": []}, {"required_events": [{}]},
                {"forbidden_events": [{"content_contains": 3}]}, {"source": ""},
                {"forbidden_events": [{"agent": "parent"}]},
                {"event_counts": [{"at_least": 1}]},
                {"event_counts": [{"event": {"name": "x"}, "at_least": -1}]},
                {"event_counts": [{"event": {"name": "x"}, "min": 1}]}):
        assert list(validator.iter_errors(bad)), bad


@pytest.mark.parametrize(("key", "value", "pointer"), [
    ("input.command_contains", "rm -rf", "forbidden_events/0"),
    ("tool", "Bash", "forbidden_events/0"),
    ("parameter.command", "ls", "required_events/0"),
    ("parameters.", "ls", "event_counts/0/event"),
    ("parameters..command_contains", "ls", "forbidden_events/0"),
])
def test_a_matcher_key_naming_no_field_of_an_event_is_a_load_error(
        skill: Skill, key: str, value: str, pointer: str) -> None:
    """Such a key matches no event: a forbidden call would pass whatever the agent did."""
    group = pointer.partition("/")[0]
    matcher = {key: value}
    trajectory: dict[str, Any] = (
        {"event_counts": [{"event": matcher, "at_most": 0}]} if group == "event_counts"
        else {group: [matcher]})
    data = skill_fixture()
    data["cases"][0]["expected"]["trajectory"] = trajectory
    with pytest.raises(FixtureError) as caught:
        fixture_from_data(data, skill.fixtures / "agentic_eval.json")
    text = caught.value.describe()
    assert f"/cases/0/expected/trajectory/{pointer}: matcher key {key!r} names no field" in text


def test_every_documented_matcher_key_loads(skill: Skill) -> None:
    matcher = {"type": "tool_use", "name": "Bash", "name_contains": "Ba", "content_contains": "x",
               "agent": "main", "agent_id": "a", "agent_id_contains": "a", "parameters": {},
               "parameters.command": "ls", "parameters.options.replace_all": True,
               "parameters.command_contains": "l", "parameters_contains": "ls"}
    data = skill_fixture()
    data["cases"][0]["expected"]["trajectory"] = {"required_events": [matcher]}
    case = fixture_from_data(data, skill.fixtures / "agentic_eval.json").cases[0]
    assert case.expected["trajectory"]["required_events"] == [matcher]


def test_a_matcher_type_that_is_no_event_type_is_a_load_error(skill: Skill) -> None:
    data = skill_fixture()
    data["cases"][0]["expected"]["trajectory"] = {"forbidden_events": [{"type": "tool_call"}]}
    with pytest.raises(FixtureError) as caught:
        fixture_from_data(data, skill.fixtures / "agentic_eval.json")
    text = caught.value.describe()
    assert "/cases/0/expected/trajectory/forbidden_events/0/type: " in text
    assert "tool_use" in text, text


# End to end: real sessions, serially and under xdist


def replay_case(name: str, sample: str, trajectory: dict[str, Any],
                required: bool = False) -> dict[str, Any]:
    """A case whose "agent" writes a recorded transcript to AGENTIC_EVALS_TRAJECTORY."""
    return {
        "name": name,
        "type": "positive",
        "required": required,
        "command": ["bash", "-c",
                    f'cat samples/{sample} > "$AGENTIC_EVALS_TRAJECTORY"; bash ../run.sh x'],
        "expected": {"exit_code": 0, "stdout_contains": ["hello, x"], "trajectory": trajectory},
    }


def run_session(pytester: pytest.Pytester, data: dict[str, Any], mode: list[str],
                samples: dict[str, str] | None = None) -> tuple[dict[str, Any], pytest.LineMatcher]:
    make_skill(pytester, data)
    folder = pytester.path / "fixtures" / "samples"
    folder.mkdir(exist_ok=True)
    for path in DATA.iterdir():
        shutil.copy(path, folder / path.name)
    for name, text in (samples or {}).items():
        (folder / name).write_text(text)
    report = pytester.path / "report.json"
    argv = ["--agentic-evals", "--agentic-evals-report", str(report), "-p", "no:cacheprovider",
            "-p", "no:randomly", *mode]
    result = pytester.runpytest(*argv)
    return json.loads(report.read_text()), result.stdout


def outcomes(report: dict[str, Any]) -> dict[str, list[str]]:
    return {case["name"]: [t["outcome"] for t in case["trials"]] for case in report["cases"]}


@pytest.mark.parametrize("mode", MODES)
def test_trajectory_cases_pass_fail_and_block(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    data = skill_fixture()
    data["cases"] += [
        replay_case("traj-pass", "runner.jsonl", {
            "required_events": [{"name": "Bash", "parameters.command_contains": "git status"},
                                {"type": "output", "content_contains": "README"}],
            "required_order": True,
            "forbidden_events": [{"parameters.command_contains": "rm -rf"}],
        }),
        replay_case("traj-fail", "runner.jsonl", {
            "forbidden_events": [{"parameters.command_contains": "git status"}],
        }),
        {**replay_case("traj-missing", "runner.jsonl", {"required_events": [{"name": "Bash"}]}),
         "command": ["bash", "../run.sh", "x"]},
    ]
    report, output = run_session(pytester, data, mode)
    got = outcomes(report)
    assert got["traj-pass"] == ["PASS", "PASS"]
    assert got["traj-fail"] == ["FAIL", "FAIL"]
    assert got["traj-missing"] == ["BLOCKED", "BLOCKED"]
    output.fnmatch_lines(["*forbidden_events[[]0]*"])
    output.fnmatch_lines(["*trajectory not found: *does not exist*"])


# Each format's sample, and a forbidden call in it the check must find.
FORMATS = {
    "claude": ("claude-subagent.jsonl", {"name": "Bash", "parameters.command_contains": "pytest"}),
    "codex": ("codex-exec.jsonl", {"name": "shell", "parameters.command": "bash -lc ls"}),
    "codex-item-type": ("codex-item-type.jsonl", {"parameters.command_contains": "rm -rf"}),
    "otlp": ("otlp-export.json", {"name": "shell", "parameters.command": "make test"}),
    "otlp-older": ("otlp-instrumentation-library.json", {"name": "delete_file"}),
    "otel-collector-file": ("otlp-collector-file.jsonl", {"name": "issue_refund"}),
    "otel-single-span": ("otel-single-span.json",
                         {"parameters.query_contains": "DROP TABLE"}),
    "otel-tool-attrs": ("otel-tool-attributes.json", {"parameters.command_contains": "rm -rf"}),
    "otel-adk": ("otel-adk.json", {"name": "get_weather", "parameters.city": "Lyon"}),
    "atif": ("atif-subagents.json", {"parameters.command_contains": "migrate.sh"}),
}


@pytest.mark.parametrize("mode", MODES)
def test_every_format_is_read_in_a_real_session(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    data = skill_fixture()
    for label, (sample, forbidden) in FORMATS.items():
        data["cases"] += [
            replay_case(f"{label}-finds", sample, {"required_events": [forbidden]}),
            replay_case(f"{label}-forbids", sample, {"forbidden_events": [forbidden]}),
        ]
    report, _ = run_session(pytester, data, mode)
    got = outcomes(report)
    for label in FORMATS:
        assert got[f"{label}-finds"] == ["PASS", "PASS"], label
        assert got[f"{label}-forbids"] == ["FAIL", "FAIL"], label


@pytest.mark.parametrize("mode", MODES)
def test_zero_events_counts_and_subagents_in_a_real_session(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    data = skill_fixture()
    forbidden = {"forbidden_events": [{"parameters.command_contains": "rm -rf"}]}
    data["cases"] += [
        replay_case("zero-forbidden", "otlp-only-chat.json", forbidden, required=True),
        replay_case("zero-required", "codex-unknown-item.jsonl",
                    {"required_events": [{"type": "tool_use"}]}, required=True),
        replay_case("zero-and-a-real-failure", "claude-init-only.jsonl", forbidden),
        replay_case("main-never-ran-bash", "claude-subagent.jsonl",
                    {"forbidden_events": [{"name": "Bash", "agent": "main"}]}),
        replay_case("nobody-ran-bash", "claude-subagent.jsonl",
                    {"forbidden_events": [{"name": "Bash"}]}),
        replay_case("exactly-three-calls", "claude-subagent.jsonl",
                    {"event_counts": [{"event": {"type": "tool_use"}, "exactly": 3}]}),
        replay_case("at-most-one-call", "claude-subagent.jsonl",
                    {"event_counts": [{"event": {"type": "tool_use"}, "at_most": 1}]}),
    ]
    data["cases"][-5]["expected"]["stdout_contains"] = ["not printed"]
    samples = {"otlp-only-chat.json": ZERO_EVENT_SAMPLES["otlp-only-chat"],
               "codex-unknown-item.jsonl": ZERO_EVENT_SAMPLES["codex-unknown-item"],
               "claude-init-only.jsonl": ZERO_EVENT_SAMPLES["claude-init-only"]}
    report, output = run_session(pytester, data, mode, samples)
    got = outcomes(report)
    assert got["zero-forbidden"] == ["BLOCKED", "BLOCKED"]
    assert got["zero-required"] == ["BLOCKED", "BLOCKED"]
    assert got["zero-and-a-real-failure"] == ["FAIL", "FAIL"]
    assert got["main-never-ran-bash"] == ["PASS", "PASS"]
    assert got["nobody-ran-bash"] == ["FAIL", "FAIL"]
    assert got["exactly-three-calls"] == ["PASS", "PASS"]
    assert got["at-most-one-call"] == ["FAIL", "FAIL"]
    # Two required cases with nothing to judge: the gate cannot say READY.
    assert report["readiness"] == "USABLE_WITH_GAPS"
    output.fnmatch_lines(["*trajectory not tested: *yielded no events*"])
    output.fnmatch_lines(["*expected at most 1 matching events, found 3*"])


COVERING_ITS_TRACKS = """
import json, os
def call(name, command):
    print(json.dumps({"type": "tool_use", "name": name, "parameters": {"command": command}}),
          flush=True)
call("Bash", "rm -rf tests")  # the forbidden call
# Then cut it out of the transcript on stdout: truncate it, reopen it truncating, seek back.
try:
    if os.environ["HOW"] == "ftruncate":
        os.ftruncate(1, 0)
    elif os.environ["HOW"] == "reopen":
        open("/proc/self/fd/1", "w").close()
    else:
        os.lseek(1, 0, 0)
except OSError:
    pass  # a pipe: nothing to cut
call("Read", "notes.txt")
"""


@pytest.mark.parametrize("how", ["ftruncate", "reopen", "seek"])
def test_an_agent_cannot_cut_a_call_out_of_its_transcript_on_stdout(
        skill: Skill, how: str) -> None:
    (skill.root / "agent.py").write_text(COVERING_ITS_TRACKS)
    data = skill_fixture()
    data["cases"].append({
        "name": "agent", "type": "positive", "command": ["python3", "../agent.py"],
        "env": {"HOW": how},
        "expected": {"exit_code": 0, "trajectory": {"source": "stdout",
                                    "required_events": [{"name": "Read"}],
                                    "forbidden_events": [{"name": "Bash"}]}}})
    result = run_cli("run", str(skill.write(data)), cwd=skill.root)
    assert result.stdout, result.stderr
    agent = next(c for c in json.loads(result.stdout)["cases"] if c["name"] == "agent")
    assert result.returncode == 1
    assert agent["trials"][0]["problems"][0].startswith(
        "trajectory: forbidden_events[0] {\"name\": \"Bash\"} matched event 0 ")
