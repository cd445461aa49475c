"""The agent-replay example, run as a user runs it: READY from a fresh clone, offline; and its
checks really fail when the recorded run misbehaves."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import run_cli

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "agent-replay"
CLAUDE = "recordings/claude-release-notes.jsonl"


@pytest.mark.parametrize("extra", [[], ["--", "-n", "2"]], ids=["serial", "xdist"])
def test_the_example_is_ready_offline(tmp_path: Path, extra: list[str]) -> None:
    example = tmp_path / "agent-replay"
    shutil.copytree(EXAMPLE, example)
    result = run_cli("run", "agentic_eval.json", "--allow-exempt", *extra, cwd=example)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["readiness"] == "READY"
    cases = {case["name"]: case for case in report["cases"]}
    assert cases["claude-writes-release-notes"]["trials"][0]["usage"] == {
        "format": "Claude Code stream-json", "cost_usd": 0.0412, "input_tokens": 20440,
        "output_tokens": 285, "turns": 7, "tool_calls": 4, "duration_seconds": 31.48}
    assert cases["codex-writes-release-notes"]["usage"]["input_tokens"]["mean"] == 14820
    assert "agent runs (mean / p95 over trials):" in result.stderr


def rewrite(example: Path, change: str, into: str) -> None:
    recording = example / CLAUDE
    text = recording.read_text()
    assert change in text
    recording.write_text(text.replace(change, into))


@pytest.mark.parametrize(("change", "into", "outcome", "problem"), [
    # The Bash call moves from the subagent to the main agent.
    ('"parent_tool_use_id":"toolu_02Task","session_id":"9b2e4c1a-0d3f-4e55-9a61-5c2f7e1b8d40"}\n'
     '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_03Bash"',
     '"parent_tool_use_id":null,"session_id":"9b2e4c1a-0d3f-4e55-9a61-5c2f7e1b8d40"}\n'
     '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_03Bash"',
     "FAIL", 'forbidden_events[0] {"agent": "main", "name": "Bash", "type": "tool_use"}'),
    ('"total_cost_usd":0.0412', '"total_cost_usd":0.4120', "FAIL",
     "budget: max_cost_usd $0.25 exceeded: the run used $0.412"),
    # A run cut short: no result message, so no cost, turns or duration to judge.
    ('{"type":"result",', '{"type":"result_withheld",', "BLOCKED",
     "budget not tested: max_cost_usd"),
    ("JSON (`--json`).", "JSON (`--json`). TODO", "FAIL", "excludes: 'TODO' found"),
])
def test_the_examples_checks_fail_when_the_run_misbehaves(
        tmp_path: Path, change: str, into: str, outcome: str, problem: str) -> None:
    example = tmp_path / "agent-replay"
    shutil.copytree(EXAMPLE, example)
    rewrite(example, change, into)
    result = run_cli("run", "agentic_eval.json", "--allow-exempt", cwd=example)
    assert result.returncode == 1
    case = next(c for c in json.loads(result.stdout)["cases"]
                if c["name"] == "claude-writes-release-notes")
    assert case["outcome"] == outcome
    assert any(problem in text for text in case["problems"]), case["problems"]
