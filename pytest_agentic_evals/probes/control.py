"""The control of a run: does a case's verdict depend on the skill at all?

A required case's command may reach the skill and then ignore what it did: ``../run.sh Ada >
/dev/null; echo hello, Ada``, ``../run.sh Ada || echo hello, Ada``.  The load-time contract
sees the entrypoint reached, every trial passes, and the fixture would be READY over a skill
that does nothing.  So after the first trial of a required case (or of any case supporting a
capability claim) passes, the run plays the case once more with the ``contrary`` stand-in in
place of its entrypoint: a skill that exits with a status the case does not expect, prints
nothing and writes nothing.  When the case passes that too, its checks cannot tell the skill
from its opposite, and the trial is no evidence: it fails, with the control's reason.

This is one stand-in of the probe's kind (``agentic-evals probe`` runs five), chosen because
it condemns only a verdict that ignores the skill's exit status, output and files alike; a
case whose only check is an exit code the skill passes on kills it.  A live case (one that
live qualification accepts as proof of a capability) must show more: that the skill did the
work.  When it kills the ``contrary`` stand-in, it plays the ``noop`` one as
well (a skill that exits as expected, prints nothing and writes nothing), which a command
that fills in the answer only after the skill succeeded (``../run.sh && echo ... > out``)
passes.  Like every stand-in they can be told from the skill by a command written to look,
which then fails on purpose (after starting the stand-in, it even looks killed).  The plain
way, a program of the command reading the entrypoint's file, is seen before anything is
played: such a case gets no control, and its first trial fails.  Other ways (a script of the
skill that looks for the command, timing) are deception written in the fixture, for a
reviewer to see, not an oracle that forgot to check.
"""

from __future__ import annotations

import dataclasses
import shutil
import uuid
from collections.abc import Mapping
from typing import Any

from pytest_agentic_evals.evidence.qualification import qualify
from pytest_agentic_evals.execution.environment import RunSettings
from pytest_agentic_evals.execution.rundirs import RUN_PREFIX, enter_run_dir
from pytest_agentic_evals.execution.trial import run_trial
from pytest_agentic_evals.expectations.builtin import ExpectationKind
from pytest_agentic_evals.model import FAIL, PASS, Case, Fixture, TrialResult
from pytest_agentic_evals.probes.mutants import StandIn, expected_exit
from pytest_agentic_evals.probes.runner import judge, probed_case, unswapped
from pytest_agentic_evals.probes.targets import (
    CONTRARY,
    INCONCLUSIVE,
    KILLED,
    NOOP,
    READS_THE_ENTRYPOINT,
    SURVIVED,
    contrary_exit,
    locate_program,
    read_by_the_command,
)

UNPROBED = "unprobed"
# The control's time limit: twice what the first trial took, at least this long, never more
# than the case's own timeout. A command that waits for what the skill produces (a server's
# port, an output file) waits in vain for the stand-in, and would otherwise wait the whole
# timeout of the case (minutes, for an agent's run) once per case.
CONTROL_FLOOR_SECONDS = 10.0


def needs_control(case: Case, result: TrialResult) -> bool:
    """The first trial of a case whose passing is evidence (a required case, or one that
    supports a capability claim: an optional case counts for its claims), when it passed: a
    failed or blocked trial already keeps the case from passing."""
    counts = case.required or bool(case.supports_claims)
    return counts and result["trial"] == 1 and result["outcome"] == PASS


def run_control(fixture: Fixture, case: Case, settings: RunSettings,
                kinds: Mapping[str, ExpectationKind], trial_seconds: float) -> dict[str, Any]:
    """The case played against the ``contrary`` stand-in and, for a live case that killed it,
    the ``noop`` one (``trial_seconds``: how long its first trial took): the
    report's ``control`` entry, of the stand-in it survived, else of the last played."""
    entry = _play_control(fixture, case, settings, kinds, trial_seconds, CONTRARY)
    if entry["status"] == KILLED and _proves_work(case):
        entry = _play_control(fixture, case, settings, kinds, trial_seconds, NOOP)
    return entry


