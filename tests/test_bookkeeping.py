"""What the controller keeps per trial: parts trials share are kept once, and the report is
written piece by piece with the same text as it has in memory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_agentic_evals.execution.trial import share_parts
from pytest_agentic_evals.jsonio import json_text, write_json_atomically


def result(trial: int, stdout: str) -> dict[str, Any]:
    return {"trial": trial, "outcome": "PASS", "problems": [], "argv": ["true"],
            "isolation": {"sandbox": False, "network": "host", "reason": "off"},
            "stdout": {"bytes": len(stdout), "head": stdout, "tail": "", "truncated": False},
            "workspace": {"root": f"/runs/trial-{trial}", "mode": "copy"}}


def test_equal_parts_of_trials_are_kept_once_and_different_ones_apart() -> None:
    pool: dict[bytes, Any] = {}
    first, second, third = (share_parts(result(n, out), pool)
                            for n, out in ((1, "same"), (2, "same"), (3, "other")))
    assert first["isolation"] is second["isolation"] is third["isolation"]
    assert first["stdout"] is second["stdout"] and third["stdout"]["head"] == "other"
    assert first["workspace"] is not second["workspace"]  # not a shared part
    assert second["workspace"]["root"] == "/runs/trial-2"
    assert json.loads(json.dumps(second)) == result(2, "same")  # nothing else changed


def test_keys_of_a_result_rebuilt_by_a_worker_are_kept_once() -> None:
    # A result that crossed from an xdist worker has key strings of its own (as JSON
    # decoding gives): the controller keeps one string per key, and the same content.
    crossed = [json.loads(json.dumps(result(n, "same"))) for n in (1, 2)]
    assert next(iter(crossed[0])) is not next(iter(crossed[1]))
    pool: dict[bytes, Any] = {}
    first, second = (share_parts(one, pool) for one in crossed)
    for key_one, key_two in zip(first, second, strict=True):
        assert key_one is key_two
    for key_one, key_two in zip(first["workspace"], second["workspace"], strict=True):
        assert key_one is key_two
    assert first == result(1, "same") and second == result(2, "same")


def test_a_written_report_is_the_text_json_text_gives(tmp_path: Path) -> None:
    report = {"schema": "x", "cases": [{"name": "a", "trials": [result(1, "é\n"),
                                                                 result(2, "")]}],
              "empty": {}, "nothing": [], "notes": ["one", "two"]}
    path = tmp_path / "report.json"
    write_json_atomically(path, report)
    assert path.read_text(encoding="utf-8") == json_text(report)
    assert json.loads(path.read_text(encoding="utf-8")) == report
    # A trial a line, as before.
    assert sum('"trial": ' in line for line in path.read_text().splitlines()) == 2
