"""The ``agentic-evals`` command, on real fixtures.

Most tests call the command in this process (``run_cli``): the dispatcher, the command and the
programs it starts are the real ones. The console script itself, in a process of its own
(``run_console_script``), is run where the process is the point: its exit status and streams
for a passing, a failing and a refused run, usage errors and ``--help``, the bundled example,
installed plugins (found when the process starts), and Ctrl-C.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.loading import load_fixture

from conftest import (
    Skill,
    child_env,
    interruptible,
    pid_alive,
    run_cli,
    run_console_script,
    skill_fixture,
)

REPO = Path(__file__).resolve().parent.parent


def lines(text: str) -> pytest.LineMatcher:
    return pytest.LineMatcher(text.splitlines())


# -- validate --------------------------------------------------------------------------------


def test_validate_accepts_and_names_cases(skill: Skill) -> None:
    path = skill.fixture()
    result = run_cli("validate", str(path), cwd=skill.root)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "VALID: fixtures/agentic_eval.json (2 cases, trials=2)\n"


def test_validate_lists_every_problem_and_exits_2(skill: Skill) -> None:
    data = skill_fixture(trials=1)
    data["cases"][0]["expected"]["stdout_contain"] = ["x"]
    data["cases"][1]["expected"]["exit_code"] = "2"
    good = skill.fixture()
    bad = skill.write(data, name="bad.json")
    result = run_cli("validate", str(good), str(bad), cwd=skill.root)
    assert result.returncode == 2
    assert result.stdout == "VALID: fixtures/agentic_eval.json (2 cases, trials=2)\n"
    lines(result.stderr).fnmatch_lines([
        "  - fixtures/bad.json: /cases/0/expected/stdout_contain: unknown key*",
        "  - fixtures/bad.json: /cases/1/expected/exit_code: \"2\" is a string*",
    ])
    lines(result.stderr).no_fnmatch_line("*Traceback*")


@pytest.mark.parametrize("content", [None, "{not json", "[]"], ids=["missing", "syntax", "list"])
def test_validate_bad_files_exit_2_without_traceback(skill: Skill, content: str | None) -> None:
    path = skill.fixtures / "broken.json"
    if content is not None:
        path.write_text(content)
    result = run_cli("validate", str(path), cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines(["*fixtures/broken.json*"])
    lines(result.stderr).no_fnmatch_line("*Traceback*")


@pytest.mark.parametrize(
    ("target", "problem"),
    [("fixtures", "cannot read fixture: Is a directory"),
     ("nope.json", "cannot read fixture: No such file or directory")],
    ids=["directory", "missing"],
)
def test_validate_a_path_that_is_no_fixture_file(skill: Skill, target: str, problem: str) -> None:
    result = run_cli("validate", str(skill.root / target), cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines([f"*{problem}*"])


@pytest.mark.parametrize(
    "command",
    [
        ["bash", "-c", "echo ok; true"],
        ["bash", "-lc", "echo hi"],
        ["/bin/sh", "-c", "printf x"],
        ["env", "FOO=1", "bash", "-c", "true"],
        ["echo", "run.sh"],
        ["bash", "../missing.sh"],
    ],
    ids=["echo-and-true", "login-shell-echo", "absolute-shell-printf", "env-wrapped-true",
         "echo-run-sh", "missing-script"],
)
def test_validate_refuses_self_serving_real_world_cases(skill: Skill, command: list[str]) -> None:
    data = skill_fixture()
    data["cases"][0]["command"] = command
    result = run_cli("validate", str(skill.write(data)), cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines([
        "  - fixtures/agentic_eval.json: /cases/0/command: real_world case 'greets' is not "
        "real-world: *"])


def compliance_fixture(**extra: Any) -> dict[str, Any]:
    data = skill_fixture(eval_tier="compliance")
    data["cases"].append({"name": "sampled", "type": "adversarial",
                          "command": extra.pop("sampled", ["../run.sh", "--samples", "60"]),
                          "expected": {"exit_code": 0}})
    data.update(extra)
    return data


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"eval_kind": "scaffold"}, "compliance fixture can never be exempt"),
        ({"sampled": ["../run.sh", "--samples=5"]}, "--samples 5"),
        ({"sampled": ["../run.sh", "--seed", "7"]}, "no non-deterministic case"),
    ],
    ids=["exempt", "too-few-samples", "fixed-seed"],
)
def test_validate_enforces_the_compliance_tier(
    skill: Skill, extra: dict[str, Any], words: str
) -> None:
    result = run_cli("validate", str(skill.write(compliance_fixture(**extra))), cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines([f"*{words}*"])


def test_validate_accepts_a_compliance_fixture_that_keeps_the_tier(skill: Skill) -> None:
    data = compliance_fixture(
        sampled=["../run.sh", "--samples", "60", "--seed", "{random_seed}"])
    result = run_cli("validate", str(skill.write(data)), cwd=skill.root)
    assert result.returncode == 0, result.stderr


# -- kinds of installed plugins ----------------------------------------------------------------

STDOUT_LINES_PLUGIN = """
from pytest_agentic_evals.expectations import ExpectationKind

