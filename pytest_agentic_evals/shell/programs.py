"""What the analysis knows about programs by their name: shells, constant builtins, prefixes
that only change how a program runs, interpreters and how their options name the program
text, test runners, and fetchers of URLs."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash"})

# Commands whose outcome is fixed by their literal arguments or by static files: running only
# these exercises nothing of the skill.  The first group is the contract's list; the second
# adds shell builtins that merely change shell state and pure look-ups of other programs.
CONSTANT = frozenset(
    {
        "echo", "printf", "true", "false", ":", "exit", "return", "test", "[", "[[", "sleep",
        "cd", "export", "set", "unset", "shift", "read", "wait",
        "cat", "ls", "pwd", "head", "tail", "wc",
    }
    | {
        "local", "declare", "typeset", "readonly", "alias", "unalias", "umask", "trap",
        "shopt", "let", "break", "continue", "pushd", "popd", "dirs", "hash", "type",
        "which", "printenv", "basename", "dirname",
    }
)
# The programs of CONSTANT that only read files or the environment: the docs call them static
# readers, and a message must not call ``cat X`` a builtin.
STATIC_READERS = frozenset(
    {"cat", "ls", "pwd", "head", "tail", "wc", "type", "which", "printenv", "basename",
     "dirname"}
)


def constant_kind(base: str) -> str:
    """What a program of CONSTANT is, as messages name it."""
    return "a static reader" if base in STATIC_READERS else "a constant builtin"


# Prefix commands are peeled off when they wrap a command; one that is still argv[0] after
# unwrapping wraps nothing (``env`` alone prints the environment, ``command -v x`` looks up).
PREFIXES = frozenset(
    {
        "env", "exec", "command", "builtin", "nohup", "nice", "time", "timeout", "setsid",
        "stdbuf", "sudo", "doas",
    }
)

# Programs that run the code or the commands written on their command line, beside the
# interpreters that ``interpreter_family`` knows: languages of their own (awk, sed, jq, bc), and
# programs that start whatever command they are given (xargs, find -exec, make, git's aliases,
# a container, a debugger, a sandbox). Declared as a skill's entrypoint, any of them would let
# a case compute what it expects without running a file of the skill.
CODE_RUNNERS = frozenset(
    {
        "awk", "gawk", "mawk", "nawk", "busybox", "sed", "gsed", "jq", "gojq", "yq", "bc", "dc",
        "m4", "expect", "wish", "ed", "ex", "vi", "vim", "nvim", "emacs", "sqlite3",
        "xargs", "find", "parallel", "watch", "flock", "make", "gmake", "git", "script",
        "unbuffer", "chroot", "unshare", "nsenter", "setpriv", "runuser", "su", "ssh",
        "taskset", "ionice", "chrt", "prlimit", "firejail", "bwrap", "systemd-run", "xvfb-run",
        "dbus-run-session", "fakeroot", "strace", "ltrace", "valgrind", "gdb", "docker",
        "podman", "npx", "uvx", "pipx", "bunx", "deno", "bun", "pwsh", "julia", "java",
        "jshell", "osascript",
    }
)


_INTERPRETER = re.compile(
    r"(python|pypy|node|nodejs|ruby|perl|php|lua|luajit|tclsh|Rscript|fish"
    r"|sh|bash|zsh|dash|ksh|mksh|ash)(\d+(?:\.\d+)*)?"
)
_FAMILY = {"pypy": "python", "nodejs": "node", "luajit": "lua", **{s: "shell" for s in SHELLS}}


def interpreter_family(base: str) -> str | None:
    """The interpreter family of a program name (``python3.12`` -> ``python``); None when it
    is no interpreter."""
    match = _INTERPRETER.fullmatch(base)
    if match is None:
        return None
    return _FAMILY.get(match.group(1), match.group(1))


@dataclass(frozen=True)
class InterpreterOptions:
    inline: str = ""  # short options whose value is program text
    inline_long: frozenset[str] = frozenset()
    arg: str = ""  # short options that take a value
    arg_long: frozenset[str] = frozenset()
    module: str = ""  # short options naming a module to run
    script: str = ""  # short options naming the script file
    stdin: str = ""  # short options reading the program from stdin
    runner_long: frozenset[str] = frozenset()
    prefixes: str = "-"


INTERPRETERS = {
    "python": InterpreterOptions(inline="c", arg="WX", module="m"),
    "node": InterpreterOptions(
        inline="ep", inline_long=frozenset({"--eval", "--print"}), arg="r",
        arg_long=frozenset({"--require", "--import", "--loader", "--experimental-loader",
                            "--input-type", "--conditions", "--title"}),
        runner_long=frozenset({"--test"}),
    ),
    "ruby": InterpreterOptions(inline="e", arg="rIC"),
    "perl": InterpreterOptions(inline="eE", arg="IM"),
    "php": InterpreterOptions(inline="r", arg="cdz", script="f"),
    "lua": InterpreterOptions(inline="e", arg="l"),
    "Rscript": InterpreterOptions(inline="e"),
    "tclsh": InterpreterOptions(),
    "fish": InterpreterOptions(inline="c", inline_long=frozenset({"--command"})),
    "shell": InterpreterOptions(
        inline="c", arg="oO", stdin="s",
        arg_long=frozenset({"--rcfile", "--init-file"}), prefixes="-+",
    ),
}

RUNNERS = frozenset(
    {"pytest", "py.test", "tox", "nox", "bats", "jest", "vitest", "mocha", "ava", "rspec",
     "phpunit", "ctest", "nose2"}
)
PYTHON_RUNNER_MODULES = frozenset({"pytest", "unittest", "nose2", "tox", "nox"})
JS_RUNNERS = frozenset({"vitest", "jest", "mocha", "ava", "tap", "jasmine", "karma"})
# Tools whose first operand picks a test subcommand: "go test", "cargo test", ...
TEST_SUBCOMMANDS = {
    "go": {"test"}, "cargo": {"test", "nextest"}, "dotnet": {"test"}, "mix": {"test"},
    "swift": {"test"}, "hatch": {"test"}, "deno": {"test"}, "bun": {"test"},
}
# Tools that take several goals anywhere on the line: "make lint test", "mvn clean verify".
TEST_GOALS = {
    "make": {"test", "check", "tests"}, "gmake": {"test", "check", "tests"},
    "mvn": {"test", "verify"}, "gradle": {"test", "check"}, "gradlew": {"test", "check"},
}
PROJECT_RUNNERS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "rye"})
FETCHERS = frozenset({"curl", "wget", "http", "https", "httpie", "xh", "xhs"})
URL = re.compile(r"https?://[^\s'\"]+")


def interpreter_target(options: InterpreterOptions, args: Sequence[str]) -> tuple[str, str]:
    """What an interpreter runs: ("script"|"module"|"inline"|"stdin"|"runner"|"none", value)."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if a == "-":
            return "stdin", a
        if a.startswith("--"):
            name, eq, _ = a.partition("=")
            if name in options.inline_long:
                return "inline", name
            if name in options.runner_long:
                return "runner", name
            i += 2 if (name in options.arg_long and not eq) else 1
            continue
        if len(a) > 1 and a[0] in options.prefixes:
            i += 1
            letters = a[1:]
            for pos, ch in enumerate(letters):
                rest = letters[pos + 1 :]
                if a[0] == "-" and ch in options.inline:
                    return "inline", "-" + ch
                if a[0] == "-" and ch in options.stdin:
                    return "stdin", "-" + ch
                if ch in options.module or ch in options.script:
                    value = rest or (args[i] if i < len(args) else "")
                    return ("module" if ch in options.module else "script"), value
                if ch in options.arg:
                    if not rest:
                        i += 1
                    break
            continue
        return "script", a
    if i < len(args):
        return "script", args[i]
    return "none", ""
