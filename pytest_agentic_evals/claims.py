"""Capability claims: which declared capabilities the evidence of a run really proves.

Deterministic cases prove mechanisms; live end-to-end runs prove capabilities.  Counting green
cases would let twenty deterministic checks pass for a live capability nobody exercised, so
readiness is judged per declared claim, against the evidence classes that claim requires, and
only then aggregated.  Three things are never taken on trust:

* a case's declared evidence class: a case claiming to be a live run is *qualified*
  structurally (real entrypoint, no stub inputs, an oracle independent of the command's own
  prose) and downgraded with recorded reasons when it is not one (:func:`qualify`);
* a shared live case: one live run supporting several claims counts for a claim only through
  an artifact assertion tagged with that claim, otherwise one green run would prove them all;
* a value-bearing claim ("no PII reaches the output"): it must be shown for every
  representation its input format admits (JSON string, integer, float, scientific...), by an
  adversarial case that can fail, because a claim proven for strings only was once shipped as
  proven for all values.

The module is pure (no pytest import): the loader, the report and the CLI share it.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from .commands import CommandParseError, fixture_stub_inputs, real_world_entrypoint, simple_commands
from .fixture import Case, Fixture
from .problems import Problem, pointer_for
from .verdicts import (
    BLOCKED,
    FAIL,
    NOT_READY,
    NOT_TESTED,
    PASS,
    READY,
    USABLE_WITH_GAPS,
)
from .verdicts import NOT_ESTABLISHED as READINESS_NOT_ESTABLISHED

__all__ = [
    "BLOCKED_EXTERNAL",
    "CLAIM_SEMANTICS",
    "CRITICALITIES",
    "DOMAIN_PROFILES",
    "EVIDENCE_CLASSES",
    "FAILED",
    "LIVE_CLASSES",
    "NOT_ESTABLISHED",
    "PARTIALLY_PROVEN",
    "PROVEN",
    "PROVIDER_RUN_ARTIFACTS",
    "VALUE_REPRESENTATION_SEAM",
    "Qualification",
    "can_fail",
    "capability_readiness",
    "claim_problems",
    "is_generic_crash_marker",
    "qualify",
]

EVIDENCE_CLASSES = (
    "deterministic",
    "property_or_fuzz",
    "fault_injected_deterministic",
    "live_e2e",
    "adversarial_live_e2e",
    "human_evaluation",
)
LIVE_CLASSES = ("live_e2e", "adversarial_live_e2e")
CRITICALITIES = ("critical", "important", "optional")
CLAIM_SEMANTICS = ("value_bearing", "protocol", "timing", "control_flow", "human_perceptual",
                   "other")
# The representations each input format admits for one value.  A dict, not a constant tuple,
# so that a project can register its own formats before fixtures are judged.
DOMAIN_PROFILES: dict[str, tuple[str, ...]] = {
    "json-scalar-v1": ("string", "integer", "float", "scientific"),
    "csv-cell-v1": ("quoted", "unquoted"),
    "sqlite-type-v1": ("TEXT", "INTEGER", "REAL"),
}

# Claim verdicts.  NOT_ESTABLISHED is spelled like the readiness of the same name on purpose.
PROVEN = "PROVEN"
PARTIALLY_PROVEN = "PARTIALLY_PROVEN"
BLOCKED_EXTERNAL = "BLOCKED_EXTERNAL"
FAILED = "FAILED"
NOT_ESTABLISHED = "NOT_ESTABLISHED"

# Status of one evidence class of one claim (``evidence_provided`` in the report).
CLASS_PROVEN = "PROVEN"
CLASS_FAILED = "FAILED"
CLASS_BLOCKED = "BLOCKED"
CLASS_MISSING = "MISSING"

VALUE_REPRESENTATION_SEAM = "value-representation"

# Files a browser/provider ``$ask`` handler writes when it really ran against the provider; a
# compile or pre-flight step writes none of them, so reading one back is what tells them apart.
PROVIDER_RUN_ARTIFACTS = frozenset({
    "node-receipt.json",
    "response.md",
    "response.meta.json",
    "browser-tab-lifecycle.json",
    "execution-status.json",
    "roundtable-summary.md",
    "compete-scorecard.json",
})

# Expectation keys that can reject a wrong output.  ``exit_code`` is judged apart (only a
# non-zero one can catch a leak); ``must_exercise`` is checked at load and
# ``blocked_when_stdout_contains`` can only turn a failure into BLOCKED, so neither counts.
_CAPABLE_KEYS = (
    "artifacts",
    "stdout_contains",
    "stderr_contains",
    "stdout_excludes",
    "stderr_excludes",
    "stdout_matches",
    "stderr_matches",
    "trajectory",
    "allowed_domains",
    "disallowed_domains",
)

# Words of a generic crash report.  Their absence from the output is only the command saying
# it did not crash, which is its own report of success, not an independent observation.
_CRASH_WORDS = frozenset({
    "traceback", "error", "errors", "exception", "exceptions", "panic", "panicked", "fail",
    "failed", "failure", "failures", "fatal", "abort", "aborted", "crash", "crashed",
    "segfault", "segmentation", "fault", "stacktrace", "unhandled", "uncaught", "core",
    "dumped",
})
# Words that only accompany crash markers ("Traceback (most recent call last)",
# "thread 'main' panicked at"); alone they carry no information either.
_CRASH_FILLER = frozenset({
    "most", "recent", "call", "last", "at", "in", "the", "of", "a", "an", "thread", "main",
    "stack", "trace", "runtime", "internal", "unexpected", "occurred", "with",
})
# Exception class names (TypeError, NullPointerException), matched in CamelCase only so that
# an ordinary word that happens to end in "error" ("terror") is not taken for one.
_CRASH_SUFFIXES = ("Error", "Exception")

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_EXEMPTION_KEYS = ("evidence_class", "reason_code", "justification", "owner", "expires")


# ---------------------------------------------------------------------------------------------
# Small helpers over raw fixture data (read defensively: this module may see data the schema
# has not vetted, e.g. when a caller builds a report for a fixture loaded by an older loader).
# ---------------------------------------------------------------------------------------------


def _claims_data(fixture: Fixture) -> list[Mapping[str, Any]]:
    claims = fixture.data.get("capability_claims")
    if not isinstance(claims, list):
        return []
    return [claim for claim in claims if isinstance(claim, Mapping)]


def _case_data(fixture: Fixture, case: Case) -> Mapping[str, Any]:
    cases = fixture.data.get("cases")
    if isinstance(cases, list) and 0 <= case.index < len(cases):
        data = cases[case.index]
        if isinstance(data, Mapping):
            return data
    return {}


def _representation_of(fixture: Fixture, case: Case) -> str | None:
    value = _case_data(fixture, case).get("representation")
    return value if isinstance(value, str) and value else None


def _required_classes(claim: Mapping[str, Any]) -> list[str]:
    """The classes a claim requires, in canonical order, from either accepted spelling."""
    raw = claim.get("evidence_required")
    if isinstance(raw, Mapping):
        named = {name for name, wanted in raw.items() if wanted is True}
    elif isinstance(raw, list):
        named = {name for name in raw if isinstance(name, str)}
    else:
        named = set()
    return [name for name in EVIDENCE_CLASSES if name in named]


def _representations(claim: Mapping[str, Any]) -> list[str]:
    """The profile's representations, then explicit ones it lacks (a union, in order)."""
    found: list[str] = []
    profile = claim.get("domain_profile")
    if isinstance(profile, str):
        found.extend(DOMAIN_PROFILES.get(profile, ()))
    explicit = claim.get("representations")
    if isinstance(explicit, list):
        found.extend(name for name in explicit if isinstance(name, str) and name)
    return list(dict.fromkeys(found))


