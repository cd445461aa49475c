"""The journey planner, called in-process: each binding status, the state graph used for real
(reachability, unreachable states, cycles and self-loops, routes from where the journey
stands, ties broken by input order), claims and oracles, the critical gaps that gate,
scaffolds that load, and determinism. Its inputs' checks are tested in
test_journeys_inputs.py, the command in test_journeys_cli.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from journey_app import (
    WEAK_ORACLES,
    App,
    assert_plan_schema,
    capable,
    command,
    control,
    journey,
    requirement,
    steps,
    ui,
)

from pytest_agentic_evals.journeys import build_plan, build_scaffold, exit_status, lines
from pytest_agentic_evals.journeys.router import Router
from pytest_agentic_evals.jsonio import flat_on_one_line, json_text
from pytest_agentic_evals.loading import load_fixture

from conftest import Skill


@pytest.fixture
def app(skill: Skill) -> App:
    return App(skill)


def gap_kinds(plan: dict[str, Any]) -> list[tuple[str, str]]:
    return [(g["kind"], g.get("requirement_id", g.get("claim_id", ""))) for g in
            plan["critical_gaps"]]


# ---------------------------------------------------------------------------------------------
# Reachability and routes through the state graph
# ---------------------------------------------------------------------------------------------


def test_reachability_is_the_shortest_distance_from_the_initial_state(app: App) -> None:
    net = app.load().network
    distance = {state: net.distance[net.index[state]] for state in net.state_ids}
    assert distance == {"home": 0, "login": 1, "account": 2, "catalog": 1, "secret": -1}
    # The catalog is entered by home -> catalog (transition 1), not through login and account.
    assert net.via[net.index["catalog"]] == 1
    assert net.via[net.index["home"]] == -1 and net.via[net.index["secret"]] == -1


@pytest.mark.parametrize(("first", "route"), [
    pytest.param("home.login", ["home.login", "login.submit"], id="login-listed-first"),
    pytest.param("home.catalog", ["home.catalog", "catalog.book"], id="catalog-listed-first"),
])
def test_a_tie_between_shortest_routes_goes_to_the_transition_listed_first(
        app: App, first: str, route: list[str]) -> None:
    # Two routes of two transitions to the account: through login, or through the catalog.
    app.graph["transitions"].append(
        {"from": "catalog", "to": "account", "action": "click", "qid": "catalog.book"})
    app.graph["transitions"].sort(key=lambda t: t["qid"] != first)
    app.add(requirement("shop", [ui("account.shop")]))
    path = steps(journey(app.plan(), "shop"))
    assert [qid for kind, _, _, qid in path if kind == "navigate"] == route


def add_help_button(app: App, *states: str) -> None:
    """A help button in each of ``states``."""
    for entry in app.inventory["inventory"]:
        if entry["state"] in states:
            entry["interactives"].append(control("help"))


@pytest.mark.parametrize(("order", "acted_in"), [
    pytest.param(["home", "login", "account", "catalog", "secret"], "login", id="login-first"),
    pytest.param(["home", "catalog", "login", "account", "secret"], "catalog",
                 id="catalog-first"),
])
def test_of_two_equally_near_states_the_journey_goes_to_the_state_listed_first(
        app: App, order: list[str], acted_in: str) -> None:
    # The help button is one transition from home both in login and in the catalog.
    app.graph["states"] = [{"id": state} for state in order]
    add_help_button(app, "login", "catalog")
    app.add(requirement("help", [ui("help")]))
    [action] = journey(app.plan(), "help")["actions"]
    assert action["acted_in"] == acted_in
    assert action["nearest_from_initial"] == {"state": acted_in, "distance": 1}


@pytest.mark.parametrize(("first", "acted_in"), [
    pytest.param("catalog.home", "home", id="to-home-listed-first"),
    pytest.param("catalog.signin", "login", id="to-login-listed-first"),
])
def test_from_where_the_journey_stands_a_tie_goes_to_the_transition_listed_first(
        app: App, first: str, acted_in: str) -> None:
    # From the catalog, home and login are one transition away, and both have the button.
    app.graph["transitions"].append(
        {"from": "catalog", "to": "login", "action": "click", "qid": "catalog.signin"})
    app.graph["transitions"].sort(key=lambda t: t["qid"] != first)
    app.inventory["inventory"][3]["interactives"].append(control("catalog.signin"))
    add_help_button(app, "home", "login")
    app.add(requirement("help", [ui("catalog.book"), ui("help")]))
    entry = journey(app.plan(), "help")
    assert entry["actions"][1]["acted_in"] == acted_in
    assert steps(entry)[-2:] == [("navigate", "catalog", acted_in, first),
                                 ("act", acted_in, acted_in, "help")]


@pytest.mark.parametrize(("start", "qid", "goal", "expected"), [
    pytest.param("account", "home.login", "home", ("home", ["account.shop", "catalog.home"]),
                 id="around-the-cycle"),
    pytest.param("catalog", "login.email", "login", ("login", ["catalog.home", "home.login"]),
                 id="back-through-home"),
    pytest.param("secret", "home.login", "home", ("home", ["secret.home"]),
                 id="from-a-state-unreachable-from-the-start"),
    pytest.param("login", "login.email", "login", ("login", []), id="already-there"),
    pytest.param("home", "secret.refund", "secret", None, id="no-way-in"),
])
def test_routes_between_states_are_shortest_or_none(
        app: App, start: str, qid: str, goal: str,
        expected: tuple[str, list[str]] | None) -> None:
    net = app.load().network
    found = Router(net).between(net.index[start], qid, [net.index[goal]])
    if expected is None:
        assert found is None
        return
    assert found is not None
    state, route = found
    assert (net.state_ids[state], [net.transitions.qid[t] for t in route]) == expected


def test_a_transition_on_a_disabled_control_is_never_followed(app: App) -> None:
    app.inventory["inventory"][0]["interactives"][1] = control("home.catalog", visible=False)
    plan = app.plan()
    assert plan["graph"]["unusable_transitions"] == [
        {"transition": 1, "from": "home", "to": "catalog", "qid": "home.catalog",
         "action": "click", "reason": "its control is hidden or disabled in the from state"}]
    # The catalog is now three transitions away, through login and account.
    assert [s[3] for s in steps(journey(plan, "browse"))] == [
        "home.login", "login.submit", "account.shop", "catalog.book"]


# ---------------------------------------------------------------------------------------------
# Binding statuses and paths
# ---------------------------------------------------------------------------------------------


def test_bound_journeys_get_the_shortest_executable_path(app: App) -> None:
    plan = app.plan()
    assert (plan["verdict"], plan["critical_gaps"], exit_status(plan, False)) == (
        "NO_GAPS", [], 0)
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
    assert plan["graph"]["reachable_states"] == 4


def test_the_lines_show_a_row_per_requirement_and_the_verdict(app: App) -> None:
    assert lines(app.plan()) == [
        "REQUIREMENT                  CRIT      BINDING          STEPS  NOTE",
        "sign-in                      critical  BOUND                3  -",
        "browse                       important BOUND                2  -",
        "  8 observed control(s) no journey uses (unlinked_controls)",
        "2 requirement(s): 2 BOUND, 0 PARTIALLY_BOUND, 0 UNBOUND, 0 NOT_APPLICABLE; "
        "verdict NO_GAPS",
    ]


@pytest.mark.parametrize(("actions", "status", "missing"), [
    pytest.param([ui("catalog.book"), ui("catalog.wishlist")], "PARTIALLY_BOUND",
                 [("catalog.wishlist", "not_observed")], id="one-control-not-observed"),
    pytest.param([ui("cart.pay"), ui("account.delete")], "UNBOUND",
                 [("cart.pay", "not_observed"), ("account.delete", "not_usable")],
                 id="no-control-bound"),
    pytest.param([ui("secret.refund")], "UNBOUND", [("secret.refund", "unreachable")],
                 id="only-in-an-unreachable-state"),
    pytest.param([command("python3", "../export.py")], "BOUND", [], id="a-command"),
    pytest.param([ui("catalog.book"), command("python3", "../check.py")], "BOUND", [],
                 id="ui-then-command"),
])
def test_the_binding_status_says_how_much_of_the_journey_is_bound(
        app: App, actions: list[dict[str, Any]], status: str,
        missing: list[tuple[str, str]]) -> None:
    app.add(requirement("new", actions))
    entry = journey(app.plan(), "new")
    assert entry["binding_status"] == status
    assert [(m["qid"], m["reason"]) for m in entry["missing"]] == missing
    assert all(m["kind"] == "control" for m in entry["missing"])


@pytest.mark.parametrize(("qid", "message"), [
    pytest.param("catalog.wishlist", "control 'catalog.wishlist' was not observed in any "
                 "state (did you mean 'catalog.home'?)", id="not-observed"),
    pytest.param("account.delete", "control 'account.delete' is observed only hidden or "
                 "disabled, in 'account'", id="not-usable"),
    pytest.param("secret.refund", "control 'secret.refund' is observed only in state(s) "
                 "unreachable from the initial state 'home': 'secret'", id="unreachable"),
])
def test_a_control_that_cannot_be_bound_is_explained(app: App, qid: str, message: str) -> None:
    app.add(requirement("new", [ui(qid)]))
    [action] = journey(app.plan(), "new")["actions"]
    assert action["message"] == message and action["reachable"] is False


def test_a_control_seen_in_many_states_shows_the_nearest_ten_and_counts_the_rest(
        app: App) -> None:
    # A help button hidden in twelve states: the message names ten and counts two more.
    for n in range(12):
        app.graph["states"].append({"id": f"page{n:02d}"})
        app.inventory["inventory"].append(
            {"state": f"page{n:02d}", "interactives": [control("help", visible=False)]})
    app.add(requirement("help", [ui("help")]))
    [action] = journey(app.plan(), "help")["actions"]
    assert action["observed_in_count"] == 12 and len(action["observed_in"]) == 10
    assert action["message"] == ("control 'help' is observed only hidden or disabled, in "
                                 + ", ".join(f"'page{n:02d}'" for n in range(10))
                                 + " and 2 more")


def test_the_path_stops_at_the_first_control_that_cannot_be_bound(app: App) -> None:
    app.add(requirement("half", [ui("catalog.book"), ui("catalog.wishlist"),
                                 ui("catalog.home")]))
    half = journey(app.plan(), "half")
    assert steps(half) == [("navigate", "home", "catalog", "home.catalog"),
                           ("act", "catalog", "catalog", "catalog.book")]
    assert half["path_complete"] is False and half["ends_in"] is None
    # The control after the gap is still looked up, and bound where it was observed.
    assert [a["status"] for a in half["actions"]] == ["bound", "not_observed", "bound"]


def test_gaps_of_requirements_that_are_not_critical_do_not_gate(app: App) -> None:
    app.add(requirement("half", [ui("catalog.book"), ui("catalog.wishlist")]),
            requirement("none", [ui("cart.pay")]))
    plan = app.plan()
    assert (plan["verdict"], exit_status(plan, False)) == ("GAPS", 0)
    assert (plan["summary"]["partially_bound"], plan["summary"]["unbound"]) == (1, 1)


def test_not_applicable_requirements_are_reported_not_planned(app: App) -> None:
    app.add({"id": "theme", "criticality": "critical", "applicable": False,
             "not_applicable_reason": "one theme by design", "capability_claims": ["sign-in"]})
    plan = app.plan()
    theme = journey(plan, "theme")
    assert theme["binding_status"] == "NOT_APPLICABLE" and theme["path"] == []
    assert theme["not_applicable_reason"] == "one theme by design"
    assert theme["weak_oracle"] is None and theme["coverage_satisfiable"] is False
    assert (plan["verdict"], exit_status(plan, False)) == ("NO_GAPS", 0)
    assert "theme                        critical  NOT_APPLICABLE       0  not applicable: " \
           "one theme by design" in lines(plan)
    [trace] = [t for t in plan["claim_traceability"] if t["claim_id"] == "sign-in"]
    assert trace["requirements"] == ["sign-in"] and trace["traced_by_not_applicable"] == ["theme"]


def test_a_critical_control_only_in_an_unreachable_state_gates(app: App) -> None:
    app.add(requirement("refund", [ui("secret.refund")], criticality="critical"))
    plan = app.plan()
    refund = journey(plan, "refund")
    [action] = refund["actions"]
    assert action["status"] == "unreachable"
    assert action["observed_in"] == [{"state": "secret", "usable": True, "reachable": False,
                                      "distance": None}]
    assert plan["verdict"] == "CRITICAL_GAP" and gap_kinds(plan) == [
        ("requirement_not_bound", "refund")]
    assert (exit_status(plan, False), exit_status(plan, True)) == (1, 0)
    assert ("  CRITICAL GAP: critical requirement 'refund' is UNBOUND: control 'secret.refund' "
            "is observed only in state(s) unreachable from the initial state 'home': 'secret'"
            ) in lines(plan)


def test_cycles_and_self_loops_are_walked_and_routes_start_where_the_journey_is(
        app: App) -> None:
    # A self-loop and a second cycle on top of home -> login -> account -> catalog -> home.
    app.graph["transitions"].append(
        {"from": "catalog", "to": "catalog", "action": "click", "qid": "catalog.book"})
    app.add(requirement("round-trip", [
        ui("login.submit"), ui("catalog.home"), ui("home.login"), ui("catalog.book"),
        ui("catalog.book")]))
    trip = journey(app.plan(), "round-trip")
    assert trip["binding_status"] == "BOUND"
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
    assert [s["transition"] for s in trip["path"] if s["qid"] == "catalog.book"] == [6, 6]


def test_a_control_reachable_only_before_a_one_way_step_has_no_route(app: App) -> None:
    # Without catalog -> home, a journey that reaches the catalog can never come back to login.
    app.graph["transitions"] = [t for t in app.graph["transitions"] if t["from"] != "catalog"]
    app.add(requirement("back", [ui("catalog.book"), ui("login.email", "fill"),
                                 ui("login.submit")]))
    back = journey(app.plan(), "back")
    assert back["binding_status"] == "PARTIALLY_BOUND"
    assert [(m["kind"], m["qid"]) for m in back["missing"]] == [("route", "login.email")]
    assert back["missing"][0]["message"] == (
        "control 'login.email' is reachable from the initial state but not from state "
        "'catalog', where action 0 left the journey")
    assert [a["status"] for a in back["actions"]] == ["bound", "no_route", "bound"]
    assert back["path_complete"] is False and back["ends_in"] is None


def test_command_actions_are_bound_as_given(app: App) -> None:
    app.add(requirement("export", [command("python3", "../export.py", "--all")],
                        oracles=[capable(stdout_contains=["rows exported: 3"])]))
    export = journey(app.plan(), "export")
    assert export["binding_status"] == "BOUND" and export["coverage_satisfiable"] is True
    assert export["path"] == [{"step": 1, "kind": "command", "action_index": 0,
                               "command": ["python3", "../export.py", "--all"],
                               "in_state": "home"}]


def test_unknown_claims_and_seams_keep_a_journey_from_being_bound(app: App) -> None:
    app.requirement("browse").update(capability_claims=["browsing"], seams=["catalogue"])
    browse = journey(app.plan(), "browse")
    assert browse["binding_status"] == "PARTIALLY_BOUND"
    assert [m["message"] for m in browse["missing"]] == [
        "capability claim 'browsing' is not declared in the fixture (did you mean 'browse'?)",
        "seam 'catalogue' is not declared in the fixture"]


# ---------------------------------------------------------------------------------------------
# Claims, oracles, controls, critical gaps
# ---------------------------------------------------------------------------------------------


def test_a_missing_critical_journey_gates_and_comes_first(app: App) -> None:
    app.fixture["capability_claims"] += [
        {"id": "wishlist", "criticality": "important", "evidence_required": ["deterministic"]},
        {"id": "checkout", "criticality": "critical", "claim_semantics": "control_flow",
         "evidence_required": ["deterministic"]},
    ]
    plan = app.plan()
    assert [(m["claim_id"], m["criticality"]) for m in plan["missing_journeys"]] == [
        ("checkout", "critical"), ("wishlist", "important")]
    assert plan["verdict"] == "CRITICAL_GAP"
    assert gap_kinds(plan) == [("claim_without_journey", "checkout")]
    assert plan["summary"]["critical_missing_journeys"] == 1
    assert "  missing journey: claim checkout (critical) has no applicable requirement" \
        in lines(plan)
    assert (exit_status(plan, False), exit_status(plan, True)) == (1, 0)


@pytest.mark.parametrize(("rid", "verdict", "gaps"), [
    pytest.param("browse", "GAPS", [], id="important-requirement"),
    pytest.param("sign-in", "CRITICAL_GAP", [("requirement_weak_oracle", "sign-in"),
                                             ("claim_without_satisfiable_journey", "sign-in")],
                 id="critical-requirement"),
])
def test_a_weak_oracle_is_flagged_and_gates_only_a_critical_requirement(
        app: App, rid: str, verdict: str, gaps: list[tuple[str, str]]) -> None:
    app.requirement(rid)["journey"]["oracles"] = copy.deepcopy(WEAK_ORACLES)
    plan = app.plan()
    entry = journey(plan, rid)
    assert entry["weak_oracle"] is True and entry["binding_status"] == "BOUND"
    assert entry["coverage_satisfiable"] is False and plan["weak_oracles"] == [rid]
    [trace] = [t for t in plan["claim_traceability"] if t["claim_id"] == rid]
    assert trace["status"] == "BOUND_WEAK_ORACLE"
    assert (plan["verdict"], gap_kinds(plan)) == (verdict, gaps)
    assert exit_status(plan, False) == (1 if gaps else 0)
    assert any(line.startswith(rid) and line.endswith("weak oracle (none failing_capable)")
               for line in lines(plan))


@pytest.mark.parametrize(("change", "status"), [
    pytest.param({}, "SATISFIABLE", id="bound-with-a-failing-capable-oracle"),
    pytest.param({"journey": {"actions": [ui("catalog.book")], "oracles": WEAK_ORACLES}},
                 "BOUND_WEAK_ORACLE", id="bound-with-only-weak-oracles"),
    pytest.param({"journey": {"actions": [ui("secret.refund")], "oracles": [capable()]}},
                 "NOT_BOUND", id="traced-but-not-bound"),
    pytest.param({"capability_claims": []}, "MISSING", id="traced-by-no-requirement"),
    pytest.param({"applicable": False, "not_applicable_reason": "later", "journey": None},
                 "MISSING", id="traced-only-by-a-not-applicable-requirement"),
])
def test_claim_traceability(app: App, change: dict[str, Any], status: str) -> None:
    browse = app.requirement("browse")
    browse.update(copy.deepcopy(change))
    if browse.get("journey") is None:
        browse.pop("journey", None)
    [trace] = [t for t in app.plan()["claim_traceability"] if t["claim_id"] == "browse"]
    assert trace["status"] == status


@pytest.mark.parametrize(("change", "gaps"), [
    pytest.param(lambda app: app.add(requirement("refund", [ui("secret.refund")],
                                                 criticality="critical")),
                 [("requirement_not_bound", "refund")], id="critical-requirement-not-bound"),
    pytest.param(lambda app: app.add(requirement("refund", [ui("secret.refund")])),
                 [], id="important-requirement-not-bound"),
    pytest.param(lambda app: app.requirement("sign-in")["journey"].update(
                     actions=[ui("secret.refund")]),
                 [("requirement_not_bound", "sign-in"),
                  ("claim_without_satisfiable_journey", "sign-in")],
                 id="critical-claim-traced-by-an-unbound-requirement"),
    pytest.param(lambda app: app.requirement("sign-in").update(capability_claims=[]),
                 [("claim_without_journey", "sign-in")], id="critical-claim-traced-by-none"),
    pytest.param(lambda app: app.add({"id": "later", "criticality": "critical",
                                      "applicable": False, "not_applicable_reason": "later",
                                      "capability_claims": ["checkout"]}),
                 [], id="critical-but-not-applicable"),
])
def test_critical_gaps(app: App, change: Any, gaps: list[tuple[str, str]]) -> None:
    change(app)
    plan = app.plan()
    assert gap_kinds(plan) == gaps
    assert exit_status(plan, False) == (1 if gaps else 0)
    assert (plan["verdict"] == "CRITICAL_GAP") == bool(gaps)


def test_observed_controls_no_journey_uses_are_listed(app: App) -> None:
    unlinked = {c["qid"]: c for c in app.plan()["unlinked_controls"]}
    assert sorted(unlinked) == ["account.delete", "account.shop", "catalog.home", "home.banner",
                                "home.catalog", "home.login", "secret.home", "secret.refund"]
    assert unlinked["home.login"]["navigated_through"] is True
    assert unlinked["home.banner"] == {"qid": "home.banner", "observed_in_count": 1,
                                       "first_state": "home", "usable_and_reachable": True,
                                       "navigated_through": False}
    assert unlinked["secret.refund"]["usable_and_reachable"] is False
    assert unlinked["account.delete"]["usable_and_reachable"] is False


# ---------------------------------------------------------------------------------------------
# Candidate fixture cases
# ---------------------------------------------------------------------------------------------


def scaffold_of(app: App) -> tuple[dict[str, Any], dict[str, Any]]:
    inputs = app.load()
    plan = build_plan(inputs, app.root / "plan.json")
    return plan, build_scaffold(inputs, plan, app.root / "scaffold.json")


def test_scaffold_cases_replay_the_journey_and_load_with_the_fixture(app: App) -> None:
    app.add(requirement("export", [command("bash", "../run.sh", "Bo")],
                        oracles=[capable(stdout_contains=["hello, Bo"])],
                        capability_claims=["browse"]))
    plan, fragment = scaffold_of(app)
    assert fragment["schema"] == "agentic_evals.journey_scaffold.v1"
    assert fragment["fixture"] == "fixtures/agentic_eval.json"
    cases = {case["name"]: case for case in fragment["cases"]}
    assert sorted(cases) == ["journey-export", "journey-sign-in"]
    assert cases["journey-export"]["command"] == ["bash", "../run.sh", "Bo"]
    assert cases["journey-export"]["supports_claims"] == ["browse"]
    sign_in = cases["journey-sign-in"]
    assert sign_in["command"] == ["python3", "../drive.py", "journey-sign-in.steps.json"]
    [steps_file] = sign_in["artifacts"]
    assert steps_file["path"] == "journey-sign-in.steps.json"
    assert steps_file["content"] == {
        "schema": "agentic_evals.journey_steps.v1", "requirement_id": "sign-in",
        "url": "http://app.test/", "initial_state": "home",
        "steps": journey(plan, "sign-in")["path"]}
    assert sign_in["supports_claims"] == ["sign-in"] and sign_in["seams"] == ["auth"]
    assert sign_in["expected"] == {"exit_code": 0, "stdout_contains": ["final state: account"]}
    # Appended to the fixture, the candidates load.
    merged = {**app.fixture, "cases": [*app.fixture["cases"], *fragment["cases"]]}
    path = app.skill.write(merged, "agentic_eval_merged.json")
    assert [case.name for case in load_fixture(path).cases] == [
        "greets", "refuses-empty-name", "journey-sign-in", "journey-export"]


def test_oracles_checks_are_merged_into_one_expected(app: App) -> None:
    app.requirement("sign-in")["journey"]["oracles"] = [
        capable(stdout_contains=["a"]), capable(stdout_contains=["b", "a"], exit_code=0),
        {"description": "looks right", "failing_capable": False,
         "expected": {"stderr_contains": ["ignored"]}}]
    _, fragment = scaffold_of(app)
    [case] = fragment["cases"]
    assert case["expected"] == {"exit_code": 0, "stdout_contains": ["a", "b"]}


@pytest.mark.parametrize(("change", "rid", "reason"), [
    pytest.param(lambda app: None, "browse", "no failing_capable oracle gives an expected "
                 "check: a case that checks only exit 0 proves nothing (add expected to an "
                 "oracle)", id="no-expected-check"),
    pytest.param(lambda app: app.add(requirement("weak", [ui("catalog.book")],
                                                 oracles=copy.deepcopy(WEAK_ORACLES))),
                 "weak", "no failing_capable oracle gives an expected check: a case that "
                 "checks only exit 0 proves nothing (add expected to an oracle)",
                 id="weak-oracle"),
    pytest.param(lambda app: app.requirement("sign-in")["journey"].update(oracles=[
                     capable(exit_code=0, stdout_contains=["a"]), capable(exit_code=3)]),
                 "sign-in", "oracles disagree on expected exit_code: 0 and 3",
                 id="oracles-disagree"),
    pytest.param(lambda app: app.requirements.pop("driver"), "sign-in",
                 "requirements.json declares no driver to replay a journey of several steps "
                 "(set driver.command)", id="no-driver"),
    pytest.param(lambda app: app.fixture["cases"][0].update(name="journey-sign-in"),
                 "sign-in", "the fixture already has a case named 'journey-sign-in'",
                 id="name-taken"),
    pytest.param(lambda app: app.requirement("sign-in")["journey"].update(oracles=[capable(
                     artifacts=[{"path": "out.json", "exists": True, "claim": "browse"}])]),
                 "sign-in", "the fixture would refuse it: ", id="the-loader-refuses-it"),
])
def test_a_candidate_that_would_not_do_is_skipped_with_the_reason(
        app: App, change: Any, rid: str, reason: str) -> None:
    change(app)
    _, fragment = scaffold_of(app)
    skipped = {item["requirement_id"]: item["reason"] for item in fragment["skipped"]}
    assert rid not in {case["name"].removeprefix("journey-") for case in fragment["cases"]}
    if reason.endswith(": "):
        assert skipped[rid].startswith(reason) and "names claim 'browse'" in skipped[rid]
    else:
        assert skipped[rid] == reason


def test_skipped_candidates_are_listed_in_plan_order(app: App) -> None:
    app.add(requirement("weak", [ui("catalog.book")], oracles=copy.deepcopy(WEAK_ORACLES)),
            requirement("stray", [ui("catalog.book")], oracles=[capable(artifacts=[
                {"path": "out.json", "exists": True, "claim": "sign-in"}])]),
            requirement("plain", [ui("catalog.book")]))
    _, fragment = scaffold_of(app)
    # "stray" is refused by the loader after the others were skipped for their oracles.
    assert [item["requirement_id"] for item in fragment["skipped"]] == [
        "browse", "weak", "stray", "plain"]


# ---------------------------------------------------------------------------------------------
# Determinism
# ---------------------------------------------------------------------------------------------


def test_the_same_inputs_give_the_same_plan_text(app: App) -> None:
    app.graph["transitions"].append(
        {"from": "catalog", "to": "account", "action": "click", "qid": "catalog.book"})
    first, first_fragment = scaffold_of(app)
    again, again_fragment = scaffold_of(app)
    assert json_text(again, flat_on_one_line) == json_text(first, flat_on_one_line)
    assert json_text(again_fragment, flat_on_one_line) == \
        json_text(first_fragment, flat_on_one_line)


def test_a_journey_does_not_depend_on_the_other_requirements(app: App) -> None:
    # Routes are cached between journeys: the order they are planned in changes nothing.
    app.add(requirement("round-trip", [ui("login.submit"), ui("catalog.home"),
                                       ui("home.login")]),
            requirement("back", [ui("catalog.book"), ui("login.email", "fill")]))
    forwards = app.plan()["journeys"]
    app.requirements["requirements"].reverse()
    assert app.plan()["journeys"] == list(reversed(forwards))


def test_input_paths_are_shown_relative_to_the_plan(app: App) -> None:
    plan = build_plan(app.load(), app.root / "plans" / "plan.json")
    assert [entry["path"] for entry in plan["inputs"].values()] == [
        "../fixtures/agentic_eval.json", "../requirements.json", "../discovery-inventory.json",
        "../state-graph.json"]
