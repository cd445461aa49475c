"""The broken skills a probe swaps in, and how one is put in place of a case's entrypoint.

A case's entrypoint is the first file of the skill its command reaches (the same judgement as
the anti-slush contract's real-world rule): a script inside the skill directory, an
executable there, or a program the fixture declares in ``entrypoints``.  In the trial's
private copy of the skill, a script or executable is overwritten by a small launcher in the
language that reads it (a shell script for ``bash run.sh``, Python for ``python3 tool.py``...);
a declared program is shadowed by a launcher of the same name in a directory put first on
PATH.  The launcher starts :mod:`standin`, which plays the broken skill.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentic_evals.execution import workspace as ws
from pytest_agentic_evals.execution.trial import output_paths
from pytest_agentic_evals.expectations.observation import ArtifactError, Observation
from pytest_agentic_evals.model import Case
from pytest_agentic_evals.probes.targets import CONTRARY, REPLAY, Target, contrary_exit

# Where a launcher is written as the language that reads it; the text starts the stand-in
# (PY, STANDIN and SPEC are filled in, quoted by ``_QUOTES``).  A ``#!`` line also makes a shell
# launcher executable.  The stand-in needs the standard library only: ``-S`` skips ``site``
# (a virtualenv's path files), which made up most of its start-up.
_LAUNCHERS = {
    "shell": '#!/bin/sh\nexec {py} -I -S {standin} {spec} "$@"\n',
    "python": "import os, sys\nos.execv({py}, [{py}, '-I', '-S', {standin}, {spec}, "
              "*sys.argv[1:]])\n",
    # import(), not require(): it works in a CommonJS script and in an ES module alike.
    "node": "import('node:child_process').then(({{spawnSync}}) => {{\n"
            "  const r = spawnSync({py}, ['-I', '-S', {standin}, {spec}, "
            "...process.argv.slice(2)], {{stdio: 'inherit'}});\n"
            "  process.exit(r.status === null ? 1 : r.status);\n}});\n",
    "perl": "exec({py}, '-I', '-S', {standin}, {spec}, @ARGV) or die;\n",
    # Binary source: the paths are the file system's bytes, UTF-8 or not.
    "ruby": "# encoding: ASCII-8BIT\nexec({py}, '-I', '-S', {standin}, {spec}, *ARGV)\n",
    # Tcl has no exec(2): it waits for the stand-in and passes its status on.  exec reads a
    # word starting with <, > or | as a redirection, so every argument travels behind a
    # prefix the stand-in takes off (``argument_prefix`` in its spec).
    "tclsh": "if {{[catch {{exec -ignorestderr -- {py} -I -S {standin} {spec} "
             "{{*}}[lmap a $argv {{string cat = $a}}] <@stdin >@stdout 2>@stderr}} "
             "message options]}} {{\n"
             "  set code [dict get $options -errorcode]\n"
             "  if {{[lindex $code 0] eq {{CHILDSTATUS}}}} {{exit [lindex $code 2]}}\n"
             "  puts stderr $message\n  exit 1\n}}\n",
}
ARGUMENT_PREFIXES = {"tclsh": "="}


def _single_quoted(text: str) -> str:
    """A Perl or Ruby string in single quotes, where nothing is interpolated."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _tcl_word(text: str) -> str:
    """One Tcl word: every ASCII sign escaped (``$``, ``[``, braces, spaces...), so that
    nothing in it is substituted; other characters stand for themselves."""
    return "".join(c if c.isalnum() or not c.isascii() else f"\\u{ord(c):04x}" for c in text)


def _utf8_only(quote: Callable[[str], str]) -> Callable[[str], str]:
    """A quoting for a language that reads its source as UTF-8 text: a path that is not
    UTF-8 cannot be written in it (``UnicodeEncodeError``)."""
    def quoted(text: str) -> str:
        text.encode("utf-8")
        return quote(text)
    return quoted


_QUOTES: dict[str, Callable[[str], str]] = {
    "shell": shlex.quote, "python": repr, "node": _utf8_only(json.dumps),
    "perl": _single_quoted, "ruby": _single_quoted, "tclsh": _utf8_only(_tcl_word),
}
_STANDIN_SOURCE = Path(__file__).with_name("standin.py")


@dataclass(frozen=True)
class Recording:
    """What the real skill did in one case: the donor of the ``replay`` stand-in."""

    case: str
    exit_code: int
    stdout: Path
    stderr: Path
    files: dict[str, Path]
    """Output path (relative to the case's working directory) -> its recorded content."""


@dataclass
class Recorder:
    """Runs the real skill untouched and keeps its output, for another case's replay."""

    case: Case
    keep_in: Path
    recording: Recording | None = None

    def install(self, workspace: ws.Workspace, scratch: Path, env: dict[str, str]) -> None:
        return None

    @property
    def shadowed(self) -> tuple[tuple[Path, Path], ...]:
        return ()  # the real skill runs untouched

    def observe(self, observation: Observation) -> None:
        if observation.exit_code is None:
            return
        self.keep_in.mkdir(parents=True, exist_ok=True)
        stdout, stderr = self.keep_in / "stdout", self.keep_in / "stderr"
        shutil.copyfile(observation.stdout_path, stdout)
        shutil.copyfile(observation.stderr_path, stderr)
        files: dict[str, Path] = {}
        for number, (relative, outside) in enumerate(output_paths(self.case)):
            try:
                path = observation.resolve(relative, outside)
                if path.is_file() and relative not in files:
                    kept = self.keep_in / f"file-{number}"
                    shutil.copyfile(path, kept)
                    files[relative] = kept
            except (ArtifactError, OSError):
                continue
        self.recording = Recording(self.case.name, observation.exit_code, stdout, stderr, files)


