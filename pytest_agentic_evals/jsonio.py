"""JSON in and out: strict decoding with explained errors, one writer, and atomic writing.

Every input file the product reads (fixtures, registries, requirements, inventories, state
graphs, reports) is decoded here. Every JSON document it writes (reports, registries, journey
plans) is laid out by ``json_text``, which differs per document only in which containers it
puts on one line; every file goes through a temporary file and a rename, so that a reader sees
all of it or nothing. A path that names a device, a pipe or a socket (``--output /dev/null``,
``/dev/stdout``) is written into as it is: renaming over it would replace the device itself.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import stat
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from pytest_agentic_evals.problems import InputError, Problem, pointer_for


def display_path(path: Path) -> str:
    """A path as a user would type it: relative to the working directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def too_long_number(error: ValueError) -> str | None:
    """What a ValueError of ``json.loads`` means when a number has more digits than Python
    reads (its limit on converting text to an integer, 4300 digits unless set otherwise),
    said for a person; None for any other error."""
    if isinstance(error, json.JSONDecodeError) or "integer string conversion" not in str(error):
        return None
    limit = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
    return f"holds a number of more than {limit} digits, which cannot be read"


def decode_json(raw: bytes, shown: str) -> Any:
    """JSON decoded strictly: UTF-8 only, no duplicate key, no NaN or Infinity.

    Raises InputError naming ``shown`` and every problem. The fast path leaves the duplicate
    check to C; the decoder that explains each problem only runs on a document that has one.
    """
    duplicated = False

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal duplicated
        made = dict(pairs)
        if len(made) != len(pairs):
            duplicated = True
        return made

    def refuse(name: str) -> Any:
        raise ValueError(name)

    try:
        data = json.loads(raw.decode("utf-8-sig"), object_pairs_hook=pairs_hook,
                          parse_constant=refuse)
    except (UnicodeDecodeError, ValueError, RecursionError):
        duplicated = True
    if duplicated:
        return _explained_decode(raw, shown)  # raises, naming every problem
    if _SURROGATE_ESCAPE.search(raw):
        problems: list[Problem] = []
        _find_lone_surrogates(data, (), shown, problems)
        if problems:
            raise InputError(problems)
    return data