def lines(value, observation):
    count = observation.stdout_path.read_text().count("\\n")
    return [] if count == value else [f"stdout_lines: expected {value}, got {count}"]

def pytest_agentic_evals_expectation_kinds():
    return [ExpectationKind("stdout_lines", lines, {"type": "integer"})]
"""


def install_plugin(site: Path, name: str, module: str, source: str | None) -> None:
    """A distribution with a pytest11 entry point, importable through PYTHONPATH=site."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[pytest11]\n{name} = {module}\n")
    if source is not None:
        (site / f"{module}.py").write_text(source)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of installed distributions for the CLI under test."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(site))
    return site


def lines_fixture(skill: Skill, value: Any) -> Path:
    data = skill_fixture()
    data["cases"][0]["expected"]["stdout_lines"] = value
    return skill.write(data)


def test_validate_knows_the_kinds_of_installed_plugins(skill: Skill, site: Path) -> None:
    install_plugin(site, "stdout_lines_kind", "stdout_lines_kind", STDOUT_LINES_PLUGIN)
    result = run_console_script("validate", str(lines_fixture(skill, 1)), cwd=skill.root)
    assert result.returncode == 0, result.stderr


def test_validate_checks_a_plugin_kinds_value_against_its_schema(
    skill: Skill, site: Path
) -> None:
    install_plugin(site, "stdout_lines_kind", "stdout_lines_kind", STDOUT_LINES_PLUGIN)
    result = run_console_script("validate", str(lines_fixture(skill, "one")), cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines(
        ['  - *: /cases/0/expected/stdout_lines: "one" is a string, expected integer'])


def test_validate_refuses_a_kind_no_installed_plugin_adds(skill: Skill) -> None:
    # The control for the two tests above: without the plugin, the key is unknown.
    result = run_cli("validate", str(lines_fixture(skill, 1)), cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines(["*/cases/0/expected/stdout_lines: unknown key*"])


def test_a_plugin_that_cannot_be_loaded_is_one_line_and_exit_2(skill: Skill, site: Path) -> None:
    install_plugin(site, "broken_kinds", "no_such_module_here", None)
    result = run_console_script("validate", str(skill.fixture()), cwd=skill.root)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "agentic-evals: the installed pytest plugin 'broken_kinds' (no_such_module_here) cannot "
        "be loaded: ModuleNotFoundError: No module named 'no_such_module_here'"
    ]
    assert result.stdout == ""


def test_a_plugin_redefining_a_built_in_kind_is_refused(skill: Skill, site: Path) -> None:
    install_plugin(site, "exit_code_kind", "exit_code_kind",
                   STDOUT_LINES_PLUGIN.replace('ExpectationKind("stdout_lines"',
                                               'ExpectationKind("exit_code"'))
    result = run_console_script("validate", str(skill.fixture()), cwd=skill.root)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "agentic-evals: expectation kind 'exit_code' is defined twice "
        "(by a plugin or a conftest.py)"
    ]


def test_plugin_autoloading_can_be_turned_off_as_for_pytest(skill: Skill, site: Path) -> None:
    install_plugin(site, "broken_kinds", "no_such_module_here", None)
    # run_cli drops every PYTEST_ variable; this one is the point here.
    result = subprocess.run(
        [str(Path(sys.executable).parent / "agentic-evals"), "validate", str(skill.fixture())],
        cwd=skill.root, capture_output=True, text=True, stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, timeout=300,
    )
    assert result.returncode == 0, result.stderr


# -- schema and the dispatcher ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "title"),
    [("fixture", "fixture, version 2"), ("report", "report.v2"),
     ("session-report", "session report")],
)
def test_schema_prints_a_shipped_schema(name: str, title: str) -> None:
    result = run_cli("schema", name)
    assert result.returncode == 0
    assert title in json.loads(result.stdout)["title"]


