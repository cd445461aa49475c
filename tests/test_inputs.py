"""Input artifacts people have: files of the fixture's folder (binary too), base64 bytes, and
artifacts shared by every case; with the load-time rules that keep them inside the skill."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest

from pytest_agentic_evals.loading import fixture_from_data
from pytest_agentic_evals.loading.fixture import FixtureError

from conftest import MODES, Skill, make_skill, run_cli, skill_fixture

# A few bytes that are not text: the start of a PDF, a NUL, bytes that are not UTF-8.
BINARY = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n\x00\x01\xfe\xff binary tail\n"
DIGEST = hashlib.sha256(BINARY).hexdigest()


def load(skill: Skill, data: dict[str, Any]) -> Any:
    return fixture_from_data(data, skill.fixtures / "agentic_eval.json")


def problems_of(skill: Skill, data: dict[str, Any]) -> str:
    with pytest.raises(FixtureError) as caught:
        load(skill, data)
    return str(caught.value)


def test_the_three_sources_load(skill: Skill) -> None:
    (skill.fixtures / "inputs").mkdir()
    (skill.fixtures / "inputs" / "form.pdf").write_bytes(BINARY)
    data = skill_fixture()
    data["cases"][0]["artifacts"] = [
        {"path": "in/form.pdf", "from": "inputs/form.pdf"},
        {"path": "in/logo.bin", "content_base64": base64.b64encode(BINARY).decode()},
        {"path": "in/notes.txt", "content": "plain\n"},
    ]
    inputs = load(skill, data).cases[0].input_artifacts
    assert inputs[0].source == (skill.fixtures / "inputs" / "form.pdf").resolve()
    assert inputs[0].origin == "inputs/form.pdf"
    assert inputs[1].binary == BINARY
    assert inputs[2].content == "plain\n"


def test_fixture_level_artifacts_reach_every_case_and_a_case_may_replace_one(
        skill: Skill) -> None:
    data = skill_fixture(artifacts=[{"path": "in/shared.txt", "content": "shared"},
                                    {"path": "in/config.json", "content": {"mode": "fast"}}])
    data["cases"][1]["artifacts"] = [{"path": "in/config.json", "content": {"mode": "slow"}}]
    fixture = load(skill, data)
    first, second = (case.input_artifacts for case in fixture.cases)
    assert [(a.path, a.content) for a in first] == [
        ("in/shared.txt", "shared"), ("in/config.json", {"mode": "fast"})]
    assert [(a.path, a.content) for a in second] == [
        ("in/shared.txt", "shared"), ("in/config.json", {"mode": "slow"})]


@pytest.mark.parametrize(("artifact", "pointer", "message"), [
    ({"path": "x"}, "/cases/0/artifacts/0",
     "an input artifact needs exactly one of content, content_base64 and from (it has none "
     "of them)"),
    ({"path": "x", "content": "a", "from": "inputs/form.pdf"}, "/cases/0/artifacts/0",
     "exactly one of content, content_base64 and from (it has content, from)"),
    ({"path": "x", "content_base64": "not base64!"}, "/cases/0/artifacts/0/content_base64",
     "not valid base64"),
    ({"path": "x", "from": "inputs/missing.pdf"}, "/cases/0/artifacts/0/from",
     "'inputs/missing.pdf' does not exist"),
    ({"path": "x", "from": "inputs"}, "/cases/0/artifacts/0/from", "is not a regular file"),
    ({"path": "x", "from": "/etc/hostname"}, "/cases/0/artifacts/0/from",
     "'/etc/hostname' is absolute"),
    ({"path": "x", "from": "../../outside.txt"}, "/cases/0/artifacts/0/from",
     "resolves outside the skill directory"),
    ({"path": "x", "from": "escape/passwd"}, "/cases/0/artifacts/0/from",
     "resolves outside the skill directory"),
    ({"path": "../../x", "content": "a"}, "/cases/0/artifacts/0/path",
     "resolves outside the workspace"),
    ({"path": "x", "from": ""}, "/cases/0/artifacts/0/from", "should be non-empty"),
    ({"path": "x", "content_base64": 3}, "/cases/0/artifacts/0/content_base64",
     "is an integer, expected string"),
])
def test_input_artifact_load_errors_carry_their_pointer(
        skill: Skill, artifact: dict[str, Any], pointer: str, message: str) -> None:
    (skill.fixtures / "inputs").mkdir()
    (skill.root.parent / "outside.txt").write_text("not the skill's")
    (skill.fixtures / "escape").symlink_to("/etc")
    data = skill_fixture()
    data["cases"][0]["artifacts"] = [artifact]
    text = problems_of(skill, data)
    line = next((ln for ln in text.splitlines() if f": {pointer}: " in ln), None)
    assert line is not None and message in line, text


def test_a_shared_artifact_problem_is_reported_once_at_its_own_pointer(skill: Skill) -> None:
    data = skill_fixture(artifacts=[{"path": "../../x", "content": "a"},
                                    {"path": "y", "from": "nope.bin"}])
    text = problems_of(skill, data)
    assert text.count("/artifacts/0/path: artifact path '../../x' resolves outside") == 1
    assert text.count("/artifacts/1/from: 'nope.bin' does not exist") == 1
    assert "/cases/" not in text


def test_copying_a_stub_into_the_workspace_is_still_a_stub_input(skill: Skill) -> None:
    (skill.fixtures / "mocks").mkdir()
    (skill.fixtures / "mocks" / "api_response.json").write_text("{}")
    data = skill_fixture()
    data["cases"][0]["artifacts"] = [{"path": "in/response.json",
                                      "from": "mocks/api_response.json"}]
    assert "it feeds itself stub inputs (mocks/api_response.json (copied by an input " \
           "artifact))" in problems_of(skill, data)
    data["cases"][0]["artifacts"] = [{"path": "in/response.json", "content": "{}"}]
    load(skill, data)


def binary_fixture() -> dict[str, Any]:
    """A skill whose run.sh greets; cases check the copied inputs byte for byte."""
    data = skill_fixture(artifacts=[{"path": "in/shared.bin", "from": "inputs/form.pdf"}])
    data["cases"] += [
        {"name": "copies-binary", "type": "positive",
         "command": ["bash", "-c", "sha256sum in/form.pdf in/shared.bin in/b64.bin > out.txt"],
         "artifacts": [{"path": "in/form.pdf", "from": "inputs/form.pdf"},
                       {"path": "in/b64.bin",
                        "content_base64": base64.b64encode(BINARY).decode()}],
         "expected": {"exit_code": 0, "artifacts": [
             {"path": "out.txt", "lines_contain": [f"{DIGEST}  in/form.pdf",
                                                   f"{DIGEST}  in/shared.bin",
                                                   f"{DIGEST}  in/b64.bin"]},
             {"path": "in/form.pdf", "sha256": DIGEST}]}},
        {"name": "shared-reaches-every-case", "type": "negative",
         "command": ["bash", "-c", "cmp -s in/shared.bin inputs/form.pdf && exit 3"],
         "expected": {"exit_code": 3}},
        {"name": "exact-output", "type": "positive",
         "command": ["bash", "-c", "stat -c %s in/shared.bin; cut -c1-4 in/shared.bin > out.txt"],
         "expected": {"exit_code": 0, "stdout_equals": f"{len(BINARY)}\n",
                      "artifacts": [{"path": "out.txt", "excludes": ["1.7"]}]}},
        {"name": "exact-output-differs", "type": "positive", "required": False,
         "command": ["bash", "-c", "stat -c %s in/shared.bin; cut -c1-8 in/shared.bin > out.txt"],
         "expected": {"exit_code": 0, "stdout_equals": "0\n",
                      "artifacts": [{"path": "out.txt", "lines_exclude": ["1.7"]}]}},
    ]
    return data


@pytest.mark.parametrize("mode", MODES)
def test_binary_inputs_are_copied_byte_for_byte_in_a_real_session(
        pytester: pytest.Pytester, mode: list[str]) -> None:
    make_skill(pytester, binary_fixture())
    (pytester.path / "fixtures" / "inputs").mkdir()
    (pytester.path / "fixtures" / "inputs" / "form.pdf").write_bytes(BINARY)
    report_path = pytester.path / "report.json"
    argv = ["--agentic-evals", "--agentic-evals-report", str(report_path), "-p",
            "no:cacheprovider", "-p", "no:randomly", *mode]
    result = pytester.runpytest(*argv)
    report = json.loads(report_path.read_text())
    # The optional case fails (and with it the pytest items), which never lowers readiness.
    assert report["readiness"] == "READY", result.stdout.str()
    outcomes = {case["name"]: case["outcome"] for case in report["cases"]}
    assert outcomes == {"greets": "PASS", "refuses-empty-name": "PASS", "copies-binary": "PASS",
                        "shared-reaches-every-case": "PASS", "exact-output": "PASS",
                        "exact-output-differs": "FAIL"}
    result.stdout.fnmatch_lines([
        "*stdout_equals: stdout differs from the expected text:",
        "*--- expected",
        "*+++ stdout",
        "*-0",
        f"*+{len(BINARY)}",
        "*artifacts?0? out.txt: lines_exclude: '1.7' found on line 1",
    ])


def test_the_cli_runs_binary_inputs_and_refuses_a_bad_one_with_exit_2(skill: Skill) -> None:
    (skill.fixtures / "inputs").mkdir()
    (skill.fixtures / "inputs" / "form.pdf").write_bytes(BINARY)
    skill.write(binary_fixture())
    result = run_cli("run", "fixtures/agentic_eval.json", cwd=skill.root)
    assert json.loads(result.stdout)["readiness"] == "READY", result.stderr
    (skill.fixtures / "inputs" / "form.pdf").unlink()
    result = run_cli("run", "fixtures/agentic_eval.json", cwd=skill.root)
    assert result.returncode == 2
    assert "fixtures/agentic_eval.json: /artifacts/0/from: 'inputs/form.pdf' does not exist" \
        in result.stderr
    assert "Traceback" not in result.stderr
