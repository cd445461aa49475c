"""Files written for the earlier tool, rewritten into today's preferred form.

Every rewrite keeps the file's meaning: the same keys are read the same way before and after.
Only spellings that have a preferred form today are rewritten:

- a capability claim without ``criticality`` gets ``"criticality": "critical"``, what the
  omission means (fail closed), said out loud;
- ``admitted_generations`` becomes ``admitted_evidence``, its name today (when that is not
  already given);
- a discovery inventory's ``schema`` ``test_interactions.discovery.v1`` becomes
  ``agentic_evals.discovery_inventory.v1``.

Cases are never rewritten: a case's identity hashes (``test_source_sha256``,
``oracle_sha256``) cover its keys, so a rewritten case would be another generation of the test,
and the admission pins and prior hashes that name it would stop matching. The earlier forms
cases use (``"sha256:<hex>"``, ``absent``, ``uses_stub``, ``category``) stay accepted as they
are. Nothing in a regressions registry or a requirements file has a preferred form to move to.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

EARLIER_INVENTORY_SCHEMA = "test_interactions.discovery.v1"
INVENTORY_SCHEMA = "agentic_evals.discovery_inventory.v1"
REGISTRY_SCHEMA = "agentic_evals.regressions.v1"
REQUIREMENTS_SCHEMA = "agentic_evals.requirements.v1"


def kind_of(data: Any) -> str | None:
    """``fixture``, ``inventory``, ``regressions``, ``requirements``, or None when the document
    is none of the files the earlier tool read."""
    if not isinstance(data, dict):
        return None
    schema = data.get("schema")
    if schema == REGISTRY_SCHEMA:
        return "regressions"
    if schema == REQUIREMENTS_SCHEMA:
        return "requirements"
    if schema in (EARLIER_INVENTORY_SCHEMA, INVENTORY_SCHEMA) or (
            schema is None and "inventory" in data):
        return "inventory"
    if "cases" in data and "version" in data:
        return "fixture"
    return None


def migrate(data: Any) -> tuple[Any, list[str]]:
    """The document in today's preferred form, and one line per rewrite (empty: nothing to
    rewrite). ``data`` itself is not changed."""
    kind = kind_of(data)
    new = copy.deepcopy(data)
    if kind == "fixture":
        return new, _fixture(new)
    if kind == "inventory" and new.get("schema") == EARLIER_INVENTORY_SCHEMA:
        new["schema"] = INVENTORY_SCHEMA
        return new, [f"/schema: {EARLIER_INVENTORY_SCHEMA} -> {INVENTORY_SCHEMA}"]
    return new, []


def _fixture(data: dict[str, Any]) -> list[str]:
    claims = data.get("capability_claims")
    if not isinstance(claims, list):
        return []
    done = []
    for index, claim in enumerate(claims):
        if not isinstance(claim, dict):
            continue
        here = f"/capability_claims/{index}"
        if "criticality" not in claim:
            claims[index] = claim = _after(claim, "id", "criticality", "critical")
            done.append(f"{here}/criticality: \"critical\" said out loud (the default)")
        if "admitted_generations" in claim and not claim.get("admitted_evidence"):
            claims[index] = _renamed(claim, "admitted_generations", "admitted_evidence")
            done.append(f"{here}/admitted_generations -> admitted_evidence")
    return done


def _after(mapping: Mapping[str, Any], anchor: str, key: str, value: Any) -> dict[str, Any]:
    """``mapping`` with ``key`` inserted right after ``anchor`` (or first)."""
    items = list(mapping.items())
    position = next((i + 1 for i, (k, _) in enumerate(items) if k == anchor), 0)
    items.insert(position, (key, value))
    return dict(items)


def _renamed(mapping: Mapping[str, Any], old: str, new: str) -> dict[str, Any]:
    """``mapping`` with ``old`` renamed ``new`` in place (an empty ``new`` is dropped)."""
    return {(new if k == old else k): v for k, v in mapping.items() if k != new}
