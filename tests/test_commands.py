"""Structural judgement of fixture commands (pytest_agentic_evals.shell)."""

from __future__ import annotations

import os
import shlex
import shutil
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentic_evals.shell import (
    CommandParseError,
    Sampling,
    SimpleCommand,
    SkillCode,
    declared_entrypoint_problem,
    fixture_stub_inputs,
    real_world_entrypoint,
    sampling,
    simple_commands,
    triviality,
)
from pytest_agentic_evals.shell.walker import Output, Written, walk


def argvs(command: list[str]) -> list[tuple[str, ...]]:
    return [simple.argv for simple in simple_commands(command)]


def make_script(directory: Path, name: str, executable: bool = True) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho hello\n")
    mode = stat.S_IRUSR | stat.S_IWUSR
    path.chmod(mode | stat.S_IXUSR if executable else mode)
    return path


# --------------------------------------------------------------------------------------------
# simple_commands: shell unwrapping
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["bash", "-c", "echo hi"],
        ["sh", "-c", "echo hi"],
        ["zsh", "-c", "echo hi"],
        ["dash", "-c", "echo hi"],
        ["ksh", "-c", "echo hi"],
        ["/bin/sh", "-c", "echo hi"],
        ["/usr/bin/bash", "-c", "echo hi"],
        ["/usr/local/bin/zsh", "-c", "echo hi"],
        ["bash", "-lc", "echo hi"],
        ["bash", "-ec", "echo hi"],
        ["bash", "-euc", "echo hi"],
        ["bash", "-xc", "echo hi"],
        ["bash", "-ce", "echo hi"],
        ["bash", "-e", "-c", "echo hi"],
        ["bash", "-e", "-u", "-c", "echo hi"],
        ["bash", "--norc", "-c", "echo hi"],
        ["bash", "--login", "-c", "echo hi"],
        ["bash", "--noprofile", "--norc", "-ec", "echo hi"],
        ["bash", "--rcfile", "/dev/null", "-c", "echo hi"],
        ["bash", "-o", "pipefail", "-c", "echo hi"],
        ["bash", "+o", "xtrace", "-c", "echo hi"],
        ["bash", "-euo", "pipefail", "-c", "echo hi"],
        ["bash", "-O", "extglob", "-c", "echo hi"],
        ["bash", "-c", "-e", "echo hi"],
        ["sh", "-c", "--", "echo hi"],
    ],
)
def test_shell_with_c_is_unwrapped(command: list[str]) -> None:
    assert simple_commands(command) == [SimpleCommand(("echo", "hi"), "shell script")]


def test_script_positional_arguments_are_not_commands() -> None:
    assert argvs(["bash", "-c", "./run.sh \"$1\"", "argv0", "Ada"]) == [("./run.sh", "$1")]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["bash", "run.sh"], [("bash", "run.sh")]),
        (["bash", "run.sh", "--check", "x"], [("bash", "run.sh", "--check", "x")]),
        (["bash", "-x", "run.sh"], [("bash", "-x", "run.sh")]),
        (["sh", "-e", "scripts/go.sh"], [("sh", "-e", "scripts/go.sh")]),
        (["bash"], [("bash",)]),
    ],
)
def test_shell_without_c_is_one_simple_command(
    command: list[str], expected: list[tuple[str, ...]]
) -> None:
    assert argvs(command) == expected
    assert all(simple.origin == "argv" for simple in simple_commands(command))


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["bash", "-c", "sh -c 'echo hi'"], [("echo", "hi")]),
        (["bash", "-c", "bash -lc \"sh -c './run.sh x'\""], [("./run.sh", "x")]),
        (["sh", "-c", "echo a; bash -c 'echo b; ./run.sh'"], [("echo", "a"), ("echo", "b"),
                                                              ("./run.sh",)]),
        (["bash", "-c", "exec /bin/sh -ec 'true'"], [("true",)]),
    ],
)
def test_nested_shells_are_unwrapped(
    command: list[str], expected: list[tuple[str, ...]]
) -> None:
    assert argvs(command) == expected


def test_origin_distinguishes_argv_from_script() -> None:
    assert simple_commands(["./run.sh", "x"]) == [SimpleCommand(("./run.sh", "x"), "argv")]
    assert simple_commands(["bash", "-c", "./run.sh x"]) == [
        SimpleCommand(("./run.sh", "x"), "shell script")
    ]


# --------------------------------------------------------------------------------------------
# simple_commands: prefixes
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["env", "./run.sh", "x"],
        ["env", "FOO=1", "./run.sh", "x"],
        ["env", "-i", "FOO=1", "BAR=2", "./run.sh", "x"],
        ["env", "-u", "HOME", "./run.sh", "x"],
        ["env", "--unset=HOME", "./run.sh", "x"],
        ["env", "-C", "/tmp", "./run.sh", "x"],
        ["env", "--", "./run.sh", "x"],
        ["/usr/bin/env", "FOO=1", "./run.sh", "x"],
        ["env", "-S", "./run.sh x"],
        ["env", "-S./run.sh x"],
        ["env", "--split-string=./run.sh x"],
        ["env", "-", "./run.sh", "x"],
        ["exec", "./run.sh", "x"],
        ["command", "./run.sh", "x"],
        ["nohup", "./run.sh", "x"],
        ["nice", "./run.sh", "x"],
        ["nice", "-n", "10", "./run.sh", "x"],
        ["nice", "-n10", "./run.sh", "x"],
        ["time", "./run.sh", "x"],
        ["time", "-p", "./run.sh", "x"],
        ["timeout", "30", "./run.sh", "x"],
        ["timeout", "-s", "KILL", "-k", "5", "30s", "./run.sh", "x"],
        ["timeout", "--signal=TERM", "--preserve-status", "1m", "./run.sh", "x"],
        ["setsid", "./run.sh", "x"],
        ["setsid", "-w", "./run.sh", "x"],
        ["stdbuf", "-oL", "./run.sh", "x"],
        ["stdbuf", "-o", "L", "-e", "0", "./run.sh", "x"],
        ["sudo", "./run.sh", "x"],
        ["sudo", "-u", "nobody", "-E", "./run.sh", "x"],
        ["nice", "-n", "5", "timeout", "10", "env", "A=1", "nohup", "./run.sh", "x"],
    ],
)
def test_prefixes_are_peeled(command: list[str]) -> None:
    assert argvs(command) == [("./run.sh", "x")]


@pytest.mark.parametrize(
    "command",
    [
        ["env", "-i", "FOO=1", "bash", "-c", "./run.sh x"],
        ["env", "FOO=1", "bash", "-c", "./run.sh x"],
        ["bash", "-c", "exec ./run.sh x"],
        ["bash", "-c", "FOO=1 BAR=2 ./run.sh x"],
        ["bash", "-c", "env FOO=1 ./run.sh x"],
        ["bash", "-c", "timeout 5 nice ./run.sh x"],
        ["bash", "-c", "time ./run.sh x"],
        ["bash", "-c", "eval './run.sh x'"],
    ],
)
def test_prefixes_inside_scripts(command: list[str]) -> None:
    assert argvs(command) == [("./run.sh", "x")]


@pytest.mark.parametrize(
    "command",
    [
        ["bash", "-c", "FOO=1"],
        ["bash", "-c", "FOO=1 BAR=2"],
        ["bash", "-c", "# only a comment"],
        ["bash", "-c", ""],
        ["bash", "-c", "\n\n  \n"],
        ["sh", "-c", "exec > log.txt 2>&1"],
    ],
)
def test_assignments_comments_and_redirections_alone_yield_nothing(command: list[str]) -> None:
    assert simple_commands(command) == []


def test_env_without_a_command_stays_a_command() -> None:
    assert argvs(["env", "FOO=1"]) == [("env", "FOO=1")]


