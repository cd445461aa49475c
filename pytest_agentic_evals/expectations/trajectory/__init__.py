"""Trajectory checks: which calls an agent made, and in what order (``expected.trajectory``).

A trajectory is read from the file at ``AGENTIC_EVALS_TRAJECTORY`` (source ``"env"``, the
default), from the trial's captured stdout (``"stdout"``) or from a path relative to the
case's working directory, then normalised into events (``events``). Formats, each in its own
module and detected from the text itself: the runner's own JSON Lines (``runner``), Claude Code
stream-json (``claude``), Codex ``exec --json`` (``codex``), OpenTelemetry spans (``otel``) and
ATIF (``atif``).

What is not evidence is never a pass. A trajectory that cannot be found (no file, empty) gives
a failure starting with ``trajectory not found``; one that is there but yields no event at all
(a format or schema this version does not know) gives one starting with ``trajectory not
tested``: either way the check was not carried out and the trial is BLOCKED, never PASS. A
malformed trajectory (bad JSON, too large) is an ordinary failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_agentic_evals.expectations.observation import Observation
from pytest_agentic_evals.expectations.trajectory.events import (
    FIGURES,
    MAIN,
    SUBAGENT,
    Event,
    TrajectoryError,
    TrajectoryNotFound,
    TrajectoryNotUnderstood,
    Transcript,
)
from pytest_agentic_evals.expectations.trajectory.matching import (
    NOT_TESTED,
    event_matches,
    match_trajectory,
)
from pytest_agentic_evals.expectations.trajectory.reading import (
    MAX_TRAJECTORY_BYTES,
    Unusable,
    load_transcript,
    parse_trajectory,
    transcript_or_failure,
)

TRAJECTORY_NOT_FOUND = "trajectory not found"
# Messages of a check that could not be carried out: the trial is BLOCKED on them, never PASS.
NOT_TESTED_PREFIXES = (TRAJECTORY_NOT_FOUND + ":", NOT_TESTED + ":")

__all__ = [
    "FIGURES",
    "MAIN",
    "MAX_TRAJECTORY_BYTES",
    "NOT_TESTED_PREFIXES",
    "SUBAGENT",
    "TRAJECTORY_NOT_FOUND",
    "Event",
    "TrajectoryError",
    "TrajectoryNotFound",
    "TrajectoryNotUnderstood",
    "Transcript",
    "Unusable",
    "check_trajectory",
    "event_matches",
    "load_transcript",
    "match_trajectory",
    "parse_trajectory",
    "transcript_or_failure",
    "trial_usage",
]

_UNUSABLE = Unusable(not_found=TRAJECTORY_NOT_FOUND + ": {}",
                     not_understood=NOT_TESTED + ": {}; the checks cannot be judged",
                     not_a_trajectory="trajectory: {}")


def check_trajectory(value: Mapping[str, Any], observation: Observation) -> list[str]:
    """The ``trajectory`` expectation kind."""
    transcript = transcript_or_failure(value, observation, _UNUSABLE)
    if isinstance(transcript, str):
        return [transcript]
    if transcript.calls_unknown is not None:
        return [f"{NOT_TESTED}: {transcript.label}: {transcript.calls_unknown}; the checks "
                "cannot be judged"]
    if not transcript.events:
        # Parsed to nothing is no better than missing: a forbidden call in a schema this
        # version does not read would otherwise pass as "never made".
        return [f"{NOT_TESTED}: {transcript.label} was read as {transcript.format} but yielded "
                f"no events (looked for {transcript.looked_for}); the checks cannot be judged"]
    return match_trajectory(value, transcript.events, transcript.unresolved_subagents)


def trial_usage(expected: Mapping[str, Any], observation: Observation) -> dict[str, Any] | None:
    """The figures of the trial's run for the report, or None when there is no transcript.

    Read from where the case's trajectory or budget reads; a case with neither still gets its
    figures when its agent wrote a trajectory at ``AGENTIC_EVALS_TRAJECTORY``.
    """
    sources = [expected[key].get("source", "env") for key in ("trajectory", "budget")
               if isinstance(expected.get(key), Mapping)]
    if not sources:
        path = observation.trajectory_path
        if path is None or not path.is_file() or path.stat().st_size == 0:
            return None
        sources = ["env"]
    for source in dict.fromkeys(sources):
        try:
            transcript = load_transcript(source, observation)
        except (TrajectoryNotFound, TrajectoryNotUnderstood, TrajectoryError):
            continue
        return transcript.usage()
    return None
