"""What every command shares: exit codes, argument types, and the output flags.

Output, for every command that can print its result in more than one form: ``--format``
with the forms that command has (``table``, ``json``, ``md``), and ``--json``, another
spelling of ``--format json``, wherever JSON is one of them. ``--output PATH`` (or ``-o PATH``,
as the earlier tool spelled it) writes the JSON document to PATH, atomically, whatever is printed.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from pytest_agentic_evals.jsonio import (
    UNENCODABLE,
    PinnedOutput,
    json_text,
    output_path_problem,
    write_json_atomically,
)
from pytest_agentic_evals.model import ALLOW_EXEMPT_RUN
from pytest_agentic_evals.redaction import escape_line

EXIT_OK, EXIT_GATE, EXIT_INPUT = 0, 1, 2
EXIT_RUNNER = 3  # the runner itself failed: pytest killed or crashed under `run`
EXIT_INTERRUPTED = 130
# The reader of the output went away before reading it all (``| head -1``): the status a shell
# shows for a program that SIGPIPE ended, 128 + 13.
EXIT_CLOSED_PIPE = 141


class CommandFailed(Exception):
    """A problem that ends the command with one line on stderr, never a traceback."""

    def __init__(self, message: str, status: int = EXIT_INPUT) -> None:
        super().__init__(message)
        self.status = status


def add_allow_exempt_option(parser: argparse.ArgumentParser) -> None:
    """``--allow-exempt`` of the commands that judge fixtures without a pytest session (``run``
    has it from the plugin's option table, with the same meaning)."""
    parser.add_argument(ALLOW_EXEMPT_RUN, action="store_true",
                        help="grant the exemption from the anti-slush contract that a fixture "
                             "of eval_kind scaffold or runner_selftest asks for")


def positive_int(text: str) -> int:
    """An argparse type for counts and day windows: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


# The forms of a command whose report is read at a glance or by a program.
TABLE_OR_JSON = {"table": "a table", "json": "the JSON report"}


def add_format_option(
    parser: argparse.ArgumentParser, forms: dict[str, str], default: str
) -> None:
    """``--format`` with ``forms`` (name -> what it prints), and ``--json`` when JSON is one."""
    described = "; ".join(f"{name}: {meaning}" + (" (default)" if name == default else "")
                          for name, meaning in forms.items())
    parser.add_argument("--format", choices=tuple(forms), default=default, help=described)
    if "json" in forms:
        parser.add_argument("--json", dest="format", action="store_const", const="json",
                            help="the same as --format json")


def add_output_option(parser: argparse.ArgumentParser, what: str = "the JSON report") -> None:
    """``-o/--output``; the dispatcher checks the path before the command does its work."""
    parser.add_argument("-o", "--output", metavar="PATH",
                        help=f"also write {what} here (atomically)")
    parser.set_defaults(checks_output=True)


def print_document(text: str) -> None:
    """A document (JSON, Markdown, a diff) on stdout in UTF-8, as it is in a file, whatever the
    locale's encoding: a report naming a case, a path or an output the locale cannot spell is
    still the whole report, not an encoding error that loses it."""
    stream = sys.stdout
    if stream is None:  # a process without stdout: print() writes nothing either
        return
    stream.flush()
    binary = getattr(stream, "buffer", None)
    if binary is None:  # a text-only stream put in stdout's place
        stream.write(text)
        return
    binary.write(text.encode("utf-8", errors=UNENCODABLE))
    binary.flush()


def emit(report: dict[str, Any], args: argparse.Namespace, lines: list[str]) -> None:
    """The table (``lines``) or the JSON on stdout, as ``--format`` says; the JSON at --output."""
    if args.format == "json":
        print_document(json_text(report))
    else:
        for line in lines:
            print(escape_line(line))
    write_output(report, args.output)


def silence_closed_streams() -> None:
    """After a write into a pipe whose reader has gone: stdout and stderr, where that is
    where they go, are pointed at /dev/null, so that what is still buffered for them (and
    Python's last flush at exit) goes nowhere instead of failing again with a traceback."""
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        try:
            stream.flush()
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass


def check_output(flag: str, path: str | None) -> None:
    """Refuse, before the command does its work, an output path it could not write or must
    not replace (a directory, the user's own input files)."""
    problem = output_path_problem(path) if path else None
    if problem:
        raise CommandFailed(f"{flag} {path}: {problem}")


def write_output(
    report: dict[str, Any], output: str | PinnedOutput | None, name: str = "report"
) -> None:
    """Write the command's JSON document to ``output``, pinned already when the command ran
    something it evaluates (see jsonio.PinnedOutput)."""
    if isinstance(output, PinnedOutput):
        output.write_json(report)
    elif output:
        write_json_atomically(output, report)
    if output:
        print(f"{name}: {output}", file=sys.stderr)


def pin_output(flag: str, path: str | None) -> PinnedOutput | None:
    """The output file decided now, before the command runs what it evaluates."""
    if not path:
        return None
    try:
        return PinnedOutput(path)
    except OSError as exc:
        raise CommandFailed(f"{flag} {path}: cannot write: {exc.strerror}") from None