def _artifact_assertions(case: Case) -> list[Mapping[str, Any]]:
    raw = case.expected.get("artifacts")
    if not isinstance(raw, list):
        return []
    return [item for item in raw if isinstance(item, Mapping)]


def _names(cases: Iterable[Case]) -> str:
    return ", ".join(case.name for case in cases)


# ---------------------------------------------------------------------------------------------
# Load-time rules
# ---------------------------------------------------------------------------------------------


def claim_problems(fixture: Fixture, shown: str) -> list[Problem]:
    """Load-time checks a schema cannot express (called by the loader after the schema passed).

    Every problem names the fixture (``shown``) and the JSON pointer of the offending value.
    Exemptions are deliberately not judged here: an expired or incomplete exemption is
    ignored and reported when verdicts are computed, so that time passing cannot turn a
    fixture that loaded yesterday into a rejected one today.
    """
    problems: list[Problem] = []

    def problem(pointer: str, message: str) -> None:
        problems.append(Problem(shown, pointer, message))

    raw_claims = fixture.data.get("capability_claims")
    claims: list[tuple[int, Mapping[str, Any]]] = []
    if isinstance(raw_claims, list):
        claims = [(i, c) for i, c in enumerate(raw_claims) if isinstance(c, Mapping)]

    declared: dict[str, Mapping[str, Any]] = {}
    first_index: dict[str, int] = {}
    for index, claim in claims:
        here = pointer_for("capability_claims", index)
        claim_id = claim.get("id")
        if not isinstance(claim_id, str) or not claim_id:
            continue  # the schema reports it
        if claim_id in first_index:
            problem(here + "/id", f"duplicate claim id {claim_id!r} (also "
                    f"/capability_claims/{first_index[claim_id]}/id)")
            continue
        first_index[claim_id] = index
        declared[claim_id] = claim

    for index, claim in claims:
        problems += _one_claim_problems(index, claim, declared, shown)

    for case in fixture.cases:
        problems += _case_claim_problems(fixture, case, declared, shown)
    return problems


