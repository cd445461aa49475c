"""Capability claims: which declared capabilities the evidence of a run really proves.

Deterministic cases prove mechanisms; live end-to-end runs prove capabilities.  Counting green
cases would let twenty deterministic checks pass for a live capability nobody exercised, so
readiness is judged per declared claim, against the evidence classes that claim requires, and
only then aggregated.  Four things are never taken on trust:

* a case's declared evidence class: a case claiming to be a live run is *qualified*
  structurally (real entrypoint, no stub inputs, an oracle independent of the command's own
  prose) and downgraded with recorded reasons when it is not one (:func:`qualify`);
* a shared live case: one live run supporting several claims counts for a claim only through
  an artifact assertion tagged with that claim, otherwise one green run would prove them all;
* a value-bearing claim ("no PII reaches the output"): it must be shown for every
  representation its input format admits (JSON string, integer, float, scientific...), by an
  adversarial case that can fail, because a claim proven for strings only was once shipped as
  proven for all values;
* a case's identity: only an unchanged regression replay, of the generation the claim admits
  when it pins one, counts (``evidence.provenance``), so that a test or oracle edited until
  it passes proves nothing.

The module is pure (no pytest import): the loader, the report and the CLI share it.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_agentic_evals.evidence.exemptions import Exemptions, exempted, judge_exemptions
from pytest_agentic_evals.evidence.provenance import (
    Provenance,
    admission_records,
    admitted,
    case_provenance,
)
from pytest_agentic_evals.evidence.qualification import (
    Qualification,
    artifact_is_oracle,
    can_fail,
    qualify,
)
from pytest_agentic_evals.model import (
    BLOCKED,
    BLOCKED_EXTERNAL,
    FAIL,
    FAILED,
    LIVE_CLASSES,
    NOT_ESTABLISHED,
    NOT_READY,
    NOT_TESTED,
    PARTIALLY_PROVEN,
    PASS,
    PROVEN,
    READY,
    USABLE_WITH_GAPS,
    VALUE_REPRESENTATION_SEAM,
    Case,
    ClaimVerdict,
    Fixture,
    Readiness,
    artifact_assertions,
    claims_data,
    representation_of,
    representations,
    required_classes,
    serves,
)
from pytest_agentic_evals.probes import store as probe_store

# Status of one evidence class of one claim (``evidence_provided`` in the report).
CLASS_PROVEN = "PROVEN"
CLASS_FAILED = "FAILED"
CLASS_BLOCKED = "BLOCKED"
CLASS_MISSING = "MISSING"


def _names(cases: Iterable[Case]) -> str:
    return ", ".join(case.name for case in cases)


# Verdicts
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Evidence:
    """One case as evidence: what it counts as and how it ended in this run."""

    case: Case
    qualification: Qualification
    outcome: str
    representation: str | None
    capable: bool
    provenance: Provenance
    capable_source: str = probe_store.SOURCE_STATIC
    """Who said whether the oracle can fail: a fresh ``probe`` result, else the ``static``
    judgement (:func:`can_fail`)."""

    @property
    def ran(self) -> bool:
        return self.outcome in (PASS, FAIL, BLOCKED)


@dataclass(frozen=True)
class _Gap:
    """One reason a claim is not PROVEN; ``blocked`` when only an unmet precondition caused it."""

    reason: str
    blocked: bool


def _counts_for(evidence: _Evidence, claim_id: str) -> str | None:
    """Why a case listing the claim does not count for it (None: it counts).

    A live run supporting several claims counts for one only when an artifact assertion names
    that claim: otherwise a single green run would stand as proof of all of them. The
    assertion must be a check of its own: not optional, and not a copy of one that names
    another claim (the same check under two labels reads one thing once).
    """
    case = evidence.case
    if evidence.qualification.effective not in LIVE_CLASSES or len(case.supports_claims) < 2:
        return None
    assertions = [a for a in artifact_assertions(case) if artifact_is_oracle(a)]
    others = [_check_of(a) for a in assertions if a.get("claim") != claim_id]
    if any(a.get("claim") == claim_id and _check_of(a) not in others for a in assertions):
        return None
    return (f"live case {case.name!r} supports {len(case.supports_claims)} claims "
            f"({', '.join(case.supports_claims)}) but none of its artifact assertions names "
            f"{claim_id!r} with a check of its own (not optional, not a copy of another "
            f"claim's), so it does not count for {claim_id!r}")


# Keys that check nothing at these values: an assertion that adds one to another claim's
# assertion is still a copy of it.
_NO_OP_VALUES: dict[str, Any] = {"optional": False, "min_bytes": 0, "min_length": 0}


def _check_of(assertion: Mapping[str, Any]) -> dict[str, Any]:
    """What an artifact assertion checks: without the claim it is labelled with, the keys
    that check nothing at their value, and the order of its lines."""
    check = {key: value for key, value in assertion.items() if key != "claim" and not (
        key in _NO_OP_VALUES and value == _NO_OP_VALUES[key]
        and type(value) is type(_NO_OP_VALUES[key]))}
    lines = check.get("lines_contain")
    if isinstance(lines, list) and all(isinstance(line, str) for line in lines):
        check["lines_contain"] = sorted(set(lines))
    return check


def _class_status(cases: Sequence[_Evidence]) -> str:
    """FAILED on any failure; BLOCKED on any blocked case; PROVEN on a pass; else MISSING.

    A blocked case beside a passing one still leaves the class BLOCKED: the author offered
    that case as part of the evidence, and an unmet precondition is absence of evidence.
    """
    outcomes = {item.outcome for item in cases}
    if FAIL in outcomes:
        return CLASS_FAILED
    if BLOCKED in outcomes:
        return CLASS_BLOCKED
    if PASS in outcomes:
        return CLASS_PROVEN
    return CLASS_MISSING


def _class_gap(name: str, status: str, cases: Sequence[_Evidence]) -> _Gap | None:
    if status == CLASS_PROVEN:
        return None
    if status == CLASS_FAILED:
        failed = [i.case for i in cases if i.outcome == FAIL]
        return _Gap(f"required {name} evidence failed: {_names(failed)}", False)
    if status == CLASS_BLOCKED:
        blocked = [i.case for i in cases if i.outcome == BLOCKED]
        passed = [i.case for i in cases if i.outcome == PASS]
        beside = f" (beside passing {_names(passed)})" if passed else ""
        return _Gap(f"required {name} evidence is blocked: {_names(blocked)} BLOCKED{beside}; an "
                    "unmet precondition is absence of evidence", True)
    if cases:  # every supporting case is NOT_TESTED: a partial run proves nothing about it
        return _Gap(f"required {name} evidence was not run: {_names(i.case for i in cases)} "
                    "not tested in this run", False)
    return _Gap(f"no case supplies required {name} evidence", False)


def _matrix(
    representations: Sequence[str], evidence: Sequence[_Evidence]
) -> tuple[dict[str, list[dict[str, Any]]], list[str], _Gap | None]:
    """The representation matrix of a value-bearing claim, its holes, and their gap.

    A representation is covered by an adversarial case tagged with it that can fail and
    passed; a case that cannot fail proves nothing about a leak, whatever its outcome.
    """
    if not representations:
        return {}, [], _Gap("value_bearing claim enumerates no representation", False)
    matrix: dict[str, list[dict[str, Any]]] = {}
    missing: list[str] = []
    # Grouped by why the representation is uncovered, so the one-line summary stays short.
    absent: list[str] = []
    incapable: list[str] = []
    unpassed: list[str] = []
    blocked_only = True
    for name in representations:
        rows = [item for item in evidence
                if item.case.type == "adversarial" and item.representation == name]
        matrix[name] = [{"case": item.case.name, "outcome": item.outcome,
                         "can_fail": item.capable, "can_fail_source": item.capable_source}
                        for item in rows]
        capable = [item for item in rows if item.capable]
        if any(item.outcome == PASS for item in capable):
            continue
        missing.append(name)
        if not rows:
            absent.append(name)
        elif not capable:
            incapable.append(f"{name} ({_names(item.case for item in rows)})")
        else:
            unpassed.append(f"{name} (" + ", ".join(f"{item.case.name} {item.outcome}"
                                                    for item in capable) + ")")
        if not any(item.outcome == BLOCKED for item in capable):
            blocked_only = False
    if not missing:
        return matrix, missing, None
    details = [f"{label}: {', '.join(names)}" for label, names in (
        ("no adversarial case", absent),
        ("only cases that cannot fail", incapable),
        ("not passed", unpassed),
    ) if names]
    reason = (f"missing representations {', '.join(missing)} ({'; '.join(details)}); each "
              "needs an adversarial case that can fail and passed")
    return matrix, missing, _Gap(reason, blocked_only)


def _independence_gap(
    claim_id: str, producer: str, own: Sequence[_Evidence], everyone: Sequence[_Evidence]
) -> _Gap | None:
    """A checker is independent only with a passed representation its producer never saw.

    The producer's representations are taken from all its declared cases, run or not: what
    matters is the data generator the two share, not what happened to run today.
    """
    producer_reps = {item.representation for item in everyone
                     if producer in item.case.supports_claims and item.representation}
    proven = {item.representation for item in own if item.outcome == PASS
              and item.representation}
    if proven - producer_reps:
        return None
    own_reps = sorted({item.representation for item in own if item.representation})
    distinct_blocked = any(item.outcome == BLOCKED and item.representation
                           and item.representation not in producer_reps for item in own)
    return _Gap(
        f"independence from {producer!r} is nominal: the passing cases of {claim_id!r} cover "
        f"no representation that the cases of {producer!r} do not (its cases: "
        f"{', '.join(own_reps) or 'none tagged'}; those of {producer!r}: "
        f"{', '.join(sorted(producer_reps)) or 'none tagged'})",
        distinct_blocked,
    )


def _seam_gap(fixture: Fixture, everyone: Sequence[_Evidence]) -> _Gap | None:
    """A value-transforming pipeline needs a critical value-representation seam with a guard.

    Judged on what is declared (a capable guard exists), as coverage is: whether the guard
    passed is what the representation matrix already decides.
    """
    seams = fixture.data.get("seams")
    declared = [seam for seam in (seams if isinstance(seams, list) else [])
                if isinstance(seam, Mapping) and seam.get("seam_id") == VALUE_REPRESENTATION_SEAM]
    if not declared:
        return _Gap(f"the fixture declares no {VALUE_REPRESENTATION_SEAM!r} seam: a pipeline "
                    "that transforms, filters or redacts values needs one, critical, with a "
                    "capable guard", False)
    if not any(seam.get("criticality") == "critical" for seam in declared):
        return _Gap(f"the {VALUE_REPRESENTATION_SEAM!r} seam is not declared critical", False)
    guards = [item for item in everyone if VALUE_REPRESENTATION_SEAM in item.case.seams]
    if not any(item.capable for item in guards):
        if guards:
            detail = f"its cases ({_names(i.case for i in guards)}) cannot fail"
        else:
            detail = "no case lists it in seams"
        return _Gap(f"the {VALUE_REPRESENTATION_SEAM!r} seam has no capable guard: {detail}",
                    False)
    return None


@dataclass
class _Sorted:
    """A claim's supporting cases, sorted by whether they count for it."""

    counted: list[_Evidence] = field(default_factory=list)
    uncounted: list[dict[str, str]] = field(default_factory=list)
    ineligible: list[_Evidence] = field(default_factory=list)
    ineligible_report: list[dict[str, Any]] = field(default_factory=list)


