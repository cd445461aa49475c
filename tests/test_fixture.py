"""The fixture loader and the anti-slush contract, as pure functions (no pytest session)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from pytest_agentic_evals.evidence.qualification import qualify
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.loading.fixture import FixtureError, fixture_schema
from pytest_agentic_evals.model import Fixture
from pytest_agentic_evals.schemas.compiled import compile_check

from conftest import Skill, mutate_json, skill_fixture

DATA = Path(__file__).parent / "data"


def problems_of(path: Path) -> list[str]:
    with pytest.raises(FixtureError) as info:
        load_fixture(path)
    return [str(problem) for problem in info.value.problems]


def pointers_of(path: Path) -> dict[str, str]:
    with pytest.raises(FixtureError) as info:
        load_fixture(path)
    found: dict[str, str] = {}
    for problem in info.value.problems:
        earlier = found.get(problem.pointer)
        found[problem.pointer] = f"{earlier} | {problem.message}" if earlier else problem.message
    return found


def test_a_fixture_that_keeps_the_contract_loads(skill: Skill) -> None:
    fixture = load_fixture(skill.fixture())
    assert [case.name for case in fixture.cases] == ["greets", "refuses-empty-name"]
    assert fixture.trials == 2
    assert fixture.skill_dir == skill.root
    assert fixture.cases[0].cwd == skill.fixtures


def test_json_syntax_error_names_line_and_column(skill: Skill) -> None:
    path = skill.write('{\n  "version": 2,\n  "cases": [\n}')
    (message,) = problems_of(path)
    assert "invalid JSON at line 4, column 1" in message
    assert str(path.name) in message


def test_unreadable_and_missing_files_are_problems_not_tracebacks(skill: Skill) -> None:
    (message,) = problems_of(skill.fixtures / "nope.json")
    assert "cannot read fixture" in message
    (message,) = problems_of(skill.fixtures)
    assert "cannot read fixture" in message


def test_not_utf8_and_duplicate_keys_are_rejected(skill: Skill) -> None:
    path = skill.fixtures / "latin1.json"
    path.write_bytes(b'{"version": 2, "skill": "caf\xe9"}')
    assert "not UTF-8" in problems_of(path)[0]
    path = skill.write('{"version": 2, "version": 2, "cases": []}')
    assert any("duplicate key 'version'" in p for p in problems_of(path))


def test_every_problem_is_reported_at_once_with_its_pointer(skill: Skill) -> None:
    data = skill_fixture()
    data["cases"][0]["expected"]["exit_code"] = True
    data["cases"][0]["expected"]["stdout_contain"] = ["typo"]
    data["cases"][1]["expected"]["stderr_contains"] = "name required"
    data["cases"][1]["name"] = "has space"
    data["trials"] = "3"
    found = pointers_of(skill.write(data))
    assert found["/cases/0/expected/exit_code"] == "true is a boolean, expected integer"
    assert "did you mean 'stdout_contains'" in found["/cases/0/expected/stdout_contain"]
    assert found["/cases/1/expected/stderr_contains"].endswith("expected array")
    assert "cannot be used in a test id" in found["/cases/1/name"]
    assert "expected integer" in found["/trials"]


def test_unknown_keys_in_artifact_assertions_are_errors(fixture_data: dict, skill: Skill) -> None:
    fixture_data["cases"][0]["expected"]["artifacts"] = [
        {"path": "out.json", "json_pointer": "/a", "equal": 1}
    ]
    found = pointers_of(skill.write(fixture_data))
    assert "unknown key 'equal'" in found["/cases/0/expected/artifacts/0/equal"]


@pytest.mark.parametrize(
    ("assertion", "fragment"),
    [
        ({"path": "o.json", "exists": True, "not_exists": True}, "exclude each other"),
        ({"path": "o.json", "json_pointer": "a"}, "not an RFC 6901 JSON pointer"),
        ({"path": "o.json", "json_pointer": "/a~2"}, "not an RFC 6901 JSON pointer"),
        ({"path": "o.json", "matches_regex": "(unclosed"}, "invalid regular expression"),
        ({"path": "../../escape.json"}, "resolves outside the workspace"),
        ({"path": "/etc/passwd"}, "absolute artifact path"),
        ({"path": "o.json", "is_type": "float"}, "is not one of"),
        ({"path": "o.json", "exists": False, "optional": True}, "optional makes no sense"),
    ],
)
def test_artifact_assertion_mistakes(
    assertion: dict, fragment: str, fixture_data: dict, skill: Skill
) -> None:
    fixture_data["cases"][0]["expected"]["artifacts"] = [assertion]
    messages = " | ".join(problems_of(skill.write(fixture_data)))
    assert fragment in messages
    assert "/cases/0/expected/artifacts/0" in messages


def test_outside_workspace_must_be_declared(fixture_data: dict, skill: Skill) -> None:
    fixture_data["cases"][0]["expected"]["artifacts"] = [
        {"path": "/tmp/declared.json", "outside_workspace": True, "optional": True}
    ]
    load_fixture(skill.write(fixture_data))


def test_a_symlink_out_of_the_workspace_is_refused(
    fixture_data: dict, skill: Skill, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (skill.root / "out").symlink_to(outside)
    fixture_data["cases"][0]["expected"]["artifacts"] = [{"path": "../out/result.json"}]
    messages = " | ".join(problems_of(skill.write(fixture_data)))
    assert "through a symlink" in messages


def test_duplicate_case_names(fixture_data: dict, skill: Skill) -> None:
    fixture_data["cases"][1]["name"] = "greets"
    found = pointers_of(skill.write(fixture_data))
    assert "duplicate case name 'greets'" in found["/cases/1/name"]


def test_must_exercise_is_checked_against_the_command(fixture_data: dict, skill: Skill) -> None:
    fixture_data["cases"][0]["must_exercise"] = ["run.sh feature"]
    found = pointers_of(skill.write(fixture_data))
    assert "must_exercise 'run.sh feature'" in found["/cases/0/command"]
    fixture_data["cases"][0]["must_exercise"] = ["../run.sh"]
    load_fixture(skill.write(fixture_data))


# -- the anti-slush contract ----------------------------------------------------------------


def with_case(data: dict, **case: Any) -> dict:
    data = copy.deepcopy(data)
    base = {"name": "extra", "type": "positive", "expected": {"exit_code": 0}}
    data["cases"].append({**base, **case})
    return data


@pytest.mark.parametrize(
    ("command", "fragment"),
    [
        (["echo", "ok"], "proves nothing"),
        (["bash", "-c", "echo ok; true"], "proves nothing"),
        (["bash", "-lc", "echo hi"], "proves nothing"),
        (["/bin/sh", "-c", "printf x"], "proves nothing"),
        (["env", "FOO=1", "bash", "-c", "true"], "proves nothing"),
    ],
)
def test_trivial_cases_are_rejected_by_name(
    command: list[str], fragment: str, fixture_data: dict, skill: Skill
) -> None:
    found = pointers_of(skill.write(with_case(fixture_data, command=command)))
    assert fragment in found["/cases/2/command"]
    assert "'extra'" in found["/cases/2/command"]


@pytest.mark.parametrize(
    "command",
    [
        ["bash", "-lc", "echo hi"],
        ["/bin/sh", "-c", "printf x"],
        ["env", "FOO=1", "bash", "-c", "true"],
        ["echo", "run.sh"],
        ["bash", "missing-script.sh"],
    ],
)
def test_a_fake_real_world_case_is_not_real_world(
    command: list[str], fixture_data: dict, skill: Skill
) -> None:
    fixture_data["cases"][0]["real_world"] = False
    found = pointers_of(skill.write(with_case(fixture_data, command=command, real_world=True)))
    assert "is not real-world" in found["/cases/2/command"]
    assert "no real-world case" not in " ".join(found.values())


def test_real_world_pointing_at_a_missing_script_says_so(fixture_data: dict, skill: Skill) -> None:
    fixture_data["cases"][0]["command"] = ["bash", "../no-such-script.sh"]
    found = pointers_of(skill.write(fixture_data))
    assert "no-such-script.sh" in found["/cases/0/command"]
    assert "not real-world" in found["/cases/0/command"]


def test_real_world_feeding_itself_fixture_stubs_is_refused(
    fixture_data: dict, skill: Skill
) -> None:
    (skill.fixtures / "stub_input.json").write_text("{}")
    fixture_data["cases"][0]["command"] = ["bash", "../run.sh", "../fixtures/stub_input.json"]
    found = pointers_of(skill.write(fixture_data))
    assert "stub inputs" in found["/cases/0/command"]


def test_each_skill_rule_rejects_what_breaks_it(fixture_data: dict, skill: Skill) -> None:
    one_trial = {**fixture_data, "trials": 1}
    assert "trials is 1" in pointers_of(skill.write(one_trial))["/trials"]
    # Left out, trials is 3, as in the earlier tool: several trials, within the rule.
    no_trials = {k: v for k, v in fixture_data.items() if k != "trials"}
    assert load_fixture(skill.write(no_trials)).trials == 3

    all_positive = copy.deepcopy(fixture_data)
    all_positive["cases"][1]["type"] = "positive"
    assert "no negative or adversarial" in pointers_of(skill.write(all_positive))["/cases"]

    no_real_world = copy.deepcopy(fixture_data)
    del no_real_world["cases"][0]["real_world"]
    assert "no real-world case" in pointers_of(skill.write(no_real_world))["/cases"]


def test_optional_cases_never_keep_the_contract(fixture_data: dict, skill: Skill) -> None:
    # The only negative case and the only real-world case are optional: a skill could fail
    # them every trial and still be READY, so they are no evidence the contract can count.
    for index in (0, 1):
        fixture_data["cases"][index]["required"] = False
    fixture_data["cases"].append({"name": "greets-bob", "type": "positive",
                                  "command": ["bash", "../run.sh", "Bob"],
                                  "expected": {"exit_code": 0}})
    found = pointers_of(skill.write(fixture_data))
    assert found["/cases"] == (
        "no negative or adversarial case among the required cases: a fixture whose every "
        "required case expects success cannot show that the skill ever says no "
        "('refuses-empty-name' is \"required\": false, and an optional case never counts for "
        "the contract) | no real-world case among the required cases: mark a required case "
        "that runs the skill's own code with \"real_world\": true ('greets' is \"required\": "
        "false, and an optional case never counts for the contract)"
    )
    # The same fixture with those cases required keeps the contract.
    for index in (0, 1):
        fixture_data["cases"][index]["required"] = True
    assert isinstance(load_fixture(skill.write(fixture_data)), Fixture)


@pytest.mark.parametrize("command", [["bash", "-c", "date"], ["mktemp", "-d"], ["date"],
                                     ["cp", "../run.sh", "copy.sh"]])
def test_a_generic_program_is_not_real_world(
    command: list[str], fixture_data: dict, skill: Skill
) -> None:
    fixture_data["cases"][0]["command"] = command
    found = pointers_of(skill.write(fixture_data))
    assert found["/cases/0/command"].startswith("real_world case 'greets' is not real-world: ")
    assert "is a generic program found on PATH" in found["/cases/0/command"]
    assert "not the skill's own code" in found["/cases/0/command"]


@pytest.mark.parametrize("script", ["R=../run.sh; $R Ada", "R={root}/run.sh; $R Ada"])
def test_the_skills_entrypoint_through_a_variable_is_real_world(
    script: str, fixture_data: dict, skill: Skill
) -> None:
    fixture_data["cases"][0]["command"] = ["bash", "-c", script.format(root=skill.root)]
    assert isinstance(load_fixture(skill.write(fixture_data)), Fixture)


def test_declared_entrypoints_are_the_skills_own_code(fixture_data: dict, skill: Skill) -> None:
    fixture_data["cases"][0]["command"] = ["sort", "--version"]
    assert "generic program" in pointers_of(skill.write(fixture_data))["/cases/0/command"]
    fixture_data["entrypoints"] = ["sort"]
    fixture = load_fixture(skill.write(fixture_data))
    assert fixture.cases[0].entrypoints == ("sort",)


def test_a_declared_entrypoint_must_exist_and_be_a_program(
    fixture_data: dict, skill: Skill
) -> None:
    fixture_data["entrypoints"] = ["sort", "no-such-program-xyz", "bash", "bin/tool", "sort"]
    found = pointers_of(skill.write(fixture_data))
    assert found["/entrypoints/1"] == ("entrypoint 'no-such-program-xyz' is not a program "
                                       "found on PATH: install the skill's entrypoint first")
    assert "'bash' is an interpreter" in found["/entrypoints/2"]
    assert "'bin/tool' is a path, not a program name" in found["/entrypoints/3"]
    assert "non-unique" in found["/entrypoints"] or "unique" in found["/entrypoints"]
    assert "/entrypoints/0" not in found


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("a::b", "contains '::', which separates the parts of a pytest node id"),
        ("ok::", "contains '::'"),
        ("x[1]", "contains '[' or ']'"),
        ("x]", "contains '[' or ']'"),
        ("ends-with-newline\n", "cannot be used in a test id"),
        ("has space", "cannot be used in a test id"),
    ],
)
def test_names_that_break_a_node_id_are_refused(
    name: str, fragment: str, fixture_data: dict, skill: Skill
) -> None:
    fixture_data["cases"][1]["name"] = name
    found = pointers_of(skill.write(fixture_data))
    assert fragment in found["/cases/1/name"]


def test_single_colons_stay_usable_in_names(fixture_data: dict, skill: Skill) -> None:
    fixture_data["cases"][1]["name"] = "refuses:empty-name:"
    assert load_fixture(skill.write(fixture_data)).cases[1].name == "refuses:empty-name:"


def test_runner_selftest_and_scaffold_are_exempt_but_never_for_compliance(
    skill: Skill,
) -> None:
    seed = json.loads((DATA / "seed_wiring_smoke.json").read_text())
    messages = problems_of(skill.write(seed))
    assert any("no negative or adversarial case" in m for m in messages)
    assert any("no real-world case" in m for m in messages)
    assert any("proves nothing" in m for m in messages)

    for kind in ("runner_selftest", "scaffold"):
        path = skill.write({**seed, "eval_kind": kind})
        fixture = load_fixture(path, accept_exemptions=True)
        assert isinstance(fixture, Fixture) and fixture.exempt_from_contract
        assert fixture.trials == 3
        # Asked for by the fixture alone, the exemption is not granted: the contract judges it.
        found = pointers_of(path)
        assert found["/eval_kind"].startswith(f"eval_kind {kind!r} asks to be exempt")
        assert "no real-world case" in found["/cases"]

    refused = {**seed, "eval_kind": "scaffold", "eval_tier": "compliance"}
    path = skill.write(refused)
    with pytest.raises(FixtureError) as raised:
        load_fixture(path, accept_exemptions=True)
    assert "compliance fixture can never be exempt" in str(raised.value)
    assert "compliance fixture can never be exempt" in pointers_of(path)["/eval_kind"]


def test_the_seed_example_from_the_users_documents(tmp_path: Path) -> None:
    skill_dir = tmp_path / "example-skill" / "fixtures"
    skill_dir.mkdir(parents=True)
    shutil.copy(DATA / "seed_wiring_smoke.json", skill_dir / "agentic_eval.json")
    messages = problems_of(skill_dir / "agentic_eval.json")
    assert len(messages) == 3, messages


# -- the compliance tier ---------------------------------------------------------------------


def compliance_fixture(skill: Skill, sampled_command: list[str]) -> dict:
    data = skill_fixture(eval_tier="compliance")
    data["cases"].append({
        "name": "sampled-attack", "type": "adversarial", "command": sampled_command,
        "expected": {"exit_code": 0},
    })
    return data


def test_compliance_fixture_that_keeps_every_rule_loads(skill: Skill) -> None:
    (skill.root / "fuzz.sh").write_text("#!/bin/sh\nexit 0\n")
    data = compliance_fixture(skill, ["bash", "../fuzz.sh", "--samples", "200", "--seed",
                                      "{random_seed}"])
    assert load_fixture(skill.write(data)).eval_tier == "compliance"


@pytest.mark.parametrize(
    ("sampled", "fragment"),
    [
        (["bash", "../fuzz.sh", "--samples=5"], "--samples 5"),
        (["bash", "../fuzz.sh", "--seed", "{random_seed}"], "no --samples"),
        (["bash", "-c", "../fuzz.sh --seed $RANDOM"], "no --samples"),
    ],
)
def test_compliance_needs_fifty_samples(sampled: list[str], fragment: str, skill: Skill) -> None:
    (skill.root / "fuzz.sh").write_text("#!/bin/sh\nexit 0\n")
    found = pointers_of(skill.write(compliance_fixture(skill, sampled)))
    assert fragment in found["/cases/2/command"]
    assert "N >= 50" in found["/cases/2/command"]


def test_a_fixed_seed_is_not_non_deterministic(skill: Skill) -> None:
    (skill.root / "fuzz.sh").write_text("#!/bin/sh\nexit 0\n")
    found = pointers_of(skill.write(compliance_fixture(skill, ["bash", "../fuzz.sh", "--seed",
                                                               "7"])))
    assert "no non-deterministic case" in found["/cases"]


def test_compliance_needs_a_strict_majority_of_failure_seeking_cases(skill: Skill) -> None:
    (skill.root / "fuzz.sh").write_text("#!/bin/sh\nexit 0\n")
    data = compliance_fixture(skill, ["bash", "../fuzz.sh", "--samples", "60"])
    data["cases"][2]["type"] = "positive"  # 1 of 3 failure-seeking
    assert "1 of 3 cases" in pointers_of(skill.write(data))["/cases"]
    data["cases"].append({**data["cases"][1], "name": "another-negative"})
    data["cases"][2]["type"] = "positive"  # exactly half (2 of 4) is not a majority
    assert "2 of 4 cases" in pointers_of(skill.write(data))["/cases"]


# -- property: the loader never raises anything but FixtureError -----------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
FIELDS = ["version", "trials", "cases", "skill", "eval_kind", "eval_tier", "cwd", "env",
          "workspace", "timeout_seconds"]
CASE_FIELDS = ["name", "type", "command", "expected", "artifacts", "cwd", "env", "real_world",
               "must_exercise", "tags", "timeout_seconds", "workspace"]


# The skill folder is reused across examples on purpose: each example rewrites the fixture.
FIXTURE_OK = [HealthCheck.function_scoped_fixture]


def load_or_problems(path: Path) -> None:
    try:
        fixture = load_fixture(path)
    except FixtureError as exc:
        assert exc.problems
        assert all(problem.message for problem in exc.problems)
    else:
        assert isinstance(fixture, Fixture)


@settings(max_examples=150, deadline=None, suppress_health_check=FIXTURE_OK)
@given(document=json_values)
def test_arbitrary_json_gives_a_fixture_or_problems(document: Any, skill: Skill) -> None:
    load_or_problems(skill.write(json.dumps(document)))


@settings(max_examples=300, deadline=None, suppress_health_check=FIXTURE_OK)
@given(
    top=st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=3),
    case=st.dictionaries(st.sampled_from(CASE_FIELDS), json_values, max_size=3),
    expected=st.dictionaries(st.text(max_size=12), json_values, max_size=3),
    drop=st.sets(st.sampled_from(CASE_FIELDS), max_size=2),
)
def test_mutated_valid_fixtures_give_a_fixture_or_problems(
    top: dict, case: dict, expected: dict, drop: set, skill: Skill
) -> None:
    data = skill_fixture()
    data.update(top)
    if isinstance(data.get("cases"), list) and data["cases"] and isinstance(data["cases"][0], dict):
        target = data["cases"][0]
        target.update(case)
        for key in drop:
            target.pop(key, None)
        if isinstance(target.get("expected"), dict):
            target["expected"].update(expected)
    load_or_problems(skill.write(json.dumps(data)))


@settings(max_examples=100, deadline=None, suppress_health_check=FIXTURE_OK)
@given(raw=st.binary(max_size=64) | st.text(max_size=64).map(str.encode))
def test_arbitrary_bytes_give_problems(raw: bytes, skill: Skill) -> None:
    path = skill.fixtures / "raw.json"
    path.write_bytes(raw)
    load_or_problems(path)


def test_every_case_labelled_real_world_must_be(fixture_data: dict, skill: Skill) -> None:
    data = with_case(fixture_data, command=["echo", "run.sh"], real_world=True)
    found = pointers_of(skill.write(data))  # case 0 is genuinely real-world; case 2 is not
    assert "real_world case 'extra' is not real-world" in found["/cases/2/command"]
    assert "/cases/0/command" not in found


def test_fixture_dir_placeholder_is_judged_as_the_path_it_becomes(
    fixture_data: dict, skill: Skill
) -> None:
    fixture_data["cases"][0]["command"] = ["bash", "{fixture_dir}/../run.sh", "Ada"]
    assert load_fixture(skill.write(fixture_data)).cases[0].real_world
    # ... by live qualification too (docs/fixture.md, docs/claims.md): a live case written so
    # reaches the skill's own code and keeps its class.
    fixture_data["cases"][0]["evidence_class"] = "live_e2e"
    fixture_data["cases"][0]["expected"]["artifacts"] = [
        {"path": "greeting.txt", "lines_contain": ["Ada"]}]
    live = qualify(load_fixture(skill.write(fixture_data)).cases[0])
    assert (live.effective, live.live_qualified, live.disqualifiers) == ("live_e2e", True, ())


def test_unknown_top_level_keys_are_errors(fixture_data: dict, skill: Skill) -> None:
    found = pointers_of(skill.write({**fixture_data, "trails": 3}))
    assert "unknown key 'trails' (did you mean 'trials'?)" in found["/trails"]
    load_fixture(skill.write({**fixture_data, "$schema": "./agentic-eval.schema.json"}))


# The compiled check of the fixture schema may refuse what the schema accepts (jsonschema then
# has the last word), never the other way round. Mutations of real fixtures find the edges.
_REAL_FIXTURES = [json.loads((Path(__file__).parent.parent / path).read_text()) for path in (
    "fixtures/agentic_eval.json", "docs/examples/coreutils/agentic_eval.json",
    "docs/examples/journeys/agentic_eval.json", "docs/examples/agent-replay/agentic_eval.json")]
_SCALARS = st.one_of(
    st.sampled_from(["", "x", "positive", "negative", "copy", "inplace", "deterministic",
                     "live_e2e", "critical", "../run.sh", "ok", "a b", "-x", "/abs"]),
    st.text(max_size=3), st.booleans(), st.integers(-2, 3), st.none(), st.just(0.5),
    st.just(1.0), st.just([]), st.just({}), st.just(["x", "x"]), st.just([1]))
_KEYS = st.sampled_from(["name", "type", "command", "expected", "exit_code", "trials",
                         "stdout_contains", "artifacts", "path", "json_pointer", "equals",
                         "timeout_seconds", "workspace", "env", "cwd", "tags", "seams",
                         "allowed_domains", "trajectory", "evidence_class", "unknown"])


@st.composite
def _mutated_fixture(draw: st.DrawFn) -> Any:
    document = copy.deepcopy(draw(st.sampled_from(_REAL_FIXTURES)))
    return mutate_json(draw, document, _SCALARS, _KEYS)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_mutated_fixture())
def test_the_compiled_fixture_check_never_accepts_what_the_schema_refuses(document: Any) -> None:
    fast = compile_check(fixture_schema())
    assert fast is not None
    if fast(document):
        assert list(Draft202012Validator(fixture_schema()).iter_errors(document)) == []


def test_the_compiled_fixture_check_accepts_the_bundled_fixtures() -> None:
    fast = compile_check(fixture_schema())
    assert fast is not None
    assert all(fast(document) for document in _REAL_FIXTURES)


@pytest.mark.parametrize("value", [-3, -1, 0, 1, 2, 3, 0.5, 1.0, 300, 1e9, True, None, "2"])
def test_the_compiled_fixture_check_and_the_schema_agree_on_numbers(value: Any) -> None:
    fast = compile_check(fixture_schema())
    assert fast is not None
    validator = Draft202012Validator(fixture_schema())
    for place in ("trials", "timeout_seconds", "exit_code", "minimum_trials"):
        document = copy.deepcopy(_REAL_FIXTURES[0])
        if place == "trials":
            document["trials"] = value
        elif place == "exit_code":
            document["cases"][0]["expected"]["exit_code"] = value
        else:
            document["cases"][0][place] = value
        valid = not list(validator.iter_errors(document))
        assert not fast(document) or valid, (place, value)


@pytest.mark.parametrize("script", [
    "echo 'hello, Ada'; exit 0; ../run.sh Ada",
    "false && ../run.sh Ada; echo 'hello, Ada'",
    "if false; then ../run.sh Ada; fi; echo 'hello, Ada'",
    "greet() { ../run.sh Ada; }; echo 'hello, Ada'",
    "bash -n ../run.sh; echo 'hello, Ada'",
])
def test_an_entrypoint_named_only_where_it_never_runs_is_not_real_world(
    script: str, fixture_data: dict, skill: Skill
) -> None:
    """The contract's real-world case must run the skill: naming it in dead code does not."""
    fixture_data["cases"][0]["command"] = ["bash", "-c", script]
    found = pointers_of(skill.write(fixture_data))
    assert found["/cases/0/command"].startswith("real_world case 'greets' is not real-world: ")


