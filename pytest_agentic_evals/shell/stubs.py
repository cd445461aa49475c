"""Stub inputs: words that feed a command canned data (``fixtures/in.json``, ``--mock``)
instead of real inputs."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from pytest_agentic_evals.shell.walker import walk

_STUB_WORDS = frozenset({"stub", "stubs", "stubbed", "mock", "mocks", "mocked", "fake", "fakes",
                         "faked"})
_FIXTURE_DIRS = frozenset({"fixtures", "__fixtures__"})
_NEGATIONS = frozenset({"no", "without", "disable", "skip"})
_SUBSTITUTION = re.compile(r"\$\([^()]*\)|`[^`]*`")
_EXTENSION = re.compile(r"[^./]\.[A-Za-z0-9]{1,8}$")
_CHUNK = re.compile(r"[^\s'\"(),;=<>|&]+")


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


def fixture_stub_inputs(argv: Sequence[str]) -> list[str]:
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

    Plain words without ``/`` or extension are never flagged, and name parts must match
    whole words, so ``mockingbird`` or ``mockingbird.txt`` pass.
    """
    walker = walk(argv)
    words: list[str] = []
    for found in walker.found:
        words.extend(found.command.argv)
        words.extend(found.inputs)
    words.extend(walker.extra_inputs)
    flagged: list[str] = []
    for word in words:
        if word not in flagged and _word_is_stub(word):
            flagged.append(word)
    return flagged
