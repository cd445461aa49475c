"""``audit-skills``, ``check-skill``, ``scaffold-fixture``, ``apply-scaffolds``: skill trees."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from pytest_agentic_evals import skills
from pytest_agentic_evals.cli.common import (
    EXIT_INPUT,
    EXIT_OK,
    add_format_option,
    add_output_option,
    positive_int,
    print_document,
    write_output,
)
from pytest_agentic_evals.jsonio import json_text
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.redaction import escape_line

# A scaffold asks for an exemption from the contract that only the run grants; say so where it
# is written, with the command that runs it.
SCAFFOLD_RUN_HINT = ("a scaffold shows the wiring, not that the skill works; it runs only where "
                     "the run grants its exemption")


def add_parser(commands: Any, name: str, help: str) -> None:
    parser = commands.add_parser(name, help=help)
    if name == "audit-skills":
        parser.add_argument("root", metavar="ROOT")
        add_output_option(parser)
        add_format_option(parser, {"json": "the report on stdout, the table on stderr",
                                   "table": "only the table, on stdout"}, default="json")
        parser.set_defaults(handler=audit_skills)
    elif name == "check-skill":
        parser.add_argument("skill_dir", metavar="SKILL_DIR")
        parser.set_defaults(handler=check_skill)
    elif name == "scaffold-fixture":
        parser.add_argument("skill_dir", metavar="SKILL_DIR")
        parser.add_argument("-o", "--output", metavar="PATH",
                            help="where to write it (default SKILL_DIR/fixtures/agentic_eval.json)")
        parser.add_argument("--force", action="store_true",
                            help="replace an existing fixture (never another file of the skill)")
        parser.set_defaults(handler=scaffold_fixture)
    else:
        parser.add_argument("root", metavar="ROOT")
        parser.add_argument("--write", action="store_true", help="write them (default: dry run)")
        parser.add_argument("--force", action="store_true",
                            help="also rewrite existing scaffold fixtures (never other fixtures)")
        parser.add_argument("--limit", type=positive_int, default=None, metavar="N",
                            help="at most N scaffolds, the first N in path order")
        add_output_option(parser, "the JSON receipt")
        parser.set_defaults(handler=apply_scaffolds)


def audit_skills(args: argparse.Namespace) -> int:
    """``audit-skills ROOT``: the eval posture of every skill; runs nothing, gates nothing."""
    if not Path(args.root).is_dir():
        print(f"{args.root}: not a directory", file=sys.stderr)
        return EXIT_INPUT
    report = skills.audit(Path(args.root))
    lines = skills.audit_lines(report)
    shown = "\n".join(escape_line(line) for line in lines)
    if args.format == "table":
        print(shown)
    else:
        print_document(json_text(report))
        print(shown, file=sys.stderr)
    write_output(report, args.output)
    return EXIT_OK


def _not_a_skill(skill_dir: Path) -> str:
    """Why ``skill_dir`` is not a skill folder, in its own words."""
    if not skill_dir.exists():
        return "does not exist"
    if not skill_dir.is_dir():
        return "is not a directory"
    return "no SKILL.md (not a skill folder)"


def check_skill(args: argparse.Namespace) -> int:
    """``check-skill SKILL_DIR``: the SKILL.md contract, as the static scaffold case runs it."""
    skill_dir = Path(args.skill_dir)
    if not (skill_dir / skills.SKILL_FILE).is_file():
        print(f"{args.skill_dir}: {_not_a_skill(skill_dir)}", file=sys.stderr)
        return EXIT_INPUT
    skill_md = skills.parse_skill_md(Path(os.path.realpath(skill_dir)),
                                     str(skill_dir / skills.SKILL_FILE))
    for finding in skill_md.findings:
        print(finding, file=sys.stderr)
    if skill_md.findings:
        return EXIT_INPUT
    print(f"OK: {skill_dir / skills.SKILL_FILE}: skill {skill_md.name} keeps the SKILL.md "
          "contract")
    return EXIT_OK


def scaffold_fixture(args: argparse.Namespace) -> int:
    # realpath, not Path.resolve(), which raises on a loop of links instead of naming it.
    skill_dir = Path(os.path.realpath(args.skill_dir))
    if not (skill_dir / skills.SKILL_FILE).is_file():
        print(f"{args.skill_dir}: {_not_a_skill(skill_dir)}", file=sys.stderr)
        return EXIT_INPUT
    target = Path(args.output) if args.output else skills.scaffold_target(skill_dir)
    problem = skills.scaffold_target_problem(skill_dir, target, args.force)
    if problem:
        print(f"{args.output or target}: {problem}", file=sys.stderr)
        return EXIT_INPUT
    target = Path(os.path.realpath(target))  # the file a link names is the one written
    try:
        data = skills.write_scaffold(skill_dir, target)
    except (OSError, FixtureError) as exc:
        message = exc.describe() if isinstance(exc, FixtureError) else exc.strerror
        print(f"{target}: scaffold not written: {message}", file=sys.stderr)
        return EXIT_INPUT
    print_document(json_text(data))
    print(f"wrote {target} (eval_kind scaffold, cases: "
          f"{', '.join(case['name'] for case in data['cases'])})", file=sys.stderr)
    print(f"{SCAFFOLD_RUN_HINT}: agentic-evals run {target} --allow-exempt", file=sys.stderr)
    return EXIT_OK


def apply_scaffolds(args: argparse.Namespace) -> int:
    """``apply-scaffolds ROOT``: a scaffold for every skill without a fixture; dry run unless
    ``--write``. ``--force`` also rewrites existing scaffolds, never any other fixture."""
    if not Path(args.root).is_dir():
        print(f"{args.root}: not a directory", file=sys.stderr)
        return EXIT_INPUT
    receipt = skills.apply_scaffolds(Path(args.root), args.write, args.force, args.limit)
    print_document(json_text(receipt))
    summary = receipt["summary"]
    print(f"{receipt['mode']}: {summary['created']} created, {summary['dry_run']} would be "
          f"created, {summary['skipped']} skipped, {summary['errors']} error(s)",
          file=sys.stderr)
    for error in receipt["errors"]:
        print(f"{error['fixture']}: {error['error']}", file=sys.stderr)
    if summary["created"]:
        print(f"{SCAFFOLD_RUN_HINT}: agentic-evals run <fixture> --allow-exempt",
              file=sys.stderr)
    write_output(receipt, args.output, name="receipt")
    return EXIT_INPUT if receipt["errors"] else EXIT_OK
