"""Settings resolved once: each from the command line, the ini file or its default, with its
source; a bad value is a usage error that names where it came from. Through real pytest
configurations (``pytester.parseconfig``), no session run."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from pytest_agentic_evals.model import ALLOW_EXEMPT_PYTEST, ALLOW_EXEMPT_RUN
from pytest_agentic_evals.pytest_plugin.settings import (
    DEFAULT,
    OPTION,
    OPTIONS,
    add_run_options,
    plugin_arguments,
    resolve_settings,
)

# setting -> (its text on the command line or in the ini file, the value it resolves to)
SET = {
    "enabled": (None, True),
    "report": ("out/report.json", "out/report.json"),
    "report_unannounced": (None, True),
    "report_only": (None, True),
    "allow_exempt": (None, True),
    "trials": ("3", 3),
    "timeout": ("2.5", 2.5),
    "markdown": ("summary.md", "summary.md"),
    "cases": ("greets", ("greets",)),
    "keep_workspaces": (None, True),
    "files": ("evals-*.json my-*.json", ("evals-*.json", "my-*.json")),
    "sandbox": ("required", "required"),
    "probe": (None, True),
    "hide": ("out/report.json", ("out/report.json",)),
    "stop_on_fail": (None, True),
    "durations": ("last", "last"),
    "from_run": (None, True),
    "run_options": ("trials", ("trials",)),
}
DEFAULTS = {
    "enabled": False, "files": ("agentic_eval*.json",), "report": None,
    "report_unannounced": False, "report_only": False, "allow_exempt": False, "trials": None,
    "timeout": None,
    "markdown": None, "cases": (), "keep_workspaces": False, "sandbox": "auto", "hide": (),
    "stop_on_fail": False, "durations": None,
    "probe": False, "from_run": False, "run_options": (),
}
ON_COMMAND_LINE = [option for option in OPTIONS if option.flag]
IN_INI = [option for option in OPTIONS if option.ini]


def ini_text(name: str, text: str | None) -> str:
    return f"[pytest]\n{name} = {'true' if text is None else text}\n"


@pytest.mark.parametrize("option", ON_COMMAND_LINE, ids=lambda option: option.flag)
def test_a_setting_from_the_command_line(pytester: pytest.Pytester, option: Any) -> None:
    text, value = SET[option.name]
    config = pytester.parseconfig(option.flag, *([] if text is None else [text]))
    settings = resolve_settings(config)
    assert getattr(settings, option.name) == value
    assert settings.source(option.name) == option.flag


@pytest.mark.parametrize("option", IN_INI, ids=lambda option: option.ini)
def test_a_setting_from_the_ini_file(pytester: pytest.Pytester, option: Any) -> None:
    text, value = SET[option.name]
    pytester.makeini(ini_text(option.ini, text))
    settings = resolve_settings(pytester.parseconfig())
    assert getattr(settings, option.name) == value
    assert settings.source(option.name) == f"ini {option.ini}"


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_a_setting_nobody_set_is_its_default(pytester: pytest.Pytester, name: str) -> None:
    settings = resolve_settings(pytester.parseconfig())
    assert getattr(settings, name) == DEFAULTS[name]
    assert settings.source(name) == DEFAULT


def test_every_setting_has_a_default_here() -> None:
    # The tests above cover each setting; a new one must join them.
    assert {option.name for option in OPTIONS} == set(DEFAULTS) == set(SET)


def test_the_command_line_wins_over_the_ini_file(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nagentic_evals_trials = 5\n")
    settings = resolve_settings(pytester.parseconfig("--agentic-evals-trials", "3"))
    assert settings.trials == 3
    assert settings.source("trials") == "--agentic-evals-trials"


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (["--agentic-evals-trials", "many"], None,
         "--agentic-evals-trials: 'many' is not a valid int"),
        (["--agentic-evals-trials", "0"], None, "--agentic-evals-trials: '0' must be at least 1"),
        ([], "agentic_evals_trials = 2.5",
         "ini agentic_evals_trials: '2.5' is not a valid int"),
        (["--agentic-evals-timeout", "soon"], None,
         "--agentic-evals-timeout: 'soon' is not a valid float"),
        ([], "agentic_evals_timeout = 0",
         "ini agentic_evals_timeout: '0' must be at least 0.001"),
        (["--agentic-evals-sandbox", "sometimes"], None,
         "--agentic-evals-sandbox: 'sometimes' is not one of auto, required, off"),
        ([], "agentic_evals_sandbox = maybe",
         "ini agentic_evals_sandbox: 'maybe' is not one of auto, required, off"),
    ],
    ids=["trials-word", "trials-zero", "trials-ini-fraction", "timeout-word", "timeout-ini-zero",
         "sandbox-word", "sandbox-ini-word"],
)
def test_a_bad_value_names_its_source(
    pytester: pytest.Pytester, args: list[str], ini: str | None, message: str
) -> None:
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    config = pytester.parseconfig(*args)
    with pytest.raises(pytest.UsageError) as raised:
        resolve_settings(config)
    assert str(raised.value) == message


def test_a_bad_value_in_the_ini_file_of_a_session_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\nagentic_evals = true\nagentic_evals_trials = many\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini agentic_evals_trials: 'many' is not a valid int*"])


def test_settings_of_a_plugin_that_is_off_are_not_checked(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nagentic_evals_trials = many\n")
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK


# -- the options `agentic-evals run` shares with the plugin ------------------------------------

RUN_SPELLINGS = {
    "report_only": ["--report-only"],
    "allow_exempt": ["--allow-exempt"],
    "trials": ["--trials", "3"],
    "timeout": ["--timeout", "2.5"],
    "markdown": ["--md", "summary.md"],
    "cases": ["--case", "greets", "--case", "refuses-empty-name"],
    "keep_workspaces": ["--keep-workspaces"],
    "sandbox": ["--sandbox", "required"],
    "stop_on_fail": ["--stop-on-fail"],
    "durations": ["--durations", "earlier-report.json"],
}


def run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentic-evals run", exit_on_error=False)
    add_run_options(parser)
    return parser


def test_the_core_names_the_exemption_options_as_they_are_spelled() -> None:
    """The contract's refusal names the options that grant an exemption, without loading the
    pytest layer: its spellings are these."""
    option = OPTION["allow_exempt"]
    assert (option.run_flag, option.flag) == (ALLOW_EXEMPT_RUN, ALLOW_EXEMPT_PYTEST)


def test_every_shared_option_is_spelled_here() -> None:
    assert {option.name for option in OPTIONS if option.run_flag} == set(RUN_SPELLINGS)


@pytest.mark.parametrize("name", sorted(RUN_SPELLINGS))
def test_a_run_option_reaches_the_plugin_as_the_same_setting(
    pytester: pytest.Pytester, name: str
) -> None:
    values = vars(run_parser().parse_args(RUN_SPELLINGS[name]))
    settings = resolve_settings(pytester.parseconfig(*plugin_arguments(values)))
    expected = {"report_only": True, "allow_exempt": True, "trials": 3, "timeout": 2.5,
                "markdown": "summary.md",
                "cases": ("greets", "refuses-empty-name"), "keep_workspaces": True,
                "sandbox": "required", "stop_on_fail": True,
                "durations": "earlier-report.json"}[name]
    assert getattr(settings, name) == expected
    # ... and nothing else: every other setting keeps its default.
    assert [other for other in DEFAULTS if other != name
            and settings.source(other) != DEFAULT] == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--trials", "many"], "'many' is not a valid int"),
     (["--timeout", "0"], "'0' must be at least 0.001")],
    ids=["trials", "timeout"],
)
def test_a_bad_run_option_is_refused_with_the_plugins_message(
    argv: list[str], message: str
) -> None:
    with pytest.raises(argparse.ArgumentError) as raised:
        run_parser().parse_args(argv)
    # --timeout-seconds is the earlier tool's spelling of --timeout
    flags = "--timeout/--timeout-seconds" if argv[0] == "--timeout" else argv[0]
    assert str(raised.value) == f"argument {flags}: {message}"


def test_values_that_are_not_settings_are_not_passed_on() -> None:
    assert plugin_arguments({"fixtures": ["a.json"], "output": "r.json", "trials": None}) == []


@pytest.mark.parametrize("name", sorted(RUN_SPELLINGS))
def test_a_session_of_run_names_each_setting_as_run_spells_it(
    pytester: pytest.Pytester, name: str
) -> None:
    values = vars(run_parser().parse_args(RUN_SPELLINGS[name]))
    settings = resolve_settings(pytester.parseconfig(*plugin_arguments(values, [])))
    assert settings.source(name) == RUN_SPELLINGS[name][0]
    assert settings.spelling(name) == RUN_SPELLINGS[name][0]
    # The plugin's own options, which run does not have, keep their names.
    assert settings.spelling("probe") == "--agentic-evals-probe"


def test_a_plugin_option_given_after_the_separator_keeps_its_name(
    pytester: pytest.Pytester,
) -> None:
    typed = ["--agentic-evals-timeout=9", "--agentic-evals-sandbox", "off"]
    values = vars(run_parser().parse_args(["--trials", "3", "--timeout", "2.5"]))
    settings = resolve_settings(pytester.parseconfig(*plugin_arguments(values, typed), *typed))
    assert (settings.trials, settings.timeout, settings.sandbox) == (3, 9.0, "off")
    assert settings.source("trials") == "--trials"
    assert settings.source("timeout") == "--agentic-evals-timeout"
    assert settings.source("sandbox") == "--agentic-evals-sandbox"