def _one_claim_problems(
    index: int, claim: Mapping[str, Any], declared: Mapping[str, Any], shown: str
) -> list[Problem]:
    problems: list[Problem] = []
    here = pointer_for("capability_claims", index)
    claim_id = claim.get("id")
    label = f"claim {claim_id!r}" if isinstance(claim_id, str) else "this claim"

    if "evidence_required" in claim and not _required_classes(claim):
        problems.append(Problem(shown, here + "/evidence_required", (
            f"{label} requires no evidence class: name at least one class as required "
            "(a claim that requires nothing would be proven by nothing)")))

    semantics = claim.get("claim_semantics")
    if claim.get("criticality") == "critical" and "claim_semantics" not in claim:
        problems.append(Problem(shown, here + "/claim_semantics", (
            f"{label} is critical and must say what kind of invariant it is: claim_semantics "
            f"is one of {', '.join(CLAIM_SEMANTICS)}")))

    profile = claim.get("domain_profile")
    if isinstance(profile, str) and profile not in DOMAIN_PROFILES:
        problems.append(Problem(shown, here + "/domain_profile", (
            f"unknown domain_profile {profile!r}; known profiles: "
            f"{', '.join(sorted(DOMAIN_PROFILES))} (or list the representations explicitly)")))
    if semantics == "value_bearing" and not _representations(claim):
        problems.append(Problem(shown, here, (
            f"{label} is value_bearing but enumerates no representation: give a known "
            "domain_profile or a non-empty representations list (every representation the "
            "input format admits, e.g. JSON string, integer, float, scientific notation)")))

    other = claim.get("independent_of")
    if isinstance(other, str):
        if other == claim_id:
            problems.append(Problem(shown, here + "/independent_of", (
                f"{label} cannot be independent of itself: independent_of names the "
                "producer claim whose data generator this checker must not share")))
        elif other not in declared:
            problems.append(Problem(shown, here + "/independent_of", (
                f"independent_of names {other!r}, which is not a declared claim")))
    return problems


