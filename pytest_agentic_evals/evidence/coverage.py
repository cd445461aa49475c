"""Risk-based coverage: which declared seams have a guard that can catch a regression.

Counting cases is gameable, so coverage is judged per declared seam (``seams`` at the top of a
fixture) and per evidence class that seam requires: a class is covered only by a case that
lists the seam, counts as that class after live qualification (``qualification.qualify``)
and carries an oracle that checks something the command does not merely announce
(``qualification.oracle``).

Everything here is pure: no pytest, nothing is executed.  Freshness (is the proof of a mapped
regression current?) is reported as its own dimension and never changes a coverage status.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from pytest_agentic_evals.evidence.qualification import oracle, qualify, unreached
from pytest_agentic_evals.jsonio import display_path
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.loading.seams import main_fixture_of
from pytest_agentic_evals.model import (
    CRITICALITIES,
    EVIDENCE_CLASSES,
    LIVE_CLASSES,
    VALUE_REPRESENTATION_SEAM,
    Case,
    Fixture,
    declared_seams,
    serves,
)
from pytest_agentic_evals.probes import store as probe_store
from pytest_agentic_evals.regressions import registry as regressions
from pytest_agentic_evals.skills import discover, fixture_paths

SCHEMA = "agentic_evals.coverage.v1"

# Seam status.
COVERED = "covered"
WEAK_ONLY = "weak_only"
UNCOVERED = "uncovered"

# Verdicts, from best to worst; a root takes the worst of its skills.
VERDICT_COVERED = "COVERED"
VERDICT_NO_SEAMS = "NO_SEAMS"
VERDICT_GAPS = "GAPS"
VERDICT_CRITICAL_GAP = "CRITICAL_GAP"
VERDICT_INVALID = "INVALID"
VERDICTS = (VERDICT_COVERED, VERDICT_NO_SEAMS, VERDICT_GAPS, VERDICT_CRITICAL_GAP,
            VERDICT_INVALID)

# A seam that names no required_evidence still needs one capable guard; deterministic is the
# cheapest class that can be one.
DEFAULT_REQUIRED_EVIDENCE = ("deterministic",)
# Below this many skills a process pool costs more to start than it saves.
PARALLEL_THRESHOLD = 64
MAX_WORKERS = 8

_CRITICALITY_RANK = {name: rank for rank, name in enumerate(CRITICALITIES)}


# ---------------------------------------------------------------------------------------------
# Per seam
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Guard:
    case: Case
    effective: str
    declared: str | None
    live_qualified: bool | None
    disqualifiers: tuple[str, ...]
    capable: bool
    weak_reasons: tuple[str, ...]
    oracle_source: str = probe_store.SOURCE_STATIC
    probe: probe_store.Stored = probe_store.NOTHING
    fixture: str | None = None
    """The live companion the case comes from; None for the fixture's own cases."""

    def as_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"case": self.case.name, "class": self.effective,
                                 "declared_class": self.declared, "oracle": self.capable,
                                 "oracle_source": self.oracle_source}
        if self.fixture is not None:
            entry["fixture"] = self.fixture
        if self.probe.state != probe_store.ABSENT:
            entry["probe"] = self.probe.as_json()
        if self.live_qualified is not None:
            entry["live_qualified"] = self.live_qualified
        if self.disqualifiers:
            entry["evidence_disqualifiers"] = list(self.disqualifiers)
        if self.weak_reasons:
            entry["weak_reasons"] = list(self.weak_reasons)
        return entry


def _guard(case: Case, stored: probe_store.Stored = probe_store.NOTHING) -> _Guard:
    """A case as a guard. A fresh probe result decides whether its oracle can fail, in both
    directions; without one (none, or stale) the static judgement of :func:`oracle` does."""
    q = qualify(case, stored)
    capable, reasons = oracle(case)
    source = probe_store.SOURCE_STATIC
    needed = (probe_store.VALUE_KILLS if VALUE_REPRESENTATION_SEAM in case.seams
              else probe_store.CAPABLE_KILLS)
    empirical = stored.capable(needed)
    if empirical is not None:
        source, capable = probe_store.SOURCE_PROBE, empirical
        reasons = [] if empirical else [
            f"the probe shows its oracle survived `{mutant}` (a broken skill passes it)"
            for mutant in stored.survived(needed)]
    # Last, and only for a check that can fail: reading the command is the costly part.
    not_the_skill = unreached(case) if capable else None
    if not_the_skill is not None:
        capable, reasons = False, [f"its command reaches no code of the skill: {not_the_skill}"]
    return _Guard(case, q.effective, q.declared, q.live_qualified, q.disqualifiers, capable,
                  tuple(reasons), source, stored)


