"""Whose words a file read back holds: the skill's, or the fixture's.

Reading a file back is an oracle for a live case only when what the file holds depends on the
work of the skill.  A file the case's input artifacts put there holds the fixture's words, and
so does one whose last write in the command is by a program that is not the skill's and reads
only what was there before the trial: a constant builtin (``echo '{"ok": true}' > out.json``),
any program given only files of the skill's folder (``cp ../expected.json out.json``,
``sort ../expected.json > out.json``, ``python3 -c "shutil.copy('../expected.json',
'out.json')"``), or inline code that names no file the trial makes (``python3 -c 'print(1)' >
out.json``).  Whatever the skill did, the read-back then finds the fixture's own answer.  What
the skill pipes into a program is the skill's (``bash run.sh | sort > out.json``).

A write counts when a command's output is redirected into the file (also the redirection of a
shell around it, of a group, ``exec > file`` or ``tee``), when a copier (``cp``, ``install``,
``ln``, ``rsync``, ``dd of=``) or a program's ``-o``/``--output`` names it, when inline code
names it beside a writing call, and when the skill's own code is given its name (the skill may
write it).  Judged without running anything; a write it cannot see keeps the read-back an
oracle, and the run's noop control of live cases and the probes (a skill that does nothing)
are the run-time answer.

The same judgement tells what the command prints by itself: the words and files of its own
programs (``bash run.sh && echo Ada``), which are in its output whatever the skill does.
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pytest_agentic_evals.loading.contract import command_environment
from pytest_agentic_evals.model import Case, artifact_assertions
from pytest_agentic_evals.shell import CommandParseError, SkillCode
from pytest_agentic_evals.shell.command import basename
from pytest_agentic_evals.shell.entrypoints import reaching_each
from pytest_agentic_evals.shell.programs import CONSTANT, STATIC_READERS, interpreter_family
from pytest_agentic_evals.shell.walker import Found, Walker, Written, walk

# Programs that copy the files named by their operands to the one named by their last.
_COPIERS = frozenset({"cp", "install", "ln", "rsync"})
# Constant builtins that print only their own words (``cat`` and the other static readers
# print what they read, which may be the skill's output).
_OWN_WORDS = CONSTANT - STATIC_READERS
# A quoted string inside inline code (``open('out.json', 'w')``).
_QUOTED = re.compile(r"""'([^'\n]*)'|"([^"\n]*)\"""")
# What says inline code writes a file it names.
_WRITING = re.compile(r"""write|dump|copy|move|rename|link|save|['"][wax]b?\+?['"]|>""")
# Programs that read the environment they are given and may print it.
_READ_THE_ENVIRONMENT = frozenset({"printenv", "env", "set", "export", "declare", "typeset"})
# Programs that run code of their own, beside the interpreters: they may print any text.
_COMPUTERS = frozenset({"awk", "gawk", "mawk", "nawk", "jq", "bc", "dc", "expr"})
# A word that looks like a file name: it has a folder or an extension.
_FILE_NAME = re.compile(r"[\w.+-]*\w\.[A-Za-z][A-Za-z0-9]{0,5}")
# Programs that may name the entrypoint without reading what it holds: they print the name,
# or look at what a stand-in in its place shares (it is there, a file, executable).
_NOT_READING = frozenset({"chmod", "test", "[", "[[", "echo", "printf", "basename", "dirname"})
# ...but a test comparing files looks at what a stand-in does not share: its age (it is
# written when its control is played) or its identity.
_TESTS = frozenset({"test", "[", "[["})
_COMPARING_FILES = frozenset({"-nt", "-ot", "-ef"})


@dataclass(frozen=True)
class _Walked:
    """The command's walk, with what is known of each command it found: whether it reaches
    the skill's code, and whether what it reads comes down a pipe from the skill."""

    walker: Walker
    cwd: Path
    reaches: list[bool]
    fed: list[bool]

    def own(self, index: int) -> bool:
        """Whether the command at ``index`` is one of the fixture's own programs."""
        return not self.reaches[index] and not self.fed[index]


def _walked(case: Case) -> _Walked | None:
    """The walk of the case's command; None when it cannot be analysed or the skill's
    directory is unknown (then nothing is known of whose words anything holds)."""
    if case.skill_dir is None:
        return None
    try:
        walker = walk(case.judged_command, command_environment(case))
    except CommandParseError:
        return None
    cwd = Path(os.path.abspath(case.cwd))
    reaches = reaching_each(walker, cwd, SkillCode(case.skill_dir, case.entrypoints))
    fed = [False] * len(reaches)
    for writer, reader in walker.pipes:  # in walk order: "run.sh | sort | tee" feeds both
        if reader < len(fed):
            fed[reader] = fed[reader] or reaches[writer] or fed[writer]
    return _Walked(walker, cwd, reaches, fed)


