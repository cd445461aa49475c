"""Captured output: searching whole streams in bounded memory, and redacted excerpts.

A trial's stdout and stderr are spooled to files by the runner, so a command may print
gigabytes. Matching reads the file in chunks; the report keeps only a head and a tail.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

CHUNK_BYTES = 4 * 1024 * 1024
# Regular expressions see the whole stream at once up to this size. Past it they are searched
# in windows that overlap by REGEX_OVERLAP_CHARS, so a match must be shorter than that.
WHOLE_STREAM_REGEX_BYTES = 16 * 1024 * 1024
REGEX_OVERLAP_CHARS = 1024 * 1024
EXCERPT_BYTES = 2048
REDACTED = "[REDACTED]"

SECRET_NAME = re.compile(r"TOKEN|SECRET|KEY|PASSW|AUTH|CREDENTIAL|PRIVATE|COOKIE|SESSION", re.I)
SECRET_SHAPES = (
    re.compile(r"(?i)(\bauthorization\s*[:=]\s*(?:bearer|basic|token)?\s*)[^\s\"',;]+"),
    re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(
        r"(?i)(\b(?:access_token|refresh_token|token|api[_-]?key|secret|password|passwd)"
        r"\s*=\s*)[^\s&\"',;]+"
    ),
    re.compile(
        r"(?i)(\"(?:[a-z_]*token|[a-z_]*secret|password|passwd|api[_-]?key|authorization)\""
        r"\s*:\s*\")[^\"]*"
    ),
)


def decoded_chunks(path: Path) -> Iterator[str]:
    """The file as text chunks, invalid UTF-8 replaced rather than fatal."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with path.open("rb") as stream:
        while chunk := stream.read(CHUNK_BYTES):
            yield decoder.decode(chunk)
    yield decoder.decode(b"", final=True)


def search_stream(
    path: Path, substrings: Iterable[str], patterns: Iterable[re.Pattern[str]]
) -> tuple[set[str], set[str]]:
    """Which substrings occur, and which patterns match (by pattern text), anywhere in the file."""
    wanted = set(substrings)
    regexes = {pattern.pattern: pattern for pattern in patterns}
    found: set[str] = set()
    matched: set[str] = set()
    if not wanted and not regexes:
        return found, matched
    if not path.exists():
        return found, matched
    if regexes and path.stat().st_size <= WHOLE_STREAM_REGEX_BYTES:
        text = "".join(decoded_chunks(path))
        return {s for s in wanted if s in text}, {k for k, r in regexes.items() if r.search(text)}

    overlap = max((len(s) - 1 for s in wanted), default=0)
    if regexes:
        overlap = max(overlap, REGEX_OVERLAP_CHARS)
    carry = ""
    for chunk in decoded_chunks(path):
        window = carry + chunk
        found |= {s for s in wanted - found if s in window}
        matched |= {key for key, r in regexes.items() if key not in matched and r.search(window)}
        if found == wanted and len(matched) == len(regexes):
            break  # everything asked for is already seen: no need to read the rest
        carry = window[-overlap:] if overlap else ""
    return found, matched


def excerpt(path: Path, secrets: Iterable[str] = ()) -> dict[str, Any]:
    """Head and tail of a captured stream, decoded and redacted, with its full size."""
    try:
        size = path.stat().st_size
        with path.open("rb") as stream:
            head = stream.read(EXCERPT_BYTES)
            tail = b""
            if size > 2 * EXCERPT_BYTES:
                stream.seek(size - EXCERPT_BYTES)
                tail = stream.read(EXCERPT_BYTES)
            elif size > EXCERPT_BYTES:
                tail = stream.read()
    except OSError:
        return {"bytes": 0, "head": "", "tail": "", "truncated": False}
    values = tuple(secrets)
    return {
        "bytes": size,
        "head": redact(head.decode("utf-8", errors="replace"), values),
        "tail": redact(tail.decode("utf-8", errors="replace"), values),
        "truncated": size > 2 * EXCERPT_BYTES,
    }


def secret_values(env: Mapping[str, str]) -> list[str]:
    """Values of environment variables whose names look secret, longest first."""
    values = {value for name, value in env.items() if SECRET_NAME.search(name) and len(value) >= 6}
    return sorted(values, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    for value in secrets:
        text = text.replace(value, REDACTED)
    for shape in SECRET_SHAPES:
        text = shape.sub(lambda match: match.group(1) + REDACTED, text)
    return text
