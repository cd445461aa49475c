"""Capability claims: load-time rules, live-case qualification and per-claim verdicts (pure)."""

from __future__ import annotations

import datetime
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_agentic_evals.evidence.claims import (
    BLOCKED_EXTERNAL,
    FAILED,
    NOT_ESTABLISHED,
    PARTIALLY_PROVEN,
    PROVEN,
    capability_readiness,
)
from pytest_agentic_evals.evidence.qualification import is_generic_crash_marker, oracle, qualify
from pytest_agentic_evals.jsonio import display_path
from pytest_agentic_evals.loading import fixture_from_data
from pytest_agentic_evals.loading.claims import claim_problems
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.model import DOMAIN_PROFILES, NOT_READY, READY, USABLE_WITH_GAPS, Fixture
from pytest_agentic_evals.model import NOT_ESTABLISHED as READINESS_NOT_ESTABLISHED
from pytest_agentic_evals.problems import Problem

TODAY = datetime.date(2026, 6, 1)
JSON_SCALARS = DOMAIN_PROFILES["json-scalar-v1"]
VALUE_SEAM = [{"seam_id": "value-representation", "criticality": "critical"}]


# --------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------


def claim(claim_id: str, *required: str, **extra: Any) -> dict[str, Any]:
    """A claim that passes the load-time rules unless ``extra`` says otherwise."""
    data: dict[str, Any] = {
        "id": claim_id,
        "description": f"{claim_id} holds in every case the client cares about",
        "criticality": "critical",
        "claim_semantics": "protocol",
        "evidence_required": {name: True for name in (required or ("deterministic",))},
    }
    data.update(extra)
    return data


def case(name: str, *claims: str, **extra: Any) -> dict[str, Any]:
    """A deterministic case of the skill's run.sh with a check that can fail."""
    data: dict[str, Any] = {
        "name": name,
        "type": "positive",
        "command": ["bash", "run.sh", name],
        "expected": {"exit_code": 0, "stdout_contains": ["ok"]},
    }
    if claims:
        data["supports_claims"] = list(claims)
    data.update(extra)
    return data


def live(name: str, *claims: str, **extra: Any) -> dict[str, Any]:
    """A live case that qualifies: real entrypoint, no stubs, an artifact read back."""
    data = case(name, *claims, evidence_class="live_e2e")
    data["expected"] = {"exit_code": 0,
                        "artifacts": [{"path": f"out/{name}.json", "exists": True}]}
    data.update(extra)
    return data


def adversarial(name: str, representation: str, *claims: str, **extra: Any) -> dict[str, Any]:
    """An adversarial case for one representation whose artifact check can catch a leak."""
    data = case(name, *claims, type="adversarial", representation=representation)
    data["expected"] = {"exit_code": 0, "artifacts": [
        {"path": "out/result.json", "json_pointer": "/phone", "equals": "[REDACTED]"}]}
    data.update(extra)
    return data


