"""The ``agentic-evals`` command: a thin layer over the core and over pytest with the plugin.

Exit codes, for every command: 0 success, 1 the gate says no, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from .expectations import ExpectationKind
from .fixture import Fixture, FixtureError, load_fixture, schema_text
from .report import report_problems, write_json_atomically
from .summary import markdown, terminal_lines

EXIT_OK, EXIT_GATE, EXIT_INPUT = 0, 1, 2
EXIT_INTERRUPTED = 130
SCHEMAS = ("fixture", "report", "session-report")


def installed_plugin_kinds() -> dict[str, dict[str, Any]]:
    """Schemas of expectation kinds that installed pytest plugins add.

    Kinds defined in a ``conftest.py`` are only known to a pytest session; the CLI knows the
    built-in kinds and those of installed plugins (``pytest11`` entry points).
    """
    schemas: dict[str, dict[str, Any]] = {}
    for entry in metadata.entry_points(group="pytest11"):
        if entry.value.startswith("pytest_agentic_evals"):
            continue
        try:
            module = entry.load()
        except Exception:  # a broken third-party plugin must not break validation
            continue
        hook = getattr(module, "pytest_agentic_evals_expectation_kinds", None)
        if callable(hook):
            kind: ExpectationKind
            for kind in hook() or ():
                schemas[kind.key] = dict(kind.schema or {})
    return schemas


def load_all(paths: Sequence[str]) -> tuple[list[Fixture], list[str]]:
    extra = installed_plugin_kinds()
    fixtures, errors = [], []
    for path in paths:
        try:
            fixtures.append(load_fixture(path, extra))
        except FixtureError as exc:
            errors.append(exc.describe())
    return fixtures, errors


def cmd_validate(args: argparse.Namespace) -> int:
    fixtures, errors = load_all(args.fixtures)
    for fixture in fixtures:
        print(f"VALID: {_shown(fixture)} ({len(fixture.cases)} cases, trials={fixture.trials})")
    for error in errors:
        print(error, file=sys.stderr)
    return EXIT_INPUT if errors else EXIT_OK


def _shown(fixture: Fixture) -> str:
    try:
        return str(fixture.path.relative_to(Path.cwd()))
    except ValueError:
        return str(fixture.path)


def cmd_schema(args: argparse.Namespace) -> int:
    print(schema_text(args.name.replace("-", "_")), end="")
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    fixtures, errors = load_all(args.fixtures)
    if errors:
        for error in errors:
            print(error, file=sys.stderr)
        return EXIT_INPUT
    known = {case.name for fixture in fixtures for case in fixture.cases}
    unknown = [name for name in args.case if name not in known]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)} (cases: {', '.join(sorted(known))})",
              file=sys.stderr)
        return EXIT_INPUT

    with tempfile.TemporaryDirectory(prefix="agentic-evals-run-") as scratch:
        # A fresh scratch file, so that a report left by an earlier run is never mistaken
        # for this run's; it is copied to --output below.
        report_path = Path(scratch) / "report.json"
        command = [sys.executable, "-m", "pytest", *args.fixtures, "--agentic-evals",
                   "--agentic-evals-report", str(report_path),
                   "--agentic-evals-report-unannounced"]
        command += [option for name in args.case for option in ("--agentic-evals-case", name)]
        if args.report_only:
            command.append("--agentic-evals-report-only")
        command += args.pytest_args
        # pytest's progress goes to stderr: stdout carries only the JSON report.
        process = subprocess.Popen(command, stdout=sys.stderr.fileno(), stdin=subprocess.DEVNULL)
        try:
            status = process.wait()
        except KeyboardInterrupt:
            # pytest got the same Ctrl-C; let it tear its trials down and write its report.
            status = process.wait()
            status = EXIT_INTERRUPTED if status in (0, 1, 2) else status
        report = _read_report(report_path)

    if report is None:
        print(f"agentic-evals: no report was produced (pytest exited {status})", file=sys.stderr)
        return EXIT_INTERRUPTED if status in (2, EXIT_INTERRUPTED) else EXIT_INPUT
    print(json.dumps(report, indent=2, ensure_ascii=False))
    if args.output:
        write_json_atomically(args.output, report)
        print(f"report: {args.output}", file=sys.stderr)
    if status == EXIT_INTERRUPTED or _interrupted(report):
        return EXIT_INTERRUPTED
    if status == 4:  # pytest usage error: bad pass-through arguments or settings
        return EXIT_INPUT
    if args.report_only:
        return EXIT_OK
    return EXIT_OK if status == 0 else EXIT_GATE


def cmd_report(args: argparse.Namespace) -> int:
    try:
        report = json.loads(Path(args.report).read_text(encoding="utf-8"))
    except OSError as exc:
        print(f"{args.report}: cannot read report: {exc.strerror}", file=sys.stderr)
        return EXIT_INPUT
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        print(f"{args.report}: not a JSON report: {exc}", file=sys.stderr)
        return EXIT_INPUT
    problems = report_problems(report)
    if problems:
        for problem in problems:
            print(f"{args.report}: {problem}", file=sys.stderr)
        return EXIT_INPUT
    if args.format == "md":
        print(markdown(report), end="")
    else:
        for line in terminal_lines(report):
            print(line.text)
    return EXIT_OK


def _read_report(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _interrupted(report: dict[str, Any]) -> bool:
    fixtures = report.get("fixtures", [report])
    return any(fixture.get("interrupted") for fixture in fixtures)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentic-evals",
        description="Honest, repeatable, fail-closed evaluation of agent skills.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run fixtures' cases as trials and gate on readiness")
    run.add_argument("fixtures", nargs="+", metavar="FIXTURE")
    run.add_argument("--output", metavar="PATH", help="also write the JSON report here")
    run.add_argument("--report-only", action="store_true", help="exit 0 whatever the readiness")
    run.add_argument("--case", action="append", default=[], metavar="NAME",
                     help="run only this case (repeatable); the run is then partial")
    run.set_defaults(handler=cmd_run)
    run.epilog = "Arguments after -- go to pytest as they are (for example: -- -n 4 -x)."

    validate = commands.add_parser("validate", help="check fixtures without running anything")
    validate.add_argument("fixtures", nargs="+", metavar="FIXTURE")
    validate.set_defaults(handler=cmd_validate)

    report = commands.add_parser("report", help="render a saved JSON report for a person")
    report.add_argument("report", metavar="REPORT.json")
    report.add_argument("--format", choices=("table", "md"), default="table",
                        help="table: the terminal summary (default); md: Markdown")
    report.set_defaults(handler=cmd_report)

    schema = commands.add_parser("schema", help="print a JSON Schema shipped with the package")
    schema.add_argument("name", nargs="?", default="fixture", choices=SCHEMAS)
    schema.set_defaults(handler=cmd_schema)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = list(sys.argv[1:] if argv is None else argv)
    # Everything after "--" belongs to pytest; argparse would try to read it as ours.
    pytest_args: list[str] = []
    if "--" in arguments:
        split = arguments.index("--")
        arguments, pytest_args = arguments[:split], arguments[split + 1:]
    args = parser.parse_args(arguments)
    if pytest_args and args.command != "run":
        parser.error("arguments after -- are only for 'run'")
    args.pytest_args = pytest_args
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
