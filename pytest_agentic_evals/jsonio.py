"""JSON in and out: strict decoding with explained errors, and atomic writing.

Every input file the product reads (fixtures, registries, requirements, inventories, state
graphs, reports) is decoded here, and every JSON or text file it writes goes through a
temporary file and a rename, so that a reader sees all of it or nothing.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pytest_agentic_evals.problems import InputError, Problem


def display_path(path: Path) -> str:
    """A path as a user would type it: relative to the working directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


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
    return data


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
        raise InputError([Problem(shown, "", f"invalid JSON: {exc}")]) from None
    if problems:
        raise InputError(problems)
    return data


# One line per record: json.dumps with an indent runs the pure-Python encoder, which took most
# of the time of writing a report of 100,000 trials; the C encoder writes a record at once.
_ONE_LINE = json.JSONEncoder(ensure_ascii=False)
RECORD_LISTS = frozenset({"trials"})


def json_text(data: Any) -> str:
    """``data`` as JSON indented by two spaces, like ``json.dumps(data, indent=2)``, except
    that each item of a list named in RECORD_LISTS (a trial) is written on one line."""
    parts: list[str] = []
    _write_json(data, 0, parts)
    parts.append("\n")
    return "".join(parts)


def _write_json(value: Any, depth: int, parts: list[str], one_line_items: bool = False) -> None:
    if not value or not isinstance(value, (dict, list)):
        parts.append(_ONE_LINE.encode(value))
        return
    inner = "\n" + "  " * (depth + 1)
    if isinstance(value, dict):
        parts.append("{")
        for index, (key, item) in enumerate(value.items()):
            parts.append(("," if index else "") + inner + _ONE_LINE.encode(key) + ": ")
            _write_json(item, depth + 1, parts, one_line_items=key in RECORD_LISTS)
        parts.append("\n" + "  " * depth + "}")
        return
    parts.append("[")
    for index, item in enumerate(value):
        parts.append(("," if index else "") + inner)
        if one_line_items:
            parts.append(_ONE_LINE.encode(item))
        else:
            _write_json(item, depth + 1, parts)
    parts.append("\n" + "  " * depth + "]")


def write_json_atomically(path: str | os.PathLike[str], data: Any) -> None:
    """Write JSON through a temporary file and a rename: readers see all of it or nothing."""
    write_text_atomically(path, json_text(data))


def write_text_atomically(path: str | os.PathLike[str], text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        # mkstemp makes the file private (0600); the result gets the mode any new file would.
        os.fchmod(handle, 0o666 & ~_umask())
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


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