class Skill:
    """A skill folder with an executable run.sh; fixtures are judged in memory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        run = root / "run.sh"
        run.write_text("#!/usr/bin/env bash\necho ok\n")
        run.chmod(run.stat().st_mode | stat.S_IXUSR)
        self.path = root / "agentic_eval.json"

    def data(self, claims: list[dict[str, Any]], cases: list[dict[str, Any]],
             **top: Any) -> dict[str, Any]:
        # runner_selftest, its exemption granted, keeps the anti-slush contract out of the way of
        # these unit tests.
        return {"version": 2, "eval_kind": "runner_selftest", "trials": 2,
                "capability_claims": claims, "cases": cases, **top}

    def load(self, claims: list[dict[str, Any]], cases: list[dict[str, Any]],
             **top: Any) -> Fixture:
        fixture = fixture_from_data(self.data(claims, cases, **top), self.path,
                                    accept_exemptions=True)
        assert claim_problems(fixture, display_path(self.path)) == []
        return fixture

    def problems(self, claims: list[dict[str, Any]], cases: list[dict[str, Any]],
                 **top: Any) -> dict[str, str]:
        """claim_problems by pointer, also once the loader runs them itself."""
        try:
            fixture = fixture_from_data(self.data(claims, cases, **top), self.path,
                                    accept_exemptions=True)
        except FixtureError as exc:
            found: list[Problem] = exc.problems
        else:
            found = claim_problems(fixture, display_path(self.path))
        assert all(problem.file == display_path(self.path) for problem in found)
        by_pointer: dict[str, str] = {}
        for problem in found:
            earlier = by_pointer.get(problem.pointer)
            by_pointer[problem.pointer] = (f"{earlier} | {problem.message}" if earlier
                                           else problem.message)
        return by_pointer

    def case(self, data: dict[str, Any]) -> Any:
        return fixture_from_data(self.data([], [data]), self.path,
                                 accept_exemptions=True).cases[0]


@pytest.fixture
def skill(tmp_path: Path) -> Skill:
    return Skill(tmp_path / "skill")


def judge(fixture: Fixture, outcomes: dict[str, str],
          today: datetime.date = TODAY) -> tuple[dict[str, Any], str, list[str]]:
    return capability_readiness(fixture, outcomes, today)


def all_pass(fixture: Fixture) -> dict[str, str]:
    return {c.name: "PASS" for c in fixture.cases}


# --------------------------------------------------------------------------------------------
# Load-time rules
# --------------------------------------------------------------------------------------------


def test_a_sound_declaration_has_no_problem(skill: Skill) -> None:
    fixture = skill.load(
        [claim("a", "deterministic", "live_e2e"),
         claim("b", claim_semantics="value_bearing", domain_profile="json-scalar-v1",
               independent_of="a")],
        [case("c1", "a"), adversarial("c2", "integer", "b"), live("c3", "a")],
    )
    assert len(fixture.cases) == 3


def test_duplicate_claim_ids_are_rejected(skill: Skill) -> None:
    found = skill.problems([claim("a"), claim("b"), claim("a")], [case("c", "a")])
    assert found == {"/capability_claims/2/id":
                     "duplicate claim id 'a' (also /capability_claims/0/id)"}


def test_supports_claims_must_name_a_declared_claim(skill: Skill) -> None:
    found = skill.problems([claim("a")], [case("c0", "a"), case("c1", "a", "typo")])
    assert list(found) == ["/cases/1/supports_claims/1"]
    assert "'typo', which is not a declared claim" in found["/cases/1/supports_claims/1"]


def test_supports_claims_without_any_declared_claim(skill: Skill) -> None:
    found = skill.problems([], [case("c0", "a")])
    assert "the fixture declares no capability_claims" in found["/cases/0/supports_claims/0"]


@pytest.mark.parametrize("required", [{}, {"deterministic": False}, []])
def test_a_claim_must_require_at_least_one_class(skill: Skill, required: Any) -> None:
    found = skill.problems([claim("a", evidence_required=required)], [case("c", "a")])
    assert "requires no evidence class" in found["/capability_claims/0/evidence_required"]


def test_evidence_required_accepts_a_list_of_classes(skill: Skill) -> None:
    fixture = skill.load([claim("a", evidence_required=["deterministic", "live_e2e"])],
                         [case("c", "a"), live("l", "a")])
    report, _, _ = judge(fixture, all_pass(fixture))
    assert report["a"]["evidence_required"] == {"deterministic": True, "live_e2e": True}
    assert report["a"]["verdict"] == PROVEN


@pytest.mark.parametrize("bad", [
    {"criticality": "blocker"},
    {"evidence_required": {"live": True}},
    {"evidence_required": "live_e2e"},
    {"claim_semantic": "protocol"},
    {"claim_semantics": "values"},
    {"exemptions": [{"expiry": "2027-01-01"}]},
])
def test_the_schema_refuses_malformed_claims(skill: Skill, bad: dict[str, Any]) -> None:
    found = skill.problems([claim("a", **bad)], [case("c", "a")])
    assert any(pointer.startswith("/capability_claims/0") for pointer in found), found


def test_claim_semantics_is_required_on_critical_claims_only(skill: Skill) -> None:
    critical = claim("a")
    del critical["claim_semantics"]
    optional = claim("b", criticality="optional")
    del optional["claim_semantics"]
    found = skill.problems([critical, optional], [case("c", "a", "b")])
    assert list(found) == ["/capability_claims/0/claim_semantics"]
    assert "critical" in found["/capability_claims/0/claim_semantics"]


def test_value_bearing_claims_must_enumerate_representations(skill: Skill) -> None:
    found = skill.problems(
        [claim("bare", claim_semantics="value_bearing"),
         claim("empty", claim_semantics="value_bearing", representations=[]),
         claim("unknown", claim_semantics="value_bearing", domain_profile="json-v9"),
         claim("profile", claim_semantics="value_bearing", domain_profile="csv-cell-v1"),
         claim("listed", claim_semantics="value_bearing", representations=["hex"])],
        [case("c", "bare")],
    )
    for index in (0, 1, 2):
        assert "enumerates no representation" in found[f"/capability_claims/{index}"]
    assert "unknown domain_profile 'json-v9'" in found["/capability_claims/2/domain_profile"]
    assert not any(p.startswith(("/capability_claims/3", "/capability_claims/4"))
                   for p in found)


def test_a_case_representation_must_belong_to_a_claim_it_supports(skill: Skill) -> None:
    found = skill.problems(
        [claim("v", claim_semantics="value_bearing", domain_profile="json-scalar-v1"),
         claim("p")],
        [adversarial("ok", "integer", "v"),
         adversarial("wrong", "TEXT", "v"),
         adversarial("plain", "integer", "p"),
         case("none", representation="string")],
    )
    assert list(found) == ["/cases/1/representation", "/cases/2/representation",
                           "/cases/3/representation"]
    assert "admit float, integer, scientific, string" in found["/cases/1/representation"]
    assert "enumerates representations" in found["/cases/2/representation"]
    assert "supports no claim" in found["/cases/3/representation"]


def test_independent_of_must_name_another_declared_claim(skill: Skill) -> None:
    found = skill.problems(
        [claim("a", independent_of="ghost"), claim("b", independent_of="b"), claim("c")],
        [case("x", "a", "b", "c")],
    )
    assert "'ghost', which is not a declared claim" in found["/capability_claims/0/independent_of"]
    assert "independent of itself" in found["/capability_claims/1/independent_of"]
    assert len(found) == 2


def test_artifact_claim_tags_must_name_a_supported_claim(skill: Skill) -> None:
    tagged = live("l", "a")
    tagged["expected"]["artifacts"] = [
        {"path": "out/a.json", "exists": True, "claim": "a"},
        {"path": "out/b.json", "exists": True, "claim": "b"},
    ]
    found = skill.problems([claim("a"), claim("b")], [tagged])
    assert list(found) == ["/cases/0/expected/artifacts/1/claim"]
    assert "does not list in supports_claims" in found["/cases/0/expected/artifacts/1/claim"]


def test_exemptions_are_never_load_errors(skill: Skill) -> None:
    skill.load([claim("a", exemptions=[{"evidence_class": "live_e2e", "expires": "never"},
                                       {"reason_code": "x"}, {}])],
               [case("c", "a")])


# --------------------------------------------------------------------------------------------
# Qualification of live cases
# --------------------------------------------------------------------------------------------


def test_a_genuine_live_case_qualifies(skill: Skill) -> None:
    q = qualify(skill.case(live("l")))
    assert (q.declared, q.effective, q.live_qualified, q.disqualifiers) == (
        "live_e2e", "live_e2e", True, ())


def test_non_live_classes_are_taken_as_declared(skill: Skill) -> None:
    undeclared = qualify(skill.case(case("c", command=["echo", "hi"])))
    assert (undeclared.declared, undeclared.effective, undeclared.live_qualified) == (
        None, "deterministic", None)
    fuzz = qualify(skill.case(case("f", evidence_class="property_or_fuzz")))
    assert (fuzz.effective, fuzz.live_qualified, fuzz.disqualifiers) == (
        "property_or_fuzz", None, ())


def test_stub_inputs_disqualify_and_a_real_path_keeps_fault_injected(skill: Skill) -> None:
    q = qualify(skill.case(live("l", command=["bash", "run.sh", "--input",
                                              "fixtures/canned.json"])))
    assert q.live_qualified is False
    assert q.effective == "fault_injected_deterministic"
    (reason,) = q.disqualifiers
    assert "fixtures/canned.json" in reason and "stub" in reason


def test_no_entrypoint_disqualifies_to_deterministic(skill: Skill) -> None:
    q = qualify(skill.case(live("l", command=["bash", "missing.sh"])))
    assert q.effective == "deterministic"
    assert any("no substantive production entrypoint" in r for r in q.disqualifiers)


def test_an_unparseable_command_reaches_no_entrypoint(skill: Skill) -> None:
    q = qualify(skill.case(live("l", command=["bash", "-c", "./run.sh 'unbalanced"])))
    assert q.effective == "deterministic"
    assert any("cannot be analysed" in r and "unbalanced" in r for r in q.disqualifiers)


def test_exit_code_and_own_prose_is_no_oracle(skill: Skill) -> None:
    q = qualify(skill.case(live("l", expected={"exit_code": 0, "stdout_contains": ["done"]})))
    assert q.effective == "fault_injected_deterministic"
    (reason,) = q.disqualifiers
    assert "no independent read-back oracle" in reason
    assert "command's own prose" in reason


def test_reading_back_a_file_the_case_wrote_itself_is_no_oracle(skill: Skill) -> None:
    given = live("l", artifacts=[{"path": "out/./l.json", "content": {"ok": True}}])
    q = qualify(skill.case(given))
    assert q.live_qualified is False
    assert any("read back a file its own input artifacts or its own command wrote" in r
               for r in q.disqualifiers)


@pytest.mark.parametrize("script", [
    "bash run.sh l; echo '{\"ok\": true}' > out/l.json",
    "bash run.sh l; printf ok >> ./out/l.json",
    "bash run.sh l; cat run.sh > out/l.json",
    "mkdir out; cd out && cp ../run.sh l.json; cd .. && bash run.sh l",
    "bash run.sh l; dd if=run.sh of=out/l.json",
    "bash run.sh l; printf '{\"ok\": true}' | tee out/l.json",
    "bash run.sh l > /dev/null && echo '{\"ok\": true}' | tee -a out/x out/l.json",
    "bash run.sh l; { echo '{\"ok\":'; echo 'true}'; } > out/l.json",
    "bash run.sh l; (printf '{\"ok\": true}') > out/l.json",
    "bash run.sh l; if true; then echo '{}'; fi > out/l.json",
    "bash run.sh l; exec > out/l.json; echo '{\"ok\": true}'",
    # Any program that reads only files of the skill's folder (which exist before the trial)
    # copies them: the skill ran, but what is read back is the fixture's.
    "bash run.sh l && sort run.sh > out/l.json",
    "bash run.sh l; sort -o out/l.json run.sh",
    "bash run.sh l; bash -c 'sort run.sh' > out/l.json",
    "bash run.sh l; { sort run.sh; } > out/l.json",
    "bash run.sh l; cat run.sh | tee out/l.json",
    "bash run.sh l; cat < run.sh > out/l.json",
    "bash run.sh l; python3 -c \"import shutil; shutil.copy('run.sh', 'out/l.json')\"",
    "bash run.sh l; python3 -c \"open('out/l.json', 'w').write(open('run.sh').read())\"",
    "bash run.sh l out/l.json; sort run.sh > out/l.json",
    # Inline code makes its own answer: it needs no file of the skill's folder.
    "bash run.sh l && python3 -c \"open('out/l.json', 'w').write(chr(123) + chr(125))\"",
    "bash run.sh l; python3 -c 'print(1 + 1)' > out/l.json",
])
def test_reading_back_a_file_the_command_wrote_itself_is_no_oracle(
    skill: Skill, script: str
) -> None:
    q = qualify(skill.case(live("l", command=["bash", "-c", script])))
    assert q.live_qualified is False, q
    assert any("its own command wrote" in r for r in q.disqualifiers), q.disqualifiers


def test_a_sorted_copy_of_the_expected_answer_is_no_oracle_from_a_subfolder(
    skill: Skill
) -> None:
    # The skill runs, then the command puts the fixture's own answer where the read-back
    # looks: whatever the skill did, the file holds what the fixture expects.
    (skill.root / "expected.json").write_text('{"ok": true}\n')
    (skill.root / "work").mkdir()
    given = live("l", cwd="work", command=[
        "bash", "-c", "bash ../run.sh && sort ../expected.json > out.json"])
    given["expected"]["artifacts"] = [{"path": "out.json", "json_pointer": "/ok",
                                       "equals": True}]
    q = qualify(skill.case(given))
    assert q.live_qualified is False, q
    assert any("its own command wrote" in r for r in q.disqualifiers), q.disqualifiers
    given["command"] = ["bash", "-c", "bash ../run.sh > out.json"]
    assert qualify(skill.case(given)).live_qualified is True


@pytest.mark.parametrize("script", [
    "bash run.sh l out/l.json 2>&1",
    "bash run.sh l > out/l.json",
    "bash run.sh l | tee out/l.json",
    "bash run.sh l; cp out/produced.json out/l.json",
    "{ echo start; bash run.sh l; } > out/l.json",
    "false && { echo '{}'; } > out/l.json; bash run.sh l out/l.json",
    "exec > out/l.json; bash run.sh l",
    # What the skill made, transformed or compared: the file depends on the skill's work.
    "bash run.sh l; cat out/produced.json > out/l.json",
    "bash run.sh l; jq -S . out/produced.json > out/l.json",
    "bash run.sh l; sort run.sh out/produced.json > out/l.json",
    "bash run.sh l | sort > out/l.json",
    "sort run.sh > out/l.json; bash run.sh l out/l.json",
    "bash run.sh l; python3 -c \"import json; assert json.load(open('out/l.json'))\" run.sh",
    "bash run.sh l; diff out/l.json run.sh",
    "bash run.sh l | python3 -c 'import sys; print(sys.stdin.read())' > out/l.json",
    "bash run.sh l; python3 -c \"open('out/l.json', 'w').write(open('out/p.txt').read())\"",
])
def test_a_file_the_skill_writes_is_an_oracle(skill: Skill, script: str) -> None:
    q = qualify(skill.case(live("l", command=["bash", "-c", script])))
    assert q.live_qualified is True, q.disqualifiers


def test_generic_crash_markers_are_no_oracle(skill: Skill) -> None:
    markers = ["Traceback (most recent call last)", "Error", "panic:", "FAIL", "Exception"]
    q = qualify(skill.case(live("l", expected={"exit_code": 0, "stdout_excludes": markers,
                                               "stderr_excludes": ["TypeError"]})))
    assert q.live_qualified is False
    assert any("generic crash markers" in r for r in q.disqualifiers)


# The name must be printed and the phone must not: a skill that passes its input on fails
# the exclusion, one that does nothing fails the name.
EXCLUDES_PHONE = {"exit_code": 0, "stdout_contains": ["Ada"],
                  "stdout_excludes": ["Traceback", "555-0100"]}


@pytest.mark.parametrize("given", [
    {"command": ["bash", "run.sh", "--name", "Ada", "--phone", "555-0100"]},
    {"command": ["bash", "-c", "NAME=Ada PHONE=555-0100 bash run.sh"]},
    {"env": {"NAME": "Ada", "PHONE": "555-0100"}},
    {"artifacts": [{"path": "in/records.json",
                    "content": [{"name": "Ada", "phone": "555-0100"}]}]},
    {"artifacts": [{"path": "in/records.txt", "content": "Ada 555-0100\n"}]},
    {"artifacts": [{"path": "in/records.txt", "from": "data/records.txt"}]},
    {"command": ["bash", "run.sh", "data/records.txt"]},
    {"command": ["bash", "run.sh", "--input=data/records.txt"]},
])
def test_excluding_what_the_trial_gives_the_command_is_an_oracle(
        skill: Skill, given: dict[str, Any]) -> None:
    """A value the trial hands the command (in a word of its command, its environment, an
    input artifact, a file its command names) is what a broken skill passes on: excluding it
    is a check."""
    (skill.root / "data").mkdir()
    (skill.root / "data" / "records.txt").write_text("Ada 555-0100\n")
    q = qualify(skill.case(live("l", expected=EXCLUDES_PHONE, **given)))
    assert q.live_qualified is True, q.disqualifiers
    assert oracle(skill.case(case("d", expected=EXCLUDES_PHONE, **given)))[0] is True


@pytest.mark.parametrize("expected", [
    {"exit_code": 0, "stdout_excludes": ["555-0100"]},
    {"exit_code": 0, "stdout_contains": ["done"], "stdout_excludes": ["555-0100"]},
    {"exit_code": 0, "stdout_contains": ["555-0100"], "stdout_excludes": ["555-0100"]},
    {"exit_code": 0, "stderr_contains": ["Ada"], "stdout_excludes": ["555-0100"]},
])
def test_an_exclusion_on_a_stream_nothing_must_reach_is_no_live_oracle(
        skill: Skill, expected: dict[str, Any]) -> None:
    """A skill that does nothing (or only announces success) prints no phone number: the
    exclusion holds only beside a check that the stream carries what the trial gave. A guard
    that can still fail on a leak keeps its worth for coverage."""
    given = {"env": {"NAME": "Ada", "PHONE": "555-0100"}}
    q = qualify(skill.case(live("l", expected=expected, **given)))
    assert q.live_qualified is False, q
    [reason] = q.disqualifiers
    assert "where no check asks for what the trial gave" in reason, reason
    assert oracle(skill.case(case("d", expected=expected, **given)))[0] is True


@pytest.mark.parametrize("script", [
    "bash run.sh && echo $NAME",
    "bash run.sh --phone 555-0100 && printf '%s\\n' Ada",
    "bash run.sh --phone 555-0100; cat data/records.txt | cut -c1-3",
    "bash run.sh && printenv NAME",
    "bash run.sh && python3 -c \"import os; print(os.environ['NAME'])\"",
    "bash run.sh && python3 -c \"print(chr(65) + 'da')\"",
])
def test_a_text_the_command_prints_itself_does_not_carry_an_exclusion(
        skill: Skill, script: str) -> None:
    """The command's own programs print the name: a skill that does nothing passes."""
    (skill.root / "data").mkdir()
    (skill.root / "data" / "records.txt").write_text("Ada 555-0100\n")
    given = {"env": {"NAME": "Ada", "PHONE": "555-0100"},
             "command": ["bash", "-c", script], "expected": EXCLUDES_PHONE}
    q = qualify(skill.case(live("l", **given)))
    assert q.live_qualified is False, q
    assert any("where no check asks for what the trial gave" in r for r in q.disqualifiers), q


