"""The control flow the analysis follows, checked against bash itself.

``simple_commands`` leaves out the commands a script's own text shows never run (after an
``exit``, in ``if false``, the right of ``false &&``, a function nobody calls ...). That must
never leave out one that does run: a fixture would be wrongly refused, or a command it runs
hidden from the judgement. Random scripts built from the constructs the analysis follows are
run by real bash; every marker program a script ran must be among the commands found.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pytest_agentic_evals.shell import simple_commands

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

MARKERS = [f"m{n}" for n in range(1, 6)]


class Fragment(NamedTuple):
    """Script text; ``background`` when it ends with ``&``, which already ends a command (a
    ``;`` after it would be a syntax error)."""

    text: str
    background: bool = False


def _ended(part: Fragment) -> str:
    """``part`` as a list that a keyword (then, do, fi, }) may follow."""
    return part.text if part.background else part.text + ";"


def _pipeline(part: Fragment) -> str:
    """``part`` as an operand of && || | or !."""
    return f"{{ {part.text} }}" if part.background else part.text


# Leaves by kind, so that each kind turns up often whatever the number of each.
_LEAVES = {
    "marker": [*(f"./{m}" for m in MARKERS), *(f"! ./{m}" for m in MARKERS),
               *(f"exec ./{m}" for m in MARKERS), "bash -c ./m1", "bash -n -c ./m2"],
    "status": ["true", "false", ":", "! true", "! false", "(( 0 ))", "(( 1 ))", ">/dev/null",
               "set -- -n", "[ 1 = 2 ]", "[ a = a ]", "test 1 -lt 2", "[ 01 -eq 1 ]",
               "[ 1 == 1 ]", "test a != a", "[ * = m1 ]"],
    "end": ["exit 0", "exit 1", "exit", "exec true", "command exit 0", "builtin exit 1"],
    "call": ["f", "g"],
}
# After set -n bash runs nothing more, break included: in a loop it would spin for ever. It is
# left out of loops and of function bodies (a function may be called in a loop).
_NOEXEC = ["set -n", "set -o noexec"]
_CONSTRUCTS = ["list", "and-or", "background", "not", "subshell", "group", "if", "elif",
               "loop", "for", "case", "function", "coproc"]
# Functions may take the name of a builtin the analysis knows.
_FUNCTIONS = ["f", "g", "f", "g", "true", "exit"]


@st.composite
def fragments(draw: st.DrawFn, depth: int = 3, noexec: bool = True) -> Fragment:
    """A command: a leaf, or (while ``depth`` lasts) a construct of smaller ones."""
    construct = draw(st.sampled_from(["leaf"] * 4 + _CONSTRUCTS if depth else ["leaf"]))
    if construct == "leaf":
        kinds = [*_LEAVES, "noexec"] if noexec else list(_LEAVES)
        kind = draw(st.sampled_from(kinds))
        return Fragment(draw(st.sampled_from(_NOEXEC if kind == "noexec" else _LEAVES[kind])))
    inner = construct not in ("loop", "function") and noexec
    a, b = draw(fragments(depth - 1, inner)), draw(fragments(depth - 1, inner))
    if construct == "list":
        separator = draw(st.sampled_from([";", "\n"]))
        text = f"{a.text} {b.text}" if a.background else f"{a.text}{separator} {b.text}"
        return Fragment(text, b.background)
    if construct == "and-or":
        operators = st.sampled_from(["&&", "||", "|"])
        text = f"{_pipeline(a)} {draw(operators)} {_pipeline(b)}"
        if draw(st.booleans()):  # A && B || C
            text += f" {draw(operators)} {_pipeline(draw(fragments(depth - 1, noexec)))}"
        return Fragment(text)
    if construct == "background":  # A & B, or A & alone
        if draw(st.booleans()):
            return Fragment(f"{_pipeline(a)} & {b.text}", b.background)
        return Fragment(f"{_pipeline(a)} &", background=True)
    if construct == "not":
        return Fragment(f"! {_pipeline(a)}")
    if construct == "subshell":
        return Fragment(f"( {a.text} )")
    if construct == "group":
        return Fragment(f"{{ {_ended(a)} }}")
    if construct == "if":
        c = draw(fragments(depth - 1, noexec))
        return Fragment(f"if {_ended(a)} then {_ended(b)} else {_ended(c)} fi")
    if construct == "elif":
        c, d = draw(fragments(depth - 1, noexec)), draw(fragments(depth - 1, noexec))
        return Fragment(f"if {_ended(a)} then {_ended(b)} elif {_ended(c)} then {_ended(d)} fi")
    if construct == "loop":
        # The body ends with break: the loop runs at most once, and always stops.
        loop = draw(st.sampled_from(["while", "until"]))
        return Fragment(f"{loop} {_ended(a)} do {_ended(b)} break; done")
    if construct == "for":
        return Fragment(f"for x in a; do {_ended(a)} done")
    if construct == "case":
        return Fragment(f"case w in w) {a.text} ;; *) {b.text} ;; esac")
    if construct == "coproc":  # coproc { A; }, coproc NAME { A; }
        return Fragment(f"coproc {draw(st.sampled_from(['', 'w ']))}{{ {_ended(a)} }}")
    name = draw(st.sampled_from(_FUNCTIONS))
    call = draw(st.booleans())
    return Fragment(f"{name}() {{ {_ended(a)} }}" + (f"; {name}" if call else ""))


# A marker last: code the analysis wrongly calls dead is most often the rest of the script.
SCRIPTS = fragments().map(lambda part: part.text + "\n./m5")


class Bash:
    """Runs scripts in a directory of marker programs, each of which logs its name."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.log = directory / "ran.log"
        for marker in MARKERS:
            path = directory / marker
            path.write_text('#!/bin/sh\necho "${0##*/}" >> "$MARKER_LOG"\n')
            path.chmod(stat.S_IRWXU)

    def markers_run(self, script: str) -> set[str] | None:
        """The markers ``script`` ran; None if it called a function ever deeper."""
        self.log.write_text("")
        # The output pipes are read to their end, which comes when every process holding them
        # is gone: the commands the script put in the background have ended too.
        # Without FUNCNEST a function that calls itself for ever would crash bash; with it,
        # bash gives up the command and goes on with the next, which no script would do.
        environment = {"PATH": os.environ["PATH"], "MARKER_LOG": str(self.log),
                       "FUNCNEST": "4", "LC_ALL": "C"}
        done = subprocess.run(["bash", "-c", script], cwd=self.directory, env=environment,
                              capture_output=True, timeout=5, check=False)
        if b"maximum function nesting level exceeded" in done.stderr:
            return None
        return {f"./{name}" for name in self.log.read_text().split()}


@pytest.fixture(scope="module")
def bash(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bash]:
    yield Bash(tmp_path_factory.mktemp("markers"))


# The same scripts on every run: a bug it finds is worth an explicit case in test_commands.py,
# not a failure that turns up in some unrelated change.
@settings(max_examples=200, deadline=None, derandomize=True)
@given(script=SCRIPTS)
def test_no_command_bash_runs_is_called_dead(bash: Bash, script: str) -> None:
    ran = bash.markers_run(script)
    assume(ran is not None)
    assert ran <= {command.argv[0] for command in simple_commands(["bash", "-c", script])}
