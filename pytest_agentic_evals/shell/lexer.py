"""Script tokenising: a quote-aware pre-pass for what shlex does not know, then shlex itself.

The result is a list of tokens, each an operator or a word; a word carries the scripts of the
command and process substitutions inside it, which run as commands of their own.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from typing import NamedTuple

from pytest_agentic_evals.shell.command import CommandParseError

# Characters the shell treats as operators.  A newline is one too: it ends a command exactly
# like ``;``.  shlex would treat it as whitespace, so it is moved from whitespace to punctuation.
_PUNCT = "();<>|&\n"
_OPERATORS = (
    ";;&", "&>>", "<<<", "&&", "||", ";;", ";&", "|&", ">>", ">&", "<&", "<>", ">|", "&>",
    "<<", "((", "))", ";", "&", "|", "(", ")", "<", ">", "\n",
)
# Marks a placeholder for text the pre-pass took out of the script before shlex saw it.  NUL
# cannot occur in a real argv (execve cannot pass it), so it never collides with user text.
_PLACEHOLDER = re.compile("\x00(\\d+)\x00")
# A reference to a shell variable that the shell would expand (``$NAME`` or ``${NAME}``, not
# in single quotes, not escaped) is kept in its word between two NULs, so that the walker can
# put in a value the script assigned, and restore the reference text otherwise.  NUL cannot
# come from a fixture (argv cannot hold it), so no text can pass itself off as a reference.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACED_NAME = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_REFERENCE = re.compile("\x00\\$(?:\\{([A-Za-z_][A-Za-z0-9_]*)\\}|([A-Za-z_][A-Za-z0-9_]*))\x00")


class _Piece(NamedTuple):
    display: str  # text shown in the word where the piece stood
    script: str | None  # for command/process substitutions: the commands they run


class Token(NamedTuple):
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
        i = 0
        quote = ""  # the quote that is open: "'", '"' or none
        while i < len(src):
            if quote == "'":  # nothing is special inside single quotes, not even a backslash
                i, quote = self._single_quoted(i)
            elif src[i] == "\\":
                i = self._backslash(i, quote)
            elif quote == '"':
                i, quote = self._double_quoted(i)
            else:
                i, quote = self._unquoted(i)
        if quote:
            kind = "single" if quote == "'" else "double"
            raise CommandParseError(
                f"unbalanced {kind} quote ({quote}) in shell script {_short(src)}"
            )
        return "".join(self.out), self.pieces

    def _literal(self, c: str) -> None:
        """A quoted character: an operator character is hidden from shlex, so that a quoted
        ``;`` does not end a command."""
        if c in _PUNCT:
            self._piece(c)
        else:
            self._emit(c)

    def _single_quoted(self, i: int) -> tuple[int, str]:
        c = self.src[i]
        if c == "'":
            self._emit(c)
            return i + 1, ""
        self._literal(c)
        return i + 1, "'"

    def _double_quoted(self, i: int) -> tuple[int, str]:
        c = self.src[i]
        if c == '"':
            self._emit(c)
            return i + 1, ""
        if c == "$":
            return self._dollar(i, quoted=True), '"'
        if c == "`":
            return self._backquote(i), '"'
        self._literal(c)
        return i + 1, '"'

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
            text = src[i : end + 1]
            self._piece(f"\x00{text}\x00" if _BRACED_NAME.fullmatch(text) else text)
            return end + 1
        if not quoted and src.startswith("$'", i):
            return self._ansi_c(i)
        name = _NAME.match(src, i + 1)
        if name is not None:
            self._piece(f"\x00${name.group(0)}\x00")
            return name.end()
        self._emit("$")
        return i + 1

    def _ansi_c(self, i: int) -> int:
        escapes = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "e": "\x1b"}
        text, end = self._read_to(
            i + 2, "'", lambda c: escapes.get(c, "\\" + c), "single quote ($')"
        )
        self._piece(text)
        return end

    def _backquote(self, i: int) -> int:
        script, end = self._read_to(
            i + 1, "`", lambda c: c if c in "`$\\" else "\\" + c, "backquote (`)"
        )
        self._piece(self.src[i:end], script)
        return end

    def _read_to(
        self, j: int, closing: str, unescape: Callable[[str], str], what: str
    ) -> tuple[str, int]:
        """The text from ``j`` to the unescaped ``closing`` character, each backslash escape
        replaced by ``unescape`` of the escaped character; and the index after ``closing``."""
        src = self.src
        buf: list[str] = []
        while j < len(src):
            ch = src[j]
            if ch == "\\" and j + 1 < len(src):
                buf.append(unescape(src[j + 1]))
                j += 2
            elif ch == closing:
                return "".join(buf), j + 1
            else:
                buf.append(ch)
                j += 1
        raise CommandParseError(f"unbalanced {what} in shell script {_short(src)}")

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


def tokenize(script: str) -> list[Token]:
    text, pieces = _PrePass(script).run()
    lexer = shlex.shlex(text, posix=True, punctuation_chars=_PUNCT)
    lexer.whitespace = " \t\r"  # newline is an operator here, not whitespace
    lexer.whitespace_split = True  # words end only at blanks and operators, as in the shell
    lexer.commenters = ""  # comments were removed by the pre-pass, which knows word starts
    tokens: list[Token] = []
    try:
        while (raw := lexer.get_token()) is not None:
            if raw and all(ch in _PUNCT for ch in raw):
                tokens.extend(Token(op, "", ()) for op in _split_operators(raw))
            else:
                word, scripts = _decode(raw, pieces)
                tokens.append(Token(None, word, scripts))
    except ValueError as exc:  # shlex reports unbalanced quoting this way
        raise CommandParseError(f"cannot split shell script {_short(script)}: {exc}") from exc
    return tokens


def expand_references(word: str, variables: Mapping[str, str]) -> str:
    """A word of :func:`tokenize` with its variable references replaced: by the value in
    ``variables`` when the name is there, else by the reference's own text (``$NAME``)."""
    if "\x00" not in word:
        return word

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        known = variables.get(name)
        return known if known is not None else match.group(0)[1:-1]

    return _REFERENCE.sub(value, word)
