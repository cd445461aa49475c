"""``agentic-evals run``: pytest with the plugin, in a subprocess; the JSON report on stdout,
or, when stdout is a terminal, in a file whose path the output names. With a pytest option
that runs nothing (``-- --collect-only``, ``--fixtures``, ``--help``...), pytest's listing on
stdout instead, and no report.

The options ``run`` shares with the plugin (``--report-only``, ``--trials``, ``--timeout``,
``--md``, ``--case``, ``--keep-workspaces``, ``--sandbox``, ``--stop-on-fail``,
``--durations``) are the plugin's own option table
(``pytest_plugin.settings``), given here under shorter names and passed on as they are.

The pytest session is configured by this command alone: an ini file of its own (``-c``), a
rootdir of its own (``--rootdir``) and no ``conftest.py`` (``--noconftest``), so that nothing
inside an evaluated skill (a ``pytest.ini``, ``pyproject.toml``, ``setup.cfg``, ``tox.ini`` or
``conftest.py``) can choose which trials run, move the rootdir or reach the verdict. Plugins
are those installed, and those the user names after ``--`` (``-p``).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType
from typing import Any

from pytest_agentic_evals.cli.common import (
    EXIT_GATE,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUNNER,
    CommandFailed,
    add_output_option,
    check_output,
    pin_output,
    print_document,
    write_output,
)
from pytest_agentic_evals.cli.plugins import load_fixtures
from pytest_agentic_evals.execution.rundirs import runs_root, runs_root_problem
from pytest_agentic_evals.jsonio import PinnedOutput, json_text, remove_earlier_output, same_path
from pytest_agentic_evals.loading.categories import (
    CategoryError,
    category_cases,
    load_category_map,
)
from pytest_agentic_evals.model import FIXTURES_DIRNAME, Fixture
from pytest_agentic_evals.pytest_plugin.settings import add_run_options, plugin_arguments

PYTEST_USAGE_ERROR, PYTEST_NO_TESTS = 4, 5
# pytest options (after --) with which pytest lists or describes and runs no trial: the run is
# then a listing, with pytest's output on stdout, and no report.
LISTING_OPTIONS = frozenset({"--collect-only", "--co", "--fixtures", "--funcargs",
                             "--fixtures-per-test", "--markers", "-h", "--help", "-V",
                             "--version"})
FIXTURE_GLOB = "agentic_eval*.json"
PYTEST_INTERRUPTED = 2  # also the status of a session whose report a hook tried to rewrite
PR_SET_PDEATHSIG = 1  # prctl(2)
TERMINATING = (signal.SIGTERM, signal.SIGHUP)
# What this command passes on to pytest. pytest runs in a process group of its own, so that a
# Ctrl-C at the terminal (sent to the foreground group) reaches this command alone: pytest gets
# exactly one signal, however many arrive, as it does when the command alone is signalled.
FORWARDED = (signal.SIGINT, *TERMINATING)


def add_parser(commands: Any, name: str, help: str) -> None:
    parser = commands.add_parser(
        name, help=help,
        epilog="Arguments after -- go to pytest as they are (for example: -- -n 4 -x).",
    )
    parser.add_argument("fixtures", nargs="+", metavar="FIXTURE",
                        help="a fixture file, a skill directory (its fixtures/agentic_eval*.json) "
                        "or a fixtures directory")
    add_output_option(parser)
    parser.add_argument(
        "--format", choices=("json", "table"), default=None,
        help="json: the JSON report on stdout; table: only pytest's summary (on stderr) and "
             "the report's path, the report going to --output or to a new file. Default: "
             "json when stdout is a file or a pipe, table when it is a terminal")
    parser.add_argument("--json", dest="format", action="store_const", const="json",
                        help="the same as --format json")
    add_run_options(parser)
    parser.add_argument("--only-category", metavar="ID",
                        help="run only the cases of this category (their category_id or "
                             "category, else their name); replaces --case; the run is partial")
    parser.add_argument("--map", dest="category_map", metavar="MAP",
                        help="with --only-category: a category map (agentic_evals.category_map."
                             "v1) that also selects cases sharing the category's seams or claims")
    parser.set_defaults(handler=run)


def report_form(args: argparse.Namespace) -> str:
    """How the report is given: on stdout (json) or only in a file (table). A terminal gets
    the summary, not tens of kilobytes of JSON; a pipe or a file gets the JSON, as always."""
    if args.format:
        return str(args.format)
    return "table" if sys.stdout.isatty() else "json"


def default_output() -> str:
    """Where a run on a terminal without --output keeps its report: a new file, never one
    that an earlier run wrote."""
    root = runs_root()
    root.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return str(root / f"report-{stamp}-{os.getpid()}.json")


def run(args: argparse.Namespace) -> int:
    problem = runs_root_problem()
    if problem:
        raise CommandFailed(problem)
    args.fixtures = fixture_paths(args.fixtures)
    check_output("--md", args.markdown)  # --output is checked by the dispatcher
    if args.output and args.markdown and same_path(args.output, args.markdown):
        raise CommandFailed(f"--md {args.markdown}: is also --output: name two files")
    fixtures, errors = load_fixtures(args.fixtures, args.allow_exempt)
    if errors:
        for error in errors:
            print(error, file=sys.stderr)
        return EXIT_INPUT
    problem = _select_cases(args, fixtures)
    if problem:
        print(problem, file=sys.stderr)
        return EXIT_INPUT
    known = {case.name for fixture in fixtures for case in fixture.cases}
    if LISTING_OPTIONS.intersection(args.pytest_args):
        return _list(args, known)
    # An earlier run's output is never left where this run's belongs, whatever happens next.
    for path in (args.output, args.markdown):
        if path:
            remove_earlier_output(path)

    form = report_form(args)
    if form == "table" and not args.output:
        args.output = default_output()
    output = pin_output("--output", args.output)
    try:
        return _run_and_write(args, form, output, known)
    finally:
        if output is not None:
            output.close()


def _run_and_write(
    args: argparse.Namespace, form: str, output: PinnedOutput | None, known: set[str]
) -> int:
    with tempfile.TemporaryDirectory(prefix="agentic-evals-run-") as scratch:
        # A fresh scratch file, so that a report left by an earlier run is never mistaken
        # for this run's; it is copied to --output below.
        report_path = Path(scratch) / "report.json"
        status = _run_pytest(args, report_path)
        report = _read_report(report_path)

    if report is None:
        return _without_report(status)
    # --output first: a reader of stdout that goes away early (`| head -1`) ends the command
    # there, and the report of what ran is kept all the same.
    try:
        write_output(report, output)
    except BrokenPipeError:
        raise  # --output is a pipe (/dev/stdout) whose reader went away: see cli.main
    except OSError as exc:
        raise CommandFailed(f"--output {args.output}: cannot write: {exc.strerror}") from None
    if form == "json":
        print_document(json_text(report))
    return _exit_status(args, status, report, known)


def _list(args: argparse.Namespace, known: set[str]) -> int:
    """``run F -- --collect-only`` (or ``--fixtures``, ``--markers``, ``--help``...): pytest
    lists what the run would run, or describes itself, on stdout; no trial runs, no report is
    made, and nothing at --output or --md is written or removed."""
    with tempfile.TemporaryDirectory(prefix="agentic-evals-run-") as scratch:
        status = _run_pytest(args, Path(scratch) / "report.json", listing=True)
    if status == 0:
        return EXIT_OK
    if status == PYTEST_NO_TESTS:
        return _none_selected(known)
    return _without_report(status)


def _none_selected(known: set[str]) -> int:
    print("agentic-evals: no trial was selected: the pytest arguments after -- deselected "
          "every case (cases: " + ", ".join(sorted(known)) + ")", file=sys.stderr)
    return EXIT_INPUT


def _select_cases(args: argparse.Namespace, fixtures: list[Fixture]) -> str | None:
    """Resolve ``--only-category`` into ``args.cases``; why the selection cannot run, or None."""
    if args.category_map and not args.only_category:
        return "--map only serves --only-category"
    if args.only_category:
        try:
            mapped = load_category_map(args.category_map) if args.category_map else None
            args.cases = category_cases(fixtures, args.only_category, mapped)
        except CategoryError as exc:
            return str(exc)
    known = {case.name for fixture in fixtures for case in fixture.cases}
    unknown = [name for name in args.cases if name not in known]
    if unknown:
        return f"unknown case(s): {', '.join(unknown)} (cases: {', '.join(sorted(known))})"
    return None


def _exit_status(
    args: argparse.Namespace, status: int, report: dict[str, Any], known: set[str]
) -> int:
    """The command's exit status from pytest's and the report the run wrote."""
    if status == EXIT_INTERRUPTED or _interrupted(report):
        return EXIT_INTERRUPTED
    if status == PYTEST_USAGE_ERROR:  # bad pass-through arguments or settings
        return EXIT_INPUT
    if status == PYTEST_NO_TESTS:
        return _none_selected(known)
    if status == PYTEST_INTERRUPTED and not _interrupted(report):
        return EXIT_INPUT  # a report hook tried to rewrite a verdict (named on stderr)
    if args.report_only:
        return EXIT_OK
    # The report's gate as well as pytest's status: a plugin that reset the status to 0
    # does not open the gate.
    return EXIT_OK if status == 0 and _gate_passed(report) else EXIT_GATE


def pinned_configuration(fixtures: list[str], scratch: Path) -> list[str]:
    """pytest's arguments that make the run's configuration this command's own: its own ini
    file, a rootdir above every fixture (so that each fixture keeps a node id of its own, and a
    skill's config file cannot move it), the cache in the current directory (``--lf``,
    ``--ff``, ``--sw`` work from one run to the next), and no conftest.py."""
    here = os.path.abspath(os.curdir)
    rootdir = os.path.commonpath([here, *(os.path.abspath(path) for path in fixtures)])
    ini = scratch / "pytest.ini"
    ini.write_text(
        "[pytest]\n"
        "# agentic-evals run's own configuration: nothing in an evaluated tree configures it.\n"
        f"cache_dir = {os.path.join(here, '.pytest_cache')}\n"
    )
    return ["-c", str(ini), "--rootdir", rootdir, "--noconftest"]


def _without_report(status: int) -> int:
    """The exit status of a pytest that produced no report: bad arguments (pytest said which),
    an interruption, or a failure of the runner itself."""
    if status == PYTEST_USAGE_ERROR:
        return EXIT_INPUT
    if status in (2, EXIT_INTERRUPTED, -signal.SIGINT, *(-sig for sig in TERMINATING)):
        print("agentic-evals: interrupted before a report was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    how = (f"was killed by signal {-status}" if status < 0 else f"exited {status}")
    print(f"agentic-evals: the runner failed: pytest {how} without writing a report "
          f"(exit status {EXIT_RUNNER})", file=sys.stderr)
    return EXIT_RUNNER


def fixture_paths(targets: list[str]) -> list[str]:
    """The fixture files ``targets`` name: a file as it is; a skill directory, its
    ``fixtures/agentic_eval*.json``; any other directory, its own ``agentic_eval*.json``."""
    paths: list[str] = []
    for target in targets:
        folder = Path(target)
        if not folder.is_dir():
            paths.append(target)
            continue
        found = sorted((folder / FIXTURES_DIRNAME).glob(FIXTURE_GLOB)) or \
            sorted(folder.glob(FIXTURE_GLOB))
        found = [path for path in found if path.is_file()]
        if not found:
            raise CommandFailed(f"{target}: no fixture found (looked for {FIXTURES_DIRNAME}/"
                                f"{FIXTURE_GLOB} and {FIXTURE_GLOB} in it)")
        paths += [str(path) for path in found]
    return paths


def _run_pytest(args: argparse.Namespace, report_path: Path, listing: bool = False) -> int:
    """pytest's exit status; its progress goes to stderr, so that stdout carries the report
    (a listing, which has none, goes to stdout)."""
    # -P: the current directory is not put on sys.path, so that nothing in it (a skill folder
    # named `json`, a module a trial wrote there) is imported in place of the runner's own;
    # xdist's workers start the same way (controller.XdistHooks).
    command = [sys.executable, "-P", "-m", "pytest", *args.fixtures]
    command += pinned_configuration(args.fixtures, report_path.parent)
    # The CLI prints the report itself, and names --output; the plugin need not announce it.
    # No trial may see or write the files this command reads and writes.
    hidden = [str(report_path.parent), *([args.output] if args.output else [])]
    command += plugin_arguments({**vars(args), "enabled": True, "report": str(report_path),
                                 "report_unannounced": True, "hide": hidden},
                                args.pytest_args)
    if "-m" not in args.pytest_args:
        # run runs trials, as it always has; retained regressions are verified by
        # `regressions verify` or by `-- -m regression`.
        command += ["-m", "not regression"]
    command += args.pytest_args
    if not all(_utf8(os.path.abspath(path)) for path in args.fixtures):
        # pytest's cache is UTF-8 JSON, and pytest ends with a traceback writing a node id it
        # cannot encode (a folder named in other bytes): the run goes without it.
        print("agentic-evals: a fixture's path is not UTF-8: pytest's cache (--lf, --ff, --sw) "
              "is off for this run", file=sys.stderr)
        command += ["-p", "no:cacheprovider"]
    if listing:
        sys.stdout.flush()
    process = subprocess.Popen(command, stdout=sys.stdout.fileno() if listing
                               else sys.stderr.fileno(), stdin=subprocess.DEVNULL,
                               preexec_fn=_die_with_parent)
    received: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        # Ctrl-C, SIGTERM or SIGHUP (a CI's cancel, `timeout`): pytest gets the first, tears
        # its trials down and writes its report, which this command then prints. A second
        # one would interrupt that, and lose the report.
        received.append(signum)
        if len(received) > 1:
            print("agentic-evals: stopping already: the trials are being torn down and the "
                  "report written", file=sys.stderr, flush=True)
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signum)

    # A signal ignored when this command started (SIGINT in a background job) stays ignored.
    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED
                if signal.getsignal(sig) != signal.SIG_IGN}
    try:
        status = process.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received:
        return EXIT_INTERRUPTED if status in (0, 1, 2) else status
    return status


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _die_with_parent() -> None:
    """In pytest's process, before it starts: a process group of its own (see FORWARDED), and
    SIGTERM when this command dies, also by SIGKILL, so that pytest tears its trials down
    instead of running on unwatched."""
    os.setpgid(0, 0)
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before the line above
        os.kill(os.getpid(), signal.SIGTERM)


def _read_report(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _gate_passed(report: dict[str, Any]) -> bool:
    fixtures = report.get("fixtures", [report])
    return all(fixture.get("gate", {}).get("passed") or not fixture.get("gate", {}).get("counts")
               for fixture in fixtures)


def _interrupted(report: dict[str, Any]) -> bool:
    fixtures = report.get("fixtures", [report])
    return any(fixture.get("interrupted") for fixture in fixtures)
