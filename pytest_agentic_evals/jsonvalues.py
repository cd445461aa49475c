"""JSON values with JSON's own types: ``true`` is a boolean, not the integer 1."""

from __future__ import annotations

from typing import Any

ARTICLES = {"integer": "an integer", "array": "an array", "object": "an object", "null": "null"}


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        # 5550102.0 is written as a float: for value representations that difference matters.
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def json_equal(left: Any, right: Any) -> bool:
    """Equality with JSON's types: ``true`` is not ``1``, ``"1"`` is not ``1``; 1 equals 1.0."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return left == right
    if type(left) is not type(right):
        return False
    if isinstance(left, list):
        return len(left) == len(right) and all(
            json_equal(a, b) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    return bool(left == right)


def described_type(value: Any) -> str:
    """The JSON type of a value with its article, for messages: "a boolean", "an integer"."""
    kind = json_type(value)
    return ARTICLES.get(kind, f"a {kind}")
