"""Structural judgement of fixture commands for the anti-slush contract.

A fixture case's ``command`` is an argv list that the runner executes without a shell.  The
anti-slush contract refuses fixtures whose commands prove nothing (``echo ok``), only pretend
to reach the skill (``echo run.sh``), feed the command canned stub data, or sample at random.
Judging those by substring was easy to fool, so this module first flattens a command into
*simple commands*, the way a shell would run them, and judges those:

* shells invoked with ``-c`` (``bash -lc``, ``/bin/sh -ec``, ``bash -o pipefail -c`` ...) are
  unwrapped and their script is parsed, recursively;
* prefixes that only change how a program runs (``env``, ``exec``, ``command``, ``nohup``,
  ``nice``, ``time``, ``timeout``, ``setsid``, ``stdbuf``, ``sudo``) are peeled off;
* scripts are split on ``;`` ``&&`` ``||`` ``|`` ``&`` ``(`` ``)`` and newlines, redirections
  and their targets are removed, comments, heredoc bodies and shell keywords are skipped, and
  command substitutions (``$(...)``, backquotes, ``<(...)``) contribute their own commands.

The module is pure (no pytest import) so the loader, the CLI and the plugin can share it.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple


@dataclass(frozen=True)
class SimpleCommand:
    """One program invocation: its words after shell and prefix unwrapping."""

    argv: tuple[str, ...]
    origin: str  # "argv" (the fixture's own argv) or "shell script" (parsed from -c/eval)


class CommandParseError(ValueError):
    """A command (or a shell script inside it) that cannot be analysed, with the reason."""


@dataclass(frozen=True)
class Sampling:
    """Whether a command's result may differ between runs by design, and why."""

    non_deterministic: bool
    samples: int | None
    reasons: tuple[str, ...]


ORIGIN_ARGV = "argv"
ORIGIN_SCRIPT = "shell script"

# Deep nesting only comes from generated or hostile input; a cap keeps recursion bounded.
_MAX_DEPTH = 32
# Re-parsing substituted text can repeat work; a global budget keeps analysis linear-ish.
_MAX_STEPS = 20_000
# shlex builds tokens by string concatenation, quadratic in a word's length: cap the input.
_MAX_SCRIPT = 100_000

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash"})

# Commands whose outcome is fixed by their literal arguments or by static files: running only
# these exercises nothing of the skill.  The first group is the contract's list; the second
# adds shell builtins that merely change shell state and pure look-ups of other programs.
_CONSTANT = frozenset(
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
# Prefix commands are peeled off when they wrap a command; one that is still argv[0] after
# unwrapping wraps nothing (``env`` alone prints the environment, ``command -v x`` looks up).
_PREFIXES = frozenset(
    {
        "env", "exec", "command", "builtin", "nohup", "nice", "time", "timeout", "setsid",
        "stdbuf", "sudo", "doas",
    }
)

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")

# Characters the shell treats as operators.  A newline is one too: it ends a command exactly
# like ``;``.  shlex would treat it as whitespace, so it is moved from whitespace to punctuation.
_PUNCT = "();<>|&\n"
_OPERATORS = (
    ";;&", "&>>", "<<<", "&&", "||", ";;", ";&", "|&", ">>", ">&", "<&", "<>", ">|", "&>",
    "<<", "((", "))", ";", "&", "|", "(", ")", "<", ">", "\n",
)
_SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", "\n", ";;", ";&", ";;&"})
_CASE_ENDS = frozenset({";;", ";&", ";;&"})
_REDIRECTIONS = frozenset({"<", ">", ">>", ">|", "<>", "<&", ">&", "&>", "&>>", "<<", "<<<"})
_INPUT_REDIRECTIONS = frozenset({"<", "<>"})
_KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "coproc"}
)
# Marks a placeholder for text the pre-pass took out of the script before shlex saw it.  NUL
# cannot occur in a real argv (execve cannot pass it), so it never collides with user text.
_PLACEHOLDER = re.compile("\x00(\\d+)\x00")


# --------------------------------------------------------------------------------------------
# Script tokenising: a quote-aware pre-pass for what shlex does not know, then shlex itself.
# --------------------------------------------------------------------------------------------


class _Piece(NamedTuple):
    display: str  # text shown in the word where the piece stood
    script: str | None  # for command/process substitutions: the commands they run


class _Tok(NamedTuple):
    op: str | None  # the operator, or None for a word
    word: str
    scripts: tuple[str, ...]  # substitutions inside the word