def test_schema_without_a_name_prints_the_reports_as_the_earlier_tool_did() -> None:
    result = run_cli("schema")
    assert result.returncode == 0
    assert "report.v2" in json.loads(result.stdout)["title"]


def test_schema_refuses_an_unknown_name() -> None:
    result = run_cli("schema", "nope")
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines(["*argument name: invalid choice: 'nope'*"])


def test_an_unknown_command_is_a_usage_error() -> None:
    result = run_console_script("frobnicate")
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines(["*argument COMMAND: invalid choice: 'frobnicate'*"])


def test_pytest_arguments_are_only_for_run(skill: Skill) -> None:
    result = run_cli("validate", str(skill.fixture()), "--", "-x", cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines(["*arguments after -- are only for 'run'"])


def test_help_lists_every_command() -> None:
    result = run_console_script("--help")
    assert result.returncode == 0
    lines(result.stdout).fnmatch_lines([
        f"    {name}*" for name in ("run", "validate", "report", "regressions", "coverage",
                                    "audit-skills", "check-skill", "scaffold-fixture",
                                    "apply-scaffolds", "plan-journeys", "schema")
    ])


# -- output flags: one scheme for every command -----------------------------------------------

# command (after the skill's root is appended) -> the schema of its JSON report
JSON_REPORTS = {
    "coverage-show": (["coverage", "show"], "agentic_evals.coverage.v1"),
    "regressions-audit": (["regressions", "audit"], "agentic_evals.regressions_audit.v1"),
    "audit-skills": (["audit-skills"], "agentic_evals.skill_posture_audit.v1"),
}


@pytest.mark.parametrize("spelling", [["--format", "json"], ["--json"]],
                         ids=["format-json", "json"])
@pytest.mark.parametrize("command", JSON_REPORTS)
def test_json_on_stdout_is_asked_for_the_same_way_everywhere(
    skill: Skill, command: str, spelling: list[str]
) -> None:
    skill.fixture()
    words, schema = JSON_REPORTS[command]
    result = run_cli(*words, ".", *spelling, cwd=skill.root)
    assert result.returncode in (0, 1), result.stderr
    assert json.loads(result.stdout)["schema"] == schema


@pytest.mark.parametrize("command", JSON_REPORTS)
def test_a_table_on_stdout_is_asked_for_the_same_way_everywhere(
    skill: Skill, command: str
) -> None:
    skill.fixture()
    result = run_cli(*JSON_REPORTS[command][0], ".", "--format", "table", cwd=skill.root)
    assert result.returncode in (0, 1), result.stderr
    assert result.stdout.strip() and not result.stdout.startswith("{")


@pytest.mark.parametrize("command", JSON_REPORTS)
def test_output_writes_the_json_whatever_is_printed(
    skill: Skill, tmp_path: Path, command: str
) -> None:
    skill.fixture()
    words, schema = JSON_REPORTS[command]
    output = tmp_path / "out.json"
    result = run_cli(*words, ".", "--format", "table", "--output", str(output), cwd=skill.root)
    assert result.returncode in (0, 1), result.stderr
    assert json.loads(output.read_text())["schema"] == schema


def test_a_form_a_command_does_not_have_is_refused(skill: Skill) -> None:
    result = run_cli("coverage", "show", ".", "--format", "md", cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines(["*argument --format: invalid choice: 'md'*"])


# -- a reader that goes away early (`| head -1`) -----------------------------------------------

EARLIER = REPO / "tests" / "data" / "earlier"
JOURNEYS = REPO / "docs" / "examples" / "journeys"
TO_STDOUT = ["-o", "/dev/stdout"]
# Every command that prints something on stdout, run in the greeter's folder (beside it, a
# skill without a fixture); with -o /dev/stdout where it has --output, so that the document
# written there meets the closed pipe too.
PRINTING_COMMANDS = {
    "audit-skills": ["audit-skills", "..", *TO_STDOUT],
    "audit-skills-table": ["audit-skills", "..", "--format", "table", *TO_STDOUT],
    "coverage-show": ["coverage", "show", ".", *TO_STDOUT],
    "coverage-audit": ["coverage", "audit", "..", "--json", *TO_STDOUT],
    "regressions-audit": ["regressions", "audit", ".", *TO_STDOUT],
    "apply-scaffolds": ["apply-scaffolds", "..", *TO_STDOUT],
    "probe": ["probe", "fixtures/agentic_eval.json", "--no-store", *TO_STDOUT],
    "probe-md": ["probe", "fixtures/agentic_eval.json", "--no-store", "--format", "md"],
    "run": ["run", "fixtures/agentic_eval.json", *TO_STDOUT],
    "run-json": ["run", "fixtures/agentic_eval.json", "--json"],
    "validate": ["validate", "fixtures/agentic_eval.json"],
    "check-skill": ["check-skill", "."],
    "scaffold-fixture": ["scaffold-fixture", "../bare"],
    "schema": ["schema", "fixture"],
    "migrate": ["migrate", str(EARLIER / "greeter" / "fixtures" / "agentic_eval.json")],
    "plan-journeys": ["plan-journeys", "--fixture", str(JOURNEYS / "agentic_eval.json"),
                      "--requirements", str(JOURNEYS / "requirements.json"),
                      "--interaction-inventory", str(JOURNEYS / "discovery-inventory.json"),
                      "--state-graph", str(JOURNEYS / "state-graph.json"), *TO_STDOUT],
}


def with_reader_gone(*args: str, cwd: Path) -> tuple[int, str]:
    """The console script, its stdout a pipe whose reader reads one line and closes it, as
    ``agentic-evals ... | head -1`` does: its exit status and stderr.

    The pipe is full when the command starts (a reader that has not read yet), and the line
    read is one already there, in a page of the pipe that stays in use: no room is made by
    reading it, so that the command, however little it prints and however fast, still has
    its output to write when the reader goes away.
    """
    line = b"a line written before the command starts\n"
    page = resource.getpagesize()
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    try:
        os.write(write_end, line + b"." * (page - len(line)))
        with contextlib.suppress(BlockingIOError):
            while True:
                os.write(write_end, b"." * page)
        os.set_blocking(write_end, True)  # the command's stdout blocks, as a pipe's does
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "agentic-evals"), *args], cwd=cwd,
            stdin=subprocess.DEVNULL, stdout=write_end, stderr=subprocess.PIPE, env=child_env(),
        )
    finally:
        os.close(write_end)
    try:
        assert os.read(read_end, len(line)) == line
    finally:
        os.close(read_end)
    _, stderr = process.communicate(timeout=120)
    return process.returncode, stderr.decode()


