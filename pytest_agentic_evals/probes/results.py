"""The probe report (``agentic_evals.probe.v1``), its gate, and its summaries for people.

Per case: each stand-in's status and what killed it, the case's mutation score (killed over
applicable stand-ins), and whether its oracle passes the gate: a required case fails the
probe when its oracle survives ``noop`` or ``crash``, or when their trials say nothing.  Per
fixture: the score over its cases and the cases that fail.  A case whose entrypoint no
stand-in can replace is listed as unprobed: it keeps its static judgement.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_agentic_evals.jsonio import display_path
from pytest_agentic_evals.model import Case, Fixture
from pytest_agentic_evals.probes.runner import CaseProbe
from pytest_agentic_evals.probes.targets import (
    GATING,
    INCONCLUSIVE,
    KILLED,
    MUTANT_MEANING,
    MUTANTS,
    SURVIVED,
)

SCHEMA = "agentic_evals.probe.v1"
PASSED = "PASSED"
FAILED = "FAILED"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def describe_checks(case: Case) -> list[str]:
    """The case's checks in a few words each: what an oracle that survived relies on."""
    checks = []
    for key, value in case.expected.items():
        if key == "artifacts" and isinstance(value, list):
            for assertion in value:
                if isinstance(assertion, Mapping):
                    what = ", ".join(f"{k} {_short(v)}" for k, v in assertion.items()
                                     if k not in ("path", "claim"))
                    checks.append(f"artifact {assertion.get('path')}: {what or 'read'}")
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            checks.append(f"{key} " + ", ".join(_short(v) for v in value))
        else:
            checks.append(f"{key} {_short(value)}")
    return checks


def score(probes: Sequence[CaseProbe]) -> tuple[int, int, float | None]:
    """(killed, applicable, killed / applicable); inconclusive stand-ins are not counted."""
    statuses = [r.status for p in probes for r in p.results]
    killed = statuses.count(KILLED)
    applicable = killed + statuses.count(SURVIVED)
    return killed, applicable, (round(killed / applicable, 4) if applicable else None)


def gate_failures(probe: CaseProbe) -> list[str]:
    """Why this case fails the probe (empty: it does not)."""
    if not probe.case.required or probe.target is None:
        return []
    reasons = []
    for mutant in GATING:
        result = probe.result(mutant)
        if result is not None and result.status == SURVIVED:
            reasons.append(f"case {probe.case.name}: oracle survived `{mutant}`: its only checks "
                           f"are {'; '.join(describe_checks(probe.case)) or 'none'}")
        elif result is not None and result.status == INCONCLUSIVE:
            reasons.append(f"case {probe.case.name}: the `{mutant}` stand-in's trial says "
                           f"nothing: {result.reason}")
    return reasons


def case_entry(probe: CaseProbe) -> dict[str, Any]:
    killed, applicable, ratio = score([probe])
    return {
        "name": probe.case.name,
        "type": probe.case.type,
        "required": probe.case.required,
        "test_source_sha256": probe.test_source_sha256,
        "oracle_sha256": probe.oracle_sha256,
        "entrypoint": probe.target.as_json() if probe.target else None,
        "unprobed": probe.unprobed,
        "replayed_case": probe.donor,
        "checks": describe_checks(probe.case),
        "mutants": [r.as_json() for r in probe.results],
        "survived": [r.mutant for r in probe.results if r.status == SURVIVED],
        "killed": killed,
        "applicable": applicable,
        "mutation_score": ratio,
        "gate_failures": gate_failures(probe),
    }


def fixture_entry(fixture: Fixture, probes: Sequence[CaseProbe],
                  stored_at: str | None) -> dict[str, Any]:
    cases = [case_entry(p) for p in probes]
    killed, applicable, ratio = score(probes)
    failures = [reason for case in cases for reason in case["gate_failures"]]
    return {
        "fixture": display_path(fixture.path),
        "skill": fixture.skill,
        "fixture_sha256": "sha256:" + fixture.sha256,
        "verdict": FAILED if failures else PASSED,
        "killed": killed,
        "applicable": applicable,
        "mutation_score": ratio,
        "unprobed_cases": [p.case.name for p in probes if p.target is None],
        "gate_failures": failures,
        "stored_at": stored_at,
        "cases": cases,
    }


def store_records(probes: Sequence[CaseProbe]) -> dict[str, dict[str, Any]]:
    """What is kept beside the fixture for each probed case (see ``store``)."""
    return {
        p.case.name: {
            "test_source_sha256": p.test_source_sha256,
            "oracle_sha256": p.oracle_sha256,
            "entrypoint_sha256": p.target.sha256,
            "entrypoint": p.target.description,
            "mutants": {r.mutant: r.status for r in p.results},
            "killed_by": {r.mutant: r.killed_by[0] for r in p.results if r.killed_by},
        }
        for p in probes if p.target is not None
    }


