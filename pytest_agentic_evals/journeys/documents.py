"""One JSON input of planning, read strictly and checked against its shipped schema.

Every problem is explained at its JSON pointer in planning's own terms: a raw CSS selector or
XPath expression where a stable qid belongs is named as one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from pytest_agentic_evals.jsonio import display_path, read_json
from pytest_agentic_evals.problems import (
    InputError,
    Problem,
    explain_schema_error,
    pointer_for,
    shown_value,
)
from pytest_agentic_evals.schemas import schema_text
from pytest_agentic_evals.schemas.compiled import Check, compile_check

# Keys people write when they reach for a selector instead of a qid.
_SELECTOR_KEYS = frozenset({"selector", "css", "css_selector", "xpath", "locator"})
_XPATH_START = re.compile(r"^(\(|\.?/|xpath[=:])", re.IGNORECASE)
_CSS_MARKS = re.compile(r"[#\[\]>+~*:=()'\"\s,^$|]|^\.|^css[=:]", re.IGNORECASE)


@dataclass(frozen=True)
class Document:
    """One JSON input file, decoded."""

    path: Path
    shown: str
    sha256: str
    data: Any


def read_document(path: str | os.PathLike[str], schema: str) -> tuple[Document | None,
                                                                       list[Problem]]:
    """Decode one file strictly and check it against its shipped schema. The document comes
    back also when the schema found problems (later checks still read it); None only when it
    could not be read or decoded."""
    absolute = Path(os.path.abspath(path))
    shown = display_path(absolute)
    try:
        data, raw = read_json(absolute, "file")
    except InputError as exc:
        return None, list(exc.problems)
    problems = schema_problems(data, schema, shown)
    return Document(absolute, shown, hashlib.sha256(raw).hexdigest(), data), problems


def schema_problems(data: Any, schema: str, shown: str) -> list[Problem]:
    """Every way ``data`` breaks the shipped schema ``schema``, explained at its pointer."""
    fast = fast_check(schema)
    if fast is not None and fast(data):
        # jsonschema takes seconds over a graph of 50,000 transitions; the compiled check
        # below accepts only what the schema accepts, so a clean document is done here and
        # jsonschema is asked only to explain a faulty one.
        return []
    try:
        errors = list(schema_validator(schema).iter_errors(data))
    except RecursionError:
        return [Problem(shown, "", "document is nested too deeply to validate")]
    problems = {Problem(shown, pointer, message) for error in errors
                for pointer, message in _explain(error)}
    return sorted(problems)


@cache
def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(schema_text(name))
    return loaded


@cache
def schema_validator(name: str) -> Draft202012Validator:
    """jsonschema's validator of the shipped schema ``name``: the authority, and slow."""
    return Draft202012Validator(_schema(name))


@cache
def fast_check(name: str) -> Check | None:
    """A predicate true only for documents the schema accepts, or None when the schema is
    beyond the compiled check (see schemas/compiled.py)."""
    return compile_check(_schema(name))


def _explain(error: ValidationError) -> list[tuple[str, str]]:
    """Schema errors in planning's own terms: a raw selector is named as one."""
    parts = list(error.absolute_path)
    pointer = pointer_for(*parts)
    if error.validator == "pattern" and parts and parts[-1] == "qid":
        return [(pointer, raw_selector_message(error.instance))]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        explained = []
        for item_pointer, message in explain_schema_error(error):
            key = item_pointer.rsplit("/", 1)[-1]
            if key in _SELECTOR_KEYS:
                message = (f"raw selectors are refused ({key!r}): name the control by its "
                           "stable qid, as discovery records it")
            explained.append((item_pointer, message))
        return explained
    if error.validator == "if" or error.validator == "else" or error.validator == "then":
        return []  # the failing branch reports the error itself
    return explain_schema_error(error)


def raw_selector_message(value: Any) -> str:
    """Why a value is not a stable qid; raw CSS selectors and XPath expressions by name."""
    if not isinstance(value, str):
        return f"{shown_value(value)} is not a qid"
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        kind = "not a stable qid (it holds a control character: a line break, a tab)"
    elif _XPATH_START.search(value.strip()) or "@" in value:
        kind = "a raw XPath expression"
    elif _CSS_MARKS.search(value):
        kind = "a raw CSS selector"
    else:
        kind = "not a stable qid"
    return (f"{shown_value(value)} is {kind}: name the control by its stable qid as discovery "
            "records it (letters, digits, spaces and _ . : - only)")
