"""Incident to retained regression: the registry, its audit, and fail-before-fix verification.

A live failure becomes permanent evidence in ``fixtures/regressions.json``
(``agentic_evals.regressions.v1``). Each record names a retained guard case and a proof command
that reproduces the broken behaviour and shows that the guard fails against it. A guard that
cannot fail is worse than none: it looks like protection. So verification does not trust the
record. It runs the proof and requires the *declared* failure (the declared exit status and the
failure signature), refuses failures that only mean the proof never ran (exit 126/127, an
undeclared Python traceback, a fixture rejected at load), then runs the retained case against
the current code, which must pass.

Pure core: no pytest import. The CLI and the pytest items (``regression_items``) share it.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from pytest_agentic_evals.execution.environment import RunSettings, runner_environment
from pytest_agentic_evals.execution.process import run_process
from pytest_agentic_evals.execution.trial import run_trial
from pytest_agentic_evals.execution.workspace import SKIPPED_NAMES
from pytest_agentic_evals.expectations.builtin import ExpectationKind
from pytest_agentic_evals.expectations.output import excerpt, search_stream
from pytest_agentic_evals.jsonio import decode_json, display_path, write_json_atomically
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.loading.oschars import system_string_problems
from pytest_agentic_evals.model import FIXTURES_DIRNAME, PASS, Fixture
from pytest_agentic_evals.problems import (
    InputError,
    Problem,
    explain_schema_error,
    pointer_for,
    shown_value,
)
from pytest_agentic_evals.redaction import Redactor
from pytest_agentic_evals.regressions import earlier
from pytest_agentic_evals.schemas import schema_text
from pytest_agentic_evals.verdicts import case_outcome

REGISTRY_SCHEMA = "agentic_evals.regressions.v1"
AUDIT_SCHEMA = "agentic_evals.regressions_audit.v1"
VERIFICATION_SCHEMA = "agentic_evals.regressions_verification.v1"
REGISTRY_FILENAME = "regressions.json"
DEFAULT_RETAINED_FIXTURE = "agentic_eval.json"
DEFAULT_FRESHNESS_DAYS = 30

ACTIVE, EXEMPT, RETIRED = "ACTIVE", "EXEMPT", "RETIRED"
VERIFIED, NOT_VERIFIED = "VERIFIED", "NOT_VERIFIED"
ERROR, WARNING, INFO = "error", "warning", "info"

# Set in a proof's environment. A proof that runs the plugin must not verify regressions in
# turn: the proof of a registry beside its own fixture would otherwise start itself again.
GUARD_VARIABLE = "AGENTIC_EVALS_REGRESSION_ID"

# Exit statuses that mean the proof never ran what it names: the shell or exec could not find
# or execute the program. They are failures of the proof, never of the guard.
NOT_RUN_EXIT_CODES = {126: "not executable", 127: "command not found"}
TRACEBACK = re.compile(r"(?m)^Traceback \(most recent call last\):")
FIXTURE_REJECTED = "fixture rejected"
# A signature must identify the bug; these would match almost any failure.
GENERIC_SIGNATURES = frozenset({
    "error", "errors", "fail", "failed", "failure", "fails", "exception", "traceback", "panic",
    "fatal", "abort", "aborted", "assert", "assertionerror", "false", "no", "not", "exit",
    "warning", "killed", "timeout", "timed out", "not found",
})
MIN_SIGNATURE_CHARACTERS = 4
# Interpreters whose first operand is a script that must exist for the proof to run.
_SCRIPT_INTERPRETERS = frozenset({
    "python", "python3", "bash", "sh", "zsh", "dash", "node", "ruby", "perl",
})


class RegistryError(InputError):
    """A registry that cannot be used: unreadable, malformed, or with impossible values."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems, headline="regressions registry rejected")


@dataclass(frozen=True)
class Proof:
    """``fail_before_fix``: how to reproduce the broken behaviour, and how it must fail."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]
    timeout_seconds: float | None
    exit_code: int | None
    """The declared exit status; None when only ``nonzero`` is declared."""
    stdout_contains: tuple[str, ...]
    stderr_contains: tuple[str, ...]

    def declares(self, text: str) -> bool:
        """True when a declared failure signature mentions ``text`` (case-insensitive)."""
        wanted = text.lower()
        return any(wanted in s.lower() for s in self.stdout_contains + self.stderr_contains)

    def expected(self) -> dict[str, Any]:
        declared: dict[str, Any] = (
            {"exit_code": self.exit_code} if self.exit_code is not None else {"nonzero": True}
        )
        if self.stdout_contains:
            declared["stdout_contains"] = list(self.stdout_contains)
        if self.stderr_contains:
            declared["stderr_contains"] = list(self.stderr_contains)
        return declared


@dataclass(frozen=True)
class Regression:
    index: int
    regression_id: str
    status: str
    retained_case: str
    retained_fixture: Path
    retained_fixture_text: str
    incident_id: str | None
    claim_ids: tuple[str, ...]
    seam_ids: tuple[str, ...]
    evidence_class: str | None
    last_proven: date | None
    detection_date: date | None
    fix_date: date | None
    retirement: str | None
    proof: Proof | None
    title: str = ""
    unverifiable: tuple[str, ...] = ()
    """Why the record can never be VERIFIED whatever its proof does (no proof, no failure
    signature, a proof declared to pass); it is still shown and audited."""
    notes: Mapping[str, Any] = field(default_factory=dict)
    """The earlier tool's notes on the record and its proof, as written."""

    @property
    def pointer(self) -> str:
        return pointer_for("regressions", self.index)


