"""Fail-before-fix verification of retained regressions: the proof, then the retained case.

A guard that cannot fail is worse than none: it looks like protection. So verification does
not trust the record. It runs the proof and requires the *declared* failure (the declared exit
status and the failure signature), refuses failures that only mean the proof never ran (exit
126/127, an undeclared Python traceback, a fixture rejected at load), then runs the retained
case against the current code, which must pass. The CLI and the pytest items share it.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_agentic_evals.execution.environment import RunSettings, runner_environment
from pytest_agentic_evals.execution.isolation import Launched, launch_proof
from pytest_agentic_evals.execution.process import ProcessResult
from pytest_agentic_evals.execution.trial import run_trial
from pytest_agentic_evals.expectations.builtin import ExpectationKind
from pytest_agentic_evals.expectations.output import excerpt, search_stream
from pytest_agentic_evals.jsonio import display_path
from pytest_agentic_evals.model import PASS, Fixture, skill_dir_for
from pytest_agentic_evals.probes.control import controlled, run_control
from pytest_agentic_evals.redaction import Redactor
from pytest_agentic_evals.regressions.registry import (
    ACTIVE,
    NOT_RUN_EXIT_CODES,
    Proof,
    Registry,
    Regression,
    retained_case_problems,
)
from pytest_agentic_evals.shell import CommandParseError
from pytest_agentic_evals.shell.walker import walk
from pytest_agentic_evals.verdicts import case_outcome

VERIFICATION_SCHEMA = "agentic_evals.regressions_verification.v1"
VERIFIED, NOT_VERIFIED = "VERIFIED", "NOT_VERIFIED"

# Set in a proof's environment. A proof that runs the plugin must not verify regressions in
# turn: the proof of a registry beside its own fixture would otherwise start itself again.
GUARD_VARIABLE = "AGENTIC_EVALS_REGRESSION_ID"

TRACEBACK = re.compile(r"(?m)^Traceback \(most recent call last\):")
FIXTURE_REJECTED = "fixture rejected"
# A command-line usage error (argparse, click, pytest): the proof never got to run its check.
USAGE_ERROR = re.compile(r"(?mi)^(?:usage: |error: usage: |ERROR: usage: )")
# The outcome of a retained case that could not run (its fixture or the case is gone).
NOT_RUN = "NOT_RUN"


def proof_environment(
    regression: Regression, settings: RunSettings, scratch: Path
) -> dict[str, str]:
    """The runner's environment as a trial gets it, plus the recursion guard and the proof's env."""
    env = runner_environment()
    env.update({
        GUARD_VARIABLE: regression.regression_id,
        "AGENTIC_EVALS_RUN_ID": settings.run_id,
        "AGENTIC_EVALS_PROOF_DIR": str(scratch),
    })
    assert regression.proof is not None
    env.update(regression.proof.env)
    return env


def run_proof(regression: Regression, settings: RunSettings) -> dict[str, Any]:
    """Run ``fail_before_fix`` and judge whether it failed for the declared reason."""
    proof = regression.proof
    assert proof is not None
    base = settings.run_dir / "regressions" / regression.regression_id / "proof"
    if base.exists():
        shutil.rmtree(base)
    scratch = base / "scratch"
    scratch.mkdir(parents=True)
    env = proof_environment(regression, settings, scratch)
    timeout = proof.timeout_seconds or settings.default_timeout
    launched = launch_proof(list(proof.argv), cwd=proof.cwd, env=env, timeout=timeout,
                            scratch=scratch, output=base / "output",
                            skill_dir=skill_dir_for(regression.retained_fixture),
                            settings=settings.sandbox)
    if launched.process is None:
        return _not_run(proof, launched, base)
    process = launched.process
    signatures = {
        stream: dict.fromkeys(wanted, False)
        for stream, wanted in (("stdout", proof.stdout_contains),
                               ("stderr", proof.stderr_contains)) if wanted
    }
    problems = _exit_problems(process, proof, timeout)
    if process.start_error is None:
        problems += _output_problems(process, proof, signatures)
    verified = not problems
    hidden = Redactor.of_environment(env)
    result = {
        "argv": list(proof.argv),
        "cwd": display_path(proof.cwd),
        "expected": proof.expected(),
        "verified": verified,
        "exit_code": process.exit_code,
        "timed_out": process.timed_out,
        "duration_ms": process.duration_ms,
        "left_behind_processes": [{"pid": p.pid, "command": p.command}
                                  for p in process.left_behind],
        "signatures_found": signatures,
        "problems": problems,
        "stdout": excerpt(process.stdout_path, hidden),
        "stderr": excerpt(process.stderr_path, hidden),
        "output_dir": str(base / "output"),
        "isolation": launched.isolation,
    }
    if verified and not settings.keep_passed_workspaces:
        shutil.rmtree(base, ignore_errors=True)
        result["output_dir"] = None
    return hidden.document(result)


def _not_run(proof: Proof, launched: Launched, base: Path) -> dict[str, Any]:
    """The result of a proof that could not run where it must (a sandbox required and none
    here): not verified, with the reason."""
    return {
        "argv": list(proof.argv), "cwd": display_path(proof.cwd), "expected": proof.expected(),
        "verified": False, "exit_code": None, "timed_out": False, "duration_ms": 0,
        "left_behind_processes": [], "signatures_found": {},
        "problems": [f"the proof did not run: {launched.blocked}"],
        "stdout": excerpt(Path(os.devnull)), "stderr": excerpt(Path(os.devnull)),
        "output_dir": str(base / "output"), "isolation": launched.isolation,
    }


def _exit_problems(process: ProcessResult, proof: Proof, timeout: float) -> list[str]:
    """Why the way the proof ended is not the declared failure (empty when it may be)."""
    problems: list[str] = []
    code = process.exit_code
    if process.start_error:
        problems.append(f"the proof could not start: {process.start_error}")
    elif process.timed_out:
        problems.append(f"the proof timed out after {timeout:g}s: a hang is not the declared "
                        "failure")
    elif code is not None and code < 0:
        problems.append(f"the proof was killed by signal {-code}: a crash is not the declared "
                        "failure")
    elif code == 0:
        problems.append("the proof exited 0: the guard passed against the broken behaviour, so "
                        "it cannot tell broken from fixed (vacuous guard)")
    elif code in NOT_RUN_EXIT_CODES:
        problems.append(f"the proof exited {code} ({NOT_RUN_EXIT_CODES[code]}): it never ran, "
                        "so it proves nothing")
    elif proof.exit_code is not None and code != proof.exit_code:
        problems.append(f"the proof exited {code}, the declared failure exits {proof.exit_code}")
    if process.left_behind:
        shown = ", ".join(f"pid {p.pid} ({p.command or '?'})" for p in process.left_behind)
        problems.append(f"the proof left {len(process.left_behind)} process(es) behind, killed: "
                        f"{shown}")
    return problems


def _output_problems(
    process: ProcessResult, proof: Proof, signatures: dict[str, dict[str, bool]]
) -> list[str]:
    """Why what the proof printed is not the declared failure; marks in ``signatures`` each
    declared signature that was found."""
    problems: list[str] = []
    code = process.exit_code
    for stream, wanted in signatures.items():
        path = process.stdout_path if stream == "stdout" else process.stderr_path
        found, _ = search_stream(path, wanted, [])
        for signature in wanted:
            wanted[signature] = signature in found
            if signature not in found:
                problems.append(f"failure signature {signature!r} not found in {stream}: "
                                "the proof failed for another reason than the declared one")
    # Either stream: "2>&1" in a proof moves what a crash prints to stdout.
    streams = (process.stdout_path, process.stderr_path)
    crashed = [search_stream(path, [FIXTURE_REJECTED], [TRACEBACK, USAGE_ERROR])
               for path in streams]
    if any(TRACEBACK.pattern in patterns for _, patterns in crashed) and code != 0 \
            and not proof.declares("Traceback"):
        problems.append("the proof died with an undeclared Python traceback: a crash of the "
                        "proof is not the declared failure")
    if code == 2 and any(found for found, _ in crashed) and not proof.declares(FIXTURE_REJECTED):
        problems.append("the proof's fixture was rejected at load (exit 2, \"fixture "
                        "rejected\" in its output): the guard never ran")
    if any(USAGE_ERROR.pattern in patterns for _, patterns in crashed) \
            and not proof.declares("usage"):
        problems.append("the proof stopped on a usage error (a \"usage:\" line in its output): "
                        "its command line was refused, so the guard never ran")
    words = _proof_words(proof.argv, proof.env)
    printed = [s for s in _signatures(proof) if any(s in word for word in words)]
    if printed:
        problems.append("the failure signature " + ", ".join(map(repr, printed)) + " is "
                        "written in the proof's own command: a proof that prints its "
                        "signature itself shows nothing about the skill")
    return problems


def _signatures(proof: Proof) -> tuple[str, ...]:
    return proof.stdout_contains + proof.stderr_contains


def _proof_words(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """The proof's argv and environment, and what its shell scripts hand their programs: each
    word after quote removal and with the variables the script or the proof's ``env`` sets
    (``echo 'not '"found"``, ``A=not; echo "$A found"``), each command's words joined as
    ``echo`` prints them, and again with their backslash escapes read as ``printf`` and
    ``echo -e`` read them (``stdout\\x5fcontains``)."""
    words = [*argv, *env.values()]
    try:
        commands = [found.command for found in walk(argv, env).found]
    except CommandParseError:
        return words
    for command in commands:
        words += [*command.argv, " ".join(command.argv[1:])]
    return words + [_unescaped(word) for word in words if "\\" in word]


# What printf and echo -e read in a word: \xHH, \NNN (octal, also \0NNN) and the C escapes.
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|0?[0-7]{1,3}|[abfnrtv\\'\"])")
_C_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
              "\\": "\\", "'": "'", '"': '"'}


def _unescaped(word: str) -> str:
    def read(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] == "x":
            return chr(int(code[1:], 16))
        if code[0].isdigit():
            return chr(int(code, 8) & 0xFF)
        return _C_ESCAPES[code]

    return _ESCAPE.sub(read, word)


def run_retained_case(
    regression: Regression,
    settings: RunSettings,
    kinds: Mapping[str, ExpectationKind],
    *,
    trials_for: Callable[[Fixture], int] | None = None,
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[dict[str, Any], bool]:
    """Run every trial of the retained case against the current code; and whether a problem is
    bad input (a retained fixture that cannot be loaded)."""
    problems, input_error, fixture = retained_case_problems(regression, extra_expectations)
    result: dict[str, Any] = {
        "fixture": display_path(regression.retained_fixture),
        "case": regression.retained_case,
        "outcome": NOT_RUN,
        "trials": [],
        "problems": problems,
    }
    if problems or fixture is None:
        return result, input_error
    case = fixture.case(regression.retained_case)
    # Its own directory: the same case may be running as ordinary trials of this very run,
    # and trial directories are per (fixture, case, trial).
    private = dataclasses.replace(
        settings, run_dir=settings.run_dir / "regressions" / regression.regression_id
    )
    count = trials_for(fixture) if trials_for else fixture.trials
    trials = []
    for number in range(1, count + 1):
        trial = run_trial(fixture, case, number, private, kinds)
        if number == 1 and trial["outcome"] == PASS:
            # A guard that passes whatever the skill does can never fail: the run's control.
            trial = controlled(trial, run_control(fixture, case, private, kinds,
                                                  trial["duration_ms"] / 1000))
        trials.append(trial)
    outcomes = [trial["outcome"] for trial in trials]
    result["trials"] = trials
    result["outcome"] = case_outcome(outcomes)
    for trial in trials:
        result["problems"] += [f"trial {trial['trial']}: {p}" for p in trial["problems"]]
    return result, False


def verify_regression(
    registry: Registry,
    regression: Regression,
    settings: RunSettings,
    kinds: Mapping[str, ExpectationKind],
    *,
    trials_for: Callable[[Fixture], int] | None = None,
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Fail-before-fix, then pass-after-fix, for one ACTIVE regression; a plain JSON dict.

    A record that can never be verified (``unverifiable``) has its proof left unrun: whatever
    it does, it could not show the declared failure. Its retained case still runs."""
    proof = run_proof(regression, settings) if not regression.unverifiable else None
    retained, input_error = run_retained_case(regression, settings, kinds, trials_for=trials_for,
                                              extra_expectations=extra_expectations)
    reasons = [f"fail-before-fix: {problem}" for problem in
               (proof["problems"] if proof else regression.unverifiable)]
    if retained["outcome"] != PASS:
        passed = sum(t["outcome"] == PASS for t in retained["trials"])
        if retained["trials"]:
            reasons.append(f"retained case {regression.retained_case!r} did not pass on the "
                           f"current code ({passed}/{len(retained['trials'])} trials passed)")
        reasons += [f"retained case: {problem}" for problem in retained["problems"]]
    return {
        "regression_id": regression.regression_id,
        "registry": registry.shown,
        "status": regression.status,
        "incident_id": regression.incident_id,
        "verdict": VERIFIED if not reasons else NOT_VERIFIED,
        "reasons": reasons,
        "input_error": input_error,
        "fail_before_fix": proof,
        "retained": retained,
    }


