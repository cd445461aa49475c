"""Problems with user input, each tied to a file and the JSON pointer of the offending value."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jsonschema is imported where a document is found faulty, not on start-up
    from jsonschema.exceptions import ValidationError

from pytest_agentic_evals.jsonvalues import ARTICLES, described_type


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with an input file, explained for a person."""

    file: str
    pointer: str
    message: str

    def __str__(self) -> str:
        where = self.pointer if self.pointer else "(document)"
        return one_line(f"{self.file}: {where}: {self.message}")


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


def one_line(text: str) -> str:
    """``text`` with its control characters escaped (a key may hold a newline or an escape
    sequence): one line on the terminal, whatever the input held."""
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in text)


def pointer_for(*parts: object) -> str:
    """Build an RFC 6901 pointer from path parts, escaping ``~`` and ``/``."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def explain_schema_error(error: ValidationError) -> list[tuple[str, str]]:
    """Turn a jsonschema error into (pointer, message) pairs a person can act on.

    An unknown key is reported at its own pointer, with the closest known key.
    """
    parts = list(error.absolute_path)
    pointer = pointer_for(*parts)
    instance = error.instance
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        allowed = set(error.schema.get("properties", {}))
        return [
            (pointer_for(*parts, key), f"unknown key {key!r}{_did_you_mean(key, allowed)}")
            for key in sorted(key for key in instance if key not in allowed)
        ]
    if error.validator == "type":
        expected = error.validator_value
        if isinstance(instance, (dict, list)):
            return [(pointer, f"expected {_expected_types(expected)}, not "
                              f"{described_type(instance)}")]
        return [(pointer, f"{shown_value(instance)} is {described_type(instance)}, "
                          f"expected {expected}")]
    if error.validator == "const":
        return [(pointer, f"must be {json.dumps(error.validator_value)}, not "
                          f"{shown_value(instance)}")]
    return [(pointer, _shortened(error.message, instance))]


# jsonschema's messages quote the whole value ("'nnn...' is too long"): a value of a megabyte
# made a line of a megabyte.
LONGEST_MESSAGE = 300


def _shortened(message: str, instance: Any) -> str:
    if len(message) <= LONGEST_MESSAGE:
        return message
    quoted = repr(instance)
    if quoted in message:
        return message.replace(quoted, shown_value(instance), 1)
    return message[:LONGEST_MESSAGE - 3] + "..."


def _expected_types(expected: Any) -> str:
    """ "an object", or "a string or an array" for a list of types."""
    kinds = expected if isinstance(expected, list) else [expected]
    return " or ".join(ARTICLES.get(kind, f"a {kind}") for kind in kinds)


def shown_value(value: Any) -> str:
    """A JSON value, short enough for one line of a message."""
    text = json.dumps(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def _did_you_mean(key: str, allowed: set[str]) -> str:
    close = difflib.get_close_matches(key, sorted(allowed), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