@dataclass(frozen=True)
class Incident:
    index: int
    incident_id: str
    status: str
    date: date | None
    title: str

    @property
    def pointer(self) -> str:
        return pointer_for("incidents", self.index)


@dataclass(frozen=True)
class Registry:
    path: Path
    data: Mapping[str, Any]
    regressions: tuple[Regression, ...]
    incidents: tuple[Incident, ...]
    freshness_days: int | None
    earlier: bool = False
    """Written for the earlier tool: proofs' ``cwd`` is relative to the skill's directory."""

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def shown(self) -> str:
        return display_path(self.path)

    @property
    def skill(self) -> str:
        folder = self.folder
        skill_dir = folder.parent if folder.name == FIXTURES_DIRNAME else folder
        return str(self.data.get("skill") or skill_dir.name)

    @property
    def active(self) -> tuple[Regression, ...]:
        return tuple(r for r in self.regressions if r.status == ACTIVE)

    def regression(self, regression_id: str) -> Regression:
        for regression in self.regressions:
            if regression.regression_id == regression_id:
                return regression
        raise KeyError(regression_id)


# -- dates ---------------------------------------------------------------------------------


def today_utc() -> date:
    return datetime.now(timezone.utc).date()


def parse_date(text: str) -> date | None:
    """A calendar date from an ISO date or date-time, or None when it is not a real one."""
    try:
        if "T" not in text:
            return date.fromisoformat(text)
        # Python 3.10 does not read a trailing "Z"; it means UTC, as +00:00 does.
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.date()


# -- loading -------------------------------------------------------------------------------


def is_registry(path: Path) -> bool:
    return path.name == REGISTRY_FILENAME


def registry_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(schema_text("regressions"))
    return schema


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(registry_schema())


def find_registry(target: str | os.PathLike[str]) -> Path | None:
    """The registry of a skill directory (``fixtures/regressions.json``, or beside it), or the
    file itself when ``target`` names one."""
    path = Path(os.path.abspath(target))
    if path.is_file():
        return path
    for candidate in (path / FIXTURES_DIRNAME / REGISTRY_FILENAME, path / REGISTRY_FILENAME):
        if candidate.is_file():
            return candidate
    return None


def find_registries(root: str | os.PathLike[str]) -> list[Path]:
    """Every ``regressions.json`` under ``root``, skipping VCS, dependency and cache folders."""
    found = []
    for directory, subdirectories, files in os.walk(os.path.abspath(root)):
        subdirectories[:] = sorted(
            name for name in subdirectories
            if name not in SKIPPED_NAMES
            and not os.path.isfile(os.path.join(directory, name, "pyvenv.cfg"))
        )
        if REGISTRY_FILENAME in files:
            found.append(Path(directory) / REGISTRY_FILENAME)
    return sorted(found)


def load_registry(path: str | os.PathLike[str]) -> Registry:
    """Read and validate a registry; raise RegistryError listing every problem at once."""
    registry_path = Path(os.path.abspath(path))
    shown = display_path(registry_path)
    try:
        raw = registry_path.read_bytes()
    except OSError as exc:
        raise RegistryError([Problem(shown, "", f"cannot read registry: {exc.strerror}")]) from None
    try:
        data = decode_json(raw, shown)
    except InputError as exc:
        raise RegistryError(exc.problems) from None
    return registry_from_data(data, registry_path)


def registry_from_data(data: Any, registry_path: Path, today: date | None = None) -> Registry:
    shown = display_path(registry_path)
    problems = _schema_problems(data, shown) + system_string_problems(data, shown)
    if problems:
        # Values are only interpreted once their structure is right.
        raise RegistryError(problems)
    today = today or today_utc()
    written_earlier = earlier.written_for_earlier_tool(data)
    folder = registry_path.parent
    proof_base = (folder.parent if written_earlier and folder.name == FIXTURES_DIRNAME
                  else folder)
    regressions = []
    for index, record in enumerate(data["regressions"]):
        regression, record_problems = _build_regression(index, record, registry_path, today,
                                                        proof_base)
        regressions.append(regression)
        problems += record_problems
    incidents = []
    for index, record in enumerate(data.get("incidents", ())):
        fields = record if isinstance(record, dict) else {}
        incident_date, date_problems = _date_field(fields, "date", pointer_for("incidents", index),
                                                   shown, today)
        problems += date_problems
        incidents.append(Incident(index, str(earlier.incident_key(record)),
                                  fields.get("status", "open"), incident_date,
                                  fields.get("title") or fields.get("note", "")))
    problems += _duplicates([r.regression_id for r in regressions], "regressions",
                            "regression_id", shown)
    problems += _duplicates([i.incident_id for i in incidents], "incidents", "incident_id", shown)
    if problems:
        raise RegistryError(sorted(set(problems)))
    return Registry(registry_path, data, tuple(regressions), tuple(incidents),
                    data.get("freshness_days"), written_earlier)


