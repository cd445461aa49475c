"""Registries written for the earlier tool: what their keys mean here.

The earlier tool's ``regressions.json`` had a ``version`` and ``note``, incidents named by
``issue``, ``receipt`` or ``id`` (or plain strings), notes on each record (``failure_code``,
``first_added``, ``repair_revision``) and a ``fail_before_fix`` that declared only whether the
proof fails (``expected_fail``) and whether someone had seen it fail (``proven``,
``proven_date``, ``rationale``); its ``cwd`` was relative to the skill's directory.

All of it is read with that meaning. What it never said, the failure signature, cannot be made
up: such a record is loaded, shown and audited, but never VERIFIED, and the reason names it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# Keys only a registry written for the earlier tool has.
EARLIER_TOP_KEYS = frozenset({"version", "note"})
EARLIER_PROOF_KEYS = frozenset({"expected_fail", "proven", "proven_date", "rationale"})
# The record's notes from the earlier tool, shown in audits as they are.
EARLIER_NOTES = ("failure_code", "first_added", "repair_revision", "note")
PROOF_NOTES = ("expected_fail", "proven", "proven_date", "rationale")

NO_PROOF = ("no fail_before_fix: nothing shows that the guard fails against the broken "
            "behaviour, so it may be vacuous; add fail_before_fix with proof_command and "
            "expected")
NO_SIGNATURE = ("fail_before_fix declares no failure signature (expected: exit_code or nonzero, "
                "and stdout_contains or stderr_contains): an exit status alone cannot tell the "
                "declared failure from any other, so the proof can never be verified; add "
                "\"expected\"")
NO_PROOF_COMMAND = ("fail_before_fix has no proof_command: nothing can be run to show that the "
                    "guard fails against the broken behaviour, so the proof can never be "
                    "verified; add proof_command (the argv of the proof) and expected")
PASSING_PROOF = ("fail_before_fix.expected_fail is false: a proof that passes shows nothing "
                 "about the guard; a fail-before-fix proof must fail")
SELF_REPORTED = ("proven: true is self-reported: only a proof run by regressions verify counts")


def written_for_earlier_tool(data: Mapping[str, Any]) -> bool:
    """Whether the registry is the earlier tool's: its top-level ``version`` or ``note``, or a
    proof in its form (its keys, or no ``expected``)."""
    if EARLIER_TOP_KEYS & data.keys():
        return True
    for record in data.get("regressions", ()):
        proof = record.get("fail_before_fix") if isinstance(record, Mapping) else None
        if isinstance(proof, Mapping) and (EARLIER_PROOF_KEYS & proof.keys()
                                           or "expected" not in proof):
            return True
    return False


def incident_key(value: Any) -> str | None:
    """The key an incident (or a record's reference to one) is matched by: ``incident_id``,
    else ``issue``, ``receipt``, ``id``; a plain string is its own key."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in ("incident_id", "issue", "receipt", "id"):
            if value.get(key) not in (None, ""):
                return str(value[key])
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def unverifiable_reasons(record: Mapping[str, Any], active: bool) -> list[str]:
    """Why this record can never be VERIFIED, whatever its proof does (empty when it can be)."""
    if not active:
        return []
    proof = record.get("fail_before_fix")
    if not isinstance(proof, Mapping):
        return [NO_PROOF]
    reasons = [] if "proof_command" in proof else [NO_PROOF_COMMAND]
    expected = proof.get("expected")
    if not isinstance(expected, Mapping) or not (expected.get("stdout_contains")
                                                 or expected.get("stderr_contains")):
        reasons.append(NO_SIGNATURE)
    if proof.get("expected_fail") is False:
        reasons.append(PASSING_PROOF)
    return reasons


def notes(record: Mapping[str, Any]) -> dict[str, Any]:
    """The earlier tool's notes on a record and its proof, as written (absent ones left out)."""
    shown = {key: record[key] for key in EARLIER_NOTES if key in record}
    proof = record.get("fail_before_fix")
    if isinstance(proof, Mapping):
        shown.update({key: proof[key] for key in PROOF_NOTES if key in proof})
    return shown