@dataclass
class StandIn:
    """One broken skill put in place of a case's entrypoint for one trial."""

    case: Case
    target: Target
    mutant: str
    donor: Recording | None = None
    report: Path | None = None
    played: dict[str, Any] = field(default_factory=dict)
    shadowed: tuple[tuple[Path, Path], ...] = ()
    """The launcher over the original entrypoint too: a command that names the skill by its
    absolute path (``/home/me/skill/run.sh``, ``cd /home/me/skill && ./run.sh``) runs that
    file rather than the trial's copy, and a declared program named by absolute path is
    found on no PATH; a sandboxed trial shows it the stand-in there as well."""

    def install(self, workspace: ws.Workspace, scratch: Path, env: dict[str, str]) -> str | None:
        home = scratch / ".agentic-evals-probe"
        home.mkdir(parents=True, exist_ok=True)
        standin = home / "standin.py"
        shutil.copyfile(_STANDIN_SOURCE, standin)
        self.report = home / "played.json"
        spec_path = home / "spec.json"
        try:
            spec = self._spec(workspace, home)
        except (ArtifactError, OSError) as exc:
            return f"the {self.mutant} stand-in cannot be prepared: {exc}"
        language = self.target.language
        spec["argument_prefix"] = ARGUMENT_PREFIXES.get(language, "")
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        try:
            text = launcher_text(language, sys.executable, str(standin), str(spec_path))
        except UnicodeEncodeError:
            return (f"the {self.mutant} stand-in cannot be started from {language}: its "
                    f"path is not UTF-8 ({standin})")
        if self.target.relative is None:
            shims = home / "bin"
            shims.mkdir(exist_ok=True)
            launcher = shims / self.target.path.name
            env["PATH"] = str(shims) + os.pathsep + env.get("PATH", os.defpath)
        else:
            launcher = workspace.root / self.target.relative
            ws.remove_path(launcher)
        # As bytes: the paths in it are the file system's, UTF-8 or not.
        launcher.write_bytes(os.fsencode(text))
        launcher.chmod(0o755)
        if self.target.relative is not None or self.target.via == "absolute":
            self.shadowed = ((launcher, Path(os.path.realpath(self.target.path))),)
        return None

    def _spec(self, workspace: ws.Workspace, home: Path) -> dict[str, Any]:
        where = Observation(None, Path(), Path(), workspace.cwd, workspace.root)
        outputs = [str(where.resolve(relative, outside))
                   for relative, outside in output_paths(self.case)]
        inputs = [str(where.resolve(a.path, a.outside_workspace))
                  for a in self.case.input_artifacts]
        entry = (str(workspace.root / self.target.relative) if self.target.relative
                 else None)
        expected = expected_exit(self.case)
        # The contrary stand-in plays noop with the status the case does not expect.
        code = contrary_exit(expected) if self.mutant == CONTRARY else expected
        spec: dict[str, Any] = {"mutant": self.mutant, "exit_code": code,
                                "outputs": outputs, "inputs": inputs, "entry": entry,
                                "report": str(self.report)}
        if self.mutant == REPLAY and self.donor is not None:
            spec["replay"] = self._replay(where, home, outputs)
        return spec

    def _replay(self, where: Observation, home: Path, outputs: list[str]) -> dict[str, Any]:
        donor = self.donor
        assert donor is not None
        copies = home / "replay"
        copies.mkdir(exist_ok=True)
        shutil.copyfile(donor.stdout, copies / "stdout")
        shutil.copyfile(donor.stderr, copies / "stderr")
        files: dict[str, str] = {}
        for number, (relative, source) in enumerate(sorted(donor.files.items())):
            kept = copies / f"file-{number}"
            shutil.copyfile(source, kept)
            files[str(where.resolve(relative, False))] = str(kept)
        if len(donor.files) == 1:
            # A skill whose output file does not depend on its input writes the same file
            # wherever it is told to.
            only = next(iter(files.values()))
            for output in outputs:
                files.setdefault(output, only)
        return {"exit_code": donor.exit_code, "stdout": str(copies / "stdout"),
                "stderr": str(copies / "stderr"), "files": files}

    def observe(self, observation: Observation) -> None:
        try:
            if self.report is not None:
                self.played = json.loads(self.report.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.played = {}


def launcher_text(language: str, python: str, standin: str, spec: str) -> str:
    """The launcher of the stand-in, in the language that will read it (UnicodeEncodeError
    when a path cannot be written in it)."""
    quote = _QUOTES[language]
    return _LAUNCHERS[language].format(py=quote(python), standin=quote(standin),
                                       spec=quote(spec))


def expected_exit(case: Case) -> int:
    code = case.expected.get("exit_code")
    return code if isinstance(code, int) and not isinstance(code, bool) else 0
