"""Messages a person reads without a second look: natural wording, a did-you-mean, a warning
from ``validate`` of what a run would only find out later."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.fixture import FixtureError

from conftest import Skill, run_cli, skill_fixture


def messages(path: Path) -> list[str]:
    with pytest.raises(FixtureError) as caught:
        load_fixture(path)
    return [f"{problem.pointer}: {problem.message}" for problem in caught.value.problems]


def test_a_container_of_the_wrong_type_is_said_naturally(skill: Skill) -> None:
    found = messages(skill.write(skill_fixture(env=["A=1"])))
    assert "/env: expected an object, not an array" in found, found


def test_a_fixture_version_this_tool_does_not_read(skill: Skill) -> None:
    found = messages(skill.write(skill_fixture(version=1)))
    assert any(m.startswith("/version: version 1 is not a fixture version this tool reads: "
                            'write "version": 2') for m in found), found


def test_a_missing_script_gets_a_did_you_mean(skill: Skill) -> None:
    data = skill_fixture()
    data["cases"][0]["command"] = ["bash", "../runn.sh", "Ada"]
    found = messages(skill.write(data))
    assert any("script ../runn.sh does not exist" in m and "did you mean 'run.sh'?" in m
               for m in found), found


@pytest.mark.parametrize("command", ["check-skill", "scaffold-fixture"])
def test_a_skill_folder_that_is_not_there_does_not_exist(tmp_path: Path, command: str) -> None:
    result = run_cli(command, str(tmp_path / "missing-dir"), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == f"{tmp_path / 'missing-dir'}: does not exist"


def test_validate_warns_of_a_program_that_is_not_installed(skill: Skill) -> None:
    data = skill_fixture()
    data["cases"].append({"name": "lints", "type": "positive",
                          "command": ["no-such-program-here", "../run.sh"],
                          "expected": {"exit_code": 0}})
    result = run_cli("validate", str(skill.write(data)), cwd=skill.root)
    assert result.returncode == 0, result.stderr  # a FAIL of its trials, not a load error
    assert ("warning: fixtures/agentic_eval.json: /cases/2/command/0: program "
            "'no-such-program-here' not found (it is not on PATH): the trials of case "
            "'lints' will FAIL with \"command not found\"") in result.stderr


def test_validate_is_quiet_about_programs_that_are_there(skill: Skill) -> None:
    result = run_cli("validate", str(skill.fixture()), cwd=skill.root)
    assert result.returncode == 0 and "warning" not in result.stderr
