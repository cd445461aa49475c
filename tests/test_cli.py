"""The ``agentic-evals`` command as a user runs it: a real subprocess, real fixtures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_agentic_evals.loading import load_fixture

from conftest import Skill, interruptible, pid_alive, run_cli, skill_fixture

REPO = Path(__file__).resolve().parent.parent


def test_validate_accepts_and_names_cases(skill: Skill) -> None:
    path = skill.fixture()
    result = run_cli("validate", str(path), cwd=skill.root)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "VALID: fixtures/agentic_eval.json (2 cases, trials=2)\n"


def test_validate_lists_every_problem_and_exits_2(skill: Skill) -> None:
    data = skill_fixture(trials=1)
    data["cases"][0]["expected"]["stdout_contain"] = ["x"]
    data["cases"][1]["expected"]["exit_code"] = "2"
    good = skill.fixture()
    bad = skill.write(data, name="bad.json")
    result = run_cli("validate", str(good), str(bad), cwd=skill.root)
    assert result.returncode == 2
    assert "VALID: fixtures/agentic_eval.json" in result.stdout
    assert "fixtures/bad.json: /cases/0/expected/stdout_contain: unknown key" in result.stderr
    assert "fixtures/bad.json: /cases/1/expected/exit_code: \"2\" is a string" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("content", [None, "{not json", "[]"])
def test_validate_bad_files_exit_2_without_traceback(skill: Skill, content: str | None) -> None:
    path = skill.fixtures / "broken.json"
    if content is not None:
        path.write_text(content)
    result = run_cli("validate", str(path), cwd=skill.root)
    assert result.returncode == 2
    assert "fixtures/broken.json" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_directory_or_missing_path_is_a_clear_error(skill: Skill) -> None:
    result = run_cli("validate", str(skill.fixtures), str(skill.root / "nope.json"),
                     cwd=skill.root)
    assert result.returncode == 2
    assert "cannot read fixture: Is a directory" in result.stderr
    assert "cannot read fixture: No such file or directory" in result.stderr
    result = run_cli("run", str(skill.root / "nope.json"), cwd=skill.root)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_schema_prints_the_shipped_schemas() -> None:
    for name, title in (("fixture", "fixture, version 2"), ("report", "report.v2"),
                        ("session-report", "session report")):
        result = run_cli("schema", name)
        assert result.returncode == 0
        assert title in json.loads(result.stdout)["title"]
    assert run_cli("schema", "nope").returncode == 2


def test_run_ready_prints_only_the_report_on_stdout(skill: Skill, tmp_path: Path) -> None:
    output = tmp_path / "nested" / "report.json"
    result = run_cli("run", str(skill.fixture()), "--output", str(output), cwd=skill.root)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["readiness"] == "READY"
    assert json.loads(output.read_text()) == report
    assert "passed" in result.stderr  # pytest's progress goes to stderr
    assert not list(output.parent.glob(".report.json.*"))  # no temporary file left


def test_run_failing_case_exits_1_and_report_only_exits_0(skill: Skill) -> None:
    data = skill_fixture()
    data["cases"][1]["expected"]["exit_code"] = 0
    path = skill.write(data)
    result = run_cli("run", str(path), cwd=skill.root)
    assert result.returncode == 1
    assert json.loads(result.stdout)["readiness"] == "USABLE_WITH_GAPS"
    assert ("refuses-empty-name (0/2 trials passed): trial 1: exit_code: expected 0, got 2"
            in result.stderr)
    result = run_cli("run", str(path), "--report-only", cwd=skill.root)
    assert result.returncode == 0
    assert json.loads(result.stdout)["readiness"] == "USABLE_WITH_GAPS"


def test_run_rejected_fixture_exits_2_and_runs_nothing(skill: Skill) -> None:
    marker = skill.root / "ran"
    data = skill_fixture(trials=1)
    data["cases"][0]["command"] = ["bash", "-c", f"touch {marker}; ../run.sh x"]
    result = run_cli("run", str(skill.write(data)), cwd=skill.root)
    assert result.returncode == 2
    assert "trials is 1" in result.stderr
    assert result.stdout == ""
    assert not marker.exists()


def test_case_selection_is_partial_and_never_ready(skill: Skill) -> None:
    data = skill_fixture()
    data["cases"][1]["expected"]["exit_code"] = 0  # broken, but not selected
    path = skill.write(data)
    result = run_cli("run", str(path), "--case", "greets", cwd=skill.root)
    assert result.returncode == 0
    report = json.loads(result.stdout)
    assert report["selection"] == "partial"
    assert report["readiness"] == "USABLE_WITH_GAPS"
    assert [c["outcome"] for c in report["cases"]] == ["PASS", "NOT_TESTED"]
    result = run_cli("run", str(path), "--case", "no-such-case", cwd=skill.root)
    assert result.returncode == 2
    assert "unknown case(s): no-such-case" in result.stderr


def test_pytest_arguments_pass_through(skill: Skill) -> None:
    result = run_cli("run", str(skill.fixture()), "--", "-n", "2", "-k", "greets", cwd=skill.root)
    assert result.returncode == 0, result.stderr
    assert "2 workers" in result.stderr
    assert json.loads(result.stdout)["selection"] == "partial"
    result = run_cli("run", str(skill.fixture()), "--", "--no-such-option", cwd=skill.root)
    assert result.returncode == 2


def test_bundled_fixtures_are_valid_and_honest() -> None:
    own = load_fixture(REPO / "fixtures" / "agentic_eval.json")
    assert own.eval_kind == "skill"  # no exemption: the product is judged like any skill
    assert any(case.type == "adversarial" for case in own.cases)
    example = load_fixture(REPO / "docs" / "examples" / "coreutils" / "agentic_eval.json")
    assert example.eval_kind == "skill"


def test_bundled_example_runs_ready() -> None:
    example = REPO / "docs" / "examples" / "coreutils" / "agentic_eval.json"
    result = run_cli("run", str(example))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["readiness"] == "READY"
    assert report["summary"]["passed"] == 4


def test_ctrl_c_during_run_stops_cleanly(skill: Skill, tmp_path: Path) -> None:
    marker = f"cli-ctrl-c-{os.getpid()}"
    data = skill_fixture()
    data["cases"][0]["command"] = [
        "bash", "-c", f"python3 -c 'import time; time.sleep(300)' {marker}; ../run.sh x"
    ]
    data["cases"][0]["timeout_seconds"] = 600
    output = tmp_path / "report.json"
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "agentic-evals"), "run", str(skill.write(data)),
         "--output", str(output)],
        cwd=skill.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        start_new_session=True,  # a terminal's Ctrl-C reaches the whole foreground group
        preexec_fn=interruptible,
    )

    def sleepers() -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if marker.encode() in (entry / "cmdline").read_bytes():
                        found.append(int(entry.name))
                except OSError:
                    continue
        return [pid for pid in found if pid_alive(pid)]

    deadline = time.monotonic() + 60
    while not sleepers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sleepers(), "the trial never started"
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr.decode()
    assert "Traceback" not in stderr.decode()
    assert not sleepers()
    if output.exists():
        assert json.loads(output.read_text())["interrupted"] is True
    if stdout.strip():  # a report on stdout is whole JSON, never a fragment
        assert json.loads(stdout)["interrupted"] is True


@pytest.mark.parametrize(
    ("command", "words"),
    [
        (["bash", "-c", "echo ok; true"], "proves nothing"),
        (["bash", "-lc", "echo hi"], "proves nothing"),
        (["/bin/sh", "-c", "printf x"], "proves nothing"),
        (["env", "FOO=1", "bash", "-c", "true"], "proves nothing"),
        (["echo", "run.sh"], "is not real-world"),
        (["bash", "../missing.sh"], "is not real-world"),
    ],
)
def test_validate_refuses_self_serving_real_world_cases(
    skill: Skill, command: list[str], words: str
) -> None:
    data = skill_fixture()
    data["cases"][0]["command"] = command
    result = run_cli("validate", str(skill.write(data)), cwd=skill.root)
    assert result.returncode == 2
    assert "/cases/0/command: " in result.stderr
    assert words in result.stderr


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"eval_kind": "scaffold"}, "compliance fixture can never be exempt"),
        ({"sampled": ["../run.sh", "--samples=5"]}, "--samples 5"),
        ({"sampled": ["../run.sh", "--seed", "7"]}, "no non-deterministic case"),
    ],
)
def test_validate_enforces_the_compliance_tier(skill: Skill, extra: dict, words: str) -> None:
    data = skill_fixture(eval_tier="compliance")
    data["cases"].append({"name": "sampled", "type": "adversarial",
                          "command": extra.pop("sampled", ["../run.sh", "--samples", "60"]),
                          "expected": {"exit_code": 0}})
    data.update(extra)
    result = run_cli("validate", str(skill.write(data)), cwd=skill.root)
    assert result.returncode == 2
    assert words in result.stderr
    data["eval_kind"] = "skill"
    data["cases"][2]["command"] = ["../run.sh", "--samples", "60", "--seed", "{random_seed}"]
    result = run_cli("validate", str(skill.write(data)), cwd=skill.root)
    assert result.returncode == 0, result.stderr
