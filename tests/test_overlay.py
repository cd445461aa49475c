"""Overlay workspaces: a sandboxed trial in copy mode writes only into its own layer, the
checks read what the trial saw, and where an overlay cannot stand in for a copy the trial gets
a copy and the report says why."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_agentic_evals.execution import overlay
from pytest_agentic_evals.execution.sandbox import (
    BWRAP_VARIABLE,
    MountPlan,
    SandboxSettings,
    available_bwrap,
    bwrap_arguments,
)
from pytest_agentic_evals.loading import load_fixture

from conftest import MODES, Skill, make_skill, skill_fixture

BWRAP = available_bwrap()
pytestmark = pytest.mark.skipif(
    BWRAP.problem is not None, reason=f"no sandbox on this machine: {BWRAP.problem}"
)


def run(pytester: pytest.Pytester, mode: list[str], *extra: str) -> tuple[int, dict[str, Any]]:
    report = pytester.path / "report.json"
    argv = ["--agentic-evals", "--agentic-evals-report", str(report), "-p", "no:cacheprovider",
            "--agentic-evals-sandbox", "required", "--agentic-evals-allow-exempt", *extra, *mode]
    result = pytester.runpytest_subprocess(*argv, timeout=300)
    return result.ret, json.loads(report.read_text())


def trials(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {case["name"]: case["trials"] for case in report["cases"]}


def tree(root: Path) -> dict[str, tuple[int, str]]:
    """Every entry under ``root``: its mode and its content (or link target)."""
    found = {}
    for directory, names, files in os.walk(root):
        for name in names + files:
            path = Path(directory, name)
            info = path.lstat()
            if path.is_symlink():
                content = "-> " + os.readlink(path)
            elif path.is_file():
                content = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                content = "dir"
            found[str(path.relative_to(root))] = (info.st_mode, content)
    return found


def populate(root: Path) -> None:
    (root / "data.txt").write_text("original\n")
    (root / "sub").mkdir()
    (root / "sub" / "old.txt").write_text("old\n")
    (root / "sub" / "deep").mkdir()
    (root / "sub" / "deep" / "leaf.txt").write_text("leaf\n")
    os.symlink("data.txt", root / "alias.txt")


# Everything a trial can do to the tree it was given, each in its own case; the readers check
# that none of it reached another trial.
HOSTILE = (
    "printf 'ORIGINAL\\n' > ../data.txt && echo more >> ../sub/old.txt"
    " && rm ../sub/deep/leaf.txt && mv ../sub ../moved && chmod 000 ../run.sh"
    " && rm ../alias.txt && ln -s /etc/hostname ../alias.txt && mkdir ../sub"
    " && echo planted > ../sub/old.txt && mkfifo ../fifo && chmod 700 .. && touch ../new.txt"
    " && rm -rf ../moved && test ! -e ../moved"
)
READER = (
    "grep -qx original ../data.txt && grep -qx old ../sub/old.txt"
    " && grep -qx leaf ../sub/deep/leaf.txt && test -x ../run.sh && test ! -e ../new.txt"
    " && test ! -e ../fifo && test ! -e ../moved && test \"$(readlink ../alias.txt)\" = data.txt"
)


@pytest.mark.parametrize("mode", MODES)
def test_a_hostile_trial_changes_nothing_but_its_own_layer(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    data = skill_fixture(trials=3)
    data["cases"] += [
        {"name": "hostile", "type": "positive", "command": ["sh", "-c", HOSTILE],
         "expected": {"exit_code": 0}},
        {"name": "reads", "type": "positive", "command": ["sh", "-c", READER],
         "expected": {"exit_code": 0}},
    ]
    make_skill(pytester, data)
    populate(pytester.path)
    before = tree(pytester.path)
    ret, report = run(pytester, mode)
    assert ret == 0, json.dumps(trials(report)["reads"], indent=1)[:3000]
    assert report["readiness"] == "READY"
    for case_trials in trials(report).values():
        for trial in case_trials:
            assert trial["workspace"]["overlay"] == str(pytester.path), trial["workspace"]
            assert trial["workspace"]["copied"] is None
    after = {name: entry for name, entry in tree(pytester.path).items()
             if name not in ("report.json", "stdout", "stderr")
             and not name.startswith("runpytest")}
    assert after == before


@pytest.fixture
def view_skill(pytester: pytest.Pytester) -> pytest.Pytester:
    cases = [
        # (name, script, artifact assertion, passes)
        ("links-into-the-skill", "ln -s data.txt ../out.txt",
         {"path": "../out.txt", "lines_contain": ["original"]}, True),
        ("a-link-into-the-skill-exists", "ln -s data.txt ../gone.txt",
         {"path": "../gone.txt", "exists": False}, False),
        ("a-link-to-a-removed-file-does-not-exist", "rm ../data.txt && ln -s data.txt ../out.txt",
         {"path": "../out.txt", "exists": False}, True),
        ("a-removed-file-is-not-found", "rm ../data.txt && ln -s data.txt ../out.txt",
         {"path": "../out.txt", "lines_contain": ["original"]}, False),
        ("a-replaced-directory-hides-the-skills",
         "rm -r ../sub && mkdir ../sub && ln -s sub/old.txt ../out.txt",
         {"path": "../out.txt", "exists": False}, True),
        ("a-changed-file-is-read-as-changed", "echo changed > ../data.txt && cp ../data.txt ../o",
         {"path": "../o", "equals": "changed\n"}, True),
        ("a-link-out-of-the-workspace-is-refused", "ln -s /etc/hostname ../out.txt",
         {"path": "../out.txt", "exists": True}, False),
        ("through-a-linked-directory", "ln -s sub ../linked && echo x > ../sub/new.txt",
         {"path": "../linked/new.txt", "equals": "x\n"}, True),
    ]
    data = skill_fixture(trials=1, eval_kind="runner_selftest")
    data["cases"] = [
        {"name": name, "type": "positive", "command": ["sh", "-c", script],
         "expected": {"exit_code": 0, "artifacts": [assertion]}}
        for name, script, assertion, _ in cases
    ]
    data["cases"] += [
        {"name": "an-input-artifact-runs", "type": "positive", "command": ["sh", "../in/tool.sh"],
         "artifacts": [{"path": "../in/tool.sh", "content": "echo tool > ../made.txt\n"}],
         "expected": {"exit_code": 0, "artifacts": [{"path": "../made.txt", "equals": "tool\n"}]}},
        {"name": "a-missing-program", "type": "positive", "command": ["../nowhere.sh"],
         "expected": {"exit_code": 0}},
    ]
    make_skill(pytester, data)
    populate(pytester.path)
    pytester.expected = {name: passes for name, _, _, passes in cases}  # type: ignore[attr-defined]
    pytester.expected.update({"an-input-artifact-runs": True,  # type: ignore[attr-defined]
                              "a-missing-program": False})
    return pytester


def test_the_checks_read_what_the_trial_saw(view_skill: pytest.Pytester) -> None:
    _, report = run(view_skill, [])
    outcomes = {name: found[0]["outcome"] for name, found in trials(report).items()}
    wanted = {name: "PASS" if passes else "FAIL"
              for name, passes in view_skill.expected.items()}  # type: ignore[attr-defined]
    assert outcomes == wanted, json.dumps(trials(report), indent=1)[:4000]
    problems = {name: found[0]["problems"] for name, found in trials(report).items()}
    assert any("exists but must not" in p for p in problems["a-link-into-the-skill-exists"])
    assert any("not found" in p for p in problems["a-removed-file-is-not-found"])
    assert any("outside the trial workspace" in p
               for p in problems["a-link-out-of-the-workspace-is-refused"])
    assert problems["a-missing-program"] == ["command not found: ../nowhere.sh"]
    assert all(found[0]["workspace"]["overlay"] for found in trials(report).values())


def test_an_overlay_the_machine_cannot_mount_falls_back_to_a_copy(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrapper = pytester.path.parent / "bwrap-without-overlay"
    wrapper.write_text(
        "#!/bin/sh\nfor arg; do if [ \"$arg\" = --overlay-src ]; then\n"
        "  echo 'bwrap: Failed to mount overlay: simulated' >&2; exit 1; fi; done\n"
        f"exec {BWRAP.path} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv(BWRAP_VARIABLE, str(wrapper))
    data = skill_fixture(trials=2)
    data["cases"].append({"name": "hostile", "type": "positive", "command": ["sh", "-c", HOSTILE],
                          "expected": {"exit_code": 0}})
    data["cases"].append({"name": "reads", "type": "positive", "command": ["sh", "-c", READER],
                          "expected": {"exit_code": 0}})
    make_skill(pytester, data)
    populate(pytester.path)
    ret, report = run(pytester, [])
    assert ret == 0
    for case_trials in trials(report).values():
        for trial in case_trials:
            assert trial["isolation"]["sandbox"] == "bwrap"
            assert trial["workspace"]["overlay"] is None
            assert trial["workspace"]["copied"] == (
                "no overlay of the skill directory here: bwrap: Failed to mount overlay: "
                "simulated")


def test_what_stands_in_the_way_of_an_overlay_is_named(tmp_path: Path) -> None:
    skill = Skill(tmp_path / "skill").root
    populate(skill)
    data = skill_fixture(trials=2)
    data["cases"][0]["expected"]["artifacts"] = [{"path": "../data.txt", "min_bytes": 1}]
    data["cases"][1]["artifacts"] = [{"path": "../alias.txt/x", "content": "x"}]
    (skill / "fixtures" / "agentic_eval.json").write_text(json.dumps(data))
    fixture = load_fixture(skill / "fixtures" / "agentic_eval.json")
    stale, through_link = fixture.cases
    run_dir = tmp_path / "runs" / "run-x"
    on = SandboxSettings("auto")
    assert (overlay.unavailable(fixture, stale, on, run_dir)
            == "expected output ../data.txt exists in the skill directory")
    assert overlay.unavailable(fixture, through_link, on, run_dir) == (
        f"../alias.txt/x: {skill / 'alias.txt'} is not a directory in the skill directory")
    assert (overlay.unavailable(fixture, stale, SandboxSettings("off"), run_dir)
            == "the trial is not sandboxed")
    inside = skill / "runs"
    assert overlay.unavailable(fixture, stale, on, inside) == (
        f"the runner's run directory {inside} lies inside the skill directory")
    (skill / "data.txt").unlink()
    assert overlay.unavailable(fixture, stale, on, run_dir) is None
    assert not any(run_dir.iterdir()), "the probe leaves nothing behind"


def test_the_layers_read_whiteouts_and_opaque_directories(tmp_path: Path) -> None:
    """The layers as the kernel leaves them, made here by a real overlay in a real sandbox."""
    lower, trial_dir = tmp_path / "lower", tmp_path / "trial"
    lower.mkdir()
    trial_dir.mkdir()
    populate(lower)
    layers = overlay.prepare(trial_dir, lower)
    (lower / "keep.txt").write_text("kept\n")
    assert BWRAP.path is not None
    plan = MountPlan(workspace=layers.upper, scratch=tmp_path, cwd=layers.upper,
                     network="none", lower=lower, work=layers.work)
    script = ("rm data.txt && rm -r sub && mkdir sub && echo n > sub/new.txt"
              " && echo w > written.txt")
    subprocess.run([BWRAP.path, *bwrap_arguments(plan), "--", "/bin/sh", "-c", script],
                   check=True)
    overlay.remove(layers.work)
    assert not layers.work.exists()
    up = layers.upper

    def held(relative: str) -> Path:
        return layers.locate(up / relative)[0]

    assert not held("data.txt").exists()
    assert not held("alias.txt").exists()  # a link to what was removed
    assert held("sub/new.txt").read_text() == "n\n"
    assert not held("sub/old.txt").exists()  # the directory was replaced: opaque
    assert not held("sub/deep").exists()
    assert held("written.txt") == up / "written.txt"
    assert held("keep.txt") == lower / "keep.txt"
    assert held("sub") == up / "sub"
    assert layers.locate(up / "sub" / ".." / "written.txt")[1] == up / "written.txt"
    shutil.rmtree(trial_dir)


def test_the_layers_follow_links_through_a_linked_temporary_directory(tmp_path: Path) -> None:
    """The runner's temporary directory reached through a symlink (as /tmp is on some
    systems): a link the trial made to the workspace's real path still reads the trial's
    view, and a loop of links reads as nothing, as the kernel would answer."""
    real = tmp_path / "real"
    lower = tmp_path / "lower"
    (real / "trial").mkdir(parents=True)
    lower.mkdir()
    (lower / "keep.txt").write_text("kept\n")
    os.symlink(real, tmp_path / "linked")
    layers = overlay.prepare(tmp_path / "linked" / "trial", lower)
    up = layers.upper
    assert layers.real == real / "trial" / "workspace"
    os.symlink(layers.real / "keep.txt", layers.real / "out.txt")
    os.symlink("b", layers.real / "a")
    os.symlink("a", layers.real / "b")
    held, shown = layers.locate(up / "out.txt")
    assert (held, shown) == (lower / "keep.txt", up / "keep.txt")
    held, shown = layers.locate(up / "a")
    assert not held.exists() and shown.parent == up