def crashed_result(registry: str, regression_id: str, problem: str) -> dict[str, Any]:
    """The result of a verification whose process died before it could say anything."""
    return {
        "regression_id": regression_id,
        "registry": registry,
        "status": ACTIVE,
        "incident_id": None,
        "verdict": NOT_VERIFIED,
        "reasons": [problem],
        "input_error": False,
        "fail_before_fix": None,
        "retained": None,
    }


def verification_report(
    registry: Registry, results: list[dict[str, Any]], run_id: str, recorded: Sequence[str] = ()
) -> dict[str, Any]:
    verified = [r for r in results if r["verdict"] == VERIFIED]
    skipped = [{"regression_id": r.regression_id, "status": r.status}
               for r in registry.regressions if r.status != ACTIVE]
    return {
        "schema": VERIFICATION_SCHEMA,
        "registry": registry.shown,
        "skill": registry.skill,
        "run_id": run_id,
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "verified": len(verified) == len(results),
        "summary": {"active": len(results), "verified": len(verified),
                    "not_verified": len(results) - len(verified), "skipped": len(skipped)},
        "regressions": results,
        "skipped": skipped,
        "recorded": list(recorded),
    }


def verification_lines(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per verified regression; the reasons under each one that is not."""
    lines = []
    for result in results:
        rid = result["regression_id"]
        if result["verdict"] == VERIFIED:
            proof, retained = result["fail_before_fix"], result["retained"]
            lines.append(f"{VERIFIED:<13} {rid}: the proof failed as declared (exit "
                         f"{proof['exit_code']}, signature found); retained case "
                         f"{retained['case']} passed {len(retained['trials'])}/"
                         f"{len(retained['trials'])} trials on the current code")
            continue
        lines.append(f"{NOT_VERIFIED:<13} {rid}: cannot demonstrate fail-before-fix")
        lines += [f"  - {reason}" for reason in result["reasons"]]
    return lines
