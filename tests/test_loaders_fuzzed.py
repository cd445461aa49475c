"""Every loader, fed random JSON values and random bytes: a valid load or problems, never a crash.

In-process calls to the loaders (fast), each example a file on disk read the way the commands
read it, plus a handful of real CLI runs over the shapes that once crashed. A loader passes an
example when it returns, or raises its input error with at least one problem whose message is
one line; anything else (a TypeError, a ValueError of the operating system, a RecursionError)
is a failure.
"""

from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_agentic_evals.journeys.documents import read_document
from pytest_agentic_evals.journeys.inputs import load_inputs
from pytest_agentic_evals.loading import load_fixture
from pytest_agentic_evals.problems import InputError, Problem
from pytest_agentic_evals.regressions.registry import load_registry
from pytest_agentic_evals.report import report_problems
from pytest_agentic_evals.summary import markdown, terminal_lines

from conftest import RUN_SH, run_cli, skill_fixture

EXAMPLES = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=False, allow_infinity=False)
           | st.sampled_from([1e308, -1e308, 0.0, 1e-300, 86400.5, 10001])
           | st.text(max_size=12) | st.sampled_from(["", "\u0000", "a=b", "../x", "/abs", "~"]))
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8) | st.sampled_from(["=", "A=B", "\u0000"]), inner,
                      max_size=4),
    max_leaves=12,
)