# Only an escape (\ud800) puts half of a UTF-16 pair in a JSON string: UTF-8 cannot hold one.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _find_lone_surrogates(node: Any, parts: tuple[Any, ...], shown: str,
                          problems: list[Problem]) -> None:
    """Every string (key or value) holding half of a UTF-16 pair without the other half: not
    text, so it would load and then fail wherever it is written or hashed."""
    texts: list[tuple[tuple[Any, ...], str]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            texts.append(((*parts, key), key))
            _find_lone_surrogates(value, (*parts, key), shown, problems)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _find_lone_surrogates(value, (*parts, index), shown, problems)
    elif isinstance(node, str):
        texts.append((parts, node))
    for where, text in texts:
        found = _LONE_SURROGATE.search(text)
        if found:
            problems.append(Problem(shown, pointer_for(*where).encode("utf-8", "backslashreplace")
                                    .decode(), f"contains \\u{ord(found.group()):04x}, half of a "
                                    "UTF-16 pair without its other half: not text; write the "
                                    "character itself"))


MAX_INPUT_BYTES = 256 * 1024 * 1024
# A document is UTF-8. A path the file system gave in other bytes (a folder named b"sk\xffill")
# is a str with half a UTF-16 pair in it: written as "?" rather than lose the whole document.
UNENCODABLE = "replace"


def read_input(path: str | os.PathLike[str]) -> bytes:
    """An input file's bytes, at most MAX_INPUT_BYTES: a device that never ends (a link to
    /dev/zero) or a file of gigabytes would otherwise be read until memory runs out. A named
    pipe is opened without waiting for a writer (one that has none reads as empty), and read
    as a pipe once open (``/dev/stdin`` in a pipeline). Raises OSError, its strerror saying
    why."""
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    os.set_blocking(handle, True)
    with open(handle, "rb") as stream:
        data = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise OSError(errno.EFBIG, f"more than {MAX_INPUT_BYTES // (1024 * 1024)} MiB, larger "
                                   "than an input may be")
    return data


def read_json(path: Path, what: str) -> tuple[Any, bytes]:
    """A JSON file decoded strictly (``decode_json``), and its bytes. Raises InputError naming
    the file when it cannot be read (``cannot read {what}: ...``) or decoded."""
    shown = display_path(path)
    try:
        raw = read_input(path)
    except OSError as exc:
        raise InputError([Problem(shown, "", f"cannot read {what}: {exc.strerror}")]) from None
    return decode_json(raw, shown), raw


def _explained_decode(raw: bytes, shown: str) -> Any:
    """The slow decoder: the same rules, each broken one explained (with line and column)."""
    problems: list[Problem] = []
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError([Problem(shown, "", f"not UTF-8 text (byte {exc.start})")]) from None

    def reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                problems.append(Problem(shown, "", f"duplicate key {key!r} in one JSON object"))
            seen[key] = value
        return seen

    def reject_constant(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    try:
        data = json.loads(text, object_pairs_hook=reject_duplicates, parse_constant=reject_constant)
    except json.JSONDecodeError as exc:
        message = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise InputError([Problem(shown, "", message)]) from None
    except (ValueError, RecursionError) as exc:
        number = too_long_number(exc) if isinstance(exc, ValueError) else None
        message = f"invalid JSON: it {number}" if number else f"invalid JSON: {exc}"
        raise InputError([Problem(shown, "", message)]) from None
    if problems:
        raise InputError(problems)
    return data


# The C encoder writes each one-line container at once; json.dumps with an indent runs the
# pure-Python encoder over every value, which took most of the time of writing a report of
# 100,000 trials or a journey plan of a hundred thousand controls.
_ONE_LINE = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def _encode(value: Any) -> str:
    try:
        return _ONE_LINE.encode(value)
    except ValueError:  # an infinite or NaN number: Python writes Infinity, which no JSON is
        return _ONE_LINE.encode(_finite(value))


def _finite(value: Any) -> Any:
    """``value`` with every infinite or NaN number as null: whatever put one there (a plugin's
    field, a figure no check bounded), a document written here stays JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value
RECORD_LISTS = frozenset({"trials"})
# A flat object longer than this (with its indentation) is written one key a line.
FLAT_WIDTH = 200

OneLine = Callable[[dict[str, Any] | list[Any], str, str | None], str | None]
"""Which containers are written on one line. Called with a non-empty object or array, the
indentation of its first line and, when it is an item of an array that is an object's value,
that value's key; returns the container's text on one line, or None to write it one member a
line."""


def records_on_one_line(value: dict[str, Any] | list[Any], indent: str,
                        list_key: str | None) -> str | None:
    """Each item of a list named in RECORD_LISTS (a trial of a report) on one line."""
    return _encode(value) if list_key in RECORD_LISTS else None


def flat_on_one_line(value: dict[str, Any] | list[Any], indent: str,
                     list_key: str | None) -> str | None:
    """On one line: every array of plain values, and every object of plain values and arrays of
    them (a path step, a claim's row) that fits in FLAT_WIDTH or has a single key."""
    if not _flat(value):
        return None
    text = _encode(value)
    if isinstance(value, list) or len(text) + len(indent) <= FLAT_WIDTH or len(value) == 1:
        return text
    return None


def _flat(value: dict[str, Any] | list[Any]) -> bool:
    """Whether a container holds only values (an object may also hold arrays of values)."""
    in_object = type(value) is dict
    for item in (value.values() if isinstance(value, dict) else value):
        kind = type(item)
        if kind is dict:
            if item:
                return False
        elif kind is list and item and (not in_object or any(
                type(inner) is dict or type(inner) is list for inner in item)):
            return False
    return True


def json_text(data: Any, one_line: OneLine = records_on_one_line) -> str:
    """``data`` as JSON indented by two spaces, like ``json.dumps(data, indent=2)``, except
    that the containers ``one_line`` picks are written on one line. Reports and registries
    keep the default, a trial a line; a journey plan writes with ``flat_on_one_line``, so that
    it reads top to bottom and diffs line by line."""
    parts: list[str] = []
    _write_json(data, "", None, None, one_line, parts.append)
    parts.append("\n")
    return "".join(parts)


def _write_json(value: Any, indent: str, key: str | None, list_key: str | None,
                one_line: OneLine, write: Callable[[str], Any]) -> None:
    """Write ``value``, which stands at ``indent`` under ``key`` in its object, or as an item
    of the array under ``list_key``, piece by piece: a report of many trials is never held
    as one string."""
    if not isinstance(value, (dict, list)) or not value:
        write(_encode(value))
        return
    text = one_line(value, indent, list_key)
    if text is not None:
        write(text)
        return
    inner = indent + "  "
    if isinstance(value, dict):
        separator = "{\n"
        for item_key, item in value.items():
            write(separator + inner + _encode(item_key) + ": ")
            _write_json(item, inner, item_key, None, one_line, write)
            separator = ",\n"
        write("\n" + indent + "}")
        return
    separator = "[\n"
    for item in value:
        write(separator + inner)
        _write_json(item, inner, None, key, one_line, write)
        separator = ",\n"
    write("\n" + indent + "]")


def write_json_atomically(path: str | os.PathLike[str], data: Any) -> None:
    """Write JSON through a temporary file and a rename: readers see all of it or nothing.
    The text goes to the file as it is laid out, never whole in memory."""
    _write_atomically(path, _json_filler(data))


def write_json_here(path: str | os.PathLike[str], data: Any) -> None:
    """Write JSON atomically at ``path`` itself: a file the product keeps in a folder it does
    not own (beside a fixture), where a link could lead anywhere, is written in that folder
    and replaces whatever has its name (a link, a pipe) rather than write through it. Raises
    OSError when a directory has that name."""
    if os.path.isdir(path) and not os.path.islink(path):
        raise IsADirectoryError(errno.EISDIR, "a directory has that name")
    _write_atomically(os.path.abspath(path), _json_filler(data), follow=False)


def write_text_atomically(path: str | os.PathLike[str], text: str) -> None:
    _write_atomically(path, lambda stream: stream.write(text))


def _json_filler(data: Any) -> Callable[[IO[str]], None]:
    def write(stream: IO[str]) -> None:
        _write_json(data, "", None, None, records_on_one_line, stream.write)
        stream.write("\n")

    return write


class PinnedOutput:
    """An output file decided before anything the run evaluates has run.

    A trial may change the tree it runs in (an inplace workspace is the skill's own directory,
    where a user may well ask for the report): put a link at the report's name to a file of
    its choosing, or a link in place of a directory on the way. Written by its path at the
    end, the report would follow the link and replace that file. So the directory is opened
    when the output is pinned (through the links the user made: the file a user's link names
    is the one written), and at the end the report is written into that directory and renamed
    over the name, replacing whatever is there then, a link included, never following it.
    A device or a pipe (``/dev/stdout``) is written through its path, as it is.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._directory: int | None = None
        try:
            # Through the links, by the kernel: /dev/stdout names a pipe that realpath cannot.
            mode: int | None = os.stat(self.path).st_mode
        except OSError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):
            return
        real = os.path.realpath(self.path)
        self._name = os.path.basename(real)
        os.makedirs(os.path.dirname(real), exist_ok=True)
        self._directory = os.open(os.path.dirname(real),
                                  os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def __fspath__(self) -> str:
        return self.path

    def __str__(self) -> str:
        return self.path

    def write_json(self, data: Any) -> None:
        self._write(_json_filler(data))

    def write_text(self, text: str) -> None:
        self._write(lambda stream: stream.write(text))

    def close(self) -> None:
        if self._directory is not None:
            os.close(self._directory)
            self._directory = None

    def _write(self, fill: Callable[[IO[str]], Any]) -> None:
        directory = self._directory
        if directory is None:
            _write_atomically(self.path, fill)
            return
        temporary = f".{self._name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o666, dir_fd=directory)
        try:
            with os.fdopen(handle, "w", encoding="utf-8", errors=UNENCODABLE,
                           buffering=1 << 20) as stream:
                fill(stream)
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(temporary, self._name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=directory)
            raise


def _write_atomically(path: str | os.PathLike[str], fill: Callable[[IO[str]], Any],
                      follow: bool = True) -> None:
    """``fill`` a file and rename it to ``path``; ``follow``: through a link there (the file
    it names is written, the link stays), and into a device or a pipe there, as it is."""
    if follow:
        try:
            mode = os.stat(path).st_mode  # through symbolic links: what a write would reach
        except (FileNotFoundError, NotADirectoryError):
            mode = None
        if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            with open(path, "w", encoding="utf-8") as stream:
                fill(stream)
            return
    target = Path(os.path.realpath(path) if follow else path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        # mkstemp makes the file private (0600); the result gets the mode any new file would.
        os.fchmod(handle, 0o666 & ~_umask())
        with os.fdopen(handle, "w", encoding="utf-8", errors=UNENCODABLE,
                           buffering=1 << 20) as stream:
            fill(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def same_path(first: str | os.PathLike[str], second: str | os.PathLike[str]) -> bool:
    """True when two output paths name one file (through links and relative parts): one
    document would replace the other."""
    return os.path.realpath(first) == os.path.realpath(second)


def remove_earlier_output(path: str | os.PathLike[str]) -> None:
    """Remove the file an earlier run left at ``path`` (the file a link names, the link kept);
    a device or a pipe stays what it is."""
    real = os.path.realpath(path)
    if os.path.isfile(real):
        os.unlink(real)


def _umask() -> int:
    """The process's umask, read without setting it (os.umask would change it for a moment
    for every thread)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


# What an earlier command leaves at an output path, read from a file's first bytes: one of
# the documents the commands write (also under the earlier tool's names) or a run's Markdown
# summary. Any other file there (the fixture being run, a registry, requirements, a state
# graph, a SKILL.md) is the user's: an output never replaces it.
_OUTPUT_SCHEMAS = (
    "report", "session_report", "probe", "coverage", "skill_posture_audit",
    "regressions_audit", "regressions_verification", "apply_scaffolds", "journey_plan",
    "journey_scaffold", "coverage_audit", "regressions_verify", "scaffold_apply_report",
)
_OUTPUT_SCHEMA = re.compile(r"agentic_evals\.(?:" + "|".join(_OUTPUT_SCHEMAS) + r")\.v\d+")
_MARKDOWN_SUMMARY = re.compile(rb"\A\s*## (?:agentic-evals|Vacuity probe): ")
# An earlier output larger than this is told by its first bytes alone (its schema first).
_PARSED_OUTPUT_BYTES = 64 * 1024 * 1024
_HEAD_BYTES = 1024


def _holds_something_else(path: str) -> bool:
    """True when ``path`` is a file with content that no run of the product wrote.

    A document the commands write says what it is in its top-level ``schema``; the same words
    elsewhere (a fixture's input artifact holding a report, say) make it nothing of ours.
    """
    try:
        with open(path, "rb") as stream:
            head = stream.read(_HEAD_BYTES)
            if not head.strip() or _MARKDOWN_SUMMARY.search(head):
                return False
            if os.fstat(stream.fileno()).st_size > _PARSED_OUTPUT_BYTES:
                # Too large to parse here: the schema among its first keys says it.
                first = re.search(rb'\A\s*\{[^{\[]*?"schema"\s*:\s*"([^"]*)"', head)
                schema: Any = first.group(1).decode("utf-8", "replace") if first else None
            else:
                document = json.loads(head + stream.read())
                schema = document.get("schema") if isinstance(document, dict) else None
    except (OSError, ValueError, RecursionError):
        return True  # unreadable, or not a JSON document: it cannot be told from the user's
    return not (isinstance(schema, str) and _OUTPUT_SCHEMA.fullmatch(schema))


def output_path_problem(path: str) -> str | None:
    """Why a file cannot be written at ``path`` (atomically, creating missing folders), or
    None: checked before anything runs, so that a long run never ends without its output."""
    if "\0" in path:
        return "contains a NUL byte"
    if not path or path.endswith(os.sep) or os.path.isdir(path):
        return "is a directory: name a file to write"
    if os.path.exists(path) and not os.path.isfile(path):  # a device, a pipe: written into
        if os.access(path, os.W_OK):
            return None
        return "cannot be written: permission denied"
    path = os.path.realpath(path)  # a link stays: the file it names is the one written
    if os.path.isfile(path) and _holds_something_else(path):
        return ("is a file that is not an output of agentic-evals (a fixture, a registry?): "
                "it is not replaced; remove it or name another file")
    folder = os.path.dirname(os.path.abspath(path))
    # The nearest folder that exists must be a folder this process can create files in.
    while not os.path.lexists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        return f"cannot be created: {folder} is not a directory"
    try:  # permissions alone do not tell (root, read-only mounts, /proc): try it
        os.rmdir(tempfile.mkdtemp(prefix=".agentic-evals-probe-", dir=folder))
    except OSError as exc:
        return f"cannot be written: cannot create files in {folder} ({exc.strerror})"
    return None