def test_command_v_is_a_lookup_not_a_prefix() -> None:
    assert argvs(["bash", "-c", "command -v git"]) == [("command", "-v", "git")]


# --------------------------------------------------------------------------------------------
# simple_commands: script splitting
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("echo a; ./b", [("echo", "a"), ("./b",)]),
        ("echo a && ./b", [("echo", "a"), ("./b",)]),
        ("echo a || ./b", [("echo", "a"), ("./b",)]),
        ("echo a | ./b", [("echo", "a"), ("./b",)]),
        ("echo a |& ./b", [("echo", "a"), ("./b",)]),
        ("echo a & ./b", [("echo", "a"), ("./b",)]),
        ("(echo a) && (./b)", [("echo", "a"), ("./b",)]),
        ("echo a;./b", [("echo", "a"), ("./b",)]),
        ("echo a&&./b", [("echo", "a"), ("./b",)]),
        ("echo a\n./b", [("echo", "a"), ("./b",)]),
        ("echo a\r\n./b\r\n", [("echo", "a"), ("./b",)]),
        ("\n\necho a\n\n\n./b\n", [("echo", "a"), ("./b",)]),
        ("echo a;\n./b", [("echo", "a"), ("./b",)]),
        ("./b \\\n  --flag", [("./b", "--flag")]),
        ("echo 'a; ./b'", [("echo", "a; ./b")]),
        ('echo "a && ./b"', [("echo", "a && ./b")]),
        ("echo a\\;b", [("echo", "a;b")]),
        ("echo 'line1\nline2'", [("echo", "line1\nline2")]),
        ("echo \"it's\"", [("echo", "it's")]),
        ("echo ''", [("echo", "")]),
        ("echo $'a\\'b'", [("echo", "a'b")]),
        ("echo a\\", [("echo", "a\\")]),  # a trailing backslash stays literal
        ("echo \\x a\\;b", [("echo", "x", "a;b")]),
        # Inside double quotes \$ and \` are literal; before other characters the backslash stays.
        ('echo "\\$HOME \\`x\\` a\\;b c\\d"', [("echo", "$HOME `x` a\\;b c\\d")]),
    ],
)
def test_script_splitting(script: str, expected: list[tuple[str, ...]]) -> None:
    assert argvs(["bash", "-c", script]) == expected


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("./run.sh > out.txt 2>&1", [("./run.sh",)]),
        ("./run.sh >out.txt 2>/dev/null", [("./run.sh",)]),
        ("./run.sh >> log &> all", [("./run.sh",)]),
        ("./run.sh < in.txt", [("./run.sh",)]),
        ("./run.sh 2>&1 | tee log", [("./run.sh",), ("tee", "log")]),
        ("./run.sh >&2", [("./run.sh",)]),
        ("./run.sh <<< 'some text'", [("./run.sh",)]),
        ("echo hi > run.sh", [("echo", "hi")]),
        ("> out.txt", []),
        ("./run.sh 1>out 2>>err 0<in", [("./run.sh",)]),
    ],
)
def test_redirections_are_not_arguments(script: str, expected: list[tuple[str, ...]]) -> None:
    assert argvs(["bash", "-c", script]) == expected


