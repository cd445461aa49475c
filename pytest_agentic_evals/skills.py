"""Skill trees: find skills, check their SKILL.md, classify their eval posture, scaffold fixtures.

Core of ``audit-skills``, ``check-skill``, ``scaffold-fixture`` and ``apply-scaffolds``: no
pytest, nothing is executed; only scaffolds are written. A skill is a directory holding a
``SKILL.md`` whose YAML frontmatter names and describes it. Discovery reads no file but
``SKILL.md`` and fixture files, so that a tree of thousands of skills is audited in about the
time it takes to list it.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_agentic_evals.execution.workspace import SKIPPED_NAMES
from pytest_agentic_evals.jsonio import read_input, write_json_atomically
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.model import FIXTURES_DIRNAME

AUDIT_SCHEMA = "agentic_evals.skill_posture_audit.v1"
APPLY_SCHEMA = "agentic_evals.apply_scaffolds.v1"
SKILL_FILE = "SKILL.md"
FIXTURE_NAME = "agentic_eval.json"
FIXTURE_PREFIX = "agentic_eval"
# Evals in formats other than ours: they may be good, but the gate cannot run them. The
# earlier tool's legacy fixture (fixtures/eval.json) among them.
FOREIGN_EVALS = ("evals/evals.json", "evals/evals.yaml", "evals/evals.yml", "eval.yaml",
                 "fixtures/eval.json")
ENTRYPOINT_FILES = ("run.sh", "sanity.sh")
SCRIPTS_DIR = "scripts"
# Dependency, VCS and cache folders never hold a user's skills, and some are huge.
SKIPPED_DIRS = SKIPPED_NAMES | {"site-packages", ".direnv", ".idea", ".vscode", ".agentic-evals"}
# The C loader is ten times faster; it is the same YAML, so use it when PyYAML was built with it.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

ACCEPTED = "accepted_fixture"
REJECTED = "rejected_fixture"
SCAFFOLD_ONLY = "scaffold_only"
SELFTEST_ONLY = "selftest_only"
FOREIGN = "foreign_eval"
NOT_REQUIRED = "eval_not_required"
MISSING = "missing"
POSTURES = (ACCEPTED, REJECTED, SCAFFOLD_ONLY, SELFTEST_ONLY, FOREIGN, NOT_REQUIRED, MISSING)

ACTIONS = {
    ACCEPTED: "keep: run it in CI with pytest --agentic-evals",
    REJECTED: "fix_fixture: address every finding of the rejected fixture",
    SCAFFOLD_ONLY: "write_real_cases: replace the scaffold with cases that exercise the skill",
    SELFTEST_ONLY: "write_skill_fixture: a runner_selftest fixture is no evidence for a skill",
    FOREIGN: "compose_agentic_evals: port the existing eval into fixtures/agentic_eval.json",
    NOT_REQUIRED: "none: eval_not_required is documented and the skill has no entrypoint",
    MISSING: "scaffold_fixture: agentic-evals scaffold-fixture SKILL_DIR, then write real cases",
}
FIX_SKILL_MD = "fix_skill_md: make the SKILL.md frontmatter name and describe the skill"
ADD_FIXTURE = "write_skill_fixture: eval_not_required cannot cover a skill with an entrypoint"


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    file: str
    pointer: str = ""
    severity: str = "error"

    def as_json(self) -> dict[str, str]:
        return {"code": self.code, "severity": self.severity, "file": self.file,
                "pointer": self.pointer, "message": self.message}

    def __str__(self) -> str:
        where = f"{self.file}: {self.pointer}" if self.pointer else self.file
        return f"{where}: {self.code}: {self.message}"


@dataclass(frozen=True)
class Folder:
    """A folder of a skill tree, with the names of its entries (read once, while walking); a
    skill when it holds SKILL.md."""

    path: Path
    files: frozenset[str]
    dirs: frozenset[str]


@dataclass
class SkillMd:
    """The parsed SKILL.md: its frontmatter (empty when unusable) and the contract's findings."""

    frontmatter: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    @property
    def name(self) -> str | None:
        value = self.frontmatter.get("name")
        return value.strip() if isinstance(value, str) and value.strip() else None