def _sort_evidence(
    listing: Sequence[_Evidence], records: Sequence[Mapping[str, Any]] | None, claim_id: str
) -> _Sorted:
    found = _Sorted()
    for item in listing:
        # Evidence is an identity, not a name: a case that is not an unchanged replay, or that
        # is not the generation the claim pins, counts neither for nor against it.
        admitted_here = admitted(records, item.case, item.provenance)
        if not (item.provenance.eligibility.eligible and admitted_here):
            found.ineligible.append(item)
            found.ineligible_report.append(_ineligible_entry(item, admitted_here))
            continue
        why = _counts_for(item, claim_id)
        if why is None:
            found.counted.append(item)
        else:
            found.uncounted.append({"case": item.case.name, "reason": why})
    return found


def _explained_class_gap(
    name: str, gap: _Gap, listing: Sequence[_Evidence], found: _Sorted,
    records: Sequence[Mapping[str, Any]] | None,
) -> _Gap:
    """A missing class's gap, with where the evidence the author thought they had went."""
    downgraded = [i.case for i in listing if i.qualification.declared is not None
                  and serves(i.qualification.declared, name)
                  and not serves(i.qualification.effective, name)]
    shared = [i.case for i in listing if i not in found.counted and i not in found.ineligible
              and serves(i.qualification.effective, name)]
    if downgraded:
        gap = _Gap(f"{gap.reason} (declared but disqualified: {_names(downgraded)})",
                   gap.blocked)
    if shared:
        gap = _Gap(f"{gap.reason} (shared live run with no artifact naming this "
                   f"claim: {_names(shared)})", gap.blocked)
    unadmissible = [i for i in found.ineligible if serves(i.qualification.effective, name)]
    if unadmissible:
        gap = _Gap(f"{gap.reason} (not eligible evidence for this claim: "
                   f"{_ineligible_names(unadmissible, records)})", gap.blocked)
    undeclared = [i.case for i in listing if i.qualification.declared is None]
    if undeclared and name != "deterministic":
        # The earlier tool read a case without evidence_class as live_e2e; here it is
        # deterministic, so a fixture written for it loses its live evidence without a word.
        which = _names(undeclared) if len(undeclared) <= 3 else f"{len(undeclared)} cases"
        gap = _Gap(f"{gap.reason} ({which} without evidence_class count as deterministic; a "
                   f"case that runs live says \"evidence_class\": \"{name}\")", gap.blocked)
    return gap


