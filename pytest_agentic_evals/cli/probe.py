"""``probe``: run each case against stand-ins of a broken skill, and see which survive.

Exit 0 when every required case's oracle kills ``noop`` and ``crash``, 1 when one survives
(or its trial says nothing), 2 on bad input (a fixture that does not load, an unknown case,
an output path that cannot be written), checked before anything runs.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import uuid
from typing import Any

from pytest_agentic_evals.cli.common import (
    EXIT_GATE,
    EXIT_INPUT,
    EXIT_OK,
    CommandFailed,
    add_allow_exempt_option,
    add_format_option,
    add_output_option,
    pin_output,
    print_document,
    seconds,
    write_output,
)
from pytest_agentic_evals.cli.plugins import load_fixtures, plugin_kinds
from pytest_agentic_evals.execution.environment import DEFAULT_TIMEOUT_SECONDS, RunSettings
from pytest_agentic_evals.execution.rundirs import RunDir, runs_root_problem
from pytest_agentic_evals.execution.sandbox import SandboxSettings
from pytest_agentic_evals.jsonio import PinnedOutput, display_path, json_text
from pytest_agentic_evals.model import SANDBOX_MODES, Fixture
from pytest_agentic_evals.probes import results, store
from pytest_agentic_evals.probes.runner import probe_fixture
from pytest_agentic_evals.redaction import escape_line


def add_parser(commands: Any, name: str, help: str) -> None:
    parser = commands.add_parser(name, help=help, description=(
        "Run each case once against stand-ins of a broken skill (noop, crash, echo-args, "
        "passthrough, replay) swapped in for its entrypoint, and report which survive. "
        f"Results are kept beside each fixture in {store.FILENAME} for coverage and claims."))
    parser.add_argument("fixtures", nargs="+", metavar="FIXTURE")
    parser.add_argument("--case", dest="cases", action="append", default=[], metavar="NAME",
                        help="probe only this case (repeatable)")
    parser.add_argument("--timeout", type=seconds, metavar="SECONDS",
                        help=f"default per-trial timeout ({DEFAULT_TIMEOUT_SECONDS:g} s)")
    parser.add_argument("--sandbox", choices=SANDBOX_MODES, default="auto",
                        help="run the stand-ins' trials sandboxed: auto (default), required, off")
    parser.add_argument("--no-store", dest="store", action="store_false",
                        help=f"do not write {store.FILENAME} beside the fixtures")
    add_allow_exempt_option(parser)
    add_output_option(parser)
    add_format_option(parser, {"table": "a table and every survivor", "json": "the JSON report",
                               "md": "Markdown"}, default="table")
    parser.set_defaults(handler=probe)


def probe(args: argparse.Namespace) -> int:
    fixtures, errors = load_fixtures(args.fixtures, args.allow_exempt)
    known = {case.name for fixture in fixtures for case in fixture.cases}
    unknown = [name for name in args.cases if name not in known]
    if unknown:
        errors.append(f"unknown case(s): {', '.join(unknown)} "
                      f"(cases: {', '.join(sorted(known))})")
    if errors:
        for error in errors:
            print(error, file=sys.stderr)
        return EXIT_INPUT

    problem = runs_root_problem()
    if problem:
        raise CommandFailed(problem)
    output = pin_output("--output", args.output)
    try:
        return _probe_and_write(args, fixtures, output)
    finally:
        if output is not None:
            output.close()


def _probe_and_write(
    args: argparse.Namespace, fixtures: list[Fixture], output: PinnedOutput | None
) -> int:
    kinds = plugin_kinds()
    run_id = uuid.uuid4().hex[:12]
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()
    run = RunDir(run_id)
    run_dir = run.open()
    entries = []
    try:
        settings = RunSettings(run_id=run_id, run_dir=run_dir,
                               default_timeout=args.timeout or DEFAULT_TIMEOUT_SECONDS,
                               sandbox=SandboxSettings(args.sandbox, "--sandbox" if
                                                       args.sandbox != "auto" else "default"))
        for fixture in fixtures:
            chosen = [c for c in fixture.cases if not args.cases or c.name in args.cases]
            print(f"probing {display_path(fixture.path)} ({len(chosen)} case(s)) ...",
                  file=sys.stderr)
            probes = probe_fixture(fixture, settings, kinds, chosen)
            stored_at = None
            if args.store:
                try:
                    stored_at = display_path(store.record(fixture, results.store_records(probes),
                                                          now))
                except OSError as exc:
                    print(f"agentic-evals: {store.not_kept(fixture, exc)}", file=sys.stderr)
            entries.append(results.fixture_entry(fixture, probes, stored_at))
    finally:
        run.close()
    document = results.report(entries, run_id, now, args.sandbox)
    # --output first: a reader of stdout that goes away early (`| head -1`) ends the command
    # there, and the report of what ran is kept all the same.
    write_output(document, output)
    if args.format == "json":
        print_document(json_text(document))
    elif args.format == "md":
        print_document(results.markdown(document) + "\n")
    else:
        for line in results.terminal_lines(document):
            print(escape_line(line))
    return EXIT_GATE if document["verdict"] == results.FAILED else EXIT_OK
