"""Script parsing: tokens to simple commands, subshell scopes and substitutions.

The parser skips what runs no program (keywords, ``for``/``case`` headers, case patterns,
arithmetic, array assignments, function names), drops redirections but keeps the targets of
input redirections (data fed to the command), and marks where subshells open and close, so
that the walker can keep a ``cd`` inside one from leaking out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_agentic_evals.shell.lexer import Token

ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")

_SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", "\n", ";;", ";&", ";;&"})
_CASE_ENDS = frozenset({";;", ";&", ";;&"})
_REDIRECTIONS = frozenset({"<", ">", ">>", ">|", "<>", "<&", ">&", "&>", "&>>", "<<", "<<<"})
_INPUT_REDIRECTIONS = frozenset({"<", "<>"})
_KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "coproc"}
)


@dataclass
class RawCommand:
    words: list[str] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)  # substitutions, run before the command
    inputs: list[str] = field(default_factory=list)  # targets of input redirections

    def __bool__(self) -> bool:
        return bool(self.words or self.scripts or self.inputs)


@dataclass(frozen=True)
class Rebound:
    """A variable given a value only known at run time (``for NAME in ...``)."""

    name: str


PUSH = "push"  # a subshell opens: a cd inside it does not leak out
POP = "pop"
Event = RawCommand | Rebound | str


class Parser:
    """Turns tokens into simple commands, skipping keywords, case patterns and arithmetic."""

    def __init__(self, tokens: list[Token]) -> None:
        self.toks = tokens
        self.i = 0
        self.events: list[Event] = []
        self.cur = RawCommand()
        self.stack: list[str] = []  # "(", "case-pattern", "case-body"
        self.functions: set[str] = set()  # names defined here: calling one runs its body

    def parse(self) -> list[Event]:
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
        self.cur = RawCommand()

    def _next(self) -> Token | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def _word(self, tok: Token) -> None:
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
                nxt = self._next()
                if nxt is not None and nxt.op is None:
                    self.events.append(Rebound(nxt.word))
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
        header = RawCommand()
        while self.i < len(self.toks):
            tok = self.toks[self.i]
            self.i += 1
            if tok.op is not None:
                if at_separator and tok.op in (";", "\n"):
                    break
                if tok.op == "((":
                    self._skip_to_close(2)
                continue
            if tok.word == end_word:
                break
            header.scripts.extend(tok.scripts)
        if header:
            self.events.append(header)

    def _case_pattern(self, tok: Token) -> None:
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

    def _skip_to_close(self, depth: int) -> None:
        """Skip past the ``)`` that closes ``depth`` open parentheses: arithmetic and array
        elements run no program, but substitutions inside them do."""
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
            self._skip_to_close(2)  # (( i++ )) is arithmetic, not a command
        elif op in ("(", "(("):
            for _ in op:
                self._open_paren()
        else:  # ")" or "))"
            for _ in op:
                self._close_paren()

    def _open_paren(self) -> None:
        words = self.cur.words
        if words and ASSIGNMENT.fullmatch(words[-1]):  # arr=(a b c) is an array assignment
            self._skip_to_close(1)
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
        self.events.append(PUSH)

    def _close_paren(self) -> None:
        self._finish()
        if self.stack and self.stack[-1] == "(":
            self.stack.pop()
            self.events.append(POP)
