"""docs/migrating.md, row by row: each line of its two tables is shown by a file or a command.

Every row of "Read with the same meaning" and of "Differences" has one check here, keyed by the
row's first cell as written; a row without a check, or a check without a row, fails
``test_every_row_has_a_check``. The checks read the corpus of files written for the earlier
tool (tests/data/earlier/) or small variants of it, and run the commands a user would.
"""

from __future__ import annotations

import copy
import datetime
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_claims import Skill, all_pass, claim, judge, live

from pytest_agentic_evals.evidence.claims import capability_readiness
from pytest_agentic_evals.evidence.qualification import qualify
from pytest_agentic_evals.jsonvalues import json_equal
from pytest_agentic_evals.loading import fixture_from_data, load_fixture
from pytest_agentic_evals.loading.categories import category_cases
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.regressions.registry import registry_from_data

from conftest import run_cli

GUIDE = Path(__file__).parent.parent / "docs" / "migrating.md"
CORPUS = Path(__file__).parent / "data" / "earlier"
TODAY = datetime.date(2026, 12, 5)


def table_rows(heading: str) -> list[str]:
    """The first cell of each row of the table under ``heading`` in the guide."""
    text = GUIDE.read_text()
    section = text.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    cells = [line.split(" | ", 1)[0][2:].strip() for line in section.splitlines()
             if line.startswith("| ")]
    return [cell for cell in cells if cell not in ("earlier input", "earlier behaviour")]


# -- what the checks read ------------------------------------------------------------------