def _case_claim_problems(
    fixture: Fixture, case: Case, declared: Mapping[str, Mapping[str, Any]], shown: str
) -> list[Problem]:
    problems: list[Problem] = []
    known = [claim_id for claim_id in case.supports_claims if claim_id in declared]
    for position, claim_id in enumerate(case.supports_claims):
        if claim_id not in declared:
            hint = ("" if declared else " (the fixture declares no capability_claims)")
            problems.append(Problem(
                shown, f"{case.pointer}/supports_claims/{position}",
                f"case {case.name!r} supports {claim_id!r}, which is not a declared claim{hint}",
            ))

    representation = _representation_of(fixture, case)
    if representation is not None:
        offered = {rep for claim_id in known for rep in _representations(declared[claim_id])}
        if representation not in offered:
            if not case.supports_claims:
                why = "the case supports no claim"
            elif not offered:
                why = (f"none of the claims it supports ({', '.join(case.supports_claims)}) "
                       "enumerates representations")
            else:
                why = f"the claims it supports admit {', '.join(sorted(offered))}"
            problems.append(Problem(
                shown, case.pointer + "/representation",
                f"representation {representation!r} of case {case.name!r} is not one of the "
                f"representations of a claim it supports: {why}",
            ))

    for position, assertion in enumerate(_artifact_assertions(case)):
        tagged = assertion.get("claim")
        if isinstance(tagged, str) and tagged not in case.supports_claims:
            problems.append(Problem(
                shown, f"{case.pointer}/expected/artifacts/{position}/claim",
                f"artifact assertion names claim {tagged!r}, which case {case.name!r} does "
                "not list in supports_claims",
            ))
    return problems


# ---------------------------------------------------------------------------------------------
# Qualification of live cases
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Qualification:
    """What evidence a case really gives, after its declared class was judged."""

    declared: str | None
    """The case's ``evidence_class`` as written."""
    effective: str
    """The class it counts as ("deterministic" when undeclared)."""
    live_qualified: bool | None
    """None when the declared class is not live; else whether it was accepted as live."""
    disqualifiers: tuple[str, ...]
    """Why the declared class was not accepted as is, one sentence each."""

    def as_report(self) -> dict[str, Any]:
        """The case-level report fields (``declared_evidence_class`` and the rest)."""
        return {
            "declared_evidence_class": self.declared,
            "effective_evidence_class": self.effective,
            "live_qualified": self.live_qualified,
            "evidence_disqualifiers": list(self.disqualifiers),
        }


def is_generic_crash_marker(text: str) -> bool:
    """Whether an excluded substring only says "the command did not crash".

    ``Traceback``, ``Error``, ``panic``, ``FAIL``, ``TypeError``, ``Traceback (most recent
    call last)``: a phrase made only of crash words (and the filler that accompanies them) is
    generic.  Anything naming a value or a specific message (``555-0100``, ``error: name
    required``) is something the command could plausibly print, so excluding it is a check.
    """
    words = re.findall(r"[^\W\d_]+|\d+", text)
    if not words:
        return False
    marker = False
    for word in words:
        lower = word.lower()
        if lower in _CRASH_WORDS or word.endswith(_CRASH_SUFFIXES):
            marker = True
        elif lower not in _CRASH_FILLER:
            return False
    return marker


def _command_words(case: Case) -> list[str]:
    """Every word the command passes to a program, also inside ``sh -c`` scripts."""
    try:
        words = [word for command in simple_commands(case.command) for word in command.argv]
    except CommandParseError:
        words = list(case.command)
    # A handler invocation is often one quoted argument ("$ask roundtable --execute").
    return words + [part for word in words for part in word.split() if part != word]


