"""Stop on fail: once a trial of a case has failed, the case's remaining trials are not run.

A failed trial decides its case's outcome (FAIL), so the trials after it can only spend time.
The failure is recorded as a marker file in the run directory, which every process running
trials of the run on this host shares (the trials of an xdist run on one machine), so a
worker stops the case's trials that another worker has not started yet. A trial that is
already running when the failure is recorded runs to its end and counts; a trial on another
host (``--tx ssh=...``) sees only the failures of its own host.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pytest_agentic_evals.model import NOT_TESTED, Case, Fixture, TrialResult, unrun_trial

STOPS_DIR = "stopped-cases"


class CaseStops:
    """The cases of a run whose remaining trials are not to be run."""

    def __init__(self, run_dir: Path) -> None:
        self.root = run_dir / STOPS_DIR

    def _marker(self, fixture: Fixture, case: Case) -> Path:
        key = hashlib.sha256(os.fsencode(fixture.path) + f"\0{case.name}".encode()).hexdigest()[:32]
        return self.root / key

    def record(self, fixture: Fixture, case: Case, trial: int) -> None:
        """Trial ``trial`` of ``case`` failed; the first failure recorded is the one named."""
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            descriptor = os.open(self._marker(fixture, case),
                                 os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return
        with os.fdopen(descriptor, "w") as marker:
            marker.write(str(trial))

    def reason(self, fixture: Fixture, case: Case) -> str | None:
        """Why the case's next trial is not run, or None when it is to run."""
        try:
            failed = self._marker(fixture, case).read_text()
        except OSError:
            return None
        # A marker being written is empty for an instant: the case has failed all the same.
        which = f"trial {failed}" if failed.isdigit() else "a trial"
        return f"not run: {which} of this case failed (stop on fail)"


def stopped_trial(trial: int, reason: str) -> TrialResult:
    """The result of a trial that stop on fail left out: NOT_TESTED, with the reason."""
    result = unrun_trial(trial, NOT_TESTED, [reason])
    result["stopped"] = True
    return result
