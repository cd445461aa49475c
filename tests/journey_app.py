"""A small application as discovery saw it, with requirements and a fixture: the inputs of
journey planning, for the planner's unit tests and the command's tests alike."""

from __future__ import annotations

import copy
import json
from typing import Any

from jsonschema import Draft202012Validator

from pytest_agentic_evals.journeys import Inputs, build_plan, load_inputs
from pytest_agentic_evals.problems import InputError, Problem
from pytest_agentic_evals.schemas import schema_text

from conftest import Skill, skill_fixture

CLAIMS = [
    {"id": "sign-in", "description": "a customer can sign in", "criticality": "critical",
     "claim_semantics": "control_flow", "evidence_required": ["deterministic"]},
    {"id": "browse", "description": "a visitor can browse the catalog",
     "criticality": "important", "evidence_required": ["deterministic"]},
]
SEAMS = [{"seam_id": "auth", "seam_type": "boundary", "criticality": "critical"}]
INPUT_FILES = {"requirements": "requirements.json",
               "inventory": "discovery-inventory.json",
               "graph": "state-graph.json"}


def ui(qid: str, action: str = "click", **extra: Any) -> dict[str, Any]:
    return {"kind": "ui", "qid": qid, "action": action, **extra}


def command(*argv: str) -> dict[str, Any]:
    return {"kind": "command", "command": list(argv)}


def capable(**expected: Any) -> dict[str, Any]:
    """An oracle that can fail, with ``expected`` checks when given."""
    oracle: dict[str, Any] = {"description": "checks the outcome", "failing_capable": True}
    if expected:
        oracle["expected"] = expected
    return oracle


WEAK_ORACLES = [{"description": "the page looks right", "failing_capable": False}]


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
    state ``secret`` has no way in. ``account.delete`` is disabled.
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

    def requirement(self, rid: str) -> dict[str, Any]:
        return next(r for r in self.requirements["requirements"] if r["id"] == rid)

    def add(self, *requirements: dict[str, Any]) -> None:
        self.requirements["requirements"] += requirements

    def write(self) -> list[str]:
        """Write the four inputs; the plan-journeys arguments that name them (and plan.json)."""
        self.skill.write(self.fixture)
        for key, name in INPUT_FILES.items():
            data = getattr(self, key)
            (self.root / name).write_text(data if isinstance(data, str)
                                          else json.dumps(data, indent=2))
        return ["--fixture", "fixtures/agentic_eval.json", "--requirements", "requirements.json",
                "--interaction-inventory", "discovery-inventory.json",
                "--state-graph", "state-graph.json", "--output", "plan.json"]

    def load(self, write: bool = True) -> Inputs:
        """The inputs, written (unless ``write`` is false) and loaded as the command loads
        them."""
        if write:
            self.write()
        return load_inputs(self.root / "fixtures" / "agentic_eval.json",
                           self.root / INPUT_FILES["requirements"],
                           self.root / INPUT_FILES["inventory"],
                           self.root / INPUT_FILES["graph"])

    def plan(self) -> dict[str, Any]:
        return build_plan(self.load(), self.root / "plan.json")

    def problems(self, write: bool = True) -> tuple[list[Problem], str]:
        """Every problem of the inputs, and the headline; fails when the inputs load."""
        try:
            self.load(write)
        except InputError as exc:
            return exc.problems, exc.headline
        raise AssertionError("the inputs loaded")


def journey(plan: dict[str, Any], rid: str) -> dict[str, Any]:
    return dict(next(j for j in plan["journeys"] if j["requirement_id"] == rid))


def steps(entry: dict[str, Any]) -> list[tuple[str, ...]]:
    """A journey's path as (kind, from or state, to, qid) rows."""
    return [(s["kind"], s.get("from", s.get("state", "")), s.get("to", ""), s.get("qid", ""))
            for s in entry["path"]]


def assert_plan_schema(plan: dict[str, Any]) -> None:
    validator = Draft202012Validator(json.loads(schema_text("journey_plan")))
    assert [e.message for e in validator.iter_errors(plan)] == []