def _ask_disqualifier(case: Case) -> tuple[str | None, bool]:
    """(reason, execute_given) for a browser ``$ask`` handler case; reason None when fine."""
    words = _command_words(case)
    if not any(word.startswith("$ask") for word in words):
        return None, True
    execute = any(
        word == "--execute"
        or (word.startswith("--execute=")
            and word.partition("=")[2].lower() not in ("0", "false", "no", "off", ""))
        for word in words
    )
    readback = [
        str(assertion.get("path")) for assertion in _artifact_assertions(case)
        if PurePosixPath(str(assertion.get("path", ""))).name in PROVIDER_RUN_ARTIFACTS
        and not assertion.get("optional")
        and assertion.get("not_exists") is not True
        and assertion.get("absent") is not True
    ]
    missing = []
    if not execute:
        missing.append("--execute")
    if not readback:
        missing.append("an artifact assertion on a provider run artifact ("
                       + ", ".join(sorted(PROVIDER_RUN_ARTIFACTS)) + ")")
    if not missing:
        return None, True
    reason = (f"browser $ask handler without {' and '.join(missing)}: a compile or pre-flight "
              "of a $ask handler is deterministic mechanism proof, never a live run")
    return reason, execute


def _oracle_disqualifiers(case: Case) -> list[str]:
    """Why the case has no oracle independent of the command's own report (empty: it has)."""
    assertions = _artifact_assertions(case)
    binding = [a for a in assertions if not a.get("optional")]
    excluded = [
        text
        for stream in ("stdout_excludes", "stderr_excludes")
        for text in (case.expected.get(stream) or ())
        if isinstance(text, str)
    ]
    specific = [text for text in excluded if not is_generic_crash_marker(text)]
    reasons = []
    if case.readback and not binding:
        reasons.append("readback: true with nothing behind it: no expected artifact is read "
                       "back, so the flag is only a declaration")
    if binding or specific:
        return reasons
    detail = []
    if assertions:
        detail.append("its only artifact assertions are optional (skipped when the file is "
                      "missing)")
    generic = [text for text in excluded if is_generic_crash_marker(text)]
    if generic:
        detail.append("its excludes (" + ", ".join(repr(t) for t in generic) + ") are generic "
                      "crash markers whose absence is the command's own report of success")
    if any(case.expected.get(k) for k in ("stdout_contains", "stderr_contains",
                                          "stdout_matches", "stderr_matches")):
        detail.append("its stdout/stderr checks read the command's own prose")
    reasons.append("no independent read-back oracle (expected.artifacts, readback backed by an "
                   "artifact, or stdout/stderr_excludes of something the command could "
                   "plausibly print)" + (": " + "; ".join(detail) if detail else "")
                   + "; an exit code plus the command's own success prose is not proof")
    return reasons


def qualify(case: Case) -> Qualification:
    """Judge a case's declared evidence class; live classes must earn their name.

    A case declaring ``live_e2e`` or ``adversarial_live_e2e`` is downgraded, never silently
    accepted, when it feeds itself stub inputs, reaches no substantive production entrypoint,
    has no independent read-back oracle, or is a browser ``$ask`` handler without
    ``--execute`` and a read-back of the provider's run artifacts.  It then counts as
    ``fault_injected_deterministic`` when it still reaches a real entrypoint (a real path with
    a faked boundary) and as ``deterministic`` otherwise; a ``$ask`` case without
    ``--execute`` is a compile/pre-flight and always counts as ``deterministic``.  An
    ``adversarial_live_e2e`` case that is not adversarial or negative counts as ``live_e2e``.
    Every reason is recorded.  Non-live classes are taken as declared.
    """
    declared = case.evidence_class
    if declared not in LIVE_CLASSES:
        return Qualification(declared, declared or "deterministic", None, ())

    reasons: list[str] = []
    entrypoint: str | None = None
    try:
        stubs = fixture_stub_inputs(case.judged_command)
    except CommandParseError as exc:
        stubs = []
        reasons.append(f"its command cannot be analysed, so it reaches no entrypoint anyone "
                       f"can vouch for: {exc}")
    else:
        entrypoint, explanation = real_world_entrypoint(case.judged_command, case.cwd)
        if stubs:
            reasons.append(f"it feeds itself fixture/stub/mocked inputs ({', '.join(stubs)}) "
                           "as the boundary authority; write real inputs with the case's "
                           "\"artifacts\" instead")
        if entrypoint is None:
            reasons.append(f"it reaches no substantive production entrypoint: {explanation}")
    reasons += _oracle_disqualifiers(case)
    ask_reason, execute = _ask_disqualifier(case)
    if ask_reason is not None:
        reasons.append(ask_reason)

    if reasons:
        # A $ask compile/pre-flight never ran the handler: mechanism proof, whatever it calls.
        real_path = entrypoint is not None and execute
        effective = "fault_injected_deterministic" if real_path else "deterministic"
        return Qualification(declared, effective, False, tuple(reasons))
    if declared == "adversarial_live_e2e" and case.type == "positive":
        reason = ("declared adversarial_live_e2e but the case is positive: a run that expects "
                  "success is not adversarial, so it counts as live_e2e")
        return Qualification(declared, "live_e2e", True, (reason,))
    return Qualification(declared, declared, True, ())