@pytest.mark.parametrize("script", [
    "echo 'Ada 555-0100' | bash run.sh",
    # What the skill prints, reformatted: the formatter prints nothing of its own.
    "bash run.sh --name Ada --phone 555-0100 | python3 -m json.tool",
    "bash run.sh --name Ada --phone 555-0100 | jq -r .name",
])
def test_a_text_piped_into_or_out_of_the_skill_carries_an_exclusion(
        skill: Skill, script: str) -> None:
    given = {"command": ["bash", "-c", script], "expected": EXCLUDES_PHONE}
    assert qualify(skill.case(live("l", **given))).live_qualified is True


@pytest.mark.parametrize("absent", [{"not_exists": True}, {"absent": True}, {"exists": False}])
def test_a_file_that_must_be_absent_is_no_live_oracle(
        skill: Skill, absent: dict[str, Any]) -> None:
    """A skill that does nothing writes no file: an absence is no proof it worked, though it
    is a guard that can fail (a skill that writes where it must not)."""
    expected = {"exit_code": 0, "artifacts": [{"path": "out/secret.txt", **absent}]}
    q = qualify(skill.case(live("l", expected=expected)))
    assert q.live_qualified is False, q
    assert any("only require a file to be absent" in r for r in q.disqualifiers), q
    assert oracle(skill.case(case("d", expected=expected)))[0] is True


