"""`agentic-evals plan-journeys` as a user runs it: exit codes 0, 1 and 2, which files are
written and which are not, ``--report-only``, ``--scaffold-output``, the same bytes from any
working directory, and the worked example's committed plan. What the plan says is tested
in-process in test_journeys.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from journey_app import App, assert_plan_schema, requirement, ui

from pytest_agentic_evals.loading import load_fixture

from conftest import Skill, run_cli

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "journeys"


@pytest.fixture
def app(skill: Skill) -> App:
    return App(skill)


def plan_journeys(app: App, *extra: str) -> tuple[int, str, str]:
    result = run_cli("plan-journeys", *app.write(), *extra, cwd=app.root)
    assert "Traceback" not in result.stderr
    return result.returncode, result.stdout, result.stderr


def test_exit_0_writes_the_plan_and_prints_a_row_per_requirement(app: App) -> None:
    code, stdout, stderr = plan_journeys(app)
    assert code == 0, stderr
    plan = json.loads((app.root / "plan.json").read_text())
    assert_plan_schema(plan)
    assert plan["verdict"] == "NO_GAPS"
    rows = stdout.splitlines()
    assert rows[0].startswith("REQUIREMENT") and rows[1].startswith("sign-in")
    assert rows[-1].endswith("verdict NO_GAPS")
    assert stderr == "plan: plan.json\n"
    assert not (app.root / "scaffold.json").exists()


def test_the_earlier_tools_preconditions_and_evidence_required_are_copied_into_the_plan(
    app: App,
) -> None:
    first = app.requirements["requirements"][0]
    first["preconditions"] = ["a signed-up user", {"state": "logged out"}]
    first["evidence_required"] = ["live_e2e"]
    code, _, stderr = plan_journeys(app)
    assert code == 0, stderr
    plan = json.loads((app.root / "plan.json").read_text())
    assert_plan_schema(plan)
    journey = next(j for j in plan["journeys"] if j["requirement_id"] == first["id"])
    assert journey["preconditions"] == ["a signed-up user", {"state": "logged out"}]
    assert journey["evidence_required"] == ["live_e2e"]
    others = [j for j in plan["journeys"] if j["requirement_id"] != first["id"]]
    assert others and all("preconditions" not in j for j in others)


@pytest.mark.parametrize(("extra", "code"), [
    pytest.param([], 1, id="gate"),
    pytest.param(["--report-only"], 0, id="report-only"),
])
def test_a_critical_gap_exits_1_unless_report_only(
        app: App, extra: list[str], code: int) -> None:
    app.add(requirement("refund", [ui("secret.refund")], criticality="critical"))
    returned, stdout, _ = plan_journeys(app, *extra)
    assert returned == code
    assert "  CRITICAL GAP: critical requirement 'refund' is UNBOUND" in stdout
    # Written either way: the plan is what explains the gap.
    assert json.loads((app.root / "plan.json").read_text())["verdict"] == "CRITICAL_GAP"


def break_graph_file(app: App) -> None:
    (app.root / "state-graph.json").write_text("{not json")


def raw_selector(app: App) -> None:
    app.requirement("browse")["journey"]["actions"] = [ui("#book")]
    app.write()


def inconsistent_graph(app: App) -> None:
    app.graph["initial_state"] = "hom"
    app.write()


@pytest.mark.parametrize(("spoil", "line"), [
    pytest.param(break_graph_file, "  - state-graph.json: (document): invalid JSON at line 1, "
                 "column 2: Expecting property name enclosed in double quotes",
                 id="not-json"),
    pytest.param(raw_selector, '  - requirements.json: /requirements/1/journey/actions/0/qid: '
                 '"#book" is a raw CSS selector', id="schema"),
    pytest.param(inconsistent_graph, "  - state-graph.json: /initial_state: initial state 'hom' "
                 "is not one of /states (did you mean 'home'?)", id="inventory-and-graph"),
])
def test_invalid_input_exits_2_and_writes_nothing(app: App, spoil: Any, line: str) -> None:
    args = app.write()
    # A plan left by an earlier run is not touched.
    earlier = '{"schema": "agentic_evals.journey_plan.v1", "journeys": []}'
    (app.root / "plan.json").write_text(earlier)
    spoil(app)
    result = run_cli("plan-journeys", *args, "--scaffold-output", "scaffold.json",
                     cwd=app.root)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("plan-journeys: input rejected")
    assert any(text.startswith(line) for text in result.stderr.splitlines()), result.stderr
    assert result.stdout == ""
    assert (app.root / "plan.json").read_text() == earlier
    assert not (app.root / "scaffold.json").exists()


def test_an_output_that_cannot_be_written_exits_2(app: App) -> None:
    (app.root / "taken").write_text("a file, not a folder")
    result = run_cli("plan-journeys", *app.write()[:-1], "taken/plan.json", cwd=app.root)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "taken/plan.json: cannot be created: " in result.stderr
    assert result.stderr.rstrip().endswith("taken is not a directory")


def test_scaffold_output_writes_candidate_cases_that_load(app: App) -> None:
    code, _, stderr = plan_journeys(app, "--scaffold-output", "scaffold.json")
    assert code == 0
    assert "scaffold: scaffold.json (1 candidate case(s), 1 skipped)" in stderr
    fragment = json.loads((app.root / "scaffold.json").read_text())
    assert [case["name"] for case in fragment["cases"]] == ["journey-sign-in"]
    merged = {**app.fixture, "cases": [*app.fixture["cases"], *fragment["cases"]]}
    assert len(load_fixture(app.skill.write(merged, "merged.json")).cases) == 3


def test_the_same_bytes_from_another_directory_with_absolute_paths(
        app: App, tmp_path: Path) -> None:
    plan_journeys(app, "--scaffold-output", "scaffold.json")
    first = (app.root / "plan.json").read_bytes(), (app.root / "scaffold.json").read_bytes()
    args = [str(app.root / a) if a.endswith(".json") else a for a in app.write()]
    result = run_cli("plan-journeys", *args, "--scaffold-output",
                     str(app.root / "scaffold.json"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert ((app.root / "plan.json").read_bytes(),
            (app.root / "scaffold.json").read_bytes()) == first
    assert not list(app.root.glob(".*.json.*"))  # the atomic writes left no temporary file


def test_the_worked_example_produces_the_committed_plan(tmp_path: Path) -> None:
    copy_dir = tmp_path / "journeys"
    shutil.copytree(EXAMPLE, copy_dir)
    for produced in ("journey-plan.json", "journey-scaffold.json"):
        (copy_dir / produced).unlink()
    result = run_cli("plan-journeys", "--fixture", "agentic_eval.json",
                     "--requirements", "requirements.json",
                     "--interaction-inventory", "discovery-inventory.json",
                     "--state-graph", "state-graph.json", "--output", "journey-plan.json",
                     "--scaffold-output", "journey-scaffold.json", cwd=copy_dir)
    assert result.returncode == 1, result.stderr  # the example's missing critical journey
    for produced in ("journey-plan.json", "journey-scaffold.json"):
        assert (copy_dir / produced).read_bytes() == (EXAMPLE / produced).read_bytes(), (
            f"docs/examples/journeys/{produced} is stale: regenerate it (see "
            "docs/commands/plan-journeys.md)")
    plan = json.loads((copy_dir / "journey-plan.json").read_text())
    assert_plan_schema(plan)
    assert sorted({j["binding_status"] for j in plan["journeys"]}) == [
        "BOUND", "NOT_APPLICABLE", "PARTIALLY_BOUND", "UNBOUND"]
    # The example's scaffolded cases really run, against the example's model of the shop.
    fixture = json.loads((copy_dir / "agentic_eval.json").read_text())
    fixture["cases"] += json.loads((copy_dir / "journey-scaffold.json").read_text())["cases"]
    (copy_dir / "agentic_eval.json").write_text(json.dumps(fixture))
    result = run_cli("run", "agentic_eval.json", "--allow-exempt", "--report-only", cwd=copy_dir)
    report = json.loads(result.stdout)
    assert {c["name"]: c["outcome"] for c in report["cases"]} == {
        "driver-replays-a-route": "PASS", "driver-refuses-a-disabled-control": "PASS",
        "journey-sign-in": "PASS", "journey-buy-a-book": "PASS"}


def test_schema_prints_a_journey_schema() -> None:
    result = run_cli("schema", "journey-plan")
    assert result.returncode == 0
    assert json.loads(result.stdout)["$id"].endswith("journey_plan.v1.json")


@pytest.mark.parametrize("scaffold", ["plan.json", "./plan.json"])
def test_one_file_named_as_both_the_plan_and_the_scaffold_is_refused(
    app: App, scaffold: str
) -> None:
    """The scaffold was written second, over the plan: the plan that was announced was lost."""
    code, stdout, stderr = plan_journeys(app, "--scaffold-output", scaffold)
    assert code == 2
    assert stderr.splitlines() == [
        f"agentic-evals: --scaffold-output {scaffold}: is also --output: name two files"]
    assert stdout == ""
    assert not (app.root / "plan.json").exists()
