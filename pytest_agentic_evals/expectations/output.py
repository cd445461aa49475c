"""Captured output: searching whole streams in bounded memory, and redacted excerpts.

A trial's stdout and stderr are spooled to files by the runner, so a command may print
gigabytes. Matching reads the file in chunks; the report keeps only a head and a tail.
"""

from __future__ import annotations

import codecs
import os
import re
import signal
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from pytest_agentic_evals.redaction import Redactor, head, tail

CHUNK_BYTES = 4 * 1024 * 1024
# Regular expressions see the whole stream at once up to this size. Past it they are searched
# in windows that overlap by REGEX_OVERLAP_CHARS, so a match must be shorter than that.
WHOLE_STREAM_REGEX_BYTES = 16 * 1024 * 1024
REGEX_OVERLAP_CHARS = 1024 * 1024
# A search that takes longer than this, of the runner's CPU, is stopped and decides nothing:
# a backtracking pattern over a long line (`x.*y` over a megabyte of x) would run for days.
PATTERN_CPU_SECONDS = 10.0
EXCERPT_BYTES = 2048
# Each end of a long stream is redacted before it is cut, over a window this much longer than
# its excerpt, so that a secret across the cut is replaced whole, never kept as two halves. The
# window grows until, redacted, it still reaches LONGEST_SECRET_CHARS past the cut: a secret
# shorter than that is whole in it however much the redaction before the cut shrank the text.
REDACTION_MARGIN_BYTES = 8192
LONGEST_SECRET_CHARS = 4096
REDACTION_WINDOW_LIMIT = 1024 * 1024  # memory stays bounded, whatever the stream holds


def first_hole(path: Path) -> int | None:
    """Where the first hole of a file starts, None when it has none.

    A trial can make a file terabytes long in an instant without writing it (truncate, or a
    seek past the end): reading it to the end, to search or hash it, would keep the runner busy
    for hours after a trial of milliseconds. A file written byte by byte has no hole. (None too
    where the file system cannot tell.)
    """
    try:
        with path.open("rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            hole = os.lseek(stream.fileno(), 0, os.SEEK_HOLE) if size else size
    except OSError:
        return None
    return hole if hole < size else None


def decoded_chunks(path: Path) -> Iterator[str]:
    """The file as text chunks, invalid UTF-8 replaced rather than fatal."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with path.open("rb") as stream:
        while chunk := stream.read(CHUNK_BYTES):
            yield decoder.decode(chunk)
    yield decoder.decode(b"", final=True)


class PatternTooSlow(Exception):
    """A search stopped after PATTERN_CPU_SECONDS."""


def bounded_search(regex: re.Pattern[str], text: str) -> bool:
    """Whether ``regex`` matches in ``text``; PatternTooSlow once the search has taken
    PATTERN_CPU_SECONDS of the process's CPU. Python's matcher looks at signals as it goes, so
    a CPU timer (SIGVTALRM, which no test runner's timeout uses) ends it; outside the main
    thread, where no handler can be set, the search is not bounded."""
    if threading.current_thread() is not threading.main_thread():
        return regex.search(text) is not None

    def stop(signum: int, frame: Any) -> None:
        raise PatternTooSlow(regex.pattern)

    previous = signal.signal(signal.SIGVTALRM, stop)
    try:
        signal.setitimer(signal.ITIMER_VIRTUAL, PATTERN_CPU_SECONDS)
        return regex.search(text) is not None
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


def search_stream(
    path: Path, substrings: Iterable[str], patterns: Iterable[re.Pattern[str]],
    slow: set[str] | None = None,
) -> tuple[set[str], set[str]]:
    """Which substrings occur, and which patterns match (by pattern text), anywhere in the
    file. A pattern whose search was stopped (``bounded_search``) matches nothing, and is
    added to ``slow``."""
    wanted = set(substrings)
    regexes = {pattern.pattern: pattern for pattern in patterns}
    found: set[str] = set()
    matched: set[str] = set()
    stopped = set() if slow is None else slow
    if not wanted and not regexes:
        return found, matched
    if not path.exists():
        return found, matched

    def matches(key: str, regex: re.Pattern[str], text: str) -> bool:
        if key in stopped:
            return False
        try:
            return bounded_search(regex, text)
        except PatternTooSlow:
            stopped.add(key)
            return False

    if regexes and path.stat().st_size <= WHOLE_STREAM_REGEX_BYTES:
        text = "".join(decoded_chunks(path))
        return ({s for s in wanted if s in text},
                {k for k, r in regexes.items() if matches(k, r, text)})

    overlap = max((len(s) - 1 for s in wanted), default=0)
    if regexes:
        overlap = max(overlap, REGEX_OVERLAP_CHARS)
    carry = ""
    for chunk in decoded_chunks(path):
        window = carry + chunk
        found |= {s for s in wanted - found if s in window}
        matched |= {key for key, r in regexes.items()
                    if key not in matched and matches(key, r, window)}
        if found == wanted and len(matched) + len(stopped & regexes.keys()) == len(regexes):
            break  # everything asked for is already seen: no need to read the rest
        carry = window[-overlap:] if overlap else ""
    return found, matched


def excerpt(path: Path, redactor: Redactor | None = None) -> dict[str, Any]:
    """Head and tail of a captured stream, redacted before they are cut, with its full size."""
    redactor = redactor or Redactor()
    try:
        size = path.stat().st_size
        with path.open("rb") as stream:
            if size <= 2 * EXCERPT_BYTES:
                whole = redactor.text(stream.read().decode("utf-8", errors="replace"))
                first = head(whole, EXCERPT_BYTES)
                return {"bytes": size, "head": first, "tail": whole[len(first):],
                        "truncated": False}
            start = _redacted_window(stream, size, redactor, at_start=True)
            end = _redacted_window(stream, size, redactor, at_start=False)
    except OSError:
        return {"bytes": 0, "head": "", "tail": "", "truncated": False}
    return {"bytes": size, "head": head(start, EXCERPT_BYTES), "tail": tail(end, EXCERPT_BYTES),
            "truncated": True}


def _redacted_window(stream: BinaryIO, size: int, redactor: Redactor, at_start: bool) -> str:
    """One end of the stream, redacted, long enough to cut its excerpt from."""
    window = EXCERPT_BYTES + REDACTION_MARGIN_BYTES
    while True:
        stream.seek(0 if at_start else max(0, size - window))
        text = redactor.text(stream.read(window).decode("utf-8", errors="replace"))
        enough = len(text) >= EXCERPT_BYTES + LONGEST_SECRET_CHARS
        if enough or window >= min(size, REDACTION_WINDOW_LIMIT):
            return text
        window *= 2
