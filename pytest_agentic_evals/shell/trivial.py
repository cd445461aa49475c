"""Triviality: a command that proves nothing, because every program it runs is a constant
builtin or only reads static files (``echo ok``, ``cat expected.txt``), or it runs nothing."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_agentic_evals.shell.command import SimpleCommand, basename, render
from pytest_agentic_evals.shell.programs import CONSTANT, PREFIXES, constant_kind
from pytest_agentic_evals.shell.walker import simple_commands


def _is_constant(command: SimpleCommand) -> bool:
    name = command.argv[0]
    if "/" in name and not name.startswith("/"):
        return False  # ./echo is the skill's own script, whatever its name
    base = basename(name)
    return base in CONSTANT or base in PREFIXES


def triviality(argv: Sequence[str]) -> str | None:
    """None when the command does something; otherwise why it proves nothing.

    Trivial means every simple command (after unwrapping) is a constant builtin such as
    ``echo``/``printf``/``true``/``exit``/``test``/``cd``/``export``, or only reads static
    files (``cat``/``ls``/``pwd``/``head``/``tail``/``wc``), or nothing is left at all.
    """
    commands = simple_commands(argv)
    if not commands:
        return "trivial: the command runs nothing (only assignments, comments or redirections)"
    if any(not _is_constant(command) for command in commands):
        return None
    listed = "; ".join(render(command.argv, 60) for command in commands[:6])
    if len(commands) > 6:
        listed += "; ..."
    kinds = sorted({constant_kind(basename(command.argv[0])) for command in commands})
    return f"trivial: every simple command is {' or '.join(kinds)} ({listed})"