def _required(seam: Mapping[str, Any]) -> list[str]:
    named = seam.get("required_evidence")
    if isinstance(named, list) and named:
        return [c for c in EVIDENCE_CLASSES if c in named]
    return list(DEFAULT_REQUIRED_EVIDENCE)


@dataclass(frozen=True)
class Freshness:
    today: date
    days: int


def _seam_entry(
    seam: Mapping[str, Any],
    guards: Sequence[_Guard],
    mapped: Sequence[Any],
    freshness: Freshness,
) -> dict[str, Any]:
    seam_id = str(seam.get("seam_id"))
    findings: list[dict[str, str]] = []
    criticality = _criticality(seam, seam_id, findings)
    required = _required(seam)
    listing = [g for g in guards if seam_id in g.case.seams]
    by_class = _ClassCoverage.of(required, listing)
    return {
        "seam_id": seam_id,
        "seam_type": seam.get("seam_type"),
        "claim_id": seam.get("claim_id"),
        "failure_modes": list(seam.get("failure_modes") or ()),
        "criticality": criticality,
        "required_evidence": required,
        "status": by_class.status,
        "covered": by_class.covered,
        "weak_only": by_class.weak,
        "uncovered": by_class.uncovered,
        "classes": by_class.classes,
        "cases": [g.as_json() for g in listing],
        "downgraded_live_cases": [g.case.name for g in listing if g.live_qualified is False],
        "live_coverage": sorted({g.effective for g in listing
                                 if g.capable and g.effective in LIVE_CLASSES}),
        "deterministic_coverage": sorted({g.effective for g in listing
                                          if g.capable and g.effective not in LIVE_CLASSES}),
        "regressions_mapped": [r.regression_id for r in mapped],
        "freshness": _proof_freshness(mapped, freshness),
        "findings": findings,
    }


def _criticality(seam: Mapping[str, Any], seam_id: str, findings: list[dict[str, str]]) -> str:
    criticality = seam.get("criticality")
    if criticality in CRITICALITIES:
        return str(criticality)
    # Fail closed: a seam whose risk is unknown is judged as the riskiest kind.
    findings.append({"severity": "high", "code": "unknown_criticality", "finding": (
        f"seam {seam_id!r} has criticality {criticality!r}, not one of "
        f"{', '.join(CRITICALITIES)}: judged as critical")})
    return "critical"


@dataclass
class _ClassCoverage:
    """How each required evidence class of a seam is served by its cases."""

    classes: dict[str, Any] = field(default_factory=dict)
    covered: dict[str, list[str]] = field(default_factory=dict)
    weak: list[str] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, required: Sequence[str], listing: Sequence[_Guard]) -> _ClassCoverage:
        found = cls()
        for name in required:
            capable = [g for g in listing if g.capable and serves(g.effective, name)]
            weak = [g for g in listing if not g.capable and serves(g.effective, name)]
            status = COVERED if capable else WEAK_ONLY if weak else UNCOVERED
            # Cases are named here and described once, under "cases": a big tree's report
            # must stay small enough to write quickly.
            found.classes[name] = {"status": status,
                                   "capable_cases": [g.case.name for g in capable],
                                   "weak_cases": [g.case.name for g in weak]}
            if capable:
                found.covered[name] = [g.case.name for g in capable]
            elif weak:
                found.weak.append(name)
            else:
                found.uncovered.append(name)
        return found

    @property
    def status(self) -> str:
        if self.uncovered:
            return UNCOVERED
        return WEAK_ONLY if self.weak else COVERED


