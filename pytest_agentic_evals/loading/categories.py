"""Case selection by defect category (``run --only-category ID [--map MAP]``).

A case names its category itself (``category_id`` or ``category``); a category map
(``agentic_evals.category_map.v1``) also gives each category the seams and claims it covers,
so that a case which names none is in every category whose seams or claims it shares. The
selection only chooses which cases run: a selected run is partial, as one with ``--case``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentic_evals.jsonio import read_input
from pytest_agentic_evals.model import Fixture

CATEGORY_MAP_SCHEMA = "agentic_evals.category_map.v1"


class CategoryError(ValueError):
    """A category selection that cannot be made: a bad map, or no case in the category."""


def load_category_map(path: str) -> dict[str, set[str]]:
    """Category (its ``category_id`` and its key in the map) -> the seams and claims it covers,
    as ``seam:ID`` and ``claim:ID``."""
    try:
        data = json.loads(read_input(path).decode("utf-8"))
    except OSError as exc:
        raise CategoryError(f"{path}: cannot read category map: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CategoryError(f"{path}: not a JSON category map: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != CATEGORY_MAP_SCHEMA:
        raise CategoryError(f"{path}: not a category map: \"schema\" must be "
                            f"{CATEGORY_MAP_SCHEMA!r}")
    categories = data.get("categories")
    if not isinstance(categories, dict) or not categories:
        raise CategoryError(f"{path}: \"categories\" must be a non-empty object")
    covered: dict[str, set[str]] = {}
    for key, entry in categories.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("category_id"), str):
            raise CategoryError(f"{path}: category {key!r} needs a string \"category_id\"")
        links = {f"seam:{s}" for s in _strings(entry, "seams", path, key)}
        links |= {f"claim:{c}" for c in _strings(entry, "supports_claims", path, key)}
        for name in (entry["category_id"], key):
            covered.setdefault(name, set()).update(links)
    return covered


def _strings(entry: Mapping[str, Any], field: str, path: str, key: str) -> list[str]:
    """A category's list of ids (none when it has no such field); CategoryError when it is
    not a list of strings: left out, the category would relate to no case, and the only
    message would be that no case matches."""
    value = entry.get(field, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise CategoryError(f"{path}: category {key!r}: \"{field}\" must be a list of strings")
    return value


def category_cases(
    fixtures: Sequence[Fixture], category: str, category_map: Mapping[str, set[str]] | None
) -> list[str]:
    """The names of the cases in ``category``, in fixture order; CategoryError when none is."""
    selected = []
    for fixture in fixtures:
        for case in fixture.cases:
            explicit = [case.source.get(key) for key in ("category_id", "category")]
            named = [value for value in explicit if isinstance(value, str)]
            if category_map is None:
                if category in named or case.name == category:
                    selected.append(case.name)
            elif named:
                if category in named:
                    selected.append(case.name)
            else:
                links = {f"seam:{s}" for s in case.seams}
                links |= {f"claim:{c}" for c in case.supports_claims}
                if links & category_map.get(category, set()):
                    selected.append(case.name)
    if not selected and category_map is None:
        raise CategoryError(f"no case explicitly matches category {category!r}: give a case "
                            "\"category_id\" or \"category\", or pass --map for the cases a "
                            "category map relates to it")
    if not selected:
        raise CategoryError(f"no case matches category {category!r}")
    return list(dict.fromkeys(selected))