def folders(root: Path) -> Iterator[Folder]:
    """Every folder under ``root`` (``root`` included) that a walk of a skill tree looks into,
    depth first, in sorted order, with the names of its entries.

    ``os.scandir`` gives the entry types without a stat per file; skipped folders are pruned
    before they are entered. A folder holding ``pyvenv.cfg`` is a virtualenv whatever its name.
    A stack rather than recursion: a tree of any depth is walked.
    """
    stack = [str(root)]
    while stack:
        directory = stack.pop()
        files: set[str] = set()
        dirs: list[str] = []
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            dirs.append(entry.name)
                        else:
                            files.add(entry.name)
                    except OSError:
                        continue
        except OSError:
            continue  # unreadable folder: nothing to audit in it, and no reason to stop
        if "pyvenv.cfg" in files:
            continue
        yield Folder(Path(directory), frozenset(files), frozenset(dirs))
        # Reverse-sorted onto a stack, so that they are visited in sorted order.
        for name in sorted(dirs, reverse=True):
            if name not in SKIPPED_DIRS and not name.endswith(".egg-info"):
                stack.append(os.path.join(directory, name))


def discover(root: Path) -> Iterator[Folder]:
    """Every skill under ``root`` (``root`` included): the folders holding SKILL.md."""
    return (folder for folder in folders(root) if SKILL_FILE in folder.files)


def parse_skill_md(skill_dir: Path, shown: str | None = None) -> SkillMd:
    """Read SKILL.md and check its contract: frontmatter present, name and description set,
    name equal to the folder's name. Problems are findings, never exceptions."""
    path = skill_dir / SKILL_FILE
    shown = shown or str(path)
    result = SkillMd()
    try:
        text = read_input(path).decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        result.findings.append(Finding("SKILL001", f"cannot read SKILL.md: {reason}", shown))
        return result
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        result.findings.append(Finding(
            "SKILL001", "no YAML frontmatter: SKILL.md must start with a '---' line", shown))
        return result
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() in ("---", "...")),
               None)
    if end is None:
        result.findings.append(Finding(
            "SKILL002", "frontmatter is never closed by a '---' line", shown))
        return result
    try:
        data = yaml.load("\n".join(lines[1:end]), Loader=_LOADER)  # safe: no objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        # +2: the mark counts from 0 inside the frontmatter, which starts on line 2.
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        result.findings.append(Finding(
            "SKILL002", f"frontmatter is not valid YAML{where}: {problem}", shown))
        return result
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        result.findings.append(Finding(
            "SKILL002", f"frontmatter is {kind}, expected a mapping", shown))
        return result
    result.frontmatter = data
    for key, code in (("name", "SKILL003"), ("description", "SKILL004")):
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            said = "missing" if value is None else f"{_described(value)}, not a non-empty string"
            result.findings.append(Finding(code, f"{key} is {said}", shown, f"/{key}"))
    name = result.name
    if name is not None and name != skill_dir.name:
        result.findings.append(Finding(
            "SKILL005", f"name {name!r} does not match the folder name {skill_dir.name!r}",
            shown, "/name"))
    return result


def _described(value: Any) -> str:
    if isinstance(value, str):
        return "an empty string"
    return f"a {type(value).__name__} ({value!r})" if not isinstance(value, dict) else "a mapping"


def eval_not_required_reason(frontmatter: Mapping[str, Any]) -> str | None:
    """The documented reason a skill needs no eval: ``eval_not_required: "reason"`` at the top
    level or under ``metadata``. A bare ``true`` documents nothing and is ignored."""
    metadata = frontmatter.get("metadata")
    for holder in (frontmatter, metadata if isinstance(metadata, dict) else {}):
        value = holder.get("eval_not_required")
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def skill_at(path: Path) -> Folder:
    """The skill in the directory ``path``, read as discovery would have found it."""
    with os.scandir(path) as entries:
        listed = [(entry.name, entry.is_dir()) for entry in entries]
    return Folder(path, frozenset(name for name, is_dir in listed if not is_dir),
                      frozenset(name for name, is_dir in listed if is_dir))


def entrypoints(skill: Folder) -> list[str]:
    found = [name for name in ENTRYPOINT_FILES if name in skill.files]
    if SCRIPTS_DIR in skill.dirs:
        found.append(f"{SCRIPTS_DIR}/")
    return found


