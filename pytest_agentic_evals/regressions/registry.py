"""Retained regressions: the registry, loaded and checked, and written back.

A live failure becomes permanent evidence in ``fixtures/regressions.json``
(``agentic_evals.regressions.v1``). Each record names a retained guard case and a proof command
that reproduces the broken behaviour and shows that the guard fails against it. This module
reads a registry into ``Registry`` (every problem at once, as ``RegistryError``), loads the
retained case a record names, and writes ``last_proven`` back. What is judged of a registry
without running anything is in ``audit``; running its proofs is ``verify``.

Pure core: no pytest import. The CLI and the pytest items share it.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentic_evals.jsonio import display_path, read_json, write_json_atomically
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.contract import own_code_reached
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.loading.oschars import system_string_problems
from pytest_agentic_evals.model import FIXTURES_DIRNAME, Fixture, skill_dir_for
from pytest_agentic_evals.problems import (
    InputError,
    Problem,
    explain_schema_error,
    pointer_for,
    shown_value,
)
from pytest_agentic_evals.regressions import earlier
from pytest_agentic_evals.schemas import schema_text
from pytest_agentic_evals.shell import CommandParseError
from pytest_agentic_evals.skills import folders

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

REGISTRY_SCHEMA = "agentic_evals.regressions.v1"
REGISTRY_FILENAME = "regressions.json"
DEFAULT_RETAINED_FIXTURE = "agentic_eval.json"
DEFAULT_FRESHNESS_DAYS = 30

ACTIVE, EXEMPT, RETIRED = "ACTIVE", "EXEMPT", "RETIRED"

# Exit statuses that mean the proof never ran what it names: the shell or exec could not find
# or execute the program. They are failures of the proof, never of the guard.
NOT_RUN_EXIT_CODES = {126: "not executable", 127: "command not found"}
# A signature must identify the bug; these would match almost any failure.
GENERIC_SIGNATURES = frozenset({
    "error", "errors", "fail", "failed", "failure", "fails", "exception", "traceback", "panic",
    "fatal", "abort", "aborted", "assert", "assertionerror", "false", "no", "not", "exit",
    "warning", "killed", "timeout", "timed out", "not found",
})
MIN_SIGNATURE_CHARACTERS = 4


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
    return datetime.now(UTC).date()


def parse_date(text: str) -> date | None:
    """A calendar date from an ISO date or date-time, or None when it is not a real one."""
    try:
        if "T" not in text:
            return date.fromisoformat(text)
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.date()


# -- loading -------------------------------------------------------------------------------


def is_registry(path: Path) -> bool:
    return path.name == REGISTRY_FILENAME


def registry_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(schema_text("regressions"))
    return schema


@cache
def _validator() -> Draft202012Validator:
    from jsonschema import Draft202012Validator  # loaded when a registry is read, not before

    return Draft202012Validator(registry_schema())


def find_registry(target: str | os.PathLike[str]) -> Path | None:
    """The registry of a skill directory (``fixtures/regressions.json``, or beside it), or the
    file itself when ``target`` names one."""
    path = Path(os.path.abspath(target))
    if path.exists() and not path.is_dir():  # a file, or a pipe or device it is read from
        return path
    for candidate in (path / FIXTURES_DIRNAME / REGISTRY_FILENAME, path / REGISTRY_FILENAME):
        if candidate.is_file():
            return candidate
    return None


def find_registries(root: str | os.PathLike[str]) -> list[Path]:
    """Every ``regressions.json`` under ``root``, skipping VCS, dependency and cache folders
    as every walk of a skill tree does (``skills.folders``)."""
    return sorted(folder.path / REGISTRY_FILENAME
                  for folder in folders(Path(os.path.abspath(root)))
                  if REGISTRY_FILENAME in folder.files)


def load_registry(path: str | os.PathLike[str]) -> Registry:
    """Read and validate a registry; raise RegistryError listing every problem at once."""
    registry_path = Path(os.path.abspath(path))
    try:
        data, _ = read_json(registry_path, "registry")
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
    else:
        skill_dir = skill_dir_for(registry_path)
        named = registry_path.parent / fixture_text
        if not (_within(os.path.normpath(named), skill_dir)
                and _within(os.path.realpath(named), Path(os.path.realpath(skill_dir)))):
            problems.append(Problem(shown, f"{here}/retained_fixture", (
                f"retained_fixture resolves outside the skill directory {skill_dir}: a "
                "regression is guarded by a case of its own skill")))
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
) -> tuple[Proof | None, list[Problem]]:
    """The proof (None without a ``proof_command``: nothing to run, the record is named
    unverifiable), and what is wrong with its other fields, which are audited all the same;
    ``base`` is the folder its ``cwd`` is relative to."""
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
    if "proof_command" not in record:
        return None, problems
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


# -- the retained case a record names ------------------------------------------------------


def retained_case_problems(
    regression: Regression, extra_expectations: Mapping[str, Mapping[str, Any]] | None = None
) -> tuple[list[str], bool, Fixture | None]:
    """Why the retained case cannot guard (empty when it can), whether that is an input error
    (the retained fixture is unreadable or rejected), and the loaded fixture."""
    shown = display_path(regression.retained_fixture)
    if not regression.retained_fixture.exists():
        return [f"retained fixture {shown} not found"], False, None
    if not regression.retained_fixture.is_file():
        return [f"retained fixture {shown} is not a regular file"], False, None
    try:
        # A guard is judged by its verification (it must fail before the fix), not by the
        # contract: the retained fixture may be one written for that proof alone.
        fixture = load_fixture(regression.retained_fixture, extra_expectations,
                               accept_exemptions=True)
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
    case = fixture.cases[names.index(regression.retained_case)]
    try:
        entrypoint, explanation = own_code_reached(case)
    except CommandParseError as exc:
        entrypoint, explanation = None, f"its command cannot be analysed: {exc}"
    if entrypoint is None:
        return ([f"retained case {regression.retained_case!r} reaches no code of the skill "
                 f"({explanation}): a guard that never runs the skill cannot show it fixed"],
                False, fixture)
    return [], False, fixture


# -- write-back ----------------------------------------------------------------------------


def record_last_proven(path: Path, regression_ids: Iterable[str], day: date) -> None:
    """Write ``last_proven`` for these regressions back into the registry, atomically.

    The file is read again rather than reusing what verification loaded: someone may have
    edited it during a long verification, and their edit must not be lost.
    """
    wanted = set(regression_ids)
    try:
        data, _ = read_json(path, "registry")
    except InputError as exc:
        raise RegistryError(exc.problems) from None
    for record in data.get("regressions", ()) if isinstance(data, dict) else ():
        if isinstance(record, dict) and record.get("regression_id") in wanted:
            record["last_proven"] = day.isoformat()
    registry_from_data(data, path)  # never write a registry that would not load
    write_json_atomically(path, data)


def _within(path: str, root: Path) -> bool:
    return Path(path) == root or root in Path(path).parents
