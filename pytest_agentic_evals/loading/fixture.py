"""Building a fixture from decoded JSON: the shipped JSON Schema, then each case.

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
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentic_evals.expectations.budget import limit_problems
from pytest_agentic_evals.expectations.domains import RULE_KEYS, merge_case_rules
from pytest_agentic_evals.expectations.trajectory.matching import matcher_key_problem
from pytest_agentic_evals.jsonio import display_path
from pytest_agentic_evals.loading.inputs import build_inputs, merged
from pytest_agentic_evals.loading.oschars import system_string_problems
from pytest_agentic_evals.model import NETWORK_MODES, SANDBOX_MODES, Case, Fixture, skill_dir_for
from pytest_agentic_evals.problems import (
    InputError,
    Problem,
    explain_schema_error,
    pointer_for,
    shown_value,
)
from pytest_agentic_evals.schemas import schema_text
from pytest_agentic_evals.schemas.compiled import Check, compile_check
from pytest_agentic_evals.shell import declared_entrypoint_problem

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError


class FixtureError(InputError):
    """A fixture that cannot be run: unreadable, malformed, or refused by the contract."""

    def __init__(self, problems: list[Problem], contract_pending: bool = False) -> None:
        headline = "fixture rejected"
        if contract_pending:
            headline += "; the anti-slush contract is checked once these are fixed"
        super().__init__(problems, headline=headline)


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
    # jsonschema (about 0.1 s to import) is loaded only to explain a faulty fixture: a valid
    # one is cleared by the compiled check, in every worker of a run.
    from jsonschema import Draft202012Validator

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


def build_fixture(
    data: Any,
    fixture_path: Path,
    raw: bytes | None = None,
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[Fixture, list[Problem]]:
    """The fixture built from decoded data, with the problems of its structure (the schema,
    each case, duplicate names); raises FixtureError when there are no cases to build."""
    shown = display_path(fixture_path)
    if raw is None:
        raw = json.dumps(data, sort_keys=True).encode()
    problems, broken_cases = _schema_problems(data, shown, extra_expectations)
    system_problems = system_string_problems(data, shown)
    if system_problems or not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        # Paths with a NUL byte cannot even be looked at: nothing is built from them.
        raise FixtureError(sorted(set(problems + system_problems)), contract_pending=True)

    skill_dir = skill_dir_for(fixture_path)
    defaults = _valid_defaults(data)
    shared, input_problems = build_inputs(data.get("artifacts"), "/artifacts",
                                          fixture_path, skill_dir, shown)
    problems += input_problems
    defaults["artifacts"] = shared
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
    problems += _reserved_tags(data["cases"], shown)
    problems += _entrypoint_problems(data.get("entrypoints"), shown)
    # Fixture-level artifacts are checked with every case: say each problem once.
    problems = list(dict.fromkeys(problems))

    fixture = Fixture(
        path=fixture_path,
        sha256=hashlib.sha256(raw).hexdigest(),
        data=data,
        cases=tuple(cases),
        skill_dir=skill_dir,
    )
    return fixture, problems


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
    entrypoints = data.get("entrypoints")
    if isinstance(entrypoints, list):
        defaults["entrypoints"] = tuple(e for e in entrypoints if isinstance(e, str) and e)
    if data.get("sandbox") in SANDBOX_MODES:
        defaults["sandbox"] = data["sandbox"]
    if data.get("network") in NETWORK_MODES:
        defaults["network"] = data["network"]
    paths = data.get("writable_paths")
    if isinstance(paths, list) and all(isinstance(p, str) and p for p in paths):
        defaults["writable_paths"] = paths
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
        return [(pointer, _name_problem(error.instance))]
    if error.validator == "pattern" and parts and parts[-1] == "json_pointer":
        return [(pointer, f"{shown_value(error.instance)} is not an RFC 6901 JSON pointer "
                          "(it starts with '/' and escapes '~' as ~0, '/' as ~1)")]
    if error.validator == "const" and parts == ["version"]:
        return [(pointer, f"version {shown_value(error.instance)} is not a fixture version this "
                          'tool reads: write "version": 2 (see the fixture reference)')]
    if error.validator == "pattern" and len(parts) >= 2 and parts[-2] in RULE_KEYS:
        return [(pointer, f"{shown_value(error.instance)} is not a host name: use letters, "
                          "digits, hyphens and dots, optionally after '*.', or an IP address")]
    return explain_schema_error(error)


def _entrypoint_problems(entrypoints: Any, shown: str) -> list[Problem]:
    """Each declared entrypoint must be a program of the skill on PATH, found at load (a
    value of the wrong type is the schema's to report)."""
    problems = []
    for index, name in enumerate(entrypoints if isinstance(entrypoints, list) else ()):
        if not isinstance(name, str) or not name:
            continue
        reason = declared_entrypoint_problem(name)
        if reason is not None:
            problems.append(Problem(shown, pointer_for("entrypoints", index),
                                    f"entrypoint {reason}"))
    return problems


def _name_problem(name: Any) -> str:
    """Why a case name cannot be used: it becomes the node id <fixture>::<name>[trial-N],
    which pytest splits at '::' and '[', and the report is keyed by the parts."""
    shown = shown_value(name)
    if isinstance(name, str) and "::" in name:
        return (f"{shown} contains '::', which separates the parts of a pytest node id "
                "(<fixture>::<name>[trial-N]): its trials would run under another name and be "
                "lost from the report; use a single ':' or '-'")
    if isinstance(name, str) and ("[" in name or "]" in name):
        return (f"{shown} contains '[' or ']', which pytest reads as the parameters of a node "
                "id (<fixture>::<name>[trial-N]); use letters, digits and _ . : + - only")
    return (f"{shown} cannot be used in a test id: use letters, digits and _ . : + - only "
            "(never '::'), starting with a letter or digit")


# Markers that change how pytest or a common plugin runs a test. A case's tags become pytest
# markers (for -m), so a tag with one of these names would skip, xfail, rerun, repeat or time
# out the case's trials instead of labelling them.
RESERVED_TAGS = frozenset({
    "skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "tryfirst",
    "trylast", "timeout", "flaky", "repeat", "order", "run", "dependency", "no_cover",
    "forked", "asyncio", "anyio", "django_db", "randomly_dont_reorganize", "xdist_group",
    "regression",
})


def _reserved_tags(cases: list[Any], shown: str) -> list[Problem]:
    problems = []
    for index, case in enumerate(cases):
        tags = case.get("tags") if isinstance(case, dict) else None
        for position, tag in enumerate(tags if isinstance(tags, list) else ()):
            if isinstance(tag, str) and tag.lower() in RESERVED_TAGS:
                problems.append(Problem(
                    shown, pointer_for("cases", index, "tags", position),
                    f"tag {tag!r} is the name of a pytest marker that changes how a test runs "
                    "(skip, xfail, rerun, repeat, timeout...); tags become markers, so choose "
                    "another name"))
    return problems


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
    """One case, built from its JSON and the fixture's defaults, and what is wrong with it.
    Over 60 lines only by the Case's thirty fields, one per line: split, they would no longer
    read as one record. Every check is a function of its own."""
    here = pointer_for("cases", index)
    expected, rule_problems = merge_case_rules(case, case["expected"])
    expected = _budget_reads_the_trajectory(expected)
    problems = [Problem(shown, here + pointer, message) for pointer, message in rule_problems]
    workspace = case.get("workspace", defaults.get("workspace", "copy"))
    cwd = fixture_path.parent
    if cwd_text := case.get("cwd", defaults.get("cwd")):
        cwd = Path(os.path.normpath(cwd / cwd_text))
    problems += _cwd_problems(cwd, workspace, skill_dir, shown,
                              here + "/cwd" if "cwd" in case else "/cwd")
    own, input_problems = build_inputs(case.get("artifacts"), here + "/artifacts",
                                       fixture_path, skill_dir, shown)
    problems += input_problems
    inputs = merged(defaults.get("artifacts", ()), own)
    problems += _agent_run_problems(expected, shown, here + "/expected")
    writable, writable_problems = _writable_paths(case, defaults, cwd, skill_dir, workspace,
                                                  shown, here)
    problems += writable_problems
    must_exercise = _case_and_expected(case, expected, "must_exercise")
    problems += _must_exercise_problems(case["command"], must_exercise, shown, here)
    for pointer, artifact in inputs:
        problems += _containment(
            artifact.path, artifact.outside_workspace, cwd, skill_dir, shown, pointer + "/path",
        )
        if os.path.realpath(cwd / artifact.path) == os.path.realpath(fixture_path):
            problems.append(Problem(shown, pointer + "/path", (
                f"input file {artifact.path!r} is the fixture itself: in place it would replace "
                "the fixture, and a trial reads its fixture as an empty file")))
    problems += _expected_problems(expected, cwd, skill_dir, shown, here)
    timeout = case.get("timeout_seconds", defaults.get("timeout_seconds"))
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
        env={**defaults.get("env", {}), **case.get("env", {})},
        workspace=workspace,
        must_exercise=must_exercise,
        blocked_markers=_case_and_expected(case, expected, "blocked_when_stdout_contains"),
        infra_markers=tuple(case.get("infra_blocked_when", ())),
        readback=case.get("readback", False),
        input_artifacts=tuple(artifact for _, artifact in inputs),
        description=case.get("description", ""),
        source=case,
        skill_dir=skill_dir,
        entrypoints=defaults.get("entrypoints", ()),
        sandbox=case.get("sandbox", defaults.get("sandbox")),
        sandbox_source="the case" if "sandbox" in case else "the fixture",
        writable_paths=writable,
        network=case.get("network", defaults.get("network", "proxy")),
    )
    return built, problems


