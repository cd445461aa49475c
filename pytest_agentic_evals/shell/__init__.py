"""What a fixture command really runs, judged without running it.

A fixture case's ``command`` is an argv list that the runner executes without a shell.  The
anti-slush contract and live qualification ask of it: does it prove anything (``echo ok``
does not), does it reach the skill's own code (``echo run.sh`` only pretends to, ``date``
runs nothing of the skill), does it feed itself canned stub data, does it sample at random?
Judging those by substring was easy to fool, so this package first flattens a command into
*simple commands*, the way a shell would run them, and judges those:

* shells invoked with ``-c`` (``bash -lc``, ``/bin/sh -ec``, ``bash -o pipefail -c`` ...) are
  unwrapped and their script is parsed, recursively;
* prefixes that only change how a program runs (``env``, ``exec``, ``command``, ``nohup``,
  ``nice``, ``time``, ``timeout``, ``setsid``, ``stdbuf``, ``sudo``) are peeled off;
* scripts are split on ``;`` ``&&`` ``||`` ``|`` ``&`` ``(`` ``)`` and newlines, redirections
  and their targets are removed, comments, heredoc bodies and shell keywords are skipped, and
  command substitutions (``$(...)``, backquotes, ``<(...)``) contribute their own commands;
* a variable the script (or the command's environment) gives a plain one-word value stands
  for that value where it is referenced (``R=../run.sh; $R go`` runs ``../run.sh``).

The path through the modules: ``lexer`` (script to tokens) -> ``parser`` (tokens to raw
commands and subshell scopes) -> ``walker`` (unwrapping, the simple commands with the data fed
to them and the directory they run in) -> the judgements: ``trivial``, ``entrypoints`` (with
``programs``, what is known about programs by name), ``stubs`` and ``randomness``.
``command`` holds the types they share.  Nothing here executes a command, and nothing imports
pytest, so the loader, the CLI and the plugin share it.
"""

from pytest_agentic_evals.shell.command import CommandParseError, SimpleCommand
from pytest_agentic_evals.shell.entrypoints import (
    Reached,
    SkillCode,
    declared_entrypoint_problem,
    entrypoint_reached,
    program_reaching,
    real_world_entrypoint,
)
from pytest_agentic_evals.shell.randomness import Sampling, sampling
from pytest_agentic_evals.shell.stubs import fixture_stub_inputs
from pytest_agentic_evals.shell.trivial import triviality
from pytest_agentic_evals.shell.walker import simple_commands

__all__ = [
    "CommandParseError",
    "Reached",
    "Sampling",
    "SimpleCommand",
    "SkillCode",
    "declared_entrypoint_problem",
    "entrypoint_reached",
    "fixture_stub_inputs",
    "program_reaching",
    "real_world_entrypoint",
    "sampling",
    "simple_commands",
    "triviality",
]
