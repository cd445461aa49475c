"""``agentic-evals clean``: remove the run directories kept for failed trials.

A run that kept something (the directories of its failed or blocked trials, or every trial's
with ``--keep-workspaces``) stays until the user removes it: no later run does. This command
removes the finished runs of this user under the current temporary directory, all of them or
those unchanged for longer than ``--older-than``; a run in progress is never touched.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from pytest_agentic_evals.cli.common import EXIT_OK, CommandFailed
from pytest_agentic_evals.execution.rundirs import clean as remove_runs
from pytest_agentic_evals.execution.rundirs import runs_root, runs_root_problem

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


def duration(text: str) -> float:
    """An argparse type: ``30m``, ``12h``, ``7d``, ``45s`` as seconds."""
    match = DURATION.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration: a number and a unit, s, m, h or d (e.g. 7d)")
    return float(match.group(1)) * UNITS[match.group(2)]


def add_parser(commands: Any, name: str, help: str) -> None:
    parser = commands.add_parser(
        name, help=help,
        description="Remove finished run directories (the kept output of failed trials) of "
                    "this user under the temporary directory; runs in progress are kept.",
    )
    parser.add_argument("--older-than", type=duration, metavar="DURATION",
                        help="only runs unchanged for longer than this (e.g. 7d, 12h, 30m)")
    parser.add_argument("--dry-run", action="store_true",
                        help="list what would be removed, remove nothing")
    parser.set_defaults(handler=clean)


def clean(args: argparse.Namespace) -> int:
    problem = runs_root_problem()
    if problem:
        raise CommandFailed(problem)
    root = runs_root()
    removed = remove_runs(root, older_than=args.older_than, dry_run=args.dry_run)
    for path in removed:
        print(path)
    verb = "would remove" if args.dry_run else "removed"
    print(f"agentic-evals clean: {verb} {len(removed)} run director"
          f"{'y' if len(removed) == 1 else 'ies'} under {root}", file=sys.stderr)
    return EXIT_OK
