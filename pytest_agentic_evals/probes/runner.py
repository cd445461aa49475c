"""Probing a fixture: every case run once against each broken skill, and what survived.

One trial per case and stand-in is enough, because the stand-ins are deterministic.  The real
skill runs once for each case another case replays (its output is the ``replay`` stand-in of
that other case).  Every trial runs in a private copy of the skill, under the sandbox where
the machine has one, exactly as a trial of ``agentic-evals run``; only the entrypoint differs.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_agentic_evals.evidence.provenance import oracle_sha256, test_source_sha256
from pytest_agentic_evals.execution.environment import RunSettings
from pytest_agentic_evals.execution.trial import run_trial
from pytest_agentic_evals.expectations.builtin import ExpectationKind
from pytest_agentic_evals.model import BLOCKED, INFRA_BLOCKED, PASS, Case, Fixture, TrialResult
from pytest_agentic_evals.probes.mutants import Recorder, Recording, StandIn, expected_exit
from pytest_agentic_evals.probes.targets import (
    INCONCLUSIVE,
    KILLED,
    MUTANTS,
    NOT_APPLICABLE,
    PROGRAM,
    REPLAY,
    SURVIVED,
    Target,
    locate,
    read_by_the_command,
)


@dataclass(frozen=True)
class MutantResult:
    mutant: str
    status: str
    killed_by: tuple[str, ...] = ()
    """The expectations (and other problems) that failed the trial: what killed it."""
    reason: str = ""
    """Why it does not apply, or why the trial says nothing (inconclusive)."""
    exit_code: int | None = None

    def as_json(self) -> dict[str, object]:
        entry: dict[str, object] = {"mutant": self.mutant, "status": self.status,
                                    "killed_by": list(self.killed_by), "exit_code": self.exit_code}
        if self.reason:
            entry["reason"] = self.reason
        return entry


@dataclass(frozen=True)
class CaseProbe:
    """The probe of one case: its identity, the entrypoint swapped, each stand-in's fate."""

    case: Case
    test_source_sha256: str
    oracle_sha256: str
    target: Target | None
    unprobed: str | None
    """Why no stand-in could replace its entrypoint (None when it was probed)."""
    results: tuple[MutantResult, ...] = ()
    donor: str | None = None
    """The case whose real output the ``replay`` stand-in played."""

    def result(self, mutant: str) -> MutantResult | None:
        return next((r for r in self.results if r.mutant == mutant), None)


Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


def probe_fixture(
    fixture: Fixture,
    settings: RunSettings,
    kinds: Mapping[str, ExpectationKind],
    cases: Sequence[Case] | None = None,
    progress: Progress = _quiet,
) -> list[CaseProbe]:
    """Probe ``cases`` (every case of the fixture by default); nothing is written here."""
    chosen = list(fixture.cases if cases is None else cases)
    targets = {case.name: locate(case) for case in fixture.cases}
    donors = {case.name: _donor(case, fixture.cases, targets) for case in chosen}
    recordings: dict[str, Recording | None] = {}
    for name in sorted({d for d in donors.values() if d is not None}):
        donor_case = next(c for c in fixture.cases if c.name == name)
        progress(f"recording the real skill in case {name}")
        recordings[name] = _record(fixture, donor_case, settings, kinds)
    probes = []
    for case in chosen:
        target, why = targets[case.name]
        identity = (test_source_sha256(case), oracle_sha256(case))
        if target is None:
            probes.append(CaseProbe(case, *identity, None, why))
            continue
        donor = donors[case.name]
        recording = recordings.get(donor) if donor is not None else None
        read = read_by_the_command(case, target)
        if read is not None:  # no stand-in's trial would be evidence: none is played
            probes.append(CaseProbe(case, *identity, target, None, tuple(
                MutantResult(mutant, INCONCLUSIVE, reason=read) for mutant in MUTANTS), donor))
            continue
        results = []
        for number, mutant in enumerate(MUTANTS, start=2):
            progress(f"case {case.name}: {mutant}")
            results.append(_probe(fixture, case, target, mutant, number, settings, kinds,
                                  recording, donor))
        probes.append(CaseProbe(case, *identity, target, None, tuple(results), donor))
    return probes


def _donor(case: Case, cases: Sequence[Case],
           targets: Mapping[str, tuple[Target | None, str]]) -> str | None:
    """Another case reaching the same entrypoint, one expecting the same exit code first."""
    mine = targets[case.name][0]
    if mine is None:
        return None
    others = [c for c in cases if c.name != case.name
              and (t := targets[c.name][0]) is not None and t.key == mine.key]
    others.sort(key=lambda c: expected_exit(c) != expected_exit(case))
    return others[0].name if others else None


def _copy_mode(case: Case) -> Case:
    # A stand-in is written into the trial's workspace: never the real skill directory.
    return case if case.workspace == "copy" else dataclasses.replace(case, workspace="copy")


