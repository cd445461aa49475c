"""Sampling: whether a command's results may differ from run to run by design (``--samples``,
a seed that changes per run, ``$RANDOM`` in a script)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_agentic_evals.shell.command import ORIGIN_SCRIPT, SimpleCommand
from pytest_agentic_evals.shell.walker import walk


@dataclass(frozen=True)
class Sampling:
    """Whether a command's result may differ between runs by design, and why."""

    non_deterministic: bool
    samples: int | None
    reasons: tuple[str, ...]


_RANDOM_SEED_PLACEHOLDER = "{random_seed}"
# Values a shell computes afresh on each run.  Only meaningful inside shell scripts: the
# runner passes argv words literally, so "$RANDOM" there is just text.
_SHELL_VARYING = re.compile(
    r"\$\{?(?:S?RANDOM|EPOCHREALTIME|EPOCHSECONDS|BASHPID)\b|\$\$|\$\(|`"
)
_SHELL_RANDOM = re.compile(r"\$\{?(S?RANDOM)\b|\(\([^()]*\b(S?RANDOM)\b")


def _seed_varies(value: str, in_shell: bool) -> bool:
    if _RANDOM_SEED_PLACEHOLDER in value:
        return True
    return in_shell and _SHELL_VARYING.search(value) is not None


def sampling(argv: Sequence[str]) -> Sampling:
    """Whether results may differ run to run by design: sampling or a varying seed.

    Non-deterministic when a simple command has ``--samples N``/``--samples=N``, a
    ``--seed`` whose value changes per run (the runner's ``{random_seed}`` placeholder, or
    inside a shell script ``$RANDOM``, ``$SRANDOM``, ``$EPOCHREALTIME``, ``$$``, ``$(...)``,
    backquotes), uses ``{random_seed}`` anywhere else, or a shell script uses ``$RANDOM``.
    Quoting that would stop the shell expanding ``$RANDOM`` is not tracked, which errs toward
    non-deterministic.  ``samples`` is the largest integer N given, else None.
    """
    walker = walk(argv)
    reasons: list[str] = []
    counts: list[int] = []
    for found in walker.found:
        reasons += _command_reasons(found.command, counts)
    for value in [*walker.extra_inputs, *(w for f in walker.found for w in f.inputs)]:
        if _RANDOM_SEED_PLACEHOLDER in value:
            reasons.append(f"{_RANDOM_SEED_PLACEHOLDER} placeholder in {value!r}")
    for script in walker.scripts:
        for match in _SHELL_RANDOM.finditer(script):
            reasons.append(f"shell ${match.group(1) or match.group(2)}")
    unique = tuple(dict.fromkeys(reasons))
    return Sampling(
        non_deterministic=bool(unique),
        samples=max(counts) if counts else None,
        reasons=unique,
    )


def _command_reasons(command: SimpleCommand, counts: list[int]) -> list[str]:
    """Why one simple command's results may differ run to run: its ``--samples`` options and
    varying ``--seed`` options, and ``{random_seed}`` in its other words.  The sample counts
    it gives are added to ``counts``."""
    words = command.argv
    in_shell = command.origin == ORIGIN_SCRIPT
    reasons: list[str] = []
    seed_values: set[int] = set()  # words an option above already accounts for
    for i, word in enumerate(words):
        value: str | None = None
        shown = word
        if word in ("--samples", "--seed") and i + 1 < len(words):
            value = words[i + 1]
            shown = f"{word} {value}"
            seed_values.add(i + 1)
        elif word.startswith(("--samples=", "--seed=")):
            value = word.partition("=")[2]
        if value is None:
            continue
        if word.startswith("--samples"):
            reasons.append(shown)
            if re.fullmatch(r"[0-9]+", value):
                counts.append(int(value))
        elif _seed_varies(value, in_shell):
            reasons.append(shown)
            seed_values.add(i)
    for i, word in enumerate(words):
        if _RANDOM_SEED_PLACEHOLDER in word and i not in seed_values:
            reasons.append(f"{_RANDOM_SEED_PLACEHOLDER} placeholder in {word!r}")
    return reasons