def _case_and_expected(
    case: Mapping[str, Any], expected: Mapping[str, Any], key: str
) -> tuple[str, ...]:
    """A list a case may give beside its expectations or inside them: the case's first."""
    return tuple(case.get(key, ())) + tuple(expected.get(key, ()))


def _cwd_problems(
    cwd: Path, workspace: str, skill_dir: Path, shown: str, pointer: str
) -> list[Problem]:
    if not cwd.is_dir():
        return [Problem(shown, pointer, f"working directory does not exist: {cwd}")]
    if workspace == "copy" and not _inside(cwd, skill_dir):
        return [Problem(
            shown, pointer,
            f"working directory {cwd} is outside the skill directory {skill_dir}, which each "
            'trial copies; use "workspace": "inplace" to run in the real tree',
        )]
    return []


def _must_exercise_problems(
    command: list[str], must_exercise: tuple[str, ...], shown: str, here: str
) -> list[Problem]:
    joined = " ".join(command)
    return [Problem(
        shown, here + "/command",
        f"must_exercise {needle!r} does not appear in the command ({joined!r}): a "
        "wrapper must not stand in for the downstream contract it claims to exercise",
    ) for needle in must_exercise if needle not in joined]


def _expected_problems(
    expected: Mapping[str, Any], cwd: Path, skill_dir: Path, shown: str, here: str
) -> list[Problem]:
    """What the schema cannot say about a case's artifact assertions and patterns."""
    problems: list[Problem] = []
    for position, assertion in enumerate(expected.get("artifacts", ())):
        problems += _artifact_assertion_problems(
            assertion, cwd, skill_dir, shown, f"{here}/expected/artifacts/{position}"
        )
    for stream in ("stdout_matches", "stderr_matches"):
        for position, pattern in enumerate(expected.get(stream, ())):
            problems += _regex_problems(pattern, shown, f"{here}/expected/{stream}/{position}")
    return problems


