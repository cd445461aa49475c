"""Attacks on the gate from pytest's side: a skill's own conftest.py and config files, rerun,
repeat and random-order plugins, skip and xfail markers, report hooks that rewrite verdicts,
several skills in one run, and pytest's cache options (--lf, --ff, --sw).

Each attack ends not READY and non-zero (or exit 2 naming the plugin), through the real CLI
and through real pytest sessions, serially and under xdist; the same skill without the attack
keeps its honest verdict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.verdicts import rewritten

from conftest import MODES, Skill, make_skill, run_cli, skill_fixture


def run_pytest(pytester: pytest.Pytester, mode: list[str], *args: str) -> pytest.RunResult:
    argv = ["--agentic-evals", "--agentic-evals-report", "report.json", "-p", "no:randomly",
            *mode, *args]
    return pytester.runpytest(*argv)


def read_report(pytester: pytest.Pytester) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((pytester.path / "report.json").read_text())
    return report


def verdicts(report: dict[str, Any]) -> dict[str, Any]:
    """What the gate decides: readiness and every case's and trial's outcome (by number)."""
    return {
        "readiness": report["readiness"],
        "cases": {case["name"]: (case["outcome"],
                                 sorted(trial["outcome"] for trial in case["trials"]))
                  for case in report["cases"]},
    }


def with_broken_case() -> dict[str, Any]:
    """The greeter's fixture with a required case that fails every trial."""
    data = skill_fixture()
    data["cases"].append({"name": "broken", "type": "positive",
                          "command": ["bash", "../run.sh", "Bob"],
                          "expected": {"exit_code": 0, "stdout_contains": ["goodbye"]}})
    return data


CHEATING_CONFTEST = """
import pytest

def pytest_agentic_evals_modify_report(report, config):
    report["readiness"] = "READY"

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    session.exitstatus = 0

@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_sessionfinish(session):
    yield
    session.exitstatus = 0

@pytest.hookimpl(hookwrapper=True)
def pytest_unconfigure(config):
    yield
    session = config.pluginmanager.get_plugin("session")
    if session is not None:
        session.exitstatus = 0
"""

CONFIG_FILES = {
    "pytest.ini": '[pytest]\naddopts = -k "not broken"\n',
    "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-k \'not broken\'"\n',
    "tox.ini": '[pytest]\naddopts = -k "not broken"\n',
    "setup.cfg": '[tool:pytest]\naddopts = -k "not broken"\n',
}


# -- attacks 1 and 2: what the skill ships does not configure agentic-evals run ---------------


@pytest.mark.parametrize("config_file", sorted(CONFIG_FILES))
def test_run_loads_nothing_the_skill_ships(skill: Skill, config_file: str) -> None:
    path = skill.write(with_broken_case())
    (skill.fixtures / "conftest.py").write_text(CHEATING_CONFTEST)
    (skill.root / "conftest.py").write_text(CHEATING_CONFTEST)
    (skill.root / config_file).write_text(CONFIG_FILES[config_file])
    result = run_cli("run", str(path), cwd=skill.root)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["readiness"] == "USABLE_WITH_GAPS"
    assert report["selection"] == "full"  # -k "not broken" was not read
    assert verdicts(report)["cases"]["broken"] == ("FAIL", ["FAIL", "FAIL"])
    # The same skill without the failing case: its honest READY, exit 0.
    result = run_cli("run", str(skill.write(skill_fixture())), cwd=skill.root)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["readiness"] == "READY"


# A module of the standard library, shadowed: imported, it notes which process imported it,
# then hands over to the real module, so that a run that imports it goes on as usual.
SHADOWING_MODULE = """
import os, sys
with open({marker!r}, "a") as marker:
    marker.write(" ".join(sys.argv) + "\\n")
here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
del sys.modules[__name__]
saved = list(sys.path)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
import json as real
sys.path[:] = saved
sys.modules[__name__] = real
"""


@pytest.mark.parametrize("mode", MODES)
def test_run_imports_nothing_from_the_directory_it_is_started_in(
    tmp_path: Path, mode: list[str]
) -> None:
    """A skill folder is a Python package when it holds an __init__.py, and its name is the
    skill's to choose: `json`, next to the directory `agentic-evals run` is started in, must
    not be the runner's json (or anything else the runner, or its xdist workers, import)."""
    marker = tmp_path / "imported-by.txt"
    skill = Skill(tmp_path / "json")
    (skill.root / "__init__.py").write_text(SHADOWING_MODULE.format(marker=str(marker)))
    path = skill.write(skill_fixture())
    result = run_cli("run", str(path.relative_to(tmp_path)), "--", *mode, cwd=tmp_path)
    assert not marker.exists(), marker.read_text()
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["readiness"] == "READY"


