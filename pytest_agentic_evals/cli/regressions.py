"""``regressions audit|show|verify``: retained regressions, audited statically or proven again."""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path
from typing import Any

from pytest_agentic_evals.cli.common import (
    EXIT_GATE,
    EXIT_INPUT,
    EXIT_OK,
    TABLE_OR_JSON,
    add_format_option,
    add_output_option,
    emit,
    positive_int,
    seconds,
)
from pytest_agentic_evals.cli.plugins import plugin_kinds
from pytest_agentic_evals.execution.environment import DEFAULT_TIMEOUT_SECONDS, RunSettings
from pytest_agentic_evals.execution.rundirs import RunDir
from pytest_agentic_evals.expectations.builtin import extra_schemas
from pytest_agentic_evals.regressions import audit as audits
from pytest_agentic_evals.regressions import registry as regressions
from pytest_agentic_evals.regressions import verify as proofs


def add_parser(commands: Any, name: str, help: str) -> None:
    parser = commands.add_parser(name, help=help)
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, operand, description in (
        ("audit", "ROOT", "every regressions.json under ROOT: unprotected, never proven, stale, "
                          "retired, unmapped incidents (runs nothing)"),
        ("show", "SKILL_DIR", "the same for one skill's fixtures/regressions.json"),
    ):
        sub = actions.add_parser(action, help=description)
        sub.add_argument("path", metavar=operand)
        sub.add_argument("--freshness-days", type=positive_int, default=None, metavar="N",
                         help="a proof older than N days is stale (default: the registry's "
                              f"freshness_days, else {regressions.DEFAULT_FRESHNESS_DAYS})")
        sub.add_argument("--strict", action="store_true",
                         help="exit 1 on warnings too (never proven, stale, unmapped incident)")
        sub.set_defaults(handler=audit)
    verify_parser = actions.add_parser(
        "verify", help="run every active proof (it must fail as declared), then every "
                       "retained case (it must pass)")
    verify_parser.add_argument("path", metavar="SKILL_DIR")
    verify_parser.add_argument("--regression", action="append", default=[], metavar="ID",
                               help="verify only this regression (repeatable)")
    verify_parser.add_argument("--record", action="store_true",
                               help="write last_proven (today) of verified regressions into "
                                    "the registry, atomically")
    verify_parser.add_argument("--timeout", "--timeout-seconds", type=seconds, default=None,
                               metavar="SECONDS",
                               help="timeout of a proof without timeout_seconds (default 30 s)")
    verify_parser.add_argument("--report-only", action="store_true",
                               help="report without gating: exit 0 even when a regression is "
                                    "not verified (bad input still exits 2)")
    verify_parser.set_defaults(handler=verify)
    for sub in actions.choices.values():
        add_output_option(sub)
        add_format_option(sub, TABLE_OR_JSON, default="table")


def audit(args: argparse.Namespace) -> int:
    """``regressions audit ROOT`` and ``regressions show SKILL_DIR``: static, runs nothing."""
    target = Path(args.path)
    if args.action == "audit":
        if not target.is_dir():
            print(f"{args.path}: not a directory", file=sys.stderr)
            return EXIT_INPUT
        paths = regressions.find_registries(target)
    else:
        if not target.exists():
            print(f"{args.path}: no such file or directory", file=sys.stderr)
            return EXIT_INPUT
        found = regressions.find_registry(target)
        paths = [found] if found else []
    report = audits.audit(
        paths, root=args.path, freshness_days=args.freshness_days, strict=args.strict,
        extra_expectations=extra_schemas(plugin_kinds()),
    )
    lines = audits.audit_lines(report)
    if not paths:
        lines.insert(0, f"no {regressions.REGISTRY_FILENAME} under {args.path}")
    emit(report, args, lines)
    invalid = [entry for entry in report["registries"] if not entry["valid"]]
    for entry in invalid:
        print(f"regressions registry rejected ({len(entry['problems'])} problem(s)):",
              file=sys.stderr)
        for problem in entry["problems"]:
            print(f"  - {problem}", file=sys.stderr)
    if invalid:
        return EXIT_INPUT
    return EXIT_OK if report["gate"]["passed"] else EXIT_GATE


def verify(args: argparse.Namespace) -> int:
    """``regressions verify SKILL_DIR``: every active proof must fail as declared, then every
    retained case must pass on the current code."""
    path = regressions.find_registry(args.path)
    if path is None:
        print(f"{args.path}: no regression registry (looked for fixtures/"
              f"{regressions.REGISTRY_FILENAME} and {regressions.REGISTRY_FILENAME})",
              file=sys.stderr)
        return EXIT_INPUT
    try:
        registry = regressions.load_registry(path)
    except regressions.RegistryError as exc:
        print(exc.describe(), file=sys.stderr)
        return EXIT_INPUT
    selected = _selected(registry, args.regression)
    if selected is None:
        return EXIT_INPUT
    run_id = uuid.uuid4().hex[:12]
    results = _verify_all(registry, selected, run_id, args.timeout)
    recorded: list[str] = []
    if args.record:
        recorded = [r["regression_id"] for r in results if r["verdict"] == proofs.VERIFIED]
        if recorded:
            try:
                regressions.record_last_proven(path, recorded, regressions.today_utc())
            except regressions.RegistryError as exc:
                print(f"last_proven not recorded: {exc.describe()}", file=sys.stderr)
                return EXIT_INPUT
    report = proofs.verification_report(registry, results, run_id, recorded)
    summary = report["summary"]
    lines = proofs.verification_lines(results)
    lines.append(f"{registry.shown}: {summary['verified']}/{summary['active']} active "
                 f"regression(s) verified, {summary['skipped']} exempt or retired")
    if recorded:
        lines.append(f"recorded last_proven {regressions.today_utc().isoformat()} for: "
                     + ", ".join(recorded))
    emit(report, args, lines)
    if any(result["input_error"] for result in results):
        return EXIT_INPUT
    return EXIT_OK if report["verified"] or args.report_only else EXIT_GATE


def _selected(
    registry: regressions.Registry, wanted: list[str]
) -> list[regressions.Regression] | None:
    """The active regressions to verify (all, or those ``--regression`` names); None after
    printing why when a name is unknown."""
    selected = list(registry.active)
    if not wanted:
        return selected
    known = {r.regression_id for r in registry.regressions}
    unknown = [rid for rid in wanted if rid not in known]
    if unknown:
        print(f"unknown regression(s): {', '.join(unknown)} (in {registry.shown}: "
              f"{', '.join(sorted(known)) or 'none'})", file=sys.stderr)
        return None
    for rid in wanted:
        if registry.regression(rid).status != regressions.ACTIVE:
            print(f"{rid} is {registry.regression(rid).status}: not verified", file=sys.stderr)
    return [r for r in selected if r.regression_id in wanted]


def _verify_all(
    registry: regressions.Registry, selected: list[regressions.Regression], run_id: str,
    timeout: float | None,
) -> list[dict[str, Any]]:
    kinds = plugin_kinds()
    run = RunDir(run_id)
    run_dir = run.open()
    results = []
    try:
        settings = RunSettings(run_id=run_id, run_dir=run_dir,
                               default_timeout=timeout or DEFAULT_TIMEOUT_SECONDS)
        for regression in selected:
            print(f"verifying {regression.regression_id} ...", file=sys.stderr)
            results.append(proofs.verify_regression(
                registry, regression, settings, kinds, extra_expectations=extra_schemas(kinds),
            ))
    finally:
        run.close()
    return results
