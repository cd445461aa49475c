"""The anti-slush contract and the compliance tier: refuse self-serving fixtures at load time.

A skill fixture must be capable of telling a working skill from a broken one: several
trials, a case that expects failure, a case that reaches the real skill, and no case that
proves nothing. Commands are judged structurally (see ``commands``), never by substring.
"""

from __future__ import annotations

from pytest_agentic_evals.model import (
    ALLOW_EXEMPT_PYTEST,
    ALLOW_EXEMPT_RUN,
    SKILL_MINIMUM_TRIALS,
    Case,
    Fixture,
)
from pytest_agentic_evals.problems import Problem
from pytest_agentic_evals.shell import (
    CommandParseError,
    SkillCode,
    fixture_stub_inputs,
    real_world_entrypoint,
    sampling,
    triviality,
)

COMPLIANCE_MINIMUM_SAMPLES = 50
FAILURE_SEEKING_TYPES = ("negative", "adversarial")


def contract_violations(fixture: Fixture, shown: str) -> list[Problem]:
    """Every violation of the contract that applies to this fixture, each explained."""
    problems: list[Problem] = []
    compliance = fixture.eval_tier == "compliance"
    if compliance and fixture.eval_kind != "skill":
        problems.append(Problem(
            shown, "/eval_kind",
            f"eval_kind {fixture.eval_kind!r} is an exemption from the contract, and a "
            "compliance fixture can never be exempt",
        ))
    elif fixture.exempt_from_contract:
        return []

    problems += _skill_violations(fixture, shown)
    if compliance:
        problems += _compliance_violations(fixture, shown)
    elif problems and fixture.declares_exemption:
        # The fixture sits in the skill it judges: what it says of itself is no grant, or a
        # skill (or the agent writing it) would pass by calling itself a scaffold.
        problems.insert(0, Problem(
            shown, "/eval_kind",
            f"eval_kind {fixture.eval_kind!r} asks to be exempt from the contract, and only "
            f"the run can grant that (the fixture lives in the skill it judges): run it with "
            f"{ALLOW_EXEMPT_RUN} (agentic-evals) or {ALLOW_EXEMPT_PYTEST} (pytest) when it is "
            "a scaffold or a test of this runner, or give it cases that keep the contract"))
    return problems


def _skill_violations(fixture: Fixture, shown: str) -> list[Problem]:
    problems: list[Problem] = []
    if fixture.trials < SKILL_MINIMUM_TRIALS:
        problems.append(Problem(shown, "/trials", f"trials is {fixture.trials}: a skill fixture "
                                f"needs trials >= {SKILL_MINIMUM_TRIALS} (one trial is not "
                                "evidence)"))

    # Rules 2 and 3 count required cases only: an optional case's failure never lowers
    # readiness, so a negative or real-world case that may fail unnoticed is no evidence.
    failure_seeking = [case for case in fixture.cases if case.type in FAILURE_SEEKING_TYPES]
    if not any(case.required for case in failure_seeking):
        problems.append(Problem(shown, "/cases", "no negative or adversarial case among the "
                                "required cases: a fixture whose every required case expects "
                                "success cannot show that the skill ever says no"
                                + _optional_note(failure_seeking)))
    else:
        problems += _failure_seeking_reach(fixture, failure_seeking, shown)

    real_world = [case for case in fixture.cases if case.real_world]
    if not any(case.required for case in real_world):
        problems.append(Problem(shown, "/cases", "no real-world case among the required cases: "
                                "mark a required case that runs the skill's own code with "
                                '"real_world": true' + _optional_note(real_world)))
    # Every case that calls itself real-world must be: a mislabelled one misleads a reader of
    # the fixture even when another case carries the real-world duty.
    for case in real_world:
        reason = _real_world_judgement(case)
        if reason is not None:
            problems.append(Problem(shown, case.pointer + "/command",
                                    f"real_world case {case.name!r} is not real-world: {reason}"))

    for case in fixture.cases:
        try:
            verdict = triviality(case.judged_command)
        except CommandParseError as exc:
            problems.append(Problem(shown, case.pointer + "/command",
                                    f"cannot judge command of {case.name!r}: {exc}"))
            continue
        if verdict is not None:
            problems.append(Problem(shown, case.pointer + "/command",
                                    f"case {case.name!r} proves nothing: {verdict}"))
    return problems