def report(fixtures: Sequence[Mapping[str, Any]], run_id: str, timestamp: str,
           sandbox: str) -> dict[str, Any]:
    killed = sum(f["killed"] for f in fixtures)
    applicable = sum(f["applicable"] for f in fixtures)
    failed = any(f["verdict"] == FAILED for f in fixtures)
    return {
        "schema": SCHEMA,
        "version": 1,
        "run_id": run_id,
        "timestamp": timestamp,
        "sandbox": sandbox,
        "verdict": FAILED if failed else PASSED,
        "mutants": dict(MUTANT_MEANING),
        "gating_mutants": list(GATING),
        "fixtures": list(fixtures),
        "summary": {
            "fixtures": len(fixtures),
            "cases": sum(len(f["cases"]) for f in fixtures),
            "unprobed_cases": sum(len(f["unprobed_cases"]) for f in fixtures),
            "killed": killed,
            "applicable": applicable,
            "mutation_score": round(killed / applicable, 4) if applicable else None,
            "gate_failures": sum(len(f["gate_failures"]) for f in fixtures),
        },
    }


def _percent(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.0%}"


_MARK = {"killed": "k", "survived": "S", "not_applicable": "-", "inconclusive": "?"}


def terminal_lines(document: Mapping[str, Any]) -> list[str]:
    """One line per fixture, one per case (a letter per stand-in), then every survivor."""
    out = []
    legend = " ".join(MUTANTS)
    for fixture in document["fixtures"]:
        out.append(f"{fixture['fixture']}: {fixture['verdict']}, mutation score "
                   f"{_percent(fixture['mutation_score'])} ({fixture['killed']}/"
                   f"{fixture['applicable']} stand-ins killed)")
        width = max([len("CASE"), *(len(c["name"]) for c in fixture["cases"])])
        out.append(f"  {'CASE':<{width}} {legend}  (k killed, S survived, - not applicable, "
                   "? inconclusive)")
        for case in fixture["cases"]:
            if case["unprobed"]:
                out.append(f"  {case['name']:<{width}} unprobed: {case['unprobed']}")
                continue
            marks = " ".join(_MARK[m["status"]].center(len(m["mutant"]))
                             for m in case["mutants"])
            out.append(f"  {case['name']:<{width}} {marks}  {_percent(case['mutation_score'])}")
        for case in fixture["cases"]:
            for mutant in case["mutants"]:
                if mutant["status"] == SURVIVED and not any(
                        mutant["mutant"] in r for r in case["gate_failures"]):
                    out.append(f"  case {case['name']}: oracle survived `{mutant['mutant']}`: "
                               f"its only checks are {'; '.join(case['checks']) or 'none'}")
        out += [f"  {reason}" for reason in fixture["gate_failures"]]
    summary = document["summary"]
    out.append(f"probe: {document['verdict']}: mutation score "
               f"{_percent(summary['mutation_score'])} over {summary['cases']} case(s) of "
               f"{summary['fixtures']} fixture(s); {summary['gate_failures']} required "
               "oracle(s) survived noop or crash")
    return out


def markdown(document: Mapping[str, Any]) -> str:
    lines = [f"## Vacuity probe: {document['verdict']}", ""]
    for fixture in document["fixtures"]:
        lines += [f"### {fixture['fixture']}: mutation score "
                  f"{_percent(fixture['mutation_score'])}", "",
                  "| case | " + " | ".join(f"`{m}`" for m in MUTANTS) + " | score |",
                  "|---|" + "---|" * (len(MUTANTS) + 1)]
        for case in fixture["cases"]:
            if case["unprobed"]:
                lines.append(f"| {case['name']} | " + " | ".join("" for _ in MUTANTS)
                             + f" | unprobed: {case['unprobed']} |")
                continue
            cells = [m["status"].replace("_", " ") for m in case["mutants"]]
            lines.append(f"| {case['name']} | " + " | ".join(cells)
                         + f" | {_percent(case['mutation_score'])} |")
        survivors = [f"- case {c['name']}: oracle survived `{m['mutant']}`: its only checks "
                     f"are {'; '.join(c['checks']) or 'none'}"
                     for c in fixture["cases"] for m in c["mutants"] if m["status"] == SURVIVED]
        if survivors:
            lines += ["", *survivors]
        lines.append("")
    return "\n".join(lines)