@pytest.mark.parametrize("command", PRINTING_COMMANDS)
def test_a_closed_stdout_ends_the_command_quietly_with_141(skill: Skill, command: str) -> None:
    skill.fixture()
    Skill(skill.root.parent / "bare")
    status, stderr = with_reader_gone(*PRINTING_COMMANDS[command], cwd=skill.root)
    assert "Traceback" not in stderr and "Broken pipe" not in stderr, stderr
    assert status == 141, stderr


def test_a_closed_stdout_keeps_the_report_a_run_writes_to_output(
    skill: Skill, tmp_path: Path
) -> None:
    output = tmp_path / "report.json"
    status, stderr = with_reader_gone("run", str(skill.fixture()), "--json", "-o", str(output),
                                      cwd=skill.root)
    assert status == 141, stderr
    assert json.loads(output.read_text())["readiness"] == "READY"


# -- run -------------------------------------------------------------------------------------


def test_run_ready_prints_only_the_report_on_stdout(skill: Skill, tmp_path: Path) -> None:
    output = tmp_path / "nested" / "report.json"
    result = run_console_script("run", str(skill.fixture()), "--output", str(output),
                                cwd=skill.root)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["readiness"] == "READY"
    assert json.loads(output.read_text()) == report
    lines(result.stderr).fnmatch_lines(["*4 passed*"])  # pytest's progress goes to stderr
    assert not list(output.parent.glob(".report.json.*"))  # no temporary file left


def failing_fixture(skill: Skill) -> Path:
    data = skill_fixture()
    data["cases"][1]["expected"]["exit_code"] = 0
    return skill.write(data)


def test_run_a_failing_case_exits_1(skill: Skill) -> None:
    result = run_console_script("run", str(failing_fixture(skill)), cwd=skill.root)
    assert result.returncode == 1
    assert json.loads(result.stdout)["readiness"] == "USABLE_WITH_GAPS"
    lines(result.stderr).fnmatch_lines([
        "    FAIL     refuses-empty-name (0/2 trials passed): trial 1: exit_code: expected 0, "
        "got 2"])


def test_run_report_only_exits_0_with_the_same_verdict(skill: Skill) -> None:
    result = run_cli("run", str(failing_fixture(skill)), "--report-only", cwd=skill.root)
    assert result.returncode == 0
    assert json.loads(result.stdout)["readiness"] == "USABLE_WITH_GAPS"


