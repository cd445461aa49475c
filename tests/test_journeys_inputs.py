"""The journey planner's inputs, checked in-process: raw selectors refused by name, every
problem of every file listed at once with its file and JSON pointer, the inventory and the
state graph checked against each other, the shipped schemas and their compiled check."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from journey_app import App, capable, control, requirement, ui
from jsonschema import Draft202012Validator

from pytest_agentic_evals.cli.main import build_parser
from pytest_agentic_evals.journeys.documents import (
    fast_check,
    raw_selector_message,
    schema_validator,
)
from pytest_agentic_evals.loading import fixture_from_data, load_fixture
from pytest_agentic_evals.problems import Problem
from pytest_agentic_evals.schemas import schema_text

from conftest import Skill, mutate_json

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "journeys"
QID_ADVICE = ": name the control by its stable qid as discovery records it (letters, digits, " \
             "spaces and _ . : - only)"


@pytest.fixture
def app(skill: Skill, monkeypatch: pytest.MonkeyPatch) -> App:
    # Problems name files as a user would type them: relative to the working directory.
    monkeypatch.chdir(skill.root)
    return App(skill)


# ---------------------------------------------------------------------------------------------
# Every problem, with its file and JSON pointer
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("qid", "kind"), [
    ("#login-button", "a raw CSS selector"),
    ("form > button.primary", "a raw CSS selector"),
    ("button[type=submit]", "a raw CSS selector"),
    ("//button[@id='login']", "a raw XPath expression"),
    ("xpath=/html/body/button", "a raw XPath expression"),
])
def test_a_raw_selector_in_a_requirement_is_refused(app: App, qid: str, kind: str) -> None:
    app.requirement("browse")["journey"]["actions"] = [ui(qid)]
    assert app.problems()[0] == [Problem(
        "requirements.json", "/requirements/1/journey/actions/0/qid",
        f"{json.dumps(qid)} is {kind}{QID_ADVICE}")]


@pytest.mark.parametrize(("value", "message"), [
    ("a.login-link:hover", '"a.login-link:hover" is a raw CSS selector' + QID_ADVICE),
    ("login!", '"login!" is not a stable qid' + QID_ADVICE),
    ("sign\nin", '"sign\\nin" is not a stable qid (it holds a control character: a line '
                  'break, a tab)' + QID_ADVICE),
    (7, "7 is not a qid"),
])
def test_raw_selector_message(value: Any, message: str) -> None:
    assert raw_selector_message(value) == message


def test_a_selector_key_is_refused_as_a_raw_selector(app: App) -> None:
    app.requirement("browse")["journey"]["actions"] = [
        {"kind": "ui", "qid": "catalog.book", "action": "click", "selector": "#book"}]
    assert app.problems()[0] == [Problem(
        "requirements.json", "/requirements/1/journey/actions/0/selector",
        "raw selectors are refused ('selector'): name the control by its stable qid, as "
        "discovery records it")]


def test_a_raw_selector_in_the_state_graph_is_refused(app: App) -> None:
    app.graph["transitions"][0]["qid"] = "a.login-link:hover"
    problems, headline = app.problems()
    assert problems == [Problem("state-graph.json", "/transitions/0/qid",
                                '"a.login-link:hover" is a raw CSS selector' + QID_ADVICE)]
    # The graph and the inventory are compared only once both are well-formed.
    assert headline == ("plan-journeys: input rejected; the inventory and the state graph are "
                        "checked against each other once these are fixed")


@pytest.mark.parametrize(("change", "problem"), [
    pytest.param(lambda r: r[0].update(criticalty="critical"),
                 ("/requirements/0/criticalty",
                  "unknown key 'criticalty' (did you mean 'criticality'?)"), id="unknown-key"),
    pytest.param(lambda r: r[0]["journey"].update(oracles=[capable(stdout_contain=["x"])]),
                 ("/requirements/0/journey/oracles/0/expected/stdout_contain",
                  "unknown key 'stdout_contain' (did you mean 'stdout_contains'?)"),
                 id="oracle-expected-the-fixture-refuses"),
    pytest.param(lambda r: r.append(requirement("browse", [ui("catalog.book")])),
                 ("/requirements/2/id",
                  "duplicate requirement id 'browse' (also /requirements/1/id)"),
                 id="duplicate-id"),
    pytest.param(lambda r: r.append({"id": "no-journey", "criticality": "optional"}),
                 ("/requirements/2", "'journey' is a required property"),
                 id="applicable-without-journey"),
    pytest.param(lambda r: r.append({"id": "no-reason", "criticality": "optional",
                                     "applicable": False}),
                 ("/requirements/2", "'not_applicable_reason' is a required property"),
                 id="not-applicable-without-reason"),
])
def test_a_requirements_problem_is_named_at_its_pointer(
        app: App, change: Any, problem: tuple[str, str]) -> None:
    change(app.requirements["requirements"])
    assert app.problems()[0] == [Problem("requirements.json", *problem)]


@pytest.mark.parametrize(("change", "problem"), [
    pytest.param(lambda app: app.graph["states"].append({"id": "login"}),
                 ("state-graph.json", "/states/5/id",
                  "duplicate state id 'login' (also /states/1/id)"), id="duplicate-state"),
    pytest.param(lambda app: app.graph.update(initial_state="hom"),
                 ("state-graph.json", "/initial_state",
                  "initial state 'hom' is not one of /states (did you mean 'home'?)"),
                 id="unknown-initial-state"),
    pytest.param(lambda app: app.inventory["inventory"].append(
                     {"state": "logn", "interactives": []}),
                 ("discovery-inventory.json", "/inventory/5/state",
                  "state 'logn' is not a state of the state graph state-graph.json "
                  "(did you mean 'login'?)"), id="inventory-state-not-in-graph"),
    pytest.param(lambda app: app.inventory["inventory"].append(
                     {"state": "home", "interactives": []}),
                 ("discovery-inventory.json", "/inventory/5/state",
                  "state 'home' is listed twice (also /inventory/0/state)"),
                 id="inventory-state-twice"),
    pytest.param(lambda app: app.inventory["inventory"][1]["interactives"].append(
                     control("login.email")),
                 ("discovery-inventory.json", "/inventory/1/interactives/2/qid",
                  "qid 'login.email' appears twice in state 'login': a qid names one control"),
                 id="qid-twice-in-a-state"),
    pytest.param(lambda app: app.graph["transitions"].append(
                     {"from": "home", "to": "acount", "action": "click", "qid": "home.login"}),
                 ("state-graph.json", "/transitions/6/to",
                  "'acount' is not one of /states (did you mean 'account'?)"),
                 id="transition-to-unknown-state"),
    pytest.param(lambda app: app.graph["transitions"].append(
                     {"from": "nowhere", "to": "home", "action": "click", "qid": "x"}),
                 ("state-graph.json", "/transitions/6/from", "'nowhere' is not one of /states"),
                 id="transition-from-unknown-state"),
    pytest.param(lambda app: app.graph["transitions"].append(
                     {"from": "login", "to": "home", "action": "click", "qid": "login.cancel"}),
                 ("state-graph.json", "/transitions/6/qid",
                  "the transition fires by acting on 'login.cancel', which "
                  "discovery-inventory.json does not list in state 'login'"),
                 id="transition-on-an-unlisted-control"),
])
def test_the_inventory_and_the_graph_must_agree(
        app: App, change: Any, problem: tuple[str, str, str]) -> None:
    change(app)
    problems, headline = app.problems()
    assert problems == [Problem(*problem)]
    assert headline == "plan-journeys: input rejected"


def test_every_disagreement_of_the_inventory_and_the_graph_is_listed_at_once(app: App) -> None:
    app.graph["states"].append({"id": "login"})
    app.inventory["inventory"].append({"state": "home", "interactives": []})
    app.graph["transitions"].append(
        {"from": "login", "to": "home", "action": "click", "qid": "login.cancel"})
    problems, _ = app.problems()
    assert [(p.file, p.pointer) for p in problems] == [
        ("state-graph.json", "/states/5/id"),
        ("discovery-inventory.json", "/inventory/5/state"),
        ("state-graph.json", "/transitions/6/qid"),
    ]


@pytest.mark.parametrize(("name", "content", "message"), [
    pytest.param("state-graph.json", None, "cannot read file: No such file or directory",
                 id="missing"),
    pytest.param("state-graph.json", "{not json", "invalid JSON at line 1, column 2: Expecting "
                 "property name enclosed in double quotes", id="not-json"),
    pytest.param("state-graph.json", '{"a": 1, "a": 2}', "duplicate key 'a' in one JSON object",
                 id="duplicate-key"),
    # A state graph may be any JSON (the earlier tool's free-form graphs): the inventory may not.
    pytest.param("discovery-inventory.json", "[]", "expected an object, not an array",
                 id="not-an-object"),
])
def test_an_unreadable_or_malformed_file_is_a_problem_of_that_file(
        app: App, name: str, content: str | None, message: str) -> None:
    app.write()
    target = app.root / name
    if content is None:
        target.unlink()
    else:
        target.write_text(content)
    assert app.problems(write=False)[0] == [Problem(name, "", message)]


def test_every_problem_of_every_file_is_listed_at_once(app: App) -> None:
    app.fixture["trials"] = 0
    app.requirements["requirements"][0]["criticalty"] = "critical"
    app.inventory["inventory"][0]["interactives"].append({"qid": "home.x", "tag": "a",
                                                          "visible": "yes", "enabled": True})
    app.graph["transitions"][2]["action"] = "Submit!"
    problems, _ = app.problems()
    assert [(p.file, p.pointer) for p in problems] == [
        ("fixtures/agentic_eval.json", "/trials"),
        ("requirements.json", "/requirements/0/criticalty"),
        ("discovery-inventory.json", "/inventory/0/interactives/3/visible"),
        ("state-graph.json", "/transitions/2/action"),
    ]
    assert problems[2].message == '"yes" is a string, expected boolean'
    assert problems[3].message.startswith("'Submit!' does not match")


# ---------------------------------------------------------------------------------------------
# The worked example and the schemas
# ---------------------------------------------------------------------------------------------


def test_the_example_fixture_loads_with_its_scaffold() -> None:
    # A documentation example: its exemption is granted, as plan-journeys grants it.
    fixture = load_fixture(EXAMPLE / "agentic_eval.json", accept_exemptions=True)
    assert fixture.eval_kind == "runner_selftest"
    scaffold = json.loads((EXAMPLE / "journey-scaffold.json").read_text())
    merged = {**fixture.data, "cases": [*fixture.data["cases"], *scaffold["cases"]]}
    assert len(fixture_from_data(merged, fixture.path, accept_exemptions=True).cases) == 4


@pytest.mark.parametrize("name", ["requirements", "discovery-inventory", "state-graph",
                                  "journey-plan"])
def test_the_schema_command_offers_the_journey_schemas(name: str) -> None:
    assert build_parser().parse_args(["schema", name]).name == name
    schema = json.loads(schema_text(name.replace("-", "_")))
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