def _claim_verdict(
    failed: bool, gaps: Sequence[_Gap], provided: Mapping[str, str], required: Sequence[str]
) -> ClaimVerdict:
    if failed:
        return FAILED
    if not gaps:
        return PROVEN
    if all(gap.blocked for gap in gaps):
        return BLOCKED_EXTERNAL
    if any(provided.get(name) == CLASS_PROVEN for name in required):
        return PARTIALLY_PROVEN
    return NOT_ESTABLISHED


def _shape_gaps(
    fixture: Fixture, claim: Mapping[str, Any], claim_id: str, counted: Sequence[_Evidence],
    everyone: Sequence[_Evidence], entry: dict[str, Any],
) -> list[_Gap]:
    """Gaps of the claim's shape: its representation matrix and seam when it bears values,
    and its independence from the claim that produced its input."""
    gaps = []
    if claim.get("claim_semantics") == "value_bearing":
        matrix, missing, gap = _matrix(representations(claim), counted)
        entry["representations"] = matrix
        entry["missing_representations"] = missing
        if gap is not None:
            gaps.append(gap)
        seam = _seam_gap(fixture, everyone)
        if seam is not None:
            gaps.append(seam)
    else:
        entry["missing_representations"] = []
    producer = claim.get("independent_of")
    if isinstance(producer, str):
        if any(c.get("id") == producer for c in claims_data(fixture)) and producer != claim_id:
            independence = _independence_gap(claim_id, producer, counted, everyone)
        else:
            independence = _Gap(f"independent_of names {producer!r}, which is not another "
                                "declared claim", False)
        if independence is not None:
            gaps.append(independence)
    return gaps