def fixture_paths(skill: Folder) -> list[Path]:
    """The skill's agentic-evals fixtures: ``fixtures/agentic_eval*.json`` and a top-level one."""
    found = [skill.path / name for name in sorted(skill.files) if _is_fixture_name(name)]
    if FIXTURES_DIRNAME in skill.dirs:
        try:
            with os.scandir(skill.path / FIXTURES_DIRNAME) as entries:
                found += sorted(Path(entry.path) for entry in entries
                                if _is_fixture_name(entry.name) and entry.is_file())
        except OSError:
            pass
    return found


def _is_fixture_name(name: str) -> bool:
    return name.startswith(FIXTURE_PREFIX) and name.endswith(".json")


def foreign_evals(skill: Folder) -> list[str]:
    found = []
    for relative in FOREIGN_EVALS:
        head, _, tail = relative.rpartition("/")
        if (head and head in skill.dirs and (skill.path / relative).is_file()) or (
                not head and tail in skill.files):
            found.append(relative)
    return found


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix() or "."
    except ValueError:
        return str(path)


def _audit_fixtures(
    skill: Folder, root: Path, findings: list[Finding]
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Each fixture of a skill, loaded: its entry, and how many there are of each kind
    (``rejected`` for those that do not load); a rejected fixture's problems join
    ``findings``."""
    fixtures: list[dict[str, Any]] = []
    kinds: Counter[str] = Counter()
    for path in fixture_paths(skill):
        shown = _relative(path, root)
        try:
            # The audit classifies what a fixture declares (a scaffold is scaffold_only).
            fixture = load_fixture(path, accept_exemptions=True)
        except FixtureError as exc:
            kinds["rejected"] += 1
            fixtures.append({"path": shown, "status": "rejected",
                             "problems": [str(problem) for problem in exc.problems]})
            findings += [Finding("FIXTURE", problem.message, shown, problem.pointer)
                         for problem in exc.problems]
            continue
        kind = fixture.eval_kind
        kinds[kind] += 1
        fixtures.append({"path": shown, "status": "accepted", "eval_kind": kind,
                         "cases": len(fixture.cases), "trials": fixture.trials})
    return fixtures, kinds


def _posture(
    kinds: Counter[str], foreign: list[str], reason: str | None, executable: list[str],
    fixtures: list[dict[str, Any]], relative: str, shown_md: str, findings: list[Finding],
) -> str:
    """A skill's eval posture from what it has; what is missing joins ``findings``."""
    # The best evidence decides the posture: a rejected fixture beside an accepted one is
    # still reported through its findings, but the skill does have a runnable eval.
    if kinds["skill"]:
        posture = ACCEPTED
    elif kinds["rejected"]:
        posture = REJECTED
    elif kinds["scaffold"]:
        posture = SCAFFOLD_ONLY
        findings.append(Finding("EVAL002", "only a scaffold fixture: it proves the skill starts, "
                                "not that it works; compose agentic-evals with real cases",
                                fixtures[0]["path"], severity="warning"))
    elif kinds["runner_selftest"]:
        posture = SELFTEST_ONLY
        findings.append(Finding("EVAL002", "only a runner_selftest fixture, which is exempt "
                                "from the contract and no evidence for a skill",
                                fixtures[0]["path"], severity="warning"))
    elif foreign:
        posture = FOREIGN
        findings.append(Finding("EVAL002", f"has a foreign or legacy eval ({', '.join(foreign)}) "
                                "that the readiness gate cannot run; compose agentic-evals",
                                relative, severity="warning"))
    elif reason is not None:
        posture = NOT_REQUIRED
        if executable:
            findings.append(Finding(
                "EVAL001", f"documents eval_not_required ({reason!r}) but has an executable "
                f"entrypoint ({', '.join(executable)}): no blanket exemption covers an "
                "executable capability", shown_md))
    else:
        posture = MISSING
        findings.append(Finding("EVAL001", "no eval fixture (fixtures/agentic_eval.json)",
                                relative))
    return posture


def audit_skill(skill: Folder, root: Path) -> dict[str, Any]:
    """One skill's entry in the audit: posture, findings, recommended action."""
    relative = _relative(skill.path, root)
    shown_md = _relative(skill.path / SKILL_FILE, root)
    skill_md = parse_skill_md(skill.path, shown_md)
    findings = list(skill_md.findings)
    executable = entrypoints(skill)

    fixtures, kinds = _audit_fixtures(skill, root, findings)
    foreign = foreign_evals(skill)
    reason = eval_not_required_reason(skill_md.frontmatter)

    posture = _posture(kinds, foreign, reason, executable, fixtures, relative, shown_md,
                       findings)

    action = ACTIONS[posture]
    if posture == NOT_REQUIRED and executable:
        action = ADD_FIXTURE
    actions = [action]
    if skill_md.findings:
        actions.insert(0, FIX_SKILL_MD)
    return {
        "path": relative,
        "name": skill_md.name,
        "folder": skill.path.name,
        "posture": posture,
        "entrypoints": executable,
        "fixtures": fixtures,
        "foreign_evals": foreign,
        "eval_not_required": reason,
        "skill_md_valid": not skill_md.findings,
        "findings": [finding.as_json() for finding in findings],
        "recommended_action": actions[0],
        "recommended_actions": actions,
    }


def audit(root: Path) -> dict[str, Any]:
    """The posture of every skill under ``root``."""
    root = Path(os.path.abspath(root))
    skills = [audit_skill(skill, root) for skill in discover(root)]
    _flag_shared_names(skills)
    postures = Counter(entry["posture"] for entry in skills)
    codes = Counter(finding["code"] for entry in skills for finding in entry["findings"])
    return {
        "schema": AUDIT_SCHEMA,
        "root": str(root),
        "skills": skills,
        "summary": {
            "skills": len(skills),
            "postures": {posture: postures.get(posture, 0) for posture in POSTURES},
            "findings": dict(sorted(codes.items())),
            "skill_md_invalid": sum(1 for entry in skills if not entry["skill_md_valid"]),
            "with_real_eval": postures.get(ACCEPTED, 0),
        },
    }


def _flag_shared_names(skills: list[dict[str, Any]]) -> None:
    """SKILL006 on every skill whose name another skill of the tree also has: an agent that
    loads skills by name gets one of them, and which one depends on the loader."""
    by_name: dict[str, list[str]] = {}
    for entry in skills:
        if isinstance(entry["name"], str):
            by_name.setdefault(entry["name"], []).append(entry["path"])
    for entry in skills:
        paths = by_name.get(entry["name"], []) if isinstance(entry["name"], str) else []
        if len(paths) < 2:
            continue
        others = ", ".join(path for path in paths if path != entry["path"])
        message = (f"name {entry['name']!r} is also the name of {others}: an agent that "
                   "loads skills by name sees only one of them; give each skill its own name")
        shown = f"{entry['path']}/{SKILL_FILE}" if entry["path"] != "." else SKILL_FILE
        entry["findings"].append(Finding("SKILL006", message, shown, "/name").as_json())
        if FIX_SKILL_MD not in entry["recommended_actions"]:
            entry["recommended_actions"].insert(0, FIX_SKILL_MD)
            entry["recommended_action"] = FIX_SKILL_MD


def audit_lines(report: Mapping[str, Any]) -> list[str]:
    """The audit as a table a person reads: one row per skill, then the totals."""
    rows = [("SKILL", "POSTURE", "FINDINGS", "ACTION")]
    for entry in report["skills"]:
        codes = Counter(finding["code"] for finding in entry["findings"])
        rows.append((entry["path"], entry["posture"],
                     ",".join(f"{code}x{n}" if n > 1 else code for code, n in sorted(
                         codes.items())) or "-",
                     entry["recommended_action"].split(":", 1)[0]))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
             + "  " + row[3] for row in rows]
    summary = report["summary"]
    counted = ", ".join(f"{n} {posture}" for posture, n in summary["postures"].items() if n)
    lines.append(f"{summary['skills']} skill(s): {counted or 'none found'}; "
                 f"{summary['skill_md_invalid']} with an invalid SKILL.md")
    return lines