def test_excluding_what_the_trial_never_gives_the_command_is_no_oracle(skill: Skill) -> None:
    """``qqqq`` is absent from the output of every skill, one that does nothing included: its
    absence checks nothing.  A file of the skill that the command does not name (its own
    source, which a skill under evaluation writes itself) does not make it given."""
    (skill.root / "notes.txt").write_text("555-0100 qqqq\n")
    for expected in ({"exit_code": 0, "stdout_excludes": ["qqqq"]},
                     {"exit_code": 0, "stderr_excludes": ["555-0100"]}):
        q = qualify(skill.case(live("l", expected=expected)))
        assert q.live_qualified is False
        [reason] = q.disqualifiers
        assert "texts the trial never gives the command" in reason, reason
        capable, why = oracle(skill.case(case("d", expected=expected)))
        assert capable is False
        assert any("never gives the command" in r for r in why), why


def test_an_artifact_excludes_of_what_the_skill_could_write_is_an_oracle(skill: Skill) -> None:
    real = {"exit_code": 0, "artifacts": [{"path": "out.txt", "excludes": ["555-0100"]}]}
    assert qualify(skill.case(live("l", expected=real))).live_qualified is True
    crash = {"exit_code": 0, "artifacts": [{"path": "out.txt", "excludes": ["Traceback"],
                                            "lines_exclude": ["Error"]}]}
    q = qualify(skill.case(live("l", expected=crash)))
    assert q.live_qualified is False
    assert any("only exclude generic crash markers" in r for r in q.disqualifiers)


def test_an_exact_stdout_is_still_the_commands_own_prose(skill: Skill) -> None:
    q = qualify(skill.case(live("l", expected={"exit_code": 0, "stdout_equals": "3 rows\n"})))
    assert q.live_qualified is False
    assert any("command's own prose" in r for r in q.disqualifiers)


@pytest.mark.parametrize(("text", "generic"), [
    ("Traceback", True), ("ERROR:", True), ("error", True), ("panicked", True),
    ("thread 'main' panicked at", True), ("ValueError", True), ("FAILED", True),
    ("555-0100", False), ("error: name required", False), ("Failed to redact", False),
    ("5550101", False), ("@", False), ("phone", False), ("terror", False),
    ("NullPointerException", True),
])
def test_crash_marker_classification(text: str, generic: bool) -> None:
    assert is_generic_crash_marker(text) is generic


def test_bare_readback_is_a_disqualifier_of_its_own(skill: Skill) -> None:
    bare = qualify(skill.case(live("l", readback=True, expected={"exit_code": 0})))
    assert bare.effective == "fault_injected_deterministic"
    assert any("readback: true with nothing behind it" in r for r in bare.disqualifiers)
    backed = qualify(skill.case(live("l", readback=True)))
    assert backed.live_qualified is True


def test_optional_artifacts_alone_are_no_oracle(skill: Skill) -> None:
    q = qualify(skill.case(live("l", expected={"exit_code": 0, "artifacts": [
        {"path": "out/x.json", "exists": True, "optional": True}]})))
    assert q.live_qualified is False
    assert any("optional" in r for r in q.disqualifiers)


def test_adversarial_live_on_a_positive_case_counts_as_live(skill: Skill) -> None:
    q = qualify(skill.case(live("l", evidence_class="adversarial_live_e2e")))
    assert (q.effective, q.live_qualified) == ("live_e2e", True)
    assert "not adversarial" in q.disqualifiers[0]
    real = qualify(skill.case(live("l", type="adversarial",
                                   evidence_class="adversarial_live_e2e")))
    assert (real.effective, real.disqualifiers) == ("adversarial_live_e2e", ())