# ---------------------------------------------------------------------------------------------
# Verdicts
# ---------------------------------------------------------------------------------------------


def can_fail(case: Case) -> bool:
    """Whether the case's expectations could reject a wrong output.

    A bare ``exit_code: 0`` cannot: a pipeline that leaks the value still exits 0.  A
    non-zero exit code, any stdout/stderr check, an artifact assertion, a trajectory or a
    domain rule can.
    """
    expected = case.expected
    exit_code = expected.get("exit_code")
    if isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0:
        return True
    # An empty allowed_domains is a rule too: it refuses every host.
    return any(expected.get(key) for key in _CAPABLE_KEYS) or "allowed_domains" in expected


@dataclass(frozen=True)
class _Evidence:
    """One case as evidence: what it counts as and how it ended in this run."""

    case: Case
    qualification: Qualification
    outcome: str
    representation: str | None
    capable: bool

    @property
    def ran(self) -> bool:
        return self.outcome in (PASS, FAIL, BLOCKED)


@dataclass(frozen=True)
class _Gap:
    """One reason a claim is not PROVEN; ``blocked`` when only an unmet precondition caused it."""

    reason: str
    blocked: bool


@dataclass(frozen=True)
class _Exemptions:
    valid: list[dict[str, Any]]
    ignored: list[dict[str, Any]]


def _judge_exemptions(claim: Mapping[str, Any], today: datetime.date) -> _Exemptions:
    valid: list[dict[str, Any]] = []
    ignored: list[dict[str, Any]] = []
    raw = claim.get("exemptions")
    for index, exemption in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(exemption, Mapping):
            ignored.append({"index": index, "exemption": exemption,
                            "reason": "an exemption must be an object"})
            continue
        why = _exemption_defect(exemption, today)
        shown = {key: exemption[key] for key in _EXEMPTION_KEYS if key in exemption}
        if why is None:
            valid.append(shown)
        else:
            ignored.append({"index": index, **shown, "reason": why})
    return _Exemptions(valid, ignored)


def _exemption_defect(exemption: Mapping[str, Any], today: datetime.date) -> str | None:
    """Why an exemption is ignored (incomplete, unknown class, bad or past date), or None."""
    missing = [key for key in _EXEMPTION_KEYS
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


def _counts_for(evidence: _Evidence, claim_id: str) -> str | None:
    """Why a case listing the claim does not count for it (None: it counts).

    A live run supporting several claims counts for one only when an artifact assertion names
    that claim: otherwise a single green run would stand as proof of all of them.
    """
    case = evidence.case
    if evidence.qualification.effective not in LIVE_CLASSES or len(case.supports_claims) < 2:
        return None
    if any(a.get("claim") == claim_id for a in _artifact_assertions(case)):
        return None
    return (f"live case {case.name!r} supports {len(case.supports_claims)} claims "
            f"({', '.join(case.supports_claims)}) but none of its artifact assertions names "
            f"{claim_id!r}, so it does not count for {claim_id!r}")


def _serves(effective: str, required: str) -> bool:
    # An adversarial live run is a live run too; no other substitution is allowed (a
    # fault-injected case is not a deterministic one, nor the reverse).
    return effective == required or (required == "live_e2e" and effective == "adversarial_live_e2e")


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
                         "can_fail": item.capable} for item in rows]
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