def _schema_problems(data: Any, shown: str) -> list[Problem]:
    try:
        errors = list(_validator().iter_errors(data))
    except RecursionError:
        return [Problem(shown, "", "document is nested too deeply to validate")]
    problems = []
    for error in errors:
        problems += [Problem(shown, pointer, message) for pointer, message in _explain(error)]
    return sorted(set(problems))


def _explain(error: ValidationError) -> list[tuple[str, str]]:
    """Turn a jsonschema error into (pointer, message) pairs a person can act on."""
    parts = list(error.absolute_path)
    pointer = pointer_for(*parts)
    value = error.validator_value
    instance = error.instance
    field = str(parts[-1]) if parts else ""
    if error.validator == "required" and "then" in error.schema_path:
        missing = [name for name in value if isinstance(instance, dict) and name not in instance]
        if "retirement" in missing:
            return [(pointer, "a RETIRED regression needs a retirement reason (\"retirement\")")]
        return [(pointer, "an ACTIVE regression (the default status) needs fail_before_fix: the "
                          "proof that its guard fails against the broken behaviour")]
    if error.validator == "anyOf" and value == [{"required": ["exit_code"]},
                                                {"required": ["nonzero"]}]:
        return [(pointer, "declare how the broken behaviour fails: exit_code (its exit status) "
                          "or nonzero: true")]
    if error.validator == "anyOf":
        return [(pointer, "declare a failure signature: stdout_contains or stderr_contains, "
                          "text that only the broken behaviour prints; an exit status alone "
                          "cannot tell the declared failure from any other")]
    if error.validator == "not":
        return [(pointer, "exit_code and nonzero exclude each other: declare one")]
    if error.validator == "oneOf" and field == "retirement":
        return [(pointer, "retirement is a non-empty reason, or an object with a non-empty "
                          "\"reason\"")]
    if error.validator == "pattern" and value == "\\S":
        return [(pointer, "must not be empty")]
    if error.validator == "pattern" and field == "regression_id":
        return [(pointer, f"{shown_value(instance)} cannot be used in a test id: use letters, "
                          "digits and _ . : + - only, starting with a letter or digit")]
    if error.validator == "pattern":
        return [(pointer, f"{shown_value(instance)} is not an ISO date (YYYY-MM-DD, or an ISO "
                          "date-time)")]
    if error.validator in ("minimum", "maximum") and field == "exit_code":
        if instance == 0:
            return [(pointer, "exit_code 0 is success: the proof must fail against the broken "
                              "behaviour")]
        return [(pointer, f"exit_code {instance} is not an exit status (1 to 255)")]
    if error.validator == "const" and field == "schema":
        return [(pointer, f"{shown_value(instance)} is not a regression registry: "
                          f"\"schema\" must be {REGISTRY_SCHEMA!r}")]
    if error.validator == "const" and field == "nonzero":
        return [(pointer, "nonzero can only be true (a proof must fail)")]
    if error.validator == "minItems" and field == "proof_command":
        return [(pointer, "proof_command is empty: give the argv of the proof")]
    return explain_schema_error(error)


def _duplicates(ids: Sequence[str], section: str, key: str, shown: str) -> list[Problem]:
    first: dict[str, int] = {}
    problems = []
    for index, value in enumerate(ids):
        if value in first:
            problems.append(Problem(shown, pointer_for(section, index, key),
                                    f"duplicate {key} {value!r} (also "
                                    f"{pointer_for(section, first[value], key)})"))
        else:
            first[value] = index
    return problems


def _date_field(
    record: Mapping[str, Any], key: str, here: str, shown: str, today: date,
    future_allowed: bool = True,
) -> tuple[date | None, list[Problem]]:
    text = record.get(key)
    if text is None:
        return None, []
    value = parse_date(text)
    if value is None:
        return None, [Problem(shown, f"{here}/{key}", f"{text!r} is not a real date")]
    # A day of slack: "today" differs between time zones.
    if not future_allowed and value > today + timedelta(days=1):
        return value, [Problem(shown, f"{here}/{key}", f"{text} is in the future: a proof cannot "
                               "have been demonstrated on a day that has not come")]
    return value, []