def test_digits_separated_from_a_redirection_stay_arguments() -> None:
    # "echo 2 > x" passes 2 to echo; "echo 2> x" redirects fd 2.
    assert argvs(["bash", "-c", "echo 2 > x"]) == [("echo", "2")]
    assert argvs(["bash", "-c", "echo 2> x"]) == [("echo",)]


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("# setup\n./run.sh # trailing comment\n# end", [("./run.sh",)]),
        ("echo a # ; ./b", [("echo", "a")]),
        ("echo a#b", [("echo", "a#b")]),
        ("echo '# not a comment'", [("echo", "# not a comment")]),
        ("curl https://x.org/#frag", [("curl", "https://x.org/#frag")]),
    ],
)
def test_comments(script: str, expected: list[tuple[str, ...]]) -> None:
    assert argvs(["bash", "-c", script]) == expected


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("if ./check; then echo ok; else echo no; fi", [("./check",), ("echo", "ok"),
                                                         ("echo", "no")]),
        ("if [ -f x ]; then ./run.sh; fi", [("[", "-f", "x", "]"), ("./run.sh",)]),
        ("while ./poll; do sleep 1; done", [("./poll",), ("sleep", "1")]),
        ("until ./poll\ndo\n  sleep 1\ndone", [("./poll",), ("sleep", "1")]),
        ("for f in a b c; do ./run.sh $f; done", [("./run.sh", "$f")]),
        ("for f in a b\ndo echo $f\ndone", [("echo", "$f")]),
        ("for ((i=0; i<3; i++)); do ./run.sh; done", [("./run.sh",)]),
        ("case $1 in a) echo a;; b|c) ./run.sh;; *) exit 1;; esac",
         [("echo", "a"), ("./run.sh",), ("exit", "1")]),
        ("{ echo a; ./b; }", [("echo", "a"), ("./b",)]),
        ("! ./run.sh", [("./run.sh",)]),
        ("[[ -f x && $y == z ]] && ./run.sh", [("[[", "-f", "x", "&&", "$y", "==", "z", "]]"),
                                               ("./run.sh",)]),
        ("(( n = 1 + 2 )); echo $n", [("echo", "$n")]),
        ("greet() { ./run.sh \"$1\"; }; greet Ada", [("./run.sh", "$1")]),
        ("function greet { echo hi; }; greet", [("echo", "hi")]),
        ("function greet() { echo hi; }\ngreet", [("echo", "hi")]),
        ("arr=(a b c); echo ${arr[1]}", [("echo", "${arr[1]}")]),
        ("case $x in a) ./run.sh\nesac; echo done", [("./run.sh",), ("echo", "done")]),
        ("arr=(a $(./gen.sh) c); ./run.sh", [("./gen.sh",), ("./run.sh",)]),
    ],
)
def test_shell_keywords_are_skipped(script: str, expected: list[tuple[str, ...]]) -> None:
    assert argvs(["bash", "-c", script]) == expected


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("echo ok; exit 0; ./run.sh", [("echo", "ok"), ("exit", "0")]),
        ("exit 0\n./run.sh", [("exit", "0")]),
        ("true && exit; ./run.sh", [("true",), ("exit",)]),
        ("exit 0 || ./run.sh", [("exit", "0")]),
        ("{ exit 0; }; ./run.sh", [("exit", "0")]),
        ("exec cat; ./run.sh", [("cat",)]),
        ("set -n; ./run.sh", [("set", "-n")]),
        ("set -o noexec\n./run.sh", [("set", "-o", "noexec")]),
        ("set -eo noexec; ./run.sh", [("set", "-eo", "noexec")]),
        ("set -o pipefail -n -- x; ./run.sh", [("set", "-o", "pipefail", "-n", "--", "x")]),
        ("false && ./run.sh", [("false",)]),
        ("false && ./run.sh && ./run.sh", [("false",)]),
        ("! true && ./run.sh", [("true",)]),
        ("true || ./run.sh", [("true",)]),
        (": || ./run.sh", [(":",)]),
        ("if false; then ./run.sh; fi", [("false",)]),
        ("if true; then echo a; else ./run.sh; fi", [("true",), ("echo", "a")]),
        ("if true; then echo a; elif ./x; then ./run.sh; fi", [("true",), ("echo", "a")]),
        ("if false; then ./run.sh; elif false; then ./run.sh; else echo b; fi",
         [("false",), ("false",), ("echo", "b")]),
        ("while false; do ./run.sh; done", [("false",)]),
        ("until true; do ./run.sh; done", [("true",)]),
        ("if false; then if ./x; then ./run.sh; fi; fi", [("false",)]),
        ("run() { ./run.sh; }; echo ok", [("echo", "ok")]),
        ("function run { ./run.sh; }\necho ok", [("echo", "ok")]),
        ("[ 1 = 2 ] && ./run.sh", [("[", "1", "=", "2", "]")]),
        ("test a != a && ./run.sh", [("test", "a", "!=", "a")]),
        ("if [ 2 -lt 1 ]; then ./run.sh; fi", [("[", "2", "-lt", "1", "]")]),
        ("command exit 0; ./run.sh", [("exit", "0")]),
        ("exit() { :; }; builtin exit 1; ./run.sh", [("exit", "1")]),
    ],
)
def test_code_the_script_never_runs_is_not_collected(
    script: str, expected: list[tuple[str, ...]]
) -> None:
    """A fixture must not name the skill's entrypoint where its own script never reaches it."""
    assert argvs(["bash", "-c", script]) == expected


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("./check && exit; ./run.sh", [("./check",), ("exit",), ("./run.sh",)]),
        ("if ./check; then exit 1; fi; ./run.sh", [("./check",), ("exit", "1"), ("./run.sh",)]),
        ("(exit 0); ./run.sh", [("exit", "0"), ("./run.sh",)]),
        ("exit 0 | cat; ./run.sh", [("exit", "0"), ("cat",), ("./run.sh",)]),
        ("exit 0 & ./run.sh", [("exit", "0"), ("./run.sh",)]),
        ("f() { exit 1; }; ./run.sh", [("./run.sh",)]),
        ("false || ./run.sh", [("false",), ("./run.sh",)]),
        ("./x && true || ./run.sh", [("./x",), ("true",), ("./run.sh",)]),
        ("false && echo a || ./run.sh", [("false",), ("./run.sh",)]),
        ("case $1 in a) exit 0;; esac; ./run.sh", [("exit", "0"), ("./run.sh",)]),
        ("exec 3>/dev/null; ./run.sh", [("./run.sh",)]),
        ("while true; do ./run.sh; break; done", [("true",), ("./run.sh",), ("break",)]),
        ("if ! false; then ./run.sh; fi", [("false",), ("./run.sh",)]),
        ("f() { g; }; g() { ./run.sh; }; f", [("./run.sh",)]),
        ("for x in a; do exit 0; done; ./run.sh", [("exit", "0"), ("./run.sh",)]),
        # A function defined again: the calls before run the first body.
        ("f() { ./run.sh; }; f; f() { true; }", [("./run.sh",), ("true",)]),
        ("f() { ./run.sh; f() { :; }; }; f", [("./run.sh",), (":",)]),
        ("f() { f() { exit 0; }; ./run.sh; }; f; f", [("exit", "0"), ("./run.sh",)]),
        # "!" before a compound command negates its status, not that of its first command.
        ("! if true; then ./run.sh; else true; fi", [("true",), ("./run.sh",)]),
        ("! { true && ./run.sh; }", [("true",), ("./run.sh",)]),
        ("! case w in w) true && ./run.sh;; esac", [("true",), ("./run.sh",)]),
        # Starting a command in the background succeeds, whatever the command does.
        ("if false & then ./run.sh; fi", [("false",), ("./run.sh",)]),
        ("while ! true & do ./run.sh; break; done", [("true",), ("./run.sh",), ("break",)]),
        # "&" puts the whole and-or list before it in a subshell: an exit in it ends only that.
        ("exit 0 && true & ./run.sh", [("exit", "0"), ("./run.sh",)]),
        ("{ exit 0; } || ./x & ./run.sh", [("exit", "0"), ("./run.sh",)]),
        ("set -n && ./x | ./y & ./run.sh", [("set", "-n"), ("./run.sh",)]),
        # Defining a function succeeds.
        ("false; f() { :; } && ./run.sh", [("false",), ("./run.sh",)]),
        # Arithmetic and a command of redirections only have a status of their own.
        ("true; (( 0 )) || ./run.sh", [("true",), ("./run.sh",)]),
        ("false; > log && ./run.sh", [("false",), ("./run.sh",)]),
        # Words after "--", "-" or a first operand are positional parameters, not options;
        # a set that fails sets nothing.
        ("set -- -n; ./run.sh", [("set", "--", "-n"), ("./run.sh",)]),
        ("set -o pipefail noexec; ./run.sh", [("set", "-o", "pipefail", "noexec"),
                                               ("./run.sh",)]),
        ("set -nQ; ./run.sh", [("set", "-nQ"), ("./run.sh",)]),
        ("set -o bogus -n; ./run.sh", [("set", "-o", "bogus", "-n"), ("./run.sh",)]),
        # A builtin the script makes a function or an alias, or turns off, is no builtin.
        ("exit() { :; }; exit; ./run.sh", [(":",), ("./run.sh",)]),
        ("true() { return 1; }; true || ./run.sh", [("return", "1"), ("./run.sh",)]),
        ("shopt -s expand_aliases\nalias true=false\ntrue || ./run.sh",
         [("shopt", "-s", "expand_aliases"), ("alias", "true=false"), ("true",), ("./run.sh",)]),
        ("enable -n exit; exit; ./run.sh", [("enable", "-n", "exit"), ("exit",), ("./run.sh",)]),
        # A coprocess runs in a subshell of its own, in the background.
        ("coproc exit 0; ./run.sh", [("exit", "0"), ("./run.sh",)]),
        ("coproc false && ./run.sh", [("false",), ("./run.sh",)]),
        ("coproc w { exit 0; }; ./run.sh", [("exit", "0"), ("./run.sh",)]),
        ("coproc { { :; } & exit 0; }\n./run.sh", [(":",), ("exit", "0"), ("./run.sh",)]),
        ("[ $x = 2 ] && ./run.sh", [("[", "$x", "=", "2", "]"), ("./run.sh",)]),
        ("[ 1 = 1 ] && ./run.sh", [("[", "1", "=", "1", "]"), ("./run.sh",)]),
        ("[ a -eq a ] || ./run.sh", [("[", "a", "-eq", "a", "]"), ("./run.sh",)]),
        ("command -v exit; ./run.sh", [("command", "-v", "exit"), ("./run.sh",)]),
    ],
)
def test_code_that_may_run_is_collected(script: str, expected: list[tuple[str, ...]]) -> None:
    assert argvs(["bash", "-c", script]) == expected


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("x=$(./run.sh); echo \"$x\"", [("./run.sh",), ("echo", "$x")]),
        ('echo "$(./run.sh "a b")"', [("./run.sh", "a b"), ("echo", '$(./run.sh "a b")')]),
        ("echo `./run.sh`", [("./run.sh",), ("echo", "`./run.sh`")]),
        ("diff <(./a) <(./b)", [("./a",), ("./b",), ("diff", "<(./a)", "<(./b)")]),
        ("echo $((1 + 2)) ${x:-a b}", [("echo", "$((1 + 2))", "${x:-a b}")]),
        ('echo "\\$(not run)"', [("echo", "$(not run)")]),
        ("echo '$(not run)'", [("echo", "$(not run)")]),
        ("./run.sh \"$(printf '%s' ')')\"", [("printf", "%s", ")"),
                                              ("./run.sh", "$(printf '%s' ')')")]),
        ("./run.sh $(echo \\))", [("echo", ")"), ("./run.sh", "$(echo \\))")]),
        ('echo "`./run.sh`"', [("./run.sh",), ("echo", "`./run.sh`")]),
    ],
)
def test_substitutions_contribute_commands(
    script: str, expected: list[tuple[str, ...]]
) -> None:
    assert argvs(["bash", "-c", script]) == expected


@pytest.mark.parametrize(
    "script",
    [
        "cat <<EOF\nhello world; rm -rf /\nEOF\necho done",
        "cat <<'EOF'\nit's $(not run)\nEOF\necho done",
        "cat <<-EOF\n\thello world\n\tEOF\necho done",
        'cat << "END" > out.txt\nbody ( with | operators\nEND\necho done',
        "cat <<\\EOF\n./fake; rm -rf /\nEOF\necho done",
    ],
)
def test_heredoc_bodies_are_data(script: str) -> None:
    commands = argvs(["bash", "-c", script])
    assert commands[-1] == ("echo", "done")
    assert commands[0][0] == "cat"
    assert len(commands) == 2


