"""No secret reaches any output: one pytest session whose skill prints every secret shape to
stdout and stderr, writes them into a checked artifact, and leaves a process behind with one on
its command line; the JSON report, the Markdown summary, JUnit and the terminal are searched."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from conftest import make_skill, skill_fixture

# In the runner's environment, as a CI job has them.
ENVIRONMENT = {
    "GH_PAT": "pat-e2e-0123456789abcdef",
    "SERVICE_TOKEN": "tok-e2e-live-998877665544",
    "DATABASE_URL": "postgres://app:dbpass-e2e-4242@db.internal:5432/app",
}
CASE_SECRET = "case-key-e2e-5566778899"  # in the case's own env
# Printed as they are, never set anywhere: recognised by their shape.
SHAPED = {
    "ghp_": "ghp_E2eA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "github_pat_": "github_pat_11E2E0123456789_abcdefghijklmnopqrstuv",
    "sk-": "sk-live-e2e4f9a0b1c2d3e4f5a6b7c",
    "xoxb-": "xoxb-123456789012-e2eabcdefABCDEF",
    "AKIA": "AKIAE2EIOSFODNN7EXAM",
    "url": "mysql://root:urlpass-e2e-31337@localhost/db",
}
SECRETS = [*ENVIRONMENT.values(), CASE_SECRET, "dbpass-e2e-4242", *SHAPED.values()]
# The secret part of each: none of these may appear anywhere.
FORBIDDEN = [
    "pat-e2e-0123456789abcdef", "tok-e2e-live-998877665544", "dbpass-e2e-4242", CASE_SECRET,
    "E2eA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "11E2E0123456789_abcdefghijklmnopqrstuv",
    "live-e2e4f9a0b1c2d3e4f5a6b7c", "123456789012-e2eabcdefABCDEF", "E2EIOSFODNN7EXAM",
    "urlpass-e2e-31337",
    # The forms a program prints an environment secret in.
    "PAT-E2E-0123456789ABCDEF", base64.b64encode(b"tok-e2e-live-998877665544").decode(),
]

LEAKY_SH = r"""#!/usr/bin/env bash
# Prints every secret it knows, in every shape, then fails its check.
printf 'esc \033[2J nul \000 end\n'
printf '%*s' 2020 '' | tr ' ' a; echo "$GH_PAT"  # bytes 2039-2063: the head's edge
echo "token: $SERVICE_TOKEN db: $DATABASE_URL case: $CASE_KEY"
echo "upper: ${GH_PAT^^} base64: $(printf %s "$SERVICE_TOKEN" | base64)"
echo "shapes: __SHAPES__"
echo "stderr: $GH_PAT __SHAPES__" >&2
mkdir -p out
printf '{"value": "%s", "note": "`a|b` *c*"}\n' "$SERVICE_TOKEN" > out/result.json
(exec -a "helper-$GH_PAT *c* \`a|b\`" sleep 30) &
printf '%s' "$GH_PAT"; printf '%*s' 2040 '' | tr ' ' z  # across the tail's edge
exit 0
"""


@pytest.fixture
def leaky_session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.RunResult:
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    data = skill_fixture()
    data["cases"][0].update({
        "command": ["bash", "../leaky.sh"],
        "env": {"CASE_KEY": CASE_SECRET},
        "expected": {"exit_code": 0, "artifacts": [
            {"path": "out/result.json", "json_pointer": "/value", "equals": "x"},
            {"path": "out/result.json", "json_pointer": "/note", "equals": "y"},
        ]},
    })
    make_skill(pytester, data)
    script = pytester.path / "leaky.sh"
    script.write_text(LEAKY_SH.replace("__SHAPES__", " ".join(SHAPED.values())))
    script.chmod(0o755)
    return pytester.runpytest_subprocess(
        "--agentic-evals", "-p", "no:cacheprovider", "-p", "no:randomly", "-rA",
        "--agentic-evals-report", "report.json", "--agentic-evals-md", "summary.md",
        "--junitxml", "junit.xml", timeout=240,
    )


def test_no_secret_reaches_any_output(pytester: pytest.Pytester,
                                      leaky_session: pytest.RunResult) -> None:
    assert leaky_session.ret == 1
    outputs = {
        "terminal": leaky_session.stdout.str() + leaky_session.stderr.str(),
        **{name: (pytester.path / name).read_text()
           for name in ("report.json", "summary.md", "junit.xml")},
    }
    for name, text in outputs.items():
        leaked = [secret for secret in FORBIDDEN if secret in text]
        assert leaked == [], f"{name} shows {leaked}"
        assert "[REDACTED]" in text, name
    # The report says what failed, with the secret's place marked.
    report = json.loads(outputs["report.json"])
    case = report["cases"][0]
    problems = "\n".join(case["problems"])
    assert 'equals: expected "x", got "[REDACTED]"' in problems
    assert "left 1 process(es) behind" in problems and "helper-[REDACTED]" in problems
    trial = case["trials"][0]
    assert trial["left_behind_processes"][0]["command"].startswith("helper-[REDACTED]")
    assert "ghp_[REDACTED]" in trial["stderr"]["head"]
    # The terminal never gets the trial's raw control bytes.
    assert "\x1b[2J" not in outputs["terminal"] and "\x00" not in outputs["terminal"]
    assert "esc \\x1b[2J nul \\x00 end" in outputs["terminal"]
    assert trial["stdout"]["truncated"] is True
    # Markdown cells escape what would be markup: pipes, code spans, emphasis.
    assert "helper-[REDACTED] \\*c\\* \\`a\\|b\\`" in outputs["summary.md"]


def test_the_secrets_were_really_printed(pytester: pytest.Pytester,
                                         leaky_session: pytest.RunResult) -> None:
    # The check above is only worth something if the skill did print them: its raw output,
    # kept for a failed trial, has every one.
    report = json.loads((pytester.path / "report.json").read_text())
    output_dir = Path(report["cases"][0]["trials"][0]["output_dir"])
    raw = b"".join(path.read_bytes() for path in output_dir.iterdir() if path.is_file())
    missing = [secret for secret in FORBIDDEN if secret.encode() not in raw]
    assert missing == []