def _proof_freshness(mapped: Sequence[Any], freshness: Freshness) -> dict[str, Any]:
    """A separate dimension: a stale proof never turns covered into uncovered, nor back."""
    stale, fresh = [], []
    for regression in mapped:
        proven = regression.last_proven
        if proven is None or (freshness.today - proven).days > freshness.days:
            stale.append(regression.regression_id)
        else:
            fresh.append(regression.regression_id)
    return {"status": "stale" if stale else "fresh" if fresh else "no_mapped_proof",
            "stale_regressions": stale, "fresh_regressions": fresh,
            "freshness_days": freshness.days}


# ---------------------------------------------------------------------------------------------
# Per fixture, per skill, per root
# ---------------------------------------------------------------------------------------------


def _value_bearing(fixture: Fixture) -> list[str]:
    claims = fixture.data.get("capability_claims")
    return [str(c.get("id")) for c in (claims if isinstance(claims, list) else [])
            if isinstance(c, Mapping) and c.get("claim_semantics") == "value_bearing"]


def fixture_coverage(
    fixture: Fixture, registry: Mapping[str, Any], freshness: Freshness,
    companion: Fixture | None = None, inherited: Iterable[str] = (),
) -> dict[str, Any]:
    """The coverage of one loaded fixture; ``registry`` is ``registry_entry``'s result. The
    cases of a live ``companion`` guard this fixture's seams too; ``inherited`` are the seam
    ids a companion's cases may name because its main fixture declares them (judged there)."""
    guards = _guards(fixture)
    merged = guards + ([] if companion is None else _guards(companion, display_path(
        companion.path)))
    declared = declared_seams(fixture)
    findings = _undeclared_seams(
        fixture, {str(seam.get("seam_id")) for _, seam in declared} | set(inherited))
    invalid = bool(findings)
    for exempt in (fixture, companion):
        if exempt is not None and exempt.exempt_from_contract and \
                any(case.seams for case in exempt.cases):
            findings.append({"severity": "high", "code": "exempt_guards", "finding": (
                f"{display_path(exempt.path)} is eval_kind {exempt.eval_kind!r}, exempt from "
                "the contract: its cases need not run the skill, so they guard no seam")})
    records = registry.get("regressions", [])
    seams = []
    for _, declaration in declared:
        wanted = declaration.get("seam_id")
        mapped = [r for r in records if wanted in r.seam_ids]
        seams.append(_seam_entry(declaration, merged, mapped, freshness))
    for seam in seams:
        findings += seam["findings"] + _gap_findings(seam)
    value_gap = _value_rule(fixture, seams)
    if value_gap:
        findings.append({"severity": "high", "code": "value_representation",
                         "finding": value_gap})
    return {
        "fixture": display_path(fixture.path),
        "skill": fixture.skill,
        "companion": None if companion is None else display_path(companion.path),
        "valid": True,
        "verdict": _fixture_verdict(seams, invalid=invalid, value_gap=bool(value_gap)),
        "seams": seams,
        "uncovered_seams": [s["seam_id"] for s in seams if s["status"] == UNCOVERED],
        "weak_only_seams": [s["seam_id"] for s in seams if s["status"] == WEAK_ONLY],
        "live_coverage": {s["seam_id"]: s["live_coverage"] for s in seams},
        "deterministic_coverage": {s["seam_id"]: s["deterministic_coverage"] for s in seams},
        "value_representation": {"value_bearing_claims": _value_bearing(fixture),
                                 "gap": value_gap},
        "findings": findings,
        "prioritized_next_evals": prioritized_next_evals(seams),
        "probes": _probe_use(fixture, guards),
    }


def _guards(fixture: Fixture, shown: str | None = None) -> list[_Guard]:
    """The fixture's cases that name seams, as guards; none for a fixture exempt from the
    contract (``scaffold``, ``runner_selftest``), whose cases need not run the skill at all."""
    if fixture.exempt_from_contract:
        return []
    stored = probe_store.load(fixture)
    return [dataclasses.replace(_guard(case, stored[case.name]), fixture=shown)
            for case in fixture.cases if case.seams]


def _undeclared_seams(fixture: Fixture, declared_ids: set[str]) -> list[dict[str, str]]:
    """A case naming a seam the fixture does not declare makes its coverage invalid."""
    return [{"severity": "error", "code": "undeclared_seam", "finding": (
                f"case {case.name!r} names seam {seam_id!r}, which the fixture does not "
                "declare: a guard of an undeclared risk covers nothing")}
            for case in fixture.cases for seam_id in case.seams if seam_id not in declared_ids]