@pytest.mark.parametrize(
    "command",
    [
        ["bash", "-c", "echo 'unbalanced"],
        ["bash", "-c", 'echo "unbalanced'],
        ["sh", "-c", "./run.sh 'a\" b"],
        ["bash", "-c", "bash -c \"echo 'x\""],
        ["bash", "-c", "echo $(./run.sh"],
        ["bash", "-c", "echo `date"],
        ["bash", "-c", "echo ${x"],
        ["env", "-S", "echo 'x"],
    ],
)
def test_unbalanced_quoting_raises(command: list[str]) -> None:
    with pytest.raises(CommandParseError) as info:
        simple_commands(command)
    assert "unbalanced" in str(info.value) or "unterminated" in str(info.value) or (
        "quotation" in str(info.value)
    )


def test_unbalanced_quote_message_names_the_problem() -> None:
    with pytest.raises(CommandParseError, match=r"unbalanced single quote"):
        simple_commands(["bash", "-c", "echo 'oops"])


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ([], "empty"),
        (["bash", "-c"], "no script"),
        (["sh", "-ec"], "no script"),
        (["bash", "-c", "echo\x00"], "NUL"),
        (["./run.sh", 1], "argv\\[1\\] is int, not a string"),
        (["bash", "-c", "./run.sh $(echo 'x"], "unterminated command substitution"),
        (["bash", "-c", "cat <<'EOF"], "unbalanced quote in heredoc delimiter"),
        (["env", "-S", "'a"], "cannot split env -S string"),
        (["env", "-S", "x" * 100_001], "env -S string is too long"),
        (["bash", "-c", "#" * 100_001], "shell script is too long to analyse"),
        (["bash", "-c", ":;" * 10_001], "too complex to analyse"),
    ],
)
def test_unusable_commands_raise(command: list[str], message: str) -> None:
    with pytest.raises(CommandParseError, match=message):
        simple_commands(command)


def test_a_string_is_not_an_argv() -> None:
    with pytest.raises(CommandParseError, match="argv list"):
        simple_commands("echo hi")


def test_deep_nesting_is_refused_not_crashed() -> None:
    script = "echo " + "$(" * 60 + "true" + ")" * 60
    with pytest.raises(CommandParseError, match="deep"):
        simple_commands(["bash", "-c", script])


def test_moderate_shell_nesting_is_unwrapped() -> None:
    command = ["./run.sh"]
    for _ in range(5):
        command = ["bash", "-c", shlex.join(command)]
    assert argvs(command) == [("./run.sh",)]


# --------------------------------------------------------------------------------------------
# triviality
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["echo", "ok"],
        ["bash", "-c", "echo ok; true"],
        ["bash", "-lc", "echo hi"],
        ["/bin/sh", "-c", "printf x"],
        ["env", "FOO=1", "bash", "-c", "true"],
        ["echo", "run.sh"],
        ["sh", "-c", "FOO=1; echo $FOO && exit 0"],
        ["true"],
        [":"],
        ["/bin/echo", "ok"],
        ["bash", "-c", "echo hi > run.sh"],
        ["bash", "-c", "cat README.md | head -n 3 | wc -l"],
        ["bash", "-c", "ls; pwd; tail -n1 x"],
        ["bash", "-c", "test -x ./run.sh && [ -f run.sh ] && echo fine"],
        ["bash", "-c", "sleep 1; exit 0"],
        ["bash", "-c", "cd /tmp && export X=1 && set -e && unset X"],
        ["bash", "-c", "read x; shift; wait; return 0"],
        ["bash", "-c", "FOO=1"],
        ["bash", "-c", "# nothing here"],
        ["bash", "-c", "cat <<EOF\n./run.sh\nEOF"],
        ["bash", "-c", "echo ok # ./run.sh"],
        ["bash", "-c", "echo './run.sh; pytest'"],
        ["bash", "-c", "if true; then echo yes; fi"],
        ["env", "-i", "FOO=1", "bash", "-c", "echo $FOO"],
        ["bash", "-c", "sh -c 'echo nested'"],
        ["timeout", "5", "echo", "ok"],
        ["bash", "-c", "command -v git"],
        ["bash", "-c", "show() { echo hi; }; show"],
    ],
)
def test_trivial_commands(command: list[str]) -> None:
    reason = triviality(command)
    assert reason is not None
    assert reason.startswith("trivial:")


@pytest.mark.parametrize(
    "command",
    [
        ["bash", "run.sh"],
        ["bash", "-c", "./run.sh --check"],
        ["python3", "-m", "pytest"],
        ["bash", "-c", "echo start; ./run.sh"],
        ["curl", "https://example.org"],
        ["./run.sh"],
        ["bash", "-c", "./run.sh > out.txt 2>&1"],
        ["bash", "-c", "echo $(./run.sh)"],
        ["bash", "-c", "x=`./run.sh`"],
        ["bash", "-c", "cat <(./run.sh)"],
        ["bash", "-c", "echo ok\n./run.sh"],
        ["bash", "-c", "if ./run.sh; then echo ok; fi"],
        ["bash", "-c", "for f in $(./list.sh); do echo $f; done"],
        ["env", "FOO=1", "sh", "-c", "exec ./run.sh"],
        ["git", "status"],
        ["jq", ".", "x.json"],
        ["./echo", "ok"],
        ["bash", "-c", "source ./lib.sh"],
    ],
)
def test_non_trivial_commands(command: list[str]) -> None:
    assert triviality(command) is None


def test_triviality_message_lists_the_commands() -> None:
    assert triviality(["bash", "-c", "echo ok; true"]) == (
        "trivial: every simple command is a constant builtin (echo ok; true)"
    )


def test_a_static_reader_is_not_called_a_builtin(skill: Path) -> None:
    assert triviality(["bash", "-c", "cat notes > out"]) == (
        "trivial: every simple command is a static reader (cat notes)"
    )
    assert triviality(["bash", "-c", "echo a; wc -l notes"]) == (
        "trivial: every simple command is a constant builtin or a static reader "
        "(echo a; wc -l notes)"
    )
    assert reaches(["bash", "-c", "cat notes > out"], skill) == (
        None, "cat notes reaches no entrypoint: cat is a static reader"
    )


def test_triviality_message_lists_six_commands_at_most() -> None:
    six = "; ".join(f"echo {n}" for n in range(1, 7))
    assert triviality(["bash", "-c", six]) == (
        f"trivial: every simple command is a constant builtin ({six})"
    )
    assert triviality(["bash", "-c", six + "; echo 7"]) == (
        f"trivial: every simple command is a constant builtin ({six}; ...)"
    )


def test_empty_after_unwrapping_is_trivial() -> None:
    reason = triviality(["sh", "-c", "A=1 B=2"])
    assert reason is not None and "runs nothing" in reason


# --------------------------------------------------------------------------------------------
# real_world_entrypoint
# --------------------------------------------------------------------------------------------


