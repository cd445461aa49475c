"""Exemptions of capability claims: an evidence class excused for a while, shown, never proving.

A claim may excuse one evidence class it requires (``exemptions``), with a reason code, a
justification, an owner and an end date. An exemption is judged here: incomplete, naming no
real evidence class, or past its date, it is ignored with the reason. A valid one is worded
next to the gap it covers and keeps the gap's weight: it never proves a claim.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentic_evals.model import EVIDENCE_CLASSES

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
EXEMPTION_KEYS = ("evidence_class", "reason_code", "justification", "owner", "expires")
# Shown with an exemption, never making it valid, longer or proving: the earlier tool's notes.
_EXEMPTION_NOTES = ("review_date", "manual_proof", "forfeits")


@dataclass(frozen=True)
class Exemptions:
    """The exemptions of one claim: those that hold, and those ignored with the reason."""

    valid: list[dict[str, Any]]
    ignored: list[dict[str, Any]]


def judge_exemptions(claim: Mapping[str, Any], today: datetime.date) -> Exemptions:
    """Each exemption of a claim, as shown in the report: valid, or ignored with the reason."""
    valid: list[dict[str, Any]] = []
    ignored: list[dict[str, Any]] = []
    raw = claim.get("exemptions")
    for index, exemption in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(exemption, Mapping):
            ignored.append({"index": index, "exemption": exemption,
                            "reason": "an exemption must be an object"})
            continue
        why = _exemption_defect(exemption, today)
        shown = {key: exemption[key] for key in EXEMPTION_KEYS + _EXEMPTION_NOTES
                 if key in exemption}
        if why is None:
            valid.append(shown)
        else:
            ignored.append({"index": index, **shown, "reason": why})
    return Exemptions(valid, ignored)


def _exemption_defect(exemption: Mapping[str, Any], today: datetime.date) -> str | None:
    """Why an exemption is ignored (incomplete, unknown class, bad or past date), or None."""
    missing = [key for key in EXEMPTION_KEYS
               if not isinstance(exemption.get(key), str) or not exemption[key].strip()]
    if missing:
        return ("incomplete: " + ", ".join(missing) + " must be given as non-empty text "
                "(evidence_class, reason_code, justification, owner and expires are all "
                "required)")
    evidence_class = exemption["evidence_class"]
    if evidence_class not in EVIDENCE_CLASSES:
        return (f"evidence_class {evidence_class!r} is not an evidence class; a blanket "
                "exemption (such as eval_not_required) satisfies nothing")
    expires = _parse_expiry(exemption["expires"])
    if expires is None:
        return (f"expires {exemption['expires']!r} is not a real ISO date or date-time "
                "(YYYY-MM-DD); an exemption without a real end date is not time-limited")
    if expires < today:
        return f"expired on {expires.isoformat()} (today is {today.isoformat()})"
    return None


def _parse_expiry(text: str) -> datetime.date | None:
    """The date of an ISO date or date-time; None when it is not one (``never``, month 13)."""
    text = text.strip()
    # The extended form only: basic ("20260101") and week forms are valid ISO 8601 but
    # accepted by some Python versions and not others, and nobody writes them by hand.
    if not _ISO_DATE.match(text):
        return None
    try:
        if len(text) == 10:
            return datetime.date.fromisoformat(text)
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        # Compared as a date as written: the calendar day the owner named is what expires.
        return datetime.datetime.fromisoformat(text).date()
    except ValueError:
        return None


def exempted(reason: str, name: str, exemptions: Sequence[Mapping[str, Any]]) -> str:
    """The reason a class is missing, with the valid exemptions of that class said beside it."""
    for exemption in exemptions:
        if exemption["evidence_class"] == name:
            # Said next to the gap it covers, and with the gap's own weight: an exemption
            # neither proves the class nor makes its absence any worse.
            reason = (f"{reason}; it is exempt until {exemption['expires']} "
                      f"({exemption['reason_code']}, owner {exemption['owner']}), and an "
                      "exemption is shown but never proves a claim")
    return reason
