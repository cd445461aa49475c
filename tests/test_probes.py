"""Vacuity probes: real skills, real stand-ins, the real command line.

Each oracle shape the probe must see through is a case of one small skill (a doubler and a
redactor written in bash); the whole fixture is probed once, and each test reads its part of
the report. Coverage and claims then use the stored results without running anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_agentic_evals.evidence.claims import capability_readiness
from pytest_agentic_evals.evidence.provenance import oracle_sha256, test_source_sha256
from pytest_agentic_evals.evidence.qualification import qualify
from pytest_agentic_evals.execution.sandbox import available_bwrap
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.model import PASS
from pytest_agentic_evals.probes import store
from pytest_agentic_evals.probes.mutants import ARGUMENT_PREFIXES, launcher_text
from pytest_agentic_evals.probes.runner import judge
from pytest_agentic_evals.probes.targets import GATING, LANGUAGES, MUTANTS, locate
from pytest_agentic_evals.schemas import schema_text

from conftest import child_env

DOUBLER = """#!/usr/bin/env bash
# Doubles the number in the file $1 into the file $2.
echo "Doubler v1 ready"
if [ ! -r "${1:-}" ]; then echo "error: unreadable input" >&2; exit 1; fi
n=$(cat "$1")
echo "result: $((n * 2))"
echo "$((n * 2))" > "$2"
"""
REDACTOR = """#!/usr/bin/env bash
# Copies $1 to $2 with every digit masked.
sed 's/[0-9]/X/g' "$1" > "$2"
"""
IN = [{"path": "in.txt", "content": "21\n"}]
PHONE = [{"path": "card.txt", "content": "call 555-0100\n"}]
MARKER = "bash run.sh in.txt out.txt && test -s out.txt && grep -q 42 out.txt && echo GATE_OK"


def case(name: str, kind: str, command: list[str], expected: dict[str, Any],
         **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, "command": command, "expected": expected, **extra}


def doubler_fixture() -> dict[str, Any]:
    return {
        "version": 2, "skill": "doubler", "trials": 2,
        "seams": [{"seam_id": "doubling", "seam_type": "transform", "criticality": "critical"},
                  {"seam_id": "refusal", "seam_type": "validation", "criticality": "critical"}],
        "cases": [
            case("exit-only", "positive", ["bash", "run.sh", "in.txt", "out.txt"],
                 {"exit_code": 0}, artifacts=IN),
            case("value", "positive", ["bash", "run.sh", "in.txt", "out.txt"],
                 {"exit_code": 0, "stdout_contains": ["result: 42"],
                  "artifacts": [{"path": "out.txt", "equals": "42\n"}]},
                 artifacts=IN, real_world=True),
            case("refuses-nonzero", "negative", ["bash", "run.sh", "missing.txt", "out.txt"],
                 {"exit_code": 1}, seams=["refusal"]),
            case("redacts-exists", "adversarial", ["bash", "redact.sh", "card.txt", "red.txt"],
                 {"exit_code": 0, "artifacts": [{"path": "red.txt", "exists": True}]},
                 artifacts=PHONE),
            case("redacts-value", "adversarial", ["bash", "redact.sh", "card.txt", "red.txt"],
                 {"exit_code": 0, "artifacts": [{"path": "red.txt", "excludes": ["555-0100"],
                                                 "lines_contain": ["call"]}]},
                 artifacts=PHONE),
            case("banner", "positive", ["bash", "run.sh", "in.txt", "o2.txt"],
                 {"exit_code": 0, "stdout_contains": ["Doubler v1"]}, artifacts=IN),
            case("gate-marker", "positive", ["bash", "-c", MARKER],
                 {"exit_code": 0, "stdout_contains": ["GATE_OK"]}, artifacts=IN,
                 seams=["doubling"]),
        ],
    }


def make_skill(root: Path, data: dict[str, Any]) -> Path:
    root.mkdir(parents=True)
    for name, text in (("run.sh", DOUBLER), ("redact.sh", REDACTOR)):
        (root / name).write_text(text)
        (root / name).chmod(0o755)
    (root / "SKILL.md").write_text("---\nname: doubler\ndescription: doubles\n---\n")
    path = root / "agentic_eval.json"
    path.write_text(json.dumps(data, indent=2))
    return path


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    executable = Path(sys.executable).parent / "agentic-evals"
    base = child_env()
    return subprocess.run([str(executable), *args], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL, env={**base, **(env or {})})


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str, int]:
    root = tmp_path_factory.mktemp("probe") / "doubler"
    fixture = make_skill(root, doubler_fixture())
    before = hashlib.sha256((root / "run.sh").read_bytes()).hexdigest()
    out = root.parent / "probe.json"
    result = cli("probe", str(fixture), "--output", str(out))
    assert "Traceback" not in result.stderr, result.stderr
    # The real skill directory is never touched: stand-ins live in private copies only.
    assert hashlib.sha256((root / "run.sh").read_bytes()).hexdigest() == before
    return fixture, json.loads(out.read_text()), result.stdout, result.returncode


def statuses(report: dict[str, Any], name: str) -> dict[str, str]:
    [fixture] = report["fixtures"]
    entry = next(c for c in fixture["cases"] if c["name"] == name)
    return {m["mutant"]: m["status"] for m in entry["mutants"]}


def test_the_report_follows_its_schema_and_the_gate_says_no(probed: Any) -> None:
    _, report, stdout, status = probed
    jsonschema.validate(report, json.loads(schema_text("probe")))
    assert status == 1
    assert report["verdict"] == "FAILED"
    assert "case exit-only: oracle survived `noop`: its only checks are exit_code 0" in stdout
    [fixture] = report["fixtures"]
    assert 0 < fixture["mutation_score"] < 1
    assert any("refuses-nonzero" in f and "`crash`" in f for f in fixture["gate_failures"])


def test_an_exit_code_only_case_kills_nothing(probed: Any) -> None:
    found = statuses(probed[1], "exit-only")
    assert found["noop"] == "survived"
    assert "killed" not in {found[m] for m in MUTANTS if m != "crash"}


def test_a_case_checking_what_its_input_determines_kills_every_applicable_stand_in(
        probed: Any) -> None:
    found = statuses(probed[1], "value")
    assert set(found.values()) == {"killed"}, found
    [fixture] = probed[1]["fixtures"]
    entry = next(c for c in fixture["cases"] if c["name"] == "value")
    assert entry["mutation_score"] == 1
    noop = next(m for m in entry["mutants"] if m["mutant"] == "noop")
    assert any("result: 42" in reason for reason in noop["killed_by"])


def test_a_refusal_checking_only_a_non_zero_exit_survives_crash(probed: Any) -> None:
    assert statuses(probed[1], "refuses-nonzero")["crash"] == "survived"


def test_a_redactor_checking_only_that_its_output_exists_survives_passthrough(
        probed: Any) -> None:
    assert statuses(probed[1], "redacts-exists")["passthrough"] == "survived"
    assert statuses(probed[1], "redacts-value")["passthrough"] == "killed"


def test_an_oracle_matching_a_constant_banner_survives_replay(probed: Any) -> None:
    found = statuses(probed[1], "banner")
    assert found["replay"] == "survived"
    assert found["noop"] == found["crash"] == "killed"


def test_a_marker_printed_after_test_checks_is_killed_by_noop(probed: Any) -> None:
    found = statuses(probed[1], "gate-marker")
    assert found["noop"] == found["crash"] == "killed"


def test_results_are_stored_beside_the_fixture_by_identity(probed: Any) -> None:
    fixture_path = probed[0]
    data = json.loads((fixture_path.parent / store.FILENAME).read_text())
    record = data["fixtures"]["agentic_eval.json"]["cases"]["gate-marker"]
    fixture = load_fixture(fixture_path)
    gate = next(c for c in fixture.cases if c.name == "gate-marker")
    target, _ = locate(gate)
    assert target is not None and record["entrypoint_sha256"] == target.sha256
    assert store.load(fixture)["gate-marker"].state == store.FRESH


def coverage_seams(skill_dir: Path) -> dict[str, dict[str, Any]]:
    result = cli("coverage", "show", str(skill_dir), "--json")
    [skill] = json.loads(result.stdout)["skills"]
    [fixture] = skill["fixtures"]
    return {seam["seam_id"]: seam for seam in fixture["seams"]}


def test_coverage_uses_a_fresh_probe_both_ways_and_shows_a_stale_one(tmp_path: Path) -> None:
    data = doubler_fixture()
    data["cases"] = [c for c in data["cases"]
                     if c["name"] in ("value", "refuses-nonzero", "gate-marker")]
    fixture = make_skill(tmp_path / "doubler", data)
    before = coverage_seams(fixture.parent)
    # Statically, the marker is in the command's own argv: weak; a non-zero exit: capable.
    assert before["doubling"]["status"] == "weak_only"
    assert before["refusal"]["status"] == "covered"
    assert before["doubling"]["cases"][0]["oracle_source"] == "static"

    assert cli("probe", str(fixture)).returncode == 1  # refuses-nonzero survives crash
    after = coverage_seams(fixture.parent)
    assert after["doubling"]["status"] == "covered"
    assert after["doubling"]["cases"][0]["oracle_source"] == "probe"
    assert after["refusal"]["status"] == "weak_only"
    assert any("survived `crash`" in reason
               for reason in after["refusal"]["cases"][0]["weak_reasons"])
    table = cli("coverage", "show", str(fixture.parent)).stdout
    assert "oracle judged by a fresh probe" in table

    (fixture.parent / "run.sh").write_text(DOUBLER.replace("v1", "v2"))
    stale = coverage_seams(fixture.parent)
    assert stale["doubling"]["status"] == "weak_only"  # the static judgement is back
    guard = stale["doubling"]["cases"][0]
    assert guard["oracle_source"] == "static"
    assert guard["probe"]["state"] == "stale"
    assert guard["probe"]["stale_because"] == ["the skill's entrypoint changed"]
    table = cli("coverage", "show", str(fixture.parent)).stdout
    assert "stale probe result for gate-marker" in table


def forged_record(case: Any, mutants: dict[str, str]) -> dict[str, Any]:
    """What a skill can write beside its fixture: the case's identity hashes, which anyone can
    compute from the skill, and results no probe saw."""
    target, _ = locate(case)
    assert target is not None
    return {"test_source_sha256": test_source_sha256(case), "oracle_sha256": oracle_sha256(case),
            "entrypoint_sha256": target.sha256, "mutants": mutants,
            "probed_at": "2026-12-01T00:00:00+00:00"}


def test_a_probe_result_no_probe_here_sealed_is_never_used(tmp_path: Path) -> None:
    data = doubler_fixture()
    data["cases"] = [c for c in data["cases"]
                     if c["name"] in ("value", "refuses-nonzero", "gate-marker")]
    path = make_skill(tmp_path / "doubler", data)
    fixture = load_fixture(path)
    killed_all = {"noop": "killed", "crash": "killed", "echo-args": "killed",
                  "passthrough": "killed", "replay": "killed"}
    forged = {c.name: forged_record(c, killed_all) for c in fixture.cases}
    store_file = path.parent / store.FILENAME
    store_file.write_text(json.dumps({"schema": store.SCHEMA, "version": 1, "fixtures": {
        path.name: {"skill": "doubler", "cases": forged}}}))
    seams = coverage_seams(path.parent)
    assert seams["doubling"]["status"] == "weak_only"  # as without the file
    guard = seams["doubling"]["cases"][0]
    assert guard["oracle_source"] == "static"
    assert guard["probe"]["state"] == "stale"
    assert guard["probe"]["stale_because"] == [store.NOT_SEALED]

    # A real probe's record, sealed, with what it saw changed afterwards: not used either.
    assert cli("probe", str(path)).returncode == 1  # refuses-nonzero survives crash
    stored = json.loads(store_file.read_text())
    record = stored["fixtures"][path.name]["cases"]["refuses-nonzero"]
    assert record["mutants"]["crash"] == "survived" and record["seal"]
    assert coverage_seams(path.parent)["refusal"]["status"] == "weak_only"
    record["mutants"]["crash"] = "killed"
    store_file.write_text(json.dumps(stored))
    seams = coverage_seams(path.parent)
    assert seams["refusal"]["cases"][0]["probe"]["stale_because"] == [store.NOT_SEALED]
    assert seams["refusal"]["cases"][0]["oracle_source"] == "static"
    assert seams["doubling"]["cases"][0]["oracle_source"] == "probe"  # untouched: still used


def test_a_seal_made_with_another_accounts_key_is_not_this_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_agentic_evals import seals
    value = {"case": "greets", "mutants": {"noop": "killed"}}
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "elsewhere"))
    elsewhere = seals.seal(value)
    assert seals.is_sealed(value, elsewhere)
    assert not seals.is_sealed({**value, "case": "other"}, elsewhere)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "here"))
    assert not seals.is_sealed(value, elsewhere)  # no key here yet
    assert seals.seal(value) != elsewhere and not seals.is_sealed(value, elsewhere)
    assert oct((tmp_path / "here" / "agentic-evals" / seals.KEY_FILENAME).stat().st_mode)[-3:] \
        == "600"


def test_processes_that_make_the_key_at_once_agree_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each probe makes the account's key on first use; several at once must end with one key,
    # and none may read a key half written.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    script = ("from pytest_agentic_evals import seals; "
              "print(seals.seal({'case': 'greets'}))")
    starts = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for _ in range(8)]
    results = [process.communicate(timeout=60) for process in starts]
    assert all(process.returncode == 0 for process in starts), results
    assert len({stdout for stdout, _ in results}) == 1
    assert sorted(p.name for p in (tmp_path / "agentic-evals").iterdir()) == ["probe-key"]


def test_claims_take_a_fresh_probe_over_the_static_guess(tmp_path: Path) -> None:
    data = doubler_fixture()
    data["capability_claims"] = [{
        "id": "no-phone", "description": "no phone number reaches the output",
        "criticality": "critical", "evidence_required": {"deterministic": True},
        "claim_semantics": "value_bearing", "representations": ["string"]}]
    data["seams"].append({"seam_id": "value-representation", "seam_type": "transform",
                          "criticality": "critical"})
    for entry in data["cases"]:
        if entry["name"].startswith("redacts"):
            entry.update(supports_claims=["no-phone"], representation="string",
                         seams=["value-representation"])
    data["cases"] = [c for c in data["cases"] if c["name"] != "redacts-value"]
    path = make_skill(tmp_path / "doubler", data)
    fixture = load_fixture(path)
    outcomes = {c.name: PASS for c in fixture.cases}
    today = __import__("datetime").date(2026, 12, 4)
    static, _, _ = capability_readiness(fixture, outcomes, today)
    [row] = static["no-phone"]["representations"]["string"]
    assert row == {"case": "redacts-exists", "outcome": PASS, "can_fail": True,
                   "can_fail_source": "static"}
    assert cli("probe", str(path), "--case", "redacts-exists").returncode == 0
    probed, _, _ = capability_readiness(load_fixture(path), outcomes, today)
    [row] = probed["no-phone"]["representations"]["string"]
    assert row["can_fail"] is False and row["can_fail_source"] == "probe"
    assert probed["no-phone"]["verdict"] != "PROVEN"


def test_a_declared_program_is_shadowed_on_path_and_a_python_script_replaced(
        tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "triple-it"
    tool.write_text("#!/bin/sh\necho $(( $1 * 3 ))\n")
    tool.chmod(0o755)
    data = {
        "version": 2, "skill": "tripler", "trials": 2, "entrypoints": ["triple-it"],
        "cases": [
            case("triples", "positive", ["triple-it", "7"],
                 {"exit_code": 0, "stdout_matches": ["^21$"]}, real_world=True),
            case("python-tool", "positive", ["python3", "tool.py", "2"],
                 {"exit_code": 0, "stdout_contains": ["4"]}),
            case("no-args", "negative", ["python3", "tool.py"],
                 {"exit_code": 2, "stderr_contains": ["usage: tool.py N"]}),
        ],
    }
    root = tmp_path / "tripler"
    path = make_skill(root, data)
    (root / "tool.py").write_text(
        "import sys\nif len(sys.argv) < 2:\n    sys.exit('usage: tool.py N') if False else "
        "(sys.stderr.write('usage: tool.py N\\n'), sys.exit(2))\nprint(int(sys.argv[1]) * 2)\n")
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    result = cli("probe", str(path), "--json", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    for name in ("triples", "python-tool", "no-args"):
        found = statuses(report, name)
        assert all(found[m] == "killed" for m in GATING), (name, found)
    [fixture] = report["fixtures"]
    vias = {c["name"]: c["entrypoint"]["via"] for c in fixture["cases"]}
    assert vias == {"triples": "path", "python-tool": "python", "no-args": "python"}
    assert tool.read_text().startswith("#!/bin/sh\necho")  # the real program is untouched


def test_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    path = make_skill(tmp_path / "doubler", doubler_fixture())
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    for args in ((str(broken),), (str(path), "--case", "nope"),
                 (str(path), "--output", str(broken / "under-a-file.json")),
                 (str(path), "--output", str(path))):  # its own fixture
        result = cli("probe", *args)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr and result.stderr.strip()
    assert not (path.parent / store.FILENAME).exists()  # nothing ran


def test_a_stand_in_that_does_not_apply_is_never_counted_killed() -> None:
    failed = {"outcome": "FAIL", "problems": ["exit_code: expected 0, got 1"], "exit_code": 1}
    passed = {"outcome": "PASS", "problems": [], "exit_code": 0}
    assert judge("passthrough", failed, {"ran": True, "applicable": False}).status == \
        "not_applicable"
    # A command that passes without ever starting the stand-in does not depend on the skill.
    assert judge("noop", passed, {}).status == "survived"
    assert judge("noop", failed, {}).status == "inconclusive"
    assert judge("noop", {**failed, "infrastructure": True}, {"ran": True}).status == \
        "inconclusive"
    assert judge("crash", failed, {"ran": True}).status == "killed"


def test_the_pytest_option_runs_the_probe_as_items(pytester: pytest.Pytester) -> None:
    data = doubler_fixture()
    data["cases"] = [c for c in data["cases"]
                     if c["name"] in ("exit-only", "value", "refuses-nonzero")]
    fixture = make_skill(pytester.path / "doubler", data)
    report = pytester.path / "probe.json"
    result = pytester.runpytest_subprocess("--agentic-evals", "--agentic-evals-probe",
                                           "--agentic-evals-report", str(report), str(fixture))
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*case exit-only: oracle survived `noop`*"])
    assert json.loads(report.read_text())["schema"] == "agentic_evals.probe.v1"
    assert (fixture.parent / store.FILENAME).exists()
    refused = pytester.runpytest_subprocess("--agentic-evals", "--agentic-evals-probe",
                                            "-n", "2", str(fixture))
    assert refused.ret == pytest.ExitCode.USAGE_ERROR


def test_live_qualification_takes_a_fresh_probe_over_the_static_guess(tmp_path: Path) -> None:
    """SPEC 15, in both directions: a read-back of a file the command writes under a name
    computed at run time, where the static judgement cannot see it, looks like an oracle, and
    a skill that does nothing passes it; a value in stdout looks like the command's own
    prose, and neither stand-in prints it."""
    data = doubler_fixture()
    live = {"evidence_class": "live_e2e", "artifacts": IN}
    unseen = 'bash run.sh in.txt o3.txt; echo 42 > "$(printf o3).txt"'
    data["cases"] += [
        case("live-never-printed", "positive", ["bash", "-c", unseen],
             {"exit_code": 0, "artifacts": [{"path": "o3.txt", "equals": "42\n"}]}, **live),
        case("live-value-in-stdout", "positive", ["bash", "run.sh", "in.txt", "o4.txt"],
             {"exit_code": 0, "stdout_contains": ["result: 42"]}, **live)]
    path = make_skill(tmp_path / "doubler", data)

    def qualified(name: str) -> tuple[bool | None, str | None, tuple[str, ...]]:
        fixture = load_fixture(path)
        [case_] = [c for c in fixture.cases if c.name == name]
        q = qualify(case_, store.load(fixture)[name])
        return q.live_qualified, q.oracle_source, q.disqualifiers

    assert qualified("live-never-printed") == (True, "static", ())
    assert qualified("live-value-in-stdout")[:2] == (False, "static")
    cli("probe", str(path), "--case", "live-never-printed", "--case", "live-value-in-stdout")
    assert qualified("live-never-printed") == (False, "probe", (
        "the probe shows its oracle survived `noop` (a broken skill passes it)",
        "the probe shows its oracle survived `crash` (a broken skill passes it)"))
    assert qualified("live-value-in-stdout") == (True, "probe", ())


def test_an_oracle_reading_the_entrypoints_own_source_does_not_kill_a_stand_in(
        tmp_path: Path) -> None:
    """The stand-in replaces the entrypoint file: an assertion on that file's text would fail
    for every stand-in, and so look capable, while checking nothing the skill did."""
    data = doubler_fixture()
    data["cases"].append(case(
        "reads-its-source", "positive", ["bash", "run.sh", "in.txt", "o5.txt"],
        {"exit_code": 0, "artifacts": [{"path": "run.sh", "lines_contain": ["result:"]}]},
        artifacts=IN))
    path = make_skill(tmp_path / "doubler", data)
    out = tmp_path / "probe.json"
    cli("probe", str(path), "--case", "reads-its-source", "--output", str(out))
    found = statuses(json.loads(out.read_text()), "reads-its-source")
    assert found["noop"] == store.SURVIVED, found  # crash is killed by the exit code alone


def test_a_command_reading_its_entrypoint_is_not_probed_and_fails_the_probe(
        tmp_path: Path) -> None:
    """A command that reads the file the stand-ins replace can tell them from the skill and
    fail on purpose: no stand-in's trial would be evidence, so none is played, and a required
    case fails the probe."""
    data = doubler_fixture()
    data["cases"].append(case(
        "looks-first", "positive",
        ["bash", "-c", "grep -q Doubler run.sh || { bash run.sh x y; exit 3; }; "
                       "bash run.sh in.txt o6.txt"],
        {"exit_code": 0, "stdout_contains": ["result: 42"]}, artifacts=IN))
    path = make_skill(tmp_path / "doubler", data)
    out = tmp_path / "probe.json"
    result = cli("probe", str(path), "--case", "looks-first", "--output", str(out))
    report = json.loads(out.read_text())
    [fixture] = report["fixtures"]
    [entry] = fixture["cases"]
    assert result.returncode == 1 and report["verdict"] == "FAILED"
    assert {m["mutant"]: m["status"] for m in entry["mutants"]} == {
        mutant: store.INCONCLUSIVE for mutant in MUTANTS}
    assert all("'grep -q Doubler run.sh' reads the file of" in m["reason"]
               for m in entry["mutants"])
    assert "case looks-first: the `noop` stand-in's trial says nothing: 'grep -q Doubler " \
        "run.sh' reads the file of" in result.stdout


@pytest.mark.parametrize(("sandbox", "status"), [
    pytest.param("auto", store.KILLED, marks=pytest.mark.skipif(
        available_bwrap().problem is not None, reason="no sandbox on this machine")),
    ("off", store.INCONCLUSIVE),
])
def test_a_skill_named_by_absolute_path_is_swapped_in_the_sandbox_only(
        tmp_path: Path, sandbox: str, status: str) -> None:
    """The command runs the original file, not the trial's copy: the sandbox shows the
    stand-in there too (it used to run the real skill, and every stand-in 'survived');
    without it, the stand-in's trial says nothing."""
    root = tmp_path / "doubler"
    data = doubler_fixture()
    data["cases"].append(case(
        "absolute", "positive", ["bash", "-c", f"{root}/run.sh in.txt o.txt"],
        {"exit_code": 0, "artifacts": [{"path": "o.txt", "equals": "42\n"}]}, artifacts=IN))
    out = tmp_path / "probe.json"
    cli("probe", str(make_skill(root, data)), "--case", "absolute", "--sandbox", sandbox,
        "--output", str(out))
    found = statuses(json.loads(out.read_text()), "absolute")
    assert found["noop"] == found["crash"] == status, found


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize(("script", "package"), [
    ("tool.js", None), ("tool.cjs", None), ("tool.mjs", None),
    ("tool.js", {"type": "module"}),  # a .js file is an ES module in such a package
])
def test_a_node_script_is_replaced_whatever_its_module_kind(
        tmp_path: Path, script: str, package: dict[str, str] | None) -> None:
    root = tmp_path / "doubler"
    data = doubler_fixture()
    data["cases"].append(case("node-tool", "positive", ["node", script, "2"],
                              {"exit_code": 0, "stdout_contains": ["4"]}))
    path = make_skill(root, data)
    (root / script).write_text("console.log(Number(process.argv[2]) * 2);\n")
    if package is not None:
        (root / "package.json").write_text(json.dumps(package))
    out = tmp_path / "probe.json"
    cli("probe", str(path), "--case", "node-tool", "--output", str(out))
    found = statuses(json.loads(out.read_text()), "node-tool")
    assert found["noop"] == found["crash"] == found["echo-args"] == store.KILLED, found


