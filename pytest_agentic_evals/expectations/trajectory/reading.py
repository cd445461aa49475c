"""Finding a trajectory, decoding its JSON, and telling which format it is in.

The text is one JSON document, JSON Lines, or JSON documents one after another (pretty-printed
spans, say). The format is told from the records themselves, so a case never has to say which
agent wrote its trajectory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Each format module by its full name: importing the package itself would be an import cycle.
import pytest_agentic_evals.expectations.trajectory.atif as atif
import pytest_agentic_evals.expectations.trajectory.claude as claude
import pytest_agentic_evals.expectations.trajectory.codex as codex
import pytest_agentic_evals.expectations.trajectory.otel as otel
import pytest_agentic_evals.expectations.trajectory.runner as runner
from pytest_agentic_evals.expectations.observation import ArtifactError, Observation
from pytest_agentic_evals.expectations.trajectory.events import (
    TrajectoryError,
    TrajectoryNotFound,
    TrajectoryNotUnderstood,
    Transcript,
)
from pytest_agentic_evals.jsonio import too_long_number

MAX_TRAJECTORY_BYTES = 64 * 1024 * 1024
_CACHE_KEY = "trajectory:"

Parser = Callable[[list[Any]], Transcript]


def load_transcript(source: str, observation: Observation) -> Transcript:
    """The trial's trajectory from ``source``, read once per trial whatever asks for it.

    Raises TrajectoryNotFound (nothing to read), TrajectoryNotUnderstood (a shape this version
    does not read) or TrajectoryError (not a trajectory).
    """
    key = _CACHE_KEY + source
    if key not in observation.cache:
        try:
            text, label = read_trajectory_text(source, observation)
            transcript = parse_trajectory(text)
            transcript.label = label
            observation.cache[key] = transcript
        except (TrajectoryNotFound, TrajectoryNotUnderstood, TrajectoryError) as exc:
            observation.cache[key] = exc
    found = observation.cache[key]
    if isinstance(found, Exception):
        raise found
    assert isinstance(found, Transcript)
    return found


@dataclass(frozen=True)
class Unusable:
    """How an expectation kind words each way its transcript can fail it (``{}``: the
    reason)."""

    not_found: str
    not_understood: str
    not_a_trajectory: str


def transcript_or_failure(
    value: Mapping[str, Any], observation: Observation, unusable: Unusable
) -> Transcript | str:
    """The transcript an expectation's ``source`` names (the trial's trajectory by default),
    or the failure that says, in the kind's words, why there is none to judge."""
    try:
        return load_transcript(value.get("source", "env"), observation)
    except TrajectoryNotFound as exc:
        return unusable.not_found.format(exc)
    except TrajectoryNotUnderstood as exc:
        return unusable.not_understood.format(exc)
    except TrajectoryError as exc:
        return unusable.not_a_trajectory.format(exc)


def read_trajectory_text(source: str, observation: Observation) -> tuple[str, str]:
    """The text at ``source`` ("env", "stdout" or a relative path) and a label for messages."""
    if source == "stdout":
        path, label = observation.stdout_path, "stdout"
    elif source == "env":
        if observation.trajectory_path is None:
            raise TrajectoryNotFound("AGENTIC_EVALS_TRAJECTORY is not set for this trial")
        path = observation.trajectory_path
        label = f"{path} (AGENTIC_EVALS_TRAJECTORY)"
    else:
        try:
            path = observation.resolve(source)
        except ArtifactError as exc:
            raise TrajectoryError(str(exc)) from None
        label = source
        if path.is_file() and observation.not_before_ns is not None and \
                path.stat().st_mtime_ns < observation.not_before_ns:
            raise TrajectoryNotFound(f"{label} was not written during this trial")
    return read_bounded(path, label), label


def read_bounded(path: Path, label: str) -> str:
    if not path.is_file():
        raise TrajectoryNotFound(f"{label} does not exist")
    size = path.stat().st_size
    if size > MAX_TRAJECTORY_BYTES:
        raise TrajectoryError(f"{label} is {size} bytes, larger than the "
                              f"{MAX_TRAJECTORY_BYTES // (1024 * 1024)} MiB a trajectory may be")
    text = path.read_bytes().decode("utf-8", errors="replace")
    if not text.strip():
        raise TrajectoryNotFound(f"{label} is empty")
    return text


def parse_trajectory(text: str) -> Transcript:
    """The normalised transcript of a trajectory in any recognised format."""
    if not text.strip():
        raise TrajectoryNotFound("the trajectory is empty")
    records = json_records(text)
    return detect(records)(records)


def json_records(text: str) -> list[Any]:
    """The JSON values of the text: a document's (a list is its items), or one per line, or
    one after another."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        pass
    except RecursionError:
        raise TrajectoryError("the trajectory is nested too deeply to parse") from None
    except ValueError:
        pass  # a number too long to read: said with its line below
    else:
        return document if isinstance(document, list) else [document]
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            concatenated = _concatenated(text)
            if concatenated is None:
                raise TrajectoryError(f"line {number} is not valid JSON ({exc})") from None
            return concatenated
        except RecursionError:
            raise TrajectoryError(f"line {number} is nested too deeply to parse") from None
        except ValueError as exc:
            raise TrajectoryError(f"line {number} {too_long_number(exc) or exc}") from None
    return records


def _concatenated(text: str) -> list[Any] | None:
    """Documents written one after another over several lines each; None if it is not that."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return values
        try:
            value, position = decoder.raw_decode(text, position)
        except (json.JSONDecodeError, RecursionError):
            return None
        except ValueError as exc:
            line = text.count("\n", 0, position) + 1
            raise TrajectoryError(f"the document at line {line} "
                                  f"{too_long_number(exc) or exc}") from None
        values.append(value)


def detect(records: list[Any]) -> Parser:
    """The parser of the first record that only one format writes; else the runner's own."""
    for record in records:
        if not isinstance(record, dict):
            continue
        if otel.is_otlp_export(record):
            return otel.parse
        if atif.is_atif_document(record):
            return atif.parse
        if codex.is_codex_record(record):
            return codex.parse
        if claude.is_claude_record(record):
            return claude.parse
        if otel.is_span(record):
            return otel.parse
    return runner.parse
