"""Summaries a person reads at a glance, rendered from report dicts (terminal and Markdown).

Pure functions over a report, so that the plugin, the ``report`` command and CI all say the
same thing. Capability failures are kept apart from infrastructure problems (a program that
is not installed, a crashed worker, an unmet precondition): they call for different people.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pytest_agentic_evals.model import BLOCKED, EXEMPT_KINDS, FAIL, NOT_TESTED, PASS, PROVEN, READY
from pytest_agentic_evals.probes.targets import KILLED, SURVIVED
from pytest_agentic_evals.redaction import escape_controls
from pytest_agentic_evals.usage import FIGURE_TITLES, usage_cell


@dataclass(frozen=True)
class Line:
    text: str
    colour: str | None = None  # "green", "red", "yellow", or None for the default


def fixture_reports(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The fixture reports inside a fixture report or a session report."""
    return list(report["fixtures"]) if "fixtures" in report else [report]


def is_infrastructure(case: dict[str, Any]) -> bool:
    return case["outcome"] == BLOCKED or bool(case.get("infrastructure_failure"))


def claims_tally(report: dict[str, Any]) -> tuple[int, int]:
    claims = report.get("capability_readiness") or {}
    proven = sum(entry.get("verdict") == PROVEN for entry in claims.values())
    return proven, len(claims)


def readiness_label(report: dict[str, Any]) -> str:
    """The readiness as a person should read it: a scaffold's READY (or a runner test's) is
    not a skill's."""
    if report.get("eval_kind") in EXEMPT_KINDS:
        return f"{report['readiness']} ({report['eval_kind']})"
    return str(report["readiness"])


def headline(report: dict[str, Any]) -> str:
    summary = report["summary"]
    parts = [f"{summary['passed']}/{summary['total']} cases passed",
             f"{summary['failed']} failed", f"{summary['blocked']} blocked"]
    if summary.get("infra_blocked"):
        parts[-1] += f" ({summary['infra_blocked']} by an external blocker)"
    if summary.get("flaky"):
        parts.append(f"{summary['flaky']} flaky")
    proven, claims = claims_tally(report)
    if claims:
        parts.append(f"claims {proven}/{claims} PROVEN")
    if report["selection"] == "partial":
        parts.append("partial run")
    return f"{report['fixture']} (skill {report['skill']}): " + ", ".join(parts)


def _trials_note(case: dict[str, Any]) -> str:
    figures = case.get("reliability") or {}
    if not figures.get("ran"):
        return ""
    note = f"{figures['passed']}/{figures['ran']} trials passed"
    if figures.get("infra_blocked"):
        note += f", {figures['infra_blocked']} infra-blocked"
    return note + (", flaky" if figures.get("flaky") else "")


def _first_problem(case: dict[str, Any]) -> str:
    """The first line of the first problem (a diff goes on for lines)."""
    return case["problems"][0].split("\n", 1)[0] if case["problems"] else "no detail"


def usage_lines(report: dict[str, Any]) -> list[str]:
    """Per case with figures: each figure's mean / p95 over its trials."""
    lines = []
    for case in report["cases"]:
        figures = case.get("usage")
        if not figures:
            continue
        ran = (case.get("reliability") or {}).get("ran") or len(case.get("trials", ()))
        parts = [f"{title} {usage_cell(name, figures, ran)}"
                 for name, title in FIGURE_TITLES.items() if name in figures]
        lines.append(f"{case['name']}: " + ", ".join(parts))
    return lines


def claim_problems(report: dict[str, Any]) -> Iterator[str]:
    for claim_id, entry in (report.get("capability_readiness") or {}).items():
        if entry.get("verdict") != PROVEN:
            why = "; ".join(entry.get("reasons") or ()) or "not proven"
            yield f"claim {claim_id} ({entry.get('criticality', '?')}): {entry['verdict']}: {why}"


SILENT_CONTROLS = "controls that said nothing (these verdicts are not shown to depend on the skill)"


def silent_controls(fixture: dict[str, Any]) -> list[str]:
    """One line per passing case whose control could not tell whether its verdict depends on
    the skill (the stand-in's trial said nothing, or there was nothing to swap): such a case
    counts on the load-time reading of its command alone, which a person should know."""
    lines = []
    for case in fixture["cases"]:
        control = case.get("control")
        if case["outcome"] == PASS and control and control["status"] not in (KILLED, SURVIVED):
            stand_in = f" ({control['stand_in']})" if control.get("stand_in") else ""
            reason = control.get("reason") or "no reason given"
            lines.append(f"{case['name']}: {control['status']}{stand_in}: {reason}")
    return lines


def unsandboxed(report: dict[str, Any]) -> list[str]:
    """One sentence per reason trials ran without the sandbox, or could not run for it."""
    reasons: dict[str, int] = {}
    total = 0
    for fixture in fixture_reports(report):
        for case in fixture["cases"]:
            for trial in case.get("trials", ()):
                total += 1
                isolation = trial.get("isolation") or {}
                if isolation.get("sandbox") == "none":
                    reason = isolation.get("reason") or "no reason given"
                    reasons[reason] = reasons.get(reason, 0) + 1
    return [f"sandbox: {count} of {total} trial(s) not sandboxed: {reason}"
            for reason, count in reasons.items()]


