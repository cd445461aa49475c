"""``validate``, ``schema`` and ``report``: read fixtures, schemas and reports; run nothing."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from pytest_agentic_evals.cli.common import (
    EXIT_INPUT,
    EXIT_OK,
    add_allow_exempt_option,
    add_format_option,
    print_document,
)
from pytest_agentic_evals.jsonio import decode_json, display_path, read_input
from pytest_agentic_evals.loading.programs import missing_programs
from pytest_agentic_evals.model import ALLOW_EXEMPT_RUN
from pytest_agentic_evals.problems import InputError
from pytest_agentic_evals.redaction import escape_line
from pytest_agentic_evals.report import report_problems
from pytest_agentic_evals.schemas import schema_text
from pytest_agentic_evals.summary import markdown, terminal_lines

SCHEMAS = ("fixture", "report", "session-report", "regressions", "requirements",
           "discovery-inventory", "state-graph", "journey-plan", "probe")


def add_parser(commands: Any, name: str, help: str) -> None:
    parser = commands.add_parser(name, help=help)
    if name == "validate":
        parser.add_argument("fixtures", nargs="+", metavar="FIXTURE")
        add_allow_exempt_option(parser)
        parser.set_defaults(handler=validate)
    elif name == "report":
        parser.add_argument("report", metavar="REPORT.json")
        add_format_option(parser, {"table": "the terminal summary", "md": "Markdown"},
                          default="table")
        parser.set_defaults(handler=render_report)
    else:
        # Without a name, the report's schema: what the earlier tool's `schema` printed.
        parser.add_argument("name", nargs="?", default="report", choices=SCHEMAS)
        parser.set_defaults(handler=print_schema)


def validate(args: argparse.Namespace) -> int:
    # Installed plugins (and pytest with them) are loaded for their kinds: schema and report
    # have no use for them.
    plugins = importlib.import_module("pytest_agentic_evals.cli.plugins")
    fixtures, errors = plugins.load_fixtures(args.fixtures, args.allow_exempt)
    for fixture in fixtures:
        exempt = (f", eval_kind {fixture.eval_kind}: exempt from the contract by "
                  f"{ALLOW_EXEMPT_RUN}" if fixture.exempt_from_contract else "")
        print(f"VALID: {display_path(fixture.path)} ({len(fixture.cases)} cases, "
              f"trials={fixture.trials}{exempt})")
        for warning in missing_programs(fixture):
            print(f"warning: {warning}", file=sys.stderr)
    for error in errors:
        print(error, file=sys.stderr)
    return EXIT_INPUT if errors else EXIT_OK


def print_schema(args: argparse.Namespace) -> int:
    print_document(schema_text(args.name.replace("-", "_")))
    return EXIT_OK


def render_report(args: argparse.Namespace) -> int:
    try:
        report = decode_json(read_input(args.report), args.report)
    except OSError as exc:
        print(f"{args.report}: cannot read report: {exc.strerror}", file=sys.stderr)
        return EXIT_INPUT
    except InputError as exc:
        print(f"{args.report}: not a JSON report:", file=sys.stderr)
        for found in exc.problems:
            print(f"  - {found}", file=sys.stderr)
        return EXIT_INPUT
    problems = report_problems(report)
    if problems:
        for problem in problems:
            print(f"{args.report}: {problem}", file=sys.stderr)
        return EXIT_INPUT
    if args.format == "md":
        print_document(markdown(report))
    else:
        for line in terminal_lines(report):
            print(escape_line(line.text))
    return EXIT_OK