def _budget_reads_the_trajectory(expected: Mapping[str, Any]) -> Mapping[str, Any]:
    """A budget without a ``source`` reads the transcript the trajectory check reads."""
    budget, trajectory = expected.get("budget"), expected.get("trajectory")
    if not isinstance(budget, dict) or "source" in budget or not isinstance(trajectory, dict) \
            or "source" not in trajectory:
        return expected
    return {**expected, "budget": {**budget, "source": trajectory["source"]}}


def _matcher_key_problems(expected: Mapping[str, Any], shown: str, here: str) -> list[Problem]:
    trajectory = expected.get("trajectory")
    if not isinstance(trajectory, dict):
        return []
    matchers = [(f"{here}/trajectory/{group}/{i}", m)
                for group in ("required_events", "forbidden_events")
                for i, m in enumerate(trajectory.get(group) or ())]
    matchers += [(f"{here}/trajectory/event_counts/{i}/event", c.get("event"))
                 for i, c in enumerate(trajectory.get("event_counts") or ())
                 if isinstance(c, dict)]
    return [Problem(shown, pointer, message)
            for pointer, matcher in matchers if isinstance(matcher, dict)
            for key in matcher if (message := matcher_key_problem(key)) is not None]


def _agent_run_problems(expected: Mapping[str, Any], shown: str, here: str) -> list[Problem]:
    """Matcher keys that name no field of an event, count matchers that contradict themselves,
    and a budget that bounds nothing."""
    problems = _matcher_key_problems(expected, shown, here)
    trajectory = expected.get("trajectory")
    counts = trajectory.get("event_counts") if isinstance(trajectory, dict) else None
    for position, count in enumerate(counts if isinstance(counts, list) else ()):
        where = f"{here}/trajectory/event_counts/{position}"
        if not isinstance(count, dict):
            continue
        bounds = [key for key in ("exactly", "at_least", "at_most") if key in count]
        if not bounds:
            problems.append(Problem(shown, where, "a count needs exactly, at_least or at_most"))
        elif "exactly" in count and len(bounds) > 1:
            problems.append(Problem(shown, where, "exactly excludes at_least and at_most"))
        elif count.get("at_least", 0) > count.get("at_most", count.get("at_least", 0)):
            problems.append(Problem(shown, where, f"at_least {count['at_least']} is more than "
                                    f"at_most {count['at_most']}: no run can keep both"))
    budget = expected.get("budget")
    if isinstance(budget, dict):
        problems += [Problem(shown, f"{here}/budget{pointer}", message)
                     for pointer, message in limit_problems(budget)]
    return problems