def _failure_seeking_reach(fixture: Fixture, cases: list[Case], shown: str) -> list[Problem]:
    """Rule 2 asks that the skill be seen saying no: a failure that never comes from the skill
    (``python3 -c 'import sys; sys.exit(3)'``, ``grep x /dev/null``) shows nothing of it.
    At least one required such case must reach the skill's own code, as rule 3 judges it."""
    reasons = []
    for case in cases:
        if not case.required:
            continue
        try:
            entrypoint, explanation = own_code_reached(case)
        except CommandParseError as exc:
            entrypoint, explanation = None, f"its command cannot be parsed: {exc}"
        if entrypoint is not None:
            return []
        reasons.append(f"{case.name!r}: {explanation}")
    return [Problem(shown, "/cases", "no required negative or adversarial case reaches the "
                    "skill's own code, so none shows the skill saying no (" + "; ".join(reasons)
                    + ")")]


def copied_stubs(case: Case) -> list[str]:
    """Input files copied in with ``from`` that are stubs by name (``mocks/response.json``):
    copying canned data into the workspace is feeding it to the command all the same."""
    if not case.copied_inputs:
        return []
    return [f"{path} (copied by an input artifact)"
            for path in fixture_stub_inputs(("cp", *case.copied_inputs))]


def _optional_note(cases: list[Case]) -> str:
    optional = [case.name for case in cases if not case.required]
    if not optional:
        return ""
    return (f" ({', '.join(map(repr, optional))} {'is' if len(optional) == 1 else 'are'} "
            '"required": false, and an optional case never counts for the contract)')


def own_code_reached(case: Case) -> tuple[str | None, str]:
    """Whether the case's command reaches the skill's own code, and why (or why not): the
    judgement of rule 3, which live qualification shares.  Raises CommandParseError."""
    if case.skill_dir is None:
        return None, "the skill's directory is not known, so no code can be told to be its own"
    return real_world_entrypoint(
        case.judged_command, case.cwd, SkillCode(case.skill_dir, case.entrypoints),
        command_environment(case))


def stub_inputs(case: Case) -> list[str]:
    """The stub inputs the case feeds itself, by name or by where they lie (rule 3's
    judgement, which live qualification shares).  Raises CommandParseError."""
    found = fixture_stub_inputs(case.judged_command, case.cwd, case.skill_dir,
                                command_environment(case))
    return found + copied_stubs(case)


def command_environment(case: Case) -> dict[str, str]:
    """The variables the case's command is known to be given, for judging its scripts."""
    return {**case.env, "AGENTIC_EVALS_FIXTURE_DIR": str(case.fixture_dir)}


def _real_world_judgement(case: Case) -> str | None:
    """None when the case reaches a live path; otherwise why it does not."""
    try:
        entrypoint, explanation = own_code_reached(case)
        stubs = stub_inputs(case)
    except CommandParseError as exc:
        return f"its command cannot be parsed: {exc}"
    if entrypoint is None:
        return explanation
    if stubs:
        return (f"it feeds itself stub inputs ({', '.join(stubs)}); write real inputs with "
                "the case's \"artifacts\" instead")
    return None


def _compliance_violations(fixture: Fixture, shown: str) -> list[Problem]:
    problems: list[Problem] = []
    failure_seeking = sum(case.type in FAILURE_SEEKING_TYPES for case in fixture.cases)
    total = len(fixture.cases)
    if failure_seeking * 2 <= total:
        problems.append(Problem(shown, "/cases", f"compliance tier: {failure_seeking} of {total} "
                                "cases are adversarial or negative; more than half must be"))

    non_deterministic = []
    for case in fixture.cases:
        try:
            sample = sampling(case.judged_command)
        except CommandParseError:
            continue  # already reported by the skill rules
        if not sample.non_deterministic:
            continue
        non_deterministic.append(case)
        if sample.samples is None or sample.samples < COMPLIANCE_MINIMUM_SAMPLES:
            seen = "no --samples" if sample.samples is None else f"--samples {sample.samples}"
            problems.append(Problem(
                shown, case.pointer + "/command",
                f"compliance tier: non-deterministic case {case.name!r} "
                f"({', '.join(sample.reasons)}) has {seen}; it must name --samples N with "
                f"N >= {COMPLIANCE_MINIMUM_SAMPLES}",
            ))
    if not non_deterministic:
        problems.append(Problem(shown, "/cases", "compliance tier: no non-deterministic case; at "
                                "least one must sample fresh inputs every run (--samples N, a "
                                "--seed that changes per run such as {random_seed}, or shell "
                                "$RANDOM); a fixed --seed is deterministic"))
    return problems