@pytest.mark.parametrize("mode", MODES)
def test_the_gate_exit_status_is_applied_after_every_other_plugin(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_skill(pytester, with_broken_case())
    pytester.makeconftest(CHEATING_CONFTEST.replace(
        'report["readiness"] = "READY"', 'report["note"] = "annotated"'))
    result = run_pytest(pytester, mode)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert read_report(pytester)["note"] == "annotated"


@pytest.mark.parametrize(("mode", "status"), [
    pytest.param([], "0", id="serial-0"),
    pytest.param([], "256", id="serial-256"),  # the shell sees 0: only the low byte reaches it
    pytest.param([], "-256", id="serial-minus-256"),
    pytest.param([], "None", id="serial-None"),  # sys.exit(None) ends with 0
    pytest.param(["-n", "2"], "256", id="xdist-256"),
])
def test_no_exit_status_a_plugin_sets_turns_a_failing_gate_into_success(
    pytester: pytest.Pytester, mode: list[str], status: str
) -> None:
    make_skill(pytester, with_broken_case())
    pytester.makeconftest(f"""
import pytest

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    session.exitstatus = {status}
""")
    result = run_pytest(pytester, mode)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert read_report(pytester)["readiness"] == "USABLE_WITH_GAPS"


@pytest.mark.parametrize("part", ["agentic-evals-controller", "agentic-evals-worker",
                                  "agentic-evals-builtin-kinds", "agentic-evals-xdist"])
@pytest.mark.parametrize("mode", MODES)
def test_blocking_a_part_of_the_plugin_is_refused(
    pytester: pytest.Pytester, mode: list[str], part: str
) -> None:
    # -p no:NAME drops the registration of a plugin of that name without a word: blocking the
    # controller ended a failing session green, with no verdict printed.
    make_skill(pytester, with_broken_case())
    result = run_pytest(pytester, mode, "-p", f"no:{part}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([f"*-p no:{part}: {part} is a part of agentic-evals*"])
    assert not (pytester.path / "report.json").exists()


def test_turning_the_whole_plugin_off_still_works(pytester: pytest.Pytester) -> None:
    make_skill(pytester, with_broken_case())
    pytester.makepyfile(test_ordinary="def test_ordinary():\n    pass\n")
    result = pytester.runpytest("-p", "no:agentic_evals", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=1)


def test_a_session_whose_workers_stop_early_is_never_judged_whole(
    pytester: pytest.Pytester,
) -> None:
    # A conftest stops each worker after its first test: the workers end before they send
    # what they selected, and the trials they never ran were taken for unselected.
    make_skill(pytester, skill_fixture())
    pytester.makeconftest("""
import pytest

def pytest_runtest_logreport(report):
    if report.when == "teardown":
        pytest.exit("time budget exhausted, stopping cleanly", returncode=0)
""")
    result = run_pytest(pytester, ["-n", "2"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["*ended before saying which trials were selected*"])


def test_workers_killed_after_collection_leave_a_failed_session(
    pytester: pytest.Pytester,
) -> None:
    # As the kernel's OOM killer would: every worker dies once it has collected.
    make_skill(pytester, with_broken_case())
    pytester.makeconftest("""
import os, signal, pytest

@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    if hasattr(session.config, "workerinput"):
        os.kill(os.getpid(), signal.SIGKILL)
""")
    result = run_pytest(pytester, ["-n", "2", "--max-worker-restart=0"])
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), \
        result.stdout.str()
    # A worker killed after xdist handed it trials is reported by xdist as crashed while
    # running the first of them (a FAIL); one killed before, by the plugin.
    result.stdout.re_match_lines([r".*(collected, but no trial of it was run or reported"
                                  r"|crashed while running).*"])
    result.stdout.no_fnmatch_line("*no fixture found*")


RESULT_REWRITERS = {
    "makereport": """
import pytest

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    result = getattr(report, "agentic_evals", None)
    if result is not None and result.get("outcome") != "PASS":
        result["outcome"] = "PASS"
        result["problems"] = []
        report.outcome = "passed"
        report.longrepr = None
    return report
""",
    "runtest-call": """
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        return (yield)
    except Exception:
        result = getattr(item, "agentic_result", None)
        if result is not None:
            result["outcome"] = "PASS"
            result["problems"] = []
        return None
""",
}


@pytest.mark.parametrize("hook", sorted(RESULT_REWRITERS))
@pytest.mark.parametrize("mode", MODES)
def test_a_hook_that_rewrites_a_trials_result_is_refused(
    pytester: pytest.Pytester, mode: list[str], hook: str
) -> None:
    make_skill(pytester, with_broken_case())
    pytester.makeconftest(RESULT_REWRITERS[hook])
    result = run_pytest(pytester, mode)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()  # exit 2, refused
    result.stdout.fnmatch_lines(["*broken*its result was changed after the trial ended*"])
    report = read_report(pytester)
    assert report["readiness"] != "READY"
    assert verdicts(report)["cases"]["broken"][0] == "FAIL"


# -- report hooks: keys may be added, verdicts never changed ----------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", ["conftest.py", "fixtures/conftest.py"])
def test_a_report_hook_that_rewrites_a_verdict_is_refused(
    pytester: pytest.Pytester, mode: list[str], where: str
) -> None:
    make_skill(pytester, with_broken_case())
    (pytester.path / where).write_text(
        "def pytest_agentic_evals_modify_report(report, config):\n"
        "    report['ci_build'] = '1234'\n"
        "    report['readiness'] = 'READY'\n"
        "    report['cases'][-1]['outcome'] = 'PASS'\n"
    )
    result = run_pytest(pytester, mode)
    assert result.ret == 2, result.stdout.str()
    result.stdout.fnmatch_lines([
        "*a hook may add to the report, never change what the runner wrote*",
        f"*{pytester.path / where} changed /readiness, /cases/2/outcome*",
    ])
    report = read_report(pytester)  # what is written is the runner's report
    assert report["readiness"] == "USABLE_WITH_GAPS"
    assert "ci_build" not in report
    assert verdicts(report)["cases"]["broken"][0] == "FAIL"


@pytest.mark.parametrize("mode", MODES)
def test_a_report_hook_that_rewrites_a_trial_in_place_is_refused(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    # The report's trials are the very results the controller keeps (nothing is copied when
    # there is no secret to redact): a change made to them in place is undone all the same.
    make_skill(pytester, with_broken_case())
    (pytester.path / "conftest.py").write_text(
        "def pytest_agentic_evals_modify_report(report, config):\n"
        "    for trial in report['cases'][-1]['trials']:\n"
        "        trial['outcome'] = 'PASS'\n"
        "        trial['problems'].clear()\n"
    )
    result = run_pytest(pytester, mode)
    assert result.ret == 2, result.stdout.str()
    result.stdout.fnmatch_lines(["*changed /cases/2/trials/0/outcome*"])
    trials = read_report(pytester)["cases"][-1]["trials"]
    assert trials and all(t["outcome"] == "FAIL" and t["problems"] for t in trials)


def test_rewritten_names_changes_and_removals_never_additions() -> None:
    before = {"readiness": "NOT_READY", "n": 1, "ok": False,
              "cases": [{"name": "a", "outcome": "FAIL"}, {"name": "b", "outcome": "PASS"}]}
    added = json.loads(json.dumps(before))
    added["note"] = "x"
    added["cases"][0]["ticket"] = "T-1"
    assert rewritten(before, added) == []
    assert rewritten(before, {**before, "readiness": "READY"}) == ["/readiness"]
    assert rewritten(before, {**before, "n": 1.0, "ok": 0}) == ["/n", "/ok"]
    assert rewritten(before, {k: v for k, v in before.items() if k != "n"}) == ["/n"]
    assert rewritten(before, {**before, "cases": before["cases"][::-1]}) == \
        ["/cases/0/name", "/cases/0/outcome", "/cases/1/name", "/cases/1/outcome"]
    assert rewritten(before, {**before, "cases": before["cases"][:1]}) == ["/cases"]
    assert rewritten({"a/b": {"c~": 1}}, {"a/b": {"c~": 2}}) == ["/a~1b/c~0"]


@pytest.mark.parametrize("mode", MODES)
def test_a_report_hook_in_a_subfolder_conftest_may_add_keys(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_skill(pytester, skill_fixture())
    (pytester.path / "fixtures" / "conftest.py").write_text(
        "def pytest_agentic_evals_modify_report(report, config):\n"
        "    report['ci_build'] = '1234'\n"
        "    report['cases'][0]['ticket'] = 'T-1'\n"
    )
    result = run_pytest(pytester, mode)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    report = read_report(pytester)
    assert report["ci_build"] == "1234"
    assert report["cases"][0]["ticket"] == "T-1"
    assert report["readiness"] == "READY"


# -- attack 3: reruns, repeats and random order ---------------------------------------------


def every_other_trial_fails(attempts: Path) -> dict[str, Any]:
    """A fixture whose real-world case fails the first attempt of every even trial and passes
    any later attempt of it (a file per trial outside the workspace; the sandbox is off): a
    rerun would turn it green."""
    script = (f"f={attempts}/trial-$AGENTIC_EVALS_TRIAL; if [ ! -e $f ]; then touch $f; "
              "if [ $((AGENTIC_EVALS_TRIAL % 2)) = 0 ]; then exit 1; fi; fi; ../run.sh Ada")
    data = skill_fixture(trials=4)
    data["cases"][0]["command"] = ["bash", "-c", script]
    return data


@pytest.mark.parametrize("mode", MODES)
def test_rerun_repeat_and_random_order_plugins_do_not_change_verdicts(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    attempts = pytester.mkdir("attempts")
    make_skill(pytester, every_other_trial_fails(attempts))
    off = ("--agentic-evals-sandbox", "off")

    def judged(*args: str) -> dict[str, Any]:
        for seen in attempts.iterdir():
            seen.unlink()
        result = run_pytest(pytester, mode, *off, *args)
        assert result.ret == pytest.ExitCode.TESTS_FAILED, (args, result.stdout.str())
        assert "rerun" not in result.stdout.lines[-1], args
        return verdicts(read_report(pytester))

    honest = judged("-p", "no:rerunfailures", "-p", "no:repeat")
    assert honest == {"readiness": "NOT_READY", "cases": {
        "greets": ("FAIL", ["FAIL", "FAIL", "PASS", "PASS"]),
        "refuses-empty-name": ("PASS", ["PASS"] * 4)}}
    assert judged("--reruns", "2") == honest
    assert judged("--count", "3") == honest
    assert judged("-p", "randomly") == honest
    pytester.makeini("[pytest]\nreruns = 1\n")
    assert judged() == honest


def test_reruns_through_the_cli(skill: Skill, tmp_path: Path) -> None:
    path = skill.write(every_other_trial_fails(tmp_path))
    result = run_cli("run", str(path), "--sandbox", "off", "--", "--reruns", "3",
                     cwd=skill.root)
    assert result.returncode == 1, result.stderr
    assert verdicts(json.loads(result.stdout))["cases"]["greets"][0] == "FAIL"


# -- attack 4: tags are not pytest's markers; skip and xfail make a trial NOT_TESTED ---------


@pytest.mark.parametrize("tag", ["flaky", "skip", "xfail", "timeout", "parametrize"])
def test_a_tag_named_like_a_pytest_marker_is_refused(skill: Skill, tag: str) -> None:
    data = skill_fixture()
    data["cases"][0]["tags"] = ["smoke", tag]
    result = run_cli("validate", str(skill.write(data)), cwd=skill.root)
    assert result.returncode == 2
    assert f"/cases/0/tags/1: tag {tag!r} is the name of a pytest marker" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("mode", MODES)
def test_skip_and_xfail_applied_by_a_conftest_make_trials_not_tested(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_skill(pytester, with_broken_case())
    pytester.makeconftest(
        "import pytest\n\n"
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        if 'broken' in item.nodeid:\n"
        "            item.add_marker(pytest.mark.xfail(reason='known'))\n"
        "        if 'refuses' in item.nodeid:\n"
        "            item.add_marker(pytest.mark.skip(reason='later'))\n"
    )
    result = run_pytest(pytester, mode)
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    report = read_report(pytester)
    assert verdicts(report)["cases"]["broken"][0] == "NOT_TESTED"
    assert verdicts(report)["cases"]["refuses-empty-name"][0] == "NOT_TESTED"
    assert verdicts(report)["cases"]["greets"][0] == "PASS"
    assert report["readiness"] != "READY"


SECOND_ATTEMPT_PASSES = """
import copy

CONFIG = []

def pytest_configure(config):
    CONFIG.append(config)

def pytest_runtest_logreport(report):
    # Another attempt of every trial, reported as a pass after the real one.
    result = getattr(report, "agentic_evals", None)
    if report.when != "call" or result is None or getattr(report, "again", False):
        return
    again = copy.copy(report)
    again.again = True
    again.outcome = "passed"
    again.agentic_evals = {**result, "outcome": "PASS", "problems": []}
    CONFIG[0].hook.pytest_runtest_logreport(report=again)
"""


def test_a_later_passing_attempt_never_replaces_a_trial_that_did_not_pass(
    pytester: pytest.Pytester,
) -> None:
    data = with_broken_case()
    data["cases"].append({"name": "stubbed", "type": "positive",
                          "command": ["bash", "../run.sh", "Cy"],
                          "blocked_when_stdout_contains": ["hello, Cy"],
                          "expected": {"exit_code": 0}})
    make_skill(pytester, data)
    pytester.makeconftest(SECOND_ATTEMPT_PASSES)
    result = run_pytest(pytester, [])
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    cases = verdicts(read_report(pytester))["cases"]
    assert cases["broken"] == ("FAIL", ["FAIL", "FAIL"])
    assert cases["stubbed"] == ("BLOCKED", ["BLOCKED", "BLOCKED"])
    assert cases["greets"] == ("PASS", ["PASS", "PASS"])


# -- attack 8: skills with config files of their own, several in one run ---------------------


def test_several_skills_each_with_a_config_file_keep_their_names(tmp_path: Path) -> None:
    paths = []
    for name, config in zip("abc", ("pyproject.toml", "setup.cfg", "tox.ini"), strict=True):
        skill = Skill(tmp_path / name)
        data = with_broken_case() if name == "b" else skill_fixture()
        data["skill"] = f"skill-{name}"
        paths.append(str(skill.write(data).relative_to(tmp_path)))
        (skill.root / config).write_text(CONFIG_FILES[config])
    result = run_cli("run", *paths, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    readiness = {fixture["skill"]: fixture["readiness"] for fixture in report["fixtures"]}
    assert readiness == {"skill-a": "READY", "skill-b": "USABLE_WITH_GAPS", "skill-c": "READY"}
    assert "b/fixtures/agentic_eval.json" in result.stderr


# -- --lf, --ff, --sw and node ids ---------------------------------------------------------


def test_last_failed_failed_first_and_stepwise_give_partial_runs(
    pytester: pytest.Pytester,
) -> None:
    make_skill(pytester, with_broken_case())

    def run(*args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
        result = pytester.runpytest("--agentic-evals", "--agentic-evals-report", "report.json",
                                    "-p", "no:randomly", *args)
        return result, read_report(pytester)

    result, report = run()
    result.assert_outcomes(passed=4, failed=2)
    result, report = run("--lf")
    result.assert_outcomes(failed=2)
    assert report["selection"] == "partial"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result, _ = run("--ff", "-x")
    result.assert_outcomes(failed=1)
    result, report = run("--sw")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert report["interrupted"] is False
    result, report = run("fixtures/agentic_eval.json::greets[trial-2]")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    assert report["selection"] == "partial"


def test_last_failed_through_the_cli(skill: Skill) -> None:
    path = str(skill.write(with_broken_case()))
    first = run_cli("run", path, cwd=skill.root)
    assert first.returncode == 1
    again = run_cli("run", path, "--", "--lf", cwd=skill.root)
    assert again.returncode == 1, again.stderr
    report = json.loads(again.stdout)
    assert report["selection"] == "partial"
    assert [case["ran_trials"] for case in report["cases"]] == [0, 0, 2]


# -- skills in agents' dot-folders; fixtures that norecursedirs hides ------------------------


@pytest.mark.parametrize("mode", MODES)
def test_skills_in_agent_dot_folders_are_collected_and_hidden_fixtures_named(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    for where in (".claude/skills/a", ".agents/skills/b", ".codex/skills/c"):
        Skill(pytester.path / where).fixture()
    Skill(pytester.path / "build" / "d").write(with_broken_case())
    Skill(pytester.path / ".cache" / "e").write(with_broken_case())  # no skills folder
    result = run_pytest(pytester, mode)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=12)
    report = read_report(pytester)
    assert sorted(fixture["fixture"].split("/")[0] for fixture in report["fixtures"]) == \
        [".agents", ".claude", ".codex"]
    result.stdout.fnmatch_lines([
        "*agentic-evals: 2 fixture(s) not collected: pytest's norecursedirs skips their folder*",
        "*  .cache/e/fixtures/agentic_eval.json",
        "*  build/d/fixtures/agentic_eval.json",
    ])
