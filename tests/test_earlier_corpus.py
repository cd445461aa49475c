"""Files written in the earlier tool's formats (tests/data/earlier/): they load, run and give
the verdicts the earlier tool gave, or a stricter one whose message names the rule; and
``migrate`` rewrites them without changing a verdict."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.migration import migrate

from conftest import run_cli

CORPUS = Path(__file__).parent / "data" / "earlier"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return Path(shutil.copytree(CORPUS, tmp_path / "earlier"))


def run_report(fixture: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = run_cli("run", str(fixture), *extra, cwd=fixture.parent)
    assert result.stdout, result.stderr
    return result.returncode, json.loads(result.stdout)


def verdicts(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "readiness": report["readiness"],
        "cases": {case["name"]: case["outcome"] for case in report["cases"]},
        "claims": {claim_id: claim["verdict"] for claim_id, claim in claims_of(report).items()},
    }


def claims_of(report: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in report["capability_readiness"].items()
            if isinstance(value, dict) and "verdict" in value}


def test_every_corpus_fixture_validates() -> None:
    fixtures = [CORPUS / "greeter" / "fixtures" / "agentic_eval.json",
                *sorted((CORPUS / "greeter" / "fixtures" / "selftest").glob("*.json"))]
    result = run_cli("validate", *map(str, fixtures), "--allow-exempt")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("VALID: ") == len(fixtures) == 4
    # The earlier tool let a fixture exempt itself; here only the run grants it, and the
    # refusal says how.
    refused = run_cli("validate", *map(str, fixtures))
    assert (refused.returncode, refused.stdout.count("VALID: ")) == (2, 3)
    assert "exemption.json: /eval_kind: eval_kind 'runner_selftest' asks to be exempt" in \
        refused.stderr
    assert "--allow-exempt" in refused.stderr


def test_the_earlier_fixture_runs_ready_and_migrated_gives_the_same_verdict(
    corpus: Path
) -> None:
    fixture = corpus / "greeter" / "fixtures" / "agentic_eval.json"
    status, report = run_report(fixture)
    # The earlier tool: the required cases pass, the optional provider case is blocked by
    # its external blocker (never PASS), the critical claim is proven: READY, exit 0.
    assert status == 0, report["readiness"]
    assert verdicts(report) == {
        "readiness": "READY",
        "cases": {"greets": "PASS", "writes-greeting": "PASS", "refuses-empty-name": "PASS",
                  "asks-provider": "BLOCKED"},
        "claims": {"greets-by-name": "PROVEN"},
    }
    provider = report["cases"][3]
    assert {t["outcome"] for t in provider["trials"]} == {"INFRA_BLOCKED"}
    assert report["live"] is True and report["mocked"] is False
    assert report["what_was_exercised"] == ["run.sh greets a name",
                                            "run.sh refuses an empty name"]
    assert report["application_identity"] == {"repo": {"sha": "3f2a9c1", "ref": "main"}}
    assert report["cases"][0]["category_id"] == "x:greeter:greeting"

    migrated = run_cli("migrate", str(fixture), "--write")
    assert migrated.returncode == 0, migrated.stderr
    assert '+      "criticality": "critical",' in migrated.stdout
    data = json.loads(fixture.read_text())
    assert data["capability_claims"][0]["criticality"] == "critical"
    load_fixture(fixture)
    status_after, after = run_report(fixture)
    assert (status_after, verdicts(after)) == (status, verdicts(report))
    # The cases were not touched: their identity is the same generation.
    assert [c["oracle_sha256"] for c in after["cases"]] == \
        [c["oracle_sha256"] for c in report["cases"]]
    again = run_cli("migrate", str(fixture))
    assert again.returncode == 0 and again.stdout == ""
    assert "nothing to rewrite" in again.stderr


def test_the_exemption_selftest_gives_the_earlier_verdict(corpus: Path) -> None:
    fixture = corpus / "greeter" / "fixtures" / "selftest" / "exemption.json"
    status, report = run_report(fixture, "--allow-exempt")
    # Earlier: both important claims PARTIALLY_PROVEN, one with live_e2e exempt; no critical
    # claim, so not every claim PROVEN means NOT_READY, exit 1.
    assert status == 1
    assert verdicts(report)["claims"] == {"greets-by-name": "PARTIALLY_PROVEN",
                                          "refuses-empty-names": "PARTIALLY_PROVEN"}
    # Every case passed: the NOT_READY is the claims' own, as the earlier tool judged it.
    assert (report["case_readiness"], report["readiness"]) == ("READY", "NOT_READY")
    claims = claims_of(report)
    [exemption] = claims["greets-by-name"]["exempt_evidence"]
    assert exemption["evidence_class"] == "live_e2e"
    assert claims["refuses-empty-names"]["exempt_evidence"] == []
    assert exemption["review_date"] == "2027-03-01"
    assert exemption["forfeits"] == ["live latency figures"]


def test_a_selftest_fixture_belongs_to_the_skill_above_fixtures(corpus: Path) -> None:
    # The earlier tool ran fixtures/selftest/*.json from their own folder, reaching the skill
    # as ../../run.sh: the skill directory is greeter/, which each trial's workspace copies.
    fixture = corpus / "greeter" / "fixtures" / "selftest" / "runs_the_skill.json"
    loaded = load_fixture(fixture)
    assert loaded.skill_dir == corpus / "greeter"
    assert all(case.cwd == fixture.parent for case in loaded.cases)
    status, report = run_report(fixture)
    assert (status, report["readiness"], report["skill"]) == (0, "READY", "greeter"), \
        report["readiness_notes"]
    assert set(verdicts(report)["cases"].values()) == {"PASS"}
    # The greeting was written in the trial's copy of the skill, not in the corpus.
    assert not (fixture.parent / "greeting.txt").exists()


def test_a_selftest_fixture_fails_when_the_skill_above_it_breaks(corpus: Path) -> None:
    run_sh = corpus / "greeter" / "run.sh"
    run_sh.write_text(run_sh.read_text().replace('echo "hello, $1"', 'echo "hello, "'))
    status, report = run_report(corpus / "greeter" / "fixtures" / "selftest" /
                                "runs_the_skill.json")
    assert (status, report["readiness"]) == (1, "NOT_READY")
    assert verdicts(report)["cases"]["greets"] == "FAIL"


def test_the_provenance_selftest_gives_the_earlier_verdicts(corpus: Path) -> None:
    # The earlier tool's provenance vocabulary in one file: an unchanged replay (its prior
    # hashes are its own) is eligible and proves its claim, pinned by admitted_generations; a
    # refusal whose oracle was weakened with no flag declared observes PASS and is FAIL; an
    # exploration candidate, a provider's pass after healing and an oracle edited with its flag
    # declared are not evidence; the refusal claim's admission pin names the weakened oracle,
    # which is still no evidence.
    status, report = run_report(corpus / "greeter" / "fixtures" / "selftest" /
                                "provenance.json")
    assert status == 1
    assert verdicts(report) == {
        "readiness": "USABLE_WITH_GAPS",
        "cases": {"greets": "PASS", "refuses-empty-name": "FAIL", "greets-loudly": "PASS",
                  "healed-by-provider": "FAIL", "refuses-openly-edited": "FAIL"},
        "claims": {"greets-by-name": "PROVEN", "refuses-empty-names": "NOT_ESTABLISHED"},
    }
    codes = {case["name"]: (case["observed_outcome"],
                            case["evidence_eligibility"]["reason_codes"])
             for case in report["cases"]}
    assert codes == {
        "greets": ("PASS", []),
        "refuses-empty-name": ("PASS", ["undeclared_oracle_mutation"]),
        "greets-loudly": ("PASS", ["exploration_candidate_not_admitted"]),
        "healed-by-provider": ("PASS", ["external_pass_after_mutation_requires_requalification",
                                        "regression_replay_declared_mutation_requires_test_repair"]),
        "refuses-openly-edited": ("PASS", ["protected_surface_changed",
                                           "regression_replay_declared_mutation_requires_test_repair"]),
    }
    assert report["cases"][0]["generation_id"] == "gen-2"


def test_the_provenance_selftest_proves_nothing_with_the_other_generation_pinned(
    corpus: Path
) -> None:
    fixture = corpus / "greeter" / "fixtures" / "selftest" / "provenance.json"
    data = json.loads(fixture.read_text())
    data["capability_claims"][0]["admitted_generations"] = [{"case": "greets",
                                                            "generation_id": "gen-1"}]
    fixture.write_text(json.dumps(data))
    status, report = run_report(fixture)
    assert status == 1
    assert verdicts(report)["claims"]["greets-by-name"] == "NOT_ESTABLISHED"


def test_only_category_with_the_earlier_category_map(corpus: Path) -> None:
    fixtures = corpus / "greeter" / "fixtures"
    status, report = run_report(fixtures / "agentic_eval.json", "--only-category",
                                "x:greeter:greeting", "--map", str(fixtures / "category_map.json"))
    # A focused run, as the earlier tool's: only the category's case ran, and it passed.
    assert status == 0
    ran = {name for name, outcome in verdicts(report)["cases"].items() if outcome != "NOT_TESTED"}
    assert ran == {"greets"}
    assert report["readiness"] != "READY"  # a partial run never is


def test_only_category_that_matches_nothing_is_a_usage_error(corpus: Path) -> None:
    fixtures = corpus / "greeter" / "fixtures"
    result = run_cli("run", str(fixtures / "agentic_eval.json"), "--only-category", "nope",
                     "--map", str(fixtures / "category_map.json"), cwd=fixtures)
    assert result.returncode == 2
    assert "no case matches category 'nope'" in result.stderr


def test_audit_skills_accepts_the_earlier_skill(corpus: Path) -> None:
    result = run_cli("audit-skills", str(corpus), "--json")
    assert result.returncode == 0, result.stderr
    [skill] = json.loads(result.stdout)["skills"]
    assert (skill["name"], skill["posture"]) == ("greeter", "accepted_fixture")
    assert [f["status"] for f in skill["fixtures"]] == ["accepted"]


def test_coverage_accepts_seams_with_claim_ids(corpus: Path) -> None:
    result = run_cli("coverage", "show", "greeter", "--json", cwd=corpus)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    text = json.dumps(report)
    assert '"claim_id": "greets-by-name"' in text
    assert "name dropped" in text


def test_plan_journeys_reads_the_earlier_inputs(corpus: Path) -> None:
    journeys = corpus / "journeys"
    result = run_cli("plan-journeys", "--fixture", "../greeter/fixtures/agentic_eval.json",
                     "--requirements", "requirements.json",
                     "--interaction-inventory", "discovery-inventory.json",
                     "--state-graph", "state-graph.json", "-o", "plan.json", cwd=journeys)
    assert result.returncode == 0, result.stderr
    plan = json.loads((journeys / "plan.json").read_text())
    status = {j["requirement_id"]: j["binding_status"] for j in plan["journeys"]}
    # Earlier: observed = every listed control; REQ-help's control was never observed.
    assert status == {"REQ-greet": "BOUND", "REQ-help": "UNBOUND"}
    greet = next(j for j in plan["journeys"] if j["requirement_id"] == "REQ-greet")
    assert greet["weak_oracle"] is False


def plan_over(journeys: Path, graph: str, inventory: str = "discovery-inventory.json",
              *extra: str) -> tuple[int, str, dict[str, Any]]:
    result = run_cli("plan-journeys", "--fixture", "../greeter/fixtures/agentic_eval.json",
                     "--requirements", "requirements.json", "--interaction-inventory", inventory,
                     "--state-graph", graph, "-o", "plan.json", *extra, cwd=journeys)
    plan = json.loads((journeys / "plan.json").read_text()) if result.returncode != 2 else {}
    return result.returncode, result.stderr, plan


@pytest.mark.parametrize("graph", ["state-graph-transitions.json", "state-graph-free-form.json",
                                   "state-graph-empty.json"])
@pytest.mark.parametrize("inventory", ["discovery-inventory.json",
                                       "discovery-inventory-named-states.json"])
def test_plan_journeys_reads_the_earlier_free_form_state_graphs(
    corpus: Path, graph: str, inventory: str
) -> None:
    # The earlier tool read any JSON as its state graph and bound a control when discovery
    # had observed it anywhere: so here, every observed control in one state, no routes.
    status, stderr, plan = plan_over(corpus / "journeys", graph, inventory)
    assert status == 0, stderr
    assert f"{graph} is not an agentic_evals.state_graph.v1 graph" in stderr
    assert plan["graph"]["form"] == "earlier"
    assert (plan["graph"]["states"], plan["graph"]["transitions"]) == (1, 0)
    bound = {j["requirement_id"]: j["binding_status"] for j in plan["journeys"]}
    # nav:help is never observed usable (absent, or hidden): not bound, as a person cannot
    # act on it; the greeting controls are, in whichever state discovery saw them.
    assert bound == {"REQ-greet": "BOUND", "REQ-help": "UNBOUND"}
    assert plan["inputs"]["state_graph"]["path"] == graph


def test_an_earlier_graph_still_gates_a_critical_requirement(corpus: Path) -> None:
    journeys = corpus / "journeys"
    data = json.loads((journeys / "requirements.json").read_text())
    data["requirements"][1]["criticality"] = "critical"
    (journeys / "requirements.json").write_text(json.dumps(data))
    status, stderr, plan = plan_over(journeys, "state-graph-transitions.json")
    assert status == 1, stderr
    assert plan["verdict"] == "CRITICAL_GAP"


def test_a_graph_of_todays_form_is_still_checked_strictly(corpus: Path) -> None:
    # Naming initial_state makes it today's graph: a mistake in it is refused, never read
    # the earlier way.
    journeys = corpus / "journeys"
    (journeys / "broken-graph.json").write_text(json.dumps(
        {"initial_state": "home", "states": [{"id": "home"}],
         "transitions": [{"from": "home", "to": "nowhere", "action": "click",
                          "qid": "greet:submit"}]}))
    status, stderr, _ = plan_over(journeys, "broken-graph.json")
    assert status == 2
    assert "'nowhere' is not one of /states" in stderr
    (journeys / "typo-graph.json").write_text(json.dumps(
        {"schema": "agentic_evals.state_graph.v1", "states": [{"id": "home"}],
         "transitions": []}))
    status, stderr, _ = plan_over(journeys, "typo-graph.json")
    assert status == 2 and "initial_state" in stderr


def test_plan_journeys_still_refuses_raw_selectors(corpus: Path) -> None:
    journeys = corpus / "journeys"
    data = json.loads((journeys / "requirements.json").read_text())
    for qid in ("li:nth-child(2)", "form:contains", "#submit", "//button", "xpath:a"):
        data["requirements"][0]["journey"]["actions"][1]["qid"] = qid
        (journeys / "requirements.json").write_text(json.dumps(data))
        result = run_cli("plan-journeys", "--fixture", "../greeter/fixtures/agentic_eval.json",
                         "--requirements", "requirements.json",
                         "--interaction-inventory", "discovery-inventory.json",
                         "--state-graph", "state-graph.json", "-o", "plan.json", cwd=journeys)
        assert result.returncode == 2, qid
        assert "qid" in result.stderr and "Traceback" not in result.stderr, qid


def test_migrate_rewrites_the_inventory_schema_and_keeps_the_plan(corpus: Path) -> None:
    inventory = corpus / "journeys" / "discovery-inventory.json"
    data = json.loads(inventory.read_text())
    new, rewrites = migrate(data)
    assert new["schema"] == "agentic_evals.discovery_inventory.v1"
    assert rewrites == ["/schema: test_interactions.discovery.v1 -> "
                        "agentic_evals.discovery_inventory.v1"]
    assert data["schema"] == "test_interactions.discovery.v1"  # the input is not changed
    dry = run_cli("migrate", str(inventory))
    assert dry.returncode == 0
    assert "-  \"schema\": \"test_interactions.discovery.v1\"," in dry.stdout
    assert json.loads(inventory.read_text()) == data  # not written without --write


def test_migrate_refuses_what_it_does_not_know(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    for path in (other, broken, tmp_path / "missing.json"):
        result = run_cli("migrate", str(path))
        assert result.returncode == 2, path
        assert "Traceback" not in result.stderr


def test_scaffold_commands_take_the_earlier_skill(corpus: Path) -> None:
    # apply-scaffolds leaves a skill alone that has the earlier tool's fixture...
    applied = run_cli("apply-scaffolds", str(corpus), "--write")
    assert applied.returncode == 0, applied.stderr
    assert json.loads(applied.stdout)["skipped"] == [
        {"skill": "greeter", "reason": "has a fixture already (fixtures/agentic_eval.json)"}]
    # ...and, once that fixture is gone, scaffold-fixture writes one that loads.
    shutil.rmtree(corpus / "greeter" / "fixtures")
    scaffolded = run_cli("scaffold-fixture", str(corpus / "greeter"))
    assert scaffolded.returncode == 0, scaffolded.stderr
    written = load_fixture(corpus / "greeter" / "fixtures" / "agentic_eval.json",
                           accept_exemptions=True)
    assert (written.data["skill"], written.eval_kind) == ("greeter", "scaffold")
