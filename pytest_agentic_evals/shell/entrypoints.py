"""Real-world entrypoints: whether a command reaches the skill's own code.

Each simple command is judged on its own, with the directory it runs in.  It reaches the
skill's own code when it runs an executable file or a script inside the skill's directory
(an interpreter given a script or module there), a program the fixture declares among the
skill's installed ``entrypoints``, a test runner run over the skill's directory, or a fetch
of a live URL.  A constant builtin, an interpreter running inline code or stdin, a name that
exists nowhere, and a generic program found on PATH (``date``, ``mktemp``, ``cp``) do not:
the rule is that the command must exercise the skill, not merely run something.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from pytest_agentic_evals.shell.command import ORIGIN_ARGV, SimpleCommand, basename, render
from pytest_agentic_evals.shell.programs import (
    CODE_RUNNERS,
    CONSTANT,
    FETCHERS,
    INTERPRETERS,
    JS_RUNNERS,
    PREFIXES,
    PROJECT_RUNNERS,
    PYTHON_RUNNER_MODULES,
    RUNNERS,
    TEST_GOALS,
    TEST_SUBCOMMANDS,
    URL,
    constant_kind,
    interpreter_family,
    interpreter_target,
)
from pytest_agentic_evals.shell.walker import Found, Walker, skip_options, walk


@dataclass(frozen=True)
class SkillCode:
    """What counts as the skill's own code: the files inside its directory, and the programs
    on PATH the fixture declares as the skill's installed entrypoints."""

    directory: Path
    entrypoints: tuple[str, ...] = ()

    def holds(self, path: Path) -> bool:
        """Whether ``path`` is inside the skill's directory, symlinks followed."""
        try:
            real = Path(os.path.realpath(path))
            root = Path(os.path.realpath(self.directory))
        except (OSError, ValueError):
            return False
        return real == root or root in real.parents

    def declared(self, name: str) -> str | None:
        """Where a declared entrypoint named ``name`` (or at the path ``name``) is found."""
        for entry in self.entrypoints:
            location = _which(entry)
            if location is None:
                continue
            if name == entry or (
                os.path.isabs(name) and os.path.realpath(name) == os.path.realpath(location)
            ):
                return location
        return None


def _which(name: str) -> str | None:
    try:
        return shutil.which(name) if name else None
    except (OSError, ValueError):
        return None


# Paths a test runner is commonly given that say nothing about which tests run.
_NEUTRAL_PATHS = frozenset({"/dev/null"})


class _Verdict(NamedTuple):
    entrypoint: str | None
    explanation: str
    path: Path | None = None
    """The file that is the entrypoint, when it is one file (a script, a declared program)."""
    via: str | None = None
    """How it is started: ``exec`` (run directly), ``path`` (by name, looked up on PATH) or
    the interpreter family that reads it (``python``, ``shell``, ``node``...)."""


@dataclass(frozen=True)
class Reached:
    """The entrypoint a command reaches, when it is one file that could be swapped for another:
    where it is, and how the command starts it."""

    description: str
    path: Path
    via: str


def _exists(path: Path, kind: str) -> bool:
    try:
        if kind == "file":
            return path.is_file()
        if kind == "dir":
            return path.is_dir()
        return path.exists()
    except (OSError, ValueError):  # e.g. a name too long for the file system
        return False


