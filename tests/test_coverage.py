"""Risk-based coverage through the real CLI: fixtures that game coverage get the verdict they
deserve, an honest one is COVERED, and nothing is executed."""

from __future__ import annotations

import copy
import json
import shutil
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.evidence.qualification import is_success_prose, oracle
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.fixture import FixtureError

from conftest import Skill, run_cli, skill_fixture

REDACTOR = Path(__file__).parent / "data" / "redactor" / "redact.py"
GREETING = {"seam_id": "greeting", "seam_type": "router", "criticality": "critical",
            "required_evidence": ["deterministic"]}


def greets(name: str, **extra: Any) -> dict[str, Any]:
    case = {"name": name, "type": "positive", "real_world": True,
            "command": ["bash", "../run.sh", "Ada"],
            "expected": {"exit_code": 0, "stdout_contains": ["hello, Ada"]}, "seams": ["greeting"]}
    case.update(extra)
    return case


def seamed(cases: list[dict[str, Any]], seams: list[dict[str, Any]] | None = None,
           **top: Any) -> dict[str, Any]:
    data = skill_fixture(**top)
    data["seams"] = seams if seams is not None else [GREETING]
    data["cases"] = [*cases, data["cases"][1]]  # keep the negative case the contract wants
    return data


def coverage(*args: str, cwd: Path | None = None) -> tuple[int, dict[str, Any], str]:
    result = run_cli("coverage", *args, "--json", cwd=cwd)
    report = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.returncode, report, result.stderr


def only_fixture(report: dict[str, Any]) -> dict[str, Any]:
    [skill] = report["skills"]
    [fixture] = skill["fixtures"]
    return dict(fixture)


def test_an_honest_seam_is_covered(skill: Skill) -> None:
    skill.write(seamed([greets("greets")]))
    code, report, _ = coverage("show", str(skill.root))
    fixture = only_fixture(report)
    assert (code, report["verdict"], fixture["verdict"]) == (0, "COVERED", "COVERED")
    [seam] = fixture["seams"]
    assert seam["status"] == "covered"
    assert seam["covered"] == {"deterministic": ["greets"]}
    assert seam["live_coverage"] == [] and seam["deterministic_coverage"] == ["deterministic"]
    assert report["schema"] == "agentic_evals.coverage.v1" and report["executed"] is False


def test_many_bare_exit_zero_cases_are_weak_only(skill: Skill) -> None:
    bare = [greets(f"smoke-{i}", expected={"exit_code": 0}) for i in range(12)]
    skill.write(seamed(bare))
    code, report, _ = coverage("show", str(skill.root))
    fixture = only_fixture(report)
    [seam] = fixture["seams"]
    assert (code, fixture["verdict"], seam["status"]) == (1, "CRITICAL_GAP", "weak_only")
    assert fixture["weak_only_seams"] == ["greeting"]
    assert fixture["prioritized_next_evals"][0]["evidence_class"] == "deterministic"


def test_checking_a_word_of_the_own_argv_or_success_prose_is_weak(skill: Skill) -> None:
    echoed = greets("echoed", expected={"exit_code": 0, "stdout_contains": ["Ada"]})
    prose = greets("prose", expected={"exit_code": 0, "stdout_contains": ["OK"]})
    skill.write(seamed([echoed, prose]))
    code, report, _ = coverage("show", str(skill.root))
    [seam] = only_fixture(report)["seams"]
    assert (code, seam["status"]) == (1, "weak_only")
    reasons = {c["case"]: c["weak_reasons"] for c in seam["cases"]}
    assert "own argv" in reasons["echoed"][0] and "success prose" in reasons["prose"][0]


def test_checking_what_the_commands_own_programs_print_is_weak(skill: Skill) -> None:
    """``echo $NAME`` prints the greeting's name whatever the skill does: a check of it can
    never fail, though the text is in no word of the argv."""
    script = 'bash ../run.sh "$NAME" && echo "hello, $NAME"'
    printed = greets("printed", command=["bash", "-c", script], env={"NAME": "Ada"})
    skill.write(seamed([printed]))
    code, report, _ = coverage("show", str(skill.root))
    [seam] = only_fixture(report)["seams"]
    assert (code, seam["status"]) == (1, "weak_only")
    [reasons] = [c["weak_reasons"] for c in seam["cases"] if c["case"] == "printed"]
    assert "the command's own programs print it" in reasons[0], reasons