def scaffold(skill_dir: Path, fixture_path: Path | None = None) -> dict[str, Any]:
    """A first, honest fixture for a skill (``eval_kind: scaffold``), to be written at
    ``fixture_path`` (default ``fixtures/agentic_eval.json``); every command path is relative
    to the fixture's folder, which is where the runner starts commands.

    The positive case reaches the skill's own entrypoint when it has one; without one it runs
    this product's SKILL.md check. The negative case shows the check can say no: it is given a
    folder that holds no SKILL.md and must refuse it.
    """
    skill_dir = Path(os.path.abspath(skill_dir))
    fixture_dir = Path(os.path.abspath(fixture_path or scaffold_target(skill_dir))).parent
    to_skill = Path(os.path.relpath(skill_dir, fixture_dir)).as_posix()
    files = set(_names(skill_dir, files=True))
    skill_md = parse_skill_md(skill_dir)
    name = skill_md.name or skill_dir.name
    cases: list[dict[str, Any]] = []
    if "sanity.sh" in files:
        proves = "sanity.sh exits 0"
        cases.append({"name": "sanity", "type": "positive", "real_world": True,
                      "description": "the skill's own sanity check passes",
                      "command": ["bash", f"{to_skill}/sanity.sh"],
                      "expected": {"exit_code": 0}})
    elif "run.sh" in files:
        proves = "run.sh --help exits 0"
        cases.append({"name": "run-help", "type": "positive", "real_world": True,
                      "description": "the skill's entrypoint starts and answers --help",
                      "command": ["bash", f"{to_skill}/run.sh", "--help"],
                      "expected": {"exit_code": 0}})
    else:
        proves = "SKILL.md keeps the contract (frontmatter, name, description, folder name)"
        cases.append({"name": "skill-md-contract", "type": "positive",
                      "description": "agentic-evals' own SKILL.md check accepts the skill",
                      # In place: the check compares the name with the folder's, and a
                      # private copy's folder has another name. It only reads.
                      "workspace": "inplace",
                      "command": ["agentic-evals", "check-skill", to_skill],
                      "expected": {"exit_code": 0, "stdout_contains": [name]}})
    # The fixture's own folder is not a skill, unless the fixture sits beside SKILL.md.
    not_a_skill = "." if fixture_dir != skill_dir else "no-such-skill"
    cases.append({"name": "check-skill-refuses-non-skill", "type": "negative",
                  "description": "the SKILL.md check refuses a folder without SKILL.md",
                  "workspace": "inplace",
                  "command": ["agentic-evals", "check-skill", not_a_skill],
                  "expected": {"exit_code": 2, "stderr_contains": ["no SKILL.md"]}})
    return {
        "version": 2,
        "skill": name,
        "trials": 2,
        "eval_kind": "scaffold",
        "proof_scope": "scaffold: mechanical first posture written by agentic-evals",
        "claims": {"proves": proves,
                   "does_not_prove": "that the skill does its job: replace this scaffold with "
                                     "cases that exercise the skill's real behaviour"},
        "cases": cases,
    }