def _near(path: Path) -> str:
    """A did-you-mean for a file that does not exist: the closest name in its folder."""
    try:
        names = sorted(os.listdir(path.parent))
    except (OSError, ValueError):
        return ""
    close = difflib.get_close_matches(path.name, names, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _executable(path: Path) -> bool:
    try:
        return path.is_file() and os.access(path, os.X_OK)
    except (OSError, ValueError):
        return False


class _Judge:
    """Decides whether one simple command reaches a real entrypoint of the skill."""

    def __init__(self, cwd: Path, skill: SkillCode) -> None:
        self.cwd = cwd
        self.skill = skill

    def _outside(self, what: str, path: Path) -> _Verdict:
        real = os.path.realpath(path)
        return _Verdict(
            None,
            f"{what} {real}, outside the skill directory {self.skill.directory}: not the "
            "skill's own code",
        )

    def _base_dir(self, workdir: str | None) -> Path | None:
        if workdir is None:
            return None
        return self.cwd if workdir == "." else self.cwd / workdir

    def _locate(self, word: str, workdir: str | None) -> tuple[Path | None, str]:
        """The path ``word`` names and the directory it was looked up in (for messages)."""
        if word.startswith("~"):
            word = os.path.expanduser(word)
        if os.path.isabs(word):
            return Path(word), os.path.dirname(word) or "/"
        base = self._base_dir(workdir)
        if base is None:
            return None, "a directory only known at run time (the script cds to a computed path)"
        return base / word, str(base)

    def judge(self, found: Found) -> _Verdict:
        verdict = self._judge(found)
        if verdict.entrypoint is not None and verdict.entrypoint.startswith("test runner"):
            outside = self._outside_the_skill(found.command.argv, found.workdir)
            if outside is not None:
                return _Verdict(None, f"{render(found.command.argv)} {outside}: a test runner "
                                "counts only when it runs over the skill's directory")
        return verdict

    def _judge(self, found: Found) -> _Verdict:
        argv = found.command.argv
        name = argv[0]
        location = self.skill.declared(name)
        if location is not None:
            return _Verdict(f"entrypoint {name}", f"{name} is an entrypoint the fixture "
                            f"declares for the skill, found at {location}",
                            Path(location), "path" if "/" not in name else "absolute")
        base = basename(name)
        family = interpreter_family(base)
        known = (
            base in CONSTANT or base in PREFIXES or family is not None or base in RUNNERS
            or base in TEST_SUBCOMMANDS or base in TEST_GOALS or base in FETCHERS
            or base in PROJECT_RUNNERS or base in ("source", ".", "npm", "pnpm", "yarn", "npx",
                                                    "pnpx", "bunx", "uvx")
        )
        if "/" in name and not known:
            return self._executable_path(name, found.workdir)
        if base in CONSTANT or base in PREFIXES:
            return self._constant(argv, base, found.workdir)
        if base in ("source", "."):
            if len(argv) < 2:
                return _Verdict(None, f"{render(argv)} names no file to source")
            return self._script(argv, base, argv[1], found.workdir, "python")
        if family is not None:
            return self._interpreter(argv, base, family, found.workdir)
        verdict = self._runner(argv, base, found.workdir)
        if verdict is not None:
            return verdict
        if base in FETCHERS:
            for word in argv[1:]:
                match = URL.search(word)
                if match:
                    url = match.group(0)
                    return _Verdict(f"live URL {url}", f"{base} fetches the live URL {url}")
            return _Verdict(None, f"{render(argv)} fetches no http:// or https:// URL")
        if "/" in name:
            return self._executable_path(name, found.workdir)
        return self._on_path(argv, found.workdir)

    def _constant(self, argv: tuple[str, ...], base: str, workdir: str | None) -> _Verdict:
        named = [a for a in argv[1:] if self._looks_like_entry(a, workdir)]
        if named:
            quoted = ", ".join(repr(a) for a in named[:3])
            role = "is only an argument" if len(named) == 1 else "are only arguments"
            return _Verdict(None, f"{render(argv)} names no entrypoint: {quoted} {role} of {base}")
        if base in PREFIXES:
            return _Verdict(None, f"{render(argv)} reaches no entrypoint: it runs no program")
        return _Verdict(
            None, f"{render(argv)} reaches no entrypoint: {base} is {constant_kind(base)}"
        )

    def _looks_like_entry(self, word: str, workdir: str | None) -> bool:
        if word.startswith("-"):
            return False
        if "/" in word or re.search(r"[^./]\.[A-Za-z][A-Za-z0-9]{0,5}$", word):
            return True
        path, _ = self._locate(word, workdir)
        return path is not None and _exists(path, "file")

    def _executable_path(self, name: str, workdir: str | None) -> _Verdict:
        path, where = self._locate(name, workdir)
        if path is None:
            return _Verdict(None, f"cannot tell whether script {name} exists: it is in {where}")
        if _executable(path):
            if not self.skill.holds(path):
                return self._outside(f"{name} is the executable file", path)
            return _Verdict(
                f"executable {name}", f"{name} is the executable file {os.path.normpath(path)}",
                Path(os.path.normpath(path)), "exec",
            )
        if _exists(path, "dir"):
            return _Verdict(None, f"{name} is a directory, not a script (looked in {where})")
        if _exists(path, "file"):
            return _Verdict(
                None,
                f"script {name} exists but is not executable (looked in {where}): "
                f"chmod +x it or run it through its interpreter",
            )
        return _Verdict(None, f"script {name} does not exist (looked in {where}){_near(path)}")

    def _script(
        self, argv: Sequence[str], runner: str, script: str, workdir: str | None, family: str
    ) -> _Verdict:
        path, where = self._locate(script, workdir)
        if path is None:
            return _Verdict(None, f"cannot tell whether script {script} exists: it is in {where}")
        if _exists(path, "file") or (
            family == "python" and _exists(path / "__main__.py", "file")
        ):
            if not self.skill.holds(path):
                return self._outside(f"{runner} runs the script file", path)
            target = path / "__main__.py" if _exists(path, "dir") else path
            return _Verdict(
                f"{runner} script {script}",
                f"{runner} runs the script file {os.path.normpath(path)}",
                Path(os.path.normpath(target)), "shell" if runner in ("source", ".") else family,
            )
        return _Verdict(None, f"script {script} does not exist (looked in {where})"
                        f"{_near(path)}")

    def _interpreter(
        self, argv: tuple[str, ...], base: str, family: str, workdir: str | None
    ) -> _Verdict:
        options = INTERPRETERS[family]
        kind, value = interpreter_target(options, argv[1:])
        if kind == "script":
            return self._script(argv, base, value, workdir, family)
        if kind == "module":
            return self._python_module(argv, base, value, workdir)
        if kind == "runner":
            return _Verdict(f"test runner {base} {value}", f"{base} {value} runs the test suite")
        if kind == "inline":
            return _Verdict(
                None, f"{render(argv)} runs inline code ({value}), not a script of the skill"
            )
        if kind == "stdin":
            return _Verdict(None, f"{render(argv)} reads its program from stdin, not a script")
        return _Verdict(None, f"{render(argv)} names no entrypoint: {base} is given no script")

    def _python_module(
        self, argv: tuple[str, ...], base: str, module: str, workdir: str | None
    ) -> _Verdict:
        if module in PYTHON_RUNNER_MODULES:
            return _Verdict(f"test runner {base} -m {module}", f"{module} runs the test suite")
        directory = self._base_dir(workdir)
        if directory is not None and re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", module):
            parts = module.split(".")
            for root in (directory, directory / "src"):
                for candidate in (
                    root.joinpath(*parts[:-1], parts[-1] + ".py"),
                    root.joinpath(*parts, "__main__.py"),
                    root.joinpath(*parts, "__init__.py"),
                ):
                    if _exists(candidate, "file"):
                        if not self.skill.holds(candidate):
                            return self._outside(f"{base} runs the module file", candidate)
                        swappable = candidate.name != "__init__.py"
                        return _Verdict(
                            f"{base} module {module}", f"{base} runs the module file {candidate}",
                            candidate if swappable else None, "python" if swappable else None,
                        )
        where = "a directory only known at run time" if directory is None else str(directory)
        return _Verdict(
            None,
            f"{render(argv)}: module {module!r} is not a test runner and not found in {where}",
        )

    def _runner(self, argv: tuple[str, ...], base: str, workdir: str | None) -> _Verdict | None:
        """A verdict for test runners, package scripts and project runners; None otherwise."""
        operands = [w for w in argv[1:] if not w.startswith("-")]
        if base in RUNNERS:
            return _Verdict(f"test runner {base}", f"{base} runs the test suite")
        if base in TEST_SUBCOMMANDS:
            index = skip_options(argv, 1)
            first = argv[index] if index < len(argv) else ""
            if first in TEST_SUBCOMMANDS[base]:
                return _Verdict(f"test runner {base} {first}", f"{base} {first} runs the tests")
        if base in TEST_GOALS:
            index = skip_options(argv, 1, short_arg="CfIojW")
            goals = [w for w in argv[index:] if "=" not in w and not w.startswith("-")]
            for goal in goals:
                if goal in TEST_GOALS[base] or goal.startswith(("test-", "test_", "check-")):
                    return _Verdict(f"test runner {base} {goal}", f"{base} {goal} runs the tests")
        if base in ("npm", "pnpm", "yarn", "bun"):
            verdict = self._package_script(argv, base, workdir)
            if verdict is not None:
                return verdict
        if base in ("npx", "pnpx", "bunx"):
            index = skip_options(argv, 1, short_arg="p", long_arg=("--package",))
            tool = argv[index] if index < len(argv) else ""
            if tool in JS_RUNNERS or (
                tool in ("playwright", "cypress") and {"test", "run"} & set(argv[index + 1 :])
            ):
                return _Verdict(f"test runner {base} {tool}", f"{tool} runs the test suite")
        if (base in PROJECT_RUNNERS and operands[:1] == ["run"]) or base == "uvx":
            return self._project_run(argv, base, workdir)
        return None

    def _package_script(
        self, argv: tuple[str, ...], base: str, workdir: str | None
    ) -> _Verdict | None:
        value_options = ("--prefix", "--dir", "--cwd", "--workspace", "--filter")
        index = skip_options(argv, 1, short_arg="CwF", long_arg=value_options)
        sub = argv[index] if index < len(argv) else ""
        rest = argv[index + 1 :]
        if sub in ("test", "t", "tst"):
            return _Verdict(f"test runner {base} {sub}", f"{base} {sub} runs the package's tests")
        if sub in ("run", "run-script"):
            script_index = skip_options(rest, 0)
            script = rest[script_index] if script_index < len(rest) else ""
            if script.startswith("test"):
                return _Verdict(
                    f"test runner {base} {sub} {script}", f"{base} {sub} {script} runs the tests"
                )
            if base == "bun" and script:
                return self._script(argv, base, script, workdir, "node")
        if sub in ("exec", "dlx") and rest and rest[0] in JS_RUNNERS:
            return _Verdict(f"test runner {base} {sub} {rest[0]}", f"{rest[0]} runs the tests")
        if base != "npm" and sub in JS_RUNNERS:
            return _Verdict(f"test runner {base} {sub}", f"{sub} runs the test suite")
        return None

    def _project_run(self, argv: tuple[str, ...], base: str, workdir: str | None) -> _Verdict:
        # "uv run [options] CMD": judge CMD, which runs inside the project's environment.
        start = 1 if base == "uvx" else argv.index("run") + 1
        index = skip_options(
            argv, start, short_arg="pw",
            long_arg=("--with", "--with-requirements", "--with-editable", "--python",
                      "--project", "--directory", "--package", "--extra", "--group",
                      "--env-file", "--index", "--index-url", "--extra-index-url", "--from"),
        )
        rest = argv[index:]
        label = f"{base} run" if base != "uvx" else base
        if not rest:
            return _Verdict(None, f"{render(argv)} names no command for {label}")
        if rest[0].endswith(".py"):  # "uv run script.py" runs it with the project's python
            return self._script(argv, label, rest[0], workdir, "python")
        inner = self.judge(Found(SimpleCommand(rest, ORIGIN_ARGV), workdir, ()))
        if inner.entrypoint is not None:
            return inner
        tool = rest[0]
        installed = self._project_tool(tool, workdir) if base != "uvx" else None
        if installed is not None:
            # Not on PATH here, but the skill's own project environment provides it. (uvx is
            # not such a runner: it fetches a tool from a package index.)
            return _Verdict(
                f"project command {tool} via {label}",
                f"{label} runs {tool} from the skill's project environment ({installed})",
            )
        if "/" not in tool and _which(tool) is None and base != "uvx":
            return _Verdict(None, f"{label} {tool}: {tool} is neither on PATH nor installed "
                            "in a .venv of the skill directory")
        return inner

    def _project_tool(self, tool: str, workdir: str | None) -> Path | None:
        """The ``.venv/bin/TOOL`` of the skill's project that ``uv run``/``poetry run`` would
        run: looked for from the working directory up to the skill directory."""
        directory = self._base_dir(workdir)
        if "/" in tool or directory is None or not self.skill.holds(directory):
            return None
        root = Path(os.path.realpath(self.skill.directory))
        current = Path(os.path.realpath(directory))
        while True:
            candidate = current / ".venv" / "bin" / tool
            if _executable(candidate) and self.skill.holds(candidate):
                return candidate
            if current == root or current.parent == current:
                return None
            current = current.parent

    def _outside_the_skill(self, argv: Sequence[str], workdir: str | None) -> str | None:
        """Why a test runner does not run over the skill's directory; None when it does."""
        directory = self._base_dir(workdir)
        if directory is None:
            return "runs in a directory only known at run time"
        if not self.skill.holds(directory):
            return f"runs in {os.path.realpath(directory)}, outside the skill directory"
        for word in argv[1:]:
            # Operands and option values that are paths say which tests run: all must be
            # the skill's ("pytest /elsewhere/tests", "make -C /elsewhere test" are not).
            value = word.partition("=")[2] if word.startswith("-") else word
            if value in _NEUTRAL_PATHS or not (
                value.startswith(("/", "~")) or "/" in value or value == ".."
            ):
                continue
            path, _ = self._locate(value, workdir)
            if path is not None and not self.skill.holds(path):
                return f"is given {value}, outside the skill directory"
        return None

    def _on_path(self, argv: tuple[str, ...], workdir: str | None) -> _Verdict:
        name = argv[0]
        location = _which(name)
        if location is not None and self.skill.holds(Path(location)):
            return _Verdict(f"program {name}", f"{name} is a program found on PATH at "
                            f"{location}, inside the skill directory", Path(location), "path")
        if location is not None:
            return _Verdict(
                None,
                f"{name} is a generic program found on PATH at {location}, not the skill's "
                "own code (a program the skill installs counts when the fixture lists it in "
                '"entrypoints")',
            )
        hint = ""
        path, _ = self._locate(name, workdir) if name else (None, "")
        if path is not None and _exists(path, "file"):
            hint = f"; to run the file in the working directory write ./{name}"
        return _Verdict(None, f"{name or repr(name)} is not a program found on PATH{hint}")


def declared_entrypoint_problem(name: str) -> str | None:
    """Why ``name`` cannot be declared as one of the skill's installed entrypoints; None when
    it can: a program found on PATH that does not merely run other code (an interpreter, a
    prefix, one of CODE_RUNNERS)."""
    base = basename(name)
    if "/" in name:
        return (f"{name!r} is a path, not a program name: a file inside the skill's directory "
                "is its own code without being declared, and one outside it never is")
    if base in CONSTANT or base in PREFIXES:
        return f"{name!r} is a shell builtin or a prefix that runs another command, not a skill"
    if interpreter_family(base) is not None:
        return (f"{name!r} is an interpreter, which runs whatever it is given: name the "
                "skill's script in the command instead")
    if base in CODE_RUNNERS:
        return (f"{name!r} runs the code or the commands it is given, so a case could compute "
                "what it expects without the skill: name the skill's own program, or its "
                "script in the command")
    if _which(name) is None:
        return f"{name!r} is not a program found on PATH: install the skill's entrypoint first"
    return None


def entrypoint_reached(
    argv: Sequence[str],
    cwd: Path,
    skill: SkillCode,
    environment: Mapping[str, str] | None = None,
) -> tuple[Reached | None, str]:
    """The first entrypoint of the skill the command reaches, when it is one file that a
    stand-in could replace, and the explanation; ``(None, why)`` otherwise (no entrypoint, or
    one that is not a file: a test runner, a live URL, a project command).  The same judgement
    as :func:`real_world_entrypoint`."""
    first = _first_reaching(argv, cwd, skill, environment)
    if first is None:
        return None, "the command reaches no entrypoint of the skill"
    _, verdict = first
    assert verdict.entrypoint is not None
    if verdict.path is None or verdict.via is None:
        return None, (f"{verdict.entrypoint} is not one file of the skill that a stand-in "
                      "could replace")
    return Reached(verdict.entrypoint, verdict.path, verdict.via), verdict.explanation


def program_reaching(
    argv: Sequence[str],
    cwd: Path,
    skill: SkillCode,
    environment: Mapping[str, str] | None = None,
) -> tuple[str | None, str]:
    """The name of the program that the first command reaching the skill starts (``jest``,
    ``curl`` for a live URL, ``lua`` for a Lua script), and what it reaches; ``(None, why)``
    when that command names its program by path, or none reaches the skill.  What a control
    can shadow on PATH where no stand-in replaces a file of the skill."""
    first = _first_reaching(argv, cwd, skill, environment)
    if first is None:
        return None, "the command reaches no entrypoint of the skill"
    found, verdict = first
    assert verdict.entrypoint is not None
    name = found.command.argv[0]
    if "/" in name:
        return None, f"{verdict.entrypoint}: the command names its program by path ({name})"
    return name, verdict.entrypoint


def reaching_each(walker: Walker, cwd: Path, skill: SkillCode) -> list[bool]:
    """For each command of the walk, whether it reaches an entrypoint of the skill."""
    judge = _Judge(Path(os.path.abspath(cwd)), skill)
    return [judge.judge(found).entrypoint is not None for found in walker.found]


def _first_reaching(
    argv: Sequence[str], cwd: Path, skill: SkillCode, environment: Mapping[str, str] | None
) -> tuple[Found, _Verdict] | None:
    walker = walk(argv, environment)
    judge = _Judge(Path(os.path.abspath(cwd)), skill)
    for found in walker.found:
        verdict = judge.judge(found)
        if verdict.entrypoint is not None:
            return found, verdict
    return None


def real_world_entrypoint(
    argv: Sequence[str],
    cwd: Path,
    skill: SkillCode,
    environment: Mapping[str, str] | None = None,
) -> tuple[str | None, str]:
    """Whether the command reaches the skill's own code, and the explanation.

    Returns ``(description, explanation)``; the description is None when no simple command
    reaches it, and the explanation then says why for each (it is shown to users).  Real: an
    executable file inside the skill's directory (``./run.sh``, ``scripts/go``, an absolute
    path there, also through a shell variable: ``R=../run.sh; $R go``); an interpreter given
    a script or module inside it (``bash run.sh``, ``python3 tool.py``, ``uv run x.py``); a
    program listed in ``skill.entrypoints``; a test runner (``pytest``, ``python -m pytest``,
    ``npm test``, ``go test``, ``make check``, ``bats``...) run in the skill's directory and
    given no path outside it; ``curl``/``wget``/``http`` on an ``http(s)://`` URL.  Never a
    generic program found on PATH.  Relative paths resolve against ``cwd``, following ``cd``
    inside shell scripts and ``env -C``; ``environment`` holds the variables the command is
    given, which its shell scripts may name.
    """
    base = Path(os.path.abspath(cwd))
    walker = walk(argv, environment)
    if not walker.found:
        return None, "the command runs nothing (only assignments, comments or redirections)"
    judge = _Judge(base, skill)
    reasons: list[str] = []
    for found in walker.found:
        verdict = judge.judge(found)
        if verdict.entrypoint is not None:
            return verdict.entrypoint, verdict.explanation
        if verdict.explanation not in reasons:
            reasons.append(verdict.explanation)
    return None, "; ".join(reasons)
