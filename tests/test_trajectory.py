"""Trajectory checks: normalising each format, matching, and the trial outcomes they lead to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.expectations import trajectory as tj
from pytest_agentic_evals.expectations.builtin import builtin_kinds, check_expectations
from pytest_agentic_evals.expectations.observation import Observation
from pytest_agentic_evals.loading.fixture import fixture_schema

from conftest import MODES, make_skill, skill_fixture

DATA = Path(__file__).parent / "data" / "trajectories"


def events(name: str) -> list[dict[str, Any]]:
    return tj.parse_trajectory((DATA / name).read_text())


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


# Normalisation


def test_runner_jsonl_is_taken_as_is() -> None:
    got = events("runner.jsonl")
    assert got[0] == {"type": "tool_use", "name": "Bash",
                      "parameters": {"command": "git status --short"}, "content": None}
    assert got[1] == {"type": "tool_result", "name": None, "parameters": {},
                      "content": "M README.md"}
    assert [e["type"] for e in got] == ["tool_use", "tool_result", "tool_use", "output"]


def test_claude_stream_json() -> None:
    got = events("claude-stream.jsonl")
    assert [(e["type"], e["name"]) for e in got] == [
        ("output", None), ("tool_use", "Bash"), ("tool_result", None),
        ("tool_use", "Read"), ("tool_result", None), ("output", None),
    ]
    assert got[1]["parameters"] == {"command": "git status", "description": "Show status"}
    assert got[0]["content"] == "Checking the tree."
    assert got[2]["content"] == "nothing to commit"
    assert got[4]["content"] == "# Repo"
    assert got[5]["content"] == "The tree is clean."


def test_codex_exec_json_keeps_one_event_per_item() -> None:
    got = events("codex-exec.jsonl")
    assert got == [
        {"type": "tool_use", "name": "shell", "parameters": {"command": "bash -lc ls"},
         "content": "README.md\n"},
        {"type": "tool_use", "name": "apply_patch",
         "parameters": {"changes": [{"path": "README.md", "kind": "update"}]}, "content": None},
        {"type": "tool_use", "name": "search", "parameters": {"query": "pytest"},
         "content": None},
        {"type": "output", "name": None, "parameters": {}, "content": "Done."},
    ]


def test_otel_span_list_in_start_order() -> None:
    got = events("otel-spans.json")
    assert [(e["name"], e["parameters"]) for e in got] == [
        ("read_file", {"path": "notes.txt"}), ("grep", {"pattern": "TODO"}),
    ]
    assert all(e["type"] == "tool_use" for e in got)


def test_otlp_export_with_list_attributes() -> None:
    assert events("otlp-export.json") == [
        {"type": "tool_use", "name": "shell",
         "parameters": {"command": "make test", "timeout": 30}, "content": None},
    ]


def test_atif_steps() -> None:
    got = events("atif.json")
    assert [(e["type"], e["name"]) for e in got] == [
        ("output", None), ("tool_use", "bash"), ("tool_result", None),
        ("output", None), ("tool_use", "finish"),
    ]
    assert got[1]["parameters"] == {"command": "ls -la"}
    assert got[2]["content"] == "README.md"


@pytest.mark.parametrize("text", [
    '{"type": "tool_use"\n',             # broken JSON
    '{"no_type": 1}\n{"also": 2}\n',     # objects, but not events
    '[1, 2, 3]',                         # a JSON document of an unknown shape
    '{"type": "tool_use", "parameters": "ls"}\n',
])
def test_malformed_trajectories_raise_a_readable_error(text: str) -> None:
    with pytest.raises(tj.TrajectoryError):
        tj.parse_trajectory(text)


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
        'trajectory: required_events[1] {"name": "Bash"} not found only before the earlier '
        "required events (required_order)"
    ]
    assert tj.match_trajectory({**reversed_, "required_order": False}, evs) == []


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
    monkeypatch.setattr(tj, "MAX_TRAJECTORY_BYTES", 10)
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
            "forbidden_events": [{"parameters.command_contains": "rm -rf"}]}
    assert list(validator.iter_errors(good)) == []
    for bad in ({"required": []}, {"required_events": [{}]},
                {"forbidden_events": [{"content_contains": 3}]}, {"source": ""}):
        assert list(validator.iter_errors(bad)), bad


# End to end


SAMPLE = "\n".join(json.dumps(e) for e in [
    {"type": "tool_use", "name": "Bash", "parameters": {"command": "git status"}},
    {"type": "tool_use", "name": "Bash", "parameters": {"command": "../run.sh x"}},
    {"type": "output", "content": "hello, x"},
]) + "\n"


def trajectory_case(name: str, trajectory: dict[str, Any], write: bool = True) -> dict[str, Any]:
    script = ('cat trajectory-sample.jsonl > "$AGENTIC_EVALS_TRAJECTORY"; ' if write else "")
    return {
        "name": name,
        "type": "positive",
        "required": False,
        "command": ["bash", "-c", script + "bash ../run.sh x"],
        "artifacts": [{"path": "trajectory-sample.jsonl", "content": SAMPLE}],
        "expected": {"exit_code": 0, "stdout_contains": ["hello, x"],
                     "trajectory": trajectory},
    }


@pytest.mark.parametrize("mode", MODES)
def test_trajectory_cases_pass_fail_and_block(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    data = skill_fixture()
    data["cases"] += [
        trajectory_case("traj-pass", {
            "required_events": [{"name": "Bash", "parameters.command_contains": "git status"},
                                {"type": "output", "content_contains": "hello"}],
            "required_order": True,
            "forbidden_events": [{"parameters.command_contains": "rm -rf"}],
        }),
        trajectory_case("traj-fail", {
            "forbidden_events": [{"parameters.command_contains": "git status"}],
        }),
        trajectory_case("traj-missing", {"required_events": [{"name": "Bash"}]}, write=False),
    ]
    make_skill(pytester, data)
    report = pytester.path / "report.json"
    argv = ["--agentic-evals", "--agentic-evals-report", str(report), "-p", "no:cacheprovider",
            "-p", "no:randomly", *mode]
    result = (pytester.runpytest_subprocess(*argv, timeout=240) if mode
              else pytester.runpytest(*argv))
    outcomes = {case["name"]: [t["outcome"] for t in case["trials"]]
                for case in json.loads(report.read_text())["cases"]}
    assert outcomes["traj-pass"] == ["PASS", "PASS"]
    assert outcomes["traj-fail"] == ["FAIL", "FAIL"]
    assert outcomes["traj-missing"] == ["BLOCKED", "BLOCKED"]
    text = result.stdout.str()
    assert "forbidden_events[0]" in text
    assert "trajectory not found: " in text and "does not exist" in text
