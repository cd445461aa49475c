"""Trial durations from an earlier report, to run the longest trials first.

Under xdist, the run ends when its last worker finishes: a long trial started last keeps
every other worker idle while it runs. Ordering the trials longest first (the classic
longest-processing-time rule) bounds that tail. The durations come from a report of an
earlier run, or from the table the last run recorded, as rows ``[fixture, case, median ms]``
(the fixture as the report names it).
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pytest_agentic_evals.jsonio import display_path, read_input

Row = tuple[str, str, float]  # (fixture, case, median duration of its trials in ms)


class DurationsError(ValueError):
    """A durations source that cannot be used; the message is one line."""


def report_durations(report: Any) -> list[Row]:
    """The median trial duration of every case of a fixture or session report that ran."""
    fixtures = report.get("fixtures", [report]) if isinstance(report, dict) else None
    if not isinstance(fixtures, list) or not all(
        isinstance(f, dict) and isinstance(f.get("cases"), list) for f in fixtures
    ):
        raise DurationsError("not an agentic-evals report (no cases)")
    rows = []
    for fixture in fixtures:
        for case in fixture["cases"]:
            times = [t["duration_ms"] for t in case.get("trials") or ()
                     if isinstance(t, dict) and isinstance(t.get("duration_ms"), (int, float))]
            if times and isinstance(case.get("name"), str):
                rows.append((str(fixture.get("fixture")), case["name"],
                             float(statistics.median(times))))
    return rows


def read_durations(path: str) -> list[Row]:
    try:
        report = json.loads(read_input(path))
    except OSError as exc:
        raise DurationsError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError:
        raise DurationsError(f"{path} is not JSON") from None
    try:
        return report_durations(report)
    except DurationsError as exc:
        raise DurationsError(f"{path}: {exc}") from None


def cached_rows(value: Any) -> list[Row]:
    """Rows read back from a cache: whatever is not a well-formed row is left out."""
    rows = []
    for row in value if isinstance(value, list) else ():
        if (isinstance(row, list) and len(row) == 3 and isinstance(row[0], str)
                and isinstance(row[1], str) and isinstance(row[2], (int, float))):
            rows.append((row[0], row[1], float(row[2])))
    return rows


class Durations:
    """How long a case's trials took, by fixture and case.

    A fixture is matched by the path the report names, else by its file name when only one
    fixture of that name is known. A case without a duration counts as the longest known one,
    so that it runs early: a new case may well be long.
    """

    def __init__(self, rows: Iterable[Row]) -> None:
        self.exact: dict[tuple[str, str], float] = {}
        by_name: dict[tuple[str, str], list[float]] = defaultdict(list)
        for fixture, case, ms in rows:
            self.exact[(fixture, case)] = ms
            by_name[(Path(fixture).name, case)].append(ms)
        self.by_name = {key: times[0] for key, times in by_name.items() if len(times) == 1}
        self.longest = max(self.exact.values(), default=0.0)

    def __bool__(self) -> bool:
        return bool(self.exact)

    def of(self, fixture: Path, case: str) -> float:
        found = self.exact.get((display_path(fixture), case))
        if found is None:
            found = self.by_name.get((fixture.name, case), self.longest)
        return found


def longest_first(items: Sequence[Any], duration: Callable[[Any], float]) -> list[Any]:
    """``items`` longest first by ``duration(item)``; equal ones keep their order."""
    return sorted(items, key=lambda item: -duration(item))
