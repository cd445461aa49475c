"""Unwrapping and the walk that collects simple commands.

Shells given ``-c`` are unwrapped and their script parsed, recursively; prefixes such as
``env``, ``exec``, ``nice`` or ``sudo`` are peeled off; ``eval`` in a script runs its words
as script.  On the way the walk keeps what a judgement of the command needs besides the
commands: the data fed to them (assignment values, input redirections, a script's positional
arguments), the scripts it parsed, and the directory each command runs in.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from pytest_agentic_evals.shell.command import (
    ORIGIN_ARGV,
    ORIGIN_SCRIPT,
    CommandParseError,
    SimpleCommand,
    basename,
)
from pytest_agentic_evals.shell.lexer import expand_references, tokenize
from pytest_agentic_evals.shell.parser import (
    ASSIGNMENT,
    POP,
    PUSH,
    Event,
    Parser,
    RawCommand,
    Rebound,
)
from pytest_agentic_evals.shell.programs import SHELLS

# Deep nesting only comes from generated or hostile input; a cap keeps recursion bounded.
_MAX_DEPTH = 32
# Re-parsing substituted text can repeat work; a global budget keeps analysis linear-ish.
_MAX_STEPS = 20_000
# shlex builds tokens by string concatenation, quadratic in a word's length: cap the input.
_MAX_SCRIPT = 100_000


def skip_options(
    words: Sequence[str], start: int, short_arg: str = "", long_arg: Iterable[str] = ()
) -> int:
    """Index of the first operand after options; ``short_arg`` letters take a value."""
    long_with_value = frozenset(long_arg)
    i = start
    while i < len(words):
        w = words[i]
        if w == "--":
            return i + 1
        if w.startswith("--"):
            i += 2 if ("=" not in w and w in long_with_value) else 1
            continue
        if w.startswith("-") and len(w) > 1:
            i += 1
            for pos, ch in enumerate(w[1:], start=1):
                if ch in short_arg:
                    if pos == len(w) - 1:
                        i += 1  # the value is the next word ("-n 5"), else it is attached
                    break
            continue
        return i
    return i


def _reads_only(words: Sequence[str]) -> bool:
    """Whether a shell is told not to run what it reads (``-n``, ``-o noexec``): it only
    checks the syntax of its script."""
    i = 1
    while i < len(words):
        w = words[i]
        if w in ("--", "-") or len(w) < 2 or w[0] not in "-+":
            return False
        i += 1
        if w.startswith("--"):
            i += 1 if w in ("--rcfile", "--init-file") else 0
            continue
        if w[0] == "-" and "n" in w[1:]:
            return True
        if w[-1] in "oO":  # the option name follows
            if w[0] == "-" and w[-1] == "o" and i < len(words) and words[i] == "noexec":
                return True
            i += 1
    return False


def _shell_script(words: Sequence[str]) -> tuple[str | None, list[str]]:
    """For ``sh [options] -c SCRIPT [ARG0 ARGS...]``: the script and its positional args.

    Returns ``(None, [])`` for a shell that runs a script file or reads stdin.
    """
    i = 1
    has_c = False
    while i < len(words):
        w = words[i]
        if w in ("--", "-"):
            i += 1
            break
        if w.startswith("--"):
            i += 2 if w in ("--rcfile", "--init-file") else 1
            continue
        if len(w) > 1 and w[0] in "-+":
            i += 1
            for ch in w[1:]:
                if ch == "c" and w[0] == "-":
                    has_c = True
                elif ch in "oO":  # -o pipefail, +o xtrace, -O extglob: the option name follows
                    i += 1
            continue
        break
    if not has_c:
        return None, []
    if i >= len(words):
        raise CommandParseError(f"{basename(words[0])} -c is given no script to run")
    return words[i], list(words[i + 1 :])


class _Unwrapped(NamedTuple):
    chdirs: list[str | None]  # env -C directories, applied in order (None: unknowable)
    values: list[str]  # values of VAR=value words given to env/sudo
    assigned: dict[str, str]  # the same VAR=value words, by name: the wrapped command's env


def _unwrap_env(words: list[str], out: _Unwrapped) -> list[str] | None:
    i = 1
    while i < len(words):
        w = words[i]
        if w == "--":
            i += 1
            break
        if ASSIGNMENT.match(w):
            name, _, value = w.partition("=")
            out.values.append(value)
            out.assigned[name] = value
            i += 1
            continue
        split_string: str | None = None
        if w in ("-S", "--split-string"):
            split_string = words[i + 1] if i + 1 < len(words) else ""
            i += 2
        elif w.startswith("--split-string="):
            split_string = w.partition("=")[2]
            i += 1
        elif w.startswith("-S") and not w.startswith("--"):
            split_string = w[2:]
            i += 1
        if split_string is not None:
            # env -S "prog args" splits its argument into words: continue with those.
            if len(split_string) > _MAX_SCRIPT:
                raise CommandParseError("env -S string is too long to analyse")
            try:
                parts = shlex.split(split_string)
            except ValueError as exc:
                raise CommandParseError(f"cannot split env -S string: {exc}") from exc
            return ["env", *parts, *words[i:]]
        if w in ("-u", "--unset"):
            i += 2
        elif w in ("-C", "--chdir"):
            out.chdirs.append(words[i + 1] if i + 1 < len(words) else None)
            i += 2
        elif w.startswith("--chdir="):
            out.chdirs.append(w.partition("=")[2])
            i += 1
        elif w.startswith("-C") and not w.startswith("--"):
            out.chdirs.append(w[2:])
            i += 1
        elif w.startswith("-") and len(w) > 1:
            i += 2 if (not w.startswith("--") and w[-1] in "uC") else 1
        elif w == "-":
            i += 1
        else:
            break
    return words[i:] if i < len(words) else None


def _unwrap_prefix(words: list[str], out: _Unwrapped) -> list[str] | None:
    """The command a prefix such as ``nice -n 5 CMD`` wraps.

    None when ``words`` is no prefix or wraps nothing (``env`` alone prints the environment,
    so it stays a simple command of its own); ``[]`` for ``exec`` with only redirections.
    """
    base = basename(words[0])
    if base == "env":
        return _unwrap_env(words, out)
    if base == "command":
        if any(w in ("-v", "-V") for w in words[1:]):
            return None  # command -v only looks a program up
        i = skip_options(words, 1)
    elif base in ("nohup", "builtin", "setsid"):
        i = skip_options(words, 1)
    elif base == "exec":
        i = skip_options(words, 1, short_arg="a")
        if i >= len(words):
            return []  # exec with only redirections runs nothing
    elif base == "nice":
        i = skip_options(words, 1, short_arg="n", long_arg=("--adjustment",))
    elif base == "time":
        i = skip_options(words, 1, short_arg="fo", long_arg=("--format", "--output"))
    elif base == "timeout":
        i = skip_options(words, 1, short_arg="sk", long_arg=("--signal", "--kill-after"))
        i += 1  # the duration
    elif base == "stdbuf":
        i = skip_options(words, 1, short_arg="ioe", long_arg=("--input", "--output", "--error"))
    elif base in ("sudo", "doas"):
        i = skip_options(
            words, 1, short_arg="ugCDprtUTR" if base == "sudo" else "uC",
            long_arg=("--user", "--group", "--chdir", "--prompt", "--role", "--type"),
        )
        while i < len(words) and ASSIGNMENT.match(words[i]):
            out.values.append(words[i].partition("=")[2])
            i += 1
    else:
        return None
    return words[i:] if i < len(words) else None


# A value a variable can stand for in the judgement: one word, nothing the shell would expand
# further (a path such as ../run.sh).  Anything else leaves the variable unknown.
_PLAIN_VALUE = re.compile(r"[^\s$`*?\[\]~\\\x00][^\s$`*?\[\]\\\x00]*")
# Builtins whose operands may be assignments: ``export R=../run.sh``.
_DECLARING = frozenset({"export", "readonly", "declare", "typeset", "local"})
# Builtins that unset their operands or give them a value read at run time.
_REBINDING = frozenset({"unset", "read", "readarray", "mapfile", "getopts"})


class Output(NamedTuple):
    """A file an output redirection writes, named as written, and the directory (relative to
    the command's; None: unknowable) it is opened from."""

    target: str
    workdir: str | None


@dataclass
class _Scope:
    """What the shell knows where a command runs: the working directory, relative to ``cwd``
    (None: unknowable), and the variables whose value is known, with those exported."""

    workdir: str | None = "."
    variables: dict[str, str] = field(default_factory=dict)
    exported: set[str] = field(default_factory=set)
    outputs: tuple[Output, ...] = ()
    """Where the output of the commands run here goes, by the redirections of the shells
    around them (``bash -c 'sort x' > out.json``)."""

    def copy(self) -> _Scope:
        return _Scope(self.workdir, dict(self.variables), set(self.exported), self.outputs)

    def environment(self, workdir: str | None, extra: Mapping[str, str]) -> _Scope:
        """The scope of a shell started from this one: it sees the exported variables and
        those assigned for it alone (``R=x bash -c ...``, ``env R=x bash -c ...``)."""
        scope = _Scope(workdir)
        scope.assign((f"{name}={self.variables[name]}" for name in self.exported
                      if name in self.variables), export=True)
        scope.assign((f"{name}={value}" for name, value in extra.items()), export=True)
        return scope

    def assign(self, words: Iterable[str], export: bool = False) -> None:
        for word in words:
            match = _PLAIN_ASSIGNMENT.match(word)
            if match is None:
                if export and _NAME.fullmatch(word):
                    self.exported.add(word)  # export R: the value assigned earlier goes along
                continue
            name, value = match.group(1), word[match.end() :]
            if _PLAIN_VALUE.fullmatch(value):
                self.variables[name] = value
            else:  # computed at run time ($(pwd)/run.sh, $OTHER, *.sh): not guessed
                self.variables.pop(name, None)
            if export:
                self.exported.add(name)


_PLAIN_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _join_dir(workdir: str | None, target: str | None) -> str | None:
    if workdir is None or target is None:
        return None
    if target.startswith("~"):
        target = os.path.expanduser(target)
    if not target or target.startswith("~") or any(ch in target for ch in "$`*?["):
        return None  # computed at run time: cannot tell where it leads
    if os.path.isabs(target):
        return os.path.normpath(target)
    return os.path.normpath(os.path.join(workdir, target))


def _cd_target(words: Sequence[str], workdir: str | None) -> str | None:
    base = basename(words[0])
    if base == "popd":
        return None
    i = 1
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        i += 1
    if i >= len(words) or words[i] == "-" or words[i].startswith("+"):
        return None  # home directory, previous directory or the stack: not knowable here
    return _join_dir(workdir, words[i])


@dataclass(frozen=True)
class _Script:
    """What a script defines: its functions, and the bodies of those not called yet."""

    functions: set[str]
    bodies: dict[str, list[Event]]


class Written(NamedTuple):
    """A file the output of ``programs`` (the first words of what runs inside a redirected
    group, or the program piped into ``tee``) goes to; ``position`` is the number of commands
    found when it was read: a group's come before it, ``tee`` and what follows ``exec`` at or
    after it."""

    output: Output
    programs: tuple[str, ...]
    position: int


@dataclass(frozen=True)
class Found:
    command: SimpleCommand
    workdir: str | None
    inputs: tuple[str, ...]
    outputs: tuple[Output, ...] = ()
    """The files its output redirections write, also those of the shells it runs in."""


class Walker:
    """Collects simple commands; also what feeds them data and the scripts it parsed."""

    def __init__(self) -> None:
        self.found: list[Found] = []
        self.extra_inputs: list[str] = []
        self.written: list[Written] = []
        """Files written by what is not one simple command: a group redirected as a whole,
        ``exec > file``, ``tee`` given a pipe (those of a simple command are in its
        :attr:`Found.outputs`)."""
        self.compound_inputs: list[tuple[str, str | None]] = []
        """(file, working directory) of input redirections with no simple command of their
        own: into a compound command (``while read l; do ...; done < file``) or into nothing
        (``$(< file)``)."""
        self.pipes: list[tuple[int, int]] = []
        """(writer, reader): the commands found at these positions are joined by a pipe (the
        last command before ``|`` and the first after it)."""
        self.scripts: list[str] = []
        self.steps = 0

    def _spend(self, depth: int) -> None:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise CommandParseError(
                f"command is too complex to analyse (more than {_MAX_STEPS} commands or scripts)"
            )
        if depth > _MAX_DEPTH:
            raise CommandParseError(
                f"command nests shells or substitutions more than {_MAX_DEPTH} levels deep"
            )

    def command(
        self,
        words: list[str],
        origin: str,
        depth: int,
        scope: _Scope,
        inputs: Sequence[str] = (),
        assignments: Mapping[str, str] | None = None,
        outputs: Sequence[Output] = (),
    ) -> None:
        """One command of ``words``; ``assignments`` are the ``VAR=value`` words before it,
        which a shell it starts sees as its environment, and ``outputs`` the files its output
        redirections write."""
        self._spend(depth)
        unwrapped = _Unwrapped([], [], dict(assignments or {}))
        current: list[str] | None = words
        while current:
            self._spend(depth)
            inner = _unwrap_prefix(current, unwrapped)
            if inner is None:
                break
            current = inner
        self.extra_inputs.extend(unwrapped.values)
        if not current:
            self.extra_inputs.extend(inputs)
            return
        workdir = scope.workdir
        for target in unwrapped.chdirs:
            workdir = _join_dir(workdir, target)
        base = basename(current[0])
        if base in SHELLS and _reads_only(current):
            self.extra_inputs.extend(current[1:])  # its script is data, never run
            self.extra_inputs.extend(inputs)
            return
        if base in SHELLS:
            script, positional = _shell_script(current)
            if script is not None:
                # The script's $0, $1... are data handed to it, like an input file.
                self.extra_inputs.extend(positional)
                self.extra_inputs.extend(inputs)
                started = scope.environment(workdir, unwrapped.assigned)
                started.outputs = (*outputs, *scope.outputs)
                self.script(script, depth + 1, started)
                return
        if base == "eval" and origin == ORIGIN_SCRIPT:
            self.extra_inputs.extend(inputs)
            self.script(" ".join(current[1:]), depth + 1, scope)  # eval shares the shell
            return
        self.found.append(Found(SimpleCommand(tuple(current), origin), workdir, tuple(inputs),
                                (*outputs, *scope.outputs)))
        if origin == ORIGIN_SCRIPT and base == "trap" and len(current) >= 3 \
                and current[1] not in ("-", "") and not current[1].startswith("-"):
            # The action runs later, on the signal or at exit: its commands may run too.
            self.script(current[1], depth + 1, scope.copy())
        if origin == ORIGIN_SCRIPT and base in ("cd", "pushd", "popd"):
            scope.workdir = _cd_target(current, scope.workdir)

    def script(self, text: str, depth: int, scope: _Scope) -> None:
        self._spend(depth)
        if len(text) > _MAX_SCRIPT:
            raise CommandParseError(
                f"shell script is too long to analyse ({len(text)} characters, "
                f"limit {_MAX_SCRIPT})"
            )
        self.scripts.append(text)
        parser = Parser(tokenize(text))
        self.events(parser.parse(), _Script(parser.functions, parser.bodies), depth, scope)

    def events(self, events: list[Event], script: _Script, depth: int, scope: _Scope) -> None:
        """The commands of a script (or of a function body, where it is called)."""
        saved: list[_Scope] = []
        for event in events:
            if event == PUSH:
                saved.append(scope)
                scope = scope.copy()
            elif event == POP:
                if saved:
                    scope = saved.pop()
            elif isinstance(event, Rebound):
                scope.variables.pop(event.name, None)
            elif isinstance(event, RawCommand) and not event.dead:
                for inner in event.scripts:  # substitutions run first, in a subshell
                    self.script(inner, depth + 1, scope.copy())
                self.raw_command(event, script, depth, scope)

    def raw_command(
        self, event: RawCommand, script: _Script, depth: int, scope: _Scope
    ) -> None:
        """A command of a script, its variable references replaced by the values known."""
        words = [expand_references(word, scope.variables) for word in event.words]
        inputs = [expand_references(word, scope.variables) for word in event.inputs]
        assigned: dict[str, str] = {}
        while words and ASSIGNMENT.match(words[0]):
            name, _, value = words.pop(0).partition("=")
            assigned[name] = value
            self.extra_inputs.append(value)
        outputs = tuple(Output(expand_references(word, scope.variables), scope.workdir)
                        for word in event.outputs)
        if not words and outputs:
            programs = tuple(basename(expand_references(name, scope.variables))
                             for name in event.programs)
            self.written += [Written(output, programs, len(self.found)) for output in outputs]
        if words and event.piped_from is not None and self.found:
            self.pipes.append((len(self.found) - 1, len(self.found)))
        if words and basename(words[0]) == "tee" and event.piped_from is not None:
            # "printf ... | tee out.txt": the files tee names hold what it is piped.
            source = basename(expand_references(event.piped_from, scope.variables))
            self.written += [Written(Output(word, scope.workdir), (source,), len(self.found))
                             for word in words[1:] if not word.startswith("-")]
        if not words:
            scope.assign(f"{name}={value}" for name, value in assigned.items())
            self.extra_inputs.extend(inputs)
            self.compound_inputs += [(word, scope.workdir) for word in inputs]
        elif words[0] in script.functions:
            # Calling a function of the script runs its body, here (the first call is enough
            # to know what it runs); the name itself runs nothing more.
            self.extra_inputs.extend(words[1:])
            self.extra_inputs.extend(inputs)
            body = script.bodies.pop(words[0], None)
            if body is not None:
                self.events(body, script, depth + 1, scope)
        else:
            operands = [word for word in words[1:] if not word.startswith(("-", "+"))]
            if words[0] in _DECLARING:
                scope.assign(operands, export=words[0] == "export")
            elif words[0] in _REBINDING:
                for name in operands:  # unset R, read R: no value known any more
                    scope.variables.pop(name, None)
            self.command(words, ORIGIN_SCRIPT, depth, scope, inputs, assigned, outputs)


def walk(argv: Sequence[str], environment: Mapping[str, str] | None = None) -> Walker:
    """The walk over ``argv``; a shell it starts sees ``environment`` (the variables the
    command is given, whose plain values stand in for their references in its scripts)."""
    if isinstance(argv, str):
        raise CommandParseError("a command must be an argv list of strings, not one string")
    words = list(argv)
    if not words:
        raise CommandParseError("the command is empty: argv needs at least the program")
    for index, word in enumerate(words):
        if not isinstance(word, str):
            raise CommandParseError(f"argv[{index}] is {type(word).__name__}, not a string")
        if "\x00" in word:
            raise CommandParseError(f"argv[{index}] contains a NUL byte, which no program gets")
    walker = Walker()
    scope = _Scope()
    scope.assign((f"{name}={value}" for name, value in (environment or {}).items()), export=True)
    walker.command(words, ORIGIN_ARGV, 0, scope)
    return walker


def simple_commands(argv: Sequence[str]) -> list[SimpleCommand]:
    """Flatten ``argv`` into the simple commands it runs, in order.

    ``sh``/``bash``/``zsh``/``dash``/``ksh`` given ``-c`` (alone or in a flag cluster, after
    any other options) are replaced by the commands of their script, recursively; a shell
    running a script file stays one command.  Prefixes (``env``, ``exec``, ``command``,
    ``nohup``, ``nice``, ``time``, ``timeout``, ``setsid``, ``stdbuf``, ``sudo``) are peeled
    off, as are leading ``VAR=value`` words of script commands.  Raises
    :class:`CommandParseError` for an empty argv, a ``-c`` without script, unbalanced quotes
    or unterminated substitutions.
    """
    return [found.command for found in walk(argv).found]