def ask_case(command: list[str], artifact: str) -> dict[str, Any]:
    return live("ask", command=command, expected={"exit_code": 0, "artifacts": [
        {"path": artifact, "min_bytes": 1}]})


def test_ask_without_execute_is_a_deterministic_preflight(skill: Skill) -> None:
    q = qualify(skill.case(ask_case(["bash", "run.sh", "$ask", "roundtable"],
                                    "out/response.md")))
    assert q.effective == "deterministic"
    (reason,) = q.disqualifiers
    assert "--execute" in reason and "pre-flight" in reason


def test_ask_with_execute_needs_a_provider_artifact(skill: Skill) -> None:
    q = qualify(skill.case(ask_case(["bash", "run.sh", "$ask", "roundtable", "--execute"],
                                    "out/result.json")))
    assert q.effective == "fault_injected_deterministic"
    (reason,) = q.disqualifiers
    assert "without an artifact assertion on a provider run artifact" in reason
    assert "node-receipt.json" in reason and "--execute and" not in reason


def test_ask_with_execute_and_provider_readback_is_live(skill: Skill) -> None:
    for command in (["bash", "run.sh", "$ask", "roundtable", "--execute"],
                    ["bash", "-lc", "./run.sh '$ask roundtable --execute'"]):
        q = qualify(skill.case(ask_case(command, "runs/1/execution-status.json")))
        assert (q.effective, q.live_qualified) == ("live_e2e", True), q.disqualifiers


# --------------------------------------------------------------------------------------------
# Per-claim verdicts
# --------------------------------------------------------------------------------------------


def test_proven_when_every_required_class_passed(skill: Skill) -> None:
    fixture = skill.load([claim("a", "deterministic", "live_e2e")],
                         [case("d", "a"), live("l", "a")])
    report, readiness, lines = judge(fixture, all_pass(fixture))
    entry = report["a"]
    assert entry["verdict"] == PROVEN
    assert entry["evidence_provided"] == {"deterministic": "PROVEN", "live_e2e": "PROVEN"}
    assert entry["supporting_cases"] == {"deterministic": ["d"], "live_e2e": ["l"]}
    assert entry["reasons"] == [] and entry["blocking_cases"] == []
    assert (readiness, lines) == (READY, [])


def test_twenty_green_deterministic_cases_do_not_prove_a_live_claim(skill: Skill) -> None:
    cases = [case(f"d{i}", "a") for i in range(20)]
    fixture = skill.load([claim("a", "deterministic", "live_e2e")], cases)
    report, readiness, lines = judge(fixture, all_pass(fixture))
    assert report["a"]["verdict"] == PARTIALLY_PROVEN
    assert report["a"]["evidence_provided"]["live_e2e"] == "MISSING"
    assert readiness == USABLE_WITH_GAPS
    assert lines == ["claim a (critical): PARTIALLY_PROVEN: no case supplies required live_e2e "
                     "evidence (20 cases without evidence_class count as deterministic; a case "
                     'that runs live says "evidence_class": "live_e2e")']


def test_a_disqualified_live_case_does_not_fill_the_live_slot(skill: Skill) -> None:
    fake = live("l", "a", command=["bash", "run.sh", "fixtures/mock_reply.json"])
    fixture = skill.load([claim("a", "deterministic", "live_e2e")], [case("d", "a"), fake])
    report, _, _ = judge(fixture, all_pass(fixture))
    entry = report["a"]
    assert entry["verdict"] == PARTIALLY_PROVEN
    assert entry["supporting_cases"]["live_e2e"] == []
    assert entry["supporting_cases"]["fault_injected_deterministic"] == ["l"]
    (disqualified,) = entry["disqualified_cases"]
    assert disqualified["case"] == "l" and disqualified["effective"] == (
        "fault_injected_deterministic")
    assert any("mock_reply" in r for r in disqualified["reasons"])
    assert entry["reasons"] == ["no case supplies required live_e2e evidence (declared but "
                                "disqualified: l) (d without evidence_class count as "
                                'deterministic; a case that runs live says "evidence_class": '
                                '"live_e2e")']


def test_adversarial_live_satisfies_a_live_requirement(skill: Skill) -> None:
    adversarial_live = live("l", "a", type="adversarial", evidence_class="adversarial_live_e2e")
    fixture = skill.load([claim("a", "live_e2e")], [adversarial_live])
    report, _, _ = judge(fixture, all_pass(fixture))
    assert report["a"]["verdict"] == PROVEN
    fixture = skill.load([claim("a", "adversarial_live_e2e")], [live("l", "a")])
    report, _, _ = judge(fixture, all_pass(fixture))
    assert report["a"]["verdict"] == NOT_ESTABLISHED


def test_failed_when_a_required_class_failed(skill: Skill) -> None:
    fixture = skill.load([claim("a", "deterministic", "live_e2e")],
                         [case("d", "a"), live("l", "a")])
    report, readiness, lines = judge(fixture, {"d": "PASS", "l": "FAIL"})
    assert report["a"]["verdict"] == FAILED
    assert report["a"]["evidence_provided"]["live_e2e"] == "FAILED"
    assert report["a"]["blocking_cases"] == ["l"]
    assert readiness == NOT_READY
    assert lines == ["claim a (critical): FAILED: required live_e2e evidence failed: l"]


def test_a_failing_case_outside_the_required_classes_still_fails_the_claim(skill: Skill) -> None:
    fixture = skill.load([claim("a", "live_e2e")],
                         [live("l", "a"), case("d", "a", evidence_class="property_or_fuzz")])
    report, _, _ = judge(fixture, {"l": "PASS", "d": "FAIL"})
    assert report["a"]["verdict"] == FAILED
    assert report["a"]["evidence_provided"] == {"live_e2e": "PROVEN", "property_or_fuzz": "FAILED"}


def test_blocked_external_when_only_blocked_evidence_is_missing(skill: Skill) -> None:
    fixture = skill.load([claim("a", "deterministic", "live_e2e")],
                         [case("d", "a"), live("l", "a")])
    report, readiness, _ = judge(fixture, {"d": "PASS", "l": "BLOCKED"})
    assert report["a"]["verdict"] == BLOCKED_EXTERNAL
    assert report["a"]["blocking_cases"] == ["l"]
    assert "blocked" in report["a"]["reasons"][0]
    assert readiness == READINESS_NOT_ESTABLISHED


def test_a_live_slot_met_only_by_a_blocked_case_is_not_proven(skill: Skill) -> None:
    fixture = skill.load([claim("a", "live_e2e")], [live("l", "a")])
    report, readiness, _ = judge(fixture, {"l": "BLOCKED"})
    assert report["a"]["verdict"] == BLOCKED_EXTERNAL
    assert readiness != READY


def test_a_blocked_case_beside_a_passing_one_keeps_the_class_unproven(skill: Skill) -> None:
    fixture = skill.load([claim("a", "live_e2e")], [live("l1", "a"), live("l2", "a")])
    report, _, _ = judge(fixture, {"l1": "PASS", "l2": "BLOCKED"})
    assert report["a"]["evidence_provided"] == {"live_e2e": "BLOCKED"}
    assert report["a"]["verdict"] == BLOCKED_EXTERNAL
    assert "beside passing l1" in report["a"]["reasons"][0]