def _short(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _find_close(text: str, start: int, depth: int, what: str, pair: str = "()") -> int:
    """Index of the bracket that closes ``depth`` open ones of ``pair``, skipping quoted text."""
    opening, closing = pair[0], pair[1]
    i = start
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                break
            i = end + 1
            continue
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            continue
        if c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise CommandParseError(f"unterminated {what} in shell script {_short(text)}")


class _PrePass:
    """Rewrites a script so that shlex can split it faithfully.

    shlex knows quotes and escapes but not the rest of the shell's lexical rules, so this pass
    removes or encodes what it would get wrong: line continuations, ``#`` comments (shlex
    would also cut ``a#b`` and swallow the newline ending the comment), heredoc bodies,
    file-descriptor numbers before redirections (``2>&1``), quoted operator characters (a
    quoted ``;`` must not end a command), and ``$(...)``/``${...}``/backquotes/``<(...)``,
    which may hold spaces and quotes of their own.  Encoded text becomes a NUL-delimited
    placeholder that shlex keeps inside its word and :func:`_decode` restores.
    """

    def __init__(self, script: str) -> None:
        self.src = script
        self.out: list[str] = []
        self.pieces: list[_Piece] = []
        self.heredocs: list[tuple[str, bool]] = []

    def _emit(self, text: str) -> None:
        self.out.append(text)

    def _piece(self, display: str, script: str | None = None) -> None:
        self.pieces.append(_Piece(display, script))
        self.out.append(f"\x00{len(self.pieces) - 1}\x00")

    def _at_word_start(self) -> bool:
        if not self.out:
            return True
        last = self.out[-1][-1]
        return last in " \t\r" or last in _PUNCT

    def run(self) -> tuple[str, list[_Piece]]:
        src = self.src
        n = len(src)
        i = 0
        quote = ""
        while i < n:
            c = src[i]
            if quote == "'":
                if c == "'":
                    quote = ""
                    self._emit(c)
                elif c in _PUNCT:
                    self._piece(c)
                else:
                    self._emit(c)
                i += 1
            elif c == "\\":
                i = self._backslash(i, quote)
            elif quote == '"':
                if c == '"':
                    quote = ""
                    self._emit(c)
                    i += 1
                elif c == "$":
                    i = self._dollar(i, quoted=True)
                elif c == "`":
                    i = self._backquote(i)
                else:
                    if c in _PUNCT:
                        self._piece(c)
                    else:
                        self._emit(c)
                    i += 1
            else:
                i, quote = self._unquoted(i)
        if quote:
            kind = "single" if quote == "'" else "double"
            raise CommandParseError(
                f"unbalanced {kind} quote ({quote}) in shell script {_short(src)}"
            )
        return "".join(self.out), self.pieces

    def _backslash(self, i: int, quote: str) -> int:
        src = self.src
        nxt = src[i + 1] if i + 1 < len(src) else ""
        if nxt == "\n":  # line continuation: the shell joins the lines
            return i + 2
        if not nxt:  # a trailing backslash stays literal in the shell
            self._piece("\\")
            return i + 1
        if quote == '"':
            if nxt in "$`":  # escaped inside double quotes: literal, starts no substitution
                self._emit(nxt)
            elif nxt in _PUNCT:
                self._emit("\\")
                self._piece(nxt)
            else:  # shlex applies POSIX double-quote escaping to the rest
                self._emit("\\" + nxt)
        elif nxt in _PUNCT:
            self._piece(nxt)
        else:
            self._emit("\\" + nxt)
        return i + 2

    def _unquoted(self, i: int) -> tuple[int, str]:
        src = self.src
        c = src[i]
        if c in "'\"":
            self._emit(c)
            return i + 1, c
        if c == "#" and self._at_word_start():
            end = src.find("\n", i)
            return (len(src) if end < 0 else end), ""
        if c.isdigit() and self._at_word_start():
            j = i
            while j < len(src) and src[j].isdigit():
                j += 1
            if j < len(src) and src[j] in "<>":
                return j, ""  # "2>&1": the fd number is part of the operator, not a word
            self._emit(src[i:j])
            return j, ""
        if c == "$":
            return self._dollar(i, quoted=False), ""
        if c == "`":
            return self._backquote(i), ""
        if c in "<>" and src.startswith("(", i + 1):
            end = _find_close(src, i + 2, 1, "process substitution")
            self._piece(src[i : end + 1], src[i + 2 : end])
            return end + 1, ""
        if src.startswith("<<<", i):
            self._emit("<<<")
            return i + 3, ""
        if src.startswith("<<", i):
            return self._heredoc(i), ""
        self._emit(c)
        if c == "\n" and self.heredocs:
            return self._skip_heredoc_bodies(i + 1), ""
        return i + 1, ""

    def _dollar(self, i: int, quoted: bool) -> int:
        src = self.src
        if src.startswith("$((", i):
            end = _find_close(src, i + 3, 2, "arithmetic expansion $((")
            self._piece(src[i : end + 1])
            return end + 1
        if src.startswith("$(", i):
            end = _find_close(src, i + 2, 1, "command substitution $(")
            self._piece(src[i : end + 1], src[i + 2 : end])
            return end + 1
        if src.startswith("${", i):
            end = _find_close(src, i + 2, 1, "${...} expansion", "{}")
            self._piece(src[i : end + 1])
            return end + 1
        if not quoted and src.startswith("$'", i):
            return self._ansi_c(i)
        self._emit("$")
        return i + 1

    def _ansi_c(self, i: int) -> int:
        src = self.src
        escapes = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "e": "\x1b"}
        buf: list[str] = []
        j = i + 2
        while j < len(src):
            ch = src[j]
            if ch == "\\" and j + 1 < len(src):
                buf.append(escapes.get(src[j + 1], "\\" + src[j + 1]))
                j += 2
            elif ch == "'":
                self._piece("".join(buf))
                return j + 1
            else:
                buf.append(ch)
                j += 1
        raise CommandParseError(f"unbalanced single quote ($') in shell script {_short(src)}")

    def _backquote(self, i: int) -> int:
        src = self.src
        buf: list[str] = []
        j = i + 1
        while j < len(src):
            ch = src[j]
            if ch == "\\" and j + 1 < len(src):
                nxt = src[j + 1]
                buf.append(nxt if nxt in "`$\\" else ch + nxt)
                j += 2
            elif ch == "`":
                self._piece(src[i : j + 1], "".join(buf))
                return j + 1
            else:
                buf.append(ch)
                j += 1
        raise CommandParseError(f"unbalanced backquote (`) in shell script {_short(src)}")

    def _heredoc(self, i: int) -> int:
        src = self.src
        j = i + 2
        strip_tabs = src.startswith("-", j)
        if strip_tabs:
            j += 1
        while j < len(src) and src[j] in " \t":
            j += 1
        delim: list[str] = []
        while j < len(src) and src[j] not in " \t\r" + _PUNCT:
            ch = src[j]
            if ch in "'\"":
                end = src.find(ch, j + 1)
                if end < 0:
                    raise CommandParseError(
                        f"unbalanced quote in heredoc delimiter in shell script {_short(src)}"
                    )
                delim.append(src[j + 1 : end])
                j = end + 1
            elif ch == "\\" and j + 1 < len(src):
                delim.append(src[j + 1])
                j += 2
            else:
                delim.append(ch)
                j += 1
        # The delimiter is the redirection's target; "_" stands in for it so the parser drops
        # one word, and the body (data, not commands) is skipped at the next newline.
        self._emit("<< _ ")
        if delim:
            self.heredocs.append(("".join(delim), strip_tabs))
        return j

    def _skip_heredoc_bodies(self, i: int) -> int:
        src = self.src
        for delim, strip_tabs in self.heredocs:
            while i < len(src):
                end = src.find("\n", i)
                line = src[i:] if end < 0 else src[i:end]
                i = len(src) if end < 0 else end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    break
        self.heredocs.clear()
        return i


def _split_operators(run: str) -> list[str]:
    """Split a run of operator characters (``;;\\n``, ``2>&1``'s ``>&``) into operators."""
    ops: list[str] = []
    i = 0
    while i < len(run):
        for op in _OPERATORS:
            if run.startswith(op, i):
                ops.append(op)
                i += len(op)
                break
    return ops


def _decode(raw: str, pieces: list[_Piece]) -> tuple[str, tuple[str, ...]]:
    scripts: list[str] = []

    def restore(match: re.Match[str]) -> str:
        piece = pieces[int(match.group(1))]
        if piece.script is not None:
            scripts.append(piece.script)
        return piece.display

    return _PLACEHOLDER.sub(restore, raw), tuple(scripts)


def _tokenize(script: str) -> list[_Tok]:
    text, pieces = _PrePass(script).run()
    lexer = shlex.shlex(text, posix=True, punctuation_chars=_PUNCT)
    lexer.whitespace = " \t\r"  # newline is an operator here, not whitespace
    lexer.whitespace_split = True  # words end only at blanks and operators, as in the shell
    lexer.commenters = ""  # comments were removed by the pre-pass, which knows word starts
    tokens: list[_Tok] = []
    try:
        while (raw := lexer.get_token()) is not None:
            if raw and all(ch in _PUNCT for ch in raw):
                tokens.extend(_Tok(op, "", ()) for op in _split_operators(raw))
            else:
                word, scripts = _decode(raw, pieces)
                tokens.append(_Tok(None, word, scripts))
    except ValueError as exc:  # shlex reports unbalanced quoting this way
        raise CommandParseError(f"cannot split shell script {_short(script)}: {exc}") from exc
    return tokens


