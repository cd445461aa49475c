"""Files a skill, or one of its trials, plants where the runner reads or writes: a pipe, a link
to an endless device or to a file outside the skill, a directory. Each ends in a clear message
or a verdict: never a hang, a traceback, a lost report, or a file written outside the skill.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_agentic_evals.probes.store import FILENAME

from conftest import Skill, make_skill, run_console_script, skill_fixture

PLANTS: dict[str, Callable[[Path], None]] = {
    "pipe": os.mkfifo,
    "endless-device": lambda path: path.symlink_to("/dev/zero"),
    "directory": Path.mkdir,
}


def command_line(command: str, skill: Skill, fixture: Path, output: Path) -> list[str]:
    return {"run": ["run", str(fixture), "--output", str(output)],
            "probe": ["probe", str(fixture), "--output", str(output)],
            "coverage": ["coverage", "show", str(skill.root), "--output", str(output)]}[command]


@pytest.mark.parametrize("plant", PLANTS)
@pytest.mark.parametrize("command", ["run", "probe", "coverage"])
def test_probe_results_that_are_not_a_file_are_none(
    skill: Skill, tmp_path: Path, command: str, plant: str
) -> None:
    """The probe results beside a fixture are the product's file in the skill's folder: what
    the skill put there instead is no result (and is not waited on, or read without end)."""
    fixture = skill.write(skill_fixture())
    PLANTS[plant](skill.fixtures / FILENAME)
    output = tmp_path / "output.json"
    done = run_console_script(*command_line(command, skill, fixture, output), timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), done.stderr
    document = json.loads(output.read_text())
    if command == "run":
        assert (done.returncode, document["readiness"]) == (0, "READY")
    if command == "probe":
        assert document["verdict"] == "PASSED", done.stderr
        if plant == "directory":
            assert f"the probe results are not kept: {skill.fixtures / FILENAME}" in done.stderr
        else:  # replaced by the results themselves
            assert (skill.fixtures / FILENAME).is_file()
            assert not (skill.fixtures / FILENAME).is_symlink()


def test_probe_never_writes_its_results_through_a_link_out_of_the_skill(
    skill: Skill, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.rc"
    victim.write_text("export IMPORTANT=1\n")
    fixture = skill.write(skill_fixture())
    (skill.fixtures / FILENAME).symlink_to(victim)
    done = run_console_script("probe", str(fixture), timeout=120)
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "export IMPORTANT=1\n"
    stored = json.loads((skill.fixtures / FILENAME).read_text())
    assert set(stored["fixtures"]["agentic_eval.json"]["cases"]) == {"greets",
                                                                      "refuses-empty-name"}


def test_a_trial_that_swaps_its_fixture_for_a_pipe_is_a_verdict(skill: Skill) -> None:
    """An in-place trial owns the skill's folder: it may put a pipe where its fixture was. The
    runner, which reads the fixture again to point at a failing case's line, is not stopped
    by it."""
    data = skill_fixture()
    data["cases"].append({
        "name": "swaps-its-fixture", "type": "positive", "required": False,
        "workspace": "inplace",
        "command": ["bash", "-c", "cd .. && mv fixtures fixtures-gone && mkdir fixtures && "
                                  "mkfifo fixtures/agentic_eval.json && exit 3"],
        "expected": {"exit_code": 0}})
    fixture = skill.write(data)
    done = run_console_script("run", str(fixture), "--case", "swaps-its-fixture",
                              cwd=skill.root, timeout=120)
    assert "INTERNALERROR" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    trials = [t["outcome"] for c in report["cases"] for t in c["trials"]]
    assert trials == ["FAIL", "FAIL"], report


def test_the_pytest_probe_says_when_it_cannot_keep_its_results(pytester: pytest.Pytester) -> None:
    fixture = make_skill(pytester, skill_fixture())
    (fixture.parent / FILENAME).mkdir()
    report = pytester.path / "probe.json"
    result = pytester.runpytest("--agentic-evals", "--agentic-evals-probe",
                                "--agentic-evals-report", str(report), str(fixture))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"the probe results are not kept: {fixture.parent / FILENAME}: "
                                 "a directory has that name"])
    assert json.loads(report.read_text())["fixtures"][0]["stored_at"] is None


FAKE = "x\nREADY            forged/agentic_eval.json: 9/9 cases passed\x1b[32m"


def test_names_in_a_fixture_cannot_print_lines_of_their_own(skill: Skill, tmp_path: Path) -> None:
    """A skill, seam or claim name is printed inside a line of the summary or a table: a line
    break or an escape sequence of its own would print a verdict of its choosing under the
    real one, or drive the terminal."""
    data = skill_fixture(skill=FAKE)
    data["cases"].append({"name": "broken", "type": "positive", "command": ["bash", "../run.sh"],
                          "expected": {"exit_code": 0}})
    data["seams"] = [{"seam_id": FAKE, "seam_type": "input", "criticality": "critical",
                      "required_evidence": ["live_e2e"]}]
    data["cases"][1]["seams"] = [FAKE]
    fixture = skill.write(data)
    run = run_console_script("run", str(fixture), "--output", str(tmp_path / "r.json"),
                             timeout=120)
    audit = run_console_script("coverage", "audit", str(skill.root), timeout=120)
    assert run.returncode == 1 and audit.returncode == 1, run.stderr + audit.stdout
    for output in (run.stderr, audit.stdout, audit.stderr):
        assert "\x1b" not in output
        assert not [line for line in output.splitlines() if line.startswith("READY")], output
    assert "x\\nREADY            forged" in run.stderr


@pytest.mark.parametrize(("command", "planted"), [
    (["audit-skills"], "SKILL.md"),
    (["apply-scaffolds"], "SKILL.md"),
    (["regressions", "audit"], "fixtures/regressions.json"),
])
def test_a_pipe_in_a_skill_tree_is_read_as_what_it_holds_not_waited_on(
    tmp_path: Path, command: list[str], planted: str
) -> None:
    skill = tmp_path / "tree" / "piped"
    (skill / "fixtures").mkdir(parents=True)
    if planted != "SKILL.md":
        (skill / "SKILL.md").write_text("---\nname: piped\ndescription: greets\n---\n")
    os.mkfifo(skill / planted)
    done = run_console_script(*command, str(tmp_path / "tree"), timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1, 2), done.stderr
    assert "piped" in done.stdout + done.stderr
