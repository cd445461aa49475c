"""How a failed trial reads in pytest's own outputs: the short summary, ``--tb=line``, JUnit's
``message``, a failure that is not the trial's (pytest-timeout), and a trial's raw control
bytes. Real pytest sessions (pytester), serially and under xdist where the report crosses."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree

import pytest

from conftest import MODES, make_skill, skill_fixture

FIRST_PROBLEM = "stdout_contains: 'hello, Ada' not found in stdout"


def failing_skill(pytester: pytest.Pytester) -> None:
    data = skill_fixture()
    data["cases"][0]["command"] = ["bash", "../loud.sh", "Ada"]
    make_skill(pytester, data)
    # Prints the wrong greeting, with an ESC sequence and a NUL byte on the way.
    (pytester.path / "loud.sh").write_text("printf '\\033[31mred\\000nul\\n'; echo \"helo, $1\"\n")


def run(pytester: pytest.Pytester, *args: str, mode: list[str] = ()) -> pytest.RunResult:
    argv = ["--agentic-evals", "-p", "no:cacheprovider", "-p", "no:randomly",
            "-k", "greets", *mode, *args]
    return pytester.runpytest_subprocess(*argv, timeout=240)


@pytest.mark.parametrize("mode", MODES)
def test_the_short_summary_and_junit_show_the_first_problem(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    failing_skill(pytester)
    result = run(pytester, "-rf", "--junitxml=junit.xml", mode=mode)
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "FAILED fixtures/agentic_eval.json::greets[[]trial-1] - stdout_contains: *",
    ])
    result.stdout.no_fnmatch_line("FAILED * - case 'greets'*")
    failures = ElementTree.parse(pytester.path / "junit.xml").findall(".//failure")
    assert len(failures) == 2
    for failure in failures:
        assert failure.get("message") == FIRST_PROBLEM
        body = failure.text or ""
        assert body.startswith("case 'greets', trial ")  # the whole text, once, in the body
        assert body.count(FIRST_PROBLEM) == 1


@pytest.mark.parametrize("mode", MODES)
def test_tb_line_prints_one_line_per_failure(pytester: pytest.Pytester, mode: list[str]) -> None:
    failing_skill(pytester)
    result = run(pytester, "--tb=line", mode=mode)
    lines = result.stdout.lines
    start = lines.index(next(line for line in lines if "FAILURES" in line))
    end = next(i for i, line in enumerate(lines) if "agentic-evals ==" in line)
    shown = [line for line in lines[start + 1:end] if not line.startswith("[gw")]
    # Line 7 of the fixture names the case.
    assert shown == [f"fixtures/agentic_eval.json:7: {FIRST_PROBLEM}"] * 2


def test_a_trials_control_bytes_never_reach_the_terminal(pytester: pytest.Pytester) -> None:
    failing_skill(pytester)
    result = run(pytester)
    text = result.stdout.str()
    assert "\x1b[31mred" not in text and "\x00" not in text
    result.stdout.fnmatch_lines(["  | \\x1b[[]31mred\\x00nul"])


def test_a_pytest_timeout_inside_a_trial_shows_only_the_trials_frames(
    pytester: pytest.Pytester,
) -> None:
    data = skill_fixture()
    data["cases"][0]["command"] = ["bash", "-c", "../run.sh x; sleep 30"]
    data["cases"][0]["timeout_seconds"] = 60  # longer than the backstop: pytest-timeout fires
    make_skill(pytester, data)
    result = run(pytester, "--timeout", "2", "--timeout-method", "signal",
                 "-k", "greets and trial-1")
    assert result.ret == 1
    text = result.stdout.str()
    failure = text[text.index("FAILURES"):text.index("agentic-evals ==")]
    assert "pluggy" not in failure and "_pytest" not in failure
    assert "pytest_timeout.py" not in failure
    result.stdout.fnmatch_lines(["*nodes.py:*: in runtest", "E   Failed: Timeout*"])
    # Was 1,100 lines through pluggy. pytest-timeout also prints the stack of every other
    # thread, about ten lines each: the domain proxy's, the output copier's, the test server's.
    assert len(failure.splitlines()) < 80


@pytest.mark.parametrize("mode", MODES)
def test_half_a_utf16_pair_in_an_artifact_value_is_shown_escaped(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    """JSON can say "\\ud800", which is no text: the failure still shows the value, with that
    half escaped, in the terminal, in the report and in JUnit."""
    data = skill_fixture()
    data["cases"][0]["command"] = [
        "bash", "-c", "printf '{\"s\": \"a\\\\ud800b\", \"t\": [\"\\\\udfff\"]}' > out.json; "
                      "bash ../run.sh Ada"]
    data["cases"][0]["expected"]["artifacts"] = [
        {"path": "out.json", "json_pointer": "/s", "equals": "x"},
        {"path": "out.json", "json_pointer": "/t", "equals": ["y"]},
        {"path": "out.json", "json_pointer": "/s", "matches_regex": "^q"},
    ]
    make_skill(pytester, data)
    result = run(pytester, "-rf", "--junitxml=junit.xml", "--agentic-evals-report",
                 "report.json", mode=mode)
    assert result.ret == 1
    first = 'artifacts[0] out.json /s: equals: expected "x", got "a\\ud800b"'
    shown = [first, 'artifacts[1] out.json /t: equals: expected ["y"], got ["\\udfff"]',
             'artifacts[2] out.json /s: matches_regex: /^q/ does not match "a\\ud800b"']
    result.stdout.fnmatch_lines([f"  - {line}".replace("[", "[[]") for line in shown])
    result.stdout.fnmatch_lines(["FAILED *greets[[]trial-1] - artifacts[[]0] out.json *"])
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert report["cases"][0]["trials"][0]["problems"] == shown
    for failure in ElementTree.parse(pytester.path / "junit.xml").findall(".//failure"):
        assert failure.get("message") == first