def test_blocked_beside_a_missing_class_is_not_blocked_external(skill: Skill) -> None:
    fixture = skill.load([claim("a", "deterministic", "live_e2e", "human_evaluation")],
                         [case("d", "a"), live("l", "a")])
    report, _, _ = judge(fixture, {"d": "PASS", "l": "BLOCKED"})
    assert report["a"]["verdict"] == PARTIALLY_PROVEN


def test_not_established_without_any_proven_class(skill: Skill) -> None:
    fixture = skill.load([claim("a", "live_e2e")], [case("d", "a")])
    report, readiness, lines = judge(fixture, all_pass(fixture))
    assert report["a"]["verdict"] == NOT_ESTABLISHED
    assert report["a"]["supporting_cases"] == {"live_e2e": [], "deterministic": ["d"]}
    assert readiness == READINESS_NOT_ESTABLISHED
    assert lines == ["claim a (critical): NOT_ESTABLISHED: no case supplies required "
                     "live_e2e evidence (d without evidence_class count as deterministic; a "
                     'case that runs live says "evidence_class": "live_e2e")']


# --------------------------------------------------------------------------------------------
# A live case supporting several claims
# --------------------------------------------------------------------------------------------


def test_a_shared_live_case_without_per_claim_artifacts_counts_for_none(skill: Skill) -> None:
    fixture = skill.load([claim("a", "live_e2e"), claim("b", "live_e2e")],
                         [live("l", "a", "b")])
    report, readiness, _ = judge(fixture, all_pass(fixture))
    for claim_id in ("a", "b"):
        entry = report[claim_id]
        assert entry["verdict"] == NOT_ESTABLISHED
        assert entry["supporting_cases"] == {"live_e2e": []}
        (uncounted,) = entry["uncounted_cases"]
        assert uncounted["case"] == "l" and "does not count for" in uncounted["reason"]
        assert "shared live run with no artifact naming this claim: l" in entry["reasons"][0]
    assert readiness == READINESS_NOT_ESTABLISHED


COPIES = {
    "copied-check": {"path": "out/a.json", "is_true": True},
    # The same check with a key that checks nothing at its value, or its lines in another
    # order: still the same check.
    "copy-with-a-no-op": {"path": "out/a.json", "is_true": True, "min_bytes": 0,
                          "optional": False},
    "optional-check": {"path": "out/b.json", "is_true": True, "optional": True},
}


@pytest.mark.parametrize("second", COPIES.values(), ids=COPIES.keys())
def test_a_shared_live_case_needs_a_check_of_its_own_per_claim(
    skill: Skill, second: dict[str, Any]
) -> None:
    """The same assertion under two labels reads one thing once, and an optional one reads
    nothing when the file is missing: neither proves a second claim."""
    copied = not second.get("optional")
    shared = live("l", "a", "b")
    check = {"path": "out/a.json", "is_true": True}
    second = {**second, "claim": "b"}
    shared["expected"]["artifacts"] = [{**check, "claim": "a"}, second]
    fixture = skill.load([claim("a", "live_e2e"), claim("b", "live_e2e")], [shared])
    report, _, _ = judge(fixture, all_pass(fixture))
    assert report["b"]["verdict"] == NOT_ESTABLISHED
    assert "with a check of its own" in report["b"]["uncounted_cases"][0]["reason"]
    # Copied, neither label counts; the first one, where the second is only optional, does.
    assert report["a"]["verdict"] == (NOT_ESTABLISHED if copied else PROVEN)


def test_a_shared_live_case_counts_for_the_claim_its_artifact_names(skill: Skill) -> None:
    shared = live("l", "a", "b")
    shared["expected"]["artifacts"] = [{"path": "out/a.json", "is_true": True, "claim": "a"}]
    fixture = skill.load([claim("a", "live_e2e"), claim("b", "live_e2e")], [shared])
    report, _, _ = judge(fixture, all_pass(fixture))
    assert report["a"]["verdict"] == PROVEN
    assert report["b"]["verdict"] == NOT_ESTABLISHED
    assert report["b"]["uncounted_cases"][0]["case"] == "l"


def test_a_shared_deterministic_case_counts_for_each_claim(skill: Skill) -> None:
    fixture = skill.load([claim("a"), claim("b")], [case("d", "a", "b")])
    report, _, _ = judge(fixture, all_pass(fixture))
    assert report["a"]["verdict"] == report["b"]["verdict"] == PROVEN


# --------------------------------------------------------------------------------------------
# Exemptions
# --------------------------------------------------------------------------------------------


def exemption(**overrides: Any) -> dict[str, Any]:
    data = {"evidence_class": "live_e2e", "reason_code": "PROVIDER_QUOTA",
            "justification": "the provider sandbox is down until the contract renews",
            "owner": "ops@example.com", "expires": "2026-12-31"}
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def test_a_valid_exemption_is_shown_but_never_proves(skill: Skill) -> None:
    for expires in ("2026-12-31", "2026-06-01", "2026-06-01T00:00:00Z"):
        fixture = skill.load([claim("a", "deterministic", "live_e2e",
                                    exemptions=[exemption(expires=expires)])],
                             [case("d", "a")])
        report, readiness, lines = judge(fixture, all_pass(fixture))
        entry = report["a"]
        assert entry["exempt_evidence"] == [exemption(expires=expires)]
        assert entry["ignored_exemptions"] == []
        assert entry["verdict"] == PARTIALLY_PROVEN
        assert readiness != READY
        assert "never proves a claim" in lines[0]


def test_an_exemption_cannot_prove_a_claim_whose_only_requirement_it_covers(
    skill: Skill,
) -> None:
    fixture = skill.load([claim("a", "live_e2e", exemptions=[exemption()])], [case("d", "a")])
    report, _, _ = judge(fixture, all_pass(fixture))
    assert report["a"]["verdict"] == NOT_ESTABLISHED


@pytest.mark.parametrize(("overrides", "why"), [
    ({"expires": "2026-05-31"}, "expired on 2026-05-31"),
    ({"expires": "2026-05-31T23:59:59+00:00"}, "expired on 2026-05-31"),
    ({"expires": "never"}, "not a real ISO date"),
    ({"expires": "2026-13-01"}, "not a real ISO date"),
    ({"expires": "20261231"}, "not a real ISO date"),
    ({"owner": None}, "incomplete: owner"),
    ({"justification": "  "}, "incomplete: justification"),
    ({"expires": 20261231}, "incomplete: expires"),
    ({"evidence_class": "eval_not_required"}, "blanket exemption"),
])
def test_invalid_exemptions_are_ignored_and_reported(
    skill: Skill, overrides: dict[str, Any], why: str
) -> None:
    fixture = skill.load([claim("a", "deterministic", "live_e2e",
                                exemptions=[exemption(**overrides)])],
                         [case("d", "a")])
    report, _, lines = judge(fixture, all_pass(fixture))
    entry = report["a"]
    assert entry["exempt_evidence"] == []
    (ignored,) = entry["ignored_exemptions"]
    assert why in ignored["reason"]
    assert entry["verdict"] == PARTIALLY_PROVEN
    assert "exempt" not in lines[0]


