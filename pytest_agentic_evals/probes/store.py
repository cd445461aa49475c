"""Probe results kept beside the fixture, so that coverage and claims use them without running.

``agentic-evals probe`` writes ``agentic-evals-probes.json`` in the fixture's directory (one file
for every fixture there, keyed by the fixture's file name).  Each case's result is keyed by its
identity: the ``test_source_sha256`` and ``oracle_sha256`` of its provenance and the hash of
the entrypoint the stand-ins replaced.  When any of the three differs now, the stored result
is *stale*: it is shown, never used, and the static judgement stands until the case is probed
again. So is a result without a valid seal (see :mod:`pytest_agentic_evals.seals`): the
hashes say which case a result describes, the seal that a probe here wrote it.

Pure: nothing here runs a command.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentic_evals import seals
from pytest_agentic_evals.evidence.provenance import oracle_sha256, test_source_sha256
from pytest_agentic_evals.jsonio import read_input, write_json_here
from pytest_agentic_evals.model import Case, Fixture
from pytest_agentic_evals.probes.targets import (
    GATING,
    INCONCLUSIVE,
    KILLED,
    NOT_APPLICABLE,
    PASSTHROUGH,
    STATUSES,
    SURVIVED,
    locate,
)

FILENAME = "agentic-evals-probes.json"
SCHEMA = "agentic_evals.probe_results.v1"

FRESH = "fresh"
STALE = "stale"
ABSENT = "absent"

# Which judgement of "can this oracle fail" was used.
SOURCE_PROBE = "probe"
SOURCE_STATIC = "static"

# What an oracle must kill to count as capable: a skill that does nothing and one that crashes;
# for a guard of values (redaction, transformation), also a skill that passes its input on.
CAPABLE_KILLS = GATING
VALUE_KILLS = (*GATING, PASSTHROUGH)


def store_path(fixture_path: Path) -> Path:
    return fixture_path.parent / FILENAME


@dataclass(frozen=True)
class Stored:
    """A case's stored probe result, judged against the case as it is now."""

    state: str
    """fresh (used), stale (shown, not used) or absent."""
    statuses: Mapping[str, str]
    probed_at: str | None = None
    stale_because: tuple[str, ...] = ()

    def capable(self, needed: Iterable[str] = CAPABLE_KILLS) -> bool | None:
        """Whether the probe showed the oracle fails for every stand-in in ``needed`` that
        applies; None when it says nothing (not fresh, or a stand-in's trial inconclusive)."""
        if self.state != FRESH:
            return None
        found = [self.statuses.get(m) for m in needed]
        if any(s == SURVIVED for s in found):
            return False
        if any(s not in (KILLED, NOT_APPLICABLE) for s in found) or KILLED not in found:
            return None
        return True

    def survived(self, needed: Iterable[str] = CAPABLE_KILLS) -> list[str]:
        return [m for m in needed if self.statuses.get(m) == SURVIVED]

    def as_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"state": self.state, "mutants": dict(self.statuses),
                                 "probed_at": self.probed_at}
        if self.stale_because:
            entry["stale_because"] = list(self.stale_because)
        return entry


NOTHING = Stored(ABSENT, {})


def _read(path: Path) -> dict[str, Any]:
    """The stored results, or nothing: what is not a regular file there (a link, a pipe, a
    directory, which the skill may have put in its own folder) holds none."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return {}
        data = json.loads(read_input(path).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("schema") == SCHEMA else {}


def stored_cases(fixture: Fixture) -> Mapping[str, Any]:
    """The raw stored records of this fixture's cases, by case name (empty when none)."""
    fixtures = _read(store_path(fixture.path)).get("fixtures")
    entry = fixtures.get(fixture.path.name) if isinstance(fixtures, dict) else None
    cases = entry.get("cases") if isinstance(entry, dict) else None
    return cases if isinstance(cases, dict) else {}


# What a case's seal covers: the case it describes and what the probe saw.
SEALED_KEYS = ("test_source_sha256", "oracle_sha256", "entrypoint_sha256", "mutants",
               "probed_at")
NOT_SEALED = ("not sealed by `agentic-evals probe` with this account's key on this machine "
              "(written by hand, by the skill, or elsewhere): probe the case here")


def _sealed_part(fixture_name: str, case_name: str, record: Mapping[str, Any]) -> dict[str, Any]:
    return {"fixture": fixture_name, "case": case_name,
            **{key: record.get(key) for key in SEALED_KEYS}}


def judge_stored(case: Case, record: Any, fixture_name: str) -> Stored:
    """A stored record against the case as it is now: fresh only when it bears this account's
    seal and all three hashes match."""
    if not isinstance(record, dict):
        return NOTHING
    statuses = record.get("mutants")
    statuses = {str(k): str(v) for k, v in statuses.items() if v in STATUSES} if isinstance(
        statuses, dict) else {}
    target, _ = locate(case)
    changed = []
    if record.get("test_source_sha256") != test_source_sha256(case):
        changed.append("the case's test changed (test_source_sha256)")
    if record.get("oracle_sha256") != oracle_sha256(case):
        changed.append("the case's oracle changed (oracle_sha256)")
    if target is None or record.get("entrypoint_sha256") != target.sha256:
        changed.append("the skill's entrypoint changed")
    if not seals.is_sealed(_sealed_part(fixture_name, case.name, record), record.get("seal")):
        changed.append(NOT_SEALED)
    probed_at = record.get("probed_at") if isinstance(record.get("probed_at"), str) else None
    return Stored(STALE if changed else FRESH, statuses, probed_at, tuple(changed))


def load(fixture: Fixture) -> dict[str, Stored]:
    """Every case's stored result, judged: absent cases are absent."""
    records = stored_cases(fixture)
    return {case.name: judge_stored(case, records.get(case.name), fixture.path.name)
            for case in fixture.cases}


def record(fixture: Fixture, cases: Mapping[str, dict[str, Any]], probed_at: str) -> Path:
    """Write these cases' results beside the fixture, keeping other cases and fixtures; a
    link there is replaced, never followed. Raises OSError when they cannot be written (a
    directory of that name)."""
    path = store_path(fixture.path)
    data = _read(path) or {"schema": SCHEMA, "version": 1, "fixtures": {}}
    fixtures = data.setdefault("fixtures", {})
    entry = fixtures.setdefault(fixture.path.name, {})
    entry["skill"] = fixture.skill
    kept = entry.get("cases") if isinstance(entry.get("cases"), dict) else {}
    names = {case.name for case in fixture.cases}
    # A case that no longer exists has nothing left to describe.
    kept = {name: value for name, value in kept.items() if name in names}
    for name, value in cases.items():
        kept[name] = dict(value, probed_at=probed_at)
        kept[name]["seal"] = seals.seal(_sealed_part(fixture.path.name, name, kept[name]))
    entry["cases"] = dict(sorted(kept.items()))
    write_json_here(path, data)
    return path


def not_kept(fixture: Fixture, error: OSError) -> str:
    """Why a fixture's probe results could not be written beside it."""
    return (f"the probe results are not kept: {store_path(fixture.path)}: "
            f"{error.strerror or error}")


def inconclusive(stored: Stored, needed: Iterable[str] = CAPABLE_KILLS) -> bool:
    return any(stored.statuses.get(m) == INCONCLUSIVE for m in needed)
