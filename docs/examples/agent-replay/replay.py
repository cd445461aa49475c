"""A stand-in for an agent CLI: replays a recorded run, so the example runs offline in CI.

    python3 replay.py claude RECORDING
        Writes the recorded Claude Code stream-json to $AGENTIC_EVALS_TRAJECTORY, as
        `claude -p ... --output-format stream-json --verbose > "$AGENTIC_EVALS_TRAJECTORY"`
        would, and re-enacts the run's Write calls in the current directory.

    python3 replay.py codex RECORDING --files DIR
        Prints the recorded Codex `exec --json` events on stdout, as `codex exec --json`
        does, and copies DIR's files (Codex records which files changed, not their content).

A recording that does not exist is refused with exit status 2.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path


def refuse(message: str) -> int:
    print(f"replay: {message}", file=sys.stderr)
    return 2


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def replay_claude(recording: Path) -> int:
    text = recording.read_text(encoding="utf-8")
    Path(os.environ["AGENTIC_EVALS_TRAJECTORY"]).write_text(text, encoding="utf-8")
    here = Path.cwd().resolve()
    recorded_cwd = None
    for line in text.splitlines():
        message = json.loads(line)
        if message.get("type") == "system" and message.get("subtype") == "init":
            recorded_cwd = message.get("cwd")
        if message.get("type") != "assistant":
            continue
        for block in message["message"].get("content", []):
            if block.get("type") == "tool_use" and block.get("name") == "Write":
                # The recording names files where it was made; write them here instead.
                written = Path(os.path.relpath(block["input"]["file_path"], recorded_cwd))
                target = (here / written).resolve()
                if not inside(target, here):
                    return refuse(f"the recording writes outside the workspace: {written}")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(block["input"]["content"], encoding="utf-8")
    return 0


def replay_codex(recording: Path, files: Path) -> int:
    sys.stdout.write(recording.read_text(encoding="utf-8"))
    for source in sorted(files.rglob("*")):
        if source.is_file():
            target = Path.cwd() / source.relative_to(files)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] not in ("claude", "codex"):
        return refuse("usage: replay.py claude RECORDING | codex RECORDING --files DIR")
    agent, recording = argv[1], Path(argv[2])
    if not recording.is_file():
        return refuse(f"no recording at {recording}")
    if agent == "claude":
        return replay_claude(recording)
    if len(argv) != 5 or argv[3] != "--files":
        return refuse("usage: replay.py codex RECORDING --files DIR")
    return replay_codex(recording, Path(argv[4]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