# A script in each language a launcher is written for (Python, node and shell have their own
# tests above), doubling its first argument.
DOUBLERS = {
    "perl": ("tool.pl", "print $ARGV[0] * 2, \"\\n\";\n"),
    "ruby": ("tool.rb", "puts Integer(ARGV[0]) * 2\n"),
    "tclsh": ("tool.tcl", "puts [expr {[lindex $argv 0] * 2}]\n"),
}


@pytest.mark.parametrize("interpreter", sorted(DOUBLERS))
def test_a_script_is_replaced_in_any_folder_whatever_its_name(
        tmp_path: Path, interpreter: str) -> None:
    """The launcher names the stand-in's files by path, in the script's own language: a
    folder name that the language would read as code (Perl's @array, Ruby's #{...}, Tcl's
    [command] and $variable) must reach the stand-in as it is, or the case escapes its
    probe (and its control) as inconclusive."""
    if shutil.which(interpreter) is None:
        pytest.skip(f"{interpreter} is not installed")
    root = tmp_path / "s@x $y #{z} [w] 'q\" é"  # trial folders are named after it
    data = doubler_fixture()
    script, source = DOUBLERS[interpreter]
    # An argument Tcl's exec would read as a redirection must reach the stand-in as it is.
    data["cases"].append(case("tool", "positive", [interpreter, script, "2", "<x"],
                              {"exit_code": 0, "stdout_contains": ["4"]}))
    path = make_skill(root, data)
    (root / script).write_text(source)
    out = tmp_path / "probe.json"
    result = cli("probe", str(path), "--case", "tool", "--output", str(out))
    found = statuses(json.loads(out.read_text()), "tool")
    assert found["noop"] == found["crash"] == found["echo-args"] == store.KILLED, (
        found, result.stdout)