def terminal_lines(report: dict[str, Any]) -> list[Line]:
    lines: list[Line] = []
    for fixture in fixture_reports(report):
        colour = "green" if fixture["readiness"] == READY else "red"
        lines.append(Line(f"{readiness_label(fixture):<16} {headline(fixture)}", colour))
        failing = [c for c in fixture["cases"] if c["outcome"] in (FAIL, BLOCKED)]
        capability = [c for c in failing if not is_infrastructure(c)]
        infrastructure = [c for c in failing if is_infrastructure(c)]
        for title, cases in (("capability failures", capability),
                             ("infrastructure problems", infrastructure)):
            if not cases:
                continue
            lines.append(Line(f"  {title}:"))
            for case in cases:
                note = _trials_note(case)
                label = f"{case['name']} ({note})" if note else case["name"]
                lines.append(Line(f"    {case['outcome']:<8} {label}: {_first_problem(case)}",
                                  "red" if case["outcome"] == FAIL else "yellow"))
        for text in claim_problems(fixture):
            lines.append(Line(f"  {text}", "red"))
        silent = silent_controls(fixture)
        if silent:
            lines.append(Line(f"  {SILENT_CONTROLS}:", "yellow"))
            lines += [Line(f"    {text}", "yellow") for text in silent]
        usage = usage_lines(fixture)
        if usage:
            lines.append(Line("  agent runs (mean / p95 over trials):"))
            lines += [Line(f"    {text}") for text in usage]
    lines += [Line(text, "yellow") for text in unsandboxed(report)]
    return lines


# What Markdown would read as markup inside a table cell: the cell's end, code spans,
# emphasis, and the backslash that escapes them.
_MARKUP = re.compile(r"([\\|`*])")


def _cell(value: object) -> str:
    """A value as the text of a Markdown table cell: markup characters escaped, one line."""
    text = escape_controls(str(value).replace("\r", " ").replace("\n", " "))
    return _MARKUP.sub(r"\\\1", text)


def _bold(value: object) -> str:
    return f"**{_cell(value)}**"


def markdown(report: dict[str, Any]) -> str:
    """A Markdown summary: fixtures, then each fixture's cases and claims."""
    fixtures = fixture_reports(report)
    overall = readiness_label(report) if "fixtures" not in report else report["readiness"]
    out = [f"## agentic-evals: {_cell(overall)}", "",
           "| readiness | fixture | skill | passed | failed | blocked | flaky | claims PROVEN |",
           "|---|---|---|---|---|---|---|---|"]
    for fixture in fixtures:
        summary = fixture["summary"]
        proven, claims = claims_tally(fixture)
        out.append("| " + " | ".join([_bold(readiness_label(fixture)), *(_cell(v) for v in (
            fixture["fixture"], fixture["skill"],
            f"{summary['passed']}/{summary['total']}", summary["failed"],
            _blocked_cell(summary),
            summary.get("flaky", 0), f"{proven}/{claims}" if claims else "-",
        ))]) + " |")
    notes = unsandboxed(report)
    if notes:
        out += ["", *(_cell(note).capitalize() + "  " for note in notes)]
    for fixture in fixtures:
        out += ["", f"### {_cell(fixture['fixture'])}: {_cell(readiness_label(fixture))}", ""]
        notes = [note for note in fixture.get("readiness_notes", ()) if note.startswith(
            ("partial run", "the run was interrupted"))]
        if notes:
            out += [_cell("; ".join(notes)).capitalize() + ": it cannot be READY.", ""]
        out += ["| case | outcome | trials passed | pass rate (95% CI) | pass^n | kind | problem |",
                "|---|---|---|---|---|---|---|"]
        for case in fixture["cases"]:
            figures = case.get("reliability") or {}
            ran = figures.get("ran") or 0
            rate_text = "-"
            if ran:
                low, high = figures["wilson_95"]
                rate_text = f"{figures['pass_rate']:.0%} ({low:.0%}-{high:.0%})"
            pass_n = f"{figures['pass_hat_k'][str(ran)]:.2f}" if ran else "-"
            kind = "" if case["outcome"] in (PASS, NOT_TESTED) else (
                "external blocker" if case.get("infra_blocked_trials") and case["outcome"]
                == BLOCKED else "infrastructure" if is_infrastructure(case) else "capability")
            problem = _first_problem(case) if case["outcome"] in (FAIL, BLOCKED) else ""
            out.append("| " + " | ".join(_cell(v) for v in (
                case["name"], case["outcome"], f"{figures.get('passed', 0)}/{ran}",
                rate_text, pass_n, kind, problem,
            )) + " |")
        silent = silent_controls(fixture)
        if silent:
            out += ["", _cell(SILENT_CONTROLS).capitalize() + ":", "",
                    *(f"- {_cell(text)}" for text in silent)]
        out += _usage_table(fixture)
        verdicts = fixture.get("capability_readiness") or {}
        if verdicts:
            out += ["", "| claim | criticality | verdict | why |", "|---|---|---|---|"]
            for claim_id, entry in verdicts.items():
                why = "; ".join(entry.get("reasons") or ())
                out.append("| " + " | ".join(_cell(v) for v in (
                    claim_id, entry.get("criticality", ""), entry["verdict"], why)) + " |")
    return "\n".join(out) + "\n"


def _blocked_cell(summary: dict[str, Any]) -> str:
    infra = summary.get("infra_blocked")
    return f"{summary['blocked']} ({infra} external)" if infra else str(summary["blocked"])


def _usage_table(fixture: dict[str, Any]) -> list[str]:
    """The agent runs' figures per case: mean / p95 over the trials that state each one."""
    cases = [case for case in fixture["cases"] if case.get("usage")]
    if not cases:
        return []
    out = ["", "Agent runs, mean / p95 over trials:", "",
           "| case | " + " | ".join(FIGURE_TITLES.values()) + " |",
           "|---|" + "---|" * len(FIGURE_TITLES)]
    for case in cases:
        ran = (case.get("reliability") or {}).get("ran") or len(case.get("trials", ()))
        cells = [usage_cell(name, case["usage"], ran) for name in FIGURE_TITLES]
        out.append("| " + " | ".join(_cell(v) for v in (case["name"], *cells)) + " |")
    return out
