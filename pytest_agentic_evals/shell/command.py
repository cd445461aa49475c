"""What the analysis of a command produces: simple commands, and the error for a command
that cannot be analysed; with the two helpers every judgement of them uses."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SimpleCommand:
    """One program invocation: its words after shell and prefix unwrapping."""

    argv: tuple[str, ...]
    origin: str  # "argv" (the fixture's own argv) or "shell script" (parsed from -c/eval)


class CommandParseError(ValueError):
    """A command (or a shell script inside it) that cannot be analysed, with the reason."""


ORIGIN_ARGV = "argv"
ORIGIN_SCRIPT = "shell script"


def basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def render(argv: Sequence[str], limit: int = 120) -> str:
    # Quote only where needed to stay unambiguous: users read this in rejection messages.
    text = " ".join(
        shlex.quote(w) if (not w or any(ch.isspace() or ch in "'\"" for ch in w)) else w
        for w in argv
    )
    return text if len(text) <= limit else text[: limit - 3] + "..."
