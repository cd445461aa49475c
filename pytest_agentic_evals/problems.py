"""Problems with user input, each tied to a file and the JSON pointer of the offending value."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with an input file, explained for a person."""

    file: str
    pointer: str
    message: str

    def __str__(self) -> str:
        where = self.pointer if self.pointer else "(document)"
        return f"{self.file}: {where}: {self.message}"


class InputError(Exception):
    """Input that cannot be used; carries every problem found, not only the first."""

    def __init__(self, problems: list[Problem], headline: str = "invalid input") -> None:
        self.problems = problems
        self.headline = headline
        super().__init__(self.describe())

    def describe(self) -> str:
        lines = [f"{self.headline} ({len(self.problems)} problem(s)):"]
        lines += [f"  - {problem}" for problem in self.problems]
        return "\n".join(lines)


def pointer_for(*parts: object) -> str:
    """Build an RFC 6901 pointer from path parts, escaping ``~`` and ``/``."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)