def reaches(
    command: list[str], skill: Path, where: str = ".", entrypoints: tuple[str, ...] = ()
) -> tuple[str | None, str]:
    """The judgement of ``command`` run in ``skill/where``, for the skill at ``skill``."""
    return real_world_entrypoint(command, skill / where, SkillCode(skill, entrypoints))


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    """A skill folder: executable run.sh, a non-executable plain.sh, a python tool, fixtures."""
    make_script(tmp_path, "run.sh")
    make_script(tmp_path, "scripts/go")
    make_script(tmp_path, "plain.sh", executable=False)
    (tmp_path / "tool.py").write_text("print('tool')\n")
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__main__.py").write_text("")
    (tmp_path / "fixtures").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("command", "where", "kind"),
    [
        (["./run.sh"], ".", "executable"),
        (["./run.sh", "--check"], ".", "executable"),
        (["../run.sh"], "fixtures", "executable"),
        (["scripts/go"], ".", "executable"),
        (["./scripts/go"], ".", "executable"),
        (["bash", "run.sh"], ".", "script"),
        (["bash", "../run.sh", "Ada"], "fixtures", "script"),
        (["sh", "-e", "./run.sh"], ".", "script"),
        (["bash", "plain.sh"], ".", "script"),
        (["bash", "-c", "./run.sh --check"], ".", "executable"),
        (["bash", "-c", "echo start; ./run.sh"], ".", "executable"),
        (["bash", "-c", "./run.sh > out.txt 2>&1"], ".", "executable"),
        (["bash", "-lc", "cd scripts && ./go"], ".", "executable"),
        (["bash", "-c", "cd .. && ./run.sh"], "fixtures", "executable"),
        (["env", "-C", "scripts", "./go"], ".", "executable"),
        (["env", "-Cscripts", "./go"], ".", "executable"),
        (["env", "--chdir=scripts", "./go"], ".", "executable"),
        (["bash", "-c", "cd -P scripts && ./go"], ".", "executable"),
        (["bash", "-c", "pushd scripts && ./go"], ".", "executable"),
        (["bash", "-c", ". ./run.sh"], ".", "script"),
        (["bash", "-c", "source run.sh"], ".", "script"),
        (["python3", "tool.py"], ".", "script"),
        (["python3.11", "-u", "tool.py"], ".", "script"),
        (["python", "-W", "ignore", "tool.py"], ".", "script"),
        (["python", "-Werror", "tool.py"], ".", "script"),
        (["python3", "--", "tool.py"], ".", "script"),
        (["bun", "run", "tool.py"], ".", "script"),
        (["python3", "-m", "mypkg"], ".", "module"),
        (["uv", "run", "tool.py"], ".", "script"),
        (["sh", "-c", "bash -c './run.sh'"], ".", "executable"),
    ],
)
def test_real_world_scripts(skill: Path, command: list[str], where: str, kind: str) -> None:
    entrypoint, explanation = reaches(command, skill, where)
    assert entrypoint is not None, explanation
    assert kind in entrypoint or kind in explanation


@pytest.mark.parametrize(
    "command",
    [
        ["pytest"],
        ["pytest", "-q", "tests/"],
        ["py.test"],
        ["python", "-m", "pytest"],
        ["python3", "-m", "pytest", "-x"],
        ["python3", "-m", "unittest", "discover"],
        ["tox", "-e", "py311"],
        ["nox"],
        ["npm", "test"],
        ["npm", "run", "test"],
        ["npm", "run", "test:unit"],
        ["yarn", "test"],
        ["pnpm", "test"],
        ["npx", "vitest", "run"],
        ["npx", "jest"],
        ["go", "test", "./..."],
        ["cargo", "test"],
        ["make", "test"],
        ["make", "check"],
        ["make", "-C", "sub", "-j", "4", "check"],
        ["make", "lint", "test"],
        ["pnpm", "exec", "vitest"],
        ["yarn", "dlx", "jest"],
        ["pnpm", "vitest"],
        ["bats", "tests/"],
        ["uv", "run", "pytest"],
        ["uv", "run", "--with", "hypothesis", "python", "-m", "pytest"],
        ["node", "--test"],
        ["bash", "-c", "cd tests && pytest -q"],
    ],
)
def test_test_runners_are_real_world(skill: Path, command: list[str]) -> None:
    entrypoint, explanation = reaches(command, skill)
    assert entrypoint is not None, explanation
    assert "test runner" in entrypoint


@pytest.mark.parametrize(
    "command",
    [
        ["curl", "https://example.org"],
        ["curl", "-fsS", "http://localhost:8000/health"],
        ["wget", "-qO-", "https://example.org/x.json"],
        ["http", "GET", "https://api.example.org/v1"],
        ["bash", "-c", "curl -s https://example.org | jq ."],
    ],
)
def test_live_urls_are_real_world(skill: Path, command: list[str]) -> None:
    entrypoint, explanation = reaches(command, skill)
    assert entrypoint is not None, explanation
    assert "URL" in entrypoint or "program" in entrypoint


def test_curl_without_http_url_is_not_real_world(skill: Path) -> None:
    entrypoint, explanation = reaches(["curl", "file:///etc/hosts"], skill)
    assert entrypoint is None
    assert "no http" in explanation


