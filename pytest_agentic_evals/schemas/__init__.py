"""The JSON Schemas shipped with the package (``agentic-evals schema NAME`` prints them)."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def schema_text(name: str) -> str:
    """The text of ``schemas/NAME.schema.json``."""
    return resources.files(__package__).joinpath(f"{name}.schema.json").read_text()
