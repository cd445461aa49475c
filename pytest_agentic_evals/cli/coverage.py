"""``coverage show|audit``: risk-based coverage of declared seams; executes nothing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_agentic_evals import skills
from pytest_agentic_evals.cli.common import (
    EXIT_INPUT,
    TABLE_OR_JSON,
    add_format_option,
    add_output_option,
    emit,
)
from pytest_agentic_evals.cli.plugins import plugin_schemas
from pytest_agentic_evals.evidence import coverage
from pytest_agentic_evals.regressions.registry import today_utc


def add_parser(commands: Any, name: str, help: str) -> None:
    parser = commands.add_parser(name, help=help)
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, operand, description in (
        ("show", "SKILL_DIR", "per seam of one skill: covered, weak_only or uncovered, per "
                              "required evidence class, regressions mapped, next evals"),
        ("audit", "ROOT", "the same for every skill under ROOT, with a verdict for the root"),
    ):
        sub = actions.add_parser(action, help=description)
        sub.add_argument("path", metavar=operand)
        add_output_option(sub)
        add_format_option(sub, TABLE_OR_JSON, default="table")
        sub.set_defaults(handler=show_or_audit)


def show_or_audit(args: argparse.Namespace) -> int:
    """``coverage show SKILL_DIR`` and ``coverage audit ROOT``: static, executes nothing."""
    target = Path(args.path)
    if not target.is_dir():
        print(f"{args.path}: not a directory", file=sys.stderr)
        return EXIT_INPUT
    today = today_utc()
    if args.action == "audit":
        report = coverage.audit(target, today, plugin_schemas())
    else:
        paths = skills.fixture_paths(skills.skill_at(target))
        if not paths:
            print(f"{args.path}: no agentic_eval*.json fixture (looked in fixtures/ and the "
                  "folder itself)", file=sys.stderr)
            return EXIT_INPUT
        report = coverage.show(target, paths, today, plugin_schemas())
    emit(report, args, coverage.lines(report))
    if args.action == "show":
        # A fixture that does not load is bad input to `show`; `audit` reports it per skill.
        broken = [f for s in report["skills"] for f in s["fixtures"] if not f["valid"]]
        for fixture in broken:
            print(f"fixture rejected: {fixture['fixture']}", file=sys.stderr)
            for problem in fixture["problems"]:
                print(f"  - {problem}", file=sys.stderr)
        if broken or report["verdict"] == coverage.VERDICT_INVALID:
            return EXIT_INPUT
    return coverage.exit_status(report)