def test_a_guard_that_never_runs_the_skill_guards_nothing(skill: Skill) -> None:
    """`stat` of a path that is not there exits 1 every time: a check that can fail, of a
    command that never reaches the skill."""
    elsewhere = {"name": "guard-elsewhere", "type": "negative", "seams": ["greeting"],
                 "command": ["stat", "/nonexistent-path-for-a-guard"],
                 "expected": {"exit_code": 1}}
    skill.write(seamed([greets("smoke", expected={"exit_code": 0}), elsewhere]))
    code, report, _ = coverage("show", str(skill.root))
    [seam] = only_fixture(report)["seams"]
    assert (code, seam["status"]) == (1, "weak_only"), seam
    reasons = {c["case"]: c.get("weak_reasons") for c in seam["cases"]}
    assert reasons["guard-elsewhere"][0].startswith("its command reaches no code of the skill")


def test_a_case_naming_an_undeclared_seam_is_invalid_input(skill: Skill) -> None:
    skill.write(seamed([greets("greets"), greets("stray", seams=["greting"])]))
    code, _, stderr = coverage("show", str(skill.root))
    assert code == 2
    assert "names seam 'greting', which the fixture does not declare" in stderr
    # In an audit the skill is reported as invalid and the root is not clean.
    code, report, _ = coverage("audit", str(skill.root.parent))
    assert (code, report["verdict"], report["skills"][0]["verdict"]) == (1, "INVALID", "INVALID")


def test_duplicate_seam_ids_and_unknown_keys_are_refused_at_load(skill: Skill) -> None:
    path = skill.write(seamed([greets("greets")], [GREETING, {**GREETING, "risk": "x"}]))
    with pytest.raises(FixtureError) as error:
        load_fixture(path)
    text = error.value.describe()
    assert "duplicate seam_id 'greeting'" in text and "unknown key 'risk'" in text
    bad_class = copy.deepcopy(GREETING) | {"required_evidence": ["vibes"]}
    with pytest.raises(FixtureError, match="vibes"):
        load_fixture(skill.write(seamed([greets("greets")], [bad_class])))


def test_a_seam_covered_only_by_a_downgraded_pseudo_live_case_is_uncovered(skill: Skill) -> None:
    live_seam = {**GREETING, "required_evidence": ["deterministic", "live_e2e"]}
    pseudo = greets("pseudo-live", evidence_class="live_e2e")
    skill.write(seamed([greets("greets"), pseudo], [live_seam]))
    code, report, _ = coverage("show", str(skill.root))
    fixture = only_fixture(report)
    [seam] = fixture["seams"]
    assert (code, fixture["verdict"], seam["status"]) == (1, "CRITICAL_GAP", "uncovered")
    assert seam["uncovered"] == ["live_e2e"] and seam["live_coverage"] == []
    assert seam["downgraded_live_cases"] == ["pseudo-live"]
    downgraded = next(c for c in seam["cases"] if c["case"] == "pseudo-live")
    assert downgraded["declared_class"] == "live_e2e" and downgraded["class"] != "live_e2e"
    assert downgraded["evidence_disqualifiers"]


def test_a_missing_non_critical_seam_is_a_gap_not_a_critical_one(skill: Skill) -> None:
    optional = {"seam_id": "locale", "criticality": "optional",
                "required_evidence": ["property_or_fuzz"]}
    skill.write(seamed([greets("greets")], [GREETING, optional]))
    code, report, _ = coverage("show", str(skill.root))
    fixture = only_fixture(report)
    assert (code, fixture["verdict"], fixture["uncovered_seams"]) == (0, "GAPS", ["locale"])


def test_criticality_is_one_of_three_words_and_missing_means_critical(skill: Skill) -> None:
    # docs/commands/coverage.md: another word is refused when the fixture loads...
    skill.write(seamed([greets("greets")], [{**GREETING, "criticality": "high"}]))
    code, _, stderr = coverage("show", str(skill.root))
    assert code == 2
    assert "/seams/0/criticality: 'high' is not one of" in stderr
    # ...and a seam that names none is judged critical, with a finding that says so.
    unnamed = {key: value for key, value in GREETING.items() if key != "criticality"}
    skill.write(seamed([greets("greets")], [unnamed]))
    code, report, _ = coverage("show", str(skill.root))
    [seam] = only_fixture(report)["seams"]
    assert (code, seam["criticality"]) == (0, "critical")
    assert [f["code"] for f in seam["findings"]] == ["unknown_criticality"]


