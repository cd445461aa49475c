"""Skill trees: audit-skills, check-skill, scaffold-fixture, apply-scaffolds, as users run them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals import skills
from pytest_agentic_evals.loading import load_fixture

from conftest import RUN_SH, child_env, run_cli, skill_fixture

HELPFUL_RUN_SH = """#!/usr/bin/env bash
if [ "${1:-}" = "--help" ]; then echo "usage: run.sh NAME"; exit 0; fi
echo "hello, $1"
"""
SANITY_SH = "#!/usr/bin/env bash\ntest -f SKILL.md || test -f ../SKILL.md\n"


def make(root: Path, relative: str, frontmatter: str | None = None,
         files: dict[str, str] | None = None) -> Path:
    """A skill folder; frontmatter None means a valid one naming the folder."""
    folder = root / relative
    folder.mkdir(parents=True, exist_ok=True)
    if frontmatter is None:
        frontmatter = f"name: {folder.name}\ndescription: does {folder.name} things\n"
    (folder / "SKILL.md").write_text(f"---\n{frontmatter}---\n# {folder.name}\n")
    for name, text in (files or {}).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if name.endswith(".sh"):
            path.chmod(0o755)
    return folder


def realistic_tree(root: Path) -> dict[str, Path]:
    """Nested categories, every posture, broken SKILL.md files and folders to skip."""
    tree = {
        "accepted": make(root, "writing/greeter", files={
            "run.sh": RUN_SH,
            "fixtures/agentic_eval.json": json.dumps(skill_fixture()),
        }),
        "rejected": make(root, "writing/lazy", files={
            "run.sh": RUN_SH,
            "fixtures/agentic_eval.json": json.dumps(skill_fixture(trials=1)),
        }),
        "sanity": make(root, "ops/deploy/checker", files={"sanity.sh": SANITY_SH}),
        "foreign": make(root, "ops/legacy-evals", files={
            "run.sh": HELPFUL_RUN_SH,
            "evals/evals.json": json.dumps({"evals": [{"prompt": "hi", "expected": "hello"}]}),
        }),
        "static": make(root, "docs/style-guide"),
        "not_required": make(root, "docs/glossary", frontmatter=(
            "name: glossary\ndescription: terms\nmetadata:\n"
            "  eval_not_required: prose only, nothing executes\n")),
        "exempt_but_runs": make(root, "tools/shell-helper", frontmatter=(
            "name: shell-helper\ndescription: helps\neval_not_required: trust me\n"),
            files={"run.sh": HELPFUL_RUN_SH}),
        "broken_yaml": make(root, "misc/broken-yaml", frontmatter=(
            "name: [broken-yaml\ndescription: x\n")),
        "renamed": make(root, "misc/old-folder-name", frontmatter=(
            "name: new-skill-name\ndescription: renamed\ntriggers: [rename]\n"
            "allowed-tools: [Bash]\n"), files={"scripts/do.py": "print('x')\n"}),
        "no_description": make(root, "misc/terse", frontmatter="name: terse\ndescription: ''\n"),
    }
    # None of these is a user's skill.
    for hidden in (".git/hooks/fake", "node_modules/pkg", ".venv/lib/pkg", "myenv/lib/pkg",
                   "writing/__pycache__/x"):
        make(root, hidden)
    (root / "myenv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return tree


def test_the_earlier_tools_legacy_fixture_is_a_foreign_eval(tmp_path: Path) -> None:
    # fixtures/eval.json was the earlier tool's legacy_eval_fixture posture: an eval the gate
    # cannot run, not a missing one.
    make(tmp_path, "ops/old-format", files={"run.sh": HELPFUL_RUN_SH,
                                             "fixtures/eval.json": json.dumps({"cases": []})})
    result = run_cli("audit-skills", ".", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [entry] = json.loads(result.stdout)["skills"]
    assert (entry["posture"], codes(entry), entry["recommended_action"].split(":")[0]) == (
        "foreign_eval", ["EVAL002"], "compose_agentic_evals")


def by_path(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["path"]: entry for entry in report["skills"]}


def codes(entry: dict[str, Any]) -> list[str]:
    return sorted(finding["code"] for finding in entry["findings"])


def test_audit_classifies_every_posture_finding_and_action(tmp_path: Path) -> None:
    realistic_tree(tmp_path)
    out = tmp_path / "reports" / "audit.json"
    result = run_cli("audit-skills", ".", "--output", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert json.loads(out.read_text()) == report
    assert report["schema"] == "agentic_evals.skill_posture_audit.v1"
    skills_by_path = by_path(report)
    assert sorted(skills_by_path) == [
        "docs/glossary", "docs/style-guide", "misc/broken-yaml", "misc/old-folder-name",
        "misc/terse", "ops/deploy/checker", "ops/legacy-evals", "tools/shell-helper",
        "writing/greeter", "writing/lazy",
    ]
    expected = {
        "writing/greeter": ("accepted_fixture", [], "keep"),
        "writing/lazy": ("rejected_fixture", ["FIXTURE"], "fix_fixture"),
        "ops/deploy/checker": ("missing", ["EVAL001"], "scaffold_fixture"),
        "ops/legacy-evals": ("foreign_eval", ["EVAL002"], "compose_agentic_evals"),
        "docs/style-guide": ("missing", ["EVAL001"], "scaffold_fixture"),
        "docs/glossary": ("eval_not_required", [], "none"),
        "tools/shell-helper": ("eval_not_required", ["EVAL001"], "write_skill_fixture"),
        "misc/broken-yaml": ("missing", ["EVAL001", "SKILL002"], "fix_skill_md"),
        "misc/old-folder-name": ("missing", ["EVAL001", "SKILL005"], "fix_skill_md"),
        "misc/terse": ("missing", ["EVAL001", "SKILL004"], "fix_skill_md"),
    }
    for path, (posture, found_codes, action) in expected.items():
        entry = skills_by_path[path]
        assert (entry["posture"], codes(entry), entry["recommended_action"].split(":")[0]) == (
            posture, found_codes, action), path
    assert skills_by_path["misc/old-folder-name"]["name"] == "new-skill-name"
    assert skills_by_path["misc/old-folder-name"]["entrypoints"] == ["scripts/"]
    assert skills_by_path["misc/broken-yaml"]["recommended_actions"][1].startswith(
        "scaffold_fixture")
    assert skills_by_path["docs/glossary"]["eval_not_required"] == "prose only, nothing executes"
    summary = report["summary"]
    assert summary["skills"] == 10
    assert summary["postures"]["missing"] == 5
    assert summary["skill_md_invalid"] == 3
    # The readable table goes to stderr, one row per skill.
    assert "writing/lazy" in result.stderr and "rejected_fixture" in result.stderr
    assert "10 skill(s)" in result.stderr


def test_audit_findings_name_the_file_and_pointer(tmp_path: Path) -> None:
    realistic_tree(tmp_path)
    report = json.loads(run_cli("audit-skills", str(tmp_path)).stdout)
    entries = by_path(report)
    rejected = entries["writing/lazy"]["findings"]
    assert rejected[0]["file"] == "writing/lazy/fixtures/agentic_eval.json"
    assert rejected[0]["pointer"] == "/trials"
    assert "trials is 1" in rejected[0]["message"]
    assert entries["writing/lazy"]["fixtures"][0]["status"] == "rejected"
    broken = entries["misc/broken-yaml"]["findings"]
    assert broken[0]["file"] == "misc/broken-yaml/SKILL.md"
    assert "not valid YAML" in broken[0]["message"]
    renamed = [f for f in entries["misc/old-folder-name"]["findings"] if f["code"] == "SKILL005"]
    assert renamed[0]["pointer"] == "/name"
    assert "'old-folder-name'" in renamed[0]["message"]
    exempt = entries["tools/shell-helper"]["findings"][0]["message"]
    assert "executable" in exempt and "run.sh" in exempt


def test_audit_table_format_and_bad_root(tmp_path: Path) -> None:
    realistic_tree(tmp_path)
    result = run_cli("audit-skills", str(tmp_path), "--format", "table")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["SKILL", "POSTURE", "FINDINGS", "ACTION"]
    assert any(line.split()[:2] == ["ops/legacy-evals", "foreign_eval"] for line in lines)
    assert not result.stdout.lstrip().startswith("{")
    missing = run_cli("audit-skills", str(tmp_path / "nope"))
    assert missing.returncode == 2
    assert f"{tmp_path / 'nope'}: not a directory" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_an_empty_tree_is_not_an_error(tmp_path: Path) -> None:
    result = run_cli("audit-skills", str(tmp_path))
    assert result.returncode == 0
    assert json.loads(result.stdout)["summary"]["skills"] == 0


def test_check_skill_accepts_a_sound_skill(tmp_path: Path) -> None:
    good = run_cli("check-skill", str(realistic_tree(tmp_path)["static"]))
    assert good.returncode == 0, good.stderr
    assert "style-guide" in good.stdout


@pytest.mark.parametrize(
    ("folder", "error"),
    [("misc/broken-yaml", "misc/broken-yaml/SKILL.md: SKILL002:"),
     ("misc/old-folder-name", "*SKILL005*"),
     ("docs", "*no SKILL.md*")],
    ids=["broken-frontmatter", "name-unlike-folder", "no-skill-md"],
)
def test_check_skill_refuses(tmp_path: Path, folder: str, error: str) -> None:
    realistic_tree(tmp_path)
    refused = run_cli("check-skill", folder, cwd=tmp_path)
    assert refused.returncode == 2
    refused_lines = pytest.LineMatcher(refused.stderr.splitlines())
    refused_lines.fnmatch_lines([error + ("" if error.endswith("*") else "*")])
    refused_lines.no_fnmatch_line("*Traceback*")


@pytest.mark.parametrize(("key", "case", "command"), [
    ("sanity", "sanity", ["bash", "../sanity.sh"]),
    ("foreign", "run-help", ["bash", "../run.sh", "--help"]),
    ("static", "skill-md-contract", ["agentic-evals", "check-skill", ".."]),
])
def test_scaffold_fixture_picks_the_entrypoint(tmp_path: Path, key: str, case: str,
                                               command: list[str]) -> None:
    folder = realistic_tree(tmp_path)[key]
    result = run_cli("scaffold-fixture", str(folder))
    assert result.returncode == 0, result.stderr
    target = folder / "fixtures" / "agentic_eval.json"
    written = json.loads(target.read_text())
    assert json.loads(result.stdout) == written
    assert written["eval_kind"] == "scaffold" and written["trials"] == 2
    assert written["cases"][0]["name"] == case
    assert written["cases"][0]["command"] == command
    assert [c["type"] for c in written["cases"]] == ["positive", "negative"]
    assert f"agentic-evals run {target} --allow-exempt" in result.stderr
    fixture = load_fixture(target, accept_exemptions=True)
    assert fixture.eval_kind == "scaffold"
    assert run_cli("validate", str(target), "--allow-exempt").returncode == 0
    # And it runs where the run grants its exemption: every case passes on a healthy skill.
    ran = run_cli("run", str(target), "--allow-exempt", cwd=folder)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["readiness"] == "READY"
    assert "READY (scaffold)" in ran.stderr
    # A run that gates the skill grants nothing: a scaffold keeps it red.
    gated = run_cli("run", str(target), cwd=folder)
    assert gated.returncode == 2 and "/eval_kind: eval_kind 'scaffold' asks" in gated.stderr


def test_scaffold_fixture_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    folder = realistic_tree(tmp_path)["accepted"]
    target = folder / "fixtures" / "agentic_eval.json"
    before = target.read_text()
    refused = run_cli("scaffold-fixture", str(folder))
    assert refused.returncode == 2
    assert "already exists" in refused.stderr and "--force" in refused.stderr
    assert target.read_text() == before
    forced = run_cli("scaffold-fixture", str(folder), "--force")
    assert forced.returncode == 0, forced.stderr
    assert json.loads(target.read_text())["eval_kind"] == "scaffold"


def test_scaffold_fixture_output_paths(tmp_path: Path) -> None:
    folder = realistic_tree(tmp_path)["static"]
    other = folder / "evals" / "agentic_eval.first.json"
    result = run_cli("scaffold-fixture", str(folder), "--output", str(other))
    assert result.returncode == 0, result.stderr
    assert json.loads(other.read_text())["cases"][0]["command"][-1] == ".."
    outside = run_cli("scaffold-fixture", str(folder), "--output", str(tmp_path / "x.json"))
    assert outside.returncode == 2 and "must be inside" in outside.stderr
    not_a_skill = run_cli("scaffold-fixture", str(tmp_path / "docs"))
    assert not_a_skill.returncode == 2 and "no SKILL.md" in not_a_skill.stderr


def skill_files(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["plain", "force"])
@pytest.mark.parametrize("output", ["SKILL.md", "run.sh", "fixtures/regressions.json",
                                    "fixtures/agentic_eval.json"])
def test_scaffold_fixture_never_replaces_a_file_of_the_skill(
    tmp_path: Path, output: str, force: list[str]
) -> None:
    folder = make(tmp_path, "greeter", files={
        "run.sh": RUN_SH, "fixtures/regressions.json": json.dumps({"regressions": []})})
    # The default place, fixtures/agentic_eval.json, a link to the skill's SKILL.md.
    (folder / "fixtures" / "agentic_eval.json").symlink_to("../SKILL.md")
    before = skill_files(folder)
    named = ["--output", str(folder / output)] if output != "fixtures/agentic_eval.json" else []
    result = run_cli("scaffold-fixture", str(folder), *named, *force)
    assert result.returncode == 2, result.stderr
    assert "is not a fixture" in result.stderr and "not replaced, even with --force" in \
        result.stderr
    assert skill_files(folder) == before


def test_scaffold_fixture_writes_nothing_outside_the_skill_through_a_link(
    tmp_path: Path,
) -> None:
    folder = make(tmp_path, "greeter", files={"run.sh": RUN_SH})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "agentic_eval.json").write_text(json.dumps(skill_fixture()))
    (folder / "fixtures").symlink_to(elsewhere)
    before = skill_files(elsewhere)
    result = run_cli("scaffold-fixture", str(folder), "--force")
    assert result.returncode == 2
    assert "must be inside" in result.stderr and "through a symbolic link" in result.stderr
    assert skill_files(elsewhere) == before


def test_scaffold_fixture_force_replaces_an_earlier_fixture(tmp_path: Path) -> None:
    folder = make(tmp_path, "greeter", files={"run.sh": RUN_SH})
    target = folder / "evals" / "first.json"
    assert run_cli("scaffold-fixture", str(folder), "--output", str(target)).returncode == 0
    target.write_text(json.dumps(skill_fixture(trials=1)))  # rejected: still a fixture
    forced = run_cli("scaffold-fixture", str(folder), "--output", str(target), "--force")
    assert forced.returncode == 0, forced.stderr
    assert json.loads(target.read_text())["eval_kind"] == "scaffold"


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["plain", "force"])
def test_apply_scaffolds_never_writes_through_a_link_out_of_the_skill(
    tmp_path: Path, force: list[str]
) -> None:
    root = tmp_path / "skills"
    other = make(root, "other", files={"run.sh": RUN_SH,
                                       "fixtures/agentic_eval.json": json.dumps(skill_fixture())})
    linked = make(root, "linked", files={"run.sh": RUN_SH})
    (linked / "fixtures").symlink_to("../other/fixtures")  # another skill's fixtures
    dangling = make(root, "dangling", files={"run.sh": RUN_SH, "fixtures/.keep": ""})
    (dangling / "fixtures" / "agentic_eval.json").symlink_to(tmp_path / "outside.json")
    before = skill_files(other)
    result = run_cli("apply-scaffolds", str(root), "--write", *force)
    assert result.returncode == 0, result.stderr
    receipt = json.loads(result.stdout)
    assert receipt["created"] == []
    skipped = {entry["skill"]: entry["reason"] for entry in receipt["skipped"]}
    assert "must be inside" in skipped["linked"] and "must be inside" in skipped["dangling"]
    assert skill_files(other) == before
    assert not (tmp_path / "outside.json").exists()


def fixtures_under(root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in root.rglob("agentic_eval.json")}


def test_apply_scaffolds_is_a_dry_run_by_default(tmp_path: Path) -> None:
    realistic_tree(tmp_path)
    before = fixtures_under(tmp_path)
    receipt_path = tmp_path / "receipt.json"
    result = run_cli("apply-scaffolds", str(tmp_path), "--output", str(receipt_path))
    assert result.returncode == 0, result.stderr
    receipt = json.loads(result.stdout)
    assert json.loads(receipt_path.read_text()) == receipt
    assert fixtures_under(tmp_path) == before
    assert receipt["mode"] == "dry_run" and receipt["created"] == []
    assert len(receipt["dry_run"]) == 7
    skipped = {entry["skill"]: entry["reason"] for entry in receipt["skipped"]}
    assert set(skipped) == {"writing/greeter", "writing/lazy", "docs/glossary"}
    assert "eval_not_required" in skipped["docs/glossary"]


def test_apply_scaffolds_writes_missing_fixtures_only(tmp_path: Path) -> None:
    tree = realistic_tree(tmp_path)
    accepted = (tree["accepted"] / "fixtures" / "agentic_eval.json").read_text()
    rejected = (tree["rejected"] / "fixtures" / "agentic_eval.json").read_text()
    limited = run_cli("apply-scaffolds", str(tmp_path), "--write", "--limit", "2")
    assert limited.returncode == 0, limited.stderr
    receipt = json.loads(limited.stdout)
    assert [entry["skill"] for entry in receipt["created"]] == ["docs/style-guide",
                                                                "misc/broken-yaml"]
    assert receipt["summary"] == {"created": 2, "skipped": 8, "dry_run": 0, "errors": 0}
    rest = json.loads(run_cli("apply-scaffolds", str(tmp_path), "--write").stdout)
    assert len(rest["created"]) == 5
    assert (tree["accepted"] / "fixtures" / "agentic_eval.json").read_text() == accepted
    assert (tree["rejected"] / "fixtures" / "agentic_eval.json").read_text() == rejected
    again = json.loads(run_cli("apply-scaffolds", str(tmp_path), "--write").stdout)
    assert again["created"] == [] and len(again["skipped"]) == 10
    # --force rewrites earlier scaffolds only, never the user's fixtures.
    forced = json.loads(run_cli("apply-scaffolds", str(tmp_path), "--write", "--force").stdout)
    assert len(forced["created"]) == 7
    assert {entry["skill"] for entry in forced["skipped"]} == {
        "writing/greeter", "writing/lazy", "docs/glossary"}
    assert (tree["rejected"] / "fixtures" / "agentic_eval.json").read_text() == rejected
    bad = run_cli("apply-scaffolds", str(tmp_path), "--limit", "0")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_apply_then_pytest_runs_every_scaffolded_case(tmp_path: Path) -> None:
    tree = realistic_tree(tmp_path)
    # The rejected fixture would stop collection; it is the user's to fix, not this test's.
    (tree["rejected"] / "fixtures" / "agentic_eval.json").unlink()
    applied = json.loads(run_cli("apply-scaffolds", str(tmp_path), "--write").stdout)
    created = {entry["fixture"] for entry in applied["created"]}
    assert len(created) == 8
    report_path = tmp_path / "session.json"
    env = child_env()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--agentic-evals",
         "--agentic-evals-allow-exempt", str(tmp_path), "--agentic-evals-report",
         str(report_path)],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300,
        stdin=subprocess.DEVNULL,
    )
    report = json.loads(report_path.read_text())
    ran = {entry["fixture"]: entry for entry in report["fixtures"]}
    assert created <= set(ran), result.stdout
    for fixture in created:
        for case in ran[fixture]["cases"]:
            assert case["ran_trials"] == 2, (fixture, case["name"])
    outcomes = {(fixture, case["name"]): case["outcome"]
                for fixture in created for case in ran[fixture]["cases"]}
    failed = {key for key, outcome in outcomes.items() if outcome != "PASS"}
    # The static check is real: the skills whose SKILL.md is broken fail it, and only they.
    assert failed == {(f"misc/{name}/fixtures/agentic_eval.json", "skill-md-contract")
                      for name in ("broken-yaml", "terse", "old-folder-name")}
    assert ("ops/deploy/checker/fixtures/agentic_eval.json", "sanity") in outcomes
    assert result.returncode == 1  # the broken skills keep the session from READY
    audit = by_path(json.loads(run_cli("audit-skills", str(tmp_path)).stdout))
    for fixture in created:
        skill = fixture.removesuffix("/fixtures/agentic_eval.json")
        assert audit[skill]["posture"] == "scaffold_only", skill
        assert "EVAL002" in codes(audit[skill])
    assert audit["writing/greeter"]["posture"] == "accepted_fixture"


# Pure core.

def test_frontmatter_problems_are_findings(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    cases = {
        "# no frontmatter\n": "SKILL001",
        "---\nname: s\n": "SKILL002",
        "---\n- a list\n---\n": "SKILL002",
        "---\n---\n": "SKILL002",
        "---\nname: s\ndescription: [unclosed\n---\n": "SKILL002",
        "---\nname: 3\ndescription: d\n---\n": "SKILL003",
        "---\ndescription: d\n---\n": "SKILL003",
    }
    for text, code in cases.items():
        (folder / "SKILL.md").write_text(text)
        found = [finding.code for finding in skills.parse_skill_md(folder).findings]
        assert found == [code], text
    (folder / "SKILL.md").write_text("\ufeff---\r\nname: s\r\ndescription: d\r\n---\r\n")
    parsed = skills.parse_skill_md(folder)
    assert parsed.findings == [] and parsed.name == "s"


def test_eval_not_required_needs_a_reason() -> None:
    assert skills.eval_not_required_reason({"eval_not_required": True}) is None
    assert skills.eval_not_required_reason({"metadata": {"eval_not_required": " "}}) is None
    assert skills.eval_not_required_reason({"metadata": {"eval_not_required": "docs"}}) == "docs"
    assert skills.eval_not_required_reason({"eval_not_required": "prose"}) == "prose"


def test_discovery_prunes_and_sorts(tmp_path: Path) -> None:
    realistic_tree(tmp_path)
    make(tmp_path, "writing/greeter/sub-skill")  # a skill inside a skill is found too
    make(tmp_path, "pkg.egg-info/x")
    found = [s.path.relative_to(tmp_path).as_posix() for s in skills.discover(tmp_path)]
    assert found == sorted(found)
    assert "writing/greeter/sub-skill" in found
    assert not any(part in path for path in found
                   for part in (".git", "node_modules", ".venv", "myenv", "__pycache__", "egg"))


def test_audit_flags_two_skills_with_the_same_name(tmp_path: Path) -> None:
    make(tmp_path, "science/taxonomy")
    make(tmp_path, "library/taxonomy")
    make(tmp_path, "library/catalogue")
    result = run_cli("audit-skills", str(tmp_path))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    entries = by_path(report)
    for path, other in (("science/taxonomy", "library/taxonomy"),
                        ("library/taxonomy", "science/taxonomy")):
        (finding,) = [f for f in entries[path]["findings"] if f["code"] == "SKILL006"]
        assert finding["file"] == f"{path}/SKILL.md" and finding["pointer"] == "/name"
        assert finding["message"].startswith(f"name 'taxonomy' is also the name of {other}")
        assert entries[path]["recommended_action"].startswith("fix_skill_md")
    assert "SKILL006" not in codes(entries["library/catalogue"])
    assert report["summary"]["findings"]["SKILL006"] == 2
    table = run_cli("audit-skills", str(tmp_path), "--format", "table").stdout
    assert any(line.split()[0] == "science/taxonomy" and "SKILL006" in line
               for line in table.splitlines())


# -- the scaffold receipt, in the core, without the command -----------------------------------


def test_the_receipt_of_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    realistic_tree(tmp_path)
    before = fixtures_under(tmp_path)
    receipt = skills.apply_scaffolds(tmp_path, write=False, force=False, limit=None)
    assert fixtures_under(tmp_path) == before
    assert receipt["mode"] == "dry_run"
    assert receipt["summary"] == {"created": 0, "skipped": 3, "dry_run": 7, "errors": 0}


def test_the_receipt_stops_at_the_limit_in_path_order(tmp_path: Path) -> None:
    realistic_tree(tmp_path)
    receipt = skills.apply_scaffolds(tmp_path, write=True, force=False, limit=1)
    assert [entry["skill"] for entry in receipt["created"]] == ["docs/style-guide"]
    beyond = [entry for entry in receipt["skipped"] if entry["reason"] == "beyond --limit 1"]
    assert len(beyond) == 6
    written = load_fixture(tmp_path / "docs/style-guide/fixtures/agentic_eval.json",
                           accept_exemptions=True)
    assert written.eval_kind == "scaffold"


def test_a_scaffold_that_cannot_be_written_is_an_error_in_the_receipt(tmp_path: Path) -> None:
    skill = make(tmp_path, "docs/style-guide")
    (skill / "fixtures").write_text("a file where the fixtures folder would go\n")
    receipt = skills.apply_scaffolds(tmp_path, write=True, force=False, limit=None)
    assert receipt["created"] == []
    assert [entry["fixture"] for entry in receipt["errors"]] == [
        "docs/style-guide/fixtures/agentic_eval.json"]


def test_a_skill_read_at_its_path_is_the_one_discovery_finds(tmp_path: Path) -> None:
    tree = realistic_tree(tmp_path)
    found = {skill.path: skill for skill in skills.discover(tmp_path)}
    for path in tree.values():
        assert skills.skill_at(path) == found[path]