@pytest.mark.parametrize("command", [
    ["python3", "-c", "import sys; sys.exit(2)"],
    ["perl", "-e", "exit 2"],
    ["expr", "0"],
    ["grep", "zzz", "/dev/null"],
    ["bash", "-c", "echo 'name required' >&2; exit 2"],
])
def test_a_negative_case_that_never_runs_the_skill_keeps_no_contract(
    command: list[str], fixture_data: dict, skill: Skill
) -> None:
    """A failure that does not come from the skill shows nothing of the skill saying no."""
    fixture_data["cases"][1]["command"] = command
    found = pointers_of(skill.write(fixture_data))
    assert found["/cases"].startswith(
        "no required negative or adversarial case reaches the skill's own code, so none shows "
        "the skill saying no ('refuses-empty-name': "), found


def test_one_negative_case_that_runs_the_skill_is_enough(
    fixture_data: dict, skill: Skill
) -> None:
    fixture_data["cases"].append({"name": "exits-three", "type": "adversarial",
                                  "command": ["python3", "-c", "import sys; sys.exit(3)"],
                                  "expected": {"exit_code": 3}})
    assert isinstance(load_fixture(skill.write(fixture_data)), Fixture)


@pytest.mark.parametrize("pattern", [".*", "^", "$", "x*", "(?s).*", "a|", r"\A", "(?m)^"])
@pytest.mark.parametrize("where", ["stdout_matches", "stderr_matches", "matches_regex"])
def test_a_regular_expression_found_in_any_text_is_refused(
    pattern: str, where: str, fixture_data: dict, skill: Skill
) -> None:
    """Such a check cannot fail: any output, or none, keeps it."""
    expected = fixture_data["cases"][0]["expected"]
    if where == "matches_regex":
        expected["artifacts"] = [{"path": "o.txt", "matches_regex": pattern}]
        pointer = "/cases/0/expected/artifacts/0/matches_regex"
    else:
        expected[where] = [pattern]
        pointer = f"/cases/0/expected/{where}/0"
    found = pointers_of(skill.write(fixture_data))
    assert found[pointer] == (f"regular expression {pattern!r} is found in any text, even an "
                              "empty one: a check that cannot fail")