def _gap_findings(seam: Mapping[str, Any]) -> list[dict[str, str]]:
    """A seam not covered: high for a critical seam, a priority when a regression maps to it."""
    if seam["status"] == COVERED:
        return []
    missing = seam["uncovered"] + seam["weak_only"]
    severity = "high" if seam["criticality"] == "critical" else "medium"
    text = (f"seam {seam['seam_id']!r} ({seam['criticality']}) is {seam['status']}: "
            f"no capable guard for {', '.join(missing)}")
    if seam["regressions_mapped"]:
        text += f"; mapped regression(s) {', '.join(seam['regressions_mapped'])} => priority"
    return [{"severity": severity, "code": f"seam_{seam['status']}", "finding": text}]


def _fixture_verdict(seams: Sequence[Mapping[str, Any]], *, invalid: bool, value_gap: bool) -> str:
    if invalid:
        return VERDICT_INVALID
    if value_gap or any(s["criticality"] == "critical" and s["status"] != COVERED
                        for s in seams):
        return VERDICT_CRITICAL_GAP
    if any(s["status"] != COVERED for s in seams):
        return VERDICT_GAPS
    return VERDICT_COVERED if seams else VERDICT_NO_SEAMS


def _probe_use(fixture: Fixture, guards: Sequence[_Guard]) -> dict[str, Any]:
    """Which guards a fresh probe judged, and which stored results are stale (not used)."""
    return {
        "file": display_path(probe_store.store_path(fixture.path)),
        "judged_by_probe": [g.case.name for g in guards
                            if g.oracle_source == probe_store.SOURCE_PROBE],
        "stale": [{"case": g.case.name, "because": list(g.probe.stale_because)}
                  for g in guards if g.probe.state == probe_store.STALE],
    }


def _value_rule(fixture: Fixture, seams: Sequence[Mapping[str, Any]]) -> str | None:
    """Spec 6.3: a value pipeline needs a critical value-representation seam, capably guarded."""
    claims = _value_bearing(fixture)
    if not claims:
        return None
    seam = next((s for s in seams if s["seam_id"] == VALUE_REPRESENTATION_SEAM), None)
    where = f"value_bearing claim(s) {', '.join(claims)}"
    if seam is None:
        return (f"{where} but no {VALUE_REPRESENTATION_SEAM!r} seam: a pipeline that "
                "transforms, filters or redacts values needs one, critical, with a capable guard")
    if seam["criticality"] != "critical":
        return f"{where} but the {VALUE_REPRESENTATION_SEAM!r} seam is not critical"
    if not any(case["oracle"] for case in seam["cases"]):
        return f"{where} but the {VALUE_REPRESENTATION_SEAM!r} seam has no capable guard"
    return None