def _names(directory: Path, files: bool) -> list[str]:
    with os.scandir(directory) as entries:
        return [entry.name for entry in entries if entry.is_dir() != files]


def scaffold_target(skill_dir: Path) -> Path:
    return skill_dir / FIXTURES_DIRNAME / FIXTURE_NAME


def scaffold_blocker(skill: Folder, force: bool) -> str | None:
    """Why ``apply-scaffolds`` leaves this skill alone, or None when it may scaffold it.

    A real fixture, even a rejected one, is the user's work and is never replaced; with
    ``force`` an earlier scaffold at the default path may be rewritten. A skill that documents
    ``eval_not_required`` and has no entrypoint needs no fixture.
    """
    existing = fixture_paths(skill)
    if not existing:
        reason = eval_not_required_reason(parse_skill_md(skill.path).frontmatter)
        # Documented and honest (nothing executable): not a missing fixture.
        if reason is not None and not entrypoints(skill):
            return f"documents eval_not_required ({reason}) and has no entrypoint"
        return None
    target = scaffold_target(skill.path)
    if force and existing == [target] and _is_scaffold(target):
        return None
    shown = ", ".join(_relative(path, skill.path) for path in existing)
    return f"has a fixture already ({shown})"


def scaffold_target_problem(
    skill_dir: Path, target: Path, force: bool, only_scaffolds: bool = False
) -> str | None:
    """Why the scaffold of the skill in ``skill_dir`` must not be written at ``target``, or
    None when it may.

    The scaffolder never changes a skill's own files. The file it writes, followed through
    symbolic links, lies inside the skill's folder. A file already there is replaced only with
    ``force``, and only when it is a fixture (a JSON object with a ``cases`` list), or with
    ``only_scaffolds`` a fixture that is a scaffold (``eval_kind: scaffold``): never SKILL.md,
    a script, a registry or any other file of the skill's, whatever it is named.
    """
    real = os.path.realpath(target)
    if not Path(real).is_relative_to(os.path.realpath(skill_dir)):
        through = "" if real == os.path.abspath(target) else \
            f" (through a symbolic link, it is {real})"
        return (f"must be inside {skill_dir}, so that the fixture's commands reach the "
                f"skill{through}")
    if not os.path.lexists(real):
        return None
    if not os.path.isfile(real):
        return "exists and is not a file: not replaced"
    if only_scaffolds and not _is_scaffold(Path(real)):
        return ("exists and is not a scaffold (eval_kind scaffold): not replaced, even with "
                "--force, which rewrites only earlier scaffolds")
    if not only_scaffolds and not _is_fixture_document(real):
        return ("exists and is not a fixture (a JSON object with cases): it is the skill's "
                "own file and is not replaced, even with --force; name another --output")
    if not force:
        return "already exists; not overwritten (use --force)"
    return None