# --------------------------------------------------------------------------------------------
# Partial runs
# --------------------------------------------------------------------------------------------


def test_not_tested_cases_do_not_count(skill: Skill) -> None:
    fixture = skill.load([claim("a"), claim("b", "live_e2e")],
                         [case("d1", "a"), case("d2", "a"), live("l", "b")])
    report, _, _ = judge(fixture, {"d1": "PASS", "d2": "NOT_TESTED", "l": "NOT_TESTED"})
    assert report["a"]["verdict"] == PROVEN  # computed from what ran
    assert report["b"]["verdict"] == NOT_ESTABLISHED
    assert "not tested in this run" in report["b"]["reasons"][0]
    # A case missing from the outcomes did not run either, and an untested failure is no failure.
    report, _, _ = judge(fixture, {"d2": "PASS"})
    assert report["a"]["verdict"] == PROVEN
    report, _, _ = judge(fixture, {})
    assert report["a"]["verdict"] == NOT_ESTABLISHED


# --------------------------------------------------------------------------------------------
# Value-bearing claims
# --------------------------------------------------------------------------------------------


def pii_claim(**extra: Any) -> dict[str, Any]:
    return claim("no-pii-in-output", "deterministic", claim_semantics="value_bearing",
                 domain_profile="json-scalar-v1", **extra)