def prioritized_next_evals(seams: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One entry per missing class: critical seams first, then the seams missing the most."""
    entries = []
    for seam in seams:
        missing = seam["uncovered"] + seam["weak_only"]
        for name in missing:
            entries.append({
                "seam_id": seam["seam_id"], "criticality": seam["criticality"],
                "evidence_class": name, "missing_classes": len(missing),
                "why": ("only weak cases (no oracle that can fail) serve it"
                        if name in seam["weak_only"] else "no case serves it"),
                "regressions_mapped": seam["regressions_mapped"],
            })
    entries.sort(key=lambda e: (_CRITICALITY_RANK.get(e["criticality"], 0),
                                -e["missing_classes"], -len(e["regressions_mapped"]),
                                e["seam_id"], EVIDENCE_CLASSES.index(e["evidence_class"])))
    return entries


def registry_entry(skill_dir: Path) -> dict[str, Any]:
    """The skill's regression registry: absent, invalid (never read as "no regressions"), or its
    records."""

    path = regressions.find_registry(skill_dir) if skill_dir.is_dir() else None
    if path is None:
        return {"path": None, "valid": True, "regressions": [], "freshness_days": None}
    try:
        registry = regressions.load_registry(path)
    except regressions.RegistryError as exc:
        return {"path": display_path(path), "valid": False,
                "problems": [str(p) for p in exc.problems], "regressions": [],
                "freshness_days": None}
    return {"path": display_path(path), "valid": True, "regressions": list(registry.regressions),
            "freshness_days": registry.freshness_days}


def skill_coverage(
    skill_dir: Path,
    fixture_paths: Sequence[Path],
    today: date,
    extra_expectations: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Coverage of every fixture of one skill; the skill's verdict is the worst of them."""
    registry = registry_entry(skill_dir)
    freshness = Freshness(today, registry["freshness_days"] or regressions.DEFAULT_FRESHNESS_DAYS)
    findings: list[dict[str, str]] = []
    entries: dict[Path, dict[str, Any]] = {}
    loaded: dict[Path, Fixture] = {}
    for path in fixture_paths:
        try:
            # Coverage reads what each fixture declares; an exempt one guards no seam (below).
            loaded[path] = load_fixture(path, extra_expectations, accept_exemptions=True)
        except FixtureError as exc:
            entries[path] = {"fixture": display_path(path), "valid": False,
                             "verdict": VERDICT_INVALID,
                             "problems": [str(p) for p in exc.problems]}
    mains = {path: main for path in loaded
             if (main := main_fixture_of(path)) is not None and main in loaded}
    companions = {main: loaded[path] for path, main in mains.items()}
    verdicts = [entry["verdict"] for entry in entries.values()]
    for path, fixture in loaded.items():
        main = mains.get(path)
        inherited = () if main is None else [str(s.get("seam_id"))
                                             for _, s in declared_seams(loaded[main])]
        entries[path] = fixture_coverage(fixture, registry, freshness, companions.get(path),
                                         inherited)
        if main is not None and not declared_seams(fixture):
            # Merged into its main fixture's coverage, with no seam of its own to judge.
            entries[path]["merged_into"] = display_path(main)
        else:
            verdicts.append(entries[path]["verdict"])
    fixtures = [entries[path] for path in fixture_paths]
    if not registry["valid"]:
        findings.append({"severity": "error", "code": "invalid_registry", "finding": (
            f"{registry['path']} is invalid: its regressions are unknown, not zero")})
    if not registry["valid"]:
        verdicts.append(VERDICT_INVALID)
    verdict = worst(verdicts) if verdicts else VERDICT_NO_SEAMS
    if not fixtures:
        findings.append({"severity": "medium", "code": "no_fixture",
                         "finding": "no agentic_eval fixture: no seam is declared or guarded"})
    next_evals = [dict(e, fixture=f["fixture"]) for f in fixtures
                  for e in f.get("prioritized_next_evals", [])]
    next_evals.sort(key=lambda e: (_CRITICALITY_RANK.get(e["criticality"], 0),
                                   -e["missing_classes"]))
    return {
        "skill_dir": display_path(skill_dir),
        "verdict": verdict,
        "fixtures": fixtures,
        "registry": {k: v for k, v in registry.items() if k != "regressions"}
        | {"regressions": [r.regression_id for r in registry["regressions"]]},
        "findings": findings,
        "prioritized_next_evals": next_evals,
    }


def worst(verdicts: Iterable[str]) -> str:
    return max(verdicts, key=VERDICTS.index, default=VERDICT_COVERED)


def exit_status(report: Mapping[str, Any]) -> int:
    """1 when any critical seam lacks a capable guard (or the root holds invalid input), else 0;
    ``coverage show`` maps an invalid fixture to 2 itself."""
    return 1 if report["verdict"] in (VERDICT_CRITICAL_GAP, VERDICT_INVALID) else 0


def show(skill_dir: Path, fixture_paths: Sequence[Path], today: date,
         extra_expectations: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    skill = skill_coverage(skill_dir, fixture_paths, today, extra_expectations)
    return {"schema": SCHEMA, "version": 1, "mode": "show", "root": display_path(skill_dir),
            "verdict": skill["verdict"], "executed": False, "skills": [skill],
            "summary": summary([skill])}


def audit(root: Path, today: date,
          extra_expectations: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:

    jobs = [(s.path, fixture_paths(s)) for s in discover(root)]
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    if len(jobs) < PARALLEL_THRESHOLD or workers < 2:
        found = [skill_coverage(path, paths, today, extra_expectations) for path, paths in jobs]
    else:
        # Loading a fixture (its JSON Schema above all) is CPU-bound and skills are
        # independent, so a big tree is spread over processes; map keeps the sorted order.
        with ProcessPoolExecutor(max_workers=workers) as pool:
            found = list(pool.map(_skill_job, jobs, itertools.repeat(today),
                                  itertools.repeat(extra_expectations),
                                  chunksize=max(1, len(jobs) // (workers * 8))))
    return {"schema": SCHEMA, "version": 1, "mode": "audit", "root": display_path(root),
            "verdict": worst(s["verdict"] for s in found) if found else VERDICT_NO_SEAMS,
            "executed": False, "skills": found, "summary": summary(found)}


def _skill_job(job: tuple[Path, list[Path]], today: date,
               extra_expectations: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any]:
    return skill_coverage(job[0], job[1], today, extra_expectations)


def summary(skills: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    seams = [s for skill in skills for f in skill["fixtures"] for s in f.get("seams", [])]
    return {
        "skills": len(skills),
        "verdicts": {v: sum(1 for s in skills if s["verdict"] == v) for v in VERDICTS},
        "seams": len(seams),
        COVERED: sum(1 for s in seams if s["status"] == COVERED),
        WEAK_ONLY: sum(1 for s in seams if s["status"] == WEAK_ONLY),
        UNCOVERED: sum(1 for s in seams if s["status"] == UNCOVERED),
        "live_covered_seams": sum(1 for s in seams if s["live_coverage"]),
        "deterministic_only_seams": sum(1 for s in seams
                                        if s["deterministic_coverage"] and not s["live_coverage"]),
        "stale_seams": sum(1 for s in seams if s["freshness"]["status"] == "stale"),
    }


def _probe_lines(fixture: Mapping[str, Any]) -> list[str]:
    probes = fixture.get("probes") or {}
    out = []
    if probes.get("judged_by_probe"):
        out.append(f"  oracle judged by a fresh probe ({probes['file']}): "
                   + ", ".join(probes["judged_by_probe"]) + "; the others statically")
    for stale in probes.get("stale", []):
        out.append(f"  stale probe result for {stale['case']} (not used, static judgement "
                   f"instead): {'; '.join(stale['because'])}")
    return out


def lines(report: Mapping[str, Any]) -> list[str]:
    """The readable table: one row per seam, then findings and the next evals."""
    out = [f"{'SKILL':<24} {'SEAM':<24} {'CRIT':<9} {'STATUS':<10} {'LIVE':<5} "
           f"{'FRESH':<16} MISSING"]
    for skill in report["skills"]:
        for fixture in skill["fixtures"]:
            name = os.path.basename(skill["skill_dir"]) or skill["skill_dir"]
            if not fixture["valid"]:
                out.append(f"{name:<24} {'-':<24} {'-':<9} {'INVALID':<10} "
                           f"({len(fixture['problems'])} problem(s) in {fixture['fixture']})")
                continue
            for seam in fixture["seams"]:
                missing = ", ".join(seam["uncovered"] + seam["weak_only"]) or "-"
                out.append(f"{name:<24} {seam['seam_id']:<24} {seam['criticality']:<9} "
                           f"{seam['status']:<10} {'yes' if seam['live_coverage'] else 'no':<5} "
                           f"{seam['freshness']['status']:<16} {missing}")
            out += _probe_lines(fixture)
        for finding in skill["findings"] + [x for f in skill["fixtures"]
                                            for x in f.get("findings", [])]:
            out.append(f"  [{finding['severity']}] {finding['finding']}")
        for entry in skill["prioritized_next_evals"][:5]:
            out.append(f"  next: {entry['seam_id']} ({entry['criticality']}): add a capable "
                       f"{entry['evidence_class']} case ({entry['why']})")
        out.append(f"  verdict {skill['skill_dir']}: {skill['verdict']}")
    total = report["summary"]
    out.append(f"{report['root']}: {report['verdict']} ({total['skills']} skill(s), "
               f"{total['seams']} seam(s): {total[COVERED]} covered, {total[WEAK_ONLY]} "
               f"weak_only, {total[UNCOVERED]} uncovered; nothing was executed)")
    return out
