"""Load-time rules for declared seams that a schema cannot express."""

from __future__ import annotations

from pytest_agentic_evals.model import Fixture, declared_seams
from pytest_agentic_evals.problems import Problem, pointer_for


def seam_problems(fixture: Fixture, shown: str) -> list[Problem]:
    """Duplicate seam ids, and cases naming a seam the fixture does not declare.

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
    for case in fixture.cases:
        for position, seam_id in enumerate(case.seams):
            if seam_id not in first:
                problems.append(Problem(shown, f"{case.pointer}/seams/{position}", (
                    f"case {case.name!r} names seam {seam_id!r}, which the fixture does not "
                    f"declare (declared: {', '.join(sorted(first)) or 'none'})")))
    return problems