# --------------------------------------------------------------------------------------------
# Script parsing: tokens to simple commands, subshell scopes and substitutions.
# --------------------------------------------------------------------------------------------


@dataclass
class _RawCommand:
    words: list[str] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)  # substitutions, run before the command
    inputs: list[str] = field(default_factory=list)  # targets of input redirections

    def __bool__(self) -> bool:
        return bool(self.words or self.scripts or self.inputs)


_PUSH = "push"  # a subshell opens: a cd inside it does not leak out
_POP = "pop"
_Event = _RawCommand | str


class _Parser:
    """Turns tokens into simple commands, skipping keywords, case patterns and arithmetic."""

    def __init__(self, tokens: list[_Tok]) -> None:
        self.toks = tokens
        self.i = 0
        self.events: list[_Event] = []
        self.cur = _RawCommand()
        self.stack: list[str] = []  # "(", "case-pattern", "case-body"
        self.functions: set[str] = set()  # names defined here: calling one runs its body

    def parse(self) -> list[_Event]:
        while self.i < len(self.toks):
            tok = self.toks[self.i]
            self.i += 1
            if self.stack and self.stack[-1] == "case-pattern":
                self._case_pattern(tok)
            elif tok.op is not None:
                self._operator(tok.op)
            else:
                self._word(tok)
        self._finish()
        return self.events

    def _finish(self) -> None:
        if self.cur:
            self.events.append(self.cur)
        self.cur = _RawCommand()

    def _next(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def _word(self, tok: _Tok) -> None:
        w = tok.word
        if not self.cur.words:  # command position: keywords are recognised only here
            if w in _KEYWORDS:
                return
            if w == "esac":
                if self.stack and self.stack[-1] == "case-body":
                    self.stack.pop()
                return
            if w == "case":
                self._skip_header(end_word="in", at_separator=False)
                self.stack.append("case-pattern")
                return
            if w in ("for", "select"):
                self._skip_header(end_word="do", at_separator=True)
                return
            if w == "function":
                nxt = self._next()
                if nxt is not None and nxt.op is None:
                    self.functions.add(nxt.word)
                    self.i += 1
                return
            if w == "[[":
                self._double_bracket()
                return
        self.cur.words.append(w)
        self.cur.scripts.extend(tok.scripts)

    def _skip_header(self, end_word: str, at_separator: bool) -> None:
        """Skip ``for x in ...`` / ``case WORD in``: not commands, but substitutions run."""
        header = _RawCommand()
        while self.i < len(self.toks):
            tok = self.toks[self.i]
            self.i += 1
            if tok.op is not None:
                if at_separator and tok.op in (";", "\n"):
                    break
                if tok.op == "((":
                    self._skip_arithmetic()
                continue
            if tok.word == end_word:
                break
            header.scripts.extend(tok.scripts)
        if header:
            self.events.append(header)

    def _case_pattern(self, tok: _Tok) -> None:
        if tok.op == ")":
            self.stack[-1] = "case-body"
        elif tok.op is None and tok.word == "esac":
            self.stack.pop()

    def _double_bracket(self) -> None:
        # Inside [[ ]] the characters < > && || ( ) are operands of the test, not operators.
        self.cur.words.append("[[")
        while self.i < len(self.toks):
            tok = self.toks[self.i]
            self.i += 1
            self.cur.words.append(tok.op if tok.op is not None else tok.word)
            self.cur.scripts.extend(tok.scripts)
            if tok.op is None and tok.word == "]]":
                return

    def _skip_arithmetic(self) -> None:
        depth = 2
        while self.i < len(self.toks) and depth > 0:
            tok = self.toks[self.i]
            self.i += 1
            if tok.op is not None:
                depth += tok.op.count("(") - tok.op.count(")")
            else:
                self.cur.scripts.extend(tok.scripts)

    def _operator(self, op: str) -> None:
        if op in _SEPARATORS:
            self._finish()
            if op in _CASE_ENDS and self.stack and self.stack[-1] == "case-body":
                self.stack[-1] = "case-pattern"
        elif op in _REDIRECTIONS:
            target = self._next()
            if target is not None and target.op is None:
                self.i += 1
                self.cur.scripts.extend(target.scripts)
                if op in _INPUT_REDIRECTIONS:
                    self.cur.inputs.append(target.word)
        elif op == "((" and not self.cur.words:
            self._skip_arithmetic()  # (( i++ )) is arithmetic, not a command
        elif op in ("(", "(("):
            for _ in op:
                self._open_paren()
        else:  # ")" or "))"
            for _ in op:
                self._close_paren()

    def _open_paren(self) -> None:
        words = self.cur.words
        if words and _ASSIGNMENT.fullmatch(words[-1]):  # arr=(a b c) is an array assignment
            depth = 1
            while self.i < len(self.toks) and depth > 0:
                tok = self.toks[self.i]
                self.i += 1
                if tok.op is not None:
                    depth += tok.op.count("(") - tok.op.count(")")
                else:
                    self.cur.scripts.extend(tok.scripts)
            return
        nxt = self._next()
        if len(words) == 1 and nxt is not None and nxt.op == ")":
            # "name () { ...; }" defines a function: the name is not a command.
            self.functions.add(words[0])
            self.cur.words = []
            self.i += 1
            return
        self._finish()
        self.stack.append("(")
        self.events.append(_PUSH)

    def _close_paren(self) -> None:
        self._finish()
        if self.stack and self.stack[-1] == "(":
            self.stack.pop()
            self.events.append(_POP)


# --------------------------------------------------------------------------------------------
# Unwrapping: shells with -c, prefixes, and the walk that collects simple commands.
# --------------------------------------------------------------------------------------------


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _skip_options(
    words: Sequence[str], start: int, short_arg: str = "", long_arg: Iterable[str] = ()
) -> int:
    """Index of the first operand after options; ``short_arg`` letters take a value."""
    long_with_value = frozenset(long_arg)
    i = start
    while i < len(words):
        w = words[i]
        if w == "--":
            return i + 1
        if w.startswith("--"):
            i += 2 if ("=" not in w and w in long_with_value) else 1
            continue
        if w.startswith("-") and len(w) > 1:
            i += 1
            for pos, ch in enumerate(w[1:], start=1):
                if ch in short_arg:
                    if pos == len(w) - 1:
                        i += 1  # the value is the next word ("-n 5"), else it is attached
                    break
            continue
        return i
    return i


def _shell_script(words: Sequence[str]) -> tuple[str | None, list[str]]:
    """For ``sh [options] -c SCRIPT [ARG0 ARGS...]``: the script and its positional args.

    Returns ``(None, [])`` for a shell that runs a script file or reads stdin.
    """
    i = 1
    has_c = False
    while i < len(words):
        w = words[i]
        if w in ("--", "-"):
            i += 1
            break
        if w.startswith("--"):
            i += 2 if w in ("--rcfile", "--init-file") else 1
            continue
        if len(w) > 1 and w[0] in "-+":
            i += 1
            for ch in w[1:]:
                if ch == "c" and w[0] == "-":
                    has_c = True
                elif ch in "oO":  # -o pipefail, +o xtrace, -O extglob: the option name follows
                    i += 1
            continue
        break
    if not has_c:
        return None, []
    if i >= len(words):
        raise CommandParseError(f"{_basename(words[0])} -c is given no script to run")
    return words[i], list(words[i + 1 :])


class _Unwrapped(NamedTuple):
    chdirs: list[str | None]  # env -C directories, applied in order (None: unknowable)
    values: list[str]  # values of VAR=value words given to env/sudo


def _unwrap_env(words: list[str], out: _Unwrapped) -> list[str] | None:
    i = 1
    while i < len(words):
        w = words[i]
        if w == "--":
            i += 1
            break
        if _ASSIGNMENT.match(w):
            out.values.append(w.partition("=")[2])
            i += 1
            continue
        split_string: str | None = None
        if w in ("-S", "--split-string"):
            split_string = words[i + 1] if i + 1 < len(words) else ""
            i += 2
        elif w.startswith("--split-string="):
            split_string = w.partition("=")[2]
            i += 1
        elif w.startswith("-S") and not w.startswith("--"):
            split_string = w[2:]
            i += 1
        if split_string is not None:
            # env -S "prog args" splits its argument into words: continue with those.
            if len(split_string) > _MAX_SCRIPT:
                raise CommandParseError("env -S string is too long to analyse")
            try:
                parts = shlex.split(split_string)
            except ValueError as exc:
                raise CommandParseError(f"cannot split env -S string: {exc}") from exc
            return ["env", *parts, *words[i:]]
        if w in ("-u", "--unset"):
            i += 2
        elif w in ("-C", "--chdir"):
            out.chdirs.append(words[i + 1] if i + 1 < len(words) else None)
            i += 2
        elif w.startswith("--chdir="):
            out.chdirs.append(w.partition("=")[2])
            i += 1
        elif w.startswith("-C") and not w.startswith("--"):
            out.chdirs.append(w[2:])
            i += 1
        elif w.startswith("-") and len(w) > 1:
            i += 2 if (not w.startswith("--") and w[-1] in "uC") else 1
        elif w == "-":
            i += 1
        else:
            break
    return words[i:] if i < len(words) else None


def _unwrap_prefix(words: list[str], out: _Unwrapped) -> list[str] | None:
    """The command a prefix such as ``nice -n 5 CMD`` wraps.

    None when ``words`` is no prefix or wraps nothing (``env`` alone prints the environment,
    so it stays a simple command of its own); ``[]`` for ``exec`` with only redirections.
    """
    base = _basename(words[0])
    if base == "env":
        return _unwrap_env(words, out)
    if base == "command":
        if any(w in ("-v", "-V") for w in words[1:]):
            return None  # command -v only looks a program up
        i = _skip_options(words, 1)
    elif base in ("nohup", "builtin", "setsid"):
        i = _skip_options(words, 1)
    elif base == "exec":
        i = _skip_options(words, 1, short_arg="a")
        if i >= len(words):
            return []  # exec with only redirections runs nothing
    elif base == "nice":
        i = _skip_options(words, 1, short_arg="n", long_arg=("--adjustment",))
    elif base == "time":
        i = _skip_options(words, 1, short_arg="fo", long_arg=("--format", "--output"))
    elif base == "timeout":
        i = _skip_options(words, 1, short_arg="sk", long_arg=("--signal", "--kill-after"))
        i += 1  # the duration
    elif base == "stdbuf":
        i = _skip_options(words, 1, short_arg="ioe", long_arg=("--input", "--output", "--error"))
    elif base in ("sudo", "doas"):
        i = _skip_options(
            words, 1, short_arg="ugCDprtUTR" if base == "sudo" else "uC",
            long_arg=("--user", "--group", "--chdir", "--prompt", "--role", "--type"),
        )
        while i < len(words) and _ASSIGNMENT.match(words[i]):
            out.values.append(words[i].partition("=")[2])
            i += 1
    else:
        return None
    return words[i:] if i < len(words) else None


@dataclass
class _Scope:
    """The working directory commands run in, relative to ``cwd`` (None: unknowable)."""

    workdir: str | None = "."

    def copy(self) -> _Scope:
        return _Scope(self.workdir)


def _join_dir(workdir: str | None, target: str | None) -> str | None:
    if workdir is None or target is None:
        return None
    if target.startswith("~"):
        target = os.path.expanduser(target)
    if not target or target.startswith("~") or any(ch in target for ch in "$`*?["):
        return None  # computed at run time: cannot tell where it leads
    if os.path.isabs(target):
        return os.path.normpath(target)
    return os.path.normpath(os.path.join(workdir, target))


def _cd_target(words: Sequence[str], workdir: str | None) -> str | None:
    base = _basename(words[0])
    if base == "popd":
        return None
    i = 1
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        i += 1
    if i >= len(words) or words[i] == "-" or words[i].startswith("+"):
        return None  # home directory, previous directory or the stack: not knowable here
    return _join_dir(workdir, words[i])


@dataclass(frozen=True)
class _Found:
    command: SimpleCommand
    workdir: str | None
    inputs: tuple[str, ...]


class _Walker:
    """Collects simple commands; also what feeds them data and the scripts it parsed."""

    def __init__(self) -> None:
        self.found: list[_Found] = []
        self.extra_inputs: list[str] = []
        self.scripts: list[str] = []
        self.steps = 0

    def _spend(self, depth: int) -> None:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise CommandParseError(
                f"command is too complex to analyse (more than {_MAX_STEPS} commands or scripts)"
            )
        if depth > _MAX_DEPTH:
            raise CommandParseError(
                f"command nests shells or substitutions more than {_MAX_DEPTH} levels deep"
            )

    def command(
        self,
        words: list[str],
        origin: str,
        depth: int,
        scope: _Scope,
        inputs: Sequence[str] = (),
    ) -> None:
        self._spend(depth)
        unwrapped = _Unwrapped([], [])
        current: list[str] | None = words
        while current:
            self._spend(depth)
            inner = _unwrap_prefix(current, unwrapped)
            if inner is None:
                break
            current = inner
        self.extra_inputs.extend(unwrapped.values)
        if not current:
            self.extra_inputs.extend(inputs)
            return
        workdir = scope.workdir
        for target in unwrapped.chdirs:
            workdir = _join_dir(workdir, target)
        base = _basename(current[0])
        if base in _SHELLS:
            script, positional = _shell_script(current)
            if script is not None:
                # The script's $0, $1... are data handed to it, like an input file.
                self.extra_inputs.extend(positional)
                self.extra_inputs.extend(inputs)
                self.script(script, depth + 1, _Scope(workdir))
                return
        if base == "eval" and origin == ORIGIN_SCRIPT:
            self.extra_inputs.extend(inputs)
            self.script(" ".join(current[1:]), depth + 1, scope)  # eval shares the shell
            return
        self.found.append(_Found(SimpleCommand(tuple(current), origin), workdir, tuple(inputs)))
        if origin == ORIGIN_SCRIPT and base in ("cd", "pushd", "popd"):
            scope.workdir = _cd_target(current, scope.workdir)

    def script(self, text: str, depth: int, scope: _Scope) -> None:
        self._spend(depth)
        if len(text) > _MAX_SCRIPT:
            raise CommandParseError(
                f"shell script is too long to analyse ({len(text)} characters, "
                f"limit {_MAX_SCRIPT})"
            )
        self.scripts.append(text)
        parser = _Parser(_tokenize(text))
        events = parser.parse()
        saved: list[_Scope] = []
        for event in events:
            if event == _PUSH:
                saved.append(scope)
                scope = scope.copy()
            elif event == _POP:
                if saved:
                    scope = saved.pop()
            elif isinstance(event, _RawCommand):
                for inner in event.scripts:  # substitutions run first, in a subshell
                    self.script(inner, depth + 1, scope.copy())
                words = list(event.words)
                while words and _ASSIGNMENT.match(words[0]):
                    self.extra_inputs.append(words.pop(0).partition("=")[2])
                if words and words[0] in parser.functions:
                    # Calling a function of the script: its body's commands are already
                    # collected where it was defined, the name itself runs nothing more.
                    self.extra_inputs.extend(words[1:])
                    self.extra_inputs.extend(event.inputs)
                elif words:
                    self.command(words, ORIGIN_SCRIPT, depth, scope, event.inputs)
                else:
                    self.extra_inputs.extend(event.inputs)


def _walk(argv: Sequence[str]) -> _Walker:
    if isinstance(argv, str):
        raise CommandParseError("a command must be an argv list of strings, not one string")
    words = list(argv)
    if not words:
        raise CommandParseError("the command is empty: argv needs at least the program")
    for index, word in enumerate(words):
        if not isinstance(word, str):
            raise CommandParseError(f"argv[{index}] is {type(word).__name__}, not a string")
        if "\x00" in word:
            raise CommandParseError(f"argv[{index}] contains a NUL byte, which no program gets")
    walker = _Walker()
    walker.command(words, ORIGIN_ARGV, 0, _Scope())
    return walker


def simple_commands(argv: Sequence[str]) -> list[SimpleCommand]:
    """Flatten ``argv`` into the simple commands it runs, in order.

    ``sh``/``bash``/``zsh``/``dash``/``ksh`` given ``-c`` (alone or in a flag cluster, after
    any other options) are replaced by the commands of their script, recursively; a shell
    running a script file stays one command.  Prefixes (``env``, ``exec``, ``command``,
    ``nohup``, ``nice``, ``time``, ``timeout``, ``setsid``, ``stdbuf``, ``sudo``) are peeled
    off, as are leading ``VAR=value`` words of script commands.  Raises
    :class:`CommandParseError` for an empty argv, a ``-c`` without script, unbalanced quotes
    or unterminated substitutions.
    """
    return [found.command for found in _walk(argv).found]


# --------------------------------------------------------------------------------------------
# Triviality
# --------------------------------------------------------------------------------------------


def _render(argv: Sequence[str], limit: int = 120) -> str:
    # Quote only where needed to stay unambiguous: users read this in rejection messages.
    text = " ".join(
        shlex.quote(w) if (not w or any(ch.isspace() or ch in "'\"" for ch in w)) else w
        for w in argv
    )
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_constant(command: SimpleCommand) -> bool:
    name = command.argv[0]
    if "/" in name and not name.startswith("/"):
        return False  # ./echo is the skill's own script, whatever its name
    base = _basename(name)
    return base in _CONSTANT or base in _PREFIXES


def triviality(argv: Sequence[str]) -> str | None:
    """None when the command does something; otherwise why it proves nothing.

    Trivial means every simple command (after unwrapping) is a constant builtin such as
    ``echo``/``printf``/``true``/``exit``/``test``/``cd``/``export``, or only reads static
    files (``cat``/``ls``/``pwd``/``head``/``tail``/``wc``), or nothing is left at all.
    """
    commands = simple_commands(argv)
    if not commands:
        return "trivial: the command runs nothing (only assignments, comments or redirections)"
    if any(not _is_constant(command) for command in commands):
        return None
    listed = "; ".join(_render(command.argv, 60) for command in commands[:6])
    if len(commands) > 6:
        listed += "; ..."
    return f"trivial: every simple command is a constant builtin ({listed})"


# --------------------------------------------------------------------------------------------
# Real-world entrypoints
# --------------------------------------------------------------------------------------------

_INTERPRETER = re.compile(
    r"(python|pypy|node|nodejs|ruby|perl|php|lua|luajit|tclsh|Rscript|fish"
    r"|sh|bash|zsh|dash|ksh|mksh|ash)(\d+(?:\.\d+)*)?"
)
_FAMILY = {"pypy": "python", "nodejs": "node", "luajit": "lua", **{s: "shell" for s in _SHELLS}}


@dataclass(frozen=True)
class _InterpreterOptions:
    inline: str = ""  # short options whose value is program text
    inline_long: frozenset[str] = frozenset()
    arg: str = ""  # short options that take a value
    arg_long: frozenset[str] = frozenset()
    module: str = ""  # short options naming a module to run
    script: str = ""  # short options naming the script file
    stdin: str = ""  # short options reading the program from stdin
    runner_long: frozenset[str] = frozenset()
    prefixes: str = "-"


_INTERPRETERS = {
    "python": _InterpreterOptions(inline="c", arg="WX", module="m"),
    "node": _InterpreterOptions(
        inline="ep", inline_long=frozenset({"--eval", "--print"}), arg="r",
        arg_long=frozenset({"--require", "--import", "--loader", "--experimental-loader",
                            "--input-type", "--conditions", "--title"}),
        runner_long=frozenset({"--test"}),
    ),
    "ruby": _InterpreterOptions(inline="e", arg="rIC"),
    "perl": _InterpreterOptions(inline="eE", arg="IM"),
    "php": _InterpreterOptions(inline="r", arg="cdz", script="f"),
    "lua": _InterpreterOptions(inline="e", arg="l"),
    "Rscript": _InterpreterOptions(inline="e"),
    "tclsh": _InterpreterOptions(),
    "fish": _InterpreterOptions(inline="c", inline_long=frozenset({"--command"})),
    "shell": _InterpreterOptions(
        inline="c", arg="oO", stdin="s",
        arg_long=frozenset({"--rcfile", "--init-file"}), prefixes="-+",
    ),
}

_RUNNERS = frozenset(
    {"pytest", "py.test", "tox", "nox", "bats", "jest", "vitest", "mocha", "ava", "rspec",
     "phpunit", "ctest", "nose2"}
)
_PYTHON_RUNNER_MODULES = frozenset({"pytest", "unittest", "nose2", "tox", "nox"})
_JS_RUNNERS = frozenset({"vitest", "jest", "mocha", "ava", "tap", "jasmine", "karma"})
# Tools whose first operand picks a test subcommand: "go test", "cargo test", ...
_TEST_SUBCOMMANDS = {
    "go": {"test"}, "cargo": {"test", "nextest"}, "dotnet": {"test"}, "mix": {"test"},
    "swift": {"test"}, "hatch": {"test"}, "deno": {"test"}, "bun": {"test"},
}
# Tools that take several goals anywhere on the line: "make lint test", "mvn clean verify".
_TEST_GOALS = {
    "make": {"test", "check", "tests"}, "gmake": {"test", "check", "tests"},
    "mvn": {"test", "verify"}, "gradle": {"test", "check"}, "gradlew": {"test", "check"},
}
_PROJECT_RUNNERS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "rye"})
_FETCHERS = frozenset({"curl", "wget", "http", "https", "httpie", "xh", "xhs"})
_URL = re.compile(r"https?://[^\s'\"]+")


