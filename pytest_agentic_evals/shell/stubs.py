"""Stub inputs: words that feed a command canned data (``fixtures/in.json``, ``--mock``)
instead of real inputs."""

from __future__ import annotations

import glob
import os
import posixpath
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_agentic_evals.shell.walker import walk

_STUB_WORDS = frozenset({"stub", "stubs", "stubbed", "mock", "mocks", "mocked", "fake", "fakes",
                         "faked"})
_FIXTURE_DIRS = frozenset({"fixtures", "__fixtures__"})
_NEGATIONS = frozenset({"no", "without", "disable", "skip"})
_SUBSTITUTION = re.compile(r"\$\([^()]*\)|`[^`]*`")
_EXTENSION = re.compile(r"[^./]\.[A-Za-z0-9]{1,8}$")
_CHUNK = re.compile(r"[^\s'\"(),;=<>|&]+")
# A glob in a word is expanded to see what it names; past this many matches it is not.
_MAX_GLOB_MATCHES = 200
# Spellings of the directory a command runs in, at the start of a word.
_HERE = re.compile(r"^(?:\$PWD|\$\{PWD\}|\$\(pwd\)|`pwd`|~\+)(?=/|$)")
# One brace expansion (canned.{txt,csv}): each alternative is looked up.
_BRACES = re.compile(r"\{([^{}]*,[^{}]*)\}")


def _name_parts(component: str) -> set[str]:
    """Lower-case words of a file name: ``mock_response.json``, ``MockServer.py`` -> mock..."""
    return {
        part.lower()
        for part in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", component)
    }


def _path_is_stub(chunk: str) -> bool:
    if "/" not in chunk and not _EXTENSION.search(chunk):
        return False  # a plain word ("mockingbird", "fake") is not a path
    # "fixtures/../run.sh" leaves the fixtures folder again: judge where the path ends up.
    components = posixpath.normpath(chunk).split("/")
    for index, component in enumerate(components):
        if component.lower() in _FIXTURE_DIRS:
            return True
        if index == len(components) - 1:
            # Judge a file by its stem: "stub.json" is a stub, "unittest.mock" a module name.
            component = component.rsplit(".", 1)[0] if "." in component[1:] else component
        if _name_parts(component) & _STUB_WORDS:
            return True
    return False


def _word_is_stub(word: str) -> bool:
    word = _SUBSTITUTION.sub(" ", word)  # substituted commands are checked on their own
    if word.startswith("-") and len(word) > 1 and not word[1:2].isdigit():
        name, _, value = word.partition("=")
        parts = [p for p in re.split(r"[-_]+", name.lower()) if p]
        if parts and parts[0] not in _NEGATIONS and set(parts) & _STUB_WORDS:
            return True  # --mock, --use-fake-llm, --stub-server=...; not --no-mock
        word = value
    return any(_path_is_stub(chunk) for chunk in _CHUNK.findall(word))


def _lands_in_fixture_folder(word: str, directory: Path, skill_dir: Path) -> bool:
    """Whether ``word``, a path relative to ``directory`` (a glob, through symbolic links),
    names a file or folder that exists inside a ``fixtures`` folder of the skill: the
    fixture's own folder is one, and the case's working directory by default, so
    ``../run.sh sample.csv`` reads canned data as surely as ``fixtures/sample.csv`` does."""
    if word.startswith("-"):
        word = word.partition("=")[2]
    if not word or "\x00" in word or "://" in word:
        return False
    word = _HERE.sub(lambda _: str(directory), word)
    paths: list[str] = []
    for spelled in _brace_expanded(word):
        pattern = os.path.join(directory, spelled)
        paths += glob.glob(pattern)[:_MAX_GLOB_MATCHES] if glob.has_magic(spelled) \
            else [pattern]
    root = os.path.realpath(skill_dir)
    for path in paths:
        real = os.path.realpath(path)
        if real == os.path.realpath(directory) or not os.path.exists(real):
            continue  # "." names the working directory itself, not data in it
        inside = os.path.relpath(real, root).split(os.sep)
        if inside[0] != ".." and any(p.lower() in _FIXTURE_DIRS for p in inside[:-1]):
            return True
    return False


def _brace_expanded(word: str) -> list[str]:
    """The words a brace expansion makes of ``word`` (``a.{csv,txt}``: ``a.csv``, ``a.txt``),
    at most ``_MAX_GLOB_MATCHES`` of them: ``{a,b}{a,b}...`` doubles with every group."""
    words, done = [word], list[str]()
    while words and len(done) + len(words) <= _MAX_GLOB_MATCHES:
        current = words.pop()
        braces = _BRACES.search(current)
        if braces is None:
            done.append(current)
            continue
        words += [current[:braces.start()] + choice + current[braces.end():]
                  for choice in braces.group(1).split(",")]
    return done


def fixture_stub_inputs(
    argv: Sequence[str],
    cwd: Path | None = None,
    skill_dir: Path | None = None,
    environment: Mapping[str, str] | None = None,
) -> list[str]:
    """Words that feed the command stub inputs instead of real ones (empty when clean).

    Looked at: the words of every simple command (after unwrapping), input-redirection
    targets (``< fixtures/in.txt``), assignment values (``INPUT=fixtures/x``) and the
    positional arguments handed to ``sh -c``.  A word is flagged when

    * it is an option whose name has a ``stub``/``mock``/``fake`` part (``--mock``,
      ``--use-fake-llm``, ``--stub-server=...``), unless negated (``--no-mock``); or
    * it (or an option's ``=value``, or a path inside inline code) is path-like -- contains
      ``/`` or ends in a file extension -- and has a component named ``fixtures`` or
      ``__fixtures__``, or a component with a ``stub``/``mock``/``fake`` name part
      (``data/mock_response.json``, ``stub.json``, ``MockServer.py``, ``fakes/x``).

    Plain words without ``/`` or extension are not flagged by name, and name parts must match
    whole words, so ``mockingbird`` or ``mockingbird.txt`` pass.

    Given the working directory and the skill directory, a word is also flagged when it names
    (relative to the directory its command runs in, as a glob, through symbolic links) an
    existing file inside a ``fixtures`` folder of the skill, whatever its name, or when a
    path-like piece of it does (a file name in inline code: ``python3 -c
    "open('sample.csv')"``); the command's shell scripts see ``environment``.
    """
    walker = walk(argv, environment)
    words: list[tuple[str, str | None]] = []
    for found in walker.found:
        words += [(word, found.workdir) for word in (*found.command.argv[1:], *found.inputs)]
        words.append((found.command.argv[0], None))
    words += [(word, ".") for word in walker.extra_inputs]
    flagged: list[str] = []
    for word, workdir in words:
        if word in flagged:
            continue
        located = cwd is not None and skill_dir is not None and workdir is not None and any(
            _lands_in_fixture_folder(spelled, cwd / workdir, skill_dir)
            for spelled in (word, *_named_inside(word)))
        if located or _word_is_stub(word):
            flagged.append(word)
    return flagged


def _named_inside(word: str) -> list[str]:
    """The path-like pieces of a word that is more than a path: the file names inline code
    opens (``print(open('sample.csv').read())``, ``readFileSync('in.json')``)."""
    return [chunk for chunk in _CHUNK.findall(_SUBSTITUTION.sub(" ", word))
            if chunk != word and ("/" in chunk or _EXTENSION.search(chunk))]
