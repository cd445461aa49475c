"""The plugin's settings: every option and ini value, resolved once per session, with its source.

A command-line option wins over its ini value, which wins over the default. Each value is
validated where it is resolved, and a bad one is a usage error that names where it came from
(``--agentic-evals-trials: 'many' is not a valid int``), as pytest-timeout does.

The option table is shared with ``agentic-evals run``: an option that both offer is defined
once here, with its spelling on each side, and ``plugin_arguments`` turns the command's values
into the plugin's command line. This module loads nothing of the core: the plugin's entry
module reads it in every pytest session, also when the plugin is off.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

import pytest

DEFAULT = "default"  # the source of a value that neither the command line nor the ini set


MAX_TRIALS = 10_000  # the fixture schema's own bound on "trials"
MAX_TIMEOUT = 86_400.0  # seconds: a day, the fixture schema's bound on "timeout_seconds"


def _number(kind: type[int] | type[float], minimum: float, maximum: float) -> Callable[[str], Any]:
    """A converter of option text to a finite number from ``minimum`` to ``maximum``;
    ValueError says why."""

    def convert(raw: str) -> Any:
        try:
            value = kind(raw)
        except ValueError:
            raise ValueError(f"{raw!r} is not a valid {kind.__name__}") from None
        if not math.isfinite(value):
            raise ValueError(f"{raw!r} is not a finite number")
        if value < minimum:
            raise ValueError(f"{raw!r} must be at least {minimum:g}")
        if value > maximum:
            raise ValueError(f"{raw!r} must be at most {maximum:g}")
        return value

    return convert


trial_count = _number(int, 1, MAX_TRIALS)
trial_timeout = _number(float, 0.001, MAX_TIMEOUT)


# model.SANDBOX_MODES, written out here so that this module loads nothing of the core (a test
# keeps the two equal).
SANDBOX_MODES = ("auto", "required", "off")


def sandbox_mode(raw: str) -> str:
    if raw not in SANDBOX_MODES:
        raise ValueError(f"{raw!r} is not one of {', '.join(SANDBOX_MODES)}")
    return raw


@dataclass(frozen=True)
class Option:
    """One setting: its pytest option, its ini value, and its option of ``agentic-evals run``."""

    name: str  # the Settings field it sets, and its destination in ``agentic-evals run``
    help: str
    flag: str | None = None  # the pytest option; None: set by the ini file only
    run_flag: str | None = None  # the same option of ``agentic-evals run``; None: pytest only
    ini: str | None = None  # the ini value; None: set on the command line only
    ini_type: Literal["string", "bool", "args"] = "string"  # args: a list of words
    ini_help: str = ""
    action: str = "store"  # "store", "store_true" or "append"
    metavar: str | None = None
    convert: Callable[[str], Any] | None = None  # validates a text value; ValueError says why
    default: Any = None
    hidden: bool = False  # an option between ``agentic-evals run`` and the plugin only
    run_aliases: tuple[str, ...] = ()  # other spellings under ``agentic-evals run``

    @property
    def dest(self) -> str:
        """pytest's name for the option's value (``config.getoption``)."""
        assert self.flag is not None
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def ini_default(self) -> Any:
        return {"bool": False, "args": list(self.default or ())}.get(self.ini_type, "")

    def argparse_kwargs(self) -> dict[str, Any]:
        """What pytest's ``addoption`` and argparse's ``add_argument`` both accept."""
        kwargs: dict[str, Any] = {"action": self.action, "help": self.help}
        if self.action == "append":
            kwargs["default"] = []
        else:
            kwargs["default"] = None
        if self.action != "store_true":
            kwargs["metavar"] = self.metavar
        return kwargs


OPTIONS = (
    Option("enabled", "collect agentic_eval*.json fixtures and run their cases as trials",
           flag="--agentic-evals", ini="agentic_evals", ini_type="bool",
           ini_help="collect agentic-evals fixtures (like --agentic-evals)",
           action="store_true", default=False),
    Option("files", "", ini="agentic_evals_files", ini_type="args",
           ini_help="glob patterns of fixture file names", default=("agentic_eval*.json",)),
    Option("report", "write the JSON report here (atomically)",
           flag="--agentic-evals-report", ini="agentic_evals_report",
           ini_help="path of the JSON report", metavar="PATH"),
    Option("report_unannounced", "the report's path is not printed (the CLI prints the report)",
           flag="--agentic-evals-report-unannounced", action="store_true", default=False,
           hidden=True),
    Option("report_only", "report readiness without failing the session when not READY",
           flag="--agentic-evals-report-only", run_flag="--report-only",
           ini="agentic_evals_report_only", ini_type="bool",
           ini_help="report without gating the exit status", action="store_true",
           default=False),
    Option("allow_exempt", "grant the exemption from the anti-slush contract that a fixture "
                           "of eval_kind scaffold or runner_selftest asks for",
           flag="--agentic-evals-allow-exempt", run_flag="--allow-exempt",
           ini="agentic_evals_allow_exempt", ini_type="bool",
           ini_help="grant scaffold and runner_selftest fixtures their exemption",
           action="store_true", default=False),
    Option("trials", "trials per case (never below a fixture's minimum)",
           flag="--agentic-evals-trials", run_flag="--trials", ini="agentic_evals_trials",
           ini_help="trials per case", metavar="N", convert=trial_count),
    Option("timeout", "default per-trial timeout (30 s)",
           flag="--agentic-evals-timeout", run_flag="--timeout", ini="agentic_evals_timeout",
           ini_help="default per-trial timeout (s)", metavar="SECONDS", convert=trial_timeout,
           run_aliases=("--timeout-seconds",)),
    Option("markdown", "write a Markdown summary here (also appended to $GITHUB_STEP_SUMMARY "
                       "when set)",
           flag="--agentic-evals-md", run_flag="--md", ini="agentic_evals_md",
           ini_help="path of the Markdown summary", metavar="PATH"),
    Option("cases", "run only this case (repeatable); the run is then partial",
           flag="--agentic-evals-case", run_flag="--case", action="append", metavar="NAME",
           default=()),
    Option("keep_workspaces", "keep the private workspaces of passing trials too",
           flag="--agentic-evals-keep-workspaces", run_flag="--keep-workspaces",
           action="store_true", default=False),
    Option("sandbox", "run each trial in Linux namespaces: auto (when the machine allows it; "
                      "default), required (a trial that cannot be sandboxed is BLOCKED), off",
           flag="--agentic-evals-sandbox", run_flag="--sandbox", ini="agentic_evals_sandbox",
           ini_help="sandbox the trials: auto (default), required or off", metavar="MODE",
           convert=sandbox_mode, default="auto"),
    Option("stop_on_fail", "once a trial of a case has failed, its remaining trials are not "
                           "run (NOT_TESTED; the case has failed either way)",
           flag="--agentic-evals-stop-on-fail", run_flag="--stop-on-fail",
           ini="agentic_evals_stop_on_fail", ini_type="bool",
           ini_help="end a case's remaining trials once one has failed", action="store_true",
           default=False),
    Option("durations", "run the longest trials first, by the durations of this report "
                        "('last': the durations the last run recorded in pytest's cache)",
           flag="--agentic-evals-durations", run_flag="--durations",
           ini="agentic_evals_durations", ini_help="report whose durations order the trials "
                                                   "(or 'last')", metavar="REPORT"),
    Option("probe", "instead of trials, run each case against stand-ins of a broken skill "
                    "(vacuity probe); a required case whose oracle survives noop or crash fails",
           flag="--agentic-evals-probe", action="store_true", default=False),
    Option("hide", "files of agentic-evals run that no trial may see",
           flag="--agentic-evals-hide", action="append", metavar="PATH", default=(),
           hidden=True),
    Option("from_run", "the session is agentic-evals run's: an option a message suggests is "
                       "named as run spells it",
           flag="--agentic-evals-from-run", action="store_true", default=False, hidden=True),
    Option("run_options", "a setting agentic-evals run set with its own option (repeatable): "
                          "messages name that option, as the user typed it",
           flag="--agentic-evals-run-option", action="append", metavar="NAME", default=(),
           hidden=True),
)
OPTION = {option.name: option for option in OPTIONS}


@dataclass(frozen=True)
class Settings:
    """The session's settings, each resolved once; ``sources`` says where each came from."""

    enabled: bool
    files: tuple[str, ...]
    report: str | None
    report_unannounced: bool
    report_only: bool
    allow_exempt: bool  # a fixture cannot exempt itself from the contract: only the run can
    trials: int | None  # None: each fixture's own trials
    timeout: float | None  # None: the runner's default
    markdown: str | None
    cases: tuple[str, ...]
    keep_workspaces: bool
    sandbox: str
    stop_on_fail: bool
    durations: str | None  # a report's path, or "last" (pytest's cache); None: collection order
    probe: bool
    hide: tuple[str, ...]  # beyond report and markdown, which no trial may see either
    from_run: bool  # started by ``agentic-evals run``
    run_options: tuple[str, ...]  # the settings it set with its own options
    sources: Mapping[str, str]

    def source(self, name: str) -> str:
        """``--agentic-evals-trials`` (``--trials`` when ``agentic-evals run --trials`` set
        it), ``ini agentic_evals_trials`` or ``default``."""
        return self.sources[name]

    def spelling(self, name: str) -> str | None:
        """The option that sets ``name``, as the user would type it: ``agentic-evals run``'s
        own when the session is its and it has one, else the plugin's."""
        option = OPTION[name]
        return option.run_flag if self.from_run and option.run_flag else option.flag

    def trials_for(self, declared: int, minimum: int) -> int:
        """Trials per case of a fixture that declares ``declared`` and needs ``minimum``: the
        override replaces the fixture's count, upwards or downwards, never below its minimum."""
        return declared if self.trials is None else max(self.trials, minimum)


