"""Execution provenance: which test and which oracle produced a piece of evidence.

A bug can be "fixed" by editing the eval's expectation until it matches the broken output, or
by letting a self-healing tool rewrite a locator until the test passes again.  Both leave the
case green and prove nothing.  Instead of trusting the author, every case gets two identity
hashes, of its test (everything but the oracle and the provenance wrapper) and of its oracle
(``expected``); a case that names the hashes it had before (``prior_*``) and now has others,
without declaring the matching mutation flag, is caught by arithmetic, not by review.

Only an unchanged ``regression_replay`` is eligible evidence for an existing claim:
``exploration`` candidates and ``test_repair`` candidates must be requalified first, and a
declared mutation of the oracle or of another protected surface takes a case out of the
evidence for good.  Claims can also pin the evidence they admit (``admitted_evidence``) by
case, generation and hashes, so that only that exact generation of a test can prove them.

Everything here is a pure function of a ``Case`` (or of a case object as written): the
loader, the report, the claims and later the vacuity probes key their results by the same
hashes.  This follows the earlier agentic-evals tool's provenance model, so that its files
and reports keep their meaning.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentic_evals.model import Case, Fixture

REGRESSION_REPLAY = "regression_replay"
EXPLORATION = "exploration"
TEST_REPAIR = "test_repair"
EXECUTION_MODES = (REGRESSION_REPLAY, EXPLORATION, TEST_REPAIR)
DEFAULT_EXECUTION_MODE = REGRESSION_REPLAY

# The closed vocabulary of mutation flags, in the earlier tool's order.
MUTATION_FLAGS = (
    "test_mutated",
    "locator_healed",
    "locator_changed",
    "step_changed",
    "assertion_changed",
    "fixture_input_changed",
    "exclusion_changed",
    "evidence_requirement_changed",
    "expected_output_changed",
    "oracle_changed",
    "fixture_changed",
    "case_ownership_changed",
    "category_map_changed",
    "proof_command_changed",
    "readiness_logic_changed",
    "test_exclusion_changed",
    "protected_surface_changed",
)
# Flags that explain a change of the test's own hash.
TEST_MUTATION_FLAGS = frozenset({
    "test_mutated", "locator_healed", "locator_changed", "step_changed", "fixture_input_changed",
})
# Flags that explain a change of the oracle's hash.
ORACLE_MUTATION_FLAGS = frozenset({
    "assertion_changed", "exclusion_changed", "evidence_requirement_changed",
    "expected_output_changed", "oracle_changed", "test_exclusion_changed",
})
# What decides PASS or FAIL, and who owns the case: changing any of it takes the case out of
# the evidence, whatever its mode.
PROTECTED_SURFACE_FLAGS = ORACLE_MUTATION_FLAGS | frozenset({
    "fixture_changed", "case_ownership_changed", "category_map_changed",
    "proof_command_changed", "readiness_logic_changed", "protected_surface_changed",
})

# Keys of a case that are not part of its test: the oracle, and the provenance wrapper that
# describes the case rather than being it.
NOT_TEST_SOURCE = frozenset({
    "expected", "execution_mode", "generated_test", "generated_test_lineage", "provenance",
    "mutation_provenance", "repair", "external_result", "provider_result",
    "application_identity",
})
# Where flags can be declared: (case key, key inside it), None for the case key itself.
FLAG_SOURCES: tuple[tuple[str, str | None], ...] = (
    ("mutation_provenance", None),
    ("provenance", "mutations"),
    ("external_result", "mutation_provenance"),
    ("external_result", "mutations"),
    ("provider_result", "mutation_provenance"),
    ("provider_result", "mutations"),
)
PRIOR_SOURCES = ("provenance", "repair", "external_result", "provider_result")
# What an admission record may pin; each given pin must match.
PIN_KEYS = ("case", "generation_id", "test_source_sha256", "oracle_sha256")

# Reason codes: why a case is not eligible evidence for an existing claim.
REPLAY_DECLARED_MUTATION = "regression_replay_declared_mutation_requires_test_repair"
EXPLORATION_NOT_ADMITTED = "exploration_candidate_not_admitted"
REPAIR_REQUIRES_REQUALIFICATION = "test_repair_candidate_requires_requalification"
PROTECTED_SURFACE_CHANGED = "protected_surface_changed"
EXTERNAL_PASS_AFTER_MUTATION = "external_pass_after_mutation_requires_requalification"
# Integrity errors: the declared provenance contradicts the hashes (also reason codes).
REPAIR_WITHOUT_PRIORS = "test_repair_requires_prior_test_and_oracle_hashes"
UNDECLARED_TEST_MUTATION = "undeclared_test_mutation"
UNDECLARED_ORACLE_MUTATION = "undeclared_oracle_mutation"

_BARE_HEX = re.compile(r"[0-9a-fA-F]{64}")


def canonical_sha256(value: Any) -> str:
    """``"sha256:<hex>"`` of the canonical JSON of a value: sorted keys, no spaces, UTF-8 with
    non-ASCII kept (the earlier tool's form, so that its recorded hashes still match)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalized_hash(text: str) -> str:
    """A hash as compared: bare 64-digit hex gets the ``sha256:`` prefix, in lower case."""
    if _BARE_HEX.fullmatch(text):
        return "sha256:" + text.lower()
    if text[:7].lower() == "sha256:" and _BARE_HEX.fullmatch(text[7:]):
        return "sha256:" + text[7:].lower()
    return text


def source_test_sha256(case_object: Mapping[str, Any]) -> str:
    """The test's identity hash, from a case object as written in a fixture."""
    return canonical_sha256({key: value for key, value in case_object.items()
                             if key not in NOT_TEST_SOURCE})


def source_oracle_sha256(case_object: Mapping[str, Any]) -> str:
    """The oracle's identity hash (``expected`` as written), from a case object."""
    return canonical_sha256(case_object.get("expected") or {})


def test_source_sha256(case: Case) -> str:
    """The identity hash of a case's test: name, type, command, timeouts, inputs... all but
    its oracle and provenance wrapper."""
    return source_test_sha256(case.source)


# Named as the report field; not a test, for pytest's collection of modules importing it.
test_source_sha256.__test__ = False  # type: ignore[attr-defined]


def oracle_sha256(case: Case) -> str:
    """The identity hash of a case's oracle, its ``expected`` object as written."""
    return source_oracle_sha256(case.source)


def lineage(case: Case) -> Mapping[str, Any] | None:
    """Where a generated test came from (``generated_test_lineage`` or ``generated_test``)."""
    for key in ("generated_test_lineage", "generated_test"):
        value = case.source.get(key)
        if isinstance(value, Mapping) and value:
            return value
    return None


def generation_id(case: Case) -> str:
    """The generation a lineage names, else one derived from the two identity hashes."""
    named = (lineage(case) or {}).get("generation_id")
    if isinstance(named, str) and named:
        return named
    derived = canonical_sha256({"test_source_sha256": test_source_sha256(case),
                                "oracle_sha256": oracle_sha256(case)})
    return derived[:32]


def execution_mode(case: Case) -> str:
    mode = case.source.get("execution_mode", DEFAULT_EXECUTION_MODE)
    return mode if mode in EXECUTION_MODES else DEFAULT_EXECUTION_MODE


def _object(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def external_result(case: Case) -> Mapping[str, Any]:
    """What an external runner or provider said about this case (may be empty)."""
    return _object(case.source.get("external_result")) or _object(
        case.source.get("provider_result"))


def mutation_flags(case: Case) -> dict[str, bool]:
    """Every flag, true when any source declares it."""
    merged = dict.fromkeys(MUTATION_FLAGS, False)
    for key, inner in FLAG_SOURCES:
        block = _object(case.source.get(key))
        if inner is not None:
            block = _object(block.get(inner))
        for flag, value in block.items():
            if flag in merged and value is True:
                merged[flag] = True
    return merged


def _prior(case: Case, key: str) -> str | None:
    for source in PRIOR_SOURCES:
        value = _object(case.source.get(source)).get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _changed(recorded: Any, current: str) -> bool:
    return isinstance(recorded, str) and bool(recorded) and normalized_hash(recorded) != current


@dataclass(frozen=True)
class Eligibility:
    """Whether a case may stand as evidence for a claim that already exists."""

    eligible: bool
    requires_requalification: bool
    reason_codes: tuple[str, ...]
    integrity_errors: tuple[str, ...]

    def as_report(self) -> dict[str, Any]:
        return {
            "eligible": self.eligible,
            "eligible_for_existing_claim": self.eligible,
            "requires_requalification": self.requires_requalification,
            "reason_codes": list(self.reason_codes),
            "integrity_errors": list(self.integrity_errors),
        }


@dataclass(frozen=True)
class Provenance:
    """A case's identity and what its declared history makes of it as evidence."""

    execution_mode: str
    test_source_sha256: str
    oracle_sha256: str
    generation_id: str
    lineage: Mapping[str, Any] | None
    prior_test_source_sha256: str | None
    prior_oracle_sha256: str | None
    flags: Mapping[str, bool]
    test_hash_changed: bool
    oracle_hash_changed: bool
    external: Mapping[str, Any]
    eligibility: Eligibility

    @property
    def declared(self) -> bool:
        return any(self.flags.values())

    @property
    def changed(self) -> bool:
        return self.declared or self.test_hash_changed or self.oracle_hash_changed

    @property
    def protected(self) -> bool:
        return any(self.flags[flag] for flag in PROTECTED_SURFACE_FLAGS)

    @property
    def fails_integrity(self) -> bool:
        """Whether a pass of this case must be reported as a failure: its provenance
        contradicts its hashes, or a replay is not the test it replays."""
        return bool(self.eligibility.integrity_errors) or (
            self.execution_mode == REGRESSION_REPLAY and self.changed)

    def mutation_report(self) -> dict[str, Any]:
        external = self.external
        return {
            "flags": dict(self.flags),
            "declared": self.declared,
            "test_hash_changed": self.test_hash_changed,
            "oracle_hash_changed": self.oracle_hash_changed,
            "changed_between_failure_and_observed_pass": self.changed,
            "protected_surface_changed": self.protected,
            "external_result": {
                key: external.get(key)
                for key in ("provider", "status", "passed", "test_source_sha256", "oracle_sha256")
            } if external else None,
        }


def case_provenance(case: Case) -> Provenance:
    """The identity of a case and its eligibility as evidence (ORIGINAL.md 1.9)."""
    mode = execution_mode(case)
    test_hash, oracle_hash = test_source_sha256(case), oracle_sha256(case)
    flags = mutation_flags(case)
    external = external_result(case)
    prior_test = _prior(case, "prior_test_source_sha256")
    prior_oracle = _prior(case, "prior_oracle_sha256")
    test_changed = (_changed(prior_test, test_hash)
                    or _changed(external.get("test_source_sha256"), test_hash))
    oracle_changed = (_changed(prior_oracle, oracle_hash)
                      or _changed(external.get("oracle_sha256"), oracle_hash))
    declared = any(flags.values())
    protected = any(flags[flag] for flag in PROTECTED_SURFACE_FLAGS)

    errors: list[str] = []
    if mode == TEST_REPAIR and not (prior_test and prior_oracle):
        errors.append(REPAIR_WITHOUT_PRIORS)
    if test_changed and not any(flags[flag] for flag in TEST_MUTATION_FLAGS):
        errors.append(UNDECLARED_TEST_MUTATION)
    if oracle_changed and not any(flags[flag] for flag in ORACLE_MUTATION_FLAGS):
        errors.append(UNDECLARED_ORACLE_MUTATION)
    reasons: list[str] = []
    if mode == REGRESSION_REPLAY and declared:
        reasons.append(REPLAY_DECLARED_MUTATION)
    if mode == EXPLORATION:
        reasons.append(EXPLORATION_NOT_ADMITTED)
    if mode == TEST_REPAIR:
        reasons.append(REPAIR_REQUIRES_REQUALIFICATION)
    if protected:
        reasons.append(PROTECTED_SURFACE_CHANGED)
    if declared and (external.get("passed") is True or external.get("status") == "passed"):
        reasons.append(EXTERNAL_PASS_AFTER_MUTATION)
    changed = declared or test_changed or oracle_changed
    eligible = mode == REGRESSION_REPLAY and not changed and not errors and not protected
    # Every way to be ineligible has a reason code above: a changed replay either declared
    # its change (REPLAY_DECLARED_MUTATION) or did not (an undeclared-mutation error).
    return Provenance(
        execution_mode=mode,
        test_source_sha256=test_hash,
        oracle_sha256=oracle_hash,
        generation_id=generation_id(case),
        lineage=lineage(case),
        prior_test_source_sha256=prior_test,
        prior_oracle_sha256=prior_oracle,
        flags=flags,
        test_hash_changed=test_changed,
        oracle_hash_changed=oracle_changed,
        external=external,
        eligibility=Eligibility(
            eligible=eligible,
            requires_requalification=mode != REGRESSION_REPLAY or changed,
            reason_codes=tuple(sorted(set(reasons + errors))),
            integrity_errors=tuple(sorted(set(errors))),
        ),
    )


def admission_records(claim: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The claim's admission pins, or None when it admits any eligible case.

    ``admitted_evidence`` wins over ``admitted_generations`` when both are given, as it did.
    """
    records = claim.get("admitted_evidence") or claim.get("admitted_generations")
    if not isinstance(records, list):
        return None
    return [record for record in records if isinstance(record, Mapping)]


def admitted(records: Sequence[Mapping[str, Any]] | None, case: Case,
             provenance: Provenance) -> bool:
    """Whether one record's pins all match the case (every case is admitted without pins).

    A record pinning nothing admits nothing: the loader refuses one, and here it fails closed.
    """
    if records is None:
        return True
    actual = {
        "case": case.name,
        "generation_id": provenance.generation_id,
        "test_source_sha256": provenance.test_source_sha256,
        "oracle_sha256": provenance.oracle_sha256,
    }
    for record in records:
        pins = {key: record[key] for key in PIN_KEYS
                if isinstance(record.get(key), str) and record[key]}
        if pins and all(_pin_matches(key, value, actual[key]) for key, value in pins.items()):
            return True
    return False


def _pin_matches(key: str, pinned: str, actual: str) -> bool:
    if key.endswith("sha256"):
        return normalized_hash(pinned) == actual
    return pinned == actual


def application_identity(fixture: Fixture, case: Case, repo: Mapping[str, Any] | None) -> Any:
    """What the case ran against: its own declaration, the fixture's, else the git state."""
    return (case.source.get("application_identity")
            or fixture.data.get("application_identity")
            or {"repo": repo})


def execution_provenance(
    fixture: Fixture, case: Case, provenance: Provenance, repo: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The ``execution_provenance`` block of a case (and of each of its trials) in the report."""
    return {
        "execution_mode": provenance.execution_mode,
        "fixture_sha256": "sha256:" + fixture.sha256,
        "test_source_sha256": provenance.test_source_sha256,
        "oracle_sha256": provenance.oracle_sha256,
        "generated_test_lineage": provenance.lineage,
        "generation_id": provenance.generation_id,
        "prior_test_source_sha256": provenance.prior_test_source_sha256,
        "prior_oracle_sha256": provenance.prior_oracle_sha256,
        "application_identity": application_identity(fixture, case, repo),
        "mutation_provenance": provenance.mutation_report(),
        "evidence_eligibility": provenance.eligibility.as_report(),
    }