INTERPRETERS = {"shell": "sh", "python": sys.executable, "node": "node", "perl": "perl",
                "ruby": "ruby", "tclsh": "tclsh"}


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_launcher_passes_arguments_and_status_through_as_they_are(
        tmp_path: Path, language: str) -> None:
    """Each launcher starts the stand-in with the case's arguments untouched (words a shell,
    Tcl's exec or Perl would read as code or redirections among them) and gives back its
    exit status, from a folder whose name is code in every one of these languages."""
    interpreter = shutil.which(INTERPRETERS[language])
    if interpreter is None:
        pytest.skip(f"{INTERPRETERS[language]} is not installed")
    home = tmp_path / "s@x $y #{z} [w] `v` 'q\" \\ é"
    home.mkdir()
    standin = home / "standin.py"
    shutil.copyfile(Path(store.__file__).with_name("standin.py"), standin)
    spec = home / "spec.json"
    spec.write_text(json.dumps({"mutant": "echo-args", "exit_code": 3, "outputs": [],
                                "inputs": [], "entry": None,
                                "argument_prefix": ARGUMENT_PREFIXES.get(language, "")}))
    launcher = home / "launcher"
    launcher.write_bytes(os.fsencode(launcher_text(language, sys.executable, str(standin),
                                                   str(spec))))
    args = ["2", "<x", "|y", ">", "2>&1", "a b", "$HOME", "[pwd]", "@ARGV", "#{1}", "é", "&"]
    done = subprocess.run([interpreter, str(launcher), *args], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stdout) == (3, " ".join(args) + "\n"), done.stderr


@pytest.mark.parametrize(("interpreter", "script"), [("lua", "tool.lua"), ("php", "tool.php"),
                                                     ("Rscript", "tool.R")])
def test_a_script_of_an_interpreter_without_a_launcher_is_unprobed_and_says_so(
        tmp_path: Path, interpreter: str, script: str) -> None:
    data = doubler_fixture()
    data["cases"].append(case("tool", "positive", [interpreter, script, "2"],
                              {"exit_code": 0, "stdout_contains": ["4"]}))
    path = make_skill(tmp_path / "doubler", data)
    (path.parent / script).write_text("print(4)\n")
    tool = next(c for c in load_fixture(path).cases if c.name == "tool")
    target, why = locate(tool)
    assert target is None
    assert why == f"{interpreter} script {script} is started in a way no stand-in is " \
                  f"written for ({interpreter})"