def _is_fixture_document(path: str) -> bool:
    try:
        data = json.loads(read_input(path))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and isinstance(data.get("cases"), list)


def write_scaffold(skill_dir: Path, target: Path) -> dict[str, Any]:
    """Write the scaffold atomically, then load it back: a scaffold that the runner would
    refuse must never be left behind as if it were usable. Raises OSError or FixtureError."""
    data = scaffold(skill_dir, target)
    write_json_atomically(target, data)
    load_fixture(target, accept_exemptions=True)
    return data


def apply_scaffolds(root: Path, write: bool, force: bool, limit: int | None) -> dict[str, Any]:
    """The receipt of ``apply-scaffolds``: a scaffold for every skill under ``root`` without a
    fixture, in path order, at most ``limit``; written only when ``write`` (else a dry run).
    ``force`` also rewrites existing scaffolds, never any other fixture."""
    root = Path(os.path.realpath(root))  # Path.resolve() raises on a loop of links
    receipt: dict[str, Any] = {"schema": APPLY_SCHEMA, "root": str(root),
                               "mode": "write" if write else "dry_run",
                               "created": [], "skipped": [], "dry_run": [], "errors": []}
    chosen = 0
    for found in discover(root):
        relative = found.path.relative_to(root).as_posix() or "."
        target = scaffold_target(found.path)
        reason = scaffold_blocker(found, force)
        if reason is None:  # also where fixtures/ or the file is a link: never through it
            problem = scaffold_target_problem(found.path, target, force, only_scaffolds=True)
            reason = None if problem is None else f"{FIXTURES_DIRNAME}/{FIXTURE_NAME} {problem}"
        if reason is None and limit is not None and chosen >= limit:
            reason = f"beyond --limit {limit}"
        if reason is not None:
            receipt["skipped"].append({"skill": relative, "reason": reason})
            continue
        chosen += 1
        entry = {"skill": relative, "fixture": target.relative_to(root).as_posix()}
        if not write:
            receipt["dry_run"].append(entry)
            continue
        try:
            write_scaffold(found.path, target)
        except (OSError, FixtureError) as exc:
            message = exc.describe() if isinstance(exc, FixtureError) else str(exc.strerror)
            receipt["errors"].append({**entry, "error": message})
            continue
        receipt["created"].append(entry)
    receipt["summary"] = {key: len(receipt[key])
                          for key in ("created", "skipped", "dry_run", "errors")}
    return receipt


def _is_scaffold(path: Path) -> bool:
    try:
        return load_fixture(path, accept_exemptions=True).eval_kind == "scaffold"
    except FixtureError:
        return False