# --------------------------------------------------------------------------------------------
# The value-representation rule
# --------------------------------------------------------------------------------------------

CLAIM = {"id": "no-phone-in-output",
         "description": "no phone number reaches the output in any representation",
         "criticality": "critical", "claim_semantics": "value_bearing",
         "domain_profile": "json-scalar-v1", "evidence_required": {"deterministic": True}}
PHONES = {"string": '"555-0100"', "integer": "5550100", "float": "5550100.0",
          "scientific": "5.5501e6"}


def redactor_fixture(value_seam: bool) -> dict[str, Any]:
    cases: list[dict[str, Any]] = []
    for representation, phone in PHONES.items():
        cases.append({
            "name": f"{representation}-redacted", "type": "adversarial",
            "representation": representation, "supports_claims": [CLAIM["id"]],
            "command": ["python3", "../redact.py", "input/records.json", "out/redacted.json"],
            "artifacts": [{"path": "input/records.json",
                           "content": f'[{{"name": "Ada", "phone": {phone}}}]'}],
            "expected": {"exit_code": 0, "artifacts": [
                {"path": "out/redacted.json", "json_pointer": "/0/phone",
                 "equals": "[REDACTED]"}]},
        })
    cases[0] = {**cases[0], "type": "positive", "real_world": True}
    cases.append({"name": "unreadable-input-refused", "type": "negative",
                  "command": ["python3", "../redact.py", "input/missing.json", "out/x.json"],
                  "expected": {"exit_code": 1, "stderr_contains": ["cannot read"]}})
    seams = [{"seam_id": "output-format", "criticality": "important"}]
    if value_seam:
        seams.append({"seam_id": "value-representation", "seam_type": "transform",
                      "criticality": "critical", "required_evidence": ["deterministic"]})
        for case in cases[:4]:
            case["seams"] = ["value-representation"]
    cases[0]["seams"] = [*cases[0].get("seams", []), "output-format"]
    return {"version": 2, "skill": "redactor", "trials": 2, "capability_claims": [CLAIM],
            "seams": seams, "cases": cases}


@pytest.fixture
def redactor(tmp_path: Path) -> Path:
    root = tmp_path / "redactor"
    (root / "fixtures").mkdir(parents=True)
    shutil.copy(REDACTOR, root / "redact.py")
    (root / "SKILL.md").write_text("---\nname: redactor\ndescription: redacts\n---\n")
    return root


@pytest.mark.parametrize(("value_seam", "code", "verdict"), [
    (False, 1, "CRITICAL_GAP"),
    (True, 0, "COVERED"),
])
def test_a_value_pipeline_needs_the_value_representation_seam(
    redactor: Path, value_seam: bool, code: int, verdict: str
) -> None:
    (redactor / "fixtures" / "agentic_eval.json").write_text(
        json.dumps(redactor_fixture(value_seam)))
    got, report, stderr = coverage("show", str(redactor))
    fixture = only_fixture(report)
    assert (got, fixture["verdict"]) == (code, verdict), stderr
    gap = fixture["value_representation"]["gap"]
    assert (gap is not None) == (not value_seam)
    if not value_seam:
        assert "no 'value-representation' seam" in gap


# --------------------------------------------------------------------------------------------
# Audit, registries, the table
# --------------------------------------------------------------------------------------------


def test_audit_takes_the_worst_skill_and_an_invalid_registry_is_not_zero(tmp_path: Path) -> None:
    good = Skill(tmp_path / "tree" / "good")
    good.write(seamed([greets("greets")]))
    weak = Skill(tmp_path / "tree" / "weak")
    weak.write(seamed([greets("smoke", expected={"exit_code": 0})]))
    code, report, _ = coverage("audit", str(tmp_path / "tree"))
    verdicts = {Path(s["skill_dir"]).name: s["verdict"] for s in report["skills"]}
    assert verdicts == {"good": "COVERED", "weak": "CRITICAL_GAP"}
    assert (code, report["verdict"]) == (1, "CRITICAL_GAP")

    (good.fixtures / "regressions.json").write_text('{"regressions": 3}')
    _, report, _ = coverage("audit", str(tmp_path / "tree"))
    entry = next(s for s in report["skills"] if s["skill_dir"].endswith("good"))
    assert entry["registry"]["valid"] is False and entry["verdict"] == "INVALID"