def _by_class(
    required: Sequence[str], counted: Sequence[_Evidence]
) -> dict[str, list[_Evidence]]:
    """The counted cases by the evidence class they serve: the required classes first, then
    classes offered beyond the requirement (shown, and able to fail the claim)."""
    by_class: dict[str, list[_Evidence]] = {}
    for name in required:
        by_class[name] = [i for i in counted if serves(i.qualification.effective, name)]
    for item in counted:
        name = item.qualification.effective
        if not any(serves(name, wanted) for wanted in required):
            by_class.setdefault(name, []).append(item)
    return by_class


def _judge_claim(
    fixture: Fixture,
    claim: Mapping[str, Any],
    everyone: Sequence[_Evidence],
    today: datetime.date,
) -> dict[str, Any]:
    claim_id = str(claim.get("id"))
    required = required_classes(claim)
    listing = [item for item in everyone if claim_id in item.case.supports_claims]
    records = admission_records(claim)
    found = _sort_evidence(listing, records, claim_id)
    counted = found.counted
    by_class = _by_class(required, counted)
    provided = {name: _class_status([i for i in cases if i.ran])
                for name, cases in by_class.items()}
    exemptions = judge_exemptions(claim, today)
    gaps = _evidence_gaps(required, provided, by_class, listing, found, records, exemptions)
    entry: dict[str, Any] = {
        "description": claim.get("description"),
        # Omitted means critical, as it always did: fail closed.
        "criticality": claim.get("criticality", "critical"),
        "claim_semantics": claim.get("claim_semantics"),
    }
    gaps += _shape_gaps(fixture, claim, claim_id, counted, everyone, entry)
    entry.update({
        "verdict": _claim_verdict(any(item.outcome == FAIL for item in counted), gaps,
                                  provided, required),
        "evidence_required": {name: True for name in required},
        "evidence_provided": provided,
        "supporting_cases": {name: [i.case.name for i in cases]
                             for name, cases in by_class.items()},
        "blocking_cases": [i.case.name for i in counted if i.outcome in (FAIL, BLOCKED)],
        "disqualified_cases": [
            {"case": item.case.name, "declared": item.qualification.declared,
             "effective": item.qualification.effective,
             "reasons": list(item.qualification.disqualifiers)}
            for item in listing if item.qualification.disqualifiers],
        "uncounted_cases": found.uncounted,
        "ineligible_supporting_cases": found.ineligible_report,
        "exempt_evidence": exemptions.valid,
        "ignored_exemptions": exemptions.ignored,
        "independent_of": (claim["independent_of"]
                           if isinstance(claim.get("independent_of"), str) else None),
        "admitted_evidence": records,
        "reasons": [gap.reason for gap in gaps],
    })
    return entry