class Earlier:
    """A copy of the corpus, and the commands run over it, each at most once per module."""

    def __init__(self, root: Path) -> None:
        self.root = Path(shutil.copytree(CORPUS, root / "earlier"))
        self.skill = self.root / "greeter"
        self.fixture = self.skill / "fixtures" / "agentic_eval.json"
        self._ran: dict[str, Any] = {}

    def data(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.fixture.read_text())
        return loaded

    def once(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._ran:
            self._ran[key] = make()
        return self._ran[key]

    def report(self) -> dict[str, Any]:
        def make() -> dict[str, Any]:
            result = run_cli("run", str(self.fixture), cwd=self.fixture.parent)
            assert result.returncode == 0, result.stderr
            loaded: dict[str, Any] = json.loads(result.stdout)
            return loaded
        return dict(self.once("report", make))

    def case(self, report: dict[str, Any], name: str) -> dict[str, Any]:
        found: dict[str, Any] = next(c for c in report["cases"] if c["name"] == name)
        return found

    def regressions(self, command: str) -> tuple[int, dict[str, Any]]:
        def make() -> tuple[int, dict[str, Any]]:
            extra = ["--timeout-seconds", "20"] if command == "verify" else []
            result = run_cli("regressions", command, ".", "--json", *extra, cwd=self.skill)
            return result.returncode, json.loads(result.stdout)
        found: tuple[int, dict[str, Any]] = self.once("regressions " + command, make)
        return found

    def plan(self, graph: str = "state-graph.json") -> tuple[int, str, dict[str, Any]]:
        def make() -> tuple[int, str, dict[str, Any]]:
            journeys = self.root / "journeys"
            output = f"plan-{graph}"
            result = run_cli("plan-journeys", "--fixture", "../greeter/fixtures/agentic_eval.json",
                             "--requirements", "requirements.json",
                             "--interaction-inventory", "discovery-inventory.json",
                             "--state-graph", graph, "-o", output, cwd=journeys)
            plan = json.loads((journeys / output).read_text()) if result.returncode != 2 else {}
            return result.returncode, result.stderr, plan
        found: tuple[int, str, dict[str, Any]] = self.once("plan " + graph, make)
        return found

    def refusal(self, change: Callable[[dict[str, Any]], Any]) -> str:
        """The loader's message for the corpus fixture changed by ``change``; fails when the
        changed fixture loads."""
        data = self.data()
        change(data)
        try:
            fixture_from_data(data, self.fixture)
        except FixtureError as exc:
            return str(exc)
        raise AssertionError("the changed fixture was accepted")

    def accepts(self, change: Callable[[dict[str, Any]], Any]) -> Any:
        data = self.data()
        change(data)
        return fixture_from_data(data, self.fixture)

    def selftest(self) -> dict[str, Any]:
        """The runner's own behaviours, in one run of a runner self-test beside the skill."""
        def make() -> dict[str, Any]:
            folder = self.skill / "fixtures" / "runner"
            folder.mkdir()
            (folder / ".env").write_text("GREETER_TOKEN=leaked\n")
            (self.skill / ".env").write_text("GREETER_TOKEN=leaked\n")
            path = folder / "agentic_eval.json"
            path.write_text(json.dumps({
                "version": 2, "eval_kind": "runner_selftest", "trials": 1, "cases": [
                    {"name": "missing-program", "type": "positive",
                     "command": ["no-such-program-for-the-guide"], "expected": {"exit_code": 0}},
                    {"name": "leaves-a-process", "type": "positive",
                     "command": ["bash", "-c", "sleep 30 >/dev/null 2>&1 & exit 0"],
                     "expected": {"exit_code": 0}},
                    {"name": "no-dotenv", "type": "positive",
                     "command": ["bash", "-c", 'test -z "${GREETER_TOKEN:-}"'],
                     "expected": {"exit_code": 0}},
                ]}))
            result = run_cli("run", str(path), "--allow-exempt", "--timeout-seconds", "20",
                             cwd=folder)
            assert result.stdout, result.stderr
            loaded: dict[str, Any] = json.loads(result.stdout)
            loaded["exit status"] = result.returncode
            return loaded
        return dict(self.once("selftest", make))


@pytest.fixture(scope="module")
def earlier(tmp_path_factory: pytest.TempPathFactory) -> Earlier:
    return Earlier(tmp_path_factory.mktemp("guide"))


def first_case(data: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = data["cases"][0]
    return found


def artifact(data: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = data["cases"][1]["expected"]["artifacts"][0]
    return found


# -- "Read with the same meaning" ----------------------------------------------------------

def same_selftest_layout(e: Earlier) -> None:
    fixture = load_fixture(e.skill / "fixtures" / "selftest" / "runs_the_skill.json")
    assert fixture.skill_dir == e.skill
    assert fixture.cases[0].cwd == e.skill / "fixtures" / "selftest"


def same_live_companion(e: Earlier) -> None:
    skill = Path(shutil.copytree(e.skill, e.root / "with-a-live-companion"))
    main = json.loads((skill / "fixtures" / "agentic_eval.json").read_text())
    companion = {key: value for key, value in main.items() if key != "seams"}
    assert any(case.get("seams") for case in companion["cases"])  # only main declares them
    (skill / "fixtures" / "agentic_eval_live.json").write_text(json.dumps(companion))
    result = run_cli("coverage", "show", str(skill), "--json", cwd=e.root)
    first, second = json.loads(result.stdout)["skills"][0]["fixtures"]
    assert first["companion"] == second["fixture"]
    assert second["merged_into"] == first["fixture"]
    assert all(case.get("fixture") in (None, second["fixture"])
               for seam in first["seams"] for case in seam["cases"])


def same_fixture_statements(e: Earlier) -> None:
    report = e.report()
    assert (report["live"], report["mocked"]) == (True, False)
    assert report["what_was_exercised"] and report["what_remains_unverified"]
    assert report["application_identity"] == {"repo": {"sha": "3f2a9c1", "ref": "main"}}
    assert report["readiness"] == "READY"  # "mocked": false, "live": true decide nothing


def same_infra_blocked(e: Earlier) -> None:
    report = e.report()
    provider = e.case(report, "asks-provider")
    assert provider["outcome"] == "BLOCKED"
    assert {t["outcome"] for t in provider["trials"]} == {"INFRA_BLOCKED"}


def same_mocked(e: Earlier) -> None:
    data = e.data()
    provider = data["cases"][3]
    provider.update(evidence_class="live_e2e", command=["bash", "../run.sh", "Ada"],
                    expected={"exit_code": 0, "artifacts": [{"path": "out.json"}]})
    for flag in ("mocked", "uses_stub"):
        flagged = copy.deepcopy(data)
        del flagged["cases"][3][{"mocked": "uses_stub", "uses_stub": "mocked"}[flag]]
        case = fixture_from_data(flagged, e.fixture).cases[3]
        assert qualify(case).live_qualified is False, flag
        assert qualify(case).effective != "live_e2e"


def same_category(e: Earlier) -> None:
    fixture = load_fixture(e.fixture)
    assert category_cases([fixture], "x:greeter:greeting", None) == ["greets"]
    assert category_cases([fixture], "refusal", None) == ["refuses-empty-name"]
    assert e.case(e.report(), "greets")["category_id"] == "x:greeter:greeting"


def same_provenance(e: Earlier) -> None:
    greets = e.case(e.report(), "greets")
    block = greets["execution_provenance"]
    assert block["execution_mode"] == "regression_replay"
    assert greets["oracle_sha256"].startswith("sha256:")
    assert block["evidence_eligibility"]["eligible"] is True


def same_criticality(e: Earlier) -> None:
    claims = e.report()["capability_readiness"]
    assert claims["greets-by-name"]["criticality"] == "critical"


def same_no_critical_claim(e: Earlier) -> None:
    fixture = load_fixture(e.skill / "fixtures" / "selftest" / "exemption.json",
                           accept_exemptions=True)
    report, readiness, _ = capability_readiness(fixture, all_pass(fixture), TODAY)
    assert {entry["verdict"] for entry in report.values()} == {"PARTIALLY_PROVEN"}
    assert readiness == "NOT_READY"


def same_admission(e: Earlier) -> None:
    fixture = load_fixture(e.fixture)
    greets = e.case(e.report(), "greets")
    for key in ("admitted_generations", "admitted_evidence"):
        for pin, verdict in ((greets["generation_id"], "PROVEN"), ("sha256:other", "FAILED")):
            data = e.data()
            data["capability_claims"][0][key] = [{"case": "greets", "generation_id": pin}]
            pinned = fixture_from_data(data, e.fixture)
            outcomes = {case.name: "PASS" for case in fixture.cases}
            report, _, _ = capability_readiness(pinned, outcomes, TODAY)
            entry = report["greets-by-name"]
            assert (entry["verdict"] == "PROVEN") is (verdict == "PROVEN"), (key, pin, entry)


def same_exemption_notes(e: Earlier) -> None:
    fixture = load_fixture(e.skill / "fixtures" / "selftest" / "exemption.json",
                           accept_exemptions=True)
    report, _, _ = capability_readiness(fixture, all_pass(fixture), TODAY)
    [exemption] = report["greets-by-name"]["exempt_evidence"]
    assert exemption["manual_proof"].startswith("checked by hand")
    assert report["greets-by-name"]["verdict"] != "PROVEN"


def same_seams(e: Earlier) -> None:
    result = run_cli("coverage", "show", "greeter", "--json", cwd=e.root)
    assert result.returncode == 0, result.stderr
    text = json.dumps(json.loads(result.stdout))
    assert '"claim_id": "greets-by-name"' in text and "empty name accepted" in text


def same_sha256(e: Earlier) -> None:
    bare = e.accepts(lambda d: artifact(d).update(sha256=artifact(d)["sha256"][7:]))
    prefixed = load_fixture(e.fixture)
    assert bare.cases[1].expected["artifacts"][0]["sha256"] == \
        prefixed.cases[1].expected["artifacts"][0]["sha256"][7:]
    assert e.case(e.report(), "writes-greeting")["outcome"] == "PASS"


def same_absent(e: Earlier) -> None:
    fixture = e.accepts(lambda d: d["cases"][1]["expected"]["artifacts"].append(
        {"path": "stale.txt", "absent": True}))
    assert fixture.cases[1].expected["artifacts"][1]["absent"] is True


def same_registry(e: Earlier) -> None:
    _, report = e.regressions("show")
    entry = report["registries"][0]
    assert entry["valid"] is True
    assert [i["regressions"] for i in entry["incidents"]] == [["name-dropped"],
                                                             ["empty-name-accepted"]]


def same_record_notes(e: Earlier) -> None:
    _, report = e.regressions("show")
    notes = report["registries"][0]["regressions"][0]["earlier_notes"]
    assert {"failure_code", "first_added", "repair_revision", "expected_fail", "proven",
            "proven_date", "rationale"} <= notes.keys()


def same_proof_cwd(e: Earlier) -> None:
    path = e.skill / "fixtures" / "regressions.json"
    registry = registry_from_data(json.loads(path.read_text()), path)
    proof = registry.regressions[0].proof
    assert proof is not None and proof.cwd == e.skill


def same_qids(e: Earlier) -> None:
    status, stderr, plan = e.plan()
    assert status == 0, stderr
    greet = next(j for j in plan["journeys"] if j["requirement_id"] == "REQ-greet")
    assert greet["binding_status"] == "BOUND"
    assert [a["qid"] for a in greet["actions"]] == ["greet:name input", "greet:submit"]


def same_oracles(e: Earlier) -> None:
    _, _, plan = e.plan()
    greet = next(j for j in plan["journeys"] if j["requirement_id"] == "REQ-greet")
    assert greet["actions"][1]["action"] == "click"
    assert greet["weak_oracle"] is False  # the text oracle is failing-capable, kind and all


def same_inventory(e: Earlier) -> None:
    status, _, plan = e.plan()
    assert status == 0
    assert plan["graph"]["initial_state"] == "home"
    assert plan["application"]["run_id"] == "disc-2026-11-30"


def same_state_graph(e: Earlier) -> None:
    for graph in ("state-graph-transitions.json", "state-graph-free-form.json",
                  "state-graph-empty.json"):
        status, stderr, plan = e.plan(graph)
        assert status == 0, stderr
        assert plan["graph"]["form"] == "earlier"
        assert {j["requirement_id"]: j["binding_status"] for j in plan["journeys"]} == \
            {"REQ-greet": "BOUND", "REQ-help": "UNBOUND"}


def same_trials(e: Earlier) -> None:
    fixture = e.accepts(lambda d: d.pop("trials"))
    assert fixture.trials == 3
    result = run_cli("validate", str(e.fixture))
    assert result.returncode == 0


def same_options(e: Earlier) -> None:
    run_help = run_cli("run", "--help").stdout
    for option in ("-o", "--output", "--timeout-seconds", "--only-category", "--map"):
        assert re.search(rf"(^|[\s,]){re.escape(option)}\b", run_help), option
    verify_help = run_cli("regressions", "verify", "--help").stdout
    assert "--report-only" in verify_help and "--timeout-seconds" in verify_help


def same_schema(e: Earlier) -> None:
    result = run_cli("schema")
    assert json.loads(result.stdout)["properties"]["schema"]["const"] == "agentic_evals.report.v2"


SAME: dict[str, Callable[[Earlier], None]] = {
    "a fixture in `fixtures/selftest/` (or any folder inside `fixtures/`)": same_selftest_layout,
    "a live companion `fixtures/agentic_eval_live.json` whose cases name the seams of "
    "`agentic_eval.json`": same_live_companion,
    "fixture `live`, `mocked`, `what_was_exercised`, `what_remains_unverified`, "
    "`application_identity`": same_fixture_statements,
    "case `infra_blocked_when`": same_infra_blocked,
    "case `mocked`, `uses_stub`": same_mocked,
    "case `category`, `category_id`": same_category,
    "case `execution_mode`, `provenance`, `mutation_provenance`, `repair`, `external_result`, "
    "`provider_result`, `generated_test`, `generated_test_lineage`": same_provenance,
    "claim without `criticality`": same_criticality,
    "no critical claim: a claim not PROVEN makes the run NOT_READY": same_no_critical_claim,
    "claim `admitted_evidence`, `admitted_generations`": same_admission,
    "exemption `review_date`, `manual_proof`, `forfeits`": same_exemption_notes,
    "seam `claim_id`, `failure_modes`": same_seams,
    "artifact `sha256` as `\"sha256:<hex>\"`": same_sha256,
    "artifact `absent: true`": same_absent,
    "regressions.json `version`, `note`, incidents as strings or with "
    "`id`/`issue`/`receipt`/`class`/`note`": same_registry,
    "record `failure_code`, `first_added`, `repair_revision`; proof `expected_fail`, `proven`, "
    "`proven_date`, `rationale`": same_record_notes,
    "proof `cwd` in a registry written for the earlier tool": same_proof_cwd,
    "requirements: QIDs with `:` and spaces (`form:submit`)": same_qids,
    "requirements: oracle `kind`, oracle without `description`, ui action without `action`":
        same_oracles,
    "inventory `schema: test_interactions.discovery.v1`, entries without `state`": same_inventory,
    "a state graph in any other form: a list of transitions, an object of states and edges in "
    "a shape of its own, `{}`": same_state_graph,
    "fixture without `trials`": same_trials,
    "CLI `-o PATH`, `--timeout-seconds F`, `--only-category ID [--map MAP]`, "
    "`regressions verify --report-only`": same_options,
    "`agentic-evals schema` without a name": same_schema,
}


# -- "Differences" ---------------------------------------------------------------------------

def case_key(key: str, value: Any, index: int = 0) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["cases"][index].update({key: value})


def expected_key(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: first_case(d)["expected"].update({key: value})


def artifact_key(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: artifact(d).update({key: value})


def diff_exit_code_true(e: Earlier) -> None:
    assert "/cases/0/expected/exit_code" in e.refusal(expected_key("exit_code", True))


def diff_string_lists(e: Earlier) -> None:
    for key in ("stdout_contains", "stderr_contains", "stdout_excludes"):
        assert f"/cases/0/expected/{key}: \"hello\" is a string" in \
            e.refusal(expected_key(key, "hello")), key
    for key in ("blocked_when_stdout_contains", "infra_blocked_when"):
        assert f"/cases/0/{key}: \"RATE\" is a string" in e.refusal(case_key(key, "RATE"))


def diff_unknown_expected(e: Earlier) -> None:
    message = e.refusal(lambda d: first_case(d)["expected"].update(
        stdout_contain=["x"]))
    assert "unknown key 'stdout_contain'" in message and "did you mean" in message


def diff_artifact_paths(e: Earlier) -> None:
    for path in ("../../elsewhere.txt", "/etc/hostname"):
        assert "outside_workspace" in e.refusal(artifact_key("path", path)), path
    e.accepts(lambda d: artifact(d).update(path="../greeting.txt"))  # still in the skill


def diff_leftover_files(e: Earlier) -> None:
    report = e.report()
    assert e.case(report, "writes-greeting")["outcome"] == "PASS"
    # Written in each trial's own copy of the skill: nothing is left for a later run to find.
    assert not (e.fixture.parent / "greeting.txt").exists()


def diff_evidence_class(e: Earlier) -> None:
    refusal = e.case(e.report(), "refuses-empty-name")  # no evidence_class in the corpus
    assert refusal["declared_evidence_class"] is None
    assert refusal["effective_evidence_class"] == "deterministic"


def diff_multi_claim_live(e: Earlier) -> None:
    skill = Skill(e.root / "multi-claim")
    fixture = skill.load([claim("a", "live_e2e"), claim("b", "live_e2e")],
                         [live("l", "a", "b")])
    report, _, _ = judge(fixture, all_pass(fixture))
    assert {report[c]["verdict"] for c in ("a", "b")} == {"NOT_ESTABLISHED"}


def diff_focused_run(e: Earlier) -> None:
    result = run_cli("run", str(e.fixture), "--case", "greets", cwd=e.fixture.parent)
    report = json.loads(result.stdout)
    assert report["selection"] == "partial"
    assert report["readiness"] != "READY"


def diff_real_world(e: Earlier) -> None:
    message = e.refusal(lambda d: first_case(d).update(command=["bash", "-c", "echo run.sh"]))
    assert "no real-world case" in message or "/cases/0/command" in message


def diff_all_optional(e: Earlier) -> None:
    def all_optional(data: dict[str, Any]) -> None:
        for case in data["cases"]:
            case["required"] = False
    message = e.refusal(all_optional)
    assert "no negative or adversarial case among the required cases" in message
    assert "no real-world case among the required cases" in message


def diff_self_exemption(e: Earlier) -> None:
    def scaffold_of_one_trial(data: dict[str, Any]) -> None:
        data.update(eval_kind="scaffold", trials=1)
    message = e.refusal(scaffold_of_one_trial)
    assert "/eval_kind: eval_kind 'scaffold' asks to be exempt" in message
    assert "--allow-exempt" in message and "/trials: trials is 1" in message
    exempt = e.skill / "fixtures" / "selftest" / "exemption.json"
    assert run_cli("validate", str(exempt)).returncode == 2
    assert run_cli("validate", str(exempt), "--allow-exempt").returncode == 0


def diff_negative_reach(e: Earlier) -> None:
    def fail_alone(data: dict[str, Any]) -> None:
        for case in data["cases"]:
            if case.get("type") in ("negative", "adversarial"):
                case["command"] = ["python3", "-c", "import sys; sys.exit(2)"]
    message = e.refusal(fail_alone)
    assert "no required negative or adversarial case reaches the skill's own code" in message


def diff_ignored_skill(e: Earlier) -> None:
    data = e.data()
    first_case(data)["command"] = ["bash", "-c", "bash ../run.sh Ada > /dev/null; "
                                                 "echo hello, Ada"]
    path = e.fixture.with_name("agentic_eval_ignores_the_skill.json")
    path.write_text(json.dumps(data))
    result = run_cli("run", str(path), cwd=path.parent)
    report = json.loads(result.stdout)
    greets = next(c for c in report["cases"] if c["name"] == "greets")
    assert result.returncode == 1 and greets["outcome"] == "FAIL"
    assert greets["control"]["status"] == "survived"


def diff_expires(e: Earlier) -> None:
    fixture = load_fixture(e.skill / "fixtures" / "selftest" / "exemption.json",
                           accept_exemptions=True)
    data = dict(fixture.data)
    data["capability_claims"] = copy.deepcopy(data["capability_claims"])
    data["capability_claims"][0]["exemptions"][0]["expires"] = "2099-1-5"
    changed = fixture_from_data(data, fixture.path, accept_exemptions=True)
    report, _, _ = capability_readiness(changed, all_pass(changed), TODAY)
    entry = report["greets-by-name"]
    assert entry["exempt_evidence"] == []
    assert "not a real ISO date" in json.dumps(entry)


def diff_missing_executable(e: Earlier) -> None:
    report = e.selftest()
    assert e.case(report, "missing-program")["outcome"] == "FAIL"


def diff_dotenv(e: Earlier) -> None:
    assert e.case(e.selftest(), "no-dotenv")["outcome"] == "PASS"


def diff_orphans(e: Earlier) -> None:
    orphan = e.case(e.selftest(), "leaves-a-process")
    assert orphan["outcome"] == "FAIL", orphan["problems"]


def diff_show_exit(e: Earlier) -> None:
    status, report = e.regressions("show")
    assert status == 1 and report["registries"][0]["valid"] is True


def diff_no_signature(e: Earlier) -> None:
    _, report = e.regressions("verify")
    entry = next(r for r in report["regressions"] if r["regression_id"] == "name-dropped")
    assert entry["verdict"] == "NOT_VERIFIED"
    assert "no failure signature" in entry["reasons"][0]


def diff_no_proof_command(e: Earlier) -> None:
    status, report = e.regressions("verify")
    assert status == 1
    entry = next(r for r in report["regressions"]
                 if r["regression_id"] == "greeting-file-empty")
    assert entry["verdict"] == "NOT_VERIFIED" and "no proof_command" in entry["reasons"][0]


def diff_passing_proof(e: Earlier) -> None:
    _, report = e.regressions("verify")
    entry = next(r for r in report["regressions"]
                 if r["regression_id"] == "empty-name-accepted")
    assert entry["verdict"] == "NOT_VERIFIED"
    assert any("expected_fail is false" in reason for reason in entry["reasons"])


def diff_proven_flag(e: Earlier) -> None:
    _, report = e.regressions("show")
    codes = {(f["subject"], f["code"]) for f in report["findings"]}
    assert ("name-dropped", "self_reported_proof") in codes


def diff_status_missing(e: Earlier) -> None:
    _, report = e.regressions("verify")
    entry = next(r for r in report["regressions"]
                 if r["regression_id"] == "empty-name-accepted")  # written without status
    assert entry["status"] == "ACTIVE"


def diff_retained_case(e: Earlier) -> None:
    _, report = e.regressions("verify")
    assert {r["retained"]["outcome"] for r in report["regressions"]} == {"PASS"}


def diff_plan_exit(e: Earlier) -> None:
    journeys = e.root / "journeys"
    (journeys / "bad-requirements.json").write_text('{"schema": "agentic_evals.requirements.v1"}')
    result = run_cli("plan-journeys", "--fixture", "../greeter/fixtures/agentic_eval.json",
                     "--requirements", "bad-requirements.json",
                     "--interaction-inventory", "discovery-inventory.json",
                     "--state-graph", "state-graph.json", "-o", "bad-plan.json", cwd=journeys)
    assert result.returncode == 2


def diff_hidden_controls(e: Earlier) -> None:
    journeys = e.root / "journeys"
    inventory = json.loads((journeys / "discovery-inventory.json").read_text())
    for entry in inventory["inventory"]:
        for control in entry["interactives"]:
            control["enabled"] = control["qid"] != "greet:submit"
    (journeys / "disabled-inventory.json").write_text(json.dumps(inventory))
    result = run_cli("plan-journeys", "--fixture", "../greeter/fixtures/agentic_eval.json",
                     "--requirements", "requirements.json",
                     "--interaction-inventory", "disabled-inventory.json",
                     "--state-graph", "state-graph.json", "-o", "disabled-plan.json",
                     cwd=journeys)
    assert result.returncode == 1  # the critical journey cannot press a disabled button
    plan = json.loads((journeys / "disabled-plan.json").read_text())
    greet = next(j for j in plan["journeys"] if j["requirement_id"] == "REQ-greet")
    assert greet["binding_status"] != "BOUND"


def diff_timeout_string(e: Earlier) -> None:
    for value in ("30", None, "30s"):
        assert "/cases/0/timeout_seconds" in e.refusal(case_key("timeout_seconds", value))


def diff_timeout_zero(e: Earlier) -> None:
    for value in (0, -5):
        assert "/cases/0/timeout_seconds" in e.refusal(case_key("timeout_seconds", value))


def diff_trials_true(e: Earlier) -> None:
    assert "/trials: true is a boolean" in e.refusal(lambda d: d.update(trials=True))


def diff_min_bytes(e: Earlier) -> None:
    for value in ("5", 5.5, True):
        assert "/min_bytes" in e.refusal(artifact_key("min_bytes", value)), value


def diff_pointer_slashes(e: Earlier) -> None:
    assert "RFC 6901" in e.refusal(artifact_key("json_pointer", "greeting"))


def diff_pointer_negative(e: Earlier) -> None:
    import jsonpointer
    with pytest.raises(jsonpointer.JsonPointerException):
        jsonpointer.resolve_pointer({"names": ["Ada", "Grace"]}, "/names/-1")


def diff_pointer_whole_document(e: Earlier) -> None:
    import jsonpointer
    assert jsonpointer.resolve_pointer({"": "the key", "a": 1}, "/") == "the key"
    assert jsonpointer.resolve_pointer({"a": 1}, "") == {"a": 1}


def diff_equals_without_pointer(e: Earlier) -> None:
    from test_expectations import artifact_failures, write
    where = e.root / "equals-without-pointer"
    write(where / "ws", "ok.json", '"ok"\n')
    write(where / "ws", "ok.txt", "ok")
    write(where / "ws", "one.json", '{"a": 1, "b": 2}')
    write(where / "ws", "two.json", '{\n  "b": 2,\n  "a": 1\n}\n')
    assert artifact_failures(where, {"path": "ok.json", "equals": "ok"},
                             {"path": "ok.txt", "equals": "ok"},
                             {"path": "one.json", "equals_artifact": {"path": "two.json"}}) == []


def diff_outside_the_skill(e: Earlier) -> None:
    ticket = e.root / "ticket"
    ticket.mkdir()
    (ticket / "run.sh").write_text('#!/usr/bin/env bash\necho "ticket $*"\n')
    data = e.data()
    data["cases"][0].update(command=["bash", "-c", "../run.sh Ada && bash ../../ticket/run.sh x"],
                            expected={"exit_code": 0, "stdout_contains": ["ticket x"]})
    data["cases"] = [c for c in data["cases"] if c["name"] in ("greets", "refuses-empty-name")]
    # A skill of its own beside the corpus's, so that no other check sees this fixture.
    skill = Path(shutil.copytree(e.skill, e.root / "greeter-outside"))
    copied = skill / "fixtures" / "agentic_eval.json"
    copied.write_text(json.dumps(data))
    result = run_cli("run", str(copied), "--sandbox", "off", cwd=copied.parent)
    assert result.returncode == 1, result.stderr
    [trial, *_] = json.loads(result.stdout)["cases"][0]["trials"]
    assert trial["exit_code"] == 127 and "No such file" in trial["stderr"]["head"]
    copied.write_text(json.dumps({**data, "workspace": "inplace"}))
    result = run_cli("run", str(copied), "--sandbox", "off", cwd=copied.parent)
    assert json.loads(result.stdout)["cases"][0]["outcome"] == "PASS", result.stderr


def diff_posture_words(e: Earlier) -> None:
    tree = e.root / "posture-words"
    for name, body in (("says-it", "No eval: eval_not_required here."),
                       ("names-it", "Evaluated with agentic-evals.")):
        folder = tree / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n---\n{body}\n")
    result = run_cli("audit-skills", str(tree), cwd=e.root)
    assert result.returncode == 0, result.stderr
    postures = {s["path"]: s["posture"] for s in json.loads(result.stdout)["skills"]}
    assert postures == {"says-it": "missing", "names-it": "missing"}


def diff_case_names(e: Earlier) -> None:
    for name in ("greets by name", "tools/greets"):
        assert "cannot be used in a test id" in e.refusal(case_key("name", name)), name


def diff_equals(e: Earlier) -> None:
    assert not json_equal(True, 1) and not json_equal(1, "1") and json_equal(1, 1.0)


def diff_truthy_flags(e: Earlier) -> None:
    for key, value in (("required", "false"), ("required", 0), ("real_world", 1),
                       ("mocked", 1), ("uses_stub", "yes"), ("readback", 1)):
        assert f"/cases/0/{key}" in e.refusal(case_key(key, value)), key
    assert "/absent" in e.refusal(artifact_key("absent", 1))


def diff_must_exercise(e: Earlier) -> None:
    for value in (None, ""):
        assert "/cases/0/must_exercise" in e.refusal(case_key("must_exercise", value))


def diff_evidence_required(e: Earlier) -> None:
    def claim_key(value: Any) -> Callable[[dict[str, Any]], None]:
        return lambda d: d["capability_claims"][0].update(evidence_required=value)
    for value in ({"deterministic": 1}, ["deterministic", "live"],
                  {"deterministic": True, "live": True}):
        assert "/capability_claims/0/evidence_required" in e.refusal(claim_key(value)), value


def diff_supports_claims(e: Earlier) -> None:
    assert "/cases/0/supports_claims" in e.refusal(case_key("supports_claims",
                                                             "greets-by-name"))


def diff_seam_evidence(e: Earlier) -> None:
    for value in ("deterministic", ["determinstic"], {"deterministic": True}):
        assert "/seams/0/required_evidence" in e.refusal(
            lambda d, v=value: d["seams"][0].update(required_evidence=v)), value


def diff_evidence_class_null(e: Earlier) -> None:
    assert "/cases/0/evidence_class" in e.refusal(case_key("evidence_class", None))


def diff_falsy_selectors(e: Earlier) -> None:
    journeys = e.root / "journeys"
    data = json.loads((journeys / "requirements.json").read_text())
    data["requirements"][0]["journey"]["actions"][1]["selector"] = ""
    (journeys / "selector-requirements.json").write_text(json.dumps(data))
    result = run_cli("plan-journeys", "--fixture", "../greeter/fixtures/agentic_eval.json",
                     "--requirements", "selector-requirements.json",
                     "--interaction-inventory", "discovery-inventory.json",
                     "--state-graph", "state-graph.json", "-o", "selector-plan.json",
                     cwd=journeys)
    assert result.returncode == 2 and "raw selectors are refused" in result.stderr


DIFFERENCES: dict[str, Callable[[Earlier], None]] = {
    "`exit_code: true` meant 1": diff_exit_code_true,
    "a string where a list belongs (`stdout_contains`, `stderr_contains`, `stdout_excludes`, "
    "`blocked_when_stdout_contains`, `infra_blocked_when`) was checked character by character":
        diff_string_lists,
    "unknown keys in `expected` were ignored": diff_unknown_expected,
    "artifact paths could leave the trial's directory (`..`, absolute)": diff_artifact_paths,
    "files left by earlier trials or runs could satisfy an artifact check": diff_leftover_files,
    "`evidence_class` absent meant `live_e2e` (newest version)": diff_evidence_class,
    "a live case supporting several claims without artifacts filled each claim's live slot":
        diff_multi_claim_live,
    "a focused run (`--case`, `--only-category`) could be READY": diff_focused_run,
    "real-world meant a substring (`run.sh`, `.py`, `http`) in the command": diff_real_world,
    "any required `negative` or `adversarial` case kept the contract's rule 2, whatever it "
    "ran": diff_negative_reach,
    "a fixture whose every case said `\"required\": false` was run and scored on all its "
    "cases": diff_all_optional,
    "a fixture of `eval_kind` `scaffold` or `runner_selftest` skipped the contract":
        diff_self_exemption,
    "a required case that reached the skill and ignored what it did (`bash ../run.sh Ada > "
    "/dev/null; echo hello, Ada`) passed": diff_ignored_skill,
    "exemptions' `expires` was compared as a string": diff_expires,
    "a missing executable aborted the run without a report": diff_missing_executable,
    "the `.env` beside the runner leaked into every trial": diff_dotenv,
    "orphans were only looked for after a timeout": diff_orphans,
    "`regressions show`/`audit` always exited 0": diff_show_exit,
    "a proof without a failure signature could be VERIFIED by its exit status": diff_no_signature,
    "a record whose `fail_before_fix` had no `proof_command` was skipped as \"no proof command\"":
        diff_no_proof_command,
    "`expected_fail: false` verified a proof that passed": diff_passing_proof,
    "`proven: true` counted as established": diff_proven_flag,
    "`regressions verify` skipped records without `status`": diff_status_missing,
    "`regressions verify` only ran the proof": diff_retained_case,
    "`plan-journeys` exited 3 on bad input": diff_plan_exit,
    "`plan-journeys` bound a control observed hidden or disabled": diff_hidden_controls,
    "`plan-journeys` accepted a ui action with an empty `selector`, `css` or `xpath`":
        diff_falsy_selectors,
    "a case's `timeout_seconds` given as a string was converted (`\"30\"`), and one that was "
    "not a number (`null`, `\"30s\"`) fell back silently": diff_timeout_string,
    "a case's `timeout_seconds` of 0 or below meant 0.1 s": diff_timeout_zero,
    "`trials: true` meant 1": diff_trials_true,
    "`min_bytes` as a string (`\"5\"`), a fraction (truncated) or `true` (1)": diff_min_bytes,
    "`json_pointer` without its leading `/` (leading slashes were stripped)":
        diff_pointer_slashes,
    "`json_pointer` `\"/\"` meant the whole document, like `\"\"`": diff_pointer_whole_document,
    "`equals` or `equals_artifact` without a pointer read the file as JSON":
        diff_equals_without_pointer,
    "`json_pointer` `/-1` indexed an array from the end": diff_pointer_negative,
    "`equals` compared as Python does (`true` equalled `1`)": diff_equals,
    "flags taken by truthiness: `required: \"false\"` was true, `real_world: 1`, `absent: 1` "
    "counted, while `mocked: 1`, `uses_stub: 1`, `readback: 1` did not": diff_truthy_flags,
    "a command that reaches a file outside the skill's folder by a relative path (`bash "
    "../../ticket/run.sh`, the earlier scaffold's "
    "`../../best-practices-skills/scripts/validate_skill.py`): it ran in the real folder":
        diff_outside_the_skill,
    "`audit-skills`: a SKILL.md that said `eval_not_required`, or named agentic-evals, "
    "anywhere in its text was exempt (`eval_not_required`) or delegating "
    "(`delegates_to_eval_skill`)": diff_posture_words,
    "a case named with spaces, `/` or other characters (`\"greets by name\"`)":
        diff_case_names,
    "`must_exercise` of `null` or `\"\"` meant none": diff_must_exercise,
    "`evidence_required` values taken by truthiness (`{\"live_e2e\": 1}`), unknown class names "
    "dropped": diff_evidence_required,
    "`supports_claims` that was not a list was ignored": diff_supports_claims,
    "a seam's `required_evidence` could be any truthy value, its class names unchecked":
        diff_seam_evidence,
    "`evidence_class: null` meant the default": diff_evidence_class_null,
}


def test_every_row_has_a_check() -> None:
    assert table_rows("Read with the same meaning") == list(SAME)
    assert table_rows("Differences, one line each, with the reason") == list(DIFFERENCES)


@pytest.mark.parametrize("row", list(SAME), ids=[c.__name__ for c in SAME.values()])
def test_read_with_the_same_meaning(row: str, earlier: Earlier) -> None:
    SAME[row](earlier)


@pytest.mark.parametrize("row", list(DIFFERENCES),
                         ids=[c.__name__ for c in DIFFERENCES.values()])
def test_difference(row: str, earlier: Earlier) -> None:
    DIFFERENCES[row](earlier)
