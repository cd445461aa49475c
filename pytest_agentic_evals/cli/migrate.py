"""``migrate PATH...``: files written for the earlier tool, in today's preferred form.

The diff is printed; the file is written only with ``--write``, atomically, and only when the
rewritten document loads as the original did.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from pathlib import Path
from typing import Any

from pytest_agentic_evals.cli.common import EXIT_INPUT, EXIT_OK, CommandFailed, print_document
from pytest_agentic_evals.cli.plugins import plugin_schemas
from pytest_agentic_evals.journeys.documents import schema_problems
from pytest_agentic_evals.jsonio import (
    decode_json,
    display_path,
    read_input,
    write_text_atomically,
)
from pytest_agentic_evals.loading import fixture_from_data
from pytest_agentic_evals.loading.fixture import FixtureError
from pytest_agentic_evals.loading.migration import kind_of, migrate
from pytest_agentic_evals.problems import InputError


def add_parser(commands: Any, name: str, help: str) -> None:
    parser = commands.add_parser(name, help=help)
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="a fixture, discovery inventory, requirements file or regressions "
                             "registry written for the earlier tool")
    parser.add_argument("--write", action="store_true",
                        help="write the rewritten files (default: print the diff only)")
    parser.set_defaults(handler=run_migrate)


def run_migrate(args: argparse.Namespace) -> int:
    status = EXIT_OK
    for text in args.paths:
        try:
            _one(Path(text), args.write)
        except InputError as exc:
            print(exc.describe(), file=sys.stderr)
            status = EXIT_INPUT
    return status


def _one(path: Path, write: bool) -> None:
    shown = display_path(path)
    try:
        raw = read_input(path)
    except OSError as exc:
        raise CommandFailed(f"{shown}: cannot read: {exc.strerror}") from None
    data = decode_json(raw, shown)
    kind = kind_of(data)
    if kind is None:
        raise CommandFailed(f"{shown}: not a fixture, discovery inventory, requirements file "
                            "or regressions registry")
    new, rewrites = migrate(data)
    if not rewrites:
        # "Already in today's form" would read as "loads today": say so only when it does.
        _check_loads(data, kind, path, f"{shown}: nothing to rewrite, but it does not load "
                                       "today; fix it by hand")
        print(f"{shown}: nothing to rewrite ({kind} already in today's form)", file=sys.stderr)
        return
    _check_loads(new, kind, path, f"{shown}: the rewrite would not load; nothing written")
    before = _text(data).splitlines(keepends=True)
    after = _text(new).splitlines(keepends=True)
    print_document("".join(difflib.unified_diff(before, after, f"a/{shown}", f"b/{shown}")))
    for line in rewrites:
        print(f"{shown}: {line}", file=sys.stderr)
    if write:
        write_text_atomically(path, _text(new))
        print(f"{shown}: written ({len(rewrites)} rewrite(s))", file=sys.stderr)
    else:
        print(f"{shown}: not written (pass --write)", file=sys.stderr)


def _check_loads(new: Any, kind: str, path: Path, headline: str) -> None:
    """Never offer a rewrite that would not load: the rewritten document is loaded first."""
    if kind == "fixture":
        try:
            # A rewrite judges nothing: a scaffold stays a scaffold, loadable as one.
            fixture_from_data(new, Path(os.path.realpath(path)),
                              extra_expectations=plugin_schemas(), accept_exemptions=True)
        except FixtureError as exc:
            raise InputError(exc.problems, headline=headline) from None
    elif kind == "inventory":
        problems = schema_problems(new, "discovery_inventory", display_path(path))
        if problems:
            raise InputError(problems, headline=headline)


def _text(data: Any) -> str:
    """How a migrated file is written: JSON indented by two spaces, non-ASCII kept."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