def test_the_table_and_output_file(skill: Skill, tmp_path: Path) -> None:
    skill.write(seamed([greets("smoke", expected={"exit_code": 0})]))
    out = tmp_path / "coverage.json"
    result = run_cli("coverage", "show", str(skill.root), "--output", str(out))
    assert result.returncode == 1
    assert "greeting" in result.stdout and "weak_only" in result.stdout
    assert "CRITICAL_GAP" in result.stdout and "next: greeting (critical)" in result.stdout
    assert json.loads(out.read_text())["verdict"] == "CRITICAL_GAP"


# --------------------------------------------------------------------------------------------
# Pure
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "prose"), [
    ("OK", True), ("All tests passed ✓", True), ("done.", True), ("", True),
    ("hello, Ada", False), ("[REDACTED]", False), ("ok: 3 records", False),
])
def test_success_prose(text: str, prose: bool) -> None:
    assert is_success_prose(text) is prose


@pytest.mark.parametrize(("expected", "kind", "capable"), [
    ({"exit_code": 0}, "positive", False),
    ({"exit_code": 0, "stdout_contains": ["success"]}, "positive", False),
    ({"exit_code": 0, "stdout_contains": ["Ada"]}, "positive", False),
    ({"exit_code": 0, "stdout_excludes": ["Traceback"]}, "positive", False),
    # An exclusion checks something only when the trial gives the command that text.
    ({"exit_code": 0, "stdout_excludes": ["555-0100"]}, "positive", False),
    ({"exit_code": 0, "stderr_excludes": ["Ada"]}, "positive", True),
    ({"exit_code": 0, "stdout_contains": ["hello, Ada"]}, "positive", True),
    ({"exit_code": 2}, "negative", True),
    ({"exit_code": 0, "stderr_contains": ["warning: skipped"]}, "adversarial", True),
    ({"exit_code": 0, "artifacts": [{"path": "o", "exists": True, "optional": True}]},
     "positive", False),
    ({"exit_code": 0, "artifacts": [{"path": "o", "excludes": ["555-0100"]}]}, "positive", True),
    ({"exit_code": 0, "artifacts": [{"path": "o", "lines_exclude": ["Traceback", "ERROR"]}]},
     "positive", False),
    ({"exit_code": 0, "artifacts": [{"path": "o", "excludes": ["Error"], "min_bytes": 1}]},
     "positive", True),
    ({"exit_code": 0, "stdout_equals": "hello, Ada\n"}, "positive", True),
    ({"exit_code": 0, "stdout_equals": "OK\n"}, "positive", False),
    ({"exit_code": 0, "stderr_equals": ""}, "positive", False),
])
def test_oracle_on_substance(skill: Skill, expected: dict[str, Any], kind: str,
                             capable: bool) -> None:
    data = skill_fixture()
    data["cases"][0].update(type=kind, expected=expected)
    if kind != "positive":
        data["cases"].insert(0, greets("greets-too", seams=[]))
    fixture = load_fixture(skill.write(data))
    case = next(c for c in fixture.cases if c.expected == expected)
    assert oracle(case)[0] is capable


def test_mapped_regressions_and_freshness_are_apart_from_coverage(skill: Skill) -> None:
    skill.write(seamed([greets("greets")]))
    old = (date.today() - timedelta(days=90)).isoformat()
    proof = {"proof_command": ["agentic-evals", "run", "agentic_eval.json", "--case", "greets"],
             "env": {"GREETER_OLD_BUG": "1"},
             "expected": {"exit_code": 1, "stdout_contains": ["'hello, Ada' not found"]}}
    records = [{"regression_id": rid, "claim_ids": [], "seam_ids": ["greeting"],
                "retained_case": "greets", "detection_date": "2026-01-10",
                "fix_date": "2026-01-11", "fail_before_fix": proof, **extra}
               for rid, extra in (("name-dropped", {"last_proven": old}), ("never", {}))]
    (skill.fixtures / "regressions.json").write_text(json.dumps(
        {"schema": "agentic_evals.regressions.v1", "skill": "greeter", "regressions": records}))
    code, report, stderr = coverage("show", str(skill.root))
    [seam] = only_fixture(report)["seams"]
    assert report["skills"][0]["registry"]["valid"] is True, report["skills"][0]["registry"]
    assert seam["regressions_mapped"] == ["name-dropped", "never"]
    assert seam["freshness"]["status"] == "stale"
    assert seam["freshness"]["stale_regressions"] == ["name-dropped", "never"]
    # Stale proofs do not touch coverage: the seam is still covered and the gate open.
    assert (code, seam["status"], report["verdict"]) == (0, "covered", "COVERED"), stderr


