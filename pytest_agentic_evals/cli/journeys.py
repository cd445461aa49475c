"""``plan-journeys``: bind requirements to what live discovery observed; executes nothing."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pytest_agentic_evals import journeys
from pytest_agentic_evals.cli.common import EXIT_INPUT, CommandFailed, check_output
from pytest_agentic_evals.cli.plugins import plugin_schemas
from pytest_agentic_evals.journeys.earlier import FORM_EARLIER
from pytest_agentic_evals.journeys.earlier import NOTE as EARLIER_NOTE
from pytest_agentic_evals.jsonio import (
    flat_on_one_line,
    json_text,
    same_path,
    write_text_atomically,
)
from pytest_agentic_evals.problems import InputError
from pytest_agentic_evals.redaction import escape_line


def add_parser(commands: Any, name: str, help: str) -> None:
    parser = commands.add_parser(name, help=help)
    parser.add_argument("--fixture", required=True, metavar="F",
                        help="the skill's fixture: its capability claims and seams")
    parser.add_argument("--requirements", required=True, metavar="R",
                        help="requirements.json (agentic_evals.requirements.v1)")
    parser.add_argument("--interaction-inventory", required=True, metavar="I",
                        help="discovery-inventory.json: the controls observed per state")
    parser.add_argument("--state-graph", required=True, metavar="G",
                        help="state-graph.json: initial_state, states, transitions")
    parser.add_argument("-o", "--output", required=True, metavar="OUT",
                        help="write the plan (agentic_evals.journey_plan.v1) here")
    parser.add_argument("--scaffold-output", metavar="FRAG",
                        help="also write candidate fixture cases for the BOUND journeys here")
    parser.add_argument("--report-only", action="store_true",
                        help="exit 0 even on a critical gap")
    parser.set_defaults(handler=plan_journeys)


def plan_journeys(args: argparse.Namespace) -> int:
    """``plan-journeys``: bind requirements to discovered controls; executes nothing."""
    check_output("--output", args.output)
    check_output("--scaffold-output", args.scaffold_output)
    if args.scaffold_output and same_path(args.output, args.scaffold_output):
        raise CommandFailed(f"--scaffold-output {args.scaffold_output}: is also --output: "
                            "name two files")
    try:
        inputs = journeys.load_inputs(args.fixture, args.requirements,
                                      args.interaction_inventory, args.state_graph,
                                      plugin_schemas())
    except InputError as exc:
        print(exc.describe(), file=sys.stderr)
        return EXIT_INPUT
    if inputs.network.form == FORM_EARLIER:
        print(f"note: {inputs.graph.shown} {EARLIER_NOTE}", file=sys.stderr)
    plan = journeys.build_plan(inputs, args.output)
    fragment = (journeys.build_scaffold(inputs, plan, args.scaffold_output)
                if args.scaffold_output else None)
    try:
        write_text_atomically(args.output, json_text(plan, flat_on_one_line))
        if fragment is not None:
            write_text_atomically(args.scaffold_output, json_text(fragment, flat_on_one_line))
    except BrokenPipeError:
        raise  # a pipe (/dev/stdout) whose reader went away: see cli.main
    except OSError as exc:
        print(f"{exc.filename or args.output}: cannot write: {exc.strerror}", file=sys.stderr)
        return EXIT_INPUT
    print("\n".join(escape_line(line) for line in journeys.lines(plan)))
    print(f"plan: {args.output}", file=sys.stderr)
    if fragment is not None:
        print(f"scaffold: {args.scaffold_output} ({len(fragment['cases'])} candidate case(s), "
              f"{len(fragment['skipped'])} skipped)", file=sys.stderr)
    return journeys.exit_status(plan, args.report_only)
