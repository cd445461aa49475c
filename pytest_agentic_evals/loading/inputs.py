"""Input artifacts as the loader builds them: inline text or JSON, base64 bytes, or a file of the
skill directory (``from``), at case level or shared by every case (fixture level).

The rules a schema cannot say are checked here, each problem with its JSON pointer: exactly one
source per artifact, base64 that decodes, and a ``from`` file that exists inside the skill
directory (a fixture must not copy a file from elsewhere on the machine into a trial) and is not
the fixture itself, under any of its names.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_agentic_evals.model import InputArtifact
from pytest_agentic_evals.problems import Problem

SOURCES = ("content", "content_base64", "from")


# An input artifact with the JSON pointer of its entry, for messages about it.
Placed = tuple[str, InputArtifact]


def build_inputs(
    raw: Any, pointer: str, fixture_path: Path, skill_dir: Path, shown: str
) -> tuple[list[Placed], list[Problem]]:
    """The input artifacts of one ``artifacts`` list; entries with problems are left out."""
    artifacts: list[Placed] = []
    problems: list[Problem] = []
    if not isinstance(raw, list):
        return artifacts, problems  # the schema reports it
    for position, entry in enumerate(raw):
        here = f"{pointer}/{position}"
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            continue
        given = [key for key in SOURCES if key in entry]
        if len(given) != 1:
            said = ", ".join(given) if given else "none of them"
            problems.append(Problem(shown, here, "an input artifact needs exactly one of "
                                    f"content, content_base64 and from (it has {said})"))
            continue
        outside = entry.get("outside_workspace") is True
        if not isinstance(entry.get("content_base64", ""), str) or \
                not isinstance(entry.get("from", "-"), str) or entry.get("from") == "":
            continue  # the schema reports the type
        if "content" in entry:
            artifacts.append((here, InputArtifact(entry["path"], entry["content"], outside)))
        elif "content_base64" in entry:
            data, problem = _decoded(entry["content_base64"])
            if problem:
                problems.append(Problem(shown, here + "/content_base64", problem))
            else:
                artifacts.append((here, InputArtifact(entry["path"], None, outside, binary=data)))
        else:
            source, problem = _source(entry["from"], fixture_path, skill_dir)
            if problem:
                problems.append(Problem(shown, here + "/from", problem))
            else:
                artifacts.append((here, InputArtifact(entry["path"], None, outside,
                                                      source=source, origin=entry["from"])))
    return artifacts, problems


def merged(shared: Sequence[Placed], own: Sequence[Placed]) -> list[Placed]:
    """The fixture's shared artifacts, then the case's; a case's artifact replaces a shared one
    at the same path."""
    paths = {artifact.path for _, artifact in own}
    return [*[p for p in shared if p[1].path not in paths], *own]


def _decoded(text: str) -> tuple[bytes, str | None]:
    try:
        return base64.b64decode("".join(text.split()), validate=True), None
    except (binascii.Error, ValueError) as exc:
        return b"", f"not valid base64 ({exc})"


def _source(relative: str, fixture_path: Path, skill_dir: Path) -> tuple[Path, str | None]:
    """The ``from`` file: relative to the fixture's folder, inside the skill directory, and
    not the fixture itself (a trial reads that as an empty file)."""
    if os.path.isabs(relative):
        return Path(), (f"{relative!r} is absolute: name a file of the skill directory, "
                        "relative to the fixture's folder")
    path = Path(os.path.normpath(fixture_path.parent / relative))
    root = Path(os.path.realpath(skill_dir))
    real = Path(os.path.realpath(path))
    if not _inside(path, skill_dir) or not _inside(real, root):
        return Path(), (f"{relative!r} resolves outside the skill directory {skill_dir} "
                        f"(to {real}): input files must come from the skill's own folder")
    if not real.is_file():
        reason = "does not exist" if not real.exists() else "is not a regular file"
        return Path(), f"{relative!r} {reason} ({path})"
    with contextlib.suppress(OSError):
        if os.path.samefile(real, fixture_path):
            return Path(), (f"{relative!r} is the fixture itself ({real}): a trial reads its "
                            "fixture as an empty file, and no input file hands it over")
    return real, None


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
