"""The command-line spellings of the earlier tool: ``-o``, ``--timeout-seconds``,
``--only-category [--map]``, ``regressions verify --report-only``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from pytest_agentic_evals.cli.main import COMMANDS, build_parser
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.categories import (
    CategoryError,
    category_cases,
    load_category_map,
)

from conftest import Skill, run_cli, skill_fixture


def _options(parser: argparse.ArgumentParser, path: str = "") -> list[tuple[str, list[str]]]:
    """(command path, option strings) of every option of every command and action."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _options(sub, f"{path} {name}".strip())
        elif action.option_strings:
            found.append((path, list(action.option_strings)))
    return found


def test_every_command_with_output_also_takes_o() -> None:
    options = _options(build_parser(tuple(COMMANDS)))
    with_output = [(path, strings) for path, strings in options if "--output" in strings]
    assert len({path for path, _ in with_output}) >= 8  # run, regressions x3, coverage, ...
    assert [path for path, strings in with_output if "-o" not in strings] == []


def categorised(skill: Skill) -> Path:
    data = skill_fixture()
    data["cases"][0]["category_id"] = "x:greeter:greeting"
    data["cases"][0]["command"] = ["bash", "-c", "../run.sh Ada; sleep 30"]
    data["cases"][1]["category"] = "refusal"
    return skill.write(data)


def test_run_only_category_timeout_seconds_and_o(skill: Skill, tmp_path: Path) -> None:
    output = tmp_path / "report.json"
    result = run_cli("run", str(categorised(skill)), "--only-category", "x:greeter:greeting",
                     "--timeout-seconds", "0.5", "-o", str(output), cwd=skill.root)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert json.loads(output.read_text()) == report
    assert report["selection"] == "partial"
    assert [case["outcome"] for case in report["cases"]] == ["FAIL", "NOT_TESTED"]
    assert all(trial["timed_out"] for trial in report["cases"][0]["trials"])


def test_run_only_category_that_matches_nothing_exits_2(skill: Skill) -> None:
    result = run_cli("run", str(categorised(skill)), "--only-category", "nothing",
                     cwd=skill.root)
    assert result.returncode == 2
    assert "no case explicitly matches category 'nothing'" in result.stderr
    assert "Traceback" not in result.stderr


def test_map_without_only_category_is_a_usage_error(skill: Skill, tmp_path: Path) -> None:
    result = run_cli("run", str(categorised(skill)), "--map", str(tmp_path / "m.json"),
                     cwd=skill.root)
    assert result.returncode == 2
    assert "--map only serves --only-category" in result.stderr


def write_map(tmp_path: Path, categories: object) -> str:
    path = tmp_path / "category_map.json"
    path.write_text(json.dumps({"schema": "agentic_evals.category_map.v1", "repo": "o/greeter",
                                "categories": categories}))
    return str(path)


def test_category_selection_explicit_and_through_a_map(skill: Skill, tmp_path: Path) -> None:
    data = skill_fixture()
    data["cases"][0]["category"] = "greeting"
    data["cases"][1]["seams"] = ["empty-name"]
    data["seams"] = [{"seam_id": "empty-name", "required_evidence": ["deterministic"]}]
    fixture = load_fixture(skill.write(data))
    assert category_cases([fixture], "greeting", None) == ["greets"]
    # a case is also selected by its name, as before
    assert category_cases([fixture], "refuses-empty-name", None) == ["refuses-empty-name"]
    with pytest.raises(CategoryError, match="pass --map"):
        category_cases([fixture], "x:greeter:names", None)
    mapped = load_category_map(write_map(tmp_path, {
        "names": {"category_id": "x:greeter:names", "seams": ["empty-name"]},
        "greeting": {"category_id": "x:greeter:greeting", "seams": ["empty-name"]},
    }))
    # seams relate the case without a category; the one naming its own category keeps it
    assert category_cases([fixture], "x:greeter:names", mapped) == ["refuses-empty-name"]
    assert category_cases([fixture], "names", mapped) == ["refuses-empty-name"]
    assert category_cases([fixture], "greeting", mapped) == ["greets", "refuses-empty-name"]
    with pytest.raises(CategoryError, match="no case matches category 'other'"):
        category_cases([fixture], "other", mapped)


@pytest.mark.parametrize("content, message", [
    (None, "cannot read category map"),
    ("{", "not a JSON category map"),
    ('{"schema": "other"}', "not a category map"),
    ('{"schema": "agentic_evals.category_map.v1", "categories": {}}', "non-empty object"),
    ('{"schema": "agentic_evals.category_map.v1", "categories": {"a": {}}}', "category_id"),
    ('{"schema": "agentic_evals.category_map.v1", "categories": {"a": {"category_id": "a", '
     '"seams": "empty-name"}}}', "category 'a': \"seams\" must be a list of strings"),
    ('{"schema": "agentic_evals.category_map.v1", "categories": {"a": {"category_id": "a", '
     '"supports_claims": [1]}}}', "\"supports_claims\" must be a list of strings"),
])
def test_a_bad_category_map_is_one_message(tmp_path: Path, content: str | None,
                                           message: str) -> None:
    path = tmp_path / "map.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(CategoryError, match=message):
        load_category_map(str(path))


@pytest.mark.parametrize("command", ["categorize", "category-dag", "remediate",
                                     "remediate-loop"])
def test_an_earlier_command_that_is_gone_says_what_to_do_instead(
    tmp_path: Path, command: str
) -> None:
    result = run_cli(command, "report.json", "--map", "map.json", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(f"agentic-evals: {command} was a command of the earlier "
                                     "tool: ")
    assert "--only-category" in result.stderr


@pytest.mark.parametrize("option", ["--validator=checks/validate_skill.py",
                                    "--timeout-seconds=10"])
@pytest.mark.parametrize("command", ["audit-skills", "apply-scaffolds"])
def test_an_earlier_option_of_the_skill_tree_commands_says_why_it_is_gone(
    tmp_path: Path, command: str, option: str
) -> None:
    result = run_cli(command, str(tmp_path), option, cwd=tmp_path)
    assert result.returncode == 2
    name = option.split("=")[0]
    assert f"{name} was an option of the earlier tool's {command}: " in result.stderr
    assert "leave the option out" in result.stderr
