"""`agentic-evals plan-journeys` through the real CLI: each binding status, the state graph used
for real (unreachable states, cycles, routes from where the journey stands), the gate, the
refusal of raw selectors and of inconsistent inputs, scaffolds that load, and determinism."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from pytest_agentic_evals.journeys.documents import fast_check, schema_validator
from pytest_agentic_evals.loading import fixture_from_data, load_fixture
from pytest_agentic_evals.schemas import schema_text

from conftest import Skill, mutate_json, run_cli, skill_fixture

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "journeys"

CLAIMS = [
    {"id": "sign-in", "description": "a customer can sign in", "criticality": "critical",
     "claim_semantics": "control_flow", "evidence_required": ["deterministic"]},
    {"id": "browse", "description": "a visitor can browse the catalog",
     "criticality": "important", "evidence_required": ["deterministic"]},
]
SEAMS = [{"seam_id": "auth", "seam_type": "boundary", "criticality": "critical"}]


def ui(qid: str, action: str = "click", **extra: Any) -> dict[str, Any]:
    return {"kind": "ui", "qid": qid, "action": action, **extra}


def capable(**expected: Any) -> dict[str, Any]:
    oracle: dict[str, Any] = {"description": "checks the outcome", "failing_capable": True}
    if expected:
        oracle["expected"] = expected
    return oracle


def requirement(rid: str, actions: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"id": rid, "criticality": "important",
                            "journey": {"actions": actions, "oracles": [capable()]}}
    oracles = extra.pop("oracles", None)
    if oracles is not None:
        data["journey"]["oracles"] = oracles
    data.update(extra)
    return data


def control(qid: str, visible: bool = True, enabled: bool = True) -> dict[str, Any]:
    return {"qid": qid, "tag": "button", "visible": visible, "enabled": enabled}


class App:
    """A small application's discovery outputs, requirements and fixture, in a folder.

    home -> login -> account -> catalog -> home (a cycle); home -> catalog directly; the
    state ``secret`` has no way in.
    """

    def __init__(self, skill: Skill) -> None:
        self.root = skill.root
        self.skill = skill
        self.fixture = skill_fixture(capability_claims=copy.deepcopy(CLAIMS),
                                     seams=copy.deepcopy(SEAMS))
        self.graph: dict[str, Any] = {
            "initial_state": "home",
            "states": [{"id": s} for s in ("home", "login", "account", "catalog", "secret")],
            "transitions": [
                {"from": "home", "to": "login", "action": "click", "qid": "home.login"},
                {"from": "home", "to": "catalog", "action": "click", "qid": "home.catalog"},
                {"from": "login", "to": "account", "action": "click", "qid": "login.submit"},
                {"from": "account", "to": "catalog", "action": "click", "qid": "account.shop"},
                {"from": "catalog", "to": "home", "action": "click", "qid": "catalog.home"},
                {"from": "secret", "to": "home", "action": "click", "qid": "secret.home"},
            ],
        }
        self.inventory: dict[str, Any] = {"run_id": "r1", "url": "http://app.test/", "inventory": [
            {"state": "home", "interactives": [control("home.login"), control("home.catalog"),
                                               control("home.banner")]},
            {"state": "login", "interactives": [control("login.email"), control("login.submit")]},
            {"state": "account", "interactives": [control("account.shop"),
                                                  control("account.delete", enabled=False)]},
            {"state": "catalog", "interactives": [control("catalog.home"),
                                                  control("catalog.book")]},
            {"state": "secret", "interactives": [control("secret.home"),
                                                 control("secret.refund")]},
        ]}
        self.requirements: dict[str, Any] = {
            "schema": "agentic_evals.requirements.v1",
            "driver": {"command": ["python3", "../drive.py"]},
            "requirements": [
                requirement("sign-in", [ui("login.email", "fill", value="ada"),
                                        ui("login.submit")],
                            criticality="critical", capability_claims=["sign-in"],
                            seams=["auth"],
                            oracles=[capable(stdout_contains=["final state: account"])]),
                requirement("browse", [ui("catalog.book")], capability_claims=["browse"]),
            ],
        }

    def write(self) -> list[str]:
        self.skill.write(self.fixture)
        for name, data in (("requirements.json", self.requirements),
                           ("discovery-inventory.json", self.inventory),
                           ("state-graph.json", self.graph)):
            (self.root / name).write_text(data if isinstance(data, str)
                                          else json.dumps(data, indent=2))
        return ["--fixture", "fixtures/agentic_eval.json", "--requirements", "requirements.json",
                "--interaction-inventory", "discovery-inventory.json",
                "--state-graph", "state-graph.json", "--output", "plan.json"]

    def plan(self, *extra: str) -> tuple[int, dict[str, Any], str]:
        result = run_cli("plan-journeys", *self.write(), *extra, cwd=self.root)
        assert "Traceback" not in result.stderr
        plan_path = self.root / "plan.json"
        plan = json.loads(plan_path.read_text()) if plan_path.exists() else {}
        return result.returncode, plan, result.stdout + result.stderr

    def requirement(self, rid: str) -> dict[str, Any]:
        return next(r for r in self.requirements["requirements"] if r["id"] == rid)


@pytest.fixture
def app(skill: Skill) -> App:
    return App(skill)


def journey(plan: dict[str, Any], rid: str) -> dict[str, Any]:
    return dict(next(j for j in plan["journeys"] if j["requirement_id"] == rid))


def steps(entry: dict[str, Any]) -> list[tuple[str, ...]]:
    return [(s["kind"], s.get("from", s.get("state", "")), s.get("to", ""), s.get("qid", ""))
            for s in entry["path"]]


def assert_plan_schema(plan: dict[str, Any]) -> None:
    validator = Draft202012Validator(json.loads(schema_text("journey_plan")))
    assert [e.message for e in validator.iter_errors(plan)] == []


# ---------------------------------------------------------------------------------------------
# Binding statuses and paths
# ---------------------------------------------------------------------------------------------


def test_bound_journeys_get_the_shortest_executable_path(app: App) -> None:
    code, plan, output = app.plan()
    assert (code, plan["verdict"], plan["critical_gaps"]) == (0, "NO_GAPS", [])
    assert_plan_schema(plan)
    sign_in = journey(plan, "sign-in")
    assert sign_in["binding_status"] == "BOUND" and sign_in["missing"] == []
    assert steps(sign_in) == [("navigate", "home", "login", "home.login"),
                              ("act", "login", "login", "login.email"),
                              ("act", "login", "account", "login.submit")]
    assert sign_in["path"][1]["value"] == "ada" and sign_in["ends_in"] == "account"
    assert sign_in["coverage_satisfiable"] is True and sign_in["weak_oracle"] is False
    [email, submit] = sign_in["actions"]
    assert email["observed_in"] == [{"state": "login", "usable": True, "reachable": True,
                                     "distance": 1}]
    assert email["nearest_from_initial"] == {"state": "login", "distance": 1}
    assert submit["acted_in"] == "login"
    # home -> catalog directly (1 transition), not through login and account (3).
    assert steps(journey(plan, "browse"))[0] == ("navigate", "home", "catalog", "home.catalog")
    assert plan["summary"]["bound"] == 2 and plan["graph"]["unreachable_states"] == ["secret"]
    assert "sign-in" in output and "verdict NO_GAPS" in output


def test_partially_bound_and_unbound_name_each_missing_control(app: App) -> None:
    app.requirements["requirements"] += [
        requirement("half", [ui("catalog.book"), ui("catalog.wishlist")]),
        requirement("none", [ui("cart.pay"), ui("account.delete")]),
    ]
    code, plan, _ = app.plan()
    half, none = journey(plan, "half"), journey(plan, "none")
    assert half["binding_status"] == "PARTIALLY_BOUND"
    assert [(m["kind"], m["qid"], m["reason"]) for m in half["missing"]] == [
        ("control", "catalog.wishlist", "not_observed")]
    assert half["missing"][0]["message"] == (
        "control 'catalog.wishlist' was not observed in any state (did you mean 'catalog.home'?)")
    assert half["path_complete"] is False and len(half["path"]) == 2
    assert none["binding_status"] == "UNBOUND"
    assert [(m["qid"], m["reason"]) for m in none["missing"]] == [
        ("cart.pay", "not_observed"), ("account.delete", "not_usable")]
    assert "hidden or disabled" in none["missing"][1]["message"]
    # Neither is critical, so the gate holds; the verdict still says there are gaps.
    assert (code, plan["verdict"]) == (0, "GAPS")
    assert plan["summary"]["partially_bound"] == 1 and plan["summary"]["unbound"] == 1


def test_not_applicable_requirements_are_reported_not_planned(app: App) -> None:
    app.requirements["requirements"].append(
        {"id": "theme", "criticality": "critical", "applicable": False,
         "not_applicable_reason": "one theme by design", "capability_claims": ["sign-in"]})
    code, plan, output = app.plan()
    theme = journey(plan, "theme")
    assert theme["binding_status"] == "NOT_APPLICABLE" and theme["path"] == []
    assert theme["not_applicable_reason"] == "one theme by design"
    assert theme["weak_oracle"] is None and theme["coverage_satisfiable"] is False
    assert code == 0 and "not applicable: one theme by design" in output
    [trace] = [t for t in plan["claim_traceability"] if t["claim_id"] == "sign-in"]
    assert trace["requirements"] == ["sign-in"] and trace["traced_by_not_applicable"] == ["theme"]


def test_a_control_only_in_an_unreachable_state_is_not_bound_and_gates(app: App) -> None:
    app.requirements["requirements"].append(
        requirement("refund", [ui("secret.refund")], criticality="critical"))
    code, plan, output = app.plan()
    refund = journey(plan, "refund")
    assert refund["binding_status"] == "UNBOUND"
    [action] = refund["actions"]
    assert action["status"] == "unreachable" and action["reachable"] is False
    assert action["observed_in"] == [{"state": "secret", "usable": True, "reachable": False,
                                      "distance": None}]
    assert refund["missing"][0]["reason"] == "unreachable"
    assert (code, plan["verdict"]) == (1, "CRITICAL_GAP")
    assert [g["kind"] for g in plan["critical_gaps"]] == ["requirement_not_bound"]
    assert "CRITICAL GAP: critical requirement 'refund' is UNBOUND" in output
    code, plan, _ = app.plan("--report-only")
    assert (code, plan["verdict"]) == (0, "CRITICAL_GAP")


def test_cycles_in_the_state_graph_are_walked_once_and_routes_start_where_the_journey_is(
        app: App) -> None:
    # A self-loop and a second cycle on top of home -> login -> account -> catalog -> home.
    app.graph["transitions"].append(
        {"from": "catalog", "to": "catalog", "action": "click", "qid": "catalog.book"})
    app.requirements["requirements"].append(requirement("round-trip", [
        ui("login.submit"), ui("catalog.home"), ui("home.login"), ui("catalog.book"),
        ui("catalog.book")]))
    code, plan, _ = app.plan()
    trip = journey(plan, "round-trip")
    assert trip["binding_status"] == "BOUND" and code == 0
    assert steps(trip) == [
        ("navigate", "home", "login", "home.login"),
        ("act", "login", "account", "login.submit"),
        # From account, not from home: the route starts where the previous action left it.
        ("navigate", "account", "catalog", "account.shop"),
        ("act", "catalog", "home", "catalog.home"),
        ("act", "home", "login", "home.login"),
        ("navigate", "login", "account", "login.submit"),
        ("navigate", "account", "catalog", "account.shop"),
        ("act", "catalog", "catalog", "catalog.book"),
        ("act", "catalog", "catalog", "catalog.book"),
    ]
    assert [s["step"] for s in trip["path"]] == list(range(1, 10))


def test_a_control_reachable_only_before_a_one_way_step_has_no_route(app: App) -> None:
    # Without catalog -> home, a journey that reaches the catalog can never come back to login.
    app.graph["transitions"] = [t for t in app.graph["transitions"] if t["from"] != "catalog"]
    app.requirements["requirements"].append(
        requirement("back", [ui("catalog.book"), ui("login.email", "fill"), ui("login.submit")]))
    code, plan, _ = app.plan()
    back = journey(plan, "back")
    assert back["binding_status"] == "PARTIALLY_BOUND" and code == 0
    assert [(m["kind"], m["qid"]) for m in back["missing"]] == [("route", "login.email")]
    assert "not from state 'catalog'" in back["missing"][0]["message"]
    assert [a["status"] for a in back["actions"]] == ["bound", "no_route", "bound"]
    assert back["path_complete"] is False and back["ends_in"] is None


def test_a_transition_on_a_disabled_control_is_never_followed(app: App) -> None:
    app.inventory["inventory"][0]["interactives"][1] = control("home.catalog", visible=False)
    code, plan, _ = app.plan()
    assert code == 0
    assert plan["graph"]["unusable_transitions"] == [
        {"transition": 1, "from": "home", "to": "catalog", "qid": "home.catalog",
         "action": "click", "reason": "its control is hidden or disabled in the from state"}]
    # The catalog is now three transitions away, through login and account.
    assert [s[3] for s in steps(journey(plan, "browse"))] == [
        "home.login", "login.submit", "account.shop", "catalog.book"]


def test_command_actions_are_bound_as_given(app: App) -> None:
    app.requirements["requirements"].append(requirement(
        "export", [{"kind": "command", "command": ["python3", "../export.py", "--all"]}],
        oracles=[capable(stdout_contains=["rows exported: 3"])]))
    _, plan, _ = app.plan()
    export = journey(plan, "export")
    assert export["binding_status"] == "BOUND" and export["coverage_satisfiable"] is True
    assert export["path"] == [{"step": 1, "kind": "command", "action_index": 0,
                               "command": ["python3", "../export.py", "--all"],
                               "in_state": "home"}]


def test_unknown_claims_and_seams_keep_a_journey_from_being_bound(app: App) -> None:
    app.requirement("browse").update(capability_claims=["browsing"], seams=["catalogue"])
    _, plan, _ = app.plan()
    browse = journey(plan, "browse")
    assert browse["binding_status"] == "PARTIALLY_BOUND"
    messages = [m["message"] for m in browse["missing"]]
    assert messages == [
        "capability claim 'browsing' is not declared in the fixture (did you mean 'browse'?)",
        "seam 'catalogue' is not declared in the fixture"]


# ---------------------------------------------------------------------------------------------
# Claims, oracles, controls
# ---------------------------------------------------------------------------------------------


def test_a_missing_critical_journey_gates_and_comes_first(app: App) -> None:
    app.fixture["capability_claims"] += [
        {"id": "wishlist", "criticality": "important", "evidence_required": ["deterministic"]},
        {"id": "checkout", "criticality": "critical", "claim_semantics": "control_flow",
         "evidence_required": ["deterministic"]},
    ]
    code, plan, output = app.plan()
    assert [(m["claim_id"], m["criticality"]) for m in plan["missing_journeys"]] == [
        ("checkout", "critical"), ("wishlist", "important")]
    assert (code, plan["verdict"]) == (1, "CRITICAL_GAP")
    assert [(g["kind"], g["claim_id"]) for g in plan["critical_gaps"]] == [
        ("claim_without_journey", "checkout")]
    assert plan["summary"]["critical_missing_journeys"] == 1
    assert "missing journey: claim checkout (critical)" in output
    assert app.plan("--report-only")[0] == 0


def test_weak_oracles_are_flagged_and_gate_a_critical_requirement(app: App) -> None:
    weak = [{"description": "the page looks right", "failing_capable": False}]
    app.requirement("browse")["journey"]["oracles"] = weak
    code, plan, output = app.plan()
    browse = journey(plan, "browse")
    assert browse["weak_oracle"] is True and browse["binding_status"] == "BOUND"
    assert browse["coverage_satisfiable"] is False
    assert plan["weak_oracles"] == ["browse"]
    [trace] = [t for t in plan["claim_traceability"] if t["claim_id"] == "browse"]
    assert trace["status"] == "BOUND_WEAK_ORACLE"
    assert (code, plan["verdict"]) == (0, "GAPS")  # an important requirement: no gate
    assert "weak oracle (none failing_capable)" in output

    app.requirement("sign-in")["journey"]["oracles"] = weak
    code, plan, _ = app.plan()
    assert code == 1
    assert [(g["kind"], g.get("requirement_id", g.get("claim_id")))
            for g in plan["critical_gaps"]] == [
        ("requirement_weak_oracle", "sign-in"),
        ("claim_without_satisfiable_journey", "sign-in")]


def test_observed_controls_no_journey_uses_are_listed(app: App) -> None:
    _, plan, _ = app.plan()
    unlinked = {c["qid"]: c for c in plan["unlinked_controls"]}
    assert sorted(unlinked) == ["account.delete", "account.shop", "catalog.home", "home.banner",
                                "home.catalog", "home.login", "secret.home", "secret.refund"]
    assert unlinked["home.login"]["navigated_through"] is True
    assert unlinked["home.banner"] == {"qid": "home.banner", "observed_in_count": 1,
                                       "first_state": "home", "usable_and_reachable": True,
                                       "navigated_through": False}
    assert unlinked["secret.refund"]["usable_and_reachable"] is False
    assert unlinked["account.delete"]["usable_and_reachable"] is False


# ---------------------------------------------------------------------------------------------
# Invalid input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("qid", "kind"), [
    ("#login-button", "a raw CSS selector"),
    ("form > button.primary", "a raw CSS selector"),
    ("button[type=submit]", "a raw CSS selector"),
    ("//button[@id='login']", "a raw XPath expression"),
    ("xpath=/html/body/button", "a raw XPath expression"),
])
def test_a_raw_selector_is_invalid_input_and_no_plan_is_written(
        app: App, qid: str, kind: str) -> None:
    app.requirement("browse")["journey"]["actions"] = [ui(qid)]
    code, plan, output = app.plan()
    assert (code, plan) == (2, {})
    assert f"requirements.json: /requirements/1/journey/actions/0/qid: {json.dumps(qid)} " \
           f"is {kind}" in output


def test_a_selector_key_is_refused_as_a_raw_selector(app: App) -> None:
    app.requirement("browse")["journey"]["actions"] = [
        {"kind": "ui", "qid": "catalog.book", "action": "click", "selector": "#book"}]
    app.graph["transitions"][0]["qid"] = "a.login-link:hover"
    code, plan, output = app.plan()
    assert (code, plan) == (2, {})
    assert "requirements.json: /requirements/1/journey/actions/0/selector: raw selectors " \
           "are refused" in output
    assert 'state-graph.json: /transitions/0/qid: "a.login-link:hover" is a raw CSS selector' \
        in output


def test_every_input_problem_is_listed_at_once_with_file_and_pointer(app: App) -> None:
    (app.root / "plan.json").unlink(missing_ok=True)
    app.fixture["trials"] = 0
    app.requirements["requirements"].append(requirement("browse", [ui("catalog.book")]))
    app.requirements["requirements"][0]["criticalty"] = "critical"
    app.requirement("sign-in")["journey"]["oracles"] = [capable(stdout_contain=["x"])]
    app.inventory["inventory"].append({"state": "cart", "interactives": []})
    app.inventory["inventory"][0]["interactives"].append({"qid": "home.x", "tag": "a",
                                                          "visible": "yes", "enabled": True})
    app.graph["transitions"][2]["action"] = "Submit!"
    code, plan, output = app.plan()
    assert (code, plan) == (2, {})
    expected = [
        "fixtures/agentic_eval.json: /trials:",
        "requirements.json: /requirements/0/criticalty: unknown key 'criticalty' "
        "(did you mean 'criticality'?)",
        "requirements.json: /requirements/0/journey/oracles/0/expected/stdout_contain: "
        "unknown key 'stdout_contain' (did you mean 'stdout_contains'?)",
        "requirements.json: /requirements/2/id: duplicate requirement id 'browse' "
        "(also /requirements/1/id)",
        'discovery-inventory.json: /inventory/0/interactives/3/visible: "yes" is a string, '
        "expected boolean",
        "state-graph.json: /transitions/2/action: 'Submit!' does not match",
    ]
    for line in expected:
        assert line in output, line
    assert "plan-journeys: input rejected" in output


def test_the_inventory_and_the_graph_must_agree(app: App) -> None:
    app.inventory["inventory"].append({"state": "cart", "interactives": []})
    app.inventory["inventory"].append({"state": "home", "interactives": []})
    app.inventory["inventory"][1]["interactives"].append(control("login.email"))
    app.graph["transitions"].append({"from": "home", "to": "checkout", "action": "click",
                                     "qid": "home.login"})
    app.graph["transitions"].append({"from": "login", "to": "home", "action": "click",
                                     "qid": "login.cancel"})
    app.graph["states"].append({"id": "login"})
    app.graph["initial_state"] = "hom"
    code, _, output = app.plan()
    assert code == 2
    for line in [
        "state-graph.json: /states/5/id: duplicate state id 'login' (also /states/1/id)",
        "state-graph.json: /initial_state: initial state 'hom' is not one of /states "
        "(did you mean 'home'?)",
        "discovery-inventory.json: /inventory/5/state: state 'cart' is not a state of the "
        "state graph",
        "discovery-inventory.json: /inventory/6/state: state 'home' is listed twice "
        "(also /inventory/0/state)",
        "discovery-inventory.json: /inventory/1/interactives/2/qid: qid 'login.email' appears "
        "twice in state 'login'",
        "state-graph.json: /transitions/6/to: 'checkout' is not one of /states",
        "state-graph.json: /transitions/7/qid: the transition fires by acting on "
        "'login.cancel', which discovery-inventory.json does not list in state 'login'",
    ]:
        assert line in output, line


@pytest.mark.parametrize("content", [None, "{not json", '{"a": 1, "a": 2}', "[]"])
def test_unreadable_or_malformed_files_exit_2_without_traceback(
        app: App, content: str | None) -> None:
    args = app.write()
    target = app.root / "state-graph.json"
    if content is None:
        target.unlink()
    else:
        target.write_text(content)
    result = run_cli("plan-journeys", *args, cwd=app.root)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "state-graph.json: " in result.stderr
    assert not (app.root / "plan.json").exists()


def test_an_applicable_requirement_needs_a_journey_and_a_not_applicable_one_a_reason(
        app: App) -> None:
    app.requirements["requirements"] += [
        {"id": "no-journey", "criticality": "optional"},
        {"id": "no-reason", "criticality": "optional", "applicable": False},
    ]
    code, _, output = app.plan()
    assert code == 2
    assert "/requirements/2: 'journey' is a required property" in output
    assert "/requirements/3: 'not_applicable_reason' is a required property" in output


# ---------------------------------------------------------------------------------------------
# Scaffolds
# ---------------------------------------------------------------------------------------------


def test_scaffold_cases_load_with_the_fixture_and_skips_are_explained(app: App) -> None:
    app.requirements["requirements"] += [
        requirement("export", [{"kind": "command", "command": ["bash", "../run.sh", "Bo"]}],
                    oracles=[capable(stdout_contains=["hello, Bo"])], capability_claims=["browse"]),
        requirement("weak", [ui("catalog.book")],
                    oracles=[{"description": "looks fine", "failing_capable": False}]),
        requirement("stray-tag", [ui("catalog.book")], oracles=[capable(artifacts=[
            {"path": "out.json", "exists": True, "claim": "sign-in"}])]),
        requirement("greets", [{"kind": "command", "command": ["bash", "../run.sh", "Ada"]}],
                    oracles=[capable(stdout_contains=["Ada"])]),
    ]
    app.fixture["cases"][0]["name"] = "journey-greets"
    code, plan, output = app.plan("--scaffold-output", "scaffold.json")
    fragment = json.loads((app.root / "scaffold.json").read_text())
    assert fragment["schema"] == "agentic_evals.journey_scaffold.v1"
    assert fragment["fixture"] == "fixtures/agentic_eval.json"
    cases = {case["name"]: case for case in fragment["cases"]}
    assert sorted(cases) == ["journey-export", "journey-sign-in"]
    assert cases["journey-export"]["command"] == ["bash", "../run.sh", "Bo"]
    sign_in = cases["journey-sign-in"]
    assert sign_in["command"] == ["python3", "../drive.py", "journey-sign-in.steps.json"]
    [steps_file] = sign_in["artifacts"]
    assert steps_file["content"]["steps"] == journey(plan, "sign-in")["path"]
    assert sign_in["supports_claims"] == ["sign-in"] and sign_in["seams"] == ["auth"]
    assert sign_in["expected"] == {"exit_code": 0, "stdout_contains": ["final state: account"]}
    reasons = {item["requirement_id"]: item["reason"] for item in fragment["skipped"]}
    assert list(reasons) == ["browse", "weak", "stray-tag", "greets"]
    assert "no failing_capable oracle gives an expected check" in reasons["browse"]
    assert "no failing_capable oracle gives an expected check" in reasons["weak"]
    assert "the fixture would refuse it" in reasons["stray-tag"]
    assert "names claim 'sign-in'" in reasons["stray-tag"]
    assert reasons["greets"] == "the fixture already has a case named 'journey-greets'"
    assert "2 candidate case(s), 4 skipped" in output and code == 0

    # Appended to the fixture, the candidates load: as a file, through validate.
    merged = json.loads((app.root / "fixtures" / "agentic_eval.json").read_text())
    merged["cases"] += fragment["cases"]
    path = app.skill.write(merged, "agentic_eval_merged.json")
    result = run_cli("validate", str(path), cwd=app.root)
    assert result.returncode == 0, result.stderr
    assert "4 cases" in result.stdout


def test_oracles_that_disagree_give_no_candidate(app: App) -> None:
    app.requirement("sign-in")["journey"]["oracles"] = [
        capable(exit_code=0, stdout_contains=["a"]), capable(exit_code=3)]
    _, _, _ = app.plan("--scaffold-output", "scaffold.json")
    fragment = json.loads((app.root / "scaffold.json").read_text())
    [skipped] = [s for s in fragment["skipped"] if s["requirement_id"] == "sign-in"]
    assert skipped["reason"] == "oracles disagree on expected exit_code: 0 and 3"


def test_a_ui_journey_needs_a_driver_to_be_scaffolded(app: App) -> None:
    del app.requirements["driver"]
    app.plan("--scaffold-output", "scaffold.json")
    fragment = json.loads((app.root / "scaffold.json").read_text())
    assert fragment["cases"] == []
    assert "declares no driver" in fragment["skipped"][0]["reason"]


# ---------------------------------------------------------------------------------------------
# Determinism, the worked example, schemas
# ---------------------------------------------------------------------------------------------


def test_the_plan_is_byte_identical_for_the_same_inputs(app: App, tmp_path: Path) -> None:
    app.plan("--scaffold-output", "scaffold.json")
    first = (app.root / "plan.json").read_bytes(), (app.root / "scaffold.json").read_bytes()
    app.plan("--scaffold-output", "scaffold.json")
    assert ((app.root / "plan.json").read_bytes(),
            (app.root / "scaffold.json").read_bytes()) == first
    # From another working directory, with absolute paths: the same bytes.
    args = [str(app.root / a) if a.endswith(".json") else a for a in app.write()]
    result = run_cli("plan-journeys", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (app.root / "plan.json").read_bytes() == first[0]
    assert not list(app.root.glob(".plan.json.*"))  # the atomic write left no temporary file


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
    result = run_cli("run", "agentic_eval.json", "--report-only", cwd=copy_dir)
    report = json.loads(result.stdout)
    assert {c["name"]: c["outcome"] for c in report["cases"]} == {
        "driver-replays-a-route": "PASS", "driver-refuses-a-disabled-control": "PASS",
        "journey-sign-in": "PASS", "journey-buy-a-book": "PASS"}


def test_the_example_fixture_loads() -> None:
    fixture = load_fixture(EXAMPLE / "agentic_eval.json")
    assert fixture.eval_kind == "runner_selftest"
    scaffold = json.loads((EXAMPLE / "journey-scaffold.json").read_text())
    merged = {**fixture.data, "cases": [*fixture.data["cases"], *scaffold["cases"]]}
    assert len(fixture_from_data(merged, fixture.path).cases) == 4


@pytest.mark.parametrize("name", ["requirements", "discovery-inventory", "state-graph",
                                  "journey-plan"])
def test_schema_prints_the_journey_schemas(name: str) -> None:
    result = run_cli("schema", name)
    assert result.returncode == 0
    schema = json.loads(result.stdout)
    Draft202012Validator.check_schema(schema)
    assert schema["$id"].endswith(f"{name.replace('-', '_')}.v1.json")


def test_the_example_inputs_meet_their_schemas() -> None:
    for name, schema in (("requirements.json", "requirements"),
                         ("discovery-inventory.json", "discovery_inventory"),
                         ("state-graph.json", "state_graph")):
        data = json.loads((EXAMPLE / name).read_text())
        assert list(schema_validator(schema).iter_errors(data)) == []
        fast = fast_check(schema)
        assert fast is not None and fast(data)


# The compiled check may refuse what the schema accepts (jsonschema then has the last word),
# never the other way round. Mutations of the example's valid documents find the edges.
_EXAMPLE_DOCUMENTS = {schema: json.loads((EXAMPLE / name).read_text()) for name, schema in (
    ("requirements.json", "requirements"), ("discovery-inventory.json", "discovery_inventory"),
    ("state-graph.json", "state_graph"))}
_scalar = st.one_of(st.sampled_from(["home", "home.login", "", "#x", "a b", "click", "Click",
                                     "command", "ui", "agentic_evals.requirements.v1"]),
                    st.text(max_size=3), st.booleans(), st.integers(-1, 2), st.none(),
                    st.just(1.0), st.just([]), st.just({}), st.just(["x", "x"]))
_keys = st.sampled_from(["state", "interactives", "qid", "tag", "visible", "enabled", "id",
                         "from", "to", "action", "kind", "journey", "actions", "oracles",
                         "failing_capable", "applicable", "not_applicable_reason", "command",
                         "selector", "expected", "extra"])


@st.composite
def _mutated(draw: st.DrawFn) -> tuple[str, Any]:
    schema = draw(st.sampled_from(sorted(_EXAMPLE_DOCUMENTS)))
    document = copy.deepcopy(_EXAMPLE_DOCUMENTS[schema])
    return schema, mutate_json(draw, document, _scalar, _keys)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_mutated())
def test_the_compiled_check_never_accepts_what_the_schema_refuses(case: tuple[str, Any]) -> None:
    schema, document = case
    fast = fast_check(schema)
    assert fast is not None
    refused = list(schema_validator(schema).iter_errors(document))
    if fast(document):
        assert refused == []