def add_plugin_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentic-evals", "agentic-evals: evaluate agent skills")
    for option in OPTIONS:
        if option.flag is not None:
            kwargs = option.argparse_kwargs()
            if option.hidden:
                kwargs["help"] = argparse.SUPPRESS
            group.addoption(option.flag, dest=option.dest, **kwargs)
        if option.ini is not None:
            parser.addini(option.ini, type=option.ini_type, default=option.ini_default,
                          help=option.ini_help)


def enabled(config: pytest.Config) -> bool:
    """Whether the plugin is on; the other settings are only resolved (and checked) when it is."""
    return bool(_resolve(config, OPTION["enabled"], by_run=False)[0])


def resolve_settings(config: pytest.Config) -> Settings:
    """Every setting, once; a bad value is a ``pytest.UsageError`` naming its source as the
    user typed it (``--trials`` when ``agentic-evals run --trials`` set it)."""
    by_run = set(config.getoption(OPTION["run_options"].dest) or ())
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for option in OPTIONS:
        values[option.name], sources[option.name] = _resolve(config, option,
                                                             option.name in by_run)
    return Settings(**values, sources=MappingProxyType(sources))


def _resolve(config: pytest.Config, option: Option, by_run: bool) -> tuple[Any, str]:
    if option.flag is not None:
        raw = config.getoption(option.dest)
        if raw not in (None, False, [], ""):
            shown = option.run_flag if by_run and option.run_flag else option.flag
            return _converted(option, raw, shown), shown
    if option.ini is not None:
        raw = config.getini(option.ini)
        # pytest gives an ini value that is not set as its default: that is the default.
        if raw != option.ini_default:
            source = f"ini {option.ini}"
            return _converted(option, raw, source), source
    return option.default, DEFAULT


