"""Budgets over the figures transcripts state, per-trial figures in the report, and the per-case
mean / p95 in the terminal summary and Markdown.

The transcripts are the samples under tests/data/trajectories, written for these tests.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.expectations.budget import check_budget
from pytest_agentic_evals.expectations.observation import Observation
from pytest_agentic_evals.loading import fixture_from_data
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.report import report_problems
from pytest_agentic_evals.usage import case_usage, percentile_95

from conftest import MODES, Skill, make_skill, skill_fixture

DATA = Path(__file__).parent / "data" / "trajectories"


def observation(tmp_path: Path, sample: str | None) -> Observation:
    (tmp_path / "stdout").write_text("")
    (tmp_path / "stderr").write_text("")
    path = tmp_path / "trajectory.jsonl"
    if sample is not None:
        shutil.copy(DATA / sample, path)
    return Observation(0, tmp_path / "stdout", tmp_path / "stderr", tmp_path, tmp_path,
                       trajectory_path=path)


ALL_LIMITS = {"max_cost_usd": 1, "max_input_tokens": 10**6, "max_output_tokens": 10**6,
              "max_turns": 100, "max_tool_calls": 100, "max_duration_seconds": 3600}


@pytest.mark.parametrize(("sample", "unstated"), [
    ("claude-subagent.jsonl", []),
    ("codex-exec.jsonl", ["max_cost_usd", "max_duration_seconds"]),
    ("otlp-collector-file.jsonl", ["max_cost_usd"]),
    ("otel-single-span.json", ["max_cost_usd", "max_input_tokens", "max_output_tokens",
                               "max_turns"]),
    ("atif-subagents.json", ["max_duration_seconds"]),
    ("runner.jsonl", ["max_cost_usd", "max_input_tokens", "max_output_tokens", "max_turns",
                      "max_duration_seconds"]),
])
def test_a_limit_on_a_figure_the_transcript_does_not_state_is_not_tested(
        tmp_path: Path, sample: str, unstated: list[str]) -> None:
    failures = check_budget(ALL_LIMITS, observation(tmp_path, sample))
    assert [f.split(":")[1].strip() for f in failures] == unstated
    assert all(f.startswith("budget not tested: ") for f in failures)


def test_limits_are_kept_at_the_figure_and_exceeded_above_it(tmp_path: Path) -> None:
    obs = observation(tmp_path, "claude-subagent.jsonl")
    exact = {"max_cost_usd": 0.0831, "max_input_tokens": 23720, "max_output_tokens": 910,
             "max_turns": 6, "max_tool_calls": 3, "max_duration_seconds": 48.213}
    assert check_budget(exact, obs) == []
    below = {"max_cost_usd": 0.05, "max_input_tokens": 20000, "max_output_tokens": 900,
             "max_turns": 5, "max_tool_calls": 2, "max_duration_seconds": 30}
    assert check_budget(below, obs) == [
        "budget: max_cost_usd $0.05 exceeded: the run used $0.0831 (result total_cost_usd)",
        "budget: max_input_tokens 20000 exceeded: the run used 23720 (result usage input_tokens"
        " + cache_creation_input_tokens + cache_read_input_tokens)",
        "budget: max_output_tokens 900 exceeded: the run used 910 (result usage output_tokens)",
        "budget: max_turns 5 exceeded: the run used 6 (result num_turns)",
        "budget: max_tool_calls 2 exceeded: the run used 3 (tool_use events in the transcript)",
        "budget: max_duration_seconds 30.0s exceeded: the run used 48.2s (result duration_ms)",
    ]


def test_no_transcript_and_a_broken_one(tmp_path: Path) -> None:
    missing = check_budget({"max_cost_usd": 1}, observation(tmp_path, None))
    assert len(missing) == 1
    assert missing[0].startswith("budget not tested: no transcript to read the run's figures "
                                 "from: ")
    (tmp_path / "trajectory.jsonl").write_text("{not json\n")
    broken = check_budget({"max_cost_usd": 1}, observation(tmp_path, None))
    assert broken[0].startswith("budget: the transcript cannot be read: line 1 is not valid")


def test_a_transcript_that_understates_the_run_is_no_figure(tmp_path: Path) -> None:
    failures = check_budget({"max_cost_usd": 1, "max_tool_calls": 10},
                            observation(tmp_path, "atif-file-ref.json"))
    assert len(failures) == 2
    assert all(f.startswith("budget not tested: ") and "s3://runs/cleaner-1.json" in f
               for f in failures)


def test_a_figure_in_the_wrong_shape_is_not_a_figure(tmp_path: Path) -> None:
    (tmp_path / "trajectory.jsonl").write_text(json.dumps(
        {"type": "result", "result": "done", "session_id": "s", "total_cost_usd": "0.01",
         "num_turns": True, "duration_ms": -5}) + "\n")
    failures = check_budget({"max_cost_usd": 1, "max_turns": 10, "max_duration_seconds": 1},
                            observation(tmp_path, None))
    assert [f.split(":")[1].strip() for f in failures] == [
        "max_cost_usd", "max_turns", "max_duration_seconds"]


def test_statistics_over_trials() -> None:
    assert percentile_95([3, 1, 2]) == 3
    assert percentile_95(list(range(1, 101))) == 95
    trials = [{"usage": {"cost_usd": 0.1, "turns": 3}}, {"usage": {"cost_usd": 0.3,
                                                                   "turns": None}},
              {"usage": None}, {}]
    assert case_usage(trials) == {"cost_usd": {"mean": 0.2, "p95": 0.3, "trials": 2},
                                  "turns": {"mean": 3, "p95": 3, "trials": 1}}
    assert case_usage([{"usage": None}]) is None


# Load time


def budget_fixture(budget: Any, trajectory: dict[str, Any] | None = None) -> dict[str, Any]:
    data = skill_fixture()
    expected = data["cases"][0]["expected"]
    expected["budget"] = budget
    if trajectory is not None:
        expected["trajectory"] = trajectory
    return data


def test_budget_load_errors_carry_their_pointer(skill: Skill) -> None:
    for budget, message in (
        ({"source": "env"}, "/cases/0/expected/budget: a budget needs at least one limit"),
        ({"max_cost": 1}, "/cases/0/expected/budget/max_cost: unknown key 'max_cost'"),
        ({"max_turns": 2.5}, "/cases/0/expected/budget/max_turns"),
        ({"max_cost_usd": -1}, "/cases/0/expected/budget/max_cost_usd"),
    ):
        with pytest.raises(FixtureError) as caught:
            fixture_from_data(budget_fixture(budget), skill.fixtures / "agentic_eval.json")
        assert message in str(caught.value), (budget, str(caught.value))


def test_count_matchers_that_contradict_themselves_are_refused(skill: Skill) -> None:
    for count, message in (
        ({"event": {"name": "x"}}, "a count needs exactly, at_least or at_most"),
        ({"event": {"name": "x"}, "exactly": 1, "at_most": 2},
         "exactly excludes at_least and at_most"),
        ({"event": {"name": "x"}, "at_least": 3, "at_most": 2},
         "at_least 3 is more than at_most 2"),
    ):
        data = budget_fixture({"max_turns": 3}, {"event_counts": [count]})
        with pytest.raises(FixtureError) as caught:
            fixture_from_data(data, skill.fixtures / "agentic_eval.json")
        assert f"/cases/0/expected/trajectory/event_counts/0: {message}" in str(caught.value)


def test_a_budget_reads_where_the_trajectory_reads(skill: Skill) -> None:
    data = budget_fixture({"max_turns": 3}, {"source": "stdout", "required_events": [{}]})
    data["cases"][0]["expected"]["trajectory"]["required_events"] = [{"type": "output"}]
    fixture = fixture_from_data(data, skill.fixtures / "agentic_eval.json")
    assert fixture.cases[0].expected["budget"] == {"max_turns": 3, "source": "stdout"}
    own = budget_fixture({"max_turns": 3, "source": "env"}, {"source": "stdout"})
    fixture = fixture_from_data(own, skill.fixtures / "agentic_eval.json")
    assert fixture.cases[0].expected["budget"]["source"] == "env"


# End to end


def agent_case(name: str, script: str, budget: dict[str, Any] | None = None,
               required: bool = False) -> dict[str, Any]:
    expected: dict[str, Any] = {"exit_code": 0, "stdout_contains": ["hello, x"]}
    if budget is not None:
        expected["budget"] = budget
    return {"name": name, "type": "positive", "required": required,
            "command": ["bash", "-c", script + "; bash ../run.sh x"], "expected": expected}


@pytest.mark.parametrize("mode", MODES)
def test_budgets_figures_and_statistics_in_a_real_session(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    # Each trial's run costs something else: 0.10 in trial 1, 0.30 in trial 2.
    varying = ('printf \'{"type": "tool_use", "name": "Bash"}\\n{"type": "usage", '
               '"cost_usd": 0.%s, "turns": 2}\\n\' $((AGENTIC_EVALS_TRIAL * 2 - 1)) '
               '> "$AGENTIC_EVALS_TRAJECTORY"')
    replay = 'cat samples/{} > "$AGENTIC_EVALS_TRAJECTORY"'
    data = skill_fixture()
    data["cases"] += [
        agent_case("claude-within", replay.format("claude-subagent.jsonl"),
                   {"max_cost_usd": 0.10, "max_turns": 6, "max_tool_calls": 3}),
        agent_case("claude-over", replay.format("claude-subagent.jsonl"),
                   {"max_cost_usd": 0.05}),
        agent_case("codex-cost-unstated", replay.format("codex-exec.jsonl"),
                   {"max_cost_usd": 1.0}, required=True),
        agent_case("no-transcript", "true", {"max_output_tokens": 100}),
        agent_case("varying", varying, {"max_cost_usd": 0.2}),
        agent_case("figures-without-budget", replay.format("otlp-collector-file.jsonl")),
    ]
    make_skill(pytester, data)
    shutil.copytree(DATA, pytester.path / "fixtures" / "samples")
    report_path = pytester.path / "report.json"
    markdown_path = pytester.path / "summary.md"
    argv = ["--agentic-evals", "--agentic-evals-report", str(report_path),
            "--agentic-evals-md", str(markdown_path), "-p", "no:cacheprovider",
            "-p", "no:randomly", *mode]
    result = pytester.runpytest(*argv)
    report = json.loads(report_path.read_text())
    assert report_problems(report) == []  # the figures are in the shipped report schema
    cases = {case["name"]: case for case in report["cases"]}
    outcomes = {name: [t["outcome"] for t in case["trials"]] for name, case in cases.items()}
    assert outcomes["claude-within"] == ["PASS", "PASS"]
    assert outcomes["claude-over"] == ["FAIL", "FAIL"]
    assert outcomes["codex-cost-unstated"] == ["BLOCKED", "BLOCKED"]
    assert outcomes["no-transcript"] == ["BLOCKED", "BLOCKED"]
    assert outcomes["varying"] == ["PASS", "FAIL"]
    assert outcomes["figures-without-budget"] == ["PASS", "PASS"]
    assert report["readiness"] == "USABLE_WITH_GAPS"  # a required case was never judged

    first = cases["claude-within"]["trials"][0]["usage"]
    assert first == {"format": "Claude Code stream-json", "cost_usd": 0.0831,
                     "input_tokens": 23720, "output_tokens": 910, "turns": 6, "tool_calls": 3,
                     "duration_seconds": 48.213}
    assert cases["no-transcript"]["trials"][0]["usage"] is None
    assert cases["varying"]["usage"]["cost_usd"] == {"mean": 0.2, "p95": 0.3, "trials": 2}
    assert cases["codex-cost-unstated"]["usage"]["input_tokens"]["mean"] == 10
    assert "cost_usd" not in cases["codex-cost-unstated"]["usage"]
    assert cases["figures-without-budget"]["usage"]["duration_seconds"]["p95"] == 12.5

    result.stdout.fnmatch_lines([
        "*BLOCKED*codex-cost-unstated*budget not tested: max_cost_usd: * (Codex exec --json) "
        "states no cost",
        "*agent runs (mean / p95 over trials):",
        "*claude-within: cost (USD) $0.0831 / $0.0831, input tokens 23720 / 23720, *"
        "tool calls 3 / 3, duration (s) 48.2s / 48.2s",
        "*varying: cost (USD) $0.20 / $0.30, turns 2 / 2, tool calls 1 / 1",
    ])
    markdown = markdown_path.read_text()
    assert "| case | cost (USD) | input tokens | output tokens | turns | tool calls | " \
           "duration (s) |" in markdown
    assert "| varying | $0.20 / $0.30 | - | - | 2 / 2 | 1 / 1 | - |" in markdown


def strict_json(text: str) -> Any:
    """JSON as any other reader takes it: Infinity and NaN are not JSON."""
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_numbers_beyond_what_a_number_can_hold(pytester: pytest.Pytester) -> None:
    """Figures that add up past the largest float, and integers of more digits than Python
    reads, in transcripts and artifacts: a clear problem for their trial, never a traceback,
    and the report and summaries stay what they are."""
    digits = "9" * 4301
    usage = 'printf \'{"type": "usage", "%s": %s}\\n\' > "$AGENTIC_EVALS_TRAJECTORY"'
    data = skill_fixture()
    data["cases"] += [
        # Each record is a float; together they are more than one can be.
        agent_case("sum-overflows", f"{usage % ('input_tokens', '1e308')}; "
                                    f"{usage.replace('>', '>>') % ('input_tokens', '1e308')}",
                   {"max_input_tokens": 1000}),
        # One trial's figure is a float; the mean over trials must not add them up first.
        agent_case("mean-of-the-largest", usage % ("output_tokens", "1.5e308")),
        agent_case("long-integer-in-a-transcript", usage % ("turns", digits), {"max_turns": 10}),
        # Tool arguments as JSON text (Codex): kept as text when they cannot be read.
        agent_case("long-integer-in-tool-arguments", "printf '%s\\n' " + " ".join(
            shlex.quote(json.dumps(record)) for record in (
                {"type": "item.completed", "item": {"type": "mcp_tool_call", "tool": "search",
                                                    "arguments": f'{{"n": {digits}}}'}},
                {"type": "turn.completed", "usage": {"input_tokens": 10}}))
            + ' > "$AGENTIC_EVALS_TRAJECTORY"', {"max_input_tokens": 100}),
        {"name": "long-integer-in-an-artifact", "type": "positive", "required": False,
         "command": ["bash", "-c", f"printf '{{\"n\": {digits}}}' > out.json; "
                                   "bash ../run.sh x"],
         "expected": {"exit_code": 0,
                      "artifacts": [{"path": "out.json", "json_pointer": "/n", "equals": 1}]}},
    ]
    make_skill(pytester, data)
    # A plugin that adds a number no JSON can hold: the report is written all the same.
    pytester.makeconftest("def pytest_agentic_evals_modify_report(report, config):\n"
                          "    report['plugin_figure'] = float('inf')\n")
    report_path = pytester.path / "report.json"
    markdown_path = pytester.path / "summary.md"
    result = pytester.runpytest_subprocess(
        "--agentic-evals", "--agentic-evals-report", str(report_path), "--agentic-evals-md",
        str(markdown_path), "-p", "no:cacheprovider", "-p", "no:randomly", timeout=240)
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "Error:" not in output, output
    assert result.ret == 0  # the cases are optional
    report = strict_json(report_path.read_text())
    assert report_problems(report) == []
    assert report["plugin_figure"] is None
    cases = {case["name"]: case for case in report["cases"]}
    outcomes = {name: [t["outcome"] for t in case["trials"]] for name, case in cases.items()}

    assert outcomes["sum-overflows"] == ["BLOCKED", "BLOCKED"]
    assert cases["sum-overflows"]["trials"][0]["usage"]["input_tokens"] is None
    assert any("budget not tested: max_input_tokens: the input token count (usage records' "
               "input_tokens) is more than a number can hold" in problem
               for problem in cases["sum-overflows"]["problems"])
    assert outcomes["mean-of-the-largest"] == ["PASS", "PASS"]
    assert cases["mean-of-the-largest"]["usage"]["output_tokens"] == {
        "mean": 1.5e308, "p95": 1.5e308, "trials": 2}
    assert outcomes["long-integer-in-tool-arguments"] == ["PASS", "PASS"]
    for name in ("long-integer-in-a-transcript", "long-integer-in-an-artifact"):
        assert outcomes[name] == ["FAIL", "FAIL"], cases[name]["problems"]
        assert not any("did not complete" in problem for problem in cases[name]["problems"])
    assert cases["long-integer-in-a-transcript"]["problems"] == [
        "trial 1: budget: the transcript cannot be read: line 1 holds a number of more than "
        "4300 digits, which cannot be read"]
    assert cases["long-integer-in-an-artifact"]["problems"] == [
        "trial 1: artifacts[0] out.json /n: holds a number of more than 4300 digits, which "
        "cannot be read"]
    assert "mean-of-the-largest" in markdown_path.read_text()
