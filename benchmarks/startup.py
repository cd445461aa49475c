"""Start-up: what installing the plugin costs a pytest user who does not turn it on, and how
quickly the command answers.

* An unrelated project's trivial pytest run, with the plugin installed but not enabled, next
  to the same run with ``-p no:agentic_evals`` (the plugin not even imported).
* ``agentic-evals --help`` and ``agentic-evals validate`` of one fixture, next to
  ``python -c "import pytest"``: the command's own start-up over the import it cannot avoid.

Each pair is timed alternately, many times; the figures are medians.
"""

from __future__ import annotations

import shutil
import statistics
import sys
from pathlib import Path

from common import skill_dir, timed, write_fixture

TRIVIAL_TEST = "def test_nothing():\n    assert True\n"


def small_skill(root: Path) -> tuple[Path, Path]:
    """A skill and its fixture of two cases: what ``validate`` is timed on."""
    skill = skill_dir(root)
    fixture = write_fixture(skill / "fixtures" / "agentic_eval.json",
                            [{"name": "runs", "type": "positive", "real_world": True,
                              "command": ["../run.sh"], "expected": {"exit_code": 0}},
                             {"name": "refuses", "type": "negative", "command": ["../run.sh"],
                              "expected": {"exit_code": 0}}], trials=3)
    return skill, fixture


def _paired(rounds: int, cwd: Path, **commands: list[str]) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, command in commands.items():
            times[name].append(timed(command, cwd))
    return {name: statistics.median(values) * 1000 for name, values in times.items()}


def bench_startup(work: Path, quick: bool) -> list[tuple[str, str, str, str]]:
    rounds = 3 if quick else 21
    project = work / "startup-project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "test_unrelated.py").write_text(TRIVIAL_TEST)
    pytest_run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                  "-p", "no:xdist", "-p", "no:randomly", "test_unrelated.py"]
    plugin = _paired(rounds, project, installed=pytest_run,
                     absent=[*pytest_run, "-p", "no:agentic_evals"])
    skill, fixture = small_skill(work / "startup-skill")
    command = shutil.which("agentic-evals", path=str(Path(sys.executable).parent))
    cli = [command] if command else [sys.executable, "-m", "pytest_agentic_evals.cli"]
    answers = _paired(rounds, skill, help=[*cli, "--help"],
                      validate=[*cli, "validate", str(fixture)],
                      pytest_import=[sys.executable, "-c", "import pytest"])
    base = answers["pytest_import"]
    return [
        ("trivial pytest run of an unrelated project, plugin installed but not enabled",
         f"{plugin['installed']:.0f} ms", f"{plugin['absent']:.0f} ms (-p no:agentic_evals)",
         f"+{plugin['installed'] - plugin['absent']:.1f} ms (target <= +10 ms)"),
        ("agentic-evals --help", f"{answers['help']:.0f} ms",
         f"{base:.0f} ms (python -c 'import pytest')",
         f"{answers['help'] / base:.2f}x (target <= 1.3x)"),
        ("agentic-evals validate of one fixture", f"{answers['validate']:.0f} ms",
         f"{base:.0f} ms (python -c 'import pytest')",
         f"{answers['validate'] / base:.2f}x (target <= 1.3x)"),
    ]
