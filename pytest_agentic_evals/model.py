"""The data the product works on: a fixture, its cases, and the types and names of outcomes
and verdicts.

Loaders build these objects (``loading``); everything downstream reads them. Nothing here
imports another module of the package but ``problems``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypedDict

from pytest_agentic_evals.problems import pointer_for

CASE_TYPES = ("positive", "negative", "adversarial")
SKILL_MINIMUM_TRIALS = 2
# A fixture that does not say how many trials gets three, as in the earlier tool: several
# trials, so a fixture written for it without the key still meets the contract's minimum.
DEFAULT_TRIALS = 3
# The eval_kind values that ask to skip the anti-slush contract; only a run can grant it, with
# these options of agentic-evals and of the plugin (pytest_plugin.settings defines them; a test
# keeps the spellings equal).
EXEMPT_KINDS = ("runner_selftest", "scaffold")
ALLOW_EXEMPT_RUN = "--allow-exempt"
ALLOW_EXEMPT_PYTEST = "--agentic-evals-allow-exempt"
# The directory a fixture conventionally lives in; its parent is then the skill's directory.
FIXTURES_DIRNAME = "fixtures"
# How a trial is isolated: see execution/sandbox.py.
SANDBOX_MODES = ("auto", "required", "off")
# What a sandboxed trial reaches of the network: see execution/sandbox.py.
NETWORK_MODES = ("proxy", "none", "host")


@dataclass(frozen=True)
class InputArtifact:
    """A file written into the trial's workspace before the command runs, from one of: inline
    ``content`` (text, or any other JSON value written as JSON), ``content_base64`` (bytes),
    or ``from``, a file of the skill directory copied byte for byte."""

    path: str
    content: Any = None
    outside_workspace: bool = False
    binary: bytes | None = None
    """The decoded ``content_base64``."""
    source: Path | None = None
    """The absolute path of the ``from`` file."""
    origin: str | None = None
    """The ``from`` path as the fixture writes it, for judgements and messages."""

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return json.dumps(self.content, indent=2)

    def write(self, target: Path) -> None:
        if self.source is not None:
            shutil.copyfile(self.source, target)
        elif self.binary is not None:
            target.write_bytes(self.binary)
        else:
            target.write_text(self.text(), encoding="utf-8")


@dataclass(frozen=True)
class Case:
    index: int
    name: str
    type: str
    command: tuple[str, ...]
    expected: Mapping[str, Any]
    cwd: Path
    """Absolute working directory in the source tree (the fixture's directory or its ``cwd``)."""
    fixture_dir: Path = Path()
    """The folder of the fixture file, which ``{fixture_dir}`` names at run time."""
    required: bool = True
    real_world: bool = False
    evidence_class: str | None = None
    supports_claims: tuple[str, ...] = ()
    seams: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    timeout_seconds: float | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    workspace: str = "copy"
    must_exercise: tuple[str, ...] = ()
    blocked_markers: tuple[str, ...] = ()
    infra_markers: tuple[str, ...] = ()
    """``infra_blocked_when``: signs of an external blocker, in stdout or stderr."""
    readback: bool = False
    input_artifacts: tuple[InputArtifact, ...] = ()
    description: str = ""
    source: Mapping[str, Any] = field(default_factory=dict)
    """The case object as written in the fixture, from which its identity hashes are taken."""
    skill_dir: Path | None = None
    """The skill's directory (as ``Fixture.skill_dir``): files inside it are its own code.
    None when unknown (a case built by hand): then nothing counts as the skill's code."""
    entrypoints: tuple[str, ...] = ()
    """The fixture's ``entrypoints``: programs on PATH that are the skill's own code."""
    sandbox: str | None = None
    """The case's ``sandbox`` setting, else the fixture's; None when neither sets one."""
    sandbox_source: str = ""
    """Where ``sandbox`` came from: ``the case`` or ``the fixture``."""
    writable_paths: tuple[Path, ...] = ()
    """Absolute paths outside the workspace that the sandboxed trial may write."""
    network: str = "proxy"
    """The sandboxed trial's network: ``proxy`` (default), ``none`` or ``host``."""

    @property
    def pointer(self) -> str:
        return pointer_for("cases", self.index)

    @property
    def copied_inputs(self) -> tuple[str, ...]:
        """The ``from`` paths of the case's input artifacts, as the fixture writes them."""
        return tuple(a.origin for a in self.input_artifacts if a.origin is not None)

    @property
    def judged_command(self) -> tuple[str, ...]:
        """The command as load-time judgements see it: ``{fixture_dir}`` becomes the path it
        names, relative to the working directory, so that where a checkout lives (say under a
        folder called ``fixtures``) cannot change a verdict."""
        relative = os.path.relpath(self.fixture_dir, self.cwd)
        return tuple(word.replace("{fixture_dir}", relative) for word in self.command)


@dataclass(frozen=True)
class Fixture:
    path: Path
    sha256: str
    data: Mapping[str, Any]
    cases: tuple[Case, ...]
    skill_dir: Path
    """The directory each private trial workspace copies: the fixture's directory, or the
    parent of the ``fixtures/`` folder it sits in (see ``skill_dir_for``)."""
    exemptions_accepted: bool = False
    """Whether whoever loads the fixture grants the exemption its ``eval_kind`` may declare:
    the fixture lives in the skill it judges, so it cannot exempt itself (see
    ``loading.contract``)."""

    @property
    def skill(self) -> str:
        return str(self.data.get("skill") or self.skill_dir.name)

    @property
    def trials(self) -> int:
        return int(self.data.get("trials", DEFAULT_TRIALS))

    @property
    def eval_kind(self) -> str:
        return str(self.data.get("eval_kind", "skill"))

    @property
    def eval_tier(self) -> str:
        return str(self.data.get("eval_tier", "standard"))

    @property
    def declares_exemption(self) -> bool:
        return self.eval_kind in EXEMPT_KINDS

    @property
    def exempt_from_contract(self) -> bool:
        """Declared, granted by the run, and not a compliance fixture (never exempt)."""
        return (self.declares_exemption and self.exemptions_accepted
                and self.eval_tier != "compliance")

    @property
    def minimum_trials(self) -> int:
        return 1 if self.exempt_from_contract else SKILL_MINIMUM_TRIALS

    def case(self, name: str) -> Case:
        for case in self.cases:
            if case.name == name:
                return case
        raise KeyError(name)


def skill_dir_for(fixture_path: Path) -> Path:
    """The skill a fixture belongs to: the parent of its ``fixtures/`` folder, also for a
    fixture one folder deeper (``fixtures/selftest/x.json``, the earlier tool's self-test
    layout, whose commands reach the skill as ``../../run.sh``); else the fixture's folder."""
    parent = fixture_path.parent
    if parent.name == FIXTURES_DIRNAME:
        return parent.parent
    if parent.parent.name == FIXTURES_DIRNAME:
        return parent.parent.parent
    return parent


# Outcomes, readiness and verdicts: each a Literal type (what a value may be, checked by the
# type checker) and its names (what code writes instead of a bare string). The report schema
# states the same sets; a test keeps them equal.

TrialOutcome = Literal["PASS", "FAIL", "BLOCKED", "INFRA_BLOCKED"]
CaseOutcome = Literal["PASS", "FAIL", "BLOCKED", "NOT_TESTED"]
PASS: Final = "PASS"
FAIL: Final = "FAIL"
BLOCKED: Final = "BLOCKED"
NOT_TESTED: Final = "NOT_TESTED"
"""A case none of whose trials ran; never a trial's outcome."""
INFRA_BLOCKED: Final = "INFRA_BLOCKED"
"""A trial whose expectations failed while an external blocker showed (``infra_blocked_when``):
never a pass, and counted like BLOCKED, but kept apart so that it is not taken for a fault of
the skill. A trial outcome only: its case is BLOCKED."""


# ---------------------------------------------------------------------------------------------
# A trial's result: the one shape every trial result has, whoever builds it (the runner for a
# trial that ran or could not start, stop on fail for one it left out, the controller for one a
# crashed worker never reported). It is what the report lists under a case's ``trials`` (see
# docs/report.md), so it stays a JSON object: a dict, typed.
# ---------------------------------------------------------------------------------------------


class _TrialResultKeys(TypedDict):
    """What every trial result says, also when its command never ran."""

    trial: int
    outcome: TrialOutcome | Literal["NOT_TESTED"]  # NOT_TESTED: left out by stop on fail
    exit_code: int | None
    duration_ms: int
    timed_out: bool
    left_behind_processes: list[dict[str, Any]]  # pid and command line of each
    problems: list[str]


class TrialResult(_TrialResultKeys, total=False):
    """A trial's result. The keys below are there when the trial got as far as they need."""

    infrastructure: bool  # it failed for the runner's reason, not the skill's
    stopped: bool  # left out by stop on fail
    stray_detection: bool  # whether left-behind processes could be looked for
    blocked_markers_seen: list[str]
    argv: list[str]
    random_seed: int
    stdout: dict[str, Any]  # the excerpt of each stream
    stderr: dict[str, Any]
    artifact_hashes: dict[str, str]
    usage: dict[str, Any] | None
    domains: dict[str, Any] | None
    isolation: dict[str, Any]
    workspace: dict[str, Any] | None
    output_dir: str | None
    execution_provenance: dict[str, Any]  # its case's block, named when the report is built
    control: dict[str, Any]  # the first trial of a required case: its control (probes.control)


def unrun_trial(
    trial: int, outcome: TrialOutcome | Literal["NOT_TESTED"], problems: list[str]
) -> TrialResult:
    """The result of a trial whose command did not run: nothing observed, and why."""
    return {"trial": trial, "outcome": outcome, "exit_code": None, "duration_ms": 0,
            "timed_out": False, "left_behind_processes": [], "problems": problems}


# Readiness of a fixture, and of a session (its worst fixture's).
Readiness = Literal["READY", "USABLE_WITH_GAPS", "NOT_ESTABLISHED", "NOT_READY"]
READY: Final = "READY"
USABLE_WITH_GAPS: Final = "USABLE_WITH_GAPS"
NOT_READY: Final = "NOT_READY"
NOT_ESTABLISHED: Final = "NOT_ESTABLISHED"
"""Also a claim's verdict, spelled alike on purpose: nothing shows it either way."""
# From best to worst.
READINESS_ORDER: tuple[Readiness, ...] = (READY, USABLE_WITH_GAPS, NOT_ESTABLISHED, NOT_READY)

# The verdict on one capability claim (``evidence.claims``).
ClaimVerdict = Literal["PROVEN", "PARTIALLY_PROVEN", "BLOCKED_EXTERNAL", "FAILED",
                       "NOT_ESTABLISHED"]
PROVEN: Final = "PROVEN"
PARTIALLY_PROVEN: Final = "PARTIALLY_PROVEN"
BLOCKED_EXTERNAL: Final = "BLOCKED_EXTERNAL"
FAILED: Final = "FAILED"

EVIDENCE_CLASSES = (
    "deterministic",
    "property_or_fuzz",
    "fault_injected_deterministic",
    "live_e2e",
    "adversarial_live_e2e",
    "human_evaluation",
)
LIVE_CLASSES = ("live_e2e", "adversarial_live_e2e")


def serves(effective: str, required: str) -> bool:
    """Whether evidence of class ``effective`` counts where class ``required`` is asked for."""
    # An adversarial live run is a live run too; no other class stands in for another (a
    # fault-injected case is not a deterministic one, nor the reverse).
    return effective == required or (required == "live_e2e" and effective == "adversarial_live_e2e")


CRITICALITIES = ("critical", "important", "optional")
CLAIM_SEMANTICS = ("value_bearing", "protocol", "timing", "control_flow", "human_perceptual",
                   "other")
# The representations each input format admits for one value.  A dict, not a constant tuple,
# so that a project can register its own formats before fixtures are judged.
DOMAIN_PROFILES: dict[str, tuple[str, ...]] = {
    "json-scalar-v1": ("string", "integer", "float", "scientific"),
    "csv-cell-v1": ("quoted", "unquoted"),
    "sqlite-type-v1": ("TEXT", "INTEGER", "REAL"),
}

VALUE_REPRESENTATION_SEAM = "value-representation"


# ---------------------------------------------------------------------------------------------
# Capability claims as the fixture declares them, read defensively: a report may be built for
# data the schema has not vetted.
# ---------------------------------------------------------------------------------------------


def claims_data(fixture: Fixture) -> list[Mapping[str, Any]]:
    claims = fixture.data.get("capability_claims")
    if not isinstance(claims, list):
        return []
    return [claim for claim in claims if isinstance(claim, Mapping)]


def case_data(fixture: Fixture, case: Case) -> Mapping[str, Any]:
    cases = fixture.data.get("cases")
    if isinstance(cases, list) and 0 <= case.index < len(cases):
        data = cases[case.index]
        if isinstance(data, Mapping):
            return data
    return {}


def representation_of(fixture: Fixture, case: Case) -> str | None:
    value = case_data(fixture, case).get("representation")
    return value if isinstance(value, str) and value else None


def required_classes(claim: Mapping[str, Any]) -> list[str]:
    """The classes a claim requires, in canonical order, from either accepted spelling."""
    raw = claim.get("evidence_required")
    if isinstance(raw, Mapping):
        named = {name for name, wanted in raw.items() if wanted is True}
    elif isinstance(raw, list):
        named = {name for name in raw if isinstance(name, str)}
    else:
        named = set()
    return [name for name in EVIDENCE_CLASSES if name in named]


def representations(claim: Mapping[str, Any]) -> list[str]:
    """The profile's representations, then explicit ones it lacks (a union, in order)."""
    found: list[str] = []
    profile = claim.get("domain_profile")
    if isinstance(profile, str):
        found.extend(DOMAIN_PROFILES.get(profile, ()))
    explicit = claim.get("representations")
    if isinstance(explicit, list):
        found.extend(name for name in explicit if isinstance(name, str) and name)
    return list(dict.fromkeys(found))


def artifact_assertions(case: Case) -> list[Mapping[str, Any]]:
    raw = case.expected.get("artifacts")
    if not isinstance(raw, list):
        return []
    return [item for item in raw if isinstance(item, Mapping)]


def requires_absence(assertion: Mapping[str, Any]) -> bool:
    """Whether an artifact assertion asks for its file not to exist (``not_exists``,
    ``absent``, ``exists: false``)."""
    return (assertion.get("not_exists") is True or assertion.get("absent") is True
            or assertion.get("exists") is False)


def declared_seams(fixture: Fixture) -> list[tuple[int, Mapping[str, Any]]]:
    seams = fixture.data.get("seams")
    if not isinstance(seams, list):
        return []
    return [(i, seam) for i, seam in enumerate(seams) if isinstance(seam, Mapping)]
