"""The ``agentic-evals`` command: a thin layer over the core and over pytest with the plugin.

Exit codes, for every command: 0 success, 1 the gate says no, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from pytest_agentic_evals import journeys, skills
from pytest_agentic_evals.evidence import coverage
from pytest_agentic_evals.execution.environment import DEFAULT_TIMEOUT_SECONDS, RunSettings
from pytest_agentic_evals.execution.rundirs import new_run_dir
from pytest_agentic_evals.expectations.builtin import ExpectationKind, builtin_kinds
from pytest_agentic_evals.jsonio import (
    flat_on_one_line,
    json_text,
    write_json_atomically,
    write_text_atomically,
)
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.model import Fixture
from pytest_agentic_evals.problems import InputError
from pytest_agentic_evals.regressions import registry as regressions
from pytest_agentic_evals.report import report_problems
from pytest_agentic_evals.schemas import schema_text
from pytest_agentic_evals.summary import markdown, terminal_lines

EXIT_OK, EXIT_GATE, EXIT_INPUT = 0, 1, 2
EXIT_INTERRUPTED = 130
SCHEMAS = ("fixture", "report", "session-report", "regressions", "requirements",
           "discovery-inventory", "state-graph", "journey-plan")


def installed_plugin_kinds() -> dict[str, dict[str, Any]]:
    """Schemas of expectation kinds that installed pytest plugins add.

    Kinds defined in a ``conftest.py`` are only known to a pytest session; the CLI knows the
    built-in kinds and those of installed plugins (``pytest11`` entry points).
    """
    return {key: dict(kind.schema or {}) for key, kind in installed_kinds().items()}


def installed_kinds() -> dict[str, ExpectationKind]:
    """Expectation kinds that installed pytest plugins add (not the built-in ones)."""
    kinds: dict[str, ExpectationKind] = {}
    for entry in metadata.entry_points(group="pytest11"):
        if entry.value.startswith("pytest_agentic_evals"):
            continue
        try:
            module = entry.load()
        except Exception:  # a broken third-party plugin must not break validation
            continue
        hook = getattr(module, "pytest_agentic_evals_expectation_kinds", None)
        if callable(hook):
            kind: ExpectationKind
            for kind in hook() or ():
                kinds[kind.key] = kind
    return kinds


def load_all(paths: Sequence[str]) -> tuple[list[Fixture], list[str]]:
    extra = installed_plugin_kinds()
    fixtures, errors = [], []
    for path in paths:
        try:
            fixtures.append(load_fixture(path, extra))
        except FixtureError as exc:
            errors.append(exc.describe())
    return fixtures, errors


def cmd_validate(args: argparse.Namespace) -> int:
    fixtures, errors = load_all(args.fixtures)
    for fixture in fixtures:
        print(f"VALID: {_shown(fixture)} ({len(fixture.cases)} cases, trials={fixture.trials})")
    for error in errors:
        print(error, file=sys.stderr)
    return EXIT_INPUT if errors else EXIT_OK


def _shown(fixture: Fixture) -> str:
    try:
        return str(fixture.path.relative_to(Path.cwd()))
    except ValueError:
        return str(fixture.path)


def cmd_schema(args: argparse.Namespace) -> int:
    print(schema_text(args.name.replace("-", "_")), end="")
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    fixtures, errors = load_all(args.fixtures)
    if errors:
        for error in errors:
            print(error, file=sys.stderr)
        return EXIT_INPUT
    known = {case.name for fixture in fixtures for case in fixture.cases}
    unknown = [name for name in args.case if name not in known]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)} (cases: {', '.join(sorted(known))})",
              file=sys.stderr)
        return EXIT_INPUT

    with tempfile.TemporaryDirectory(prefix="agentic-evals-run-") as scratch:
        # A fresh scratch file, so that a report left by an earlier run is never mistaken
        # for this run's; it is copied to --output below.
        report_path = Path(scratch) / "report.json"
        command = [sys.executable, "-m", "pytest", *args.fixtures, "--agentic-evals",
                   "--agentic-evals-report", str(report_path),
                   "--agentic-evals-report-unannounced"]
        command += [option for name in args.case for option in ("--agentic-evals-case", name)]
        if args.report_only:
            command.append("--agentic-evals-report-only")
        if "-m" not in args.pytest_args:
            # run runs trials, as it always has; retained regressions are verified by
            # `regressions verify` or by `-- -m regression`.
            command += ["-m", "not regression"]
        command += args.pytest_args
        # pytest's progress goes to stderr: stdout carries only the JSON report.
        process = subprocess.Popen(command, stdout=sys.stderr.fileno(), stdin=subprocess.DEVNULL)
        try:
            status = process.wait()
        except KeyboardInterrupt:
            # pytest got the same Ctrl-C; let it tear its trials down and write its report.
            status = process.wait()
            status = EXIT_INTERRUPTED if status in (0, 1, 2) else status
        report = _read_report(report_path)

    if report is None:
        print(f"agentic-evals: no report was produced (pytest exited {status})", file=sys.stderr)
        return EXIT_INTERRUPTED if status in (2, EXIT_INTERRUPTED) else EXIT_INPUT
    print(json_text(report), end="")
    if args.output:
        write_json_atomically(args.output, report)
        print(f"report: {args.output}", file=sys.stderr)
    if status == EXIT_INTERRUPTED or _interrupted(report):
        return EXIT_INTERRUPTED
    if status == 4:  # pytest usage error: bad pass-through arguments or settings
        return EXIT_INPUT
    if args.report_only:
        return EXIT_OK
    return EXIT_OK if status == 0 else EXIT_GATE


def cmd_report(args: argparse.Namespace) -> int:
    try:
        report = json.loads(Path(args.report).read_text(encoding="utf-8"))
    except OSError as exc:
        print(f"{args.report}: cannot read report: {exc.strerror}", file=sys.stderr)
        return EXIT_INPUT
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        print(f"{args.report}: not a JSON report: {exc}", file=sys.stderr)
        return EXIT_INPUT
    problems = report_problems(report)
    if problems:
        for problem in problems:
            print(f"{args.report}: {problem}", file=sys.stderr)
        return EXIT_INPUT
    if args.format == "md":
        print(markdown(report), end="")
    else:
        for line in terminal_lines(report):
            print(line.text)
    return EXIT_OK


def _read_report(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _interrupted(report: dict[str, Any]) -> bool:
    fixtures = report.get("fixtures", [report])
    return any(fixture.get("interrupted") for fixture in fixtures)


def _emit(report: dict[str, Any], args: argparse.Namespace, lines: list[str]) -> None:
    """A table for a person on stdout (or the JSON with --json), the JSON at --output."""
    if args.json:
        print(json_text(report), end="")
    else:
        for line in lines:
            print(line)
    if args.output:
        write_json_atomically(args.output, report)
        print(f"report: {args.output}", file=sys.stderr)


def cmd_regressions_audit(args: argparse.Namespace) -> int:
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
    report = regressions.audit(
        paths, root=args.path, freshness_days=args.freshness_days, strict=args.strict,
        extra_expectations=installed_plugin_kinds(),
    )
    lines = regressions.audit_lines(report)
    if not paths:
        lines.insert(0, f"no {regressions.REGISTRY_FILENAME} under {args.path}")
    _emit(report, args, lines)
    invalid = [entry for entry in report["registries"] if not entry["valid"]]
    for entry in invalid:
        print(f"regressions registry rejected ({len(entry['problems'])} problem(s)):",
              file=sys.stderr)
        for problem in entry["problems"]:
            print(f"  - {problem}", file=sys.stderr)
    if invalid:
        return EXIT_INPUT
    return EXIT_OK if report["gate"]["passed"] else EXIT_GATE


def cmd_regressions_verify(args: argparse.Namespace) -> int:
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
    selected = list(registry.active)
    if args.regression:
        known = {r.regression_id for r in registry.regressions}
        unknown = [rid for rid in args.regression if rid not in known]
        if unknown:
            print(f"unknown regression(s): {', '.join(unknown)} (in {registry.shown}: "
                  f"{', '.join(sorted(known)) or 'none'})", file=sys.stderr)
            return EXIT_INPUT
        for rid in args.regression:
            if registry.regression(rid).status != regressions.ACTIVE:
                print(f"{rid} is {registry.regression(rid).status}: not verified",
                      file=sys.stderr)
        selected = [r for r in selected if r.regression_id in args.regression]

    run_id = uuid.uuid4().hex[:12]
    run_dir, in_use = new_run_dir(run_id)
    kinds = {**builtin_kinds(), **installed_kinds()}
    results = []
    try:
        settings = RunSettings(run_id=run_id, run_dir=run_dir,
                               default_timeout=args.timeout or DEFAULT_TIMEOUT_SECONDS)
        for regression in selected:
            print(f"verifying {regression.regression_id} ...", file=sys.stderr)
            results.append(regressions.verify_regression(
                registry, regression, settings, kinds,
                extra_expectations=installed_plugin_kinds(),
            ))
    finally:
        in_use.close()
    recorded: list[str] = []
    if args.record:
        recorded = [r["regression_id"] for r in results if r["verdict"] == regressions.VERIFIED]
        if recorded:
            try:
                regressions.record_last_proven(path, recorded, regressions.today_utc())
            except regressions.RegistryError as exc:
                print(f"last_proven not recorded: {exc.describe()}", file=sys.stderr)
                return EXIT_INPUT
    report = regressions.verification_report(registry, results, run_id, recorded)
    summary = report["summary"]
    lines = regressions.verification_lines(results)
    lines.append(f"{registry.shown}: {summary['verified']}/{summary['active']} active "
                 f"regression(s) verified, {summary['skipped']} exempt or retired")
    if recorded:
        lines.append(f"recorded last_proven {regressions.today_utc().isoformat()} for: "
                     + ", ".join(recorded))
    _emit(report, args, lines)
    if any(result["input_error"] for result in results):
        return EXIT_INPUT
    return EXIT_OK if report["verified"] else EXIT_GATE


def _positive_int(text: str) -> int:
    """An argparse type for counts and day windows: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


