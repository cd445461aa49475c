"""A newcomer's first hour: the walk-through of docs/getting-started.md, run from the document
itself, and `agentic-evals run` on a terminal, where it shows the summary and names the
report's file instead of printing the JSON."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from conftest import Skill, child_env

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "getting-started.md"


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.S | re.M)


def test_the_getting_started_guide_works_as_written(tmp_path: Path) -> None:
    guide = GUIDE.read_text()
    commands = blocks(guide, "sh")
    # The install block is what made this test's virtualenv: it is the one step not rerun.
    install = [block for block in commands if "pip install" in block]
    assert len(install) == 1 and "pip install -e ." in install[0]
    assert guide.index("pip install -e .") < guide.index("## 1. A skill")
    assert "pip install pytest-agentic-evals" not in guide  # not published: it would fail
    script = "\n".join(block for block in commands if block not in install)
    env = child_env()
    env.update(TMPDIR=str(tmp_path), COLUMNS="80")
    completed = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, env=env,
        stdin=subprocess.DEVNULL, timeout=600,
    )
    output = completed.stdout + completed.stderr
    # Every output the guide shows, shown as it says.
    for shown in blocks(guide, "text"):
        for line in shown.strip().splitlines():
            assert line in output, f"the guide shows {line!r}; the run printed:\n{output}"
    assert "VALID: fixtures/agentic_eval.json (2 cases, trials=3)" in output
    assert output.index("exit status: 0") < output.index("exit status: 1")
    assert "report: report.json" in output
    # The tutorial's skill is a skill: audit-skills sees it, and then sees its fixture.
    assert re.search(r"^greeter +accepted_fixture ", output, flags=re.M)
    assert "fixture rejected" in output  # step 5: the contract says no
    (skill,) = tmp_path.glob("tmp.*/greeter")  # mktemp -d made the empty directory
    report = json.loads((skill / "report.json").read_text())
    assert report["readiness"] == "READY"


def on_a_terminal(*args: str, cwd: Path) -> tuple[int, str, str]:
    """``agentic-evals ARGS`` with stdout on a pseudo-terminal, as a person runs it."""
    executable = Path(sys.executable).parent / "agentic-evals"
    env = child_env()
    primary, secondary = pty.openpty()
    process = subprocess.Popen([str(executable), *args], cwd=cwd, stdout=secondary,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
                               text=True)
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the terminal's other side is closed: the command is done
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(primary)
    stderr = process.stderr.read() if process.stderr else ""
    return process.wait(timeout=300), b"".join(chunks).decode(), stderr


def test_run_on_a_terminal_shows_the_summary_and_names_the_report(skill: Skill) -> None:
    fixture = skill.fixture()
    status, stdout, stderr = on_a_terminal("run", str(fixture), "--output", "report.json",
                                           cwd=skill.root)
    assert status == 0, stderr
    assert "{" not in stdout  # no JSON on the terminal
    assert "READY            fixtures/agentic_eval.json (skill greeter)" in stderr
    assert stderr.rstrip().endswith("report: report.json")
    assert json.loads((skill.root / "report.json").read_text())["readiness"] == "READY"


def test_run_on_a_terminal_without_output_writes_a_new_file(skill: Skill) -> None:
    fixture = skill.fixture()
    status, stdout, stderr = on_a_terminal("run", str(fixture), cwd=skill.root)
    assert status == 0, stderr
    assert "{" not in stdout
    named = re.search(r"^report: (.+\.json)$", stderr, flags=re.M)
    assert named, stderr
    path = Path(named.group(1))
    assert json.loads(path.read_text())["readiness"] == "READY"
    path.unlink()


def test_json_on_a_terminal_when_asked(skill: Skill) -> None:
    fixture = skill.fixture()
    status, stdout, _ = on_a_terminal("run", str(fixture), "--json", cwd=skill.root)
    assert status == 0
    assert json.loads(stdout)["readiness"] == "READY"


def test_the_readme_main_job_names_its_report() -> None:
    readme = (ROOT / "README.md").read_text()
    (main_job,) = [block for block in blocks(readme, "sh") if "agentic-evals run" in block
                   and "pip install -e ." in block]
    assert main_job.strip().endswith("--output report.json")
    assert "report: report.json" in readme
    assert "under the rootdir" not in readme  # from a subfolder, pytest collects from there
