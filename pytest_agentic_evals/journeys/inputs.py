"""The four inputs of planning, read and checked together.

The fixture must load; ``requirements.json``, ``discovery-inventory.json`` and
``state-graph.json`` must meet their shipped schemas; requirement ids must be unique and every
oracle's ``expected`` must be a fixture ``expected``; the inventory and the state graph must
agree with each other. Every problem of every file is listed at once, with its file and JSON
pointer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from pytest_agentic_evals.journeys.documents import Document, read_document
from pytest_agentic_evals.journeys.earlier import FORM_EARLIER, flattened, is_earlier_graph
from pytest_agentic_evals.journeys.graph import Network, build_network
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.fixture import FixtureError, fixture_schema
from pytest_agentic_evals.model import Fixture
from pytest_agentic_evals.problems import InputError, Problem, explain_schema_error, pointer_for


@dataclass(frozen=True)
class Inputs:
    """What a plan is made from: the loaded fixture, the three documents, and the network."""

    fixture: Fixture
    requirements: Document
    inventory: Document
    graph: Document
    extra_expectations: Mapping[str, Mapping[str, Any]] | None
    network: Network


def load_inputs(
    fixture_path: str | os.PathLike[str],
    requirements_path: str | os.PathLike[str],
    inventory_path: str | os.PathLike[str],
    graph_path: str | os.PathLike[str],
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
) -> Inputs:
    """Read and check the four inputs; raise InputError listing every problem of every file."""
    problems: list[Problem] = []
    fixture: Fixture | None = None
    try:
        # A plan judges no skill: it binds requirements to the cases a fixture has, whatever
        # kind of fixture it is (documentation examples are tests of this runner).
        fixture = load_fixture(fixture_path, extra_expectations, accept_exemptions=True)
    except FixtureError as exc:
        problems += exc.problems
    documents: dict[str, Document | None] = {}
    well_formed: dict[str, bool] = {}
    for key, path, schema in (("requirements", requirements_path, "requirements"),
                              ("inventory", inventory_path, "discovery_inventory"),
                              ("graph", graph_path, "state_graph")):
        document, found = read_document(path, schema)
        if key == "graph" and document is not None and is_earlier_graph(document.data):
            found = []  # the earlier tool read any JSON here; it is bound as that tool did
        documents[key] = document
        well_formed[key] = document is not None and not found
        problems += found
    requirements, inventory, graph = (documents["requirements"], documents["inventory"],
                                      documents["graph"])
    if requirements is not None:
        # Checked even when the schema found problems: every problem is listed at once.
        problems += _requirement_problems(requirements, extra_expectations)
    network: Network | None = None
    pending = ""
    if inventory is not None and graph is not None and well_formed["inventory"] \
            and well_formed["graph"]:
        if is_earlier_graph(graph.data):
            network, found = build_network(*flattened(inventory, graph))
            if network is not None:
                network.form = FORM_EARLIER
        else:
            network, found = build_network(inventory, graph)
        problems += found
    elif inventory is not None and graph is not None:
        pending = ("; the inventory and the state graph are checked against each other once "
                   "these are fixed")
    if problems or fixture is None or requirements is None or network is None:
        raise InputError(problems, headline="plan-journeys: input rejected" + pending)
    assert inventory is not None and graph is not None  # the network is built from them
    return Inputs(fixture, requirements, inventory, graph, extra_expectations, network)


def _requirement_problems(
    document: Document, extra: Mapping[str, Mapping[str, Any]] | None
) -> list[Problem]:
    """What the requirements schema cannot say: unique ids, oracle checks in fixture terms."""
    problems: list[Problem] = []
    first: dict[str, int] = {}
    # Read defensively: these checks also run on a document the schema refused.
    data = document.data if isinstance(document.data, dict) else {}
    listed = data.get("requirements")
    for index, requirement in enumerate(listed if isinstance(listed, list) else ()):
        if not isinstance(requirement, dict):
            continue
        here = pointer_for("requirements", index)
        requirement_id = requirement.get("id")
        if isinstance(requirement_id, str) and requirement_id in first:
            problems.append(Problem(document.shown, here + "/id", (
                f"duplicate requirement id {requirement_id!r} (also "
                f"/requirements/{first[requirement_id]}/id)")))
        elif isinstance(requirement_id, str):
            first[requirement_id] = index
        journey = requirement.get("journey")
        oracles = journey.get("oracles") if isinstance(journey, dict) else None
        for position, oracle in enumerate(oracles if isinstance(oracles, list) else ()):
            if isinstance(oracle, dict) and isinstance(oracle.get("expected"), dict):
                problems += _expected_problems(
                    oracle["expected"], extra, document.shown,
                    f"{here}/journey/oracles/{position}/expected")
    return problems


def _expected_problems(
    expected: Mapping[str, Any], extra: Mapping[str, Mapping[str, Any]] | None, shown: str,
    here: str,
) -> list[Problem]:
    """An oracle's ``expected`` must be a valid fixture ``expected`` (exit_code may be left out:
    a scaffolded case then expects 0), so that a scaffolded case always loads."""
    validator = _expected_validator() if not extra else Draft202012Validator(
        _expected_schema(extra))
    checked = {"exit_code": 0, **expected}
    problems = []
    for error in validator.iter_errors(checked):
        for pointer, message in explain_schema_error(error):
            problems.append(Problem(shown, here + pointer, message))
    return problems


def _expected_schema(extra: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any]:
    schema = fixture_schema(extra)
    return {"$defs": schema["$defs"], "$ref": "#/$defs/expected"}


@cache
def _expected_validator() -> Draft202012Validator:
    return Draft202012Validator(_expected_schema(None))


def shown_from_output(path: Path, output: str | os.PathLike[str]) -> str:
    """``path`` relative to the folder of ``output`` (where a plan or scaffold is written),
    with forward slashes: what is written does not depend on the working directory."""
    folder = Path(os.path.abspath(output)).parent
    return Path(os.path.relpath(path, folder)).as_posix()