def _add_regressions(commands: Any) -> None:
    parser = commands.add_parser(
        "regressions", help="retained regressions: audit, show, verify fail-before-fix"
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, operand, description in (
        ("audit", "ROOT", "every regressions.json under ROOT: unprotected, never proven, stale, "
                          "retired, unmapped incidents (runs nothing)"),
        ("show", "SKILL_DIR", "the same for one skill's fixtures/regressions.json"),
    ):
        sub = actions.add_parser(action, help=description)
        sub.add_argument("path", metavar=operand)
        sub.add_argument("--freshness-days", type=_positive_int, default=None, metavar="N",
                         help="a proof older than N days is stale (default: the registry's "
                              f"freshness_days, else {regressions.DEFAULT_FRESHNESS_DAYS})")
        sub.add_argument("--strict", action="store_true",
                         help="exit 1 on warnings too (never proven, stale, unmapped incident)")
        sub.set_defaults(handler=cmd_regressions_audit)
    verify = actions.add_parser(
        "verify", help="run every active proof (it must fail as declared), then every "
                       "retained case (it must pass)")
    verify.add_argument("path", metavar="SKILL_DIR")
    verify.add_argument("--regression", action="append", default=[], metavar="ID",
                        help="verify only this regression (repeatable)")
    verify.add_argument("--record", action="store_true",
                        help="write last_proven (today) of verified regressions into the "
                             "registry, atomically")
    verify.add_argument("--timeout", type=_seconds, default=None, metavar="SECONDS",
                        help="timeout of a proof without timeout_seconds (default 30 s)")
    verify.set_defaults(handler=cmd_regressions_verify)
    for sub in (*actions.choices.values(),):
        sub.add_argument("--output", metavar="PATH", help="write the JSON report here")
        sub.add_argument("--json", action="store_true",
                         help="print the JSON report instead of the table")


def cmd_coverage(args: argparse.Namespace) -> int:
    """``coverage show SKILL_DIR`` and ``coverage audit ROOT``: static, executes nothing."""

    target = Path(args.path)
    if not target.is_dir():
        print(f"{args.path}: not a directory", file=sys.stderr)
        return EXIT_INPUT
    today = regressions.today_utc()
    if args.action == "audit":
        report = coverage.audit(target, today, installed_plugin_kinds())
    else:
        found = skills.FoundSkill(target, frozenset(p.name for p in target.iterdir()
                                                    if not p.is_dir()),
                                  frozenset(p.name for p in target.iterdir() if p.is_dir()))
        paths = skills.fixture_paths(found)
        if not paths:
            print(f"{args.path}: no agentic_eval*.json fixture (looked in fixtures/ and the "
                  "folder itself)", file=sys.stderr)
            return EXIT_INPUT
        report = coverage.show(target, paths, today, installed_plugin_kinds())
    _emit(report, args, coverage.lines(report))
    if args.action == "show":
        # A fixture that does not load is bad input to `show`; `audit` reports it per skill.
        broken = [f for s in report["skills"] for f in s["fixtures"] if not f["valid"]]
        for fixture in broken:
            print(f"fixture rejected: {fixture['fixture']}", file=sys.stderr)
            for problem in fixture["problems"]:
                print(f"  - {problem}", file=sys.stderr)
        if broken or report["verdict"] == coverage.VERDICT_INVALID:
            return EXIT_INPUT
    return coverage.exit_status(report)


def _add_coverage(commands: Any) -> None:
    parser = commands.add_parser(
        "coverage", help="risk-based coverage of declared seams (executes nothing)")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, operand, description in (
        ("show", "SKILL_DIR", "per seam of one skill: covered, weak_only or uncovered, per "
                              "required evidence class, regressions mapped, next evals"),
        ("audit", "ROOT", "the same for every skill under ROOT, with a verdict for the root"),
    ):
        sub = actions.add_parser(action, help=description)
        sub.add_argument("path", metavar=operand)
        sub.add_argument("--output", metavar="PATH", help="write the JSON report here")
        sub.add_argument("--json", action="store_true",
                         help="print the JSON report instead of the table")
        sub.set_defaults(handler=cmd_coverage)


def cmd_audit_skills(args: argparse.Namespace) -> int:
    """``audit-skills ROOT``: the eval posture of every skill; runs nothing, gates nothing."""
    if not Path(args.root).is_dir():
        print(f"{args.root}: not a directory", file=sys.stderr)
        return EXIT_INPUT
    report = skills.audit(Path(args.root))
    lines = skills.audit_lines(report)
    if args.format == "table":
        print("\n".join(lines))
    else:
        print(json_text(report), end="")
        print("\n".join(lines), file=sys.stderr)
    if args.output:
        write_json_atomically(args.output, report)
        print(f"report: {args.output}", file=sys.stderr)
    return EXIT_OK


def cmd_check_skill(args: argparse.Namespace) -> int:
    """``check-skill SKILL_DIR``: the SKILL.md contract, as the static scaffold case runs it."""
    skill_dir = Path(args.skill_dir)
    if not (skill_dir / skills.SKILL_FILE).is_file():
        print(f"{args.skill_dir}: no SKILL.md (not a skill folder)", file=sys.stderr)
        return EXIT_INPUT
    skill_md = skills.parse_skill_md(skill_dir.resolve(), str(skill_dir / skills.SKILL_FILE))
    for finding in skill_md.findings:
        print(finding, file=sys.stderr)
    if skill_md.findings:
        return EXIT_INPUT
    print(f"OK: {skill_dir / skills.SKILL_FILE}: skill {skill_md.name} keeps the SKILL.md "
          "contract")
    return EXIT_OK


def _write_scaffold(skill_dir: Path, target: Path) -> dict[str, Any]:
    """Write the scaffold atomically, then load it back: a scaffold that the runner would
    refuse must never be left behind as if it were usable."""
    data = skills.scaffold(skill_dir, target)
    write_json_atomically(target, data)
    load_fixture(target)
    return data


def cmd_scaffold_fixture(args: argparse.Namespace) -> int:
    skill_dir = Path(args.skill_dir).resolve()
    if not (skill_dir / skills.SKILL_FILE).is_file():
        print(f"{args.skill_dir}: no SKILL.md (not a skill folder)", file=sys.stderr)
        return EXIT_INPUT
    target = Path(args.output).resolve() if args.output else skills.scaffold_target(skill_dir)
    if not target.is_relative_to(skill_dir):
        print(f"{args.output}: must be inside {args.skill_dir}, so that the fixture's commands "
              "reach the skill", file=sys.stderr)
        return EXIT_INPUT
    if target.exists() and not args.force:
        print(f"{target}: already exists; not overwritten (use --force)", file=sys.stderr)
        return EXIT_INPUT
    try:
        data = _write_scaffold(skill_dir, target)
    except (OSError, FixtureError) as exc:
        message = exc.describe() if isinstance(exc, FixtureError) else exc.strerror
        print(f"{target}: scaffold not written: {message}", file=sys.stderr)
        return EXIT_INPUT
    print(json_text(data), end="")
    print(f"wrote {target} (eval_kind scaffold, cases: "
          f"{', '.join(case['name'] for case in data['cases'])})", file=sys.stderr)
    return EXIT_OK


def cmd_apply_scaffolds(args: argparse.Namespace) -> int:
    """``apply-scaffolds ROOT``: a scaffold for every skill without a fixture; dry run unless
    ``--write``. ``--force`` also rewrites existing scaffolds, never any other fixture."""
    if not Path(args.root).is_dir():
        print(f"{args.root}: not a directory", file=sys.stderr)
        return EXIT_INPUT
    root = Path(args.root).resolve()
    receipt: dict[str, Any] = {"schema": skills.APPLY_SCHEMA, "root": str(root),
                               "mode": "write" if args.write else "dry_run",
                               "created": [], "skipped": [], "dry_run": [], "errors": []}
    chosen = 0
    for found in skills.discover(root):
        relative = found.path.relative_to(root).as_posix() or "."
        target = skills.scaffold_target(found.path)
        reason = skills.scaffold_blocker(found, args.force)
        if reason is None and args.limit is not None and chosen >= args.limit:
            reason = f"beyond --limit {args.limit}"
        if reason is not None:
            receipt["skipped"].append({"skill": relative, "reason": reason})
            continue
        chosen += 1
        entry = {"skill": relative, "fixture": target.relative_to(root).as_posix()}
        if not args.write:
            receipt["dry_run"].append(entry)
            continue
        try:
            _write_scaffold(found.path, target)
        except (OSError, FixtureError) as exc:
            message = exc.describe() if isinstance(exc, FixtureError) else str(exc.strerror)
            receipt["errors"].append({**entry, "error": message})
            continue
        receipt["created"].append(entry)
    receipt["summary"] = {key: len(receipt[key])
                          for key in ("created", "skipped", "dry_run", "errors")}
    print(json_text(receipt), end="")
    summary = receipt["summary"]
    print(f"{receipt['mode']}: {summary['created']} created, {summary['dry_run']} would be "
          f"created, {summary['skipped']} skipped, {summary['errors']} error(s)",
          file=sys.stderr)
    for error in receipt["errors"]:
        print(f"{error['fixture']}: {error['error']}", file=sys.stderr)
    if args.output:
        write_json_atomically(args.output, receipt)
        print(f"receipt: {args.output}", file=sys.stderr)
    return EXIT_INPUT if receipt["errors"] else EXIT_OK


def _add_skill_trees(commands: Any) -> None:
    audit = commands.add_parser("audit-skills",
                                help="the eval posture of every skill under ROOT (runs nothing)")
    audit.add_argument("root", metavar="ROOT")
    audit.add_argument("--output", metavar="PATH", help="write the JSON report here")
    audit.add_argument("--format", choices=("json", "table"), default="json",
                       help="json: the report on stdout, the table on stderr (default); "
                            "table: only the table, on stdout")
    audit.set_defaults(handler=cmd_audit_skills)

    check = commands.add_parser("check-skill", help="check one skill's SKILL.md contract")
    check.add_argument("skill_dir", metavar="SKILL_DIR")
    check.set_defaults(handler=cmd_check_skill)

    scaffold = commands.add_parser("scaffold-fixture",
                                   help="write a first fixture (eval_kind scaffold) for a skill")
    scaffold.add_argument("skill_dir", metavar="SKILL_DIR")
    scaffold.add_argument("--output", metavar="PATH",
                          help="where to write it (default SKILL_DIR/fixtures/agentic_eval.json)")
    scaffold.add_argument("--force", action="store_true", help="overwrite an existing file")
    scaffold.set_defaults(handler=cmd_scaffold_fixture)

    apply = commands.add_parser("apply-scaffolds",
                                help="scaffold every skill under ROOT that has no fixture")
    apply.add_argument("root", metavar="ROOT")
    apply.add_argument("--write", action="store_true", help="write them (default: dry run)")
    apply.add_argument("--force", action="store_true",
                       help="also rewrite existing scaffold fixtures (never other fixtures)")
    apply.add_argument("--limit", type=_positive_int, default=None, metavar="N",
                       help="at most N scaffolds, the first N in path order")
    apply.add_argument("--output", metavar="PATH", help="also write the JSON receipt here")
    apply.set_defaults(handler=cmd_apply_scaffolds)


def cmd_plan_journeys(args: argparse.Namespace) -> int:
    """``plan-journeys``: bind requirements to discovered controls; executes nothing."""

    try:
        inputs = journeys.load_inputs(args.fixture, args.requirements,
                                      args.interaction_inventory, args.state_graph,
                                      installed_plugin_kinds())
    except InputError as exc:
        print(exc.describe(), file=sys.stderr)
        return EXIT_INPUT
    plan = journeys.build_plan(inputs, args.output)
    fragment = (journeys.build_scaffold(inputs, plan, args.scaffold_output)
                if args.scaffold_output else None)
    try:
        write_text_atomically(args.output, json_text(plan, flat_on_one_line))
        if fragment is not None:
            write_text_atomically(args.scaffold_output, json_text(fragment, flat_on_one_line))
    except OSError as exc:
        print(f"{exc.filename or args.output}: cannot write: {exc.strerror}", file=sys.stderr)
        return EXIT_INPUT
    print("\n".join(journeys.lines(plan)))
    print(f"plan: {args.output}", file=sys.stderr)
    if fragment is not None:
        print(f"scaffold: {args.scaffold_output} ({len(fragment['cases'])} candidate case(s), "
              f"{len(fragment['skipped'])} skipped)", file=sys.stderr)
    return journeys.exit_status(plan, args.report_only)


def _add_plan_journeys(commands: Any) -> None:
    parser = commands.add_parser(
        "plan-journeys", help="bind requirements to what live discovery observed: a journey "
                              "plan over the state graph (executes nothing)")
    parser.add_argument("--fixture", required=True, metavar="F",
                        help="the skill's fixture: its capability claims and seams")
    parser.add_argument("--requirements", required=True, metavar="R",
                        help="requirements.json (agentic_evals.requirements.v1)")
    parser.add_argument("--interaction-inventory", required=True, metavar="I",
                        help="discovery-inventory.json: the controls observed per state")
    parser.add_argument("--state-graph", required=True, metavar="G",
                        help="state-graph.json: initial_state, states, transitions")
    parser.add_argument("--output", required=True, metavar="OUT",
                        help="write the plan (agentic_evals.journey_plan.v1) here")
    parser.add_argument("--scaffold-output", metavar="FRAG",
                        help="also write candidate fixture cases for the BOUND journeys here")
    parser.add_argument("--report-only", action="store_true",
                        help="exit 0 even on a critical gap")
    parser.set_defaults(handler=cmd_plan_journeys)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentic-evals",
        description="Honest, repeatable, fail-closed evaluation of agent skills.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run fixtures' cases as trials and gate on readiness")
    run.add_argument("fixtures", nargs="+", metavar="FIXTURE")
    run.add_argument("--output", metavar="PATH", help="also write the JSON report here")
    run.add_argument("--report-only", action="store_true", help="exit 0 whatever the readiness")
    run.add_argument("--case", action="append", default=[], metavar="NAME",
                     help="run only this case (repeatable); the run is then partial")
    run.set_defaults(handler=cmd_run)
    run.epilog = "Arguments after -- go to pytest as they are (for example: -- -n 4 -x)."

    validate = commands.add_parser("validate", help="check fixtures without running anything")
    validate.add_argument("fixtures", nargs="+", metavar="FIXTURE")
    validate.set_defaults(handler=cmd_validate)

    report = commands.add_parser("report", help="render a saved JSON report for a person")
    report.add_argument("report", metavar="REPORT.json")
    report.add_argument("--format", choices=("table", "md"), default="table",
                        help="table: the terminal summary (default); md: Markdown")
    report.set_defaults(handler=cmd_report)

    _add_regressions(commands)
    _add_coverage(commands)
    _add_skill_trees(commands)
    _add_plan_journeys(commands)

    schema = commands.add_parser("schema", help="print a JSON Schema shipped with the package")
    schema.add_argument("name", nargs="?", default="fixture", choices=SCHEMAS)
    schema.set_defaults(handler=cmd_schema)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = list(sys.argv[1:] if argv is None else argv)
    # Everything after "--" belongs to pytest; argparse would try to read it as ours.
    pytest_args: list[str] = []
    if "--" in arguments:
        split = arguments.index("--")
        arguments, pytest_args = arguments[:split], arguments[split + 1:]
    args = parser.parse_args(arguments)
    if pytest_args and args.command != "run":
        parser.error("arguments after -- are only for 'run'")
    args.pytest_args = pytest_args
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