def fixture_filled(case: Case) -> set[str]:
    """The paths (relative to the case's working directory, normalised) that hold the
    fixture's words when the command ends: written by its input artifacts, or last written by
    a program of the command that is not the skill's and reads nothing the trial makes."""
    given = {posixpath.normpath(artifact.path) for artifact in case.input_artifacts}
    walked = _walked(case)
    if walked is None:
        return given
    walker, cwd = walked.walker, walked.cwd
    read_back = {posixpath.normpath(str(assertion.get("path")))
                 for assertion in artifact_assertions(case)}
    writes: list[tuple[float, str, bool]] = []  # (when, path, holds the fixture's words)
    for index, found in enumerate(walker.found):
        targets = _targets(found, cwd, walked.reaches[index], read_back)
        own = walked.own(index) and _from_the_fixture(found, targets, cwd)
        writes += [(index, target, own) for target in targets]
    for written in walker.written:
        target = _located(cwd, written.output.target, written.output.workdir)
        if target is not None:
            own = _group_from_the_fixture(walked, written, {target})
            writes.append((written.position - 0.5, target, own))
    last: dict[str, bool] = {}
    for _, target, own in sorted(writes, key=lambda write: write[0]):
        last[target] = own
    return given | {target for target, own in last.items() if own}


@dataclass(frozen=True)
class Printed:
    """What the command's own programs (those that are not the skill's code, and whose output
    is not piped into the skill) may print whatever the skill does."""

    words: tuple[str, ...] = ()
    """The words they are given, and the environment's values for those that read it."""
    files: tuple[Path, ...] = ()
    """The existing files they name."""
    computes: bool = False
    """One of them that the skill does not feed runs code (an interpreter, ``awk``, ``jq``, a
    ``printf`` of escapes), which may print any text without being handed it."""


def printed_by_the_command(case: Case) -> Printed:
    """What the command's own programs may print, whatever the skill does (``bash run.sh &&
    echo Ada``, ``cat data/records.txt``, ``printenv NAME``).  When the command cannot be
    analysed or the skill's directory is unknown, it may print anything (``computes``)."""
    walked = _walked(case)
    if walked is None:
        return Printed(computes=True)
    into_the_skill = {writer for writer, reader in walked.walker.pipes
                      if reader < len(walked.reaches) and walked.reaches[reader]}
    environment = tuple(command_environment(case).values())
    words: list[str] = []
    files: list[Path] = []
    computes = False
    for index, found in enumerate(walked.walker.found):
        if walked.reaches[index] or index in into_the_skill:
            continue
        argv = found.command.argv
        words += argv
        base = basename(argv[0])
        if base in _READ_THE_ENVIRONMENT or interpreter_family(base) is not None:
            words += environment
        # What the skill pipes into a formatter (| jq .name, | python3 -m json.tool) is the
        # skill's; one that prints what it computes whatever it is fed, the noop control sees.
        computes = computes or (not walked.fed[index] and _computes(argv))
        for word in (*argv[1:], *found.inputs):
            for name in _named(word):
                path = _located(walked.cwd, name, found.workdir)
                if path is not None and os.path.isfile(walked.cwd / path):
                    files.append(walked.cwd / path)
    return Printed(tuple(words), tuple(files), computes)


def entrypoint_reader(case: Case, entrypoint: Path) -> str | None:
    """The first program of the command that reads the file ``entrypoint`` rather than run it
    (``grep -q hello ../run.sh``, ``md5sum < run.sh``, ``cat ../r*.sh``), as its words; None
    when none does.  What reads the file can tell the skill from a stand-in put in its place.
    The skill's own code is not asked: it may read its own files."""
    walked = _walked(case)
    if walked is None:
        return None
    wanted = posixpath.relpath(os.path.realpath(entrypoint), os.path.realpath(walked.cwd))
    reads: list[tuple[str, str | None, str]] = []  # (word, its working directory, shown)
    for index, found in enumerate(walked.walker.found):
        argv = found.command.argv
        if walked.reaches[index] or _only_names(argv):
            continue
        reads += [(word, found.workdir, " ".join(argv)) for word in argv[1:]]
        reads += [(word, found.workdir, " ".join((*argv, "<", word))) for word in found.inputs]
    reads += [(word, workdir, f"< {word}") for word, workdir in walked.walker.compound_inputs]
    for word, workdir, shown in reads:
        for name in _named(word):
            path = _located(walked.cwd, name, workdir)
            if path is not None and _matches(wanted, path):
                return shown
    return None


def _only_names(argv: tuple[str, ...]) -> bool:
    """Whether a program may name the entrypoint without telling a stand-in from it."""
    program = basename(argv[0])
    if program in _TESTS:
        return not _COMPARING_FILES.intersection(argv)
    return program in _NOT_READING


