"""Loading a fixture: JSON syntax, the shipped JSON Schema, and the rules a schema cannot say.

The pipeline: decode strictly (``jsonio``), build the fixture and check its structure
(``loading.fixture``), then the rules over claims (``loading.claims``) and seams
(``loading.seams``), and last the anti-slush contract (``loading.contract``), which judges the
fixture as a whole and so only runs on a structurally sound one. Nothing here runs a command.
``load_fixture`` returns a ``Fixture`` or raises ``FixtureError`` listing every problem, each
with the file and the JSON pointer of the offending value.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_agentic_evals.jsonio import display_path, read_json
from pytest_agentic_evals.loading.claims import claim_problems
from pytest_agentic_evals.loading.contract import contract_violations
from pytest_agentic_evals.loading.fixture import FixtureError, build_fixture
from pytest_agentic_evals.loading.seams import seam_problems
from pytest_agentic_evals.model import Fixture
from pytest_agentic_evals.problems import InputError

__all__ = ["FixtureError", "fixture_from_data", "load_fixture"]


def load_fixture(
    path: str | os.PathLike[str],
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    accept_exemptions: bool = False,
) -> Fixture:
    """Read, validate and judge a fixture file; raise FixtureError with every problem.

    ``accept_exemptions``: whether the caller grants the exemption from the contract that a
    ``scaffold`` or ``runner_selftest`` fixture asks for (a run only when its user says so; a
    command that classifies fixtures without judging a skill always)."""
    fixture_path = Path(os.path.abspath(path))
    try:
        data, raw = read_json(fixture_path, "fixture")
    except InputError as exc:
        raise FixtureError(exc.problems) from None
    return fixture_from_data(data, fixture_path, raw, extra_expectations,
                             accept_exemptions=accept_exemptions)


def fixture_from_data(
    data: Any,
    fixture_path: Path,
    raw: bytes | None = None,
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    accept_exemptions: bool = False,
) -> Fixture:
    """Validate already-decoded fixture data; raise FixtureError with every problem."""
    shown = display_path(fixture_path)
    fixture, problems = build_fixture(data, fixture_path, raw, extra_expectations)
    fixture = dataclasses.replace(fixture, exemptions_accepted=accept_exemptions)
    problems += claim_problems(fixture, shown)
    problems += seam_problems(fixture, shown)
    if problems:
        raise FixtureError(problems, contract_pending=True)
    problems = contract_violations(fixture, shown)
    if problems:
        raise FixtureError(problems)
    return fixture
