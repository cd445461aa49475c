"""Checking a finished trial against its case's ``expected`` object.

Every expectation is checked and every failure is reported, not only the first. Built-in
kinds are ``ExpectationKind`` objects like those plugins add through the
``pytest_agentic_evals_expectation_kinds`` hook.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonpointer

import pytest_agentic_evals.expectations.output as output
from pytest_agentic_evals.expectations.budget import BUDGET_NOT_TESTED, check_budget
from pytest_agentic_evals.expectations.domains import check_allowed, check_disallowed
from pytest_agentic_evals.expectations.observation import STREAMS, ArtifactError, Observation
from pytest_agentic_evals.expectations.trajectory import NOT_TESTED_PREFIXES, check_trajectory
from pytest_agentic_evals.jsonio import too_long_number
from pytest_agentic_evals.jsonvalues import json_equal, json_type
from pytest_agentic_evals.model import requires_absence
from pytest_agentic_evals.redaction import escape_surrogates

# Artifacts are parsed whole; a bound keeps a runaway output file from exhausting memory.
MAX_PARSED_ARTIFACT_BYTES = 256 * 1024 * 1024
# stdout_equals compares whole streams; a diff of more than this much would not be read.
DIFF_BYTES = 1024 * 1024
DIFF_LINES = 40
# A failure starting with one of these is a check that could not be carried out (no
# trajectory, no figure for a budget): the trial is then BLOCKED, never PASS.
UNTESTED_PREFIXES = (*NOT_TESTED_PREFIXES, BUDGET_NOT_TESTED + ":")

Check = Callable[[Any, Observation], list[str]]


@dataclass(frozen=True)
class ExpectationKind:
    """One key of ``expected``: the schema of its value and how to check a trial against it."""

    key: str
    check: Check
    schema: Mapping[str, Any] | None = None
    """JSON Schema of the value; None for built-in kinds, declared in the shipped schema."""


def stream_needles(
    expected: Mapping[str, Any], blocked_markers: Sequence[str]
) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    needles = {}
    for stream in STREAMS:
        subs = set(expected.get(f"{stream}_contains", ())) | set(
            expected.get(f"{stream}_excludes", ())
        )
        subs |= set(blocked_markers)  # a blocked marker counts in either stream
        needles[stream] = (frozenset(subs), frozenset(expected.get(f"{stream}_matches", ())))
    return needles


def check_expectations(
    expected: Mapping[str, Any], observation: Observation, kinds: Mapping[str, ExpectationKind]
) -> list[str]:
    """One message per failed expectation, in the order the fixture lists them."""
    failures: list[str] = []
    for key, value in expected.items():
        kind = kinds.get(key)
        if kind is None:  # the loader refuses unknown keys; reaching here is a plugin mismatch
            failures.append(f"{key}: no expectation kind is registered for this key")
            continue
        # A message quoting a value with half a UTF-16 pair (JSON's "\ud800") shows it escaped.
        failures += map(escape_surrogates, kind.check(value, observation))
    return failures


def _check_exit_code(value: int, observation: Observation) -> list[str]:
    if observation.exit_code == value:
        return []
    seen = observation.exit_code
    if seen is not None and seen < 0:
        return [f"exit_code: expected {value}, the command was killed by signal {-seen}"]
    return [f"exit_code: expected {value}, got {seen}"]


def _stream_checker(stream: str, mode: str) -> Check:
    def check(values: list[str], observation: Observation) -> list[str]:
        failures = []
        for value in values:
            if mode == "contains" and not observation.contains(stream, value):
                failures.append(f"{stream}_contains: {value!r} not found in {stream}")
            elif mode == "excludes" and observation.contains(stream, value):
                failures.append(f"{stream}_excludes: {value!r} found in {stream}")
            elif mode == "matches" and not observation.matches(stream, value):
                if observation.too_slow(stream, value):
                    failures.append(f"{stream}_matches: /{value}/ was stopped after "
                                    f"{output.PATTERN_CPU_SECONDS:g} s of searching {stream}: "
                                    f"{UNDECIDED}")
                else:
                    failures.append(f"{stream}_matches: no match for /{value}/ in {stream}")
        return failures

    return check


def _stream_equals(stream: str) -> Check:
    def check(wanted: str, observation: Observation) -> list[str]:
        path = observation.stream_path(stream)
        expected = wanted.encode("utf-8")
        size = path.stat().st_size if path.is_file() else 0
        if size == len(expected):
            with path.open("rb") as handle:
                if handle.read() == expected:
                    return []
        with path.open("rb") as handle:
            seen = handle.read(DIFF_BYTES).decode("utf-8", errors="replace")
        return [f"{stream}_equals: {stream} differs from the expected text"
                + text_diff(wanted, seen, stream, size)]

    return check


def text_diff(expected: str, seen: str, label: str, size: int) -> str:
    """A unified diff of expected and seen text, bounded, with the hint a person needs."""
    if seen.rstrip("\n") == expected.rstrip("\n"):
        ends = "ends" if seen.endswith("\n") else "does not end"
        return f" only at its end: {label} {ends} with a newline, and the text is compared exactly"
    lines = list(difflib.unified_diff(expected.splitlines(keepends=True),
                                      seen.splitlines(keepends=True), "expected", label))
    shown = [line.rstrip("\n") for line in lines[:DIFF_LINES]]
    if len(lines) > DIFF_LINES:
        shown.append(f"... ({len(lines) - DIFF_LINES} more diff lines)")
    if size > DIFF_BYTES:
        shown.append(f"(the diff covers the first {DIFF_BYTES} of {size} bytes)")
    # Indented under the message, which failure reports list as "  - <message>".
    return ":\n" + "\n".join("    " + line for line in shown)


def _checked_elsewhere(value: Any, observation: Observation) -> list[str]:
    """``must_exercise`` is judged at load; blocked markers decide the outcome, not a check."""
    return []


def _check_artifacts(assertions: list[dict[str, Any]], observation: Observation) -> list[str]:
    failures = []
    for position, assertion in enumerate(assertions):
        label = f"artifacts[{position}] {assertion['path']}"
        if "json_pointer" in assertion:
            label += f" {assertion['json_pointer'] or '(whole document)'}"
        try:
            problems = check_artifact(assertion, observation)
            failures += [f"{label}: {problem}" for problem in problems]
        except ArtifactError as exc:
            failures.append(f"{label}: {exc}")
    return failures


_NEEDS_JSON = ("is_true", "is_type", "min_length")
# The checks that read the file's text when it is not read as JSON; the others (min_bytes,
# sha256, exists, ...) look at the file as a whole, whatever its size.
_READS_TEXT = ("equals", "equals_artifact", "excludes", "matches_regex")


def check_artifact(assertion: Mapping[str, Any], observation: Observation) -> list[str]:
    """Failures of one artifact assertion; raises ArtifactError when it cannot be evaluated."""
    outside = bool(assertion.get("outside_workspace"))
    path = observation.resolve(assertion["path"], outside)
    must_be_absent = requires_absence(assertion)
    if not path.exists():
        if must_be_absent or assertion.get("optional"):
            return []
        return ["file not found after the run"]
    if must_be_absent:
        return ["file exists but must not"]
    if not path.is_file():
        return ["is not a regular file"]
    if outside and not _written_during_trial(path, observation):
        return ["file was not written during this trial (left from before it started)"]

    failures = _file_checks(assertion, path)
    needs_json = "json_pointer" in assertion or any(k in assertion for k in _NEEDS_JSON)
    if "equals" in assertion and not isinstance(assertion["equals"], str):
        needs_json = True
    value: Any = None
    if needs_json:
        value = _json_value(path, assertion.get("json_pointer", ""))
    elif any(key in assertion for key in _READS_TEXT):
        value = _read_text(path)

    if "equals" in assertion and not (
        json_equal(value, assertion["equals"])
        or (not needs_json and json_equal(_json_or_none(path), assertion["equals"]))
    ):
        failures.append(f"equals: expected {_show(assertion['equals'])}, got {_show(value)}"
                        + _newline_hint(value, assertion["equals"]))
    if "equals_artifact" in assertion:
        failures += _equals_artifact(assertion["equals_artifact"], path, value, needs_json,
                                     outside, observation)
    failures += _value_checks(assertion, value, needs_json)
    return failures


def _file_checks(assertion: Mapping[str, Any], path: Path) -> list[str]:
    """Checks of the file as a whole: size, hash, emptiness, lines."""
    failures: list[str] = []
    size = path.stat().st_size
    if "min_bytes" in assertion and size < assertion["min_bytes"]:
        failures.append(f"min_bytes: expected at least {assertion['min_bytes']}, file has {size}")
    if "sha256" in assertion and output.first_hole(path) is not None:
        failures.append("sha256: the file was extended without being written (it has holes): "
                        "not hashed")
    elif "sha256" in assertion:
        digest = file_sha256(path)
        # Bare hex, or "sha256:<hex>" as the earlier tool wrote it.
        wanted = assertion["sha256"].lower().removeprefix("sha256:")
        if digest != wanted:
            failures.append(f"sha256: expected {wanted}, got {digest}")
    if "content_is_empty" in assertion:
        empty = _read_text(path).strip() == ""
        if empty != assertion["content_is_empty"]:
            failures.append("content_is_empty: file is " + ("empty" if empty else "not empty"))
    if "lines_contain" in assertion:
        lines = _read_text(path).splitlines()
        for wanted in assertion["lines_contain"]:
            if not any(wanted in line for line in lines):
                failures.append(f"lines_contain: no line contains {wanted!r}")
    if "lines_exclude" in assertion:
        lines = _read_text(path).splitlines()
        for unwanted in assertion["lines_exclude"]:
            hits = [number for number, line in enumerate(lines, 1) if unwanted in line]
            if hits:
                failures.append(f"lines_exclude: {unwanted!r} found on line "
                                + ", ".join(map(str, hits[:5])) + (" ..." if len(hits) > 5 else ""))

    return failures


def _equals_artifact(
    other: Mapping[str, Any], path: Path, value: Any, needs_json: bool, outside: bool,
    observation: Observation,
) -> list[str]:
    """``equals_artifact``: the value equals that of another file of the run."""
    failures: list[str] = []
    other_path = observation.resolve(other["path"], outside)
    if not other_path.is_file():
        failures.append(f"equals_artifact: {other['path']} not found after the run")
    elif outside and not _written_during_trial(other_path, observation):
        failures.append(f"equals_artifact: {other['path']} was not written during this "
                        "trial (left from before it started)")
    else:
        if "json_pointer" in other or needs_json:
            other_value = _json_value(other_path, other.get("json_pointer", ""))
        else:
            other_value = _read_text(other_path)
        same = json_equal(value, other_value) or (
            not needs_json and "json_pointer" not in other
            and _json_or_none(path) is not None
            and json_equal(_json_or_none(path), _json_or_none(other_path)))
        if not same:
            failures.append(f"equals_artifact: {_show(value)} differs from "
                            f"{other['path']} {other.get('json_pointer', '')}: "
                            f"{_show(other_value)}".rstrip())
    return failures


def _value_checks(assertion: Mapping[str, Any], value: Any, needs_json: bool) -> list[str]:
    """Checks of the value read from the file (a JSON value, or the text)."""
    failures: list[str] = []
    if "is_true" in assertion and value is not assertion["is_true"]:
        failures.append(f"is_true: expected {json.dumps(assertion['is_true'])}, got {_show(value)}")
    if "is_type" in assertion and json_type(value) != assertion["is_type"] and not (
        assertion["is_type"] == "number" and json_type(value) == "integer"
    ):
        failures.append(f"is_type: expected {assertion['is_type']}, got {json_type(value)}")
    if "min_length" in assertion:
        if not isinstance(value, (str, list, dict)):
            failures.append(f"min_length: {json_type(value)} has no length")
        elif len(value) < assertion["min_length"]:
            failures.append(f"min_length: expected at least {assertion['min_length']}, "
                            f"got {len(value)}")
    if "excludes" in assertion:
        text = value if isinstance(value, str) else json.dumps(value)
        for unwanted in assertion["excludes"]:
            if unwanted in text:
                failures.append(f"excludes: {unwanted!r} found"
                                + (f" on line {text.count(chr(10), 0, text.index(unwanted)) + 1}"
                                   if not needs_json else f" in {_show(text)}"))
    if "matches_regex" in assertion:
        text = value if isinstance(value, str) else json.dumps(value)
        pattern = assertion["matches_regex"]
        try:
            if not output.bounded_search(re.compile(pattern), text):
                failures.append(f"matches_regex: /{pattern}/ does not match {_show(text)}")
        except output.PatternTooSlow:
            failures.append(f"matches_regex: /{pattern}/ was stopped after "
                            f"{output.PATTERN_CPU_SECONDS:g} s of searching: {UNDECIDED}")
    return failures


def _written_during_trial(path: Path, observation: Observation) -> bool:
    if observation.not_before_ns is None:
        return True
    return path.stat().st_mtime_ns >= observation.not_before_ns


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def _read_bytes(path: Path) -> bytes:
    if path.stat().st_size > MAX_PARSED_ARTIFACT_BYTES:
        raise ArtifactError(f"file is larger than {MAX_PARSED_ARTIFACT_BYTES} bytes; "
                            "only min_bytes and sha256 can check it")
    return path.read_bytes()


def _read_text(path: Path) -> str:
    return _read_bytes(path).decode("utf-8", errors="replace")


def _json_value(path: Path, pointer: str) -> Any:
    try:
        document = json.loads(_read_bytes(path))
    except ValueError as exc:  # not JSON, not UTF-8, or a number too long to convert
        raise ArtifactError(too_long_number(exc) or f"is not valid JSON ({exc})") from None
    except RecursionError:
        raise ArtifactError("is nested too deeply to parse") from None
    try:
        return jsonpointer.resolve_pointer(document, pointer)
    except jsonpointer.JsonPointerException as exc:
        raise ArtifactError(f"JSON pointer {pointer!r} does not resolve: {exc}") from None


def _json_or_none(path: Path) -> Any:
    """The whole file as a JSON document, None when it is not one.

    Without a pointer a string is compared with the file's text; a file that holds the same
    value as JSON (``"ok"``, a document formatted otherwise) equals it too, as the earlier
    tool, which read such files as JSON, had it. A JSON ``null`` file reads as None, which
    equals nothing a string-valued assertion can give.
    """
    try:
        return _json_value(path, "")
    except ArtifactError:
        return None


UNDECIDED = "a pattern that cannot be decided is no match"


def _show(value: Any, width: int = 120) -> str:
    """``value`` in JSON, cut to ``width`` characters. Encoded piece by piece and from a
    string's start only: a file's whole text (megabytes, where a NUL byte takes six
    characters) is never encoded whole to show its first line."""
    if isinstance(value, str):
        value = value[:width]
    pieces: list[str] = []
    length = 0
    for piece in json.JSONEncoder(ensure_ascii=False).iterencode(value):
        pieces.append(piece)
        length += len(piece)
        if length > width:
            break
    text = "".join(pieces)
    return text if len(text) <= width else text[:width - 3] + "..."


def _newline_hint(seen: Any, wanted: Any) -> str:
    if isinstance(seen, str) and isinstance(wanted, str) and seen.rstrip("\n") == wanted:
        return " (the file ends with a newline; text is compared exactly)"
    return ""


def builtin_kinds() -> dict[str, ExpectationKind]:
    kinds = [
        ExpectationKind("trajectory", check_trajectory),
        ExpectationKind("budget", check_budget),
        ExpectationKind("allowed_domains", check_allowed),
        ExpectationKind("disallowed_domains", check_disallowed),
        ExpectationKind("exit_code", _check_exit_code),
        ExpectationKind("must_exercise", _checked_elsewhere),
        ExpectationKind("blocked_when_stdout_contains", _checked_elsewhere),
        ExpectationKind("artifacts", _check_artifacts),
    ]
    for stream in STREAMS:
        for mode in ("contains", "excludes", "matches"):
            kinds.append(ExpectationKind(f"{stream}_{mode}", _stream_checker(stream, mode)))
        kinds.append(ExpectationKind(f"{stream}_equals", _stream_equals(stream)))
    return {kind.key: kind for kind in kinds}


def extra_schemas(kinds: Mapping[str, ExpectationKind]) -> dict[str, Any]:
    """JSON Schemas of the kinds that plugins add, for the loader to accept their keys."""
    builtin = builtin_kinds()
    return {key: dict(kind.schema or {}) for key, kind in kinds.items() if key not in builtin}