def _build_regression(
    index: int, record: Mapping[str, Any], registry_path: Path, today: date, proof_base: Path
) -> tuple[Regression, list[Problem]]:
    shown = display_path(registry_path)
    here = pointer_for("regressions", index)
    problems: list[Problem] = []
    dates: dict[str, date | None] = {}
    for key in ("last_proven", "detection_date", "fix_date"):
        dates[key], found = _date_field(record, key, here, shown, today,
                                        future_allowed=key != "last_proven")
        problems += found
    detected, fixed = dates["detection_date"], dates["fix_date"]
    if detected and fixed and fixed < detected:
        problems.append(Problem(shown, f"{here}/fix_date", f"fix_date {record['fix_date']} is "
                                f"before detection_date {record['detection_date']}"))
    incident = record.get("incident") or {}
    if isinstance(incident, dict):
        problems += _date_field(incident, "date", f"{here}/incident", shown, today)[1]
    retirement = record.get("retirement")
    if isinstance(retirement, dict):
        problems += _date_field(retirement, "date", f"{here}/retirement", shown, today)[1]
        retirement = retirement["reason"]

    fixture_text = record.get("retained_fixture", DEFAULT_RETAINED_FIXTURE)
    if os.path.isabs(fixture_text):
        problems.append(Problem(shown, f"{here}/retained_fixture", "retained_fixture must be "
                                "relative to the registry's folder, so the registry can move "
                                "with its skill"))
    proof = None
    if "fail_before_fix" in record:
        proof, proof_problems = _build_proof(record["fail_before_fix"], proof_base, shown,
                                             f"{here}/fail_before_fix")
        problems += proof_problems
    status = record.get("status", ACTIVE).upper()
    regression = Regression(
        index=index,
        regression_id=record["regression_id"],
        status=status,
        retained_case=record["retained_case"],
        retained_fixture=Path(os.path.normpath(registry_path.parent / fixture_text)),
        retained_fixture_text=fixture_text,
        incident_id=earlier.incident_key(incident) if incident else None,
        claim_ids=tuple(record.get("claim_ids", ())),
        seam_ids=tuple(record.get("seam_ids", ())),
        evidence_class=record.get("evidence_class"),
        last_proven=dates["last_proven"],
        detection_date=detected,
        fix_date=fixed,
        retirement=retirement,
        proof=proof,
        title=record.get("title", ""),
        unverifiable=tuple(earlier.unverifiable_reasons(record, status == ACTIVE)),
        notes=earlier.notes(record),
    )
    return regression, problems


def _build_proof(
    record: Mapping[str, Any], base: Path, shown: str, here: str
) -> tuple[Proof, list[Problem]]:
    """The proof; ``base`` is the folder its ``cwd`` is relative to."""
    problems = []
    expected = record.get("expected", {})
    exit_code = expected.get("exit_code")
    if exit_code in NOT_RUN_EXIT_CODES:
        problems.append(Problem(shown, f"{here}/expected/exit_code", f"exit_code {exit_code} "
                                f"means {NOT_RUN_EXIT_CODES[exit_code]}: a proof that never ran "
                                "proves nothing, so it can never be the declared failure"))
    for stream in ("stdout_contains", "stderr_contains"):
        for position, signature in enumerate(expected.get(stream, ())):
            words = signature.strip().lower()
            if words in GENERIC_SIGNATURES or len(words) < MIN_SIGNATURE_CHARACTERS:
                problems.append(Problem(
                    shown, f"{here}/expected/{stream}/{position}",
                    f"{signature!r} is too generic to be a failure signature: almost any "
                    "failure prints it; quote what only the broken behaviour prints"))
    cwd_text = record.get("cwd", ".")
    if os.path.isabs(cwd_text):
        problems.append(Problem(shown, f"{here}/cwd", "cwd must be relative to the registry's "
                                "folder, so the registry can move with its skill"))
    if not record["proof_command"][0]:
        problems.append(Problem(shown, f"{here}/proof_command/0", "the program name is empty"))
    proof = Proof(
        argv=tuple(record["proof_command"]),
        cwd=Path(os.path.normpath(base / cwd_text)),
        env=dict(record.get("env", {})),
        timeout_seconds=record.get("timeout_seconds"),
        exit_code=exit_code,
        stdout_contains=tuple(expected.get("stdout_contains", ())),
        stderr_contains=tuple(expected.get("stderr_contains", ())),
    )
    return proof, problems


# -- audit and show: static, nothing is executed -------------------------------------------


@dataclass(frozen=True)
class Finding:
    severity: str
    code: str
    registry: str
    pointer: str
    subject: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)


def retained_case_problems(
    regression: Regression, extra_expectations: Mapping[str, Mapping[str, Any]] | None = None
) -> tuple[list[str], bool, Fixture | None]:
    """Why the retained case cannot guard (empty when it can), whether that is an input error
    (the retained fixture is unreadable or rejected), and the loaded fixture."""
    shown = display_path(regression.retained_fixture)
    if not regression.retained_fixture.is_file():
        return [f"retained fixture {shown} not found"], False, None
    try:
        fixture = load_fixture(regression.retained_fixture, extra_expectations)
    except FixtureError as exc:
        shown_problems = [str(p) for p in exc.problems[:5]]
        more = len(exc.problems) - len(shown_problems)
        return ([f"retained fixture {shown} is rejected: " + "; ".join(shown_problems)
                 + (f" (and {more} more)" if more > 0 else "")], True, None)
    names = [case.name for case in fixture.cases]
    if regression.retained_case not in names:
        close = difflib.get_close_matches(regression.retained_case, names, n=1, cutoff=0.5)
        hint = f" (renamed to {close[0]!r}?)" if close else ""
        return ([f"retained case {regression.retained_case!r} not found in {shown}{hint}: "
                 "nothing guards this regression any more"], False, fixture)
    return [], False, fixture