def _writable_paths(
    case: dict[str, Any], defaults: dict[str, Any], cwd: Path, skill_dir: Path, workspace: str,
    shown: str, here: str,
) -> tuple[tuple[Path, ...], list[Problem]]:
    """The declared writable paths of a case (the fixture's, then its own), made absolute
    against its working directory, and the problems of those it declares itself."""
    paths: list[Path] = []
    problems: list[Problem] = []
    declared = [("/writable_paths", i, p) for i, p in enumerate(defaults.get("writable_paths", ()))]
    declared += [(here + "/writable_paths", i, p)
                 for i, p in enumerate(case.get("writable_paths", ()))]
    for where, position, text in declared:
        pointer = f"{where}/{position}"
        if text.startswith("~"):
            problems.append(Problem(shown, pointer, f"writable path {text!r}: '~' is not "
                                    "expanded (a trial's HOME is private); write the path out"))
            continue
        path = Path(os.path.normpath(cwd / text))
        if workspace == "copy" and _inside(path, skill_dir):
            problems.append(Problem(
                shown, pointer, f"writable path {text!r} is inside the skill directory, which "
                "each trial copies: its copy is writable already, and the original must stay "
                "read-only"))
            continue
        if path not in paths:
            paths.append(path)
    return tuple(paths), problems


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


# Texts no two of which share a character, a line or a length: a pattern found in every one
# of them (".*", "^", "x*", "a|") is found in any text at all.
_UNLIKE_TEXTS = ("", "\n", "x", "0 9", "\t\r\x00\x7f", "\u00e9\u2603\U0001f600", "}{][)(")


def _regex_problems(pattern: str, shown: str, pointer: str) -> list[Problem]:
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return [Problem(shown, pointer, f"invalid regular expression {pattern!r}: {exc}")]
    if all(compiled.search(text) for text in _UNLIKE_TEXTS):
        return [Problem(shown, pointer, f"regular expression {pattern!r} is found in any text, "
                        "even an empty one: a check that cannot fail")]
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