def test_programs_on_path_inside_the_skill_are_real_world(
    skill: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = skill / "bin"
    make_script(bin_dir, "agentic-evals")
    make_script(bin_dir, "sort")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    for command in (["agentic-evals", "validate", "x.json"], ["sort", "x"]):
        entrypoint, explanation = reaches(command, skill)
        assert entrypoint == f"program {command[0]}", explanation
        assert f"{bin_dir}/{command[0]}, inside the skill directory" in explanation


@pytest.mark.parametrize(
    "command",
    [
        ["date"],
        ["mktemp", "-d"],
        ["cp", "a", "b"],
        ["sort", "-n", "x"],
        ["bash", "-c", "date"],
        ["bash", "-lc", "mktemp -d && date"],
        ["env", "FOO=1", "date"],
        ["npx", "cowsay", "hi"],
        ["uv", "run", "date"],
        ["uvx", "project-tool-not-on-path"],
    ],
)
def test_generic_programs_never_reach_the_skill(skill: Path, command: list[str]) -> None:
    entrypoint, explanation = reaches(command, skill)
    assert entrypoint is None
    assert "not the skill's own code" in explanation or "not a program found on PATH" in \
        explanation


def test_the_rejection_of_a_generic_program_says_what_would_count(skill: Path) -> None:
    entrypoint, explanation = reaches(["bash", "-c", "date"], skill)
    assert entrypoint is None
    assert explanation == (
        f"date is a generic program found on PATH at {shutil.which('date')}, not the skill's "
        'own code (a program the skill installs counts when the fixture lists it in '
        '"entrypoints")'
    )


def test_a_declared_entrypoint_is_the_skills_own_code(skill: Path) -> None:
    sort = shutil.which("sort")
    assert sort is not None
    for command, name in ((["sort", "-n", "x"], "sort"), ([sort, "-n", "x"], sort),
                          (["bash", "-c", "sort x | uniq"], "sort")):
        entrypoint, explanation = reaches(command, skill, entrypoints=("sort",))
        assert entrypoint == f"entrypoint {name}", explanation
        assert explanation.endswith(f"an entrypoint the fixture declares for the skill, "
                                    f"found at {sort}")
    # Declaring one program makes no other one count.
    assert reaches(["date"], skill, entrypoints=("sort",))[0] is None


@pytest.fixture
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside the skill, with an executable script, a tool and tests of its own."""
    root = tmp_path_factory.mktemp("elsewhere")
    make_script(root, "run.sh")
    (root / "tool.py").write_text("print('tool')\n")
    (root / "mypkg").mkdir()
    (root / "mypkg" / "__main__.py").write_text("")
    (root / "tests").mkdir()
    return root


@pytest.mark.parametrize(
    "script",
    [
        "R=../run.sh; $R go",
        "R=../run.sh; \"$R\" go",
        "R=../run.sh; ${R} go",
        "export R=../run.sh; bash -c '$R go'",
        "R=../run.sh bash -c '$R go'",
        "D=..; R=$D/run.sh; $R go",
        "R=../run.sh\n$R go",
        "S=../run.sh; bash $S go",
        "T=../tool.py; python3 $T",
        "cd ..; R=./run.sh; $R",
        "D=..; cd $D && ./run.sh",
    ],
)
def test_shell_variables_reach_the_skill(skill: Path, script: str) -> None:
    entrypoint, explanation = reaches(["bash", "-c", script], skill, "fixtures")
    assert entrypoint is not None, explanation


def test_an_absolute_path_through_a_variable(skill: Path, elsewhere: Path) -> None:
    inside = ["bash", "-c", f"R={skill}/run.sh; $R go"]
    assert reaches(inside, skill, "fixtures")[0] == f"executable {skill}/run.sh"
    entrypoint, explanation = reaches(["bash", "-c", f"R={elsewhere}/run.sh; $R go"], skill)
    assert entrypoint is None
    assert explanation == (f"{elsewhere}/run.sh is the executable file {elsewhere}/run.sh, "
                           f"outside the skill directory {skill}: not the skill's own code")


@pytest.mark.parametrize(
    "script",
    [
        "R=../run.sh; echo '$R'",  # single quotes: no expansion
        "R=../run.sh; \\$R go",  # escaped
        "(R=../run.sh); $R go",  # assigned in a subshell, gone after it
        "R=../run.sh; bash -c '$R go'",  # not exported: the inner shell does not see it
        "R=$(pwd)/../run.sh; $R go",  # computed at run time: not guessed
        "R='../run.sh extra'; $R",  # not one plain word
        "R=../run.sh; unset R; $R go",
        "R=../run.sh; read R; $R go",
        "R=../run.sh; for R in ./x; do $R go; done",
        "R=../run.sh; R=$X; $R go",
    ],
)
def test_shell_variables_are_not_guessed(skill: Path, script: str) -> None:
    entrypoint, explanation = reaches(["bash", "-c", script], skill, "fixtures")
    assert entrypoint is None, explanation


def test_variables_of_the_command_environment(skill: Path) -> None:
    command = ["bash", "-c", "$R go"]
    cwd = skill / "fixtures"
    assert real_world_entrypoint(command, cwd, SkillCode(skill))[0] is None
    entrypoint, _ = real_world_entrypoint(command, cwd, SkillCode(skill), {"R": "../run.sh"})
    assert entrypoint == "executable ../run.sh"
    # Without a shell nothing expands a variable: the runner passes "$R" as it is.
    assert real_world_entrypoint(["$R"], cwd, SkillCode(skill), {"R": "../run.sh"})[0] is None


@pytest.mark.parametrize(
    ("command", "fragment"),
    [
        (["{elsewhere}/run.sh"], "is the executable file {elsewhere}/run.sh, outside"),
        (["bash", "{elsewhere}/run.sh"], "bash runs the script file {elsewhere}/run.sh, "
                                         "outside"),
        (["python3", "{elsewhere}/tool.py"], "runs the script file {elsewhere}/tool.py"),
        (["bash", "-c", "cd {elsewhere} && python3 -m mypkg"], "runs the module file "
                                                              "{elsewhere}/mypkg/__main__.py"),
        (["bash", "-c", "cd {elsewhere} && pytest"], "runs in {elsewhere}, outside the skill"),
        (["pytest", "{elsewhere}/tests"], "is given {elsewhere}/tests, outside the skill"),
        (["make", "-C", "{elsewhere}", "test"], "is given {elsewhere}, outside the skill"),
        (["cargo", "test", "--manifest-path={elsewhere}/Cargo.toml"], "outside the skill"),
        (["python3", "-m", "pytest", "--rootdir", "{elsewhere}"], "outside the skill"),
        (["bash", "-c", "cd $D && pytest"], "runs in a directory only known at run time"),
    ],
)
def test_code_outside_the_skill_is_not_the_skills(
    skill: Path, elsewhere: Path, command: list[str], fragment: str
) -> None:
    command = [word.replace("{elsewhere}", str(elsewhere)) for word in command]
    entrypoint, explanation = reaches(command, skill)
    assert entrypoint is None
    assert fragment.replace("{elsewhere}", str(elsewhere)) in explanation


def test_a_symlink_out_of_the_skill_is_not_the_skills(skill: Path) -> None:
    date = shutil.which("date")
    assert date is not None
    (skill / "now").symlink_to(date)
    entrypoint, explanation = reaches(["./now"], skill)
    assert entrypoint is None
    assert f", outside the skill directory {skill}" in explanation


@pytest.mark.parametrize(
    "command",
    [["pytest", "-c", "/dev/null"], ["pytest", "tests/", "-k", "a/b"],
     ["python3", "-m", "pytest", "--basetemp={trial_dir}/tmp"], ["go", "test", "./..."]],
)
def test_test_runners_over_the_skill(skill: Path, command: list[str]) -> None:
    entrypoint, explanation = reaches(command, skill)
    assert entrypoint is not None and entrypoint.startswith("test runner"), explanation


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("bash", "is an interpreter"),
        ("python3", "is an interpreter"),
        ("echo", "shell builtin or a prefix"),
        ("env", "shell builtin or a prefix"),
        ("awk", "runs the code or the commands it is given"),
        ("git", "runs the code or the commands it is given"),
        ("bin/tool", "is a path, not a program name"),
        ("no-such-program-xyz", "is not a program found on PATH"),
    ],
)
def test_what_cannot_be_declared_an_entrypoint(name: str, fragment: str) -> None:
    reason = declared_entrypoint_problem(name)
    assert reason is not None and fragment in reason


def test_an_installed_program_can_be_declared_an_entrypoint() -> None:
    assert declared_entrypoint_problem("sort") is None


@pytest.mark.parametrize(
    ("command", "fragment"),
    [
        (
            ["echo", "run.sh"],
            "echo run.sh names no entrypoint: 'run.sh' is only an argument of echo",
        ),
        (["cat", "run.sh"], "'run.sh' is only an argument of cat"),
        (["echo", "ok"], "constant builtin"),
        (["bash", "-c", "echo ./run.sh"], "'./run.sh' is only an argument of echo"),
        (["python3"], "no script"),
        (["bash"], "no script"),
        (["python3", "-c", "print(1)"], "inline code"),
        (["node", "-e", "1"], "inline code"),
        (["bash", "-s"], "stdin"),
        (["python3", "-m", "nosuchmodule"], "not a test runner"),
        (["definitely-not-a-program-xyz"], "not a program found on PATH"),
        (["run.sh"], "write ./run.sh"),
        (["./scripts"], "is a directory"),
        (["bash", "-c", "FOO=1"], "runs nothing"),
        (["echo", "-n", "run.sh"], "echo -n run.sh names no entrypoint: 'run.sh' is only an "
                                   "argument of echo"),
        (["env"], "env reaches no entrypoint: it runs no program"),
        (["bash", "-c", "source"], "source names no file to source"),
        (["python3", "-"], "reads its program from stdin"),
        (["python3", "--"], "python3 is given no script"),
        (["node", "--eval", "1"], "runs inline code (--eval)"),
        (["node", "--eval=1"], "runs inline code (--eval)"),
        (["python3", "-m", "not-a-module-name"], "not a test runner and not found"),
        (["bun", "run", "missing.js"], "script missing.js does not exist"),
        (["uv", "run"], "uv run names no command for uv run"),
        (["uv", "run", "python"], "python is given no script"),
        (["uv", "run", "echo", "hi"], "echo is a constant builtin"),
        (["bash", "-c", 'cd "$D" && bash run.sh'], "cannot tell whether script run.sh exists"),
        (["env", "-C", "scripts", "./run.sh"], "./run.sh does not exist"),
    ],
)
def test_not_real_world_explanations(skill: Path, command: list[str], fragment: str) -> None:
    entrypoint, explanation = reaches(command, skill)
    assert entrypoint is None
    assert fragment in explanation


def test_missing_script(skill: Path) -> None:
    entrypoint, explanation = reaches(["./missing.sh"], skill)
    assert entrypoint is None
    assert explanation == f"script ./missing.sh does not exist (looked in {skill})"


def test_missing_script_for_an_interpreter(skill: Path) -> None:
    entrypoint, explanation = reaches(["bash", "missing.sh"], skill)
    assert entrypoint is None
    assert explanation == f"script missing.sh does not exist (looked in {skill})"


def test_script_that_exists_but_is_not_executable(skill: Path) -> None:
    entrypoint, explanation = reaches(["./plain.sh"], skill)
    assert entrypoint is None
    assert "exists but is not executable" in explanation
    assert str(skill) in explanation


def test_script_that_exists_and_is_executable(skill: Path) -> None:
    entrypoint, explanation = reaches(["./run.sh"], skill)
    assert entrypoint == "executable ./run.sh"
    assert str(skill / "run.sh") in explanation


def test_relative_paths_resolve_against_cwd(skill: Path) -> None:
    assert reaches(["./run.sh"], skill, "fixtures")[0] is None
    assert reaches(["../run.sh"], skill, "fixtures")[0] is not None
    assert reaches(["bash", "-c", "./run.sh"], skill, "fixtures")[0] is None
    assert reaches(["bash", "-c", "../run.sh"], skill, "fixtures")[0] is not None


def test_cd_inside_a_subshell_does_not_leak(skill: Path) -> None:
    entrypoint, explanation = reaches(
        ["bash", "-c", "(cd scripts) && ./go"], skill
    )
    assert entrypoint is None
    assert "does not exist" in explanation


def test_cd_to_a_computed_directory_is_not_guessed(skill: Path) -> None:
    entrypoint, explanation = reaches(["bash", "-c", 'cd "$DIR" && ./go'], skill)
    assert entrypoint is None
    assert "only known at run time" in explanation


@pytest.mark.parametrize(
    "script", ["cd - && ./go", "cd && ./go", "cd +1 && ./go", "pushd scripts && popd && ./go"]
)
def test_cd_to_a_directory_only_the_shell_knows_is_not_guessed(skill: Path, script: str) -> None:
    # The previous directory, home, the directory stack: none is known before the run.
    entrypoint, explanation = reaches(["bash", "-c", script], skill)
    assert entrypoint is None
    assert "cannot tell whether script ./go exists" in explanation


@pytest.mark.parametrize(("command", "label"), [
    (["uv", "run", "project-tool-not-on-path"], "uv run"),
    (["poetry", "run", "project-tool-not-on-path", "--check"], "poetry run"),
])
def test_project_runners_provide_their_own_commands(
    skill: Path, command: list[str], label: str
) -> None:
    entrypoint, explanation = reaches(command, skill, "fixtures")
    assert entrypoint is None
    assert explanation == (f"{label} project-tool-not-on-path: project-tool-not-on-path is "
                           "neither on PATH nor installed in a .venv of the skill directory")
    make_script(skill / ".venv" / "bin", "project-tool-not-on-path")
    entrypoint, explanation = reaches(command, skill, "fixtures")
    assert entrypoint == f"project command project-tool-not-on-path via {label}"
    assert explanation == (f"{label} runs project-tool-not-on-path from the skill's project "
                           f"environment ({skill}/.venv/bin/project-tool-not-on-path)")


def test_a_script_in_the_home_directory(skill: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(skill / "scripts"))
    entrypoint, explanation = reaches(["bash", "~/go"], skill, "fixtures")
    assert entrypoint == "bash script ~/go"
    assert str(skill / "scripts" / "go") in explanation


def test_a_path_too_long_for_the_file_system_does_not_exist(skill: Path) -> None:
    name = "./" + "a" * 5000
    assert reaches([name], skill) == (
        None, f"script {name} does not exist (looked in {skill})"
    )


def test_the_same_explanation_is_given_once(skill: Path) -> None:
    assert reaches(["bash", "-c", "echo a; echo a"], skill) == (
        None, "echo a reaches no entrypoint: echo is a constant builtin"
    )


def test_explanation_covers_every_simple_command(skill: Path) -> None:
    entrypoint, explanation = reaches(
        ["bash", "-c", "echo start; ./missing.sh"], skill
    )
    assert entrypoint is None
    assert "echo is a constant builtin" in explanation
    assert "./missing.sh does not exist" in explanation


def test_absolute_interpreter_path_without_script_is_not_real_world(skill: Path) -> None:
    assert reaches(["/usr/bin/python3", "-c", "pass"], skill)[0] is None


def test_absolute_script_path(skill: Path) -> None:
    entrypoint, _ = reaches([str(skill / "run.sh")], skill, "fixtures")
    assert entrypoint is not None


# --------------------------------------------------------------------------------------------
# fixture_stub_inputs
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "flagged"),
    [
        (["./run.sh", "fixtures/sample.json"], ["fixtures/sample.json"]),
        (["./run.sh", "../fixtures/x"], ["../fixtures/x"]),
        (["./run.sh", "/abs/skill/fixtures/in.csv"], ["/abs/skill/fixtures/in.csv"]),
        (["./run.sh", "data/mock_response.json"], ["data/mock_response.json"]),
        (["./run.sh", "--input", "stub.json"], ["stub.json"]),
        (["./run.sh", "--input=stub.json"], ["--input=stub.json"]),
        (["./run.sh", "--mock"], ["--mock"]),
        (["./run.sh", "--use-fake-llm"], ["--use-fake-llm"]),
        (["./run.sh", "--stub-server=http://localhost"], ["--stub-server=http://localhost"]),
        (["./run.sh", "mocks/api"], ["mocks/api"]),
        (["./run.sh", "MockServer.py"], ["MockServer.py"]),
        (["./run.sh", "fakes/user.yaml"], ["fakes/user.yaml"]),
        (["./run.sh", "__fixtures__/a.json"], ["__fixtures__/a.json"]),
        (["bash", "-c", "./run.sh fixtures/a.json"], ["fixtures/a.json"]),
        (["bash", "-c", "./run.sh < fixtures/in.txt"], ["fixtures/in.txt"]),
        (["bash", "-c", "INPUT=fixtures/x.json ./run.sh"], ["fixtures/x.json"]),
        (["env", "DATA=stub.json", "./run.sh"], ["stub.json"]),
        (["sudo", "DATA=fixtures/x.json", "./run.sh"], ["fixtures/x.json"]),
        (["bash", "-c", './run.sh "$1"', "_", "fixtures/a.json"], ["fixtures/a.json"]),
        (["bash", "-c", "./run.sh $(cat fixtures/list)"], ["fixtures/list"]),
        (["bash", "-c", "while read l; do ./run.sh $l; done < fixtures/names"],
         ["fixtures/names"]),
        (["python3", "-c", "open('fixtures/x.json')"], ["open('fixtures/x.json')"]),
        (["./run.sh", "fixtures/a.json", "fixtures/a.json"], ["fixtures/a.json"]),
    ],
)
def test_stub_inputs_are_flagged(command: list[str], flagged: list[str]) -> None:
    assert fixture_stub_inputs(command) == flagged


@pytest.mark.parametrize(
    "command",
    [
        ["./run.sh", "Ada"],
        ["./run.sh", "mockingbird"],
        ["./run.sh", "mockingbird.txt"],
        ["./run.sh", "fake"],
        ["./run.sh", "stub"],
        ["./run.sh", "--no-mock"],
        ["./run.sh", "--without-stubs"],
        ["./run.sh", "data/real.json"],
        ["./run.sh", "https://example.org/api"],
        ["python3", "-c", "import unittest.mock"],
        ["bash", "../run.sh", "Ada"],
        ["bash", "-c", "./run.sh > fixtures/out.log"],
        ["./run.sh", "--fixtures-dir-is-not-a-path"],
        ["./run.sh", "-5"],
    ],
)
def test_clean_inputs_are_not_flagged(command: list[str]) -> None:
    assert fixture_stub_inputs(command) == []


# --------------------------------------------------------------------------------------------
# sampling
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "samples", "reasons"),
    [
        (["./run.sh", "--samples=5"], 5, ("--samples=5",)),
        (["./run.sh", "--samples", "200"], 200, ("--samples 200",)),
        (["./run.sh", "--samples", "3", "--samples=200"], 200, ("--samples 3", "--samples=200")),
        (["./run.sh", "--samples", "N"], None, ("--samples N",)),
        (["./run.sh", "--seed", "{random_seed}"], None, ("--seed {random_seed}",)),
        (["./run.sh", "--seed={random_seed}"], None, ("--seed={random_seed}",)),
        (["bash", "-c", "./run.sh --samples 7"], 7, ("--samples 7",)),
        (["bash", "-c", "./run.sh --seed $(date +%s)"], None, ("--seed $(date +%s)",)),
        (["bash", "-c", "./run.sh --seed `date +%N`"], None, ("--seed `date +%N`",)),
        (["bash", "-c", "./run.sh --seed $EPOCHREALTIME"], None, ("--seed $EPOCHREALTIME",)),
        (["bash", "-c", "./run.sh --seed=$SRANDOM"], None, ("--seed=$SRANDOM", "shell $SRANDOM")),
        (["bash", "-c", "./run.sh --seed {random_seed}"], None, ("--seed {random_seed}",)),
        (["bash", "-c", "N=$RANDOM; ./run.sh $N"], None, ("shell $RANDOM",)),
        (["bash", "-c", "./run.sh ${RANDOM}"], None, ("shell $RANDOM",)),
        (["bash", "-c", "./run.sh $(( RANDOM % 6 ))"], None, ("shell $RANDOM",)),
        (["sh", "-c", "bash -c './run.sh $RANDOM'"], None, ("shell $RANDOM",)),
    ],
)
def test_non_deterministic(
    command: list[str], samples: int | None, reasons: tuple[str, ...]
) -> None:
    result = sampling(command)
    assert result == Sampling(non_deterministic=True, samples=samples, reasons=reasons)


def test_seed_random_in_a_shell_script() -> None:
    result = sampling(["bash", "-c", "x --seed $RANDOM"])
    assert result.non_deterministic
    assert result.samples is None
    assert "--seed $RANDOM" in result.reasons
    assert "shell $RANDOM" in result.reasons


@pytest.mark.parametrize(
    "command",
    [
        ["./run.sh"],
        ["./run.sh", "--seed", "7"],
        ["./run.sh", "--seed=7"],
        ["bash", "-c", "./run.sh --seed 7"],
        # argv words are not shell-expanded: without a shell $RANDOM is literal text.
        ["./run.sh", "--seed", "$RANDOM"],
        ["./run.sh", "$RANDOM"],
        ["./run.sh", "--seed", "$(date)"],
        ["bash", "-c", "./run.sh --seed $SEED"],
        ["bash", "-c", "echo RANDOM"],
        ["./run.sh", "--samples"],
    ],
)
def test_deterministic(command: list[str]) -> None:
    assert sampling(command) == Sampling(non_deterministic=False, samples=None, reasons=())


def test_random_seed_placeholder_anywhere_varies() -> None:
    result = sampling(["env", "SEED={random_seed}", "./run.sh"])
    assert result.non_deterministic
    assert any("{random_seed}" in reason for reason in result.reasons)


# --------------------------------------------------------------------------------------------
# Robustness
# --------------------------------------------------------------------------------------------

# Fragments that exercise the parser: operators, quotes, substitutions, keywords, heredocs.
_FRAGMENTS = [
    *"abc -./$(){}[]`'\"\\;&|<>#=\n\t*~!0129",
    "bash -c ", "sh -lc '", "$(", "${", "$((", "<<EOF\n", "\nEOF\n", "<(", "case ", " in ",
    " esac", "if ", " then ", " fi", "for ", " do ", " done", "[[ ", " ]]", "((", "))", "f() ",
    "env -S ", "eval ", "cd ", "2>&1", "--seed ", "--samples=", "$RANDOM", "{random_seed}",
    "fixtures/", "mock_", ".json",
]
_shellish = st.lists(st.sampled_from(_FRAGMENTS), max_size=25).map("".join)
_words = st.one_of(
    st.text(max_size=30),
    _shellish,
    st.sampled_from(["bash", "sh", "-c", "-lc", "-o", "env", "-S", "-C", "eval", "timeout"]),
)
_argvs = st.lists(_words, max_size=8)


@settings(max_examples=400, deadline=None)
@given(_argvs)
def test_analysis_never_fails_unexpectedly(argv: list[str]) -> None:
    for analyse in (simple_commands, triviality, sampling, fixture_stub_inputs):
        try:
            result = analyse(argv)
        except CommandParseError as exc:
            assert str(exc)
            continue
        if analyse is simple_commands:
            assert isinstance(result, list)
            assert all(isinstance(command, SimpleCommand) for command in result)


@pytest.mark.parametrize("argv", [
    ["bash", "-n", "./run.sh"],
    ["sh", "-n", "-c", "./run.sh"],
    ["bash", "-ne", "-c", "./run.sh"],
    ["bash", "-o", "pipefail", "-o", "noexec", "./run.sh"],
    ["bash", "-c", "bash -n ./run.sh"],
])
def test_a_shell_that_only_checks_syntax_runs_nothing(argv: list[str]) -> None:
    assert argvs(argv) == []


def test_a_shell_with_other_options_still_runs_its_script() -> None:
    assert argvs(["bash", "-o", "pipefail", "-e", "./run.sh"]) == [
        ("bash", "-o", "pipefail", "-e", "./run.sh")]
    assert argvs(["bash", "--norc", "-c", "./run.sh"]) == [("./run.sh",)]


@pytest.mark.parametrize(("script", "expected"), [
    ("trap './run.sh \"$(cat canned.txt)\"' EXIT; ./run.sh Ada",
     [("trap", './run.sh "$(cat canned.txt)"', "EXIT"), ("cat", "canned.txt"),
      ("./run.sh", "$(cat canned.txt)"), ("./run.sh", "Ada")]),
    ("trap - EXIT; ./run.sh", [("trap", "-", "EXIT"), ("./run.sh",)]),
])
def test_a_trap_action_may_run(script: str, expected: list[tuple[str, ...]]) -> None:
    """It runs on its signal or at exit: what it does (feed the skill canned data, say) is
    judged like the rest of the script."""
    assert argvs(["bash", "-c", script]) == expected


def test_brace_expansions_are_bounded(tmp_path: Path) -> None:
    """Forty brace groups make 2**40 words: the stub check looks at a bounded number."""
    skill = tmp_path / "skill"
    (skill / "fixtures").mkdir(parents=True)
    (skill / "fixtures" / "a.csv").write_text("x\n")
    word = "{a,b}" * 40
    assert fixture_stub_inputs(["./run.sh", word], skill / "fixtures", skill) == []
    assert fixture_stub_inputs(["./run.sh", "{a,b}.csv"], skill / "fixtures", skill) == [
        "{a,b}.csv"]


def test_the_walk_knows_where_each_command_writes_its_output() -> None:
    walker = walk(["bash", "-c", "cd sub && bash -c 'sort x; cat y' > out.json; echo hi; "
                   "{ echo a; echo b; } > group.txt; printf c | tee t.txt"])
    outputs = {found.command.argv[0]: found.outputs for found in walker.found}
    # A redirection of a shell holds the output of every command its script runs.
    assert outputs["sort"] == outputs["cat"] == (Output("out.json", "sub"),)
    assert outputs["echo"] == ()
    assert walker.written == [
        # After cd, sort, cat and three echos: the group's commands come before the position,
        # and tee's own command at it.
        Written(Output("group.txt", "sub"), ("echo", "echo"), 6),
        Written(Output("t.txt", "sub"), ("printf",), 7),
    ]