def _judge_claim(
    fixture: Fixture,
    claim: Mapping[str, Any],
    everyone: Sequence[_Evidence],
    today: datetime.date,
) -> dict[str, Any]:
    claim_id = str(claim.get("id"))
    criticality = claim.get("criticality")
    semantics = claim.get("claim_semantics")
    required = _required_classes(claim)

    listing = [item for item in everyone if claim_id in item.case.supports_claims]
    counted: list[_Evidence] = []
    uncounted: list[dict[str, str]] = []
    for item in listing:
        why = _counts_for(item, claim_id)
        if why is None:
            counted.append(item)
        else:
            uncounted.append({"case": item.case.name, "reason": why})

    gaps: list[_Gap] = []
    if not required:
        gaps.append(_Gap("the claim requires no evidence class, so nothing can prove it", False))

    by_class: dict[str, list[_Evidence]] = {}
    for name in required:
        by_class[name] = [i for i in counted if _serves(i.qualification.effective, name)]
    for item in counted:  # classes offered beyond the requirement are shown, and can fail it
        name = item.qualification.effective
        if not any(_serves(name, wanted) for wanted in required):
            by_class.setdefault(name, []).append(item)
    provided = {name: _class_status([i for i in cases if i.ran])
                for name, cases in by_class.items()}
    exemptions = _judge_exemptions(claim, today)
    for name in required:
        gap = _class_gap(name, provided[name], by_class[name])
        if gap is None:
            continue
        if provided[name] == CLASS_MISSING:
            # Say where the evidence the author thought they had went.
            downgraded = [i.case for i in listing if i.qualification.declared is not None
                          and _serves(i.qualification.declared, name)
                          and not _serves(i.qualification.effective, name)]
            shared = [i.case for i in listing
                      if i not in counted and _serves(i.qualification.effective, name)]
            if downgraded:
                gap = _Gap(f"{gap.reason} (declared but disqualified: {_names(downgraded)})",
                           gap.blocked)
            if shared:
                gap = _Gap(f"{gap.reason} (shared live run with no artifact naming this "
                           f"claim: {_names(shared)})", gap.blocked)
        for exemption in exemptions.valid:
            if exemption["evidence_class"] == name:
                # Said next to the gap it covers, and with the gap's own weight: an exemption
                # neither proves the class nor makes its absence any worse.
                gap = _Gap(f"{gap.reason}; it is exempt until {exemption['expires']} "
                           f"({exemption['reason_code']}, owner {exemption['owner']}), and an "
                           "exemption is shown but never proves a claim", gap.blocked)
        gaps.append(gap)
    # Counter-evidence is counter-evidence: a failing supporting case fails the claim even
    # when its class was not required.
    failed_cases = [item.case for item in counted if item.outcome == FAIL]
    extra_failed = [item.case for item in counted if item.outcome == FAIL
                    and not any(_serves(item.qualification.effective, n) for n in required)]
    if extra_failed:
        gaps.append(_Gap(f"supporting case(s) outside the required classes failed: "
                         f"{_names(extra_failed)}", False))

    entry: dict[str, Any] = {
        "description": claim.get("description"),
        "criticality": criticality,
        "claim_semantics": semantics,
    }
    value_bearing = semantics == "value_bearing"
    if value_bearing:
        matrix, missing, gap = _matrix(_representations(claim), counted)
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
        if any(c.get("id") == producer for c in _claims_data(fixture)) and producer != claim_id:
            gap = _independence_gap(claim_id, producer, counted, everyone)
        else:
            gap = _Gap(f"independent_of names {producer!r}, which is not another declared "
                       "claim", False)
        if gap is not None:
            gaps.append(gap)

    if failed_cases:
        verdict = FAILED
    elif not gaps:
        verdict = PROVEN
    elif all(gap.blocked for gap in gaps):
        verdict = BLOCKED_EXTERNAL
    elif any(provided.get(name) == CLASS_PROVEN for name in required):
        verdict = PARTIALLY_PROVEN
    else:
        verdict = NOT_ESTABLISHED

    disqualified = [
        {"case": item.case.name, "declared": item.qualification.declared,
         "effective": item.qualification.effective,
         "reasons": list(item.qualification.disqualifiers)}
        for item in listing if item.qualification.disqualifiers
    ]
    entry.update({
        "verdict": verdict,
        "evidence_required": {name: True for name in required},
        "evidence_provided": provided,
        "supporting_cases": {name: [i.case.name for i in cases]
                             for name, cases in by_class.items()},
        "blocking_cases": [i.case.name for i in counted if i.outcome in (FAIL, BLOCKED)],
        "disqualified_cases": disqualified,
        "uncounted_cases": uncounted,
        "exempt_evidence": exemptions.valid,
        "ignored_exemptions": exemptions.ignored,
        "independent_of": producer if isinstance(producer, str) else None,
        # Accepted and shown, but not used in the verdict: the required classes already say
        # which evidence counts, and no reading of "admitted" could make a claim easier to
        # prove without weakening that.
        "admitted_evidence": claim.get("admitted_evidence"),
        "reasons": [gap.reason for gap in gaps],
    })
    return entry


