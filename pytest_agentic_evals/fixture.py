"""Loading a fixture: JSON syntax, the shipped JSON Schema, and the rules a schema cannot say.

Everything here is pure: no pytest, nothing is executed. ``load_fixture`` either returns a
``Fixture`` or raises ``FixtureError`` listing every problem at once, each with the file and
the JSON pointer of the offending value.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from .domains import RULE_KEYS, merge_case_rules
from .problems import InputError, Problem, explain_schema_error, pointer_for, shown_value
from .schemacheck import Check, compile_check

CASE_TYPES = ("positive", "negative", "adversarial")
SKILL_MINIMUM_TRIALS = 2
# A fixture that does not say how many trials gets one; the contract refuses that for skills.
DEFAULT_TRIALS = 1
# The directory a fixture conventionally lives in; its parent is then the skill's directory.
FIXTURES_DIRNAME = "fixtures"


class FixtureError(InputError):
    """A fixture that cannot be run: unreadable, malformed, or refused by the contract."""

    def __init__(self, problems: list[Problem], contract_pending: bool = False) -> None:
        headline = "fixture rejected"
        if contract_pending:
            headline += "; the anti-slush contract is checked once these are fixed"
        super().__init__(problems, headline=headline)


@dataclass(frozen=True)
class InputArtifact:
    path: str
    content: Any
    outside_workspace: bool = False

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return json.dumps(self.content, indent=2)


@dataclass(frozen=True)
class Case:
    index: int
    name: str
    type: str
    command: tuple[str, ...]
    expected: Mapping[str, Any]
    cwd: Path
    """Absolute working directory in the source tree (the fixture's directory or its ``cwd``)."""
    fixture_dir: Path = Path()
    """The folder of the fixture file, which ``{fixture_dir}`` names at run time."""
    required: bool = True
    real_world: bool = False
    evidence_class: str | None = None
    supports_claims: tuple[str, ...] = ()
    seams: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    timeout_seconds: float | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    workspace: str = "copy"
    must_exercise: tuple[str, ...] = ()
    blocked_markers: tuple[str, ...] = ()
    readback: bool = False
    input_artifacts: tuple[InputArtifact, ...] = ()
    description: str = ""

    @property
    def pointer(self) -> str:
        return pointer_for("cases", self.index)

    @property
    def judged_command(self) -> tuple[str, ...]:
        """The command as load-time judgements see it: ``{fixture_dir}`` becomes the path it
        names, relative to the working directory, so that where a checkout lives (say under a
        folder called ``fixtures``) cannot change a verdict."""
        relative = os.path.relpath(self.fixture_dir, self.cwd)
        return tuple(word.replace("{fixture_dir}", relative) for word in self.command)


@dataclass(frozen=True)
class Fixture:
    path: Path
    sha256: str
    data: Mapping[str, Any]
    cases: tuple[Case, ...]
    skill_dir: Path
    """The directory each private trial workspace copies: the fixture's directory, or its
    parent when the fixture sits in a ``fixtures/`` folder."""

    @property
    def skill(self) -> str:
        return str(self.data.get("skill") or self.skill_dir.name)

    @property
    def trials(self) -> int:
        return int(self.data.get("trials", DEFAULT_TRIALS))

    @property
    def eval_kind(self) -> str:
        return str(self.data.get("eval_kind", "skill"))

    @property
    def eval_tier(self) -> str:
        return str(self.data.get("eval_tier", "standard"))

    @property
    def exempt_from_contract(self) -> bool:
        return self.eval_kind in ("runner_selftest", "scaffold") and self.eval_tier != "compliance"

    @property
    def minimum_trials(self) -> int:
        return 1 if self.exempt_from_contract else SKILL_MINIMUM_TRIALS

    def case(self, name: str) -> Case:
        for case in self.cases:
            if case.name == name:
                return case
        raise KeyError(name)


@cache
def schema_text(name: str) -> str:
    return resources.files(__package__).joinpath(f"schemas/{name}.schema.json").read_text()


def fixture_schema(
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The fixture schema, with expectation kinds added by plugins allowed in ``expected``."""
    schema: dict[str, Any] = json.loads(schema_text("fixture"))
    for key, value_schema in (extra_expectations or {}).items():
        schema["$defs"]["expected"]["properties"][key] = copy.deepcopy(dict(value_schema))
    return schema


def _inline_refs(node: Any, definitions: Mapping[str, Any]) -> Any:
    """The schema with its local ``#/$defs/...`` references replaced by their targets.

    Resolving a reference is the most expensive step of validation, and a fixture of ten
    thousand cases would resolve tens of thousands of them; the schema has no recursion, so
    it can be expanded once instead.
    """
    if isinstance(node, dict):
        reference = node.get("$ref")
        if isinstance(reference, str) and reference.startswith("#/$defs/"):
            target = _inline_refs(definitions[reference.rsplit("/", 1)[1]], definitions)
            rest = {key: value for key, value in node.items() if key != "$ref"}
            return {**target, **_inline_refs(rest, definitions)}
        return {key: _inline_refs(value, definitions) for key, value in node.items()
                if key != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(item, definitions) for item in node]
    return node


def _compile(schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator(_inline_refs(schema, schema["$defs"]))


@cache
def _builtin_validator() -> Draft202012Validator:
    return _compile(fixture_schema())


def _validator(extra: Mapping[str, Mapping[str, Any]] | None) -> Draft202012Validator:
    return _compile(fixture_schema(extra)) if extra else _builtin_validator()


@cache
def _fast_check(extra_key: str) -> Check | None:
    """The compiled check of the fixture schema with these extra kinds (JSON, sorted keys)."""
    extra = json.loads(extra_key)
    return compile_check(fixture_schema(extra or None))


def skill_dir_for(fixture_path: Path) -> Path:
    parent = fixture_path.parent
    return parent.parent if parent.name == FIXTURES_DIRNAME else parent


def display_path(path: Path) -> str:
    """A path as a user would type it: relative to the working directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def load_fixture(
    path: str | os.PathLike[str],
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
) -> Fixture:
    """Read, validate and judge a fixture file; raise FixtureError with every problem."""
    fixture_path = Path(os.path.abspath(path))
    shown = display_path(fixture_path)
    try:
        raw = fixture_path.read_bytes()
    except OSError as exc:
        raise FixtureError([Problem(shown, "", f"cannot read fixture: {exc.strerror}")]) from None
    data = parse_json_document(raw, shown)
    return fixture_from_data(data, fixture_path, raw, extra_expectations)


def parse_json_document(raw: bytes, shown: str) -> Any:
    """Decode JSON strictly: UTF-8 only, no duplicate keys, no NaN; errors carry line/column."""
    problems: list[Problem] = []
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FixtureError([Problem(shown, "", f"not UTF-8 text (byte {exc.start})")]) from None

    def reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                problems.append(Problem(shown, "", f"duplicate key {key!r} in one JSON object"))
            seen[key] = value
        return seen

    def reject_constant(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    try:
        data = json.loads(text, object_pairs_hook=reject_duplicates, parse_constant=reject_constant)
    except json.JSONDecodeError as exc:
        message = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise FixtureError([Problem(shown, "", message)]) from None
    except (ValueError, RecursionError) as exc:
        raise FixtureError([Problem(shown, "", f"invalid JSON: {exc}")]) from None
    if problems:
        raise FixtureError(problems)
    return data


def fixture_from_data(
    data: Any,
    fixture_path: Path,
    raw: bytes | None = None,
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
) -> Fixture:
    """Validate already-decoded fixture data; raise FixtureError with every problem."""
    shown = display_path(fixture_path)
    if raw is None:
        raw = json.dumps(data, sort_keys=True).encode()
    problems, broken_cases = _schema_problems(data, shown, extra_expectations)
    if not isinstance(data, dict) or "cases" not in data or not isinstance(data["cases"], list):
        raise FixtureError(problems, contract_pending=True)

    skill_dir = skill_dir_for(fixture_path)
    defaults = _valid_defaults(data)
    cases: list[Case] = []
    for index, case_data in enumerate(data["cases"]):
        if index in broken_cases or not isinstance(case_data, dict):
            continue
        case, case_problems = _build_case(
            index, case_data, defaults, fixture_path, skill_dir, shown
        )
        problems += case_problems
        cases.append(case)
    problems += _duplicate_names(data["cases"], shown)

    fixture = Fixture(
        path=fixture_path,
        sha256=hashlib.sha256(raw).hexdigest(),
        data=data,
        cases=tuple(cases),
        skill_dir=skill_dir,
    )
    from .claims import claim_problems
    from .coverage import seam_problems

    problems += claim_problems(fixture, shown)
    problems += seam_problems(fixture, shown)
    if problems:
        # The contract judges the fixture as a whole, so it only runs on a structurally sound one.
        raise FixtureError(problems, contract_pending=True)
    from .contract import contract_violations

    problems = contract_violations(fixture, shown)
    if problems:
        raise FixtureError(problems)
    return fixture


def _valid_defaults(data: dict[str, Any]) -> dict[str, Any]:
    """Fixture-level defaults for cases, keeping only values the schema accepts.

    Cases are still checked when the top level has errors (every problem is reported at
    once), so a malformed default must not crash the checks of well-formed cases.
    """
    defaults: dict[str, Any] = {}
    if data.get("workspace") in ("copy", "inplace"):
        defaults["workspace"] = data["workspace"]
    if isinstance(data.get("cwd"), str) and data["cwd"]:
        defaults["cwd"] = data["cwd"]
    env = data.get("env")
    if isinstance(env, dict) and all(isinstance(v, str) for v in env.values()):
        defaults["env"] = env
    timeout = data.get("timeout_seconds")
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        defaults["timeout_seconds"] = timeout
    return defaults


def _schema_problems(
    data: Any, shown: str, extra: Mapping[str, Mapping[str, Any]] | None
) -> tuple[list[Problem], set[int]]:
    fast = _fast_check(json.dumps(extra or {}, sort_keys=True))
    if fast is not None and fast(data):
        # Most fixtures are valid: the compiled check clears them in a fraction of the time
        # jsonschema takes, which is then asked only to explain a faulty one.
        return [], set()
    validator = _validator(extra)
    problems: list[Problem] = []
    broken_cases: set[int] = set()
    try:
        errors = list(validator.iter_errors(data))
    except RecursionError:
        return [Problem(shown, "", "document is nested too deeply to validate")], set()
    for error in errors:
        path = list(error.absolute_path)
        if len(path) >= 2 and path[0] == "cases" and isinstance(path[1], int):
            broken_cases.add(path[1])
        problems.extend(Problem(shown, pointer, message) for pointer, message in _explain(error))
    return sorted(set(problems)), broken_cases


def _explain(error: ValidationError) -> list[tuple[str, str]]:
    """Schema errors in the fixture's own terms where a generic message would puzzle."""
    parts = list(error.absolute_path)
    pointer = pointer_for(*parts)
    if error.validator == "pattern" and parts and parts[-1] == "name":
        return [(pointer, f"{shown_value(error.instance)} cannot be used in a test id: use "
                          "letters, digits and _ . : + - only, starting with a letter or digit")]
    if error.validator == "pattern" and parts and parts[-1] == "json_pointer":
        return [(pointer, f"{shown_value(error.instance)} is not an RFC 6901 JSON pointer "
                          "(it starts with '/' and escapes '~' as ~0, '/' as ~1)")]
    if error.validator == "pattern" and len(parts) >= 2 and parts[-2] in RULE_KEYS:
        return [(pointer, f"{shown_value(error.instance)} is not a host name: use letters, "
                          "digits, hyphens and dots, optionally after '*.', or an IP address")]
    return explain_schema_error(error)


def _duplicate_names(cases: list[Any], shown: str) -> list[Problem]:
    first_seen: dict[str, int] = {}
    problems = []
    for index, case in enumerate(cases):
        name = case.get("name") if isinstance(case, dict) else None
        if not isinstance(name, str):
            continue
        if name in first_seen:
            message = f"duplicate case name {name!r} (also /cases/{first_seen[name]}/name)"
            problems.append(Problem(shown, pointer_for("cases", index, "name"), message))
        else:
            first_seen[name] = index
    return problems


def _build_case(
    index: int,
    case: dict[str, Any],
    defaults: dict[str, Any],
    fixture_path: Path,
    skill_dir: Path,
    shown: str,
) -> tuple[Case, list[Problem]]:
    problems: list[Problem] = []
    here = pointer_for("cases", index)
    expected, rule_problems = merge_case_rules(case, case["expected"])
    problems += [Problem(shown, here + pointer, message) for pointer, message in rule_problems]
    workspace = case.get("workspace", defaults.get("workspace", "copy"))
    cwd_text = case.get("cwd", defaults.get("cwd"))
    cwd = fixture_path.parent
    if cwd_text:
        cwd = Path(os.path.normpath(cwd / cwd_text))
    cwd_pointer = here + "/cwd" if "cwd" in case else "/cwd"
    if not cwd.is_dir():
        problems.append(Problem(shown, cwd_pointer, f"working directory does not exist: {cwd}"))
    elif workspace == "copy" and not _inside(cwd, skill_dir):
        problems.append(Problem(
            shown, cwd_pointer,
            f"working directory {cwd} is outside the skill directory {skill_dir}, which each "
            'trial copies; use "workspace": "inplace" to run in the real tree',
        ))

    env = {**defaults.get("env", {}), **case.get("env", {})}
    timeout = case.get("timeout_seconds", defaults.get("timeout_seconds"))
    must_exercise = tuple(case.get("must_exercise", ())) + tuple(expected.get("must_exercise", ()))
    blocked = tuple(case.get("blocked_when_stdout_contains", ())) + tuple(
        expected.get("blocked_when_stdout_contains", ())
    )
    inputs = tuple(
        InputArtifact(a["path"], a["content"], a.get("outside_workspace", False))
        for a in case.get("artifacts", ())
    )

    joined = " ".join(case["command"])
    for needle in must_exercise:
        if needle not in joined:
            problems.append(Problem(
                shown, here + "/command",
                f"must_exercise {needle!r} does not appear in the command ({joined!r}): a "
                "wrapper must not stand in for the downstream contract it claims to exercise",
            ))
    for position, artifact in enumerate(inputs):
        problems += _containment(
            artifact.path, artifact.outside_workspace, cwd, skill_dir,
            shown, f"{here}/artifacts/{position}/path",
        )
    for position, assertion in enumerate(expected.get("artifacts", ())):
        problems += _artifact_assertion_problems(
            assertion, cwd, skill_dir, shown, f"{here}/expected/artifacts/{position}"
        )
    for stream in ("stdout_matches", "stderr_matches"):
        for position, pattern in enumerate(expected.get(stream, ())):
            problems += _regex_problems(pattern, shown, f"{here}/expected/{stream}/{position}")

    built = Case(
        index=index,
        name=case["name"],
        type=case["type"],
        command=tuple(case["command"]),
        expected=expected,
        cwd=cwd,
        fixture_dir=fixture_path.parent,
        required=case.get("required", True),
        real_world=case.get("real_world", False),
        evidence_class=case.get("evidence_class"),
        supports_claims=tuple(case.get("supports_claims", ())),
        seams=tuple(case.get("seams", ())),
        tags=tuple(case.get("tags", ())),
        timeout_seconds=float(timeout) if timeout is not None else None,
        env=env,
        workspace=workspace,
        must_exercise=must_exercise,
        blocked_markers=blocked,
        readback=case.get("readback", False),
        input_artifacts=inputs,
        description=case.get("description", ""),
    )
    return built, problems


def _artifact_assertion_problems(
    assertion: dict[str, Any], cwd: Path, skill_dir: Path, shown: str, here: str
) -> list[Problem]:
    problems = _containment(
        assertion["path"], assertion.get("outside_workspace", False), cwd, skill_dir,
        shown, here + "/path",
    )
    wants_present = assertion.get("exists") is True
    wants_absent = (assertion.get("not_exists") is True or assertion.get("absent") is True
                    or assertion.get("exists") is False)
    if wants_present and wants_absent:
        problems.append(Problem(shown, here, "exists and not_exists exclude each other"))
    if wants_absent and assertion.get("optional"):
        problems.append(Problem(shown, here, "optional makes no sense for a file that must be "
                                "absent (not_exists, absent or exists: false)"))
    other = assertion.get("equals_artifact")
    if isinstance(other, dict):
        problems += _containment(
            other["path"], assertion.get("outside_workspace", False), cwd, skill_dir,
            shown, here + "/equals_artifact/path",
        )
    if "matches_regex" in assertion:
        problems += _regex_problems(assertion["matches_regex"], shown, here + "/matches_regex")
    return problems


def _regex_problems(pattern: str, shown: str, pointer: str) -> list[Problem]:
    try:
        re.compile(pattern)
    except re.error as exc:
        return [Problem(shown, pointer, f"invalid regular expression {pattern!r}: {exc}")]
    return []


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _containment(
    relative: str, allowed_outside: bool, cwd: Path, skill_dir: Path, shown: str, pointer: str
) -> list[Problem]:
    """An artifact path must stay in the trial's workspace, symlinks included."""
    if allowed_outside:
        return []
    if os.path.isabs(relative):
        return [Problem(shown, pointer, f"absolute artifact path {relative!r} is outside the "
                        'workspace (set "outside_workspace": true if that is intended)')]
    target = Path(os.path.normpath(cwd / relative))
    if not _inside(target, skill_dir):
        return [Problem(shown, pointer, f"artifact path {relative!r} resolves outside the "
                        f"workspace {skill_dir} (set \"outside_workspace\": true if intended)")]
    real = Path(os.path.realpath(target))
    if not _inside(real, Path(os.path.realpath(skill_dir))):
        return [Problem(shown, pointer, f"artifact path {relative!r} leads outside the workspace "
                        f"through a symlink (to {real})")]
    return []
