"""Bad input gets one clear line before anything runs: through ``validate``/``run`` and pytest.

Each mistake is refused with the file and the JSON pointer (or the option) that is wrong, an
exit status of 2 from the CLI (a usage error from pytest), no traceback, and no trial run.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals import jsonio
from pytest_agentic_evals.jsonio import (
    output_path_problem,
    remove_earlier_output,
    write_json_atomically,
)
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.pytest_plugin.settings import trial_count, trial_timeout
from pytest_agentic_evals.regressions.registry import RegistryError, load_registry

from conftest import Skill, child_env, make_skill, run_cli, run_console_script, skill_fixture


def lines(text: str) -> pytest.LineMatcher:
    return pytest.LineMatcher(text.splitlines())


def problems_of(path: Path) -> list[str]:
    with pytest.raises(FixtureError) as caught:
        load_fixture(path)
    return [f"{problem.pointer}: {problem.message}" for problem in caught.value.problems]


# -- text the operating system cannot take -----------------------------------------------------


def _nul_in_artifact(data: dict[str, Any]) -> None:
    data["cases"][0]["artifacts"] = [{"path": "in\u0000put.txt", "content": "x"}]


def _nul_in_expected_artifact(data: dict[str, Any]) -> None:
    data["cases"][0]["expected"]["artifacts"] = [{"path": "out\u0000.txt", "exists": True}]


def _nul_in_argv(data: dict[str, Any]) -> None:
    data["cases"][0]["command"] = ["bash", "../run.sh", "A\u0000da"]


def _nul_in_env_value(data: dict[str, Any]) -> None:
    data["cases"][0]["env"] = {"NAME": "A\u0000da"}


def _equals_in_env_name(data: dict[str, Any]) -> None:
    data["env"] = {"NAME=Ada": "1"}


@pytest.mark.parametrize(("change", "pointer", "message"), [
    (_nul_in_artifact, "/cases/0/artifacts/0/path", "a path cannot hold"),
    (_nul_in_expected_artifact, "/cases/0/expected/artifacts/0/path", "a path cannot hold"),
    (_nul_in_argv, "/cases/0/command/2", "a command word cannot hold"),
    (_nul_in_env_value, "/cases/0/env/NAME", "an environment value cannot hold"),
    (_equals_in_env_name, "/env/NAME=Ada", "contains '=', which ends a name"),
], ids=["artifact-path", "expected-artifact-path", "argv", "env-value", "env-name"])
def test_text_the_system_cannot_take_is_refused_at_load(
    skill: Skill, change: Any, pointer: str, message: str
) -> None:
    data = skill_fixture()
    change(data)
    found = problems_of(skill.write(data))
    assert any(p.startswith(f"{pointer}: ") and message in p for p in found), found


def test_validate_refuses_a_nul_byte_in_one_line_per_problem(skill: Skill) -> None:
    data = skill_fixture()
    _nul_in_artifact(data)
    _equals_in_env_name(data)
    result = run_cli("validate", str(skill.write(data)), cwd=skill.root)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines(result.stderr).fnmatch_lines([
        "*fixtures/agentic_eval.json: /cases/0/artifacts/0/path: contains a NUL byte*",
        "*fixtures/agentic_eval.json: /env/NAME=Ada: environment variable name*",
    ])


@pytest.mark.parametrize("where", ["/skill", "/cases/0/command/2",
                                   "/cases/0/expected/stdout_contains/0", "/cases/0/env/NAME"])
def test_half_a_utf16_pair_is_refused_at_load_wherever_it_is(skill: Skill, where: str) -> None:
    # JSON can spell it ("\\ud800"); no text holds it: it loaded, every trial ran, and the
    # report could not be written (a traceback, no report).
    data = skill_fixture()
    data["cases"][0]["env"] = {"NAME": "Ada"}
    text = json.dumps(data, indent=2)
    for old in {"/skill": ['"greeter"'], "/cases/0/command/2": ['"Ada"\n'],
                "/cases/0/expected/stdout_contains/0": ['"hello, Ada"'],
                "/cases/0/env/NAME": ['"NAME": "Ada"']}[where]:
        assert old in text
        new = old.replace("Ada", "Ada\\udc80").replace('"greeter"', '"greeter\\ud800"')
        text = text.replace(old, new, 1)
    fixture = skill.write(text)
    for command in ("validate", "run"):
        result = run_cli(command, str(fixture), cwd=skill.root)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        lines(result.stderr).fnmatch_lines([f"*agentic_eval.json: {where}: contains \\u*, half "
                                            "of a UTF-16 pair*"])


def test_run_refuses_a_nul_byte_in_argv_before_any_trial(skill: Skill) -> None:
    marker = skill.root / "ran"
    data = skill_fixture()
    data["cases"][1]["command"] = ["bash", "-c", f"touch {marker}; ../run.sh ''", "x\u0000"]
    result = run_cli("run", str(skill.write(data)), cwd=skill.root)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and result.stdout == ""
    lines(result.stderr).fnmatch_lines(["*/cases/1/command/3: contains a NUL byte*"])
    assert not marker.exists()


def registry_with(**proof: Any) -> dict[str, Any]:
    fail_before_fix = {"proof_command": ["agentic-evals", "run", "agentic_eval.json"],
                       "expected": {"exit_code": 1, "stdout_contains": ["hello, nobody at all"]},
                       **proof}
    return {
        "schema": "agentic_evals.regressions.v1", "skill": "greeter",
        "incidents": [{"incident_id": "inc-1", "date": "2026-01-10", "status": "closed"}],
        "regressions": [{
            "regression_id": "r1", "incident": {"incident_id": "inc-1", "date": "2026-01-10"},
            "claim_ids": ["c"], "retained_case": "greets", "detection_date": "2026-01-10",
            "fix_date": "2026-01-11", "fail_before_fix": fail_before_fix,
        }],
    }


@pytest.mark.parametrize(("proof", "pointer", "message"), [
    ({"timeout_seconds": 1e308}, "/regressions/0/fail_before_fix/timeout_seconds", "86400"),
    ({"proof_command": ["agentic-evals", "r\u0000un"]},
     "/regressions/0/fail_before_fix/proof_command/1", "contains a NUL byte"),
    ({"env": {"A=B": "x"}}, "/regressions/0/fail_before_fix/env/A=B", "contains '='"),
], ids=["huge-timeout", "nul-in-proof-command", "equals-in-env-name"])
def test_a_registry_the_system_cannot_run_is_refused_at_load(
    skill: Skill, proof: dict[str, Any], pointer: str, message: str
) -> None:
    path = skill.write(registry_with(**proof), name="regressions.json")
    with pytest.raises(RegistryError) as caught:
        load_registry(path)
    found = [f"{p.pointer}: {p.message}" for p in caught.value.problems]
    assert any(p.startswith(pointer + ": ") and message in p for p in found), found
    result = run_cli("regressions", "audit", str(skill.root), cwd=skill.root)
    assert "Traceback" not in result.stderr


# -- settings: finite, positive, capped ----------------------------------------------------------


@pytest.mark.parametrize(("raw", "message"), [
    ("nan", "'nan' is not a finite number"), ("inf", "'inf' is not a finite number"),
    ("1e308", "'1e308' must be at most 86400"), ("0", "'0' must be at least 0.001"),
])
def test_a_timeout_must_be_finite_positive_and_at_most_a_day(raw: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        trial_timeout(raw)
    assert trial_timeout("86400") == 86400.0


def test_trials_are_capped_as_in_a_fixture() -> None:
    with pytest.raises(ValueError, match="'1000000000' must be at most 10000"):
        trial_count("1000000000")
    assert trial_count("10000") == 10000


@pytest.mark.parametrize(("option", "message"), [
    ("--agentic-evals-timeout=nan", "--agentic-evals-timeout: 'nan' is not a finite number"),
    ("--agentic-evals-timeout=inf", "--agentic-evals-timeout: 'inf' is not a finite number"),
    ("--agentic-evals-timeout=1e308", "--agentic-evals-timeout: '1e308' must be at most 86400"),
    ("--agentic-evals-trials=1000000000",
     "--agentic-evals-trials: '1000000000' must be at most 10000"),
], ids=["nan", "inf", "1e308", "trials"])
def test_run_refuses_a_bad_setting_after_the_separator(
    skill: Skill, option: str, message: str
) -> None:
    result = run_cli("run", str(skill.fixture()), "--", option, cwd=skill.root)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and result.stdout == ""
    lines(result.stderr).fnmatch_lines([f"*{message}*"])


def test_run_says_when_trials_are_raised_to_the_minimum(skill: Skill) -> None:
    result = run_cli("run", str(skill.fixture()), "--trials", "1", cwd=skill.root)
    assert result.returncode == 0, result.stderr
    lines(result.stderr).fnmatch_lines([
        "*agentic-evals: --trials 1 raised to 2 for *fixtures/agentic_eval.json: "
        "its minimum number of trials"])
    assert "--agentic-evals-" not in result.stderr  # run's messages name run's options
    assert json.loads(result.stdout)["trials"] == 2


@pytest.mark.parametrize(("arguments", "message"), [
    (["--durations", "no-such-report.json"],
     "*--durations: cannot read no-such-report.json: No such file or directory*"),
    (["--", "--dist", "each"], "*--dist each runs every trial on every worker; use -n N or "
                               "--dist load (set the number of trials with --trials)*"),
], ids=["durations", "dist-each"])
def test_run_names_its_own_options_in_the_plugins_messages(
    skill: Skill, arguments: list[str], message: str
) -> None:
    result = run_cli("run", str(skill.fixture()), *arguments, cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines([message])
    assert "--agentic-evals-" not in result.stderr


def test_run_names_its_own_sandbox_option_in_the_report(skill: Skill) -> None:
    result = run_cli("run", str(skill.fixture()), "--sandbox", "off", cwd=skill.root)
    assert result.returncode == 0, result.stderr
    reasons = {trial["isolation"]["reason"] for case in json.loads(result.stdout)["cases"]
               for trial in case["trials"]}
    assert reasons == {"the sandbox is off (set by --sandbox)"}


# -- output paths: checked before anything runs -----------------------------------------------


def test_output_path_problems(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    assert output_path_problem(str(tmp_path)) == "is a directory: name a file to write"
    assert output_path_problem("out/") == "is a directory: name a file to write"
    assert output_path_problem(str(tmp_path / "file" / "r.json")) == (
        f"cannot be created: {tmp_path / 'file'} is not a directory")
    assert "cannot create files in /proc" in str(output_path_problem("/proc/nope/r.json"))
    assert output_path_problem(str(tmp_path / "new" / "deeper" / "r.json")) is None
    assert not (tmp_path / "new").exists()  # checking creates nothing
    assert output_path_problem(str(tmp_path / "file")) is None  # replaced atomically


# What may stand at an output path, and whether an output may replace it: an earlier output
# (also the earlier tool's) or nothing yes, the user's own files never.
AT_THE_OUTPUT_PATH = {
    "run-report": ('{\n  "version": 2,\n  "schema": "agentic_evals.report.v2"}', True),
    "compact-session-report": ('{"schema":"agentic_evals.session_report.v1"}', True),
    "probe-report": ('{"schema": "agentic_evals.probe.v1"}', True),
    "earlier-coverage-audit": ('{"schema": "agentic_evals.coverage_audit.v1"}', True),
    "summary": ("## agentic-evals: READY\n\n| readiness |", True),
    "probe-summary": ("## Vacuity probe: NOT_READY\n", True),
    "empty": ("", True),
    "blank": ("\n", True),
    "fixture": (json.dumps(skill_fixture()), False),
    "registry": ('{"schema": "agentic_evals.regressions.v1", "regressions": []}', False),
    "requirements": ('{"schema": "agentic_evals.requirements.v1"}', False),
    "skill-md": ("---\nname: greeter\n---\n# Greeter\n", False),
    "report-named-in-the-text": ("see agentic_evals.report.v2 and ## agentic-evals: x", False),
    "report-in-an-input-artifact": (json.dumps({"version": 2, "cases": [{"artifacts": [
        {"path": "in.json", "content": {"schema": "agentic_evals.report.v2"}}]}]}), False),
}


@pytest.mark.parametrize("large", [False, True], ids=["parsed", "too-large-to-parse"])
@pytest.mark.parametrize(("content", "replaceable"), AT_THE_OUTPUT_PATH.values(),
                         ids=AT_THE_OUTPUT_PATH.keys())
def test_an_output_replaces_only_an_earlier_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, replaceable: bool, large: bool
) -> None:
    if large:  # told from its first bytes alone, as a file of more than 64 MiB is
        monkeypatch.setattr(jsonio, "_PARSED_OUTPUT_BYTES", 0)
    (tmp_path / "file").write_text(content)
    (tmp_path / "link").symlink_to(tmp_path / "file")
    for path in ("file", "link"):
        problem = output_path_problem(str(tmp_path / path))
        if replaceable:
            assert problem is None
        else:
            assert "is a file that is not an output of agentic-evals" in str(problem)


@pytest.mark.parametrize("looks_like_a_report", [False, True])
@pytest.mark.parametrize("option", ["--output", "--md"])
def test_run_never_overwrites_the_fixture_it_runs(
    skill: Skill, option: str, looks_like_a_report: bool
) -> None:
    marker = skill.root / "ran"
    data = skill_fixture()
    data["cases"][1]["command"] = ["bash", "-c", f"touch {marker}; ../run.sh ''"]
    if looks_like_a_report:  # an input artifact holding a report, in the file's first bytes
        data = {"version": 2, "skill": "greeter", "cases": data["cases"]}
        data["cases"][0]["artifacts"] = [
            {"path": "earlier.json", "content": {"schema": "agentic_evals.report.v2"}}]
    fixture = skill.write(data)
    before = fixture.read_bytes()
    result = run_cli("run", str(fixture), option, str(fixture), cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines([f"agentic-evals: {option} {fixture}: is a file that is "
                                        "not an output*"])
    assert fixture.read_bytes() == before and not marker.exists()


JOURNEYS = Path(__file__).resolve().parents[1] / "docs" / "examples" / "journeys"


@pytest.mark.parametrize("command", ["audit-skills", "coverage", "plan-journeys",
                                     "plan-journeys-scaffold", "probe"])
def test_no_command_writes_its_output_over_an_input(tmp_path: Path, command: str) -> None:
    shutil.copytree(JOURNEYS, tmp_path / "journeys")
    skill = Skill(tmp_path / "greeter")
    fixture = skill.fixture()
    taken = {"audit-skills": skill.root / "SKILL.md", "coverage": fixture,
             "probe": fixture}.get(command, tmp_path / "journeys" / "requirements.json")
    if command == "audit-skills":
        taken.write_text("---\nname: greeter\ndescription: Greets.\n---\n")
    before = taken.read_bytes()
    flag = "--scaffold-output" if command == "plan-journeys-scaffold" else "--output"
    argv = {
        "audit-skills": ["audit-skills", str(tmp_path)],
        "coverage": ["coverage", "show", str(skill.root)],
        "probe": ["probe", str(fixture), "--no-store"],
    }.get(command, ["plan-journeys", "--fixture", "agentic_eval.json", "--requirements",
                    "requirements.json", "--interaction-inventory", "discovery-inventory.json",
                    "--state-graph", "state-graph.json"])
    if command == "plan-journeys-scaffold":
        argv += ["--output", "journey-plan.json"]
    result = run_cli(*argv, flag, str(taken), cwd=tmp_path / "journeys")
    assert result.returncode == 2, result.stderr
    lines(result.stderr).fnmatch_lines([f"*{flag} {taken}: is a file that is not an output "
                                        "of agentic-evals*"])
    assert taken.read_bytes() == before


def test_apply_scaffolds_checks_its_output_before_writing_any_scaffold(tmp_path: Path) -> None:
    # A command that writes files and then its receipt must refuse the receipt's path first.
    skill = tmp_path / "tools" / "lister"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: lister\ndescription: Lists.\n---\n")
    taken = skill / "SKILL.md"
    result = run_cli("apply-scaffolds", str(tmp_path), "--write", "--output", str(taken))
    assert result.returncode == 2, result.stderr
    assert "is a file that is not an output of agentic-evals" in result.stderr
    assert not (skill / "fixtures").exists()  # no scaffold written
    assert taken.read_text() == "---\nname: lister\ndescription: Lists.\n---\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_a_file_that_cannot_be_read_is_never_replaced(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("the user's")
    (tmp_path / "secret").chmod(0o200)
    assert "is a file that is not an output" in str(output_path_problem(str(tmp_path / "secret")))


def test_run_refuses_one_file_for_the_report_and_its_summary(skill: Skill) -> None:
    marker = skill.root / "ran"
    data = skill_fixture()
    data["cases"][1]["command"] = ["bash", "-c", f"touch {marker}; ../run.sh ''"]
    (skill.root / "out").mkdir(parents=True)
    (skill.root / "link.md").symlink_to(skill.root / "out" / "both")
    result = run_cli("run", str(skill.write(data)), "--output", "out/both", "--md", "link.md",
                     cwd=skill.root)
    assert result.returncode == 2
    assert result.stderr == "agentic-evals: --md link.md: is also --output: name two files\n"
    assert not marker.exists()


def test_pytest_refuses_one_file_for_the_report_and_its_summary(
    pytester: pytest.Pytester,
) -> None:
    marker = pytester.path / "ran"
    data = skill_fixture()
    data["cases"][1]["command"] = ["bash", "-c", f"touch {marker}; ../run.sh ''"]
    make_skill(pytester, data)
    result = pytester.runpytest("--agentic-evals", "--agentic-evals-report", "both",
                                "--agentic-evals-md", "./both", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--agentic-evals-md: ./both: is also --agentic-evals-report: name two files"])
    assert not marker.exists()


def test_pytest_never_overwrites_a_skill_file_with_its_report(pytester: pytest.Pytester) -> None:
    make_skill(pytester, skill_fixture())
    skill_md = pytester.path / "SKILL.md"
    skill_md.write_text("---\nname: greeter\n---\n")
    result = pytester.runpytest("--agentic-evals", "--agentic-evals-md", "SKILL.md",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentic-evals-md: SKILL.md: is a file that is not an output*"])
    assert skill_md.read_text() == "---\nname: greeter\n---\n"


class PipeReader:
    """A named pipe in ``folder`` and a thread that reads all that is written into it."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "pipe"
        os.mkfifo(self.path)
        self.text = ""
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with open(self.path, encoding="utf-8") as stream:
            self.text = stream.read()

    def received(self) -> str:
        self._thread.join(timeout=60)
        return self.text


