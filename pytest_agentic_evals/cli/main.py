"""The ``agentic-evals`` command: a dispatcher over one module per command group.

Only the module of the command that runs is imported (``agentic-evals --help`` imports
none), so that a command pays for what it uses. Each module adds its command's parser
(``add_parser(commands, name, help)``) and a handler; the handler returns the exit status.

Exit codes, for every command: 0 success, 1 the gate says no, 2 bad input, 141 the reader of
its output went away (``| head -1``); ``run`` adds 3, the runner itself failed, and 130,
interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import io
import sys
from collections.abc import Callable, Collection, Sequence
from types import ModuleType

from pytest_agentic_evals.cli.common import (
    EXIT_CLOSED_PIPE,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    CommandFailed,
    check_output,
    silence_closed_streams,
)


def _run() -> ModuleType:
    return importlib.import_module("pytest_agentic_evals.cli.run")


def _documents() -> ModuleType:
    return importlib.import_module("pytest_agentic_evals.cli.documents")


def _regressions() -> ModuleType:
    return importlib.import_module("pytest_agentic_evals.cli.regressions")


def _coverage() -> ModuleType:
    return importlib.import_module("pytest_agentic_evals.cli.coverage")


def _probe() -> ModuleType:
    return importlib.import_module("pytest_agentic_evals.cli.probe")


def _skill_trees() -> ModuleType:
    return importlib.import_module("pytest_agentic_evals.cli.skill_trees")


def _journeys() -> ModuleType:
    return importlib.import_module("pytest_agentic_evals.cli.journeys")


def _clean() -> ModuleType:
    return importlib.import_module("pytest_agentic_evals.cli.clean")


def _migrate() -> ModuleType:
    return importlib.import_module("pytest_agentic_evals.cli.migrate")


# name -> (its line in --help, the module that implements it), in the order --help lists them
COMMANDS: dict[str, tuple[str, Callable[[], ModuleType]]] = {
    "run": ("run fixtures' cases as trials and gate on readiness", _run),
    "validate": ("check fixtures without running anything", _documents),
    "report": ("render a saved JSON report for a person", _documents),
    "regressions": ("retained regressions: audit, show, verify fail-before-fix", _regressions),
    "probe": ("run each case against stand-ins of a broken skill: which oracles survive",
              _probe),
    "coverage": ("risk-based coverage of declared seams (executes nothing)", _coverage),
    "audit-skills": ("the eval posture of every skill under ROOT (runs nothing)", _skill_trees),
    "check-skill": ("check one skill's SKILL.md contract", _skill_trees),
    "scaffold-fixture": ("write a first fixture (eval_kind scaffold) for a skill", _skill_trees),
    "apply-scaffolds": ("scaffold every skill under ROOT that has no fixture", _skill_trees),
    "plan-journeys": ("bind requirements to what live discovery observed: a journey plan "
                      "over the state graph (executes nothing)", _journeys),
    "schema": ("print a JSON Schema shipped with the package", _documents),
    "clean": ("remove finished run directories (failed trials' kept output)", _clean),
    "migrate": ("rewrite files written for the earlier tool into today's preferred form "
                "(prints the diff; --write writes)", _migrate),
}


# Commands and options of the earlier tool that this one does not have, each with what to do
# instead: argparse's "invalid choice" or "unrecognized arguments" would say neither.
_NO_REMEDIATION = ("filing tickets per failing category is not part of agentic-evals; the "
                   "report names every failing case (agentic-evals report REPORT.json), and "
                   "run --only-category ID --map MAP reruns one category")
EARLIER_COMMANDS = {
    "categorize": "run --only-category ID --map MAP runs a category's cases, and the report "
                  "carries each case's category and category_id",
    "category-dag": _NO_REMEDIATION,
    "remediate": _NO_REMEDIATION,
    "remediate-loop": _NO_REMEDIATION,
}
EARLIER_OPTIONS = {
    "--validator": "this command checks each SKILL.md itself (as check-skill does), with no "
                   "external validator: leave the option out",
    "--timeout-seconds": "this command runs nothing, so nothing can time out: leave the option "
                         "out",
}
EARLIER_OPTIONS_OF = ("audit-skills", "apply-scaffolds")


def build_parser(complete: Collection[str] = tuple(COMMANDS)) -> argparse.ArgumentParser:
    """The parser, complete for the commands in ``complete`` (all of them unless said); the
    others are only named, with their help line, and their modules are not imported."""
    parser = argparse.ArgumentParser(
        prog="agentic-evals",
        description="Honest, repeatable, fail-closed evaluation of agent skills.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help, module) in COMMANDS.items():
        if name in complete:
            module().add_parser(commands, name, help)
        else:
            commands.add_parser(name, help=help)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # Lines for a person go out in the locale's encoding, a character it cannot spell escaped
    # (as Python does on stderr) instead of ending the command; documents are written in UTF-8
    # (common.print_document).
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")
    arguments = list(sys.argv[1:] if argv is None else argv)
    # Everything after "--" belongs to pytest; argparse would try to read it as ours.
    pytest_args: list[str] = []
    if "--" in arguments:
        split = arguments.index("--")
        arguments, pytest_args = arguments[:split], arguments[split + 1:]
    # The command is the first word that is not an option: the top level has only --help.
    command = next((word for word in arguments if not word.startswith("-")), None)
    if command in EARLIER_COMMANDS:
        print(f"agentic-evals: {command} was a command of the earlier tool: "
              f"{EARLIER_COMMANDS[command]}", file=sys.stderr)
        return EXIT_INPUT
    parser = build_parser([command] if command in COMMANDS else [])
    args, extra = parser.parse_known_args(arguments)
    earlier = [word.split("=")[0] for word in extra if word.split("=")[0] in EARLIER_OPTIONS]
    if earlier and args.command in EARLIER_OPTIONS_OF:
        parser.error(f"{earlier[0]} was an option of the earlier tool's {args.command}: "
                     f"{EARLIER_OPTIONS[earlier[0]]}")
    if extra:
        hint = ""
        if args.command == "run":
            hint = (f"; pytest options go after --: agentic-evals run FIXTURE... -- "
                    f"{' '.join(extra)}")
        parser.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    if pytest_args and args.command != "run":
        parser.error("arguments after -- are only for 'run'")
    empty = _given_empty(parser, args)
    if empty is not None:
        parser.error(f"argument {empty}: expected a value, got an empty string")
    args.pytest_args = pytest_args
    try:
        if getattr(args, "checks_output", False):
            check_output("--output", args.output)
        status = int(args.handler(args))
        if sys.stdout is not None:
            sys.stdout.flush()  # a closed pipe is met here, not in Python's flush at exit
        return status
    except CommandFailed as exc:
        print(f"agentic-evals: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # What it printed, or wrote to --output (/dev/stdout, a FIFO), had no reader any more
        # (`| head -1`): the command ends there, quietly, as a program SIGPIPE ends.
        silence_closed_streams()
        return EXIT_CLOSED_PIPE


def _given_empty(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """The option (or operand) given an empty string, if one was: ``--output ''`` or
    ``--only-category ''`` would otherwise read as not given at all, and the command do what
    it does without it (run every case, write no file) instead of saying so."""
    for action in parser._actions:  # argparse keeps no public list of a parser's arguments
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(args.command)
            return None if chosen is None else _given_empty(chosen, args)
        value = getattr(args, action.dest, None)
        values = value if isinstance(value, list) else [value]
        if "" in values:
            return "/".join(action.option_strings) or str(action.metavar or action.dest)
    return None


if __name__ == "__main__":
    sys.exit(main())