def _evidence(fixture: Fixture, outcomes: Mapping[str, str]) -> list[_Evidence]:
    return [
        _Evidence(
            case=case,
            qualification=qualify(case),
            # A case the caller did not mention did not run: absence is never a pass.
            outcome=outcomes.get(case.name, NOT_TESTED),
            representation=_representation_of(fixture, case),
            capable=can_fail(case),
        )
        for case in fixture.cases
    ]


def capability_readiness(
    fixture: Fixture,
    outcomes: Mapping[str, str],
    today: datetime.date,
) -> tuple[dict[str, Any], str, list[str]]:
    """(report["capability_readiness"], claim-based readiness, one line per claim not PROVEN).

    ``outcomes`` maps case names to PASS, FAIL, BLOCKED or NOT_TESTED; a case that did not run
    (NOT_TESTED, or absent) is no evidence either way, so a partial run judges claims only on
    what ran.  ``today`` decides which exemptions have expired.

    Claim-based readiness: the gating claims are the critical ones, or every claim when none
    is critical (a fixture cannot escape the gate by declaring nothing critical).  READY when
    every gating claim is PROVEN; NOT_READY when a gating claim FAILED; USABLE_WITH_GAPS when
    some claim has evidence (PROVEN or PARTIALLY_PROVEN); NOT_ESTABLISHED otherwise.  When
    critical claims exist, important and optional ones are reported but do not gate.
    """
    everyone = _evidence(fixture, outcomes)
    claims = _claims_data(fixture)
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


def _readiness(report: Mapping[str, Mapping[str, Any]]) -> str:
    if not report:
        return READINESS_NOT_ESTABLISHED
    # A claim whose criticality is unreadable is treated as critical: fail closed.
    critical = [entry for entry in report.values()
                if entry.get("criticality") not in ("important", "optional")]
    gating = critical or list(report.values())
    verdicts = [entry["verdict"] for entry in gating]
    if FAILED in verdicts:
        return NOT_READY
    if all(verdict == PROVEN for verdict in verdicts):
        return READY
    if any(entry["verdict"] in (PROVEN, PARTIALLY_PROVEN) for entry in report.values()):
        return USABLE_WITH_GAPS
    return READINESS_NOT_ESTABLISHED