def _converted(option: Option, raw: Any, source: str) -> Any:
    if isinstance(raw, list):
        return tuple(raw)
    if option.convert is None or not isinstance(raw, str):
        return raw
    try:
        return option.convert(raw)
    except ValueError as exc:
        raise pytest.UsageError(f"{source}: {exc}") from None


# -- the options of ``agentic-evals run`` ------------------------------------------------------


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The plugin's options that ``agentic-evals run`` offers under its own names."""
    for option in OPTIONS:
        if option.run_flag is None:
            continue
        kwargs = option.argparse_kwargs()
        if option.convert is not None:
            kwargs["type"] = _argparse_type(option.convert)
        parser.add_argument(option.run_flag, *option.run_aliases, dest=option.name, **kwargs)


def _argparse_type(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    def checked(raw: str) -> Any:
        try:
            return convert(raw)
        except ValueError as exc:  # argparse would print a message of its own for ValueError
            raise argparse.ArgumentTypeError(str(exc)) from None

    return checked


def plugin_arguments(
    values: Mapping[str, Any], pytest_args: Sequence[str] | None = None
) -> list[str]:
    """The plugin's command line for ``values`` (setting name -> value, as ``agentic-evals
    run`` parsed them); names that are not settings are left out.

    With ``pytest_args`` (what the user gave pytest after ``--``), the session is marked as
    ``agentic-evals run``'s, and each setting that one of run's own options set, and that
    the user did not set again after ``--`` with the plugin's option, is named as run spells
    it in the session's messages."""
    if pytest_args is not None:
        given = {word.split("=", 1)[0] for word in pytest_args}
        values = {**values, "from_run": True, "run_options": [
            option.name for option in OPTIONS
            if option.run_flag and values.get(option.name) not in (None, False, [], ())
            and option.flag not in given]}
    arguments: list[str] = []
    for option in OPTIONS:
        if option.flag is None or option.name not in values:
            continue
        value = values[option.name]
        if option.action == "store_true":
            arguments += [option.flag] if value else []
        elif option.action == "append":
            arguments += [word for item in value or () for word in (option.flag, str(item))]
        elif value is not None:
            arguments += [option.flag, str(value)]
    return arguments
