"""The stand-in of a broken skill: the program a probe puts where the skill's entrypoint was.

This file is copied into a trial's scratch directory and run there as
``python -I -S standin.py SPEC.json ARGS...``; it imports nothing of the package, so that it runs
the same inside the sandbox.  ``SPEC.json`` says which broken skill to play (``mutant``), the
exit code to give (the one the case expects; for ``contrary``, one it does not), the paths the
case reads back, its input artifacts and, for
``replay``, what the real skill did in another case.  ``ARGS`` are the arguments the case gave
the entrypoint.  It records in ``SPEC.json``'s ``report`` path that it ran, and whether its
mutant applied to this invocation (``passthrough`` needs an input to pass through).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

TRACEBACK = """Traceback (most recent call last):
  File "/opt/skill/main.py", line 42, in <module>
    main()
  File "/opt/skill/main.py", line 37, in main
    result = process(arguments)
RuntimeError: unexpected internal error
"""


def _record(spec: dict[str, Any], applicable: bool, reason: str = "") -> None:
    report = spec.get("report")
    if isinstance(report, str):
        Path(report).write_text(json.dumps({"ran": True, "applicable": applicable,
                                            "reason": reason}), encoding="utf-8")


def _argument_files(args: list[str], entry: str | None) -> list[Path]:
    """The arguments (or ``--option=value`` values) that name existing files."""
    found: list[Path] = []
    for word in args:
        value = word.partition("=")[2] if word.startswith("-") and "=" in word else word
        if not value or value.startswith("-"):
            continue
        path = Path(value)
        try:
            if path.is_file() and (entry is None or os.path.realpath(path) != entry):
                found.append(path)
        except (OSError, ValueError):
            continue
    return found


def _inputs(spec: dict[str, Any], args: list[str]) -> list[Path]:
    found = _argument_files(args, spec.get("entry"))
    for name in spec.get("inputs", []):
        path = Path(name)
        if path.is_file() and all(os.path.realpath(path) != os.path.realpath(p) for p in found):
            found.append(path)
    return found


def _write(path: str, data: bytes) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def _passthrough(spec: dict[str, Any], args: list[str]) -> int:
    inputs = _inputs(spec, args)
    if not inputs:
        _record(spec, False, "it was given no input file to pass through")
        return int(spec["exit_code"])
    data = b"".join(path.read_bytes() for path in inputs)
    sys.stdout.buffer.write(data)
    read = {os.path.realpath(path) for path in inputs}
    for output in spec.get("outputs", []):
        if os.path.realpath(output) not in read:
            _write(output, data)
    _record(spec, True)
    return int(spec["exit_code"])


def _replay(spec: dict[str, Any]) -> int:
    recorded = spec["replay"]
    sys.stdout.buffer.write(Path(recorded["stdout"]).read_bytes())
    sys.stderr.buffer.write(Path(recorded["stderr"]).read_bytes())
    for output, source in recorded["files"].items():
        _write(output, Path(source).read_bytes())
    _record(spec, True)
    return int(recorded["exit_code"])


def play(spec: dict[str, Any], args: list[str]) -> int:
    mutant = spec["mutant"]
    if mutant == "crash":
        sys.stderr.write(TRACEBACK)
        _record(spec, True)
        return 1
    if mutant == "echo-args":
        print(" ".join(args))
        for path in _inputs(spec, args):
            print(path.name)
        _record(spec, True)
        return int(spec["exit_code"])
    if mutant == "passthrough":
        return _passthrough(spec, args)
    if mutant == "replay":
        return _replay(spec)
    _record(spec, True)  # noop, and contrary (its exit_code is the one the case does not expect)
    return int(spec["exit_code"])


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    # A launcher that cannot pass arguments as they are sends each behind a prefix.
    prefix = spec.get("argument_prefix", "")
    status = play(spec, [word[len(prefix):] for word in sys.argv[2:]])
    sys.stdout.flush()
    sys.stderr.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