LIVE_GREETING = {**GREETING, "required_evidence": ["deterministic", "live_e2e"]}


def live_companion(*cases: dict[str, Any], **top: Any) -> dict[str, Any]:
    """agentic_eval_live.json as the earlier tool kept it: the skill's live cases, naming the
    seams agentic_eval.json declares."""
    data = skill_fixture(**top)
    data["cases"] = [*cases, data["cases"][1]]
    return data


def greets_live(name: str, **extra: Any) -> dict[str, Any]:
    return greets(name, evidence_class="live_e2e",
                  command=["bash", "-c", "../run.sh Ada > greeting.txt"],
                  expected={"exit_code": 0,
                            "artifacts": [{"path": "greeting.txt", "equals": "hello, Ada\n"}]},
                  **extra)


def test_a_live_companion_guards_the_seams_of_its_main_fixture(skill: Skill) -> None:
    skill.write(seamed([greets("greets")], seams=[LIVE_GREETING]))
    # Alone, the main fixture lacks the live class its seam requires.
    code, report, _ = coverage("show", str(skill.root))
    assert (code, only_fixture(report)["verdict"]) == (1, "CRITICAL_GAP")

    skill.write(live_companion(greets_live("greets-live")), name="agentic_eval_live.json")
    code, report, stderr = coverage("show", str(skill.root))
    assert code == 0, (report, stderr)
    [skill_entry] = report["skills"]
    main, companion = skill_entry["fixtures"]
    assert main["companion"].endswith("fixtures/agentic_eval_live.json")
    [seam] = main["seams"]
    assert seam["covered"] == {"deterministic": ["greets"], "live_e2e": ["greets-live"]}
    [from_companion] = [c for c in seam["cases"] if c["case"] == "greets-live"]
    assert from_companion["fixture"] == main["companion"] == companion["fixture"]
    assert companion["merged_into"] == main["fixture"]
    assert report["verdict"] == "COVERED"


def test_a_live_companion_may_only_name_seams_one_of_the_two_declares(skill: Skill) -> None:
    skill.write(seamed([greets("greets")], seams=[LIVE_GREETING]))
    path = skill.write(live_companion(greets_live("greets-live", seams=["farewell"])),
                       name="agentic_eval_live.json")
    with pytest.raises(FixtureError) as caught:
        load_fixture(path)
    assert ("case 'greets-live' names seam 'farewell', which the fixture does not declare "
            "(declared here and by its main fixture: greeting)") in str(caught.value)
    assert isinstance(load_fixture(skill.write(
        live_companion(greets_live("greets-live")), name="agentic_eval_live.json")).cases, tuple)
    (skill.fixtures / "agentic_eval.json").write_text("{not json")
    with pytest.raises(FixtureError) as caught:
        load_fixture(path)
    assert str(caught.value).endswith(
        f"(declared: none); its main fixture {skill.fixtures / 'agentic_eval.json'} cannot be "
        "read")


@pytest.mark.parametrize("kind", ["scaffold", "runner_selftest"])
def test_a_fixture_exempt_from_the_contract_guards_no_seam(skill: Skill, kind: str) -> None:
    """Its cases need not run the skill: ["false"] exiting 1 would otherwise cover a seam."""
    nothing = {"name": "escapes", "type": "negative", "seams": ["greeting"],
               "command": ["false"], "expected": {"exit_code": 1}}
    skill.write(seamed([greets("greets", seams=[])]))
    skill.write({"version": 2, "skill": "greeter", "eval_kind": kind, "trials": 2,
                 "cases": [nothing]}, name="agentic_eval_live.json")
    code, report, _ = coverage("show", str(skill.root))
    main = report["skills"][0]["fixtures"][0]
    assert (code, report["verdict"], main["seams"][0]["status"]) == (1, "CRITICAL_GAP",
                                                                     "uncovered")
    assert [f["code"] for f in main["findings"]].count("exempt_guards") == 1
    # The same in a fixture of its own, declaring the seam itself.
    (skill.fixtures / "agentic_eval_live.json").unlink()
    skill.write({"version": 2, "skill": "greeter", "eval_kind": kind, "trials": 2,
                 "seams": [GREETING], "cases": [nothing]})
    code, report, _ = coverage("show", str(skill.root))
    assert (code, report["verdict"]) == (1, "CRITICAL_GAP")