def pointers(node: Any, parts: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place of a document, the document itself included."""
    found = [parts]
    if isinstance(node, dict):
        for key, value in node.items():
            found += pointers(value, (*parts, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += pointers(value, (*parts, index))
    return found


def replaced(document: Any, place: tuple[Any, ...], value: Any) -> Any:
    if not place:
        return value
    changed = copy.deepcopy(document)
    node = changed
    for part in place[:-1]:
        node = node[part]
    node[place[-1]] = value
    return changed


# Values that broke a loader once, or sit at a bound: tried at every place half of the time.
NASTY = st.sampled_from(["a\u0000b", "\u0000", "A=B", "", 1e308, -1.0, 0, 10001, 86400.5,
                         [], {}, None, True, "../../outside", "/etc/passwd", "~/x"])


def mutations(document: Any) -> st.SearchStrategy[Any]:
    """``document`` with one of its values (or the whole) replaced by a random JSON value."""
    return st.tuples(st.sampled_from(pointers(document)), NASTY | JSON).map(
        lambda change: replaced(document, *change))


def contents(document: Any) -> st.SearchStrategy[bytes]:
    """The bytes of a file: random, random JSON, or the document with one value replaced."""
    return st.one_of(
        st.binary(max_size=64),
        JSON.map(lambda value: json.dumps(value).encode()),
        mutations(document).map(lambda value: json.dumps(value).encode()),
    )


def assert_clear(problems: list[Problem] | list[str]) -> None:
    assert problems, "an input error without a problem"
    for problem in problems:
        text = str(problem)
        assert text.strip() and "\n" not in text and "Traceback" not in text, text


def loaded_or_refused(load: Callable[[], object]) -> None:
    try:
        load()
    except InputError as exc:
        assert_clear(exc.problems)


@pytest.fixture(scope="module")
def skill_root() -> Any:
    with tempfile.TemporaryDirectory(prefix="fuzzed-") as folder:
        root = Path(folder) / "greeter"
        (root / "fixtures").mkdir(parents=True)
        (root / "run.sh").write_text(RUN_SH)
        (root / "run.sh").chmod(0o755)
        yield root


def write(root: Path, name: str, data: bytes) -> Path:
    path = root / "fixtures" / name
    path.write_bytes(data)
    return path


REGISTRY = {
    "schema": "agentic_evals.regressions.v1", "skill": "greeter",
    "incidents": [{"incident_id": "inc-1", "date": "2026-01-10", "status": "closed"}],
    "regressions": [{
        "regression_id": "r1", "incident": {"incident_id": "inc-1", "date": "2026-01-10"},
        "claim_ids": ["c"], "retained_case": "greets", "detection_date": "2026-01-10",
        "fix_date": "2026-01-11",
        "fail_before_fix": {"proof_command": ["agentic-evals", "run", "agentic_eval.json"],
                            "env": {"OLD": "1"}, "timeout_seconds": 60,
                            "expected": {"exit_code": 1,
                                         "stdout_contains": ["hello, nobody at all"]}},
    }],
}
JOURNEYS = Path(__file__).resolve().parent.parent / "docs" / "examples" / "journeys"
REQUIREMENTS = json.loads((JOURNEYS / "requirements.json").read_text())
INVENTORY = json.loads((JOURNEYS / "discovery-inventory.json").read_text())
GRAPH = json.loads((JOURNEYS / "state-graph.json").read_text())
REPORT = {"schema": "agentic_evals.report.v2", "readiness": "READY"}


def rich_fixture() -> dict[str, Any]:
    """The greeter's fixture, with every kind of value that reaches the operating system."""
    data = skill_fixture(env={"GREETING": "hello"}, cwd=".")
    data["cases"][0].update(
        artifacts=[{"path": "in.txt", "content": "Ada"}], env={"NAME": "Ada"},
        timeout_seconds=30)
    data["cases"][0]["expected"]["artifacts"] = [{"path": "in.txt", "exists": True}]
    return data


@EXAMPLES
@given(data=contents(rich_fixture()))
def test_the_fixture_loader(skill_root: Path, data: bytes) -> None:
    loaded_or_refused(lambda: load_fixture(write(skill_root, "agentic_eval.json", data)))


SWEPT = ["a\u0000b", "A=B", "", 1e308, -1.0, [], {}, None, "../../outside"]


@pytest.mark.parametrize(("name", "document"), [("agentic_eval.json", rich_fixture()),
                                                ("regressions.json", REGISTRY)],
                         ids=["fixture", "registry"])
def test_every_place_of_a_document_with_every_nasty_value(
    skill_root: Path, name: str, document: dict[str, Any]
) -> None:
    # Random examples rarely reach one given place with one given value; this sweep does.
    load = load_fixture if name.startswith("agentic_eval") else load_registry
    for place in pointers(document):
        for value in SWEPT:
            path = write(skill_root, name, json.dumps(replaced(document, place, value)).encode())
            loaded_or_refused(lambda: load(path))  # noqa: B023 (called at once)


@EXAMPLES
@given(data=contents(REGISTRY))
def test_the_registry_loader(skill_root: Path, data: bytes) -> None:
    loaded_or_refused(lambda: load_registry(write(skill_root, "regressions.json", data)))


@EXAMPLES
@given(requirements=contents(REQUIREMENTS), inventory=contents(INVENTORY),
       graph=contents(GRAPH))
def test_the_journey_inputs(
    skill_root: Path, requirements: bytes, inventory: bytes, graph: bytes
) -> None:
    fixture = JOURNEYS / "agentic_eval.json"
    paths = [write(skill_root, name, data) for name, data in (
        ("requirements.json", requirements), ("inventory.json", inventory),
        ("graph.json", graph))]
    for path, schema in zip(paths, ("requirements", "discovery_inventory", "state_graph"),
                            strict=True):
        _, problems = read_document(path, schema)
        if problems:
            assert_clear(problems)
    loaded_or_refused(lambda: load_inputs(fixture, *paths))


@EXAMPLES
@given(data=contents(REPORT))
def test_the_report_reader(data: bytes) -> None:
    try:
        report = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return  # the command says "not a JSON report" (run below)
    problems = report_problems(report)
    if problems:
        assert_clear(problems)
    else:
        assert terminal_lines(report) and markdown(report)


@pytest.mark.parametrize(("command", "name", "data"), [
    (["validate"], "agentic_eval.json", b"\x00\xff{"),
    (["validate"], "agentic_eval.json", b"[1, 2]"),
    (["report"], "report.json", b"{\"schema\": 3}"),
    (["report"], "report.json", b"\xff\xfe"),
    (["regressions", "audit"], "regressions.json", b"{\"regressions\": {}}"),
], ids=["fixture-bytes", "fixture-array", "report-shape", "report-bytes", "registry-shape"])
def test_the_commands_refuse_in_one_line(
    tmp_path: Path, command: list[str], name: str, data: bytes
) -> None:
    (tmp_path / "fixtures").mkdir()
    path = tmp_path / "fixtures" / name
    path.write_bytes(data)
    target = str(tmp_path) if command[0] == "regressions" else str(path)
    result = run_cli(*command, target, cwd=tmp_path)
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr and result.stderr.strip()
