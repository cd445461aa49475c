"""Execution provenance as pure functions: identity hashes, mutation flags, integrity errors,
reason codes, eligibility and admission pins (the earlier tool's model, ORIGINAL.md 1.9)."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentic_evals.evidence import provenance as prov
from pytest_agentic_evals.loading import FixtureError, fixture_from_data
from pytest_agentic_evals.model import Case

BASE: dict[str, Any] = {
    "name": "qid-regression",
    "type": "adversarial",
    "command": ["bash", "-c", "exit 0"],
    "expected": {"exit_code": 0},
    "supports_claims": ["claim.qid"],
}


def case_of(**changes: Any) -> Case:
    data = {**copy.deepcopy(BASE), **changes}
    return Case(index=0, name=data["name"], type=data["type"], command=tuple(data["command"]),
                expected=data.get("expected", {}), cwd=Path(), source=data)


def hashes(**changes: Any) -> tuple[str, str]:
    case = case_of(**changes)
    return prov.test_source_sha256(case), prov.oracle_sha256(case)


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- identity hashes ----------------------------------------------------------------------------

def test_the_hashes_are_of_canonical_json_as_the_earlier_tool_defines_them() -> None:
    case = case_of(description="café ☕", expected={"stdout_contains": ["é"], "exit_code": 0},
                   execution_mode="regression_replay", provenance={})
    # Sorted keys, no spaces, non-ASCII kept as UTF-8; the oracle and the wrapper left out.
    assert prov.test_source_sha256(case) == sha(
        '{"command":["bash","-c","exit 0"],"description":"café ☕","name":"qid-regression",'
        '"supports_claims":["claim.qid"],"type":"adversarial"}')
    assert prov.oracle_sha256(case) == sha('{"exit_code":0,"stdout_contains":["é"]}')


def test_a_case_without_expected_hashes_an_empty_oracle() -> None:
    case = case_of()
    del case.source["expected"]
    assert prov.oracle_sha256(case) == sha("{}")


@pytest.mark.parametrize("key", sorted(prov.NOT_TEST_SOURCE - {"expected"}))
def test_the_provenance_wrapper_is_not_part_of_the_test(key: str) -> None:
    value: Any = "regression_replay" if key == "execution_mode" else {}
    assert hashes(**{key: value}) == hashes()


@pytest.mark.parametrize("change", [
    {"name": "renamed"}, {"command": ["bash", "-c", "exit 1"]}, {"timeout_seconds": 5},
    {"description": "now described"}, {"tags": ["slow"]}, {"type": "negative"},
])
def test_everything_else_of_the_case_is_part_of_the_test(change: dict[str, Any]) -> None:
    test_hash, oracle_hash = hashes(**change)
    assert test_hash != hashes()[0]
    assert oracle_hash == hashes()[1]


def test_editing_the_oracle_changes_only_the_oracle_hash() -> None:
    test_hash, oracle_hash = hashes(expected={"exit_code": 0, "stdout_contains": ["broken"]})
    assert test_hash == hashes()[0]
    assert oracle_hash != hashes()[1]


def test_the_generation_is_named_by_the_lineage_or_derived_from_both_hashes() -> None:
    assert prov.generation_id(case_of(generated_test_lineage={"generation_id": "gen-2"})) == "gen-2"
    assert prov.generation_id(case_of(generated_test={"generation_id": "gen-3"})) == "gen-3"
    test_hash, oracle_hash = hashes()
    derived = prov.generation_id(case_of())
    assert derived == sha(json.dumps({"oracle_sha256": oracle_hash, "test_source_sha256":
                                      test_hash}, separators=(",", ":")))[:32]
    assert len(derived) == len("sha256:") + 25
    # A different oracle is a different generation.
    assert prov.generation_id(case_of(expected={"exit_code": 1})) != derived


@pytest.mark.parametrize("written", ["sha256:" + "AB" * 32, "ab" * 32, "AB" * 32])
def test_hashes_compare_with_or_without_their_prefix(written: str) -> None:
    assert prov.normalized_hash(written) == "sha256:" + "ab" * 32


# -- reason codes and integrity errors -----------------------------------------------------------

def eligibility(**changes: Any) -> prov.Eligibility:
    return prov.case_provenance(case_of(**changes)).eligibility


def test_an_unchanged_replay_is_eligible() -> None:
    test_hash, oracle_hash = hashes()
    for changes in ({}, {"provenance": {"prior_test_source_sha256": test_hash,
                                        "prior_oracle_sha256": oracle_hash}},
                    {"repair": {"prior_oracle_sha256": oracle_hash[7:].upper()}},
                    {"execution_mode": "regression_replay",
                     "external_result": {"status": "passed", "test_source_sha256": test_hash}}):
        result = eligibility(**changes)
        assert result == prov.Eligibility(True, False, (), ()), changes
        assert not prov.case_provenance(case_of(**changes)).fails_integrity


ORIGINAL_TEST, ORIGINAL_ORACLE = hashes(command=["bash", "-c", "echo wrong; exit 1"],
                                      expected={"exit_code": 0, "stdout_contains": ["right"]})


@pytest.mark.parametrize(("changes", "reasons", "errors"), [
    pytest.param({"provenance": {"prior_test_source_sha256": ORIGINAL_TEST},
                  "mutation_provenance": {"locator_healed": True}},
                 [prov.REPLAY_DECLARED_MUTATION], [], id="replay-with-declared-mutation"),
    pytest.param({"execution_mode": "exploration"},
                 [prov.EXPLORATION_NOT_ADMITTED], [], id="exploration"),
    pytest.param({"execution_mode": "test_repair",
                  "repair": {"prior_test_source_sha256": ORIGINAL_TEST,
                             "prior_oracle_sha256": hashes()[1]},
                  "mutation_provenance": {"step_changed": True}},
                 [prov.REPAIR_REQUIRES_REQUALIFICATION], [], id="test-repair"),
    pytest.param({"execution_mode": "test_repair",
                  "repair": {"prior_test_source_sha256": ORIGINAL_TEST},
                  "mutation_provenance": {"step_changed": True}},
                 [prov.REPAIR_REQUIRES_REQUALIFICATION, prov.REPAIR_WITHOUT_PRIORS],
                 [prov.REPAIR_WITHOUT_PRIORS], id="test-repair-without-prior-oracle"),
    pytest.param({"mutation_provenance": {"fixture_changed": True}},
                 [prov.PROTECTED_SURFACE_CHANGED, prov.REPLAY_DECLARED_MUTATION], [],
                 id="protected-surface"),
    pytest.param({"execution_mode": "exploration",
                  "mutation_provenance": {"proof_command_changed": True}},
                 [prov.EXPLORATION_NOT_ADMITTED, prov.PROTECTED_SURFACE_CHANGED], [],
                 id="protected-surface-in-exploration"),
    pytest.param({"external_result": {"provider": "browser-agent", "status": "passed",
                                      "mutation_provenance": {"locator_healed": True}}},
                 [prov.EXTERNAL_PASS_AFTER_MUTATION, prov.REPLAY_DECLARED_MUTATION], [],
                 id="external-pass-after-mutation"),
    pytest.param({"provider_result": {"passed": True, "mutations": {"test_mutated": True}}},
                 [prov.EXTERNAL_PASS_AFTER_MUTATION, prov.REPLAY_DECLARED_MUTATION], [],
                 id="provider-pass-after-mutation"),
    pytest.param({"provenance": {"prior_test_source_sha256": ORIGINAL_TEST}},
                 [prov.UNDECLARED_TEST_MUTATION], [prov.UNDECLARED_TEST_MUTATION],
                 id="undeclared-test-mutation"),
    pytest.param({"external_result": {"test_source_sha256": "sha256:changed"}},
                 [prov.UNDECLARED_TEST_MUTATION], [prov.UNDECLARED_TEST_MUTATION],
                 id="undeclared-test-mutation-seen-by-an-external-runner"),
    pytest.param({"provenance": {"prior_oracle_sha256": ORIGINAL_ORACLE[7:]}},
                 [prov.UNDECLARED_ORACLE_MUTATION], [prov.UNDECLARED_ORACLE_MUTATION],
                 id="undeclared-oracle-mutation"),
    pytest.param({"provenance": {"prior_oracle_sha256": ORIGINAL_ORACLE},
                  "mutation_provenance": {"locator_changed": True}},
                 [prov.REPLAY_DECLARED_MUTATION, prov.UNDECLARED_ORACLE_MUTATION],
                 [prov.UNDECLARED_ORACLE_MUTATION],
                 id="a-test-flag-does-not-explain-an-oracle-change"),
    pytest.param({"provenance": {"prior_oracle_sha256": ORIGINAL_ORACLE,
                                 "mutations": {"expected_output_changed": True}}},
                 [prov.PROTECTED_SURFACE_CHANGED, prov.REPLAY_DECLARED_MUTATION], [],
                 id="declared-oracle-mutation-is-a-protected-change"),
])
def test_each_reason_code_and_integrity_error(
    changes: dict[str, Any], reasons: list[str], errors: list[str]
) -> None:
    result = eligibility(**changes)
    assert result.eligible is False
    assert result.requires_requalification is True
    assert list(result.reason_codes) == sorted(reasons)
    assert list(result.integrity_errors) == sorted(errors)
    assert result.as_report()["eligible_for_existing_claim"] is False


@pytest.mark.parametrize(("key", "inner"), prov.FLAG_SOURCES)
def test_flags_are_read_from_every_source(key: str, inner: str | None) -> None:
    block = {"oracle_changed": True, "locator_healed": False}
    case = case_of(**{key: {inner: block} if inner else block})
    flags = prov.mutation_flags(case)
    assert [name for name, value in flags.items() if value] == ["oracle_changed"]
    assert list(flags) == list(prov.MUTATION_FLAGS)
    assert len(flags) == 17


def test_the_flag_subsets_are_the_earlier_ones() -> None:
    assert set(prov.MUTATION_FLAGS) > prov.TEST_MUTATION_FLAGS | prov.ORACLE_MUTATION_FLAGS
    assert prov.ORACLE_MUTATION_FLAGS < prov.PROTECTED_SURFACE_FLAGS
    assert not prov.TEST_MUTATION_FLAGS & prov.PROTECTED_SURFACE_FLAGS
    assert len(prov.PROTECTED_SURFACE_FLAGS) == 12


@pytest.mark.parametrize(("changes", "fails"), [
    ({}, False),
    ({"mutation_provenance": {"step_changed": True}}, True),  # a replay that is not one
    ({"execution_mode": "exploration"}, False),  # a candidate: ineligible, not a failure
    ({"execution_mode": "exploration",
      "provenance": {"prior_oracle_sha256": ORIGINAL_ORACLE}}, True),  # integrity error
])
def test_which_passes_are_reported_as_failures(changes: dict[str, Any], fails: bool) -> None:
    assert prov.case_provenance(case_of(**changes)).fails_integrity is fails


FLAG_BLOCKS = st.dictionaries(st.sampled_from(prov.MUTATION_FLAGS), st.booleans(), max_size=3)
PRIORS = st.one_of(st.none(), st.sampled_from([ORIGINAL_TEST, ORIGINAL_ORACLE, hashes()[0],
                                               hashes()[1], "sha256:changed"]))


@settings(max_examples=300, deadline=None)
@given(mode=st.sampled_from([*prov.EXECUTION_MODES, None]), flags=FLAG_BLOCKS,
       prior_test=PRIORS, prior_oracle=PRIORS, passed=st.booleans())
def test_eligible_means_an_unchanged_replay_and_ineligible_always_says_why(
    mode: str | None, flags: dict[str, bool], prior_test: str | None,
    prior_oracle: str | None, passed: bool,
) -> None:
    changes: dict[str, Any] = {"mutation_provenance": flags,
                               "provenance": {"prior_test_source_sha256": prior_test,
                                              "prior_oracle_sha256": prior_oracle},
                               "external_result": {"passed": passed}}
    if mode is not None:
        changes["execution_mode"] = mode
    result = prov.case_provenance(case_of(**changes))
    unchanged = (not any(flags.values()) and prior_test in (None, hashes()[0])
                 and prior_oracle in (None, hashes()[1]))
    assert result.eligibility.eligible is (mode in (None, "regression_replay") and unchanged)
    assert result.eligibility.eligible or result.eligibility.reason_codes
    assert set(result.eligibility.integrity_errors) <= set(result.eligibility.reason_codes)


# -- admission pins ------------------------------------------------------------------------------

def test_admission_pins_select_exactly_the_pinned_generation() -> None:
    case = case_of(generated_test_lineage={"generation_id": "gen-2"})
    ident = prov.case_provenance(case)
    test_hash, oracle_hash = ident.test_source_sha256, ident.oracle_sha256
    assert prov.admitted(None, case, ident)
    for record in ({"case": "qid-regression"}, {"generation_id": "gen-2"},
                   {"test_source_sha256": test_hash}, {"oracle_sha256": oracle_hash[7:]},
                   {"case": "qid-regression", "generation_id": "gen-2",
                    "test_source_sha256": test_hash, "oracle_sha256": oracle_hash}):
        assert prov.admitted([record], case, ident), record
    for record in ({"case": "other"}, {"generation_id": "gen-1"},
                   {"generation_id": "gen-2", "oracle_sha256": ORIGINAL_ORACLE},
                   {"case": "qid-regression", "test_source_sha256": ORIGINAL_TEST}, {}):
        assert not prov.admitted([record], case, ident), record
    assert prov.admitted([{"generation_id": "gen-1"}, {"generation_id": "gen-2"}], case, ident)


def test_admitted_evidence_wins_over_admitted_generations() -> None:
    first, second = [{"case": "a"}], [{"case": "b"}]
    assert prov.admission_records({"admitted_evidence": first,
                                   "admitted_generations": second}) == first
    assert prov.admission_records({"admitted_evidence": [],
                                   "admitted_generations": second}) == second
    assert prov.admission_records({}) is None


# -- the vocabulary at load time -----------------------------------------------------------------

def load(tmp_path: Path, case_changes: dict[str, Any],
         claim_changes: dict[str, Any] | None = None) -> list[str]:
    claim = {"id": "claim.qid", "criticality": "important",
             "evidence_required": {"deterministic": True}, **(claim_changes or {})}
    data = {"version": 2, "eval_kind": "runner_selftest", "trials": 1,
            "capability_claims": [claim], "cases": [{**copy.deepcopy(BASE), **case_changes}]}
    try:
        fixture_from_data(data, tmp_path / "agentic_eval.json", accept_exemptions=True)
    except FixtureError as exc:
        return [f"{p.pointer}: {p.message}" for p in exc.problems]
    return []


def test_the_whole_vocabulary_loads(tmp_path: Path) -> None:
    assert load(tmp_path, {
        "execution_mode": "test_repair",
        "provenance": {"prior_test_source_sha256": ORIGINAL_TEST, "prior_oracle_sha256": None,
                       "mutations": {"locator_healed": True}},
        "repair": {"prior_test_source_sha256": ORIGINAL_TEST,
                   "prior_oracle_sha256": ORIGINAL_ORACLE},
        "mutation_provenance": dict.fromkeys(prov.MUTATION_FLAGS, False),
        "external_result": {"provider": "p", "status": "passed", "passed": True,
                            "test_source_sha256": "x", "oracle_sha256": "y",
                            "mutation_provenance": {}, "mutations": {}},
        "provider_result": {"status": "failed"},
        "generated_test": {"generation_id": "g"},
        "generated_test_lineage": {"generation_id": "g", "origin": "live-discovery"},
        "application_identity": {"repo": "x", "sha": "y"},
    }, {"admitted_evidence": [{"case": "qid-regression", "generation_id": "g"}],
        "admitted_generations": [{"oracle_sha256": ORIGINAL_ORACLE}]}) == []


@pytest.mark.parametrize(("case_changes", "claim_changes", "expected"), [
    ({"execution_mode": "auto_heal"}, {}, "/cases/0/execution_mode: 'auto_heal' is not one of"),
    ({"mutation_provenance": {"locator_heal": True}}, {},
     "/cases/0/mutation_provenance/locator_heal: unknown key 'locator_heal' (did you mean "
     "'locator_healed'?)"),
    ({"mutation_provenance": {"oracle_changed": 1}}, {},
     "/cases/0/mutation_provenance/oracle_changed: 1 is an integer, expected boolean"),
    ({"provenance": {"mutations": {"test_mutated": "yes"}}}, {},
     "/cases/0/provenance/mutations/test_mutated: \"yes\" is a string, expected boolean"),
    ({"external_result": "passed"}, {}, "/cases/0/external_result: \"passed\" is a string"),
    ({"provider_result": {"mutations": {"healed": True}}}, {},
     "/cases/0/provider_result/mutations/healed: unknown key 'healed'"),
    ({"provenance": {"prior_oracle_sha": "x"}}, {},
     "/cases/0/provenance/prior_oracle_sha: unknown key 'prior_oracle_sha' (did you mean "
     "'prior_oracle_sha256'?)"),
    ({}, {"admitted_evidence": [{}]}, "/capability_claims/0/admitted_evidence/0: {} should be "
                                      "non-empty"),
    ({}, {"admitted_evidence": [{"case": ""}]}, "/capability_claims/0/admitted_evidence/0/case"),
    ({}, {"admitted_generations": ["live_e2e"]},
     "/capability_claims/0/admitted_generations/0: \"live_e2e\" is a string, expected object"),
    ({}, {"admitted_evidence": [{"oracle": "sha256:x"}]},
     "/capability_claims/0/admitted_evidence/0/oracle: unknown key 'oracle'"),
])
def test_a_malformed_provenance_is_refused_where_it_is(
    tmp_path: Path, case_changes: dict[str, Any], claim_changes: dict[str, Any], expected: str
) -> None:
    problems = load(tmp_path, case_changes, claim_changes)
    assert any(problem.startswith(expected) for problem in problems), problems
