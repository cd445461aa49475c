"""Expectation checks over real files: streams, artifacts, JSON pointers, JSON-typed equality."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.expectations.builtin import (
    builtin_kinds,
    check_expectations,
    stream_needles,
)
from pytest_agentic_evals.expectations.observation import Observation
from pytest_agentic_evals.expectations.output import search_stream
from pytest_agentic_evals.jsonvalues import json_equal


def observe(tmp_path: Path, stdout: bytes = b"", stderr: bytes = b"", exit_code: int = 0,
            expected: dict[str, Any] | None = None) -> Observation:
    (tmp_path / "stdout").write_bytes(stdout)
    (tmp_path / "stderr").write_bytes(stderr)
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return Observation(exit_code, tmp_path / "stdout", tmp_path / "stderr", workspace, workspace,
                       needles=stream_needles(expected or {}, ()))


def check(tmp_path: Path, expected: dict[str, Any], **observed: Any) -> list[str]:
    observation = observe(tmp_path, expected=expected, **observed)
    return check_expectations(expected, observation, builtin_kinds())


def test_every_failed_expectation_is_reported(tmp_path: Path) -> None:
    failures = check(tmp_path, {
        "exit_code": 0,
        "stdout_contains": ["ready", "present"],
        "stdout_excludes": ["secret"],
        "stderr_matches": ["warn(ing)?"],
    }, stdout=b"present and secret\n", exit_code=3)
    assert failures == [
        "exit_code: expected 0, got 3",
        "stdout_contains: 'ready' not found in stdout",
        "stdout_excludes: 'secret' found in stdout",
        "stderr_matches: no match for /warn(ing)?/ in stderr",
    ]


def test_passing_expectations_report_nothing(tmp_path: Path) -> None:
    assert check(tmp_path, {"exit_code": 0, "stdout_contains": ["ok"], "stderr_excludes": ["x"],
                            "stdout_matches": ["^o"]}, stdout=b"ok\n") == []


def test_signal_deaths_are_named(tmp_path: Path) -> None:
    assert check(tmp_path, {"exit_code": 0}, exit_code=-9) == [
        "exit_code: expected 0, the command was killed by signal 9"
    ]


def test_non_utf8_output_is_matched_with_replacement(tmp_path: Path) -> None:
    assert check(tmp_path, {"exit_code": 0, "stdout_contains": ["done"]},
                 stdout=b"\xff\xfe garbage \x80 done\n") == []


def test_stream_search_finds_needles_across_chunk_boundaries(tmp_path: Path, monkeypatch) -> None:
    import pytest_agentic_evals.expectations.output as output

    monkeypatch.setattr(output, "CHUNK_BYTES", 16)
    path = tmp_path / "stream"
    path.write_bytes(b"a" * 30 + b"MARKER" + b"b" * 40)
    found, _ = search_stream(path, ["MARKER", "absent"], [])
    assert found == {"MARKER"}


def write(workspace: Path, relative: str, content: Any) -> None:
    path = workspace / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))


def artifact_failures(tmp_path: Path, *assertions: dict[str, Any]) -> list[str]:
    return check(tmp_path, {"exit_code": 0, "artifacts": list(assertions)})


DOC = {"": "empty key", "a/b": 1, "m~n": 2, "list": [10, 20], "flag": True, "one": 1,
       "text": "hello", "nested": {"id": "s-1"}, "float": 5550102.0}


@pytest.mark.parametrize(
    ("assertion", "failure"),
    [
        ({"json_pointer": "/", "equals": "empty key"}, None),
        ({"json_pointer": "/a~1b", "equals": 1}, None),
        ({"json_pointer": "/m~0n", "equals": 2}, None),
        ({"json_pointer": "/list/1", "equals": 20}, None),
        ({"json_pointer": "/one", "equals": True}, "equals: expected true, got 1"),
        ({"json_pointer": "/flag", "equals": 1}, "equals: expected 1, got true"),
        ({"json_pointer": "/one", "equals": "1"}, 'equals: expected "1", got 1'),
        ({"json_pointer": "/flag", "is_true": True}, None),
        ({"json_pointer": "/one", "is_true": True}, "is_true: expected true, got 1"),
        ({"json_pointer": "/list", "is_type": "array", "min_length": 3},
         "min_length: expected at least 3, got 2"),
        ({"json_pointer": "/float", "is_type": "integer"}, "is_type: expected integer, got number"),
        ({"json_pointer": "/one", "is_type": "number"}, None),
        ({"json_pointer": "/list/-1", "equals": 20}, "does not resolve"),
        ({"json_pointer": "/list/01", "equals": 20}, "does not resolve"),
        ({"json_pointer": "/text/0", "equals": "h"}, "does not resolve"),
        ({"json_pointer": "/missing", "exists": True}, "does not resolve"),
        ({"json_pointer": "/text", "matches_regex": "^hel+o$"}, None),
        ({"json_pointer": "", "is_type": "object"}, None),
    ],
)
def test_json_pointer_assertions(
    tmp_path: Path, assertion: dict[str, Any], failure: str | None
) -> None:
    write(tmp_path / "ws", "out/doc.json", DOC)
    failures = artifact_failures(tmp_path, {"path": "out/doc.json", **assertion})
    if failure is None:
        assert failures == []
    else:
        assert len(failures) == 1 and failure in failures[0], failures


def test_file_assertions(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    write(workspace, "log.txt", "start\ncleanup complete\n")
    write(workspace, "empty.txt", "")
    write(workspace, "a.json", {"session": "s-1"})
    write(workspace, "b.json", {"sessionId": "s-1", "other": "s-2"})
    import hashlib

    digest = hashlib.sha256(b"start\ncleanup complete\n").hexdigest()
    assert artifact_failures(
        tmp_path,
        {"path": "log.txt", "lines_contain": ["cleanup complete"], "min_bytes": 5,
         "sha256": digest.upper(), "content_is_empty": False},
        {"path": "empty.txt", "content_is_empty": True},
        {"path": "gone.txt", "not_exists": True},
        {"path": "gone.txt", "absent": True},
        {"path": "gone.txt", "optional": True, "equals": "x"},
        {"path": "a.json", "json_pointer": "/session",
         "equals_artifact": {"path": "b.json", "json_pointer": "/sessionId"}},
        {"path": "log.txt", "equals": "start\ncleanup complete\n"},
    ) == []
    failures = artifact_failures(
        tmp_path,
        {"path": "log.txt", "lines_contain": ["missing line"]},
        {"path": "log.txt", "not_exists": True},
        {"path": "gone.txt"},
        {"path": "a.json", "json_pointer": "/session",
         "equals_artifact": {"path": "b.json", "json_pointer": "/other"}},
        {"path": "log.txt", "sha256": "0" * 64},
        {"path": "log.txt", "equals": "start\ncleanup complete"},
        {"path": "log.txt", "json_pointer": "/x", "equals": 1},
    )
    assert [f.split(":")[0] for f in failures] == [
        "artifacts[0] log.txt", "artifacts[1] log.txt", "artifacts[2] gone.txt",
        "artifacts[3] a.json /session", "artifacts[4] log.txt", "artifacts[5] log.txt",
        "artifacts[6] log.txt /x",
    ]
    assert "no line contains 'missing line'" in failures[0]
    assert "exists but must not" in failures[1]
    assert "file not found after the run" in failures[2]
    assert "differs from b.json /other" in failures[3]
    assert "ends with a newline" in failures[5]
    assert "is not valid JSON" in failures[6]


@pytest.mark.parametrize(
    ("files", "assertion", "passes"),
    [
        ({"r.json": '"ok"\n'}, {"equals": "ok"}, True),  # a JSON string equals its value
        ({"r.json": '"ok"\n'}, {"equals": '"ok"\n'}, True),  # ...and its text
        ({"r.json": "ok"}, {"equals": "ok"}, True),  # a text file, as text
        ({"r.json": "ok\n"}, {"equals": "ok"}, False),  # text is compared exactly
        ({"r.json": '"no"'}, {"equals": "ok"}, False),
        ({"r.json": "1"}, {"equals": "1"}, True),  # as text; the JSON number 1 is not "1"
        ({"r.json": '{"a": 1, "b": [1, 2]}', "s.json": '{\n  "b": [1, 2],\n  "a": 1\n}\n'},
         {"equals_artifact": {"path": "s.json"}}, True),  # one document, formatted twice
        ({"r.json": '{"a": 1}', "s.json": '{"a": true}'},
         {"equals_artifact": {"path": "s.json"}}, False),
        ({"r.json": "one\n", "s.json": "one\n"}, {"equals_artifact": {"path": "s.json"}}, True),
        ({"r.json": "one\n", "s.json": "two\n"}, {"equals_artifact": {"path": "s.json"}}, False),
    ],
)
def test_without_a_pointer_a_string_equals_the_file_as_text_or_as_json(
    tmp_path: Path, files: dict[str, str], assertion: dict[str, Any], passes: bool
) -> None:
    for name, text in files.items():
        write(tmp_path / "ws", name, text)
    failures = artifact_failures(tmp_path, {"path": "r.json", **assertion})
    assert (failures == []) is passes, failures


def test_checks_of_the_whole_file_never_read_a_file_too_large_to_parse(tmp_path: Path) -> None:
    big = tmp_path / "ws" / "image.bin"
    big.parent.mkdir(parents=True)
    with big.open("wb") as stream:
        stream.write(b"data")
        stream.truncate(300 * 1024 * 1024)  # more than an assertion parses
    assert artifact_failures(tmp_path, {"path": "image.bin", "min_bytes": 1},
                             {"path": "image.bin", "exists": True}) == []
    [failure] = artifact_failures(tmp_path, {"path": "image.bin", "sha256": "0" * 64})
    assert "extended without being written (it has holes): not hashed" in failure


def test_a_number_too_long_to_convert_is_said_to_be_one(tmp_path: Path) -> None:
    write(tmp_path / "ws", "r.json", '{"n": ' + "1" * 5000 + "}")
    failures = artifact_failures(tmp_path, {"path": "r.json", "json_pointer": "/n", "equals": 1})
    assert failures == ["artifacts[0] r.json /n: holds a number of more than 4300 digits, "
                        "which cannot be read"]


def test_an_artifact_behind_a_symlink_out_of_the_workspace_fails(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "result.json").write_text("{}")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "out").symlink_to(outside)
    (failure,) = artifact_failures(tmp_path, {"path": "out/result.json"})
    assert "resolves outside the trial workspace" in failure


def test_json_equality_keeps_json_types() -> None:
    assert json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal(0, False)
    assert not json_equal("1", 1)
    assert not json_equal([1, True], [1, 1])
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})


def test_stdout_equals_passes_on_the_exact_text_and_diffs_otherwise(tmp_path: Path) -> None:
    assert check(tmp_path, {"stdout_equals": "a\nb\n"}, stdout=b"a\nb\n") == []
    (failure,) = check(tmp_path, {"stdout_equals": "a\nb\nc\n"}, stdout=b"a\nB\nc\n")
    assert failure.splitlines() == [
        "stdout_equals: stdout differs from the expected text:",
        "    --- expected",
        "    +++ stdout",
        "    @@ -1,3 +1,3 @@",
        "     a",
        "    -b",
        "    +B",
        "     c",
    ]


def test_stdout_equals_points_out_a_trailing_newline(tmp_path: Path) -> None:
    (failure,) = check(tmp_path, {"stdout_equals": "done"}, stdout=b"done\n")
    assert failure == ("stdout_equals: stdout differs from the expected text only at its end: "
                       "stdout ends with a newline, and the text is compared exactly")


def test_stderr_equals_and_a_bounded_diff(tmp_path: Path, monkeypatch) -> None:
    from pytest_agentic_evals.expectations import builtin

    assert check(tmp_path, {"stderr_equals": ""}, stderr=b"") == []
    monkeypatch.setattr(builtin, "DIFF_LINES", 5)
    (failure,) = check(tmp_path, {"stderr_equals": ""},
                       stderr=b"".join(b"line %d\n" % n for n in range(50)))
    assert failure.startswith("stderr_equals: stderr differs from the expected text:")
    assert failure.splitlines()[-1] == "    ... (48 more diff lines)"


def test_artifact_excludes_and_lines_exclude(tmp_path: Path) -> None:
    observation = observe(tmp_path)
    (observation.cwd / "out.txt").write_text("name: Ada\nphone: 555-0100\n")
    (observation.cwd / "out.json").write_text('{"rows": [{"phone": 5550100}], "ok": true}')
    kinds = builtin_kinds()

    def failures(assertion: dict[str, Any]) -> list[str]:
        return check_expectations({"artifacts": [assertion]}, observation, kinds)

    assert failures({"path": "out.txt", "excludes": ["555-0199"],
                     "lines_exclude": ["secret"]}) == []
    assert failures({"path": "out.txt", "excludes": ["555-0100"]}) == [
        "artifacts[0] out.txt: excludes: '555-0100' found on line 2"]
    assert failures({"path": "out.txt", "lines_exclude": ["Ada", "phone"]}) == [
        "artifacts[0] out.txt: lines_exclude: 'Ada' found on line 1",
        "artifacts[0] out.txt: lines_exclude: 'phone' found on line 2"]
    # Inside a JSON value: an integer-typed phone number is found in its JSON text.
    assert failures({"path": "out.json", "json_pointer": "/rows", "excludes": ["5550100"]}) == [
        'artifacts[0] out.json /rows: excludes: \'5550100\' found in "[{\\"phone\\": 5550100}]"']
    assert failures({"path": "missing.txt", "excludes": ["x"]}) == [
        "artifacts[0] missing.txt: file not found after the run"]


def test_a_large_file_compared_whole_is_quoted_without_a_copy_of_it(tmp_path: Path) -> None:
    """A failure quotes at most 120 characters of what the file holds; the quote is made from
    its start, not from the whole of it encoded (a NUL is six characters in JSON)."""
    import tracemalloc

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "out.json").write_bytes(b"\0" * 8_000_000)
    expected = {"artifacts": [{"path": "out.json", "equals": "x"}]}
    observation = observe(tmp_path, expected=expected)
    tracemalloc.start()
    try:
        failures = check_expectations(expected, observation, builtin_kinds())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(failures) == 1 and "\\u0000" in failures[0] and len(failures[0]) < 400
    # The file's text is read once (8 MB); its JSON form would be six times that.
    assert peak < 3 * 8_000_000, peak


def test_a_pattern_too_slow_to_decide_fails_its_check_instead_of_running_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`x.*status: fail` over a long line of x backtracks for hours; the search is stopped
    after PATTERN_CPU_SECONDS of the runner's time (shortened here) and decides nothing."""
    import pytest_agentic_evals.expectations.output as output

    monkeypatch.setattr(output, "PATTERN_CPU_SECONDS", 0.2)
    slow = "x.*status: fail"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "out.txt").write_text("x" * 200_000 + " status: ok\n")
    failures = check(tmp_path, {"stdout_matches": [slow, "status: ok"], "artifacts": [
        {"path": "out.txt", "matches_regex": slow}]}, stdout=b"x" * 200_000 + b" status: ok\n")
    assert failures == [
        f"stdout_matches: /{slow}/ was stopped after 0.2 s of searching stdout: a pattern that "
        "cannot be decided is no match",
        f"artifacts[0] out.txt: matches_regex: /{slow}/ was stopped after 0.2 s of searching: "
        "a pattern that cannot be decided is no match",
    ]