def test_a_pipe_is_written_into_and_stays_a_pipe(tmp_path: Path) -> None:
    # Renaming over a path that names a device replaces the device: as root, --output
    # /dev/null once left a regular file where /dev/null was.
    pipe = PipeReader(tmp_path)
    assert output_path_problem(str(pipe.path)) is None
    remove_earlier_output(pipe.path)  # what a run does first with its output path
    write_json_atomically(pipe.path, {"verdict": "READY"})
    assert json.loads(pipe.received()) == {"verdict": "READY"}
    assert stat.S_ISFIFO(pipe.path.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no temporary file left


def test_a_symbolic_link_stays_and_the_file_it_names_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    real = tmp_path / "reports" / "latest.json"
    real.write_text('{"schema": "agentic_evals.report.v2"}')
    link = tmp_path / "report.json"
    link.symlink_to(real)
    assert output_path_problem(str(link)) is None
    write_json_atomically(link, {"verdict": "READY"})
    assert link.is_symlink() and link.resolve() == real
    assert json.loads(real.read_text()) == {"verdict": "READY"}
    remove_earlier_output(link)
    assert link.is_symlink() and not real.exists()


@pytest.mark.parametrize("option", ["--output", "--md"])
def test_run_writes_its_report_into_a_pipe(skill: Skill, option: str) -> None:
    pipe = PipeReader(skill.root.parent)
    result = run_cli("run", str(skill.fixture()), option, str(pipe.path), cwd=skill.root)
    assert result.returncode == 0, result.stderr
    received = pipe.received()
    if option == "--output":
        assert json.loads(received)["readiness"] == "READY"
    else:
        assert "READY" in received
    assert stat.S_ISFIFO(pipe.path.lstat().st_mode)


def test_run_writes_its_report_to_dev_stdout_when_stdout_is_a_pipe(skill: Skill) -> None:
    # /dev/stdout is a link to /proc/self/fd/1, which names the pipe only to the kernel:
    # resolved by hand, it led nowhere ("cannot write: No such file or directory").
    result = run_console_script("run", str(skill.fixture()), "--output", "/dev/stdout",
                                cwd=skill.root)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count('"schema": "agentic_evals.report.v2"') == 2  # printed, written


@pytest.mark.parametrize("option", ["--output", "--md"])
@pytest.mark.parametrize("target", ["directory", "under-a-file", "unwritable"])
def test_run_refuses_an_output_it_cannot_write_before_any_trial(
    skill: Skill, option: str, target: str
) -> None:
    marker = skill.root / "ran"
    data = skill_fixture()
    data["cases"][1]["command"] = ["bash", "-c", f"touch {marker}; ../run.sh ''"]
    path = {"directory": str(skill.fixtures), "under-a-file": str(skill.root / "run.sh" / "x"),
            "unwritable": "/proc/nope/report.json"}[target]
    result = run_cli("run", str(skill.write(data)), option, path, cwd=skill.root)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and result.stdout == ""
    lines(result.stderr).fnmatch_lines([f"agentic-evals: {option} {path}: *"])
    assert not marker.exists()


@pytest.mark.parametrize("option", ["--agentic-evals-report", "--agentic-evals-md"])
def test_pytest_refuses_a_report_path_that_is_a_directory(
    pytester: pytest.Pytester, option: str
) -> None:
    marker = pytester.path / "ran"
    data = skill_fixture()
    data["cases"][1]["command"] = ["bash", "-c", f"touch {marker}; ../run.sh ''"]
    make_skill(pytester, data)
    pytester.mkdir("out")
    result = pytester.runpytest("--agentic-evals", option, "out", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{option}: out: is a directory: name a file to write"])
    assert not marker.exists()


# -- a broken neighbour is its own problem -----------------------------------------------------


EARLIER_REGISTRY = {"version": 1, "entries": [{"id": "x"}]}


@pytest.mark.parametrize("neighbour", ["registry", "fixture"])
def test_a_broken_neighbour_does_not_stop_a_good_fixture(
    pytester: pytest.Pytester, neighbour: str
) -> None:
    fixture = make_skill(pytester, skill_fixture())
    if neighbour == "registry":
        broken = fixture.parent / "regressions.json"
        broken.write_text(json.dumps(EARLIER_REGISTRY))
        args = [str(fixture)]  # the registry is collected as the fixture's sibling
    else:
        broken = fixture.parent / "agentic_eval_other.json"
        broken.write_text(json.dumps({"version": 2, "cases": "none"}))
        args = [str(fixture.parent)]
    report = pytester.path / "report.json"
    result = pytester.runpytest("--agentic-evals", "--agentic-evals-report", str(report),
                                "-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # failed for the neighbour's sake
    shown = f"fixtures/{broken.name}"
    result.stdout.fnmatch_lines([f"*{shown}: rejected at load (its problems are above)",
                                 f"FAILED {shown}::rejected - *"])
    result.stdout.no_fnmatch_line("*Interrupted*")
    result.stdout.no_fnmatch_line("*NOT_VERIFIED*")
    judged = json.loads(report.read_text())
    assert judged["readiness"] == "READY" and not judged["interrupted"]


def test_run_of_a_good_fixture_beside_an_earlier_registry_gets_its_verdict(skill: Skill) -> None:
    skill.write(EARLIER_REGISTRY, name="regressions.json")
    result = run_cli("run", str(skill.fixture()), cwd=skill.root)
    assert result.returncode == 1  # the neighbour's problem, named
    lines(result.stderr).fnmatch_lines(["*fixtures/regressions.json: rejected at load*"])
    report = json.loads(result.stdout)
    assert report["readiness"] == "READY" and not report["interrupted"]


def test_a_rejected_fixture_keeps_its_message_in_pytest(pytester: pytest.Pytester) -> None:
    data = copy.deepcopy(skill_fixture())
    _nul_in_argv(data)
    make_skill(pytester, data)
    result = pytester.runpytest("--agentic-evals", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*/cases/0/command/2: contains a NUL byte*"])
    result.stdout.no_fnmatch_line("*ValueError*")


# -- exit codes, and never a stale report ----------------------------------------------------

KILLER = """import os
pid = os.getppid()
while b"pytest" not in open(f"/proc/{pid}/cmdline", "rb").read():
    pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
os.kill(pid, 9)
"""


def test_a_killed_runner_has_its_own_code_and_leaves_no_stale_report(skill: Skill) -> None:
    (skill.root / "killer.py").write_text(KILLER)
    data = skill_fixture()
    data["cases"][0]["command"] = ["bash", "-c", "../run.sh Ada; python3 ../killer.py"]
    output = skill.root / "report.json"
    # an earlier run's report
    output.write_text('{"schema": "agentic_evals.report.v2", "readiness": "READY"}')
    result = run_cli("run", str(skill.write(data)), "--output", str(output), "--sandbox", "off",
                     cwd=skill.root)
    assert result.returncode == 3, result.stderr
    lines(result.stderr).fnmatch_lines([
        "*agentic-evals: the runner failed: pytest was killed by signal 9 without writing a "
        "report (exit status 3)"])
    assert not output.exists()


def test_a_failed_run_replaces_an_earlier_report(skill: Skill) -> None:
    output = skill.root / "report.json"
    output.write_text('{"schema": "agentic_evals.report.v2", "readiness": "READY"}')
    data = skill_fixture()
    data["cases"][1]["expected"]["exit_code"] = 0
    result = run_cli("run", str(skill.write(data)), "--output", str(output), cwd=skill.root)
    assert result.returncode == 1
    assert json.loads(output.read_text())["readiness"] == "USABLE_WITH_GAPS"


def test_run_deselecting_every_case_is_bad_input_that_names_the_cases(skill: Skill) -> None:
    result = run_cli("run", str(skill.fixture()), "--", "-k", "nosuch", cwd=skill.root)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines([
        "agentic-evals: no trial was selected: the pytest arguments after -- deselected every "
        "case (cases: greets, refuses-empty-name)"])


def test_pytest_without_a_fixture_says_what_it_looked_for(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--agentic-evals", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED  # pytest's own code remains
    result.stdout.fnmatch_lines([
        f"agentic-evals: no fixture found: looked for agentic_eval*.json under {pytester.path}"])


# -- what run accepts --------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["skill", "fixtures"])
def test_run_accepts_a_skill_or_a_fixtures_directory(skill: Skill, target: str) -> None:
    skill.fixture()
    folder = skill.root if target == "skill" else skill.fixtures
    result = run_cli("run", str(folder), cwd=skill.root)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["readiness"] == "READY"


def test_run_of_a_directory_without_a_fixture_says_what_it_looked_for(tmp_path: Path) -> None:
    result = run_cli("run", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    lines(result.stderr).fnmatch_lines([
        f"agentic-evals: {tmp_path}: no fixture found (looked for fixtures/agentic_eval*.json "
        "and agentic_eval*.json in it)"])


def test_run_says_that_pytest_options_go_after_the_separator(skill: Skill) -> None:
    result = run_cli("run", str(skill.fixture()), "-n", "4", cwd=skill.root)
    assert result.returncode == 2 and result.stdout == ""
    lines(result.stderr).fnmatch_lines([
        "*unrecognized arguments: -n 4; pytest options go after --: agentic-evals run "
        "FIXTURE... -- -n 4"])


# -- a locale that cannot spell what a command prints ------------------------------------------


@pytest.fixture
def spelled_in_ascii_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands started by the test write to streams that can encode ASCII only, as in a
    locale of another alphabet (the process's encoding, so the console script)."""
    monkeypatch.setenv("PYTHONIOENCODING", "ascii")


def accented_skill(root: Path) -> tuple[Skill, Path]:
    skill = Skill(root / "café-スキル")
    data = skill_fixture(skill="café-スキル")
    data["cases"][0]["command"] = ["../run.sh", "Élodie"]
    data["cases"][0]["expected"]["stdout_contains"] = ["hello, Élodie"]
    return skill, skill.write(data)


def test_a_report_the_locale_cannot_spell_is_printed_whole(
    tmp_path: Path, spelled_in_ascii_only: None
) -> None:
    """The report went to stdout through the locale's encoding: the first character it could
    not spell ended the command with a traceback, and the report (and --output) was lost."""
    skill, fixture = accented_skill(tmp_path)
    output = tmp_path / "report.json"
    result = run_console_script("run", str(fixture), "--output", str(output), cwd=skill.root)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)  # UTF-8, as JSON is
    assert report == json.loads(output.read_text(encoding="utf-8"))
    assert report["skill"] == "café-スキル"


@pytest.mark.parametrize(("form", "shown"), [([], "caf\\xe9-\\u30b9\\u30ad\\u30eb"),
                                             (["--format", "md"], "café-スキル")],
                         ids=["table", "markdown"])
def test_a_summary_the_locale_cannot_spell_is_printed_whole(
    tmp_path: Path, spelled_in_ascii_only: None, form: list[str], shown: str
) -> None:
    """Lines for a person are escaped where the locale cannot spell them; a document
    (Markdown) is written in UTF-8."""
    _, fixture = accented_skill(tmp_path)
    output = tmp_path / "report.json"
    assert run_cli("run", str(fixture), "--output", str(output)).returncode == 0
    result = run_console_script("report", str(output), *form)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    assert shown in result.stdout
    assert "READY" in result.stdout


GROWER = """
if [ -z "${1:-}" ]; then echo "error: name required" >&2; exit 2; fi
echo "hello, $1"
echo '{"greeting": "hello"}' > out.json
truncate -s 15T "$GROW"
"""


@pytest.mark.parametrize("grown", ["stdout", "stderr", "out.json"])
def test_output_a_trial_extends_without_writing_it_is_not_read_for_hours(
    skill: Skill, grown: str
) -> None:
    # 15 TiB in an instant, and no disk: read to the end (to search stdout for what it must
    # not hold, or to hash an expected artifact) it kept the runner busy for about 11 hours.
    # The trial's own stdout and stderr are pipes; only without the sandbox can it reach the
    # files the runner copies them into, by their path.
    (skill.root / "grow.sh").write_text(GROWER)
    data = skill_fixture()
    path = grown if grown == "out.json" else f"$AGENTIC_EVALS_TRIAL_DIR/../output/{grown}"
    data["cases"][0].update(command=["bash", "-c", f'GROW="{path}" bash ../grow.sh Ada'])
    data["cases"][0]["expected"].update(
        stdout_excludes=["Traceback"], stderr_excludes=["Traceback"],
        artifacts=[{"path": "out.json", "min_bytes": 1, "sha256": "0" * 64}])
    result = run_cli("run", str(skill.write(data)), "--sandbox", "off", cwd=skill.root)
    assert result.returncode == 1, result.stderr
    trial = json.loads(result.stdout)["cases"][0]["trials"][0]
    assert trial["outcome"] == "FAIL"
    if grown == "out.json":
        assert trial["problems"] == ["artifacts[0] out.json: sha256: the file was extended "
                                     "without being written (it has holes): not hashed"]
        assert trial["artifact_hashes"] == {}
    else:
        assert f"{grown} was extended without being written" in trial["problems"][0]
        assert trial[grown]["bytes"] < 1024 * 1024


ERASER = """
if [ -z "${1:-}" ]; then echo "error: name required" >&2; exit 2; fi
echo "token=S3CRET-VALUE"; echo "debug: S3CRET-VALUE" >&2
# Then rewrite the evidence: truncate both streams, seek back over them.
: > /proc/self/fd/1; : > /proc/self/fd/2
python3 -c 'import os; os.ftruncate(1, 0)' 2>/dev/null
python3 -c 'import os; os.lseek(2, 0, 0); os.write(2, b"x" * 40)' 2>/dev/null
echo "hello, $1"
exit 0
"""


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_a_skill_cannot_erase_what_it_printed(skill: Skill, sandbox: str) -> None:
    """A skill that prints a secret and then truncates its stdout and stderr (or writes over
    them) is still caught by stdout_excludes and stderr_excludes: its output was a file it
    held, and the fixture was READY."""
    (skill.root / "run.sh").write_text(ERASER)
    data = skill_fixture()
    data["cases"][0]["expected"].update(stdout_excludes=["S3CRET-VALUE"],
                                        stderr_excludes=["S3CRET-VALUE"])
    result = run_cli("run", str(skill.write(data)), "--sandbox", sandbox, cwd=skill.root)
    report = json.loads(result.stdout)
    problems = report["cases"][0]["trials"][0]["problems"]
    assert (result.returncode, report["readiness"]) == (1, "NOT_READY")
    assert problems == ["stdout_excludes: 'S3CRET-VALUE' found in stdout",
                        "stderr_excludes: 'S3CRET-VALUE' found in stderr"], problems


@pytest.mark.parametrize("command", ["scaffold-fixture", "check-skill", "apply-scaffolds",
                                     "audit-skills"])
def test_a_loop_of_links_is_named_not_a_traceback(tmp_path: Path, command: str) -> None:
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    result = run_cli(command, str(tmp_path / "loop1"), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines(result.stderr).fnmatch_lines([f"*{tmp_path / 'loop1'}*"])


def test_a_value_of_a_megabyte_is_not_quoted_whole_in_its_message(skill: Skill) -> None:
    data = skill_fixture()
    data["cases"][0]["name"] = "n" * 1_000_000
    result = run_cli("validate", str(skill.write(data)), cwd=skill.root)
    assert result.returncode == 2
    assert len(result.stderr) < 2000, len(result.stderr)
    lines(result.stderr).fnmatch_lines(['*/cases/0/name: "nnnn*... is too long'])


@pytest.mark.parametrize("command", ["validate", "run", "report", "migrate"])
def test_an_input_that_never_ends_is_refused_not_read_until_memory_runs_out(
    tmp_path: Path, command: str
) -> None:
    endless = tmp_path / "agentic_eval.json"
    endless.symlink_to("/dev/zero")
    result = run_cli(command, str(endless), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines(result.stderr).fnmatch_lines(["*agentic_eval.json*more than 256 MiB, larger than an "
                                        "input may be*"])


@pytest.mark.parametrize("planted", ["file", "link"])
def test_a_runs_directory_someone_planted_is_refused_and_never_followed(
    skill: Skill, tmpdir_of_its_own: Path, tmp_path: Path, planted: str
) -> None:
    # Its name in a shared /tmp is known in advance: a file there ended every run with an
    # INTERNALERROR; a link made runs, pruning and `clean` work in the directory it names.
    root = tmpdir_of_its_own / f"agentic-evals-{os.getuid()}"
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "run-2024-photos").mkdir(parents=True)
    if planted == "file":
        root.write_text("not a directory\n")
    else:
        root.symlink_to(elsewhere)
    fixture = skill.fixture()
    for args in (["run", str(fixture)], ["clean"], ["probe", str(fixture)]):
        result = run_cli(*args, cwd=skill.root)
        assert result.returncode == 2, (args, result.stderr)
        assert "Traceback" not in result.stderr and "INTERNALERROR" not in result.stderr
        lines(result.stderr).fnmatch_lines([f"*{root}*"])
    pytest_run = subprocess.run(
        [sys.executable, "-m", "pytest", "--agentic-evals", "-p", "no:cacheprovider"],
        cwd=skill.root, capture_output=True, text=True, timeout=120, env=child_env())
    assert pytest_run.returncode == pytest.ExitCode.USAGE_ERROR, pytest_run.stdout
    assert f"agentic-evals: {root}" in pytest_run.stderr
    assert (elsewhere / "run-2024-photos").is_dir() and len(list(elsewhere.iterdir())) == 1


@pytest.mark.parametrize("form", ["md", "table"])
def test_a_saved_report_holding_half_a_utf16_pair_is_refused(skill: Skill, form: str) -> None:
    result = run_cli("run", str(skill.fixture()), cwd=skill.root)
    assert result.returncode == 0
    saved = skill.root / "report.json"
    saved.write_text(result.stdout.replace('"greeter"', '"greeter\\udcff"', 1))
    shown = run_cli("report", str(saved), "--format", form, cwd=skill.root)
    assert shown.returncode == 2 and "Traceback" not in shown.stderr, shown.stderr
    lines(shown.stderr).fnmatch_lines(["*report.json: not a JSON report:*",
                                       "*: contains \\udcff, half of a UTF-16 pair*"])


def test_a_skill_in_a_folder_named_in_bytes_that_are_not_utf8_runs_and_is_reported(
    tmp_path: Path,
) -> None:
    # The path is a str with half a UTF-16 pair in it: hashing it, sealing results with it,
    # writing it into a report or pytest's cache each ended in a traceback.
    root = Path(os.fsdecode(os.fsencode(tmp_path) + b"/sk\xffill"))
    skill = Skill(root)
    skill.fixture()
    result = run_cli("run", str(root), "--output", str(tmp_path / "report.json"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["readiness"] == "READY"
    assert "sk?ill" in report["fixture"]  # what UTF-8 cannot hold is written as "?"
    for command in ("audit-skills", "apply-scaffolds"):
        result = run_cli(command, str(tmp_path), cwd=tmp_path)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        json.loads(result.stdout)


def test_regressions_show_reads_the_file_it_is_given_even_when_it_is_not_a_regular_one(
    tmp_path: Path,
) -> None:
    # /dev/null, a pipe, /dev/stdin: "the file itself", not "no regressions.json under ..."
    # with exit 0.
    result = run_cli("regressions", "show", "/dev/null", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    lines(result.stderr).fnmatch_lines(["*/dev/null: (document): invalid JSON*"])


@pytest.mark.parametrize("status", [256, -256, 10**30])
def test_an_exit_status_no_process_can_have_is_refused_at_load(skill: Skill, status: int) -> None:
    data = skill_fixture()
    data["cases"][0]["expected"]["exit_code"] = status
    assert any(p.startswith("/cases/0/expected/exit_code: ") for p in
               problems_of(skill.write(data))), status


def test_migrate_never_calls_a_file_that_does_not_load_in_todays_form(skill: Skill) -> None:
    data = skill_fixture()
    data["cases"] = data["cases"][:1]  # no negative case: refused by the contract
    fixture = skill.write(data)
    result = run_cli("migrate", str(fixture), cwd=skill.root)
    assert result.returncode == 2, result.stderr
    assert "already in today's form" not in result.stderr
    lines(result.stderr).fnmatch_lines([
        "*agentic_eval.json: nothing to rewrite, but it does not load today; fix it by hand*",
        "*no negative or adversarial case*"])


@pytest.mark.parametrize("command", [["regressions", "audit"], ["audit-skills"],
                                     ["coverage", "audit"]])
def test_a_tree_of_any_depth_is_walked(tmp_path: Path, command: list[str]) -> None:
    deep = tmp_path
    for _ in range(1200):  # deeper than Python recurses (pathlib's mkdir itself would not do)
        deep = deep / "a"
        deep.mkdir()
    try:
        done = run_cli(*command, str(tmp_path))
    finally:  # bottom up: shutil.rmtree, which pytest cleans its temporary folders with, recurses
        while deep != tmp_path:
            deep.rmdir()
            deep = deep.parent
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode in (0, 1, 2), done.stderr


@pytest.mark.parametrize(("arguments", "named"), [
    (["run", "{fixture}", "--only-category", ""], "--only-category"),
    (["run", "{fixture}", "--output", ""], "-o/--output"),
    (["run", "{fixture}", "--md", ""], "--md"),
    (["probe", "{fixture}", "--case", ""], "--case"),
    (["audit-skills", ""], "ROOT"),
])
def test_an_empty_value_is_refused_not_taken_for_none(
    skill: Skill, arguments: list[str], named: str
) -> None:
    """`--only-category ''` ran every case and said READY; `-o ''` wrote no file."""
    fixture = str(skill.write(skill_fixture()))
    done = run_cli(*(word.replace("{fixture}", fixture) for word in arguments))
    assert done.returncode == 2, done.stderr
    assert f"argument {named}: expected a value, got an empty string" in done.stderr
    assert done.stdout == ""


def test_an_empty_value_after_the_separator_is_pytests(skill: Skill) -> None:
    done = run_cli("run", str(skill.write(skill_fixture())), "--", "-k", "")
    assert done.returncode == 0, done.stderr


def test_a_trailing_newline_is_no_part_of_a_name(skill: Skill) -> None:
    """Python's `$` also matches before a final newline: `name-dropped\\n` went through as a
    regression id (then named nothing `--regression` could select), `slow\\n` as a tag."""
    from pytest_agentic_evals.regressions.registry import registry_from_data

    tagged = skill_fixture()
    tagged["cases"][0]["tags"] = ["slow\n"]
    assert any("/cases/0/tags/0" in problem for problem in problems_of(skill.write(tagged)))
    registry = {"schema": "agentic_evals.regressions.v1", "skill": "greeter", "regressions": [
        {"regression_id": "name-dropped\n", "incident": {"incident_id": "inc-1",
                                                         "date": "2026-01-10"},
         "retained_case": "greets"}]}
    with pytest.raises(RegistryError) as caught:
        registry_from_data(registry, skill.fixtures / "regressions.json")
    assert "/regressions/0/regression_id" in str(caught.value.problems), caught.value.problems