@pytest.mark.parametrize("pattern", ["^$", "hello", r"\S", "^hello, .+$", "(?m)^ok$", r"\d*x"])
def test_a_regular_expression_some_text_fails_is_accepted(
    pattern: str, fixture_data: dict, skill: Skill
) -> None:
    fixture_data["cases"][0]["expected"]["stdout_matches"] = [pattern]
    assert isinstance(load_fixture(skill.write(fixture_data)), Fixture)


@pytest.mark.parametrize("command", [
    ["bash", "../run.sh", "sample.csv"],
    ["bash", "-c", "../run.sh < sample.csv"],
    ["bash", "-c", "../run.sh \"$AGENTIC_EVALS_FIXTURE_DIR/sample.csv\""],
    ["bash", "../run.sh", "sam*.csv"],
    ["bash", "../run.sh", "../data/sample.csv"],
    ["bash", "-c", "cd .. && ./run.sh data/sample.csv"],
    ["bash", "../run.sh", "--input=sample.csv"],
    ["bash", "-c", "../run.sh \"$PWD/sample.csv\""],
    ["bash", "-c", "../run.sh \"$(pwd)\"/sample.csv"],
    ["bash", "-c", "../run.sh ~+/sample.csv"],
    ["bash", "-c", "../run.sh sample.{csv,none}"],
    ["bash", "-c", "trap '../run.sh \"$(cat sample.csv)\"' EXIT; ../run.sh Ada > /dev/null"],
    ["bash", "-c", "../run.sh \"$(python3 -c \"print(open('sample.csv').read())\")\""],
    ["bash", "-c", "../run.sh \"$(node -e \"process.stdout.write(require('fs')"
                   ".readFileSync('sample.csv'))\")\""],
])
def test_canned_data_from_the_fixture_folder_is_a_stub_whatever_its_name(
    command: list[str], fixture_data: dict, skill: Skill
) -> None:
    """The case's working directory is the fixture's folder: a file read from there (by a
    plain name, a glob, the fixture-dir variable or a link to the folder) is canned data."""
    (skill.fixtures / "sample.csv").write_text("name\nAda\n")
    (skill.root / "data").symlink_to("fixtures")
    fixture_data["cases"][0]["command"] = command
    found = pointers_of(skill.write(fixture_data))
    assert "it feeds itself stub inputs" in found["/cases/0/command"], found


def test_a_file_the_case_writes_beside_the_fixture_is_no_stub(
    fixture_data: dict, skill: Skill
) -> None:
    (skill.fixtures / "sample.csv").write_text("name\nAda\n")
    fixture_data["cases"][0]["command"] = ["bash", "-c", "../run.sh Ada > greeting.txt; "
                                           "cat greeting.txt; ls ."]
    assert isinstance(load_fixture(skill.write(fixture_data)), Fixture)