def _matches(path: str, pattern: str) -> bool:
    """Whether the shell's pattern (``../r*.sh``) names ``path``: part by part, as ``*``
    never spans a ``/``."""
    names, parts = path.split("/"), pattern.split("/")
    return len(names) == len(parts) and all(
        fnmatch.fnmatchcase(name, part) for name, part in zip(names, parts, strict=True))


def _computes(argv: tuple[str, ...]) -> bool:
    """Whether a program runs code that may make any text: an interpreter, ``awk``, ``jq``,
    or ``echo``/``printf`` given escapes or a format."""
    base = basename(argv[0])
    return (interpreter_family(base) is not None or base in _COMPUTERS
            or (base in _OWN_WORDS and any("\\" in word or "%" in word for word in argv[1:])))


def _located(cwd: Path, word: str, workdir: str | None) -> str | None:
    """The path ``word`` names, relative to the case's working directory; None when the
    directory it is named from is only known at run time."""
    if workdir is None or not word:
        return None
    joined = posixpath.normpath(posixpath.join(str(cwd), workdir, os.path.expanduser(word)))
    return posixpath.normpath(posixpath.relpath(joined, str(cwd)))


def _named(word: str) -> list[str]:
    """The file names a word may give: itself, the value of ``--opt=value`` or ``if=value``,
    and the quoted strings of inline code."""
    if any(char in word for char in " \t\n;()"):
        return [first or second for first, second in _QUOTED.findall(word)]
    if "=" in word:
        return [value] if (value := word.partition("=")[2]) else []
    return [] if word.startswith("-") else [word]


def _targets(found: Found, cwd: Path, reaches: bool, read_back: set[str]) -> set[str]:
    """The files a simple command writes (or, for the skill's code, may write); of the files
    its inline code names beside a writing call, those the case reads back."""
    argv = found.command.argv
    name = basename(argv[0])
    located = {_located(cwd, output.target, output.workdir) for output in found.outputs}
    words: list[str] = []
    operands = [word for word in argv[1:] if not word.startswith("-")]
    if reaches:
        words += [named for word in argv[1:] for named in _named(word)]
    elif name in _COPIERS and len(operands) >= 2:
        words.append(operands[-1])
    elif name == "dd":
        words += [word[3:] for word in argv[1:] if word.startswith("of=")]
    for option, value in itertools.pairwise(argv[1:]):
        if option in ("-o", "--output"):
            words.append(value)
    words += [word.partition("=")[2] for word in argv[1:] if word.startswith("--output=")]
    located |= {_located(cwd, word, found.workdir) for word in words}
    if not reaches and _runs_code(argv):
        named = {_located(cwd, name, found.workdir) for word in argv[1:]
                 if _WRITING.search(word) for name in _named(word)}
        located |= named & read_back
    return {path for path in located if path is not None}


def _runs_code(argv: tuple[str, ...]) -> bool:
    """Whether a word of the command is program text (it holds spaces, quotes or brackets)."""
    return any(any(char in word for char in " \t\n;()") for word in argv[1:])


def _from_the_fixture(found: Found, targets: Iterable[str], cwd: Path) -> bool:
    """Whether a command that is not the skill's (nor fed by it) writes only what was there
    before the trial: its own words, what its inline code makes, or files that exist already
    (and it names no file that does not)."""
    argv = found.command.argv
    if basename(argv[0]) in _OWN_WORDS:
        return True
    names = [name for word in (*argv[1:], *found.inputs) for name in _named(word)]
    if "/" in argv[0]:
        names.append(argv[0])
    existing = False
    for name in names:
        path = _located(cwd, name, found.workdir)
        if path is None or path in targets:
            continue
        if os.path.isfile(cwd / path):
            existing = True
        elif "/" in name or _FILE_NAME.fullmatch(name):
            return False  # it reads a file that is made at run time: maybe by the skill
    return existing or _runs_code(argv)  # python3 -c "print(1 + 1)" > out.json


def _group_from_the_fixture(walked: _Walked, written: Written, targets: set[str]) -> bool:
    """Whether the commands a redirected group, ``exec`` or ``tee`` writes from all write only
    what was there before the trial.  They are the commands found just before the redirection
    (a group, the program piped into ``tee``) or just after it (``exec``), matched by name;
    when they cannot be matched, only constant builtins count."""
    walker = walked.walker
    count = len(written.programs)
    for start in (written.position - count, written.position):
        members = list(range(max(start, 0), start + count))
        if count and len(members) == count and members[-1] < len(walker.found) and all(
                basename(walker.found[i].command.argv[0]) == program
                for i, program in zip(members, written.programs, strict=True)):
            return all(walked.own(i) and _from_the_fixture(walker.found[i], targets, walked.cwd)
                       for i in members)
    return bool(written.programs) and all(program in CONSTANT for program in written.programs)