def _program_problem(proof: Proof) -> str | None:
    """A proof whose program or script does not exist fails without reproducing anything."""
    program = proof.argv[0]
    env_path = proof.env.get("PATH", os.environ.get("PATH"))
    if "/" in program:
        if not (proof.cwd / program).exists():
            return f"proof program {program} not found (from {display_path(proof.cwd)})"
    elif shutil.which(program, path=env_path) is None:
        return f"proof program {program} not found on PATH"
    if Path(program).name.rstrip("0123456789.") in _SCRIPT_INTERPRETERS and len(proof.argv) > 1:
        script = proof.argv[1]
        if not script.startswith("-") and Path(script).suffix and not (proof.cwd / script).exists():
            return f"proof script {script} not found (from {display_path(proof.cwd)})"
    return None


def audit_registry(
    registry: Registry,
    *,
    today: date | None = None,
    freshness_days: int | None = None,
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[dict[str, Any], list[Finding]]:
    """One registry's entry in an audit, and its findings."""
    today = today or today_utc()
    window = freshness_days or registry.freshness_days or DEFAULT_FRESHNESS_DAYS
    shown = registry.shown
    findings: list[Finding] = []
    groups: dict[str, list[str]] = {key: [] for key in (
        "unprotected", "never_proven", "stale_live_proof", "retired", "exempt", "open_incidents",
        "unverifiable")}

    def find(severity: str, code: str, pointer: str, subject: str, message: str) -> None:
        findings.append(Finding(severity, code, shown, pointer, subject, message))

    entries = []
    for regression in registry.regressions:
        rid, here = regression.regression_id, regression.pointer
        entry: dict[str, Any] = {
            "regression_id": rid,
            "title": regression.title,
            "status": regression.status,
            "incident_id": regression.incident_id,
            "claim_ids": list(regression.claim_ids),
            "seam_ids": list(regression.seam_ids),
            "retained_case": regression.retained_case,
            "retained_fixture": display_path(regression.retained_fixture),
            "evidence_class": regression.evidence_class,
            "detection_date": _iso(regression.detection_date),
            "fix_date": _iso(regression.fix_date),
            "last_proven": _iso(regression.last_proven),
            "proof_age_days": None,
            "fail_before_fix_proof_command": list(regression.proof.argv)
            if regression.proof else None,
            "retirement": regression.retirement,
            "protected": None,
            "problems": [],
            "unverifiable": list(regression.unverifiable),
            "earlier_notes": dict(regression.notes),
        }
        entries.append(entry)
        if regression.status == RETIRED:
            groups["retired"].append(rid)
            find(INFO, "retired", here, rid, f"{rid} is retired: {regression.retirement}")
            continue
        problems, _, fixture = retained_case_problems(regression, extra_expectations)
        entry["protected"] = not problems
        entry["problems"] = problems
        if problems:
            groups["unprotected"].append(rid)
            severity = ERROR if regression.status == ACTIVE else WARNING
            for problem in problems:
                find(severity, "unprotected", here + "/retained_case", rid, problem)
        elif fixture is not None and not fixture.case(regression.retained_case).required:
            find(WARNING, "retained_case_optional", here + "/retained_case", rid,
                 f"retained case {regression.retained_case!r} is \"required\": false, so its "
                 "failure never fails a run")
        if regression.status == EXEMPT:
            groups["exempt"].append(rid)
            find(INFO, "exempt", here + "/status", rid,
                 f"{rid} is exempt: its guard is not verified")
            continue
        if regression.unverifiable:
            groups["unverifiable"].append(rid)
            for reason in regression.unverifiable:
                find(ERROR, "unverifiable", here + "/fail_before_fix", rid,
                     f"{rid} can never be verified: {reason}")
        if regression.notes.get("proven") is True:
            find(INFO, "self_reported_proof", here + "/fail_before_fix/proven", rid,
                 f"{rid}: {earlier.SELF_REPORTED}")
        if regression.proof is not None:
            missing = _program_problem(regression.proof)
            if missing:
                find(WARNING, "proof_unrunnable", here + "/fail_before_fix/proof_command", rid,
                     f"{missing}: the proof would fail without reproducing anything")
        if regression.last_proven is None:
            groups["never_proven"].append(rid)
            find(WARNING, "never_proven", here, rid, f"{rid} was never proven to fail before "
                 "its fix (possibly vacuous): run regressions verify --record")
            continue
        age = (today - regression.last_proven).days
        entry["proof_age_days"] = age
        if age > window:
            groups["stale_live_proof"].append(rid)
            find(WARNING, "stale_live_proof", here + "/last_proven", rid,
                 f"{rid} was last proven {age} days ago ({_iso(regression.last_proven)}), "
                 f"beyond the {window}-day freshness window")

    mapped: dict[str, list[str]] = {}
    for regression in registry.regressions:
        if regression.incident_id:
            mapped.setdefault(regression.incident_id, []).append(regression.regression_id)
    incidents = []
    for incident in registry.incidents:
        regressions = mapped.get(incident.incident_id, [])
        incidents.append({"incident_id": incident.incident_id, "status": incident.status,
                          "date": _iso(incident.date), "title": incident.title,
                          "regressions": regressions})
        if incident.status == "open" and not regressions:
            groups["open_incidents"].append(incident.incident_id)
            find(WARNING, "open_incident", incident.pointer, incident.incident_id,
                 f"open incident {incident.incident_id} has no regression mapped to it: the "
                 "failure is not yet permanent evidence")
    entry_dict = {
        "path": shown,
        "skill": registry.skill,
        "valid": True,
        "problems": [],
        "freshness_days": window,
        "regressions": entries,
        "incidents": incidents,
        **groups,
    }
    return entry_dict, findings


def invalid_registry_entry(path: Path, error: InputError) -> tuple[dict[str, Any], Finding]:
    shown = display_path(path)
    entry = {"path": shown, "skill": None, "valid": False,
             "problems": [str(problem) for problem in error.problems]}
    finding = Finding(ERROR, "invalid_registry", shown, "", shown,
                      f"registry is invalid ({len(error.problems)} problem(s)): its regressions "
                      "are unknown, not zero")
    return entry, finding


def audit(
    paths: Sequence[Path],
    *,
    root: str,
    today: date | None = None,
    freshness_days: int | None = None,
    strict: bool = False,
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The audit of every registry in ``paths``: invalid ones are listed as invalid."""
    today = today or today_utc()
    entries, findings = [], []
    for path in paths:
        try:
            registry = load_registry(path)
        except RegistryError as exc:
            entry, finding = invalid_registry_entry(path, exc)
            entries.append(entry)
            findings.append(finding)
            continue
        entry_dict, found = audit_registry(registry, today=today, freshness_days=freshness_days,
                                           extra_expectations=extra_expectations)
        entries.append(entry_dict)
        findings += found
    valid = [entry for entry in entries if entry["valid"]]
    summary = {
        "registries": len(entries),
        "invalid_registries": len(entries) - len(valid),
        "regressions": sum(len(e["regressions"]) for e in valid),
        "active": sum(r["status"] == ACTIVE for e in valid for r in e["regressions"]),
        **{key: sum(len(e[key]) for e in valid) for key in (
            "unprotected", "never_proven", "stale_live_proof", "retired", "exempt",
            "open_incidents", "unverifiable")},
    }
    failing = [f for f in findings if f.severity == ERROR or (strict and f.severity == WARNING)]
    if summary["invalid_registries"]:
        reason = f"{summary['invalid_registries']} invalid registry(ies)"
    elif failing:
        reason = "; ".join(f"{f.subject}: {f.code}" for f in failing[:8])
    else:
        reason = "every active regression is protected"
    return {
        "schema": AUDIT_SCHEMA,
        "root": root,
        "today": today.isoformat(),
        "freshness_days": freshness_days,
        "strict": strict,
        "registries": entries,
        "findings": [finding.to_dict() for finding in findings],
        "summary": summary,
        "gate": {"passed": not failing and not summary["invalid_registries"], "reason": reason},
    }


def _iso(value: date | None) -> str | None:
    return value.isoformat() if value else None


def audit_lines(report: Mapping[str, Any]) -> list[str]:
    """The audit as a table a person reads at a glance."""
    lines = []
    for entry in report["registries"]:
        if not entry["valid"]:
            lines.append(f"INVALID  {entry['path']}: {len(entry['problems'])} problem(s) "
                         "(listed on stderr): its regressions are unknown, not zero")
            continue
        count = len(entry["regressions"])
        lines.append(f"{entry['path']} (skill {entry['skill']}): {count} regression(s), "
                     f"freshness window {entry['freshness_days']} days")
        for record in entry["regressions"]:
            lines.append(f"  {record['status']:<8} {record['regression_id']:<32} "
                         f"case {record['retained_case']:<28} {_state_text(record, entry)}")
        for incident in entry["incidents"]:
            mapped = ", ".join(incident["regressions"]) or "no regression"
            lines.append(f"  incident {incident['incident_id']} ({incident['status']}): {mapped}")
    findings = [f for f in report["findings"] if f["code"] != "invalid_registry"]
    if findings:
        lines.append("findings:")
        lines += [f"  {f['severity'].upper():<8} {f['code']:<22} {f['registry']}: "
                  f"{f['pointer'] or '(document)'}: {f['message']}" for f in findings]
    summary = report["summary"]
    lines.append(
        f"summary: {summary['registries']} registry(ies) ({summary['invalid_registries']} "
        f"invalid), {summary['regressions']} regression(s), {summary['active']} active: "
        f"{summary['unprotected']} unprotected, {summary['never_proven']} never proven, "
        f"{summary['stale_live_proof']} stale, {summary['retired']} retired, "
        f"{summary['exempt']} exempt, {summary['open_incidents']} open incident(s) unmapped")
    return lines


def _state_text(record: Mapping[str, Any], entry: Mapping[str, Any]) -> str:
    rid = record["regression_id"]
    if record["status"] == RETIRED:
        return f"retired: {record['retirement']}"
    if rid in entry["unprotected"]:
        return "UNPROTECTED"
    if rid in entry["unverifiable"]:
        return "UNVERIFIABLE (see findings)"
    if rid in entry["never_proven"]:
        return "never proven"
    age = record["proof_age_days"]
    when = f"proven {record['last_proven']} ({age} days ago)" if age is not None else ""
    if rid in entry["stale_live_proof"]:
        return "STALE, " + when
    return when or "exempt"


# -- verify: run the proof, then the retained case -----------------------------------------


def proof_environment(
    regression: Regression, settings: RunSettings, scratch: Path
) -> dict[str, str]:
    """The runner's environment as a trial gets it, plus the recursion guard and the proof's env."""
    env = runner_environment()
    env.update({
        GUARD_VARIABLE: regression.regression_id,
        "AGENTIC_EVALS_RUN_ID": settings.run_id,
        "AGENTIC_EVALS_PROOF_DIR": str(scratch),
    })
    assert regression.proof is not None
    env.update(regression.proof.env)
    return env


def run_proof(regression: Regression, settings: RunSettings) -> dict[str, Any]:
    """Run ``fail_before_fix`` and judge whether it failed for the declared reason."""
    proof = regression.proof
    assert proof is not None
    base = settings.run_dir / "regressions" / regression.regression_id / "proof"
    if base.exists():
        shutil.rmtree(base)
    scratch = base / "scratch"
    scratch.mkdir(parents=True)
    env = proof_environment(regression, settings, scratch)
    timeout = proof.timeout_seconds or settings.default_timeout
    process = run_process(proof.argv, cwd=proof.cwd, env=env, timeout=timeout,
                          output_dir=base / "output")
    problems: list[str] = []
    code = process.exit_code
    signatures = {
        stream: dict.fromkeys(wanted, False)
        for stream, wanted in (("stdout", proof.stdout_contains),
                               ("stderr", proof.stderr_contains)) if wanted
    }
    if process.start_error:
        problems.append(f"the proof could not start: {process.start_error}")
    elif process.timed_out:
        problems.append(f"the proof timed out after {timeout:g}s: a hang is not the declared "
                        "failure")
    elif code is not None and code < 0:
        problems.append(f"the proof was killed by signal {-code}: a crash is not the declared "
                        "failure")
    elif code == 0:
        problems.append("the proof exited 0: the guard passed against the broken behaviour, so "
                        "it cannot tell broken from fixed (vacuous guard)")
    elif code in NOT_RUN_EXIT_CODES:
        problems.append(f"the proof exited {code} ({NOT_RUN_EXIT_CODES[code]}): it never ran, "
                        "so it proves nothing")
    elif proof.exit_code is not None and code != proof.exit_code:
        problems.append(f"the proof exited {code}, the declared failure exits {proof.exit_code}")
    if process.left_behind:
        shown = ", ".join(f"pid {p.pid} ({p.command or '?'})" for p in process.left_behind)
        problems.append(f"the proof left {len(process.left_behind)} process(es) behind, killed: "
                        f"{shown}")
    if process.start_error is None:
        for stream, wanted in signatures.items():
            path = process.stdout_path if stream == "stdout" else process.stderr_path
            found, _ = search_stream(path, wanted, [])
            for signature in wanted:
                wanted[signature] = signature in found
                if signature not in found:
                    problems.append(f"failure signature {signature!r} not found in {stream}: "
                                    "the proof failed for another reason than the declared one")
        _, traceback = search_stream(process.stderr_path, [], [TRACEBACK])
        if traceback and code != 0 and not proof.declares("Traceback"):
            problems.append("the proof died with an undeclared Python traceback: a crash of the "
                            "proof is not the declared failure")
        found, _ = search_stream(process.stderr_path, [FIXTURE_REJECTED], [])
        if code == 2 and found and not proof.declares(FIXTURE_REJECTED):
            problems.append("the proof's fixture was rejected at load (exit 2, \"fixture "
                            "rejected\" on stderr): the guard never ran")
    verified = not problems
    hidden = Redactor.of_environment(env)
    result = {
        "argv": list(proof.argv),
        "cwd": display_path(proof.cwd),
        "expected": proof.expected(),
        "verified": verified,
        "exit_code": code,
        "timed_out": process.timed_out,
        "duration_ms": process.duration_ms,
        "left_behind_processes": [{"pid": p.pid, "command": p.command}
                                  for p in process.left_behind],
        "signatures_found": signatures,
        "problems": problems,
        "stdout": excerpt(process.stdout_path, hidden),
        "stderr": excerpt(process.stderr_path, hidden),
        "output_dir": str(base / "output"),
    }
    if verified and not settings.keep_passed_workspaces:
        shutil.rmtree(base, ignore_errors=True)
        result["output_dir"] = None
    return hidden.document(result)


def run_retained_case(
    regression: Regression,
    settings: RunSettings,
    kinds: Mapping[str, ExpectationKind],
    *,
    trials_for: Callable[[Fixture], int] | None = None,
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[dict[str, Any], bool]:
    """Run every trial of the retained case against the current code; and whether a problem is
    bad input (a retained fixture that cannot be loaded)."""
    problems, input_error, fixture = retained_case_problems(regression, extra_expectations)
    result: dict[str, Any] = {
        "fixture": display_path(regression.retained_fixture),
        "case": regression.retained_case,
        "outcome": "NOT_RUN",
        "trials": [],
        "problems": problems,
    }
    if problems or fixture is None:
        return result, input_error
    case = fixture.case(regression.retained_case)
    # Its own directory: the same case may be running as ordinary trials of this very run,
    # and trial directories are per (fixture, case, trial).
    private = dataclasses.replace(
        settings, run_dir=settings.run_dir / "regressions" / regression.regression_id
    )
    count = trials_for(fixture) if trials_for else fixture.trials
    trials = [run_trial(fixture, case, n, private, kinds) for n in range(1, count + 1)]
    outcomes = [trial["outcome"] for trial in trials]
    result["trials"] = trials
    result["outcome"] = case_outcome(outcomes)
    for trial in trials:
        result["problems"] += [f"trial {trial['trial']}: {p}" for p in trial["problems"]]
    return result, False


def verify_regression(
    registry: Registry,
    regression: Regression,
    settings: RunSettings,
    kinds: Mapping[str, ExpectationKind],
    *,
    trials_for: Callable[[Fixture], int] | None = None,
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Fail-before-fix, then pass-after-fix, for one ACTIVE regression; a plain JSON dict.

    A record that can never be verified (``unverifiable``) has its proof left unrun: whatever
    it does, it could not show the declared failure. Its retained case still runs."""
    proof = run_proof(regression, settings) if not regression.unverifiable else None
    retained, input_error = run_retained_case(regression, settings, kinds, trials_for=trials_for,
                                              extra_expectations=extra_expectations)
    reasons = [f"fail-before-fix: {problem}" for problem in
               (proof["problems"] if proof else regression.unverifiable)]
    if retained["outcome"] != PASS:
        passed = sum(t["outcome"] == PASS for t in retained["trials"])
        if retained["trials"]:
            reasons.append(f"retained case {regression.retained_case!r} did not pass on the "
                           f"current code ({passed}/{len(retained['trials'])} trials passed)")
        reasons += [f"retained case: {problem}" for problem in retained["problems"]]
    return {
        "regression_id": regression.regression_id,
        "registry": registry.shown,
        "status": regression.status,
        "incident_id": regression.incident_id,
        "verdict": VERIFIED if not reasons else NOT_VERIFIED,
        "reasons": reasons,
        "input_error": input_error,
        "fail_before_fix": proof,
        "retained": retained,
    }


def crashed_result(registry: str, regression_id: str, problem: str) -> dict[str, Any]:
    """The result of a verification whose process died before it could say anything."""
    return {
        "regression_id": regression_id,
        "registry": registry,
        "status": ACTIVE,
        "incident_id": None,
        "verdict": NOT_VERIFIED,
        "reasons": [problem],
        "input_error": False,
        "fail_before_fix": None,
        "retained": None,
    }


def verification_report(
    registry: Registry, results: list[dict[str, Any]], run_id: str, recorded: Sequence[str] = ()
) -> dict[str, Any]:
    verified = [r for r in results if r["verdict"] == VERIFIED]
    skipped = [{"regression_id": r.regression_id, "status": r.status}
               for r in registry.regressions if r.status != ACTIVE]
    return {
        "schema": VERIFICATION_SCHEMA,
        "registry": registry.shown,
        "skill": registry.skill,
        "run_id": run_id,
        "timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "verified": len(verified) == len(results),
        "summary": {"active": len(results), "verified": len(verified),
                    "not_verified": len(results) - len(verified), "skipped": len(skipped)},
        "regressions": results,
        "skipped": skipped,
        "recorded": list(recorded),
    }


def verification_lines(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per verified regression; the reasons under each one that is not."""
    lines = []
    for result in results:
        rid = result["regression_id"]
        if result["verdict"] == VERIFIED:
            proof, retained = result["fail_before_fix"], result["retained"]
            lines.append(f"{VERIFIED:<13} {rid}: the proof failed as declared (exit "
                         f"{proof['exit_code']}, signature found); retained case "
                         f"{retained['case']} passed {len(retained['trials'])}/"
                         f"{len(retained['trials'])} trials on the current code")
            continue
        lines.append(f"{NOT_VERIFIED:<13} {rid}: cannot demonstrate fail-before-fix")
        lines += [f"  - {reason}" for reason in result["reasons"]]
    return lines


def record_last_proven(path: Path, regression_ids: Iterable[str], day: date) -> None:
    """Write ``last_proven`` for these regressions back into the registry, atomically.

    The file is read again rather than reusing what verification loaded: someone may have
    edited it during a long verification, and their edit must not be lost.
    """
    wanted = set(regression_ids)
    shown = display_path(path)
    try:
        data = decode_json(path.read_bytes(), shown)
    except InputError as exc:
        raise RegistryError(exc.problems) from None
    except OSError as exc:
        raise RegistryError([Problem(shown, "", f"cannot read registry: {exc.strerror}")]) from None
    for record in data.get("regressions", ()) if isinstance(data, dict) else ():
        if isinstance(record, dict) and record.get("regression_id") in wanted:
            record["last_proven"] = day.isoformat()
    registry_from_data(data, path)  # never write a registry that would not load
    write_json_atomically(path, data)