def _record(fixture: Fixture, case: Case, settings: RunSettings,
            kinds: Mapping[str, ExpectationKind]) -> Recording | None:
    recorder = Recorder(case, settings.run_dir / "probe-recordings" / case.name)
    run_trial(fixture, _copy_mode(case), 1, settings, kinds, recorder)
    return recorder.recording


def _probe(
    fixture: Fixture, case: Case, target: Target, mutant: str, number: int,
    settings: RunSettings, kinds: Mapping[str, ExpectationKind],
    recording: Recording | None, donor: str | None,
) -> MutantResult:
    if mutant == REPLAY and recording is None:
        reason = ("no other case of the fixture reaches the same entrypoint"
                  if donor is None else f"the real skill's run of case {donor} did not finish")
        return MutantResult(mutant, NOT_APPLICABLE, reason=reason)
    stand_in = StandIn(case, target, mutant, recording)
    result = run_trial(fixture, probed_case(case, target.path), number, settings, kinds,
                       stand_in)
    return judge(mutant, result, stand_in.played, unswapped(case, target, result))


def probed_case(case: Case, entrypoint: Path) -> Case:
    """The case as a stand-in's trial runs it: in a copy of the skill, without its
    assertions on the entrypoint file."""
    return _copy_mode(_without_reads_of(case, entrypoint))


def _without_reads_of(case: Case, entrypoint: Path) -> Case:
    """The case without its artifact assertions on the entrypoint file itself: the stand-in
    replaces that file, so such an assertion fails for every stand-in whatever the oracle is
    worth (reading the skill's source is no check of what it did)."""
    assertions = case.expected.get("artifacts")
    if not isinstance(assertions, list):
        return case
    real = os.path.realpath(entrypoint)

    def reads_it(assertion: object) -> bool:
        paths = [assertion.get("path"), (assertion.get("equals_artifact") or {}).get("path")] \
            if isinstance(assertion, dict) else []
        return any(isinstance(p, str) and os.path.realpath(case.cwd / p) == real for p in paths)

    kept = [a for a in assertions if not reads_it(a)]
    if len(kept) == len(assertions):
        return case
    return dataclasses.replace(case, expected={**case.expected, "artifacts": kept})


def unswapped(case: Case, target: Target, result: TrialResult) -> str | None:
    """Why the real skill may have run instead of the stand-in, or None: a declared program
    named by absolute path, or a command naming the skill's own directory by absolute path,
    runs the original files, which only a sandboxed trial is shown with the stand-in in place
    (see ``StandIn.shadowed``)."""
    if target.via == PROGRAM:
        return ("the stand-in only shadows the program on PATH, and the command did not find "
                "it there")
    if case.skill_dir is None or result.get("isolation", {}).get("sandbox") == "bwrap":
        return None
    if target.via == "absolute":
        return ("the entrypoint is a program named by absolute path, which only a sandboxed "
                "trial sees with the stand-in in place")
    spellings = {str(case.skill_dir), os.path.realpath(case.skill_dir)}
    words = [*case.command, *case.env.values()]
    if any(spelling in word for spelling in spellings for word in words):
        return ("the command names the skill's own directory by absolute path, which only a "
                "sandboxed trial sees with the stand-in in place")
    return None


def judge(mutant: str, result: TrialResult, played: Mapping[str, object],
          unswapped: str | None = None) -> MutantResult:
    """What one stand-in's trial says of the case's oracle; ``unswapped`` says why the real
    skill may have run in its place."""
    problems = tuple(str(p) for p in result.get("problems", ()))
    exit_code = result.get("exit_code")
    code = exit_code if isinstance(exit_code, int) else None
    if result.get("infrastructure") or result.get("outcome") in (BLOCKED, INFRA_BLOCKED):
        reason = problems[0] if problems else "the trial could not run"
        return MutantResult(mutant, INCONCLUSIVE, reason=reason, exit_code=code)
    if not played.get("ran"):
        if unswapped is not None:
            return MutantResult(mutant, INCONCLUSIVE, exit_code=code, reason=(
                f"the command never started the stand-in: {unswapped}"))
        if result.get("outcome") == PASS:
            return MutantResult(mutant, SURVIVED, exit_code=code, reason=(
                "the command never started the stand-in, and the oracle passed anyway"))
        return MutantResult(mutant, INCONCLUSIVE, exit_code=code, reason=(
            "the command never started the stand-in: "
            + (problems[0] if problems else "it failed before reaching the entrypoint")))
    if played.get("applicable") is False:
        return MutantResult(mutant, NOT_APPLICABLE, reason=str(played.get("reason") or ""),
                            exit_code=code)
    if result.get("outcome") == PASS:
        return MutantResult(mutant, SURVIVED, exit_code=code)
    return MutantResult(mutant, KILLED, killed_by=problems, exit_code=code)