def test_run_rejected_fixture_exits_2_and_runs_nothing(skill: Skill) -> None:
    marker = skill.root / "ran"
    data = skill_fixture(trials=1)
    data["cases"][0]["command"] = ["bash", "-c", f"touch {marker}; ../run.sh x"]
    result = run_console_script("run", str(skill.write(data)), cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines(["*/trials: trials is 1*"])
    assert result.stdout == ""
    assert not marker.exists()


def test_run_a_missing_fixture_exits_2_without_traceback(skill: Skill) -> None:
    result = run_cli("run", str(skill.root / "nope.json"), cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).no_fnmatch_line("*Traceback*")


def test_run_case_selection_is_partial_and_never_ready(skill: Skill) -> None:
    result = run_cli("run", str(failing_fixture(skill)), "--case", "greets", cwd=skill.root)
    assert result.returncode == 0  # the broken case was not selected
    report = json.loads(result.stdout)
    assert report["selection"] == "partial"
    assert report["readiness"] == "USABLE_WITH_GAPS"
    assert [c["outcome"] for c in report["cases"]] == ["PASS", "NOT_TESTED"]


def test_run_an_unknown_case_exits_2(skill: Skill) -> None:
    result = run_cli("run", str(skill.fixture()), "--case", "no-such-case", cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines(["unknown case(s): no-such-case (cases: greets, "
                                        "refuses-empty-name)"])


@pytest.mark.parametrize(("listing", "shown"), [
    (["--collect-only"], "*<TrialItem greets[[]trial-2]>*"),
    (["--co", "-q"], "*agentic_eval.json::refuses-empty-name[[]trial-1]"),
    (["--fixtures"], "*tmp_path*"),
    (["--version"], "pytest *"),
], ids=["collect-only", "co", "fixtures", "version"])
def test_run_collect_only_lists_on_stdout_runs_nothing_and_exits_0(
    skill: Skill, tmp_path: Path, listing: list[str], shown: str
) -> None:
    marker = skill.root / "ran"
    data = skill_fixture()
    data["cases"][0]["command"] = ["bash", "-c", f"touch {marker}; ../run.sh Ada"]
    output = tmp_path / "report.json"
    output.write_text('{"schema": "agentic_evals.report.v2"}\n')  # an earlier run's
    result = run_cli("run", str(skill.write(data)), "-o", str(output), "--", *listing,
                     cwd=skill.root)
    assert result.returncode == 0, result.stderr
    lines(result.stdout).fnmatch_lines([shown])
    assert "runner failed" not in result.stderr
    assert not marker.exists()
    assert output.read_text() == '{"schema": "agentic_evals.report.v2"}\n'


def test_run_collect_only_that_selects_nothing_exits_2(skill: Skill) -> None:
    result = run_cli("run", str(skill.fixture()), "--", "--co", "-k", "nosuch", cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines(["agentic-evals: no trial was selected: *"])


def test_run_trials_reaches_the_plugin(skill: Skill) -> None:
    result = run_cli("run", str(skill.fixture()), "--trials", "3", cwd=skill.root)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["trials"] == 3
    assert [len(case["trials"]) for case in report["cases"]] == [3, 3]


def test_run_timeout_reaches_the_plugin(skill: Skill) -> None:
    data = skill_fixture()
    data["cases"][0]["command"] = ["bash", "-c", "../run.sh Ada; sleep 30"]
    result = run_cli("run", str(skill.write(data)), "--timeout", "0.5", "--case", "greets",
                     cwd=skill.root)
    assert result.returncode == 1
    trials = json.loads(result.stdout)["cases"][0]["trials"]
    assert [trial["timed_out"] for trial in trials] == [True, True]


def test_run_md_writes_the_markdown_summary(skill: Skill, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    result = run_cli("run", str(skill.fixture()), "--md", str(summary), cwd=skill.root)
    assert result.returncode == 0, result.stderr
    assert summary.read_text().startswith("## agentic-evals: READY")


def test_run_keep_workspaces_keeps_passing_trials_workspaces(skill: Skill) -> None:
    result = run_cli("run", str(skill.fixture()), "--keep-workspaces", cwd=skill.root)
    assert result.returncode == 0, result.stderr
    roots = [trial["workspace"]["root"] for case in json.loads(result.stdout)["cases"]
             for trial in case["trials"]]
    assert len(roots) == 4 and all(Path(root).is_dir() for root in roots)


def test_run_without_keep_workspaces_removes_passing_trials_workspaces(skill: Skill) -> None:
    # The control for the test above.
    result = run_cli("run", str(skill.fixture()), cwd=skill.root)
    assert result.returncode == 0, result.stderr
    roots = [trial["workspace"]["root"] for case in json.loads(result.stdout)["cases"]
             for trial in case["trials"]]
    assert roots and not any(Path(root).exists() for root in roots)


@pytest.mark.parametrize(
    ("option", "message"),
    [(["--trials", "many"], "argument --trials: 'many' is not a valid int"),
     # --timeout-seconds is the earlier tool's spelling of the same option
     (["--timeout", "0"], "argument --timeout/--timeout-seconds: '0' must be at least 0.001")],
    ids=["trials", "timeout"],
)
def test_run_a_bad_option_exits_2_and_runs_nothing(
    skill: Skill, option: list[str], message: str
) -> None:
    result = run_cli("run", str(skill.fixture()), *option, cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines([f"*{message}"])
    assert result.stdout == ""


def test_run_passes_pytest_arguments_through(skill: Skill) -> None:
    result = run_cli("run", str(skill.fixture()), "--", "-n", "2", "-k", "greets", cwd=skill.root)
    assert result.returncode == 0, result.stderr
    lines(result.stderr).fnmatch_lines(["*2 workers*"])
    assert json.loads(result.stdout)["selection"] == "partial"


def test_run_a_bad_pytest_argument_exits_2(skill: Skill) -> None:
    result = run_cli("run", str(skill.fixture()), "--", "--no-such-option", cwd=skill.root)
    assert result.returncode == 2


def test_bundled_fixtures_are_valid_and_honest() -> None:
    own = load_fixture(REPO / "fixtures" / "agentic_eval.json")
    assert own.eval_kind == "skill"  # no exemption: the product is judged like any skill
    assert any(case.type == "adversarial" for case in own.cases)
    example = load_fixture(REPO / "docs" / "examples" / "coreutils" / "agentic_eval.json")
    assert example.eval_kind == "skill"


def test_bundled_example_runs_ready_and_reports_as_the_report_page_shows() -> None:
    example = REPO / "docs" / "examples" / "coreutils" / "agentic_eval.json"
    result = run_console_script("run", str(example))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["readiness"] == "READY"
    assert report["summary"]["passed"] == 4
    # docs/report.md shows this run's report, trimmed to its first case and trial: the same
    # fields, in the same order, and the same isolation and domains where the trial was
    # sandboxed as it is by default.
    page = (REPO / "docs" / "report.md").read_text()
    shown = json.loads(page.split("## An example", 1)[1].split("```json\n", 1)[1]
                       .split("```", 1)[0])
    assert list(shown) == list(report)
    assert list(shown["cases"][0]) == list(report["cases"][0])
    shown_trial, trial = shown["cases"][0]["trials"][0], report["cases"][0]["trials"][0]
    assert list(shown_trial) == list(trial)
    if trial["isolation"]["sandbox"] == "bwrap":
        assert (shown_trial["isolation"], shown_trial["domains"]) == (trial["isolation"],
                                                                      trial["domains"])


def test_ctrl_c_during_run_stops_cleanly(skill: Skill, tmp_path: Path) -> None:
    marker = f"cli-ctrl-c-{os.getpid()}"
    data = skill_fixture()
    data["cases"][0]["command"] = [
        "bash", "-c", f"python3 -c 'import time; time.sleep(300)' {marker}; ../run.sh x"
    ]
    data["cases"][0]["timeout_seconds"] = 600
    output = tmp_path / "report.json"
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "agentic-evals"), "run", str(skill.write(data)),
         "--output", str(output)],
        cwd=skill.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        start_new_session=True,  # a terminal's Ctrl-C reaches the whole foreground group
        preexec_fn=interruptible,
    )

    def sleepers() -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if marker.encode() in (entry / "cmdline").read_bytes():
                        found.append(int(entry.name))
                except OSError:
                    continue
        return [pid for pid in found if pid_alive(pid)]

    deadline = time.monotonic() + 60
    while not sleepers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sleepers(), "the trial never started"
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr.decode()
    assert "Traceback" not in stderr.decode()
    assert not sleepers()
    if output.exists():
        assert json.loads(output.read_text())["interrupted"] is True
    if stdout.strip():  # a report on stdout is whole JSON, never a fragment
        assert json.loads(stdout)["interrupted"] is True