def _proves_work(case: Case) -> bool:
    """Whether the case must show the skill did the work, not only that it ran: a case that
    live qualification accepts, whatever its type (its read-back oracle is judged to fail a
    skill that does nothing; the noop control checks that it does)."""
    return qualify(case).live_qualified is True


def _play_control(fixture: Fixture, case: Case, settings: RunSettings,
                  kinds: Mapping[str, ExpectationKind], trial_seconds: float,
                  mutant: str) -> dict[str, Any]:
    """The case played once against the stand-in ``mutant``: the report's control entry."""
    target, why = locate_program(case)
    if target is None:
        return {"stand_in": mutant, "status": UNPROBED, "reason": why}
    expected = expected_exit(case)
    entry: dict[str, Any] = {
        "stand_in": mutant, "entrypoint": target.description,
        "stand_in_exit_code": contrary_exit(expected) if mutant == CONTRARY else expected}
    read = read_by_the_command(case, target)
    if read is not None:
        # Not played: a command that looks at the file can fail on purpose whenever it finds a
        # stand-in there (and start it first, to look killed), so no outcome would be evidence.
        return {**entry, "status": READS_THE_ENTRYPOINT, "reason": read}
    # A run of its own beside the real one, made and named like any run (its own run id, the
    # same layout below it): a command cannot tell the stand-in's trial from a real one by its
    # paths or its environment. Removed afterwards: the stand-in's trial fails whenever the
    # oracle works, and a failed trial's workspace would otherwise be kept for the user.
    run_id = uuid.uuid4().hex[:12]
    scratch = settings.run_dir.parent / f"{RUN_PREFIX}{run_id}"
    try:
        in_use = enter_run_dir(scratch)
    except OSError as exc:
        return {"stand_in": mutant, "status": INCONCLUSIVE, "entrypoint": target.description,
                "reason": f"the control's directory cannot be made: {exc}"}
    try:
        own = dataclasses.replace(settings, run_id=run_id, run_dir=scratch, trial_dirs=None,
                                  keep_passed_workspaces=False)
        stand_in = StandIn(case, target, mutant)
        timeout = case.timeout_seconds or settings.default_timeout
        limited = dataclasses.replace(probed_case(case, target.path), timeout_seconds=min(
            timeout, max(CONTROL_FLOOR_SECONDS, 2 * trial_seconds)))
        played = run_trial(fixture, limited, 1, own, kinds, stand_in)
    finally:
        in_use.close()
        shutil.rmtree(scratch, ignore_errors=True)
    verdict = judge(mutant, played, stand_in.played, unswapped(case, target, played))
    entry["status"] = verdict.status
    if verdict.reason:
        entry["reason"] = verdict.reason
    if verdict.killed_by:
        entry["killed_by"] = list(verdict.killed_by)
    return entry


def controlled(result: TrialResult, control: dict[str, Any]) -> TrialResult:
    """The trial's result with its control; a FAIL when the control passed the case too, or
    when the command reads what the stand-in would replace."""
    checked: TrialResult = {**result, "control": control}
    if control["status"] == READS_THE_ENTRYPOINT:
        checked["outcome"] = FAIL
        checked["problems"] = [
            *result["problems"],
            f"control: the command reads the skill's entrypoint ({control['reason']}): it "
            f"could tell the stand-in from the skill, so its trials are no evidence",
        ]
    elif control["status"] == SURVIVED:
        checked["outcome"] = FAIL
        checked["problems"] = [
            *result["problems"],
            f"control: the case passes just as well when {control['entrypoint']} exits "
            f"{control['stand_in_exit_code']}, prints nothing and writes nothing: its checks do "
            f"not depend on the skill, so its trials are no evidence",
        ]
    return checked