class _Verdict(NamedTuple):
    entrypoint: str | None
    explanation: str


def _exists(path: Path, kind: str) -> bool:
    try:
        if kind == "file":
            return path.is_file()
        if kind == "dir":
            return path.is_dir()
        return path.exists()
    except (OSError, ValueError):  # e.g. a name too long for the file system
        return False


def _executable(path: Path) -> bool:
    try:
        return path.is_file() and os.access(path, os.X_OK)
    except (OSError, ValueError):
        return False


class _Judge:
    """Decides whether one simple command reaches a real entrypoint of the skill."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd

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

    def judge(self, found: _Found) -> _Verdict:
        argv = found.command.argv
        name = argv[0]
        base = _basename(name)
        family = self._family(base)
        known = (
            base in _CONSTANT or base in _PREFIXES or family is not None or base in _RUNNERS
            or base in _TEST_SUBCOMMANDS or base in _TEST_GOALS or base in _FETCHERS
            or base in _PROJECT_RUNNERS or base in ("source", ".", "npm", "pnpm", "yarn", "npx",
                                                    "pnpx", "bunx", "uvx")
        )
        if "/" in name and not known:
            return self._executable_path(name, found.workdir)
        if base in _CONSTANT or base in _PREFIXES:
            return self._constant(argv, base, found.workdir)
        if base in ("source", "."):
            if len(argv) < 2:
                return _Verdict(None, f"{_render(argv)} names no file to source")
            return self._script(argv, base, argv[1], found.workdir, "python")
        if family is not None:
            return self._interpreter(argv, base, family, found.workdir)
        verdict = self._runner(argv, base, found.workdir)
        if verdict is not None:
            return verdict
        if base in _FETCHERS:
            for word in argv[1:]:
                match = _URL.search(word)
                if match:
                    url = match.group(0)
                    return _Verdict(f"live URL {url}", f"{base} fetches the live URL {url}")
            return _Verdict(None, f"{_render(argv)} fetches no http:// or https:// URL")
        if "/" in name:
            return self._executable_path(name, found.workdir)
        return self._on_path(argv, found.workdir)

    @staticmethod
    def _family(base: str) -> str | None:
        match = _INTERPRETER.fullmatch(base)
        if match is None:
            return None
        return _FAMILY.get(match.group(1), match.group(1))

    def _constant(self, argv: tuple[str, ...], base: str, workdir: str | None) -> _Verdict:
        named = [a for a in argv[1:] if self._looks_like_entry(a, workdir)]
        if named:
            quoted = ", ".join(repr(a) for a in named[:3])
            role = "is only an argument" if len(named) == 1 else "are only arguments"
            return _Verdict(None, f"{_render(argv)} names no entrypoint: {quoted} {role} of {base}")
        if base in _PREFIXES:
            return _Verdict(None, f"{_render(argv)} reaches no entrypoint: it runs no program")
        return _Verdict(
            None, f"{_render(argv)} reaches no entrypoint: {base} is a constant builtin"
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
            return _Verdict(
                f"executable {name}", f"{name} is the executable file {os.path.normpath(path)}"
            )
        if _exists(path, "dir"):
            return _Verdict(None, f"{name} is a directory, not a script (looked in {where})")
        if _exists(path, "file"):
            return _Verdict(
                None,
                f"script {name} exists but is not executable (looked in {where}): "
                f"chmod +x it or run it through its interpreter",
            )
        return _Verdict(None, f"script {name} does not exist (looked in {where})")

    def _script(
        self, argv: Sequence[str], runner: str, script: str, workdir: str | None, family: str
    ) -> _Verdict:
        path, where = self._locate(script, workdir)
        if path is None:
            return _Verdict(None, f"cannot tell whether script {script} exists: it is in {where}")
        if _exists(path, "file") or (
            family == "python" and _exists(path / "__main__.py", "file")
        ):
            return _Verdict(
                f"{runner} script {script}",
                f"{runner} runs the script file {os.path.normpath(path)}",
            )
        return _Verdict(None, f"script {script} does not exist (looked in {where})")

    def _interpreter(
        self, argv: tuple[str, ...], base: str, family: str, workdir: str | None
    ) -> _Verdict:
        options = _INTERPRETERS[family]
        kind, value = _interpreter_target(options, argv[1:])
        if kind == "script":
            return self._script(argv, base, value, workdir, family)
        if kind == "module":
            return self._python_module(argv, base, value, workdir)
        if kind == "runner":
            return _Verdict(f"test runner {base} {value}", f"{base} {value} runs the test suite")
        if kind == "inline":
            return _Verdict(
                None, f"{_render(argv)} runs inline code ({value}), not a script of the skill"
            )
        if kind == "stdin":
            return _Verdict(None, f"{_render(argv)} reads its program from stdin, not a script")
        return _Verdict(None, f"{_render(argv)} names no entrypoint: {base} is given no script")

    def _python_module(
        self, argv: tuple[str, ...], base: str, module: str, workdir: str | None
    ) -> _Verdict:
        if module in _PYTHON_RUNNER_MODULES:
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
                        return _Verdict(
                            f"{base} module {module}", f"{base} runs the module file {candidate}"
                        )
        where = "a directory only known at run time" if directory is None else str(directory)
        return _Verdict(
            None,
            f"{_render(argv)}: module {module!r} is not a test runner and not found in {where}",
        )

    def _runner(self, argv: tuple[str, ...], base: str, workdir: str | None) -> _Verdict | None:
        """A verdict for test runners, package scripts and project runners; None otherwise."""
        operands = [w for w in argv[1:] if not w.startswith("-")]
        if base in _RUNNERS:
            return _Verdict(f"test runner {base}", f"{base} runs the test suite")
        if base in _TEST_SUBCOMMANDS:
            index = _skip_options(argv, 1)
            first = argv[index] if index < len(argv) else ""
            if first in _TEST_SUBCOMMANDS[base]:
                return _Verdict(f"test runner {base} {first}", f"{base} {first} runs the tests")
        if base in _TEST_GOALS:
            index = _skip_options(argv, 1, short_arg="CfIojW")
            goals = [w for w in argv[index:] if "=" not in w and not w.startswith("-")]
            for goal in goals:
                if goal in _TEST_GOALS[base] or goal.startswith(("test-", "test_", "check-")):
                    return _Verdict(f"test runner {base} {goal}", f"{base} {goal} runs the tests")
        if base in ("npm", "pnpm", "yarn", "bun"):
            verdict = self._package_script(argv, base, workdir)
            if verdict is not None:
                return verdict
        if base in ("npx", "pnpx", "bunx"):
            index = _skip_options(argv, 1, short_arg="p", long_arg=("--package",))
            tool = argv[index] if index < len(argv) else ""
            if tool in _JS_RUNNERS or (
                tool in ("playwright", "cypress") and {"test", "run"} & set(argv[index + 1 :])
            ):
                return _Verdict(f"test runner {base} {tool}", f"{tool} runs the test suite")
        if (base in _PROJECT_RUNNERS and operands[:1] == ["run"]) or base == "uvx":
            return self._project_run(argv, base, workdir)
        return None

    def _package_script(
        self, argv: tuple[str, ...], base: str, workdir: str | None
    ) -> _Verdict | None:
        value_options = ("--prefix", "--dir", "--cwd", "--workspace", "--filter")
        index = _skip_options(argv, 1, short_arg="CwF", long_arg=value_options)
        sub = argv[index] if index < len(argv) else ""
        rest = argv[index + 1 :]
        if sub in ("test", "t", "tst"):
            return _Verdict(f"test runner {base} {sub}", f"{base} {sub} runs the package's tests")
        if sub in ("run", "run-script"):
            script_index = _skip_options(rest, 0)
            script = rest[script_index] if script_index < len(rest) else ""
            if script.startswith("test"):
                return _Verdict(
                    f"test runner {base} {sub} {script}", f"{base} {sub} {script} runs the tests"
                )
            if base == "bun" and script:
                return self._script(argv, base, script, workdir, "node")
        if sub in ("exec", "dlx") and rest and rest[0] in _JS_RUNNERS:
            return _Verdict(f"test runner {base} {sub} {rest[0]}", f"{rest[0]} runs the tests")
        if base != "npm" and sub in _JS_RUNNERS:
            return _Verdict(f"test runner {base} {sub}", f"{sub} runs the test suite")
        return None

    def _project_run(self, argv: tuple[str, ...], base: str, workdir: str | None) -> _Verdict:
        # "uv run [options] CMD": judge CMD, which runs inside the project's environment.
        start = 1 if base == "uvx" else argv.index("run") + 1
        index = _skip_options(
            argv, start, short_arg="pw",
            long_arg=("--with", "--with-requirements", "--with-editable", "--python",
                      "--project", "--directory", "--package", "--extra", "--group",
                      "--env-file", "--index", "--index-url", "--extra-index-url", "--from"),
        )
        rest = argv[index:]
        label = f"{base} run" if base != "uvx" else base
        if not rest:
            return _Verdict(None, f"{_render(argv)} names no command for {label}")
        if rest[0].endswith(".py"):  # "uv run script.py" runs it with the project's python
            return self._script(argv, label, rest[0], workdir, "python")
        inner = self.judge(_Found(SimpleCommand(rest, ORIGIN_ARGV), workdir, ()))
        if inner.entrypoint is not None:
            return inner
        tool = rest[0]
        if "/" not in tool and self._family(tool) is None and tool not in _CONSTANT:
            # Not on PATH here, but the project environment provides it when it runs.
            return _Verdict(
                f"project command {tool} via {label}",
                f"{label} runs {tool} from the project's environment",
            )
        return inner

    def _on_path(self, argv: tuple[str, ...], workdir: str | None) -> _Verdict:
        name = argv[0]
        try:
            location = shutil.which(name) if name else None
        except (OSError, ValueError):
            location = None
        if location is not None:
            return _Verdict(f"program {name}", f"{name} is a program found on PATH at {location}")
        hint = ""
        path, _ = self._locate(name, workdir) if name else (None, "")
        if path is not None and _exists(path, "file"):
            hint = f"; to run the file in the working directory write ./{name}"
        return _Verdict(None, f"{name or repr(name)} is not a program found on PATH{hint}")


def _interpreter_target(options: _InterpreterOptions, args: Sequence[str]) -> tuple[str, str]:
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


def real_world_entrypoint(argv: Sequence[str], cwd: Path) -> tuple[str | None, str]:
    """Whether the command reaches a real entrypoint of the skill, and the explanation.

    Returns ``(description, explanation)``; the description is None when no simple command
    reaches one, and the explanation then says why for each (it is shown to users).  Real:
    an existing executable path (``./run.sh``, ``scripts/go``); an interpreter given an
    existing script file (``bash run.sh``, ``python3 tool.py``, ``uv run x.py``); a test runner
    (``pytest``, ``python -m pytest``, ``npm test``, ``go test``, ``make check``, ``bats``...);
    ``curl``/``wget``/``http`` on an ``http(s)://`` URL; or any other program found on PATH
    that is neither a constant builtin nor an interpreter without a script.  Relative paths
    resolve against ``cwd``, following ``cd`` inside shell scripts and ``env -C``.
    """
    base = Path(os.path.abspath(cwd))
    walker = _walk(argv)
    if not walker.found:
        return None, "the command runs nothing (only assignments, comments or redirections)"
    judge = _Judge(base)
    reasons: list[str] = []
    for found in walker.found:
        verdict = judge.judge(found)
        if verdict.entrypoint is not None:
            return verdict.entrypoint, verdict.explanation
        if verdict.explanation not in reasons:
            reasons.append(verdict.explanation)
    return None, "; ".join(reasons)


# --------------------------------------------------------------------------------------------
# Stub inputs
# --------------------------------------------------------------------------------------------

_STUB_WORDS = frozenset({"stub", "stubs", "stubbed", "mock", "mocks", "mocked", "fake", "fakes",
                         "faked"})
_FIXTURE_DIRS = frozenset({"fixtures", "__fixtures__"})
_NEGATIONS = frozenset({"no", "without", "disable", "skip"})
_SUBSTITUTION = re.compile(r"\$\([^()]*\)|`[^`]*`")
_EXTENSION = re.compile(r"[^./]\.[A-Za-z0-9]{1,8}$")
_CHUNK = re.compile(r"[^\s'\"(),;=<>|&]+")


def _name_parts(component: str) -> set[str]:
    """Lower-case words of a file name: ``mock_response.json``, ``MockServer.py`` -> mock..."""
    return {
        part.lower()
        for part in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", component)
    }


def _path_is_stub(chunk: str) -> bool:
    if "/" not in chunk and not _EXTENSION.search(chunk):
        return False  # a plain word ("mockingbird", "fake") is not a path
    # "fixtures/../run.sh" leaves the fixtures folder again: judge where the path ends up.
    components = posixpath.normpath(chunk).split("/")
    for index, component in enumerate(components):
        if component.lower() in _FIXTURE_DIRS:
            return True
        if index == len(components) - 1:
            # Judge a file by its stem: "stub.json" is a stub, "unittest.mock" a module name.
            component = component.rsplit(".", 1)[0] if "." in component[1:] else component
        if _name_parts(component) & _STUB_WORDS:
            return True
    return False


def _word_is_stub(word: str) -> bool:
    word = _SUBSTITUTION.sub(" ", word)  # substituted commands are checked on their own
    if word.startswith("-") and len(word) > 1 and not word[1:2].isdigit():
        name, _, value = word.partition("=")
        parts = [p for p in re.split(r"[-_]+", name.lower()) if p]
        if parts and parts[0] not in _NEGATIONS and set(parts) & _STUB_WORDS:
            return True  # --mock, --use-fake-llm, --stub-server=...; not --no-mock
        word = value
    return any(_path_is_stub(chunk) for chunk in _CHUNK.findall(word))


def fixture_stub_inputs(argv: Sequence[str]) -> list[str]:
    """Words that feed the command stub inputs instead of real ones (empty when clean).

    Looked at: the words of every simple command (after unwrapping), input-redirection
    targets (``< fixtures/in.txt``), assignment values (``INPUT=fixtures/x``) and the
    positional arguments handed to ``sh -c``.  A word is flagged when

    * it is an option whose name has a ``stub``/``mock``/``fake`` part (``--mock``,
      ``--use-fake-llm``, ``--stub-server=...``), unless negated (``--no-mock``); or
    * it (or an option's ``=value``, or a path inside inline code) is path-like -- contains
      ``/`` or ends in a file extension -- and has a component named ``fixtures`` or
      ``__fixtures__``, or a component with a ``stub``/``mock``/``fake`` name part
      (``data/mock_response.json``, ``stub.json``, ``MockServer.py``, ``fakes/x``).

    Plain words without ``/`` or extension are never flagged, and name parts must match
    whole words, so ``mockingbird`` or ``mockingbird.txt`` pass.
    """
    walker = _walk(argv)
    words: list[str] = []
    for found in walker.found:
        words.extend(found.command.argv)
        words.extend(found.inputs)
    words.extend(walker.extra_inputs)
    flagged: list[str] = []
    for word in words:
        if word not in flagged and _word_is_stub(word):
            flagged.append(word)
    return flagged


# --------------------------------------------------------------------------------------------
# Sampling
# --------------------------------------------------------------------------------------------

_RANDOM_SEED_PLACEHOLDER = "{random_seed}"
# Values a shell computes afresh on each run.  Only meaningful inside shell scripts: the
# runner passes argv words literally, so "$RANDOM" there is just text.
_SHELL_VARYING = re.compile(
    r"\$\{?(?:S?RANDOM|EPOCHREALTIME|EPOCHSECONDS|BASHPID)\b|\$\$|\$\(|`"
)
_SHELL_RANDOM = re.compile(r"\$\{?(S?RANDOM)\b|\(\([^()]*\b(S?RANDOM)\b")


def _seed_varies(value: str, in_shell: bool) -> bool:
    if _RANDOM_SEED_PLACEHOLDER in value:
        return True
    return in_shell and _SHELL_VARYING.search(value) is not None


def sampling(argv: Sequence[str]) -> Sampling:
    """Whether results may differ run to run by design: sampling or a varying seed.

    Non-deterministic when a simple command has ``--samples N``/``--samples=N``, a
    ``--seed`` whose value changes per run (the runner's ``{random_seed}`` placeholder, or
    inside a shell script ``$RANDOM``, ``$SRANDOM``, ``$EPOCHREALTIME``, ``$$``, ``$(...)``,
    backquotes), uses ``{random_seed}`` anywhere else, or a shell script uses ``$RANDOM``.
    Quoting that would stop the shell expanding ``$RANDOM`` is not tracked, which errs toward
    non-deterministic.  ``samples`` is the largest integer N given, else None.
    """
    walker = _walk(argv)
    reasons: list[str] = []
    counts: list[int] = []

    def note(reason: str) -> None:
        if reason not in reasons:
            reasons.append(reason)

    for found in walker.found:
        words = found.command.argv
        in_shell = found.command.origin == ORIGIN_SCRIPT
        seed_values: set[int] = set()
        for i, word in enumerate(words):
            value: str | None = None
            shown = word
            if word in ("--samples", "--seed") and i + 1 < len(words):
                value = words[i + 1]
                shown = f"{word} {value}"
                seed_values.add(i + 1)
            elif word.startswith(("--samples=", "--seed=")):
                value = word.partition("=")[2]
            if value is None:
                continue
            if word.startswith("--samples"):
                note(shown)
                if re.fullmatch(r"[0-9]+", value):
                    counts.append(int(value))
            elif _seed_varies(value, in_shell):
                note(shown)
                seed_values.add(i)
        for i, word in enumerate(words):
            if _RANDOM_SEED_PLACEHOLDER in word and i not in seed_values:
                note(f"{_RANDOM_SEED_PLACEHOLDER} placeholder in {word!r}")
    for value in [*walker.extra_inputs, *(w for f in walker.found for w in f.inputs)]:
        if _RANDOM_SEED_PLACEHOLDER in value:
            note(f"{_RANDOM_SEED_PLACEHOLDER} placeholder in {value!r}")
    for script in walker.scripts:
        for match in _SHELL_RANDOM.finditer(script):
            note(f"shell ${match.group(1) or match.group(2)}")
    return Sampling(
        non_deterministic=bool(reasons),
        samples=max(counts) if counts else None,
        reasons=tuple(reasons),
    )