def matrix_cases(skip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    cases = [adversarial(f"phone-{rep}", rep, "no-pii-in-output") for rep in JSON_SCALARS
             if rep not in skip]
    cases[0]["seams"] = ["value-representation"]
    return cases


def test_complete_representation_matrix_is_proven(skill: Skill) -> None:
    fixture = skill.load([pii_claim()], matrix_cases(), seams=VALUE_SEAM)
    report, readiness, _ = judge(fixture, all_pass(fixture))
    entry = report["no-pii-in-output"]
    assert entry["verdict"] == PROVEN, entry["reasons"]
    assert entry["missing_representations"] == []
    assert entry["representations"]["integer"] == [
        {"case": "phone-integer", "outcome": "PASS", "can_fail": True,
         "can_fail_source": "static"}]
    assert readiness == READY


def test_missing_representations_are_not_proven(skill: Skill) -> None:
    fixture = skill.load([pii_claim()], matrix_cases(skip=("integer", "float", "scientific")),
                         seams=VALUE_SEAM)
    report, _, lines = judge(fixture, all_pass(fixture))
    entry = report["no-pii-in-output"]
    assert entry["verdict"] == PARTIALLY_PROVEN
    assert entry["missing_representations"] == ["integer", "float", "scientific"]
    assert entry["representations"]["float"] == []
    assert lines[0].startswith("claim no-pii-in-output (critical): PARTIALLY_PROVEN: missing "
                               "representations integer, float, scientific")


def test_a_representation_whose_only_case_cannot_fail_is_not_proven(skill: Skill) -> None:
    cases = matrix_cases()
    cases[1]["expected"] = {"exit_code": 0}  # a bare exit 0 cannot see a leaked phone number
    fixture = skill.load([pii_claim()], cases, seams=VALUE_SEAM)
    report, _, _ = judge(fixture, all_pass(fixture))
    entry = report["no-pii-in-output"]
    assert entry["verdict"] == PARTIALLY_PROVEN
    assert entry["missing_representations"] == ["integer"]
    assert entry["representations"]["integer"] == [
        {"case": "phone-integer", "outcome": "PASS", "can_fail": False,
         "can_fail_source": "static"}]
    assert "cannot fail" in entry["reasons"][0]


def test_a_non_zero_exit_code_can_fail(skill: Skill) -> None:
    cases = matrix_cases()
    cases[1]["expected"] = {"exit_code": 3}  # refusing the input is a check that can fail
    fixture = skill.load([pii_claim()], cases, seams=VALUE_SEAM)
    report, _, _ = judge(fixture, all_pass(fixture))
    assert report["no-pii-in-output"]["verdict"] == PROVEN


def test_only_adversarial_cases_fill_the_matrix(skill: Skill) -> None:
    cases = matrix_cases()
    cases[2]["type"] = "positive"
    fixture = skill.load([pii_claim()], cases, seams=VALUE_SEAM)
    report, _, _ = judge(fixture, all_pass(fixture))
    assert report["no-pii-in-output"]["missing_representations"] == ["float"]


def test_explicit_representations_join_the_profile(skill: Skill) -> None:
    cases = [*matrix_cases(), adversarial("phone-hex", "hex", "no-pii-in-output")]
    fixture = skill.load([pii_claim(representations=["hex", "bigint"])], cases,
                         seams=VALUE_SEAM)
    report, _, _ = judge(fixture, all_pass(fixture))
    entry = report["no-pii-in-output"]
    assert list(entry["representations"]) == [*JSON_SCALARS, "hex", "bigint"]
    assert entry["missing_representations"] == ["bigint"]


def test_a_blocked_representation_is_blocked_external(skill: Skill) -> None:
    fixture = skill.load([pii_claim()], matrix_cases(), seams=VALUE_SEAM)
    outcomes = all_pass(fixture) | {"phone-float": "BLOCKED"}
    report, _, _ = judge(fixture, outcomes)
    assert report["no-pii-in-output"]["verdict"] == BLOCKED_EXTERNAL


@pytest.mark.parametrize(("seams", "guard", "why"), [
    (None, True, "declares no 'value-representation' seam"),
    ([{"seam_id": "value-representation", "criticality": "important"}], True,
     "not declared critical"),
    (VALUE_SEAM, False, "no case lists it"),
])
def test_value_claims_need_the_value_representation_seam(
    skill: Skill, seams: Any, guard: bool, why: str
) -> None:
    cases = matrix_cases()
    if not guard or seams is None:  # a case may only name a seam the fixture declares
        del cases[0]["seams"]
    top = {} if seams is None else {"seams": seams}
    fixture = skill.load([pii_claim()], cases, **top)
    report, _, _ = judge(fixture, all_pass(fixture))
    entry = report["no-pii-in-output"]
    assert entry["verdict"] == PARTIALLY_PROVEN
    assert any(why in reason for reason in entry["reasons"]), entry["reasons"]


def test_a_seam_guard_that_cannot_fail_does_not_count(skill: Skill) -> None:
    cases = [*matrix_cases(), case("smoke", seams=["value-representation"],
                                   expected={"exit_code": 0})]
    del cases[0]["seams"]
    fixture = skill.load([pii_claim()], cases, seams=VALUE_SEAM)
    report, _, _ = judge(fixture, all_pass(fixture))
    assert any("smoke) cannot fail" in r for r in report["no-pii-in-output"]["reasons"])


# --------------------------------------------------------------------------------------------
# Independence
# --------------------------------------------------------------------------------------------


def independence(skill: Skill, checker_reps: tuple[str, ...]) -> dict[str, Any]:
    reps = ["string", "integer", "float"]
    claims = [claim("transform", claim_semantics="other", representations=reps),
              claim("checker", claim_semantics="other", representations=reps,
                    independent_of="transform")]
    cases = [adversarial("t-string", "string", "transform"),
             adversarial("t-integer", "integer", "transform")]
    cases += [adversarial(f"c-{rep}", rep, "checker") for rep in checker_reps]
    fixture = skill.load(claims, cases)
    report, _, _ = judge(fixture, all_pass(fixture))
    return report


def test_independence_is_nominal_when_the_checker_shares_the_generator(skill: Skill) -> None:
    report = independence(skill, ("string", "integer"))
    entry = report["checker"]
    assert entry["verdict"] == PARTIALLY_PROVEN
    assert "independence from 'transform' is nominal" in entry["reasons"][0]
    assert report["transform"]["verdict"] == PROVEN


def test_independence_is_real_with_a_representation_the_producer_lacks(skill: Skill) -> None:
    report = independence(skill, ("string", "float"))
    assert report["checker"]["verdict"] == PROVEN


# --------------------------------------------------------------------------------------------
# Claim-based readiness
# --------------------------------------------------------------------------------------------


def test_only_critical_claims_gate_when_there_are_any(skill: Skill) -> None:
    fixture = skill.load(
        [claim("core"), claim("extra", "live_e2e", criticality="important")],
        [case("d", "core", "extra")],
    )
    report, readiness, lines = judge(fixture, all_pass(fixture))
    assert report["extra"]["verdict"] == NOT_ESTABLISHED
    assert readiness == READY
    assert lines == ["claim extra (important): NOT_ESTABLISHED: no case supplies required "
                     "live_e2e evidence (d without evidence_class count as deterministic; a "
                     'case that runs live says "evidence_class": "live_e2e")']


def test_without_critical_claims_every_claim_gates(skill: Skill) -> None:
    claims = [claim("a", criticality="optional"),
              claim("b", "live_e2e", criticality="important")]
    fixture = skill.load(claims, [case("d", "a", "b")])
    report, readiness, _ = judge(fixture, all_pass(fixture))
    # One claim proven, the other with no evidence: with nothing critical every claim gates,
    # all or nothing (the earlier tool's rule), so no USABLE_WITH_GAPS on half of them.
    assert (report["a"]["verdict"], report["b"]["verdict"]) == (PROVEN, NOT_ESTABLISHED)
    assert readiness == NOT_READY
    _, readiness, _ = judge(fixture, {"d": "NOT_TESTED"})
    assert readiness == NOT_READY
    fixture = skill.load(claims, [case("d", "a", "b"), live("l", "b")])
    _, readiness, _ = judge(fixture, all_pass(fixture))
    assert readiness == READY
    _, readiness, _ = judge(fixture, {"d": "PASS", "l": "FAIL"})
    assert readiness == NOT_READY


def test_a_critical_gap_with_evidence_elsewhere_is_usable_with_gaps(skill: Skill) -> None:
    fixture = skill.load([claim("a", "live_e2e"), claim("b", criticality="optional")],
                         [case("d", "b")])
    report, readiness, _ = judge(fixture, all_pass(fixture))
    assert (report["a"]["verdict"], report["b"]["verdict"]) == (NOT_ESTABLISHED, PROVEN)
    assert readiness == USABLE_WITH_GAPS


# --------------------------------------------------------------------------------------------
# Property: PROVEN only on the evidence that proves it
# --------------------------------------------------------------------------------------------

OUTCOMES = ("PASS", "FAIL", "BLOCKED", "NOT_TESTED")


def property_fixture(skill: Skill) -> Fixture:
    shared = live("l2", "V", "Y")
    shared["expected"]["artifacts"] = [{"path": "out/v.json", "exists": True, "claim": "V"}]
    cases = [
        adversarial("d1", "string", "V", seams=["value-representation"]),
        adversarial("d2", "integer", "V", expected={"exit_code": 0}),  # cannot fail
        adversarial("d3", "integer", "V"),
        live("l1", "V"),
        shared,
        live("l3", "V", command=["echo", "pretend"]),  # disqualified: deterministic
        case("p1", "Y", evidence_class="property_or_fuzz"),
        case("d4", "Y"),
    ]
    claims = [
        claim("V", "deterministic", "live_e2e", claim_semantics="value_bearing",
              representations=["string", "integer"]),
        claim("Y", "deterministic", "property_or_fuzz"),
    ]
    return skill.load(claims, cases, seams=VALUE_SEAM)


def test_proven_exactly_when_the_evidence_proves_it(tmp_path: Path) -> None:
    fixture = property_fixture(Skill(tmp_path / "skill"))
    names = [c.name for c in fixture.cases]

    @settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(st.sampled_from(OUTCOMES), min_size=len(names), max_size=len(names)))
    def check(assigned: list[str]) -> None:
        out = dict(zip(names, assigned, strict=True))
        report, readiness, lines = capability_readiness(fixture, out, TODAY)

        # V: deterministic cases d1, d2, d3 and the disqualified l3; live l1 and l2 (l2 names V).
        v_cases = ["d1", "d2", "d3", "l1", "l2", "l3"]
        v_ran = [out[n] for n in v_cases if out[n] != "NOT_TESTED"]
        v_expected = (
            any(out[n] == "PASS" for n in ("d1", "d2", "d3", "l3"))
            and any(out[n] == "PASS" for n in ("l1", "l2"))
            and "FAIL" not in v_ran and "BLOCKED" not in v_ran
            and out["d1"] == "PASS"  # the only string case that can fail
            and out["d3"] == "PASS"  # d2 cannot fail, so integer rests on d3
        )
        # Y: l2 supports it too but names only V, so it never counts for Y.
        y_expected = out["d4"] == "PASS" and out["p1"] == "PASS"

        assert (report["V"]["verdict"] == PROVEN) is v_expected, (out, report["V"]["reasons"])
        assert (report["Y"]["verdict"] == PROVEN) is y_expected, out
        if "FAIL" in v_ran:
            assert report["V"]["verdict"] == FAILED
        assert (readiness == READY) is (v_expected and y_expected)
        assert len(lines) == (not v_expected) + (not y_expected)

    check()


def test_an_exemption_does_not_change_a_blocked_verdict(skill: Skill) -> None:
    fixture = skill.load([claim("a", "deterministic", "live_e2e", exemptions=[exemption()])],
                         [case("d", "a"), live("l", "a")])
    report, _, lines = judge(fixture, {"d": "PASS", "l": "BLOCKED"})
    assert report["a"]["verdict"] == BLOCKED_EXTERNAL
    assert "exempt until 2026-12-31 (PROVIDER_QUOTA, owner ops@example.com)" in lines[0]