def _evidence_gaps(
    required: Sequence[str],
    provided: Mapping[str, str],
    by_class: Mapping[str, Sequence[_Evidence]],
    listing: Sequence[_Evidence],
    found: _Sorted,
    records: Any,
    exemptions: Exemptions,
) -> list[_Gap]:
    """Gaps of the evidence itself: each required class not proven (explained, with its
    exemptions beside it), and failing cases beyond the required classes."""
    gaps: list[_Gap] = []
    if not required:
        gaps.append(_Gap("the claim requires no evidence class, so nothing can prove it", False))
    for name in required:
        gap = _class_gap(name, provided[name], by_class[name])
        if gap is None:
            continue
        if provided[name] == CLASS_MISSING:
            gap = _explained_class_gap(name, gap, listing, found, records)
        gaps.append(_Gap(exempted(gap.reason, name, exemptions.valid), gap.blocked))
    # Counter-evidence is counter-evidence: a failing supporting case fails the claim even
    # when its class was not required.
    extra_failed = [item.case for item in found.counted if item.outcome == FAIL
                    and not any(serves(item.qualification.effective, n) for n in required)]
    if extra_failed:
        gaps.append(_Gap(f"supporting case(s) outside the required classes failed: "
                         f"{_names(extra_failed)}", False))
    return gaps


def _ineligible_entry(item: _Evidence, admitted_here: bool) -> dict[str, Any]:
    provenance = item.provenance
    reasons = list(provenance.eligibility.reason_codes)
    if not admitted_here:
        reasons.append("not_admitted_by_claim")
    return {
        "name": item.case.name,
        "execution_mode": provenance.execution_mode,
        "generation_id": provenance.generation_id,
        "test_source_sha256": provenance.test_source_sha256,
        "oracle_sha256": provenance.oracle_sha256,
        "reasons": reasons,
        "admitted_for_claim": admitted_here,
    }


