"""Load-time rules for declared seams that a schema cannot express.

A live companion (``agentic_eval_live.json`` beside a skill's ``agentic_eval.json``) holds the
live cases of the same skill, as the earlier tool kept them: its cases may name the seams the
main fixture declares, and ``coverage`` counts them for those seams.
"""

from __future__ import annotations

from pathlib import Path

from pytest_agentic_evals.jsonio import display_path, read_json
from pytest_agentic_evals.model import Fixture, declared_seams
from pytest_agentic_evals.problems import InputError, Problem, pointer_for

MAIN_FIXTURE_NAME = "agentic_eval.json"
COMPANION_NAME = "agentic_eval_live.json"


def main_fixture_of(path: Path) -> Path | None:
    """The main fixture a live companion belongs to (``agentic_eval.json`` beside it); None
    for any other fixture, and for a companion that stands alone."""
    if path.name != COMPANION_NAME:
        return None
    main = path.with_name(MAIN_FIXTURE_NAME)
    return main if main.exists() else None


def main_seam_ids(main: Path) -> set[str] | None:
    """The seam ids the main fixture declares; None when it cannot be read."""
    try:
        data, _ = read_json(main, "fixture")
    except InputError:
        return None
    seams = data.get("seams") if isinstance(data, dict) else None
    return {seam["seam_id"] for seam in seams if isinstance(seam, dict)
            and isinstance(seam.get("seam_id"), str)} if isinstance(seams, list) else set()


def seam_problems(fixture: Fixture, shown: str) -> list[Problem]:
    """Duplicate seam ids, and cases naming a seam the fixture does not declare (nor, for a
    live companion, its main fixture).

    The types of ``seam_type``, ``criticality`` and ``required_evidence`` are the schema's job.
    """
    problems: list[Problem] = []
    first: dict[str, int] = {}
    for index, seam in declared_seams(fixture):
        seam_id = seam.get("seam_id")
        if not isinstance(seam_id, str) or not seam_id:
            continue  # the schema reports it
        if seam_id in first:
            problems.append(Problem(shown, pointer_for("seams", index, "seam_id"), (
                f"duplicate seam_id {seam_id!r} (also /seams/{first[seam_id]}/seam_id)")))
            continue
        first[seam_id] = index
    inherited, where, note = _inherited(fixture.path)
    known = set(first) | inherited
    for case in fixture.cases:
        for position, seam_id in enumerate(case.seams):
            if seam_id not in known:
                problems.append(Problem(shown, f"{case.pointer}/seams/{position}", (
                    f"case {case.name!r} names seam {seam_id!r}, which the fixture does not "
                    f"declare ({where}: {', '.join(sorted(known)) or 'none'}){note}")))
    return problems


def _inherited(path: Path) -> tuple[set[str], str, str]:
    """The seam ids a companion takes from its main fixture, how messages say where the known
    ones were declared, and a note when the main fixture cannot be read."""
    main = main_fixture_of(path)
    if main is None:
        return set(), "declared", ""
    ids = main_seam_ids(main)
    if ids is None:
        return set(), "declared", f"; its main fixture {display_path(main)} cannot be read"
    return ids, "declared here and by its main fixture", ""
