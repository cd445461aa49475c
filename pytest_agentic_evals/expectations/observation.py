"""What a finished trial did, as expectation checks see it."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pytest_agentic_evals.expectations.output import search_stream

STREAMS = ("stdout", "stderr")


class View(Protocol):
    """How a trial saw its workspace, when that is not the directory itself (an overlay)."""

    def locate(self, path: Path) -> tuple[Path, Path]:
        """Where to read what the trial saw at ``path``, and where ``path`` led in its view."""


@dataclass
class Observation:
    """What a trial did, as expectation checks see it."""

    exit_code: int | None
    stdout_path: Path
    stderr_path: Path
    cwd: Path
    """The trial's working directory; relative artifact paths resolve against it."""
    workspace: Path
    """The root of the trial's workspace; artifacts must stay inside it unless declared."""
    needles: Mapping[str, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict)
    """Per stream, the substrings and regexes known in advance, searched for in one pass."""
    not_before_ns: int | None = None
    """When the trial started: an artifact outside the workspace is not deleted before a
    trial, so one last written before this moment is stale and cannot count."""
    trajectory_path: Path | None = None
    """Where the trial's agent may write its trajectory (``AGENTIC_EVALS_TRAJECTORY``)."""
    domains: Mapping[str, Any] | None = None
    """What the trial's domain proxy saw (the report's ``domains`` entry); None without one."""
    view: View | None = None
    """Set when the workspace was an overlay: ``resolve`` reads the trial's view through it."""
    cache: dict[str, Any] = field(default_factory=dict)
    """What checks read once per trial and share (a parsed trajectory, for one)."""
    _searched: dict[str, tuple[set[str], set[str]]] = field(default_factory=dict)
    _slow: dict[str, set[str]] = field(default_factory=dict)
    _resolved: dict[tuple[str, bool], Path] = field(default_factory=dict)

    def stream_path(self, stream: str) -> Path:
        return self.stdout_path if stream == "stdout" else self.stderr_path

    def contains(self, stream: str, substring: str) -> bool:
        found, _ = self._search(stream, substrings=(substring,))
        return substring in found

    def matches(self, stream: str, pattern: str) -> bool:
        _, matched = self._search(stream, patterns=(pattern,))
        return pattern in matched

    def too_slow(self, stream: str, pattern: str) -> bool:
        """Whether the search for ``pattern`` in ``stream`` was stopped before it decided."""
        return pattern in self._slow.get(stream, ())

    def _search(
        self, stream: str, substrings: Sequence[str] = (), patterns: Sequence[str] = ()
    ) -> tuple[set[str], set[str]]:
        known_subs, known_patterns = self.needles.get(stream, (frozenset(), frozenset()))
        if stream not in self._searched:
            self._searched[stream] = search_stream(
                self.stream_path(stream), known_subs, [re.compile(p) for p in known_patterns],
                self._slow.setdefault(stream, set()),
            )
        found, matched = self._searched[stream]
        extra_subs = [s for s in substrings if s not in known_subs]
        extra_patterns = [p for p in patterns if p not in known_patterns]
        if extra_subs or extra_patterns:  # a plugin asked for something not declared up front
            more_found, more_matched = search_stream(
                self.stream_path(stream), extra_subs, [re.compile(p) for p in extra_patterns],
                self._slow.setdefault(stream, set()),
            )
            found |= more_found
            matched |= more_matched
        return found, matched

    def resolve(self, relative: str, outside_allowed: bool = False) -> Path:
        """The path of an artifact in this trial, refusing escapes from the workspace.

        Read once per path: a trial's files are looked at after it has ended (its hash, each
        check on it), when nothing of it can change them any more."""
        key = (relative, outside_allowed)
        if key not in self._resolved:
            self._resolved[key] = self._resolve(relative, outside_allowed)
        return self._resolved[key]

    def _resolve(self, relative: str, outside_allowed: bool) -> Path:
        path = Path(os.path.normpath(self.cwd / relative))
        if self.view is not None:
            held, real = self.view.locate(path)
            if not outside_allowed and not _inside(real, Path(os.path.normpath(self.workspace))):
                raise ArtifactError(f"{relative} resolves outside the trial workspace ({real})")
            return held
        if not outside_allowed:
            real = Path(os.path.realpath(path))
            root = Path(os.path.realpath(self.workspace))
            if real != root and root not in real.parents:
                raise ArtifactError(f"{relative} resolves outside the trial workspace ({real})")
        return path


def _inside(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


class ArtifactError(Exception):
    """An artifact that cannot be read as asked; the message is the whole explanation."""