def _ineligible_names(items: Sequence[_Evidence], records: Any) -> str:
    described = []
    for item in items:
        why = list(item.provenance.eligibility.reason_codes)
        if not admitted(records, item.case, item.provenance):
            why.append("its identity matches no admitted_evidence record")
        described.append(f"{item.case.name} ({', '.join(why)})")
    return "; ".join(described)


def _evidence(fixture: Fixture, outcomes: Mapping[str, str]) -> list[_Evidence]:
    stored = probe_store.load(fixture)
    found = []
    for case in fixture.cases:
        # A fresh probe result says whether the oracle fails for a skill that does nothing,
        # crashes or passes its input on, in both directions; else the static judgement.
        empirical = stored[case.name].capable(probe_store.VALUE_KILLS)
        found.append(_Evidence(
            case=case,
            qualification=qualify(case, stored[case.name]),
            # A case the caller did not mention did not run: absence is never a pass.
            outcome=outcomes.get(case.name, NOT_TESTED),
            representation=representation_of(fixture, case),
            capable=can_fail(case) if empirical is None else empirical,
            provenance=case_provenance(case),
            capable_source=(probe_store.SOURCE_STATIC if empirical is None
                            else probe_store.SOURCE_PROBE),
        ))
    return found


def capability_readiness(
    fixture: Fixture,
    outcomes: Mapping[str, str],
    today: datetime.date,
) -> tuple[dict[str, Any], Readiness, list[str]]:
    """(report["capability_readiness"], claim-based readiness, one line per claim not PROVEN).

    ``outcomes`` maps case names to PASS, FAIL, BLOCKED or NOT_TESTED; a case that did not run
    (NOT_TESTED, or absent) is no evidence either way, so a partial run judges claims only on
    what ran.  ``today`` decides which exemptions have expired.  The outcomes are the ones the
    trials gave: whether a case may count at all (an unchanged replay, of the generation the
    claim admits) is judged here from its execution provenance.

    Claim-based readiness: the gating claims are the critical ones, or every claim when none
    is critical (a fixture cannot escape the gate by declaring nothing critical).  READY when
    every gating claim is PROVEN; NOT_READY when a gating claim FAILED, or when no claim is
    critical and one is not PROVEN; USABLE_WITH_GAPS when some claim has evidence (PROVEN or
    PARTIALLY_PROVEN); NOT_ESTABLISHED otherwise.  When critical claims exist, important and
    optional ones are reported but do not gate.
    """
    everyone = _evidence(fixture, outcomes)
    claims = claims_data(fixture)
    report: dict[str, Any] = {}
    lines: list[str] = []
    for claim in claims:
        claim_id = claim.get("id")
        if not isinstance(claim_id, str) or claim_id in report:
            continue  # rejected at load; never let a duplicate overwrite the first verdict
        entry = _judge_claim(fixture, claim, everyone, today)
        report[claim_id] = entry
        if entry["verdict"] != PROVEN:
            reasons = "; ".join(entry["reasons"]) or "not proven"
            lines.append(f"claim {claim_id} ({entry['criticality']}): {entry['verdict']}: "
                         f"{reasons}")
    return report, _readiness(report), lines


def _readiness(report: Mapping[str, Mapping[str, Any]]) -> Readiness:
    if not report:
        return NOT_ESTABLISHED
    # A claim whose criticality is unreadable is treated as critical: fail closed.
    critical = [entry for entry in report.values()
                if entry.get("criticality") not in ("important", "optional")]
    gating = critical or list(report.values())
    verdicts = [entry["verdict"] for entry in gating]
    if FAILED in verdicts:
        return NOT_READY
    if all(verdict == PROVEN for verdict in verdicts):
        return READY
    if not critical:
        # With nothing critical every claim gates, all or nothing, as the earlier tool judged
        # it: a partly proven set of claims none of which was singled out as the one that
        # matters gives no "usable" core to stand on.
        return NOT_READY
    if any(entry["verdict"] in (PROVEN, PARTIALLY_PROVEN) for entry in report.values()):
        return USABLE_WITH_GAPS
    return NOT_ESTABLISHED
