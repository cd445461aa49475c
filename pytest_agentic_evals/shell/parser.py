"""Script parsing: tokens to simple commands, subshell scopes and substitutions.

The parser skips what runs no program (keywords, ``for``/``case`` headers, case patterns,
arithmetic, array assignments, function names), drops redirections but keeps the targets of
input redirections (data fed to the command), and marks where subshells open and close, so
that the walker can keep a ``cd`` inside one from leaking out.

It also follows the control flow a script fixes in its own text, so that code that can never
run does not count as run (a fixture could otherwise name the skill's entrypoint where it is
never reached): a command after an ``exit``, an ``exec`` of a program or a ``set -n`` that
always runs; the right of ``&&`` after ``false`` and of ``||`` after ``true`` or ``:``; the
body of ``if false``, ``while false`` or ``until true`` (and the branches after one that is
always taken). Such commands are marked ``dead``. None of it holds for a builtin the script
redefines (a function or alias named ``exit`` or ``true``, ``enable -n``).

The body of a function is kept apart, in ``bodies``: it runs where the function is called,
and not at all if it never is. A name defined more than once keeps all its bodies, since
which one a call runs depends on when.
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
_OUTPUT_REDIRECTIONS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_COMPOUNDS = frozenset({"{", "if", "while", "until", "for", "select", "case", "[["})
_KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "coproc"}
)


@dataclass
class RawCommand:
    words: list[str] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)  # substitutions, run before the command
    inputs: list[str] = field(default_factory=list)  # targets of input redirections
    outputs: list[str] = field(default_factory=list)  # files output redirections write
    negated: bool = False  # "! cmd"
    dead: bool = False  # the script's own text shows it never runs
    piped_from: str | None = None  # "a | cmd": the program a reads its input from (a simple
    # command's first word; None when not piped, or piped from a compound command)
    programs: list[str] = field(default_factory=list)  # for the redirection of a compound
    # command ("{ a; b; } > f", no words of its own): the programs run inside it

    def __bool__(self) -> bool:
        return bool(self.words or self.scripts or self.inputs)


# Commands whose exit status is known without running them.
_SUCCEEDS = frozenset({"true", ":"})
_FAILS = frozenset({"false"})
# Separators after which the next command runs whatever the status of the one before.
_LIST_STARTS = frozenset({None, ";", "\n", "&"})
# Separators that run the command before them in a subshell of its own (its exit is its own).
_SUBSHELL_AFTER = frozenset({"|", "|&", "&"})


def _status(command: RawCommand) -> bool | None:
    """The exit status of a command as success (True) or failure (False), when its words fix
    it; None when only running it would tell."""
    name = command.words[0] if command.words else None
    known = True if name in _SUCCEEDS else False if name in _FAILS else \
        _compared(command.words)
    return None if known is None else known != command.negated


# A word the shell passes on as it is written: no expansion, no glob, no reference.
_LITERAL = re.compile(r"[A-Za-z0-9_.,:@%+/-]*")
_INTEGER = re.compile(r"-?[0-9]+")
_INTEGER_TESTS = {"-eq": int.__eq__, "-ne": int.__ne__, "-lt": int.__lt__,
                  "-le": int.__le__, "-gt": int.__gt__, "-ge": int.__ge__}


def _compared(words: list[str]) -> bool | None:
    """The status of ``[ A OP B ]`` or ``test A OP B`` comparing two literals (``[ 1 = 2 ]``);
    None for any other test, and for one whose operands the shell would expand."""
    if words[:1] == ["["] and words[-1:] == ["]"]:
        operands = words[1:-1]
    elif words[:1] == ["test"]:
        operands = words[1:]
    else:
        return None
    if len(operands) != 3 or not all(_LITERAL.fullmatch(w) for w in operands[::2]):
        return None
    left, operator, right = operands
    if operator in ("=", "=="):
        return left == right
    if operator == "!=":
        return left != right
    if operator in _INTEGER_TESTS and _INTEGER.fullmatch(left) and _INTEGER.fullmatch(right):
        return bool(_INTEGER_TESTS[operator](int(left), int(right)))
    return None


def _ends_the_shell(command: RawCommand) -> bool:
    """``exit``, ``exec PROGRAM`` and ``set -n``: nothing after them in the shell runs."""
    words = command.words
    if not words:
        return False
    if words[0] in ("command", "builtin") and words[1:2] == ["exit"]:
        return True  # the builtin itself, whatever function the script names exit
    if words[0] == "exit":
        return True
    if words[0] == "exec":
        return any(not w.startswith("-") for w in words[1:])
    return words[0] == "set" and _sets_noexec(words)


# The option letters and option names bash's set knows: any other makes it fail.
_SET_LETTERS = frozenset("abefhkmnoptuvxBCEHPT")
_SET_NAMES = frozenset({
    "allexport", "braceexpand", "emacs", "errexit", "errtrace", "functrace", "hashall",
    "histexpand", "history", "ignoreeof", "interactive-comments", "keyword", "monitor",
    "noclobber", "noexec", "noglob", "nolog", "notify", "nounset", "onecmd", "physical",
    "pipefail", "posix", "privileged", "verbose", "vi", "xtrace",
})


def _sets_noexec(words: list[str]) -> bool:
    """Whether ``set WORDS...`` surely turns on noexec (``-n``, ``-o noexec``). Its options end
    at ``--``, ``-`` or the first other word, all positional parameters (``set -- -n``,
    ``set -o pipefail noexec``); an option it does not know makes it fail, setting nothing."""
    noexec = False
    i = 1
    while i < len(words) and len(words[i]) > 1 and words[i][0] in "-+" and words[i] != "--":
        option = words[i]
        i += 1
        if not set(option[1:]) <= _SET_LETTERS:
            return False
        if "o" in option[1:] and i < len(words):  # -o NAME
            if words[i] not in _SET_NAMES:
                return False
            noexec = noexec or (option[0] == "-" and words[i] == "noexec")
            i += 1
        noexec = noexec or (option[0] == "-" and "n" in option)
    return noexec


@dataclass
class _Frame:
    """One list of commands: the script, a subshell, a group, a branch, a loop, a case arm."""

    kind: str  # "script", "(", "{", "if", "then", "else", "while", "until", "for", "do", "arm"
    outer_dead: bool  # the construct itself never runs
    function: str | None = None  # the function whose body this is
    definition: bool = False  # the body of a function defined here (not a group inside one)
    dead: bool = False  # this part of it never runs
    status: bool | None = None  # the known exit status of what ran last in it
    separator: str | None = None  # the operator before the next command
    ended: bool = False  # an exit that always runs: nothing after it in here runs
    ending: bool = False  # the last command ends the shell unless the next operator says not
    ended_before: bool = False  # ended already before the and-or list now read
    taken: bool = False  # (if) a branch before is always taken: the later ones never are
    certain: bool = False  # the construct always runs where it stands
    coprocess: bool = False  # run by coproc: in a subshell of its own, in the background
    programs: list[str] = field(default_factory=list)  # first words of what runs in it

    def __post_init__(self) -> None:
        self.dead = self.outer_dead

    def restart(self) -> None:
        """A new list of commands begins in this frame (a branch, a loop body)."""
        self.separator, self.status, self.ended, self.ended_before = None, None, False, False

    def runs(self) -> bool:
        """Whether the next command may run."""
        if self.dead or self.ended:
            return False
        return not ((self.separator == "&&" and self.status is False)
                    or (self.separator == "||" and self.status is True))

    def always_runs(self) -> bool:
        """Whether the next command runs whenever this list is reached."""
        return self.runs() and (self.separator in _LIST_STARTS
                                or (self.separator == "&&" and self.status is True)
                                or (self.separator == "||" and self.status is False))


def _redefined(tokens: list[Token]) -> frozenset[str]:
    """Names the script makes something other than the builtin: functions it defines
    (``exit() { :; }``), aliases (``alias true=false``), builtins it turns off
    (``enable -n exit``). What the name of such a command tells (its status, an end of the
    shell) does not hold, wherever in the script it stands."""
    names: set[str] = set()
    operands = False  # the words read are operands of alias or enable
    for i, tok in enumerate(tokens):
        if tok.op is not None:
            operands = False
            if tok.op == "(" and 0 < i < len(tokens) - 1 and tokens[i - 1].op is None \
                    and tokens[i + 1].op == ")":
                names.add(tokens[i - 1].word)
        elif operands:
            names.add(tok.word.partition("=")[0])
        elif tok.word in ("alias", "enable"):
            operands = True
        elif tok.word == "function" and i + 1 < len(tokens) and tokens[i + 1].op is None:
            names.add(tokens[i + 1].word)
    return frozenset(names)


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
        self.redefined = _redefined(tokens)
        self.i = 0
        self.events: list[Event] = []
        self.cur = RawCommand()
        self.stack: list[str] = []  # "(", "case-pattern", "case-body"
        self.functions: set[str] = set()  # names defined here: calling one runs its body
        self.bodies: dict[str, list[Event]] = {}  # each function's body, run where it is called
        self.frames = [_Frame("script", outer_dead=False, certain=True)]
        self.defining: str | None = None  # a function name whose body opens next
        self.wordless = False  # the command read runs, with no words: "> log", "(( n ))"
        self.coprocess = False  # the next command is run by coproc
        self.last_program: str | None = None  # the first word of the simple command just read
        self.closed: list[str] | None = None  # the programs of the compound command just closed
        self.closed_dead = False  # whether that compound command never runs
        # "exec > f" in the script itself (not in a subshell or function): its redirection,
        # and where the commands whose output goes there start in the script's programs.
        self.exec_outputs: list[tuple[RawCommand, int]] = []

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
        for redirection, start in self.exec_outputs:
            # "exec > f": f holds what every later command of the script wrote.
            redirection.programs = self.frames[0].programs[start:]
        return self.events

    def _emit(self, event: Event) -> None:
        function = self.frames[-1].function
        (self.events if function is None else self.bodies[function]).append(event)

    def _finish(self) -> None:
        self.last_program = None  # a compound command (or nothing) ends here, unless...
        if self.cur:
            frame = self.frames[-1]
            coprocess, self.coprocess = self.coprocess, False
            if frame.runs():
                # After "x && true" the status is x's when x failed: known only for a command
                # that always runs, and not by the name of a builtin the script redefines, nor
                # for a coprocess (whose exit is its own too).
                name = self.cur.words[0] if self.cur.words else None
                known = frame.always_runs() and name not in self.redefined and not coprocess
                frame.ending = known and _ends_the_shell(self.cur)
                frame.status = _status(self.cur) if known else None
            else:
                self.cur.dead = True
            if coprocess:
                self._emit(PUSH)
            self._emit(self.cur)
            if coprocess:
                self._emit(POP)
            self.last_program = self.cur.words[0] if self.cur.words else None
            if self.last_program is not None and not self.cur.dead:
                frame.programs.append(self.last_program)
                if self.cur.words == ["exec"] and self.cur.outputs and len(self.frames) == 1:
                    redirection = RawCommand(outputs=list(self.cur.outputs))
                    self._emit(redirection)  # its programs are known once the script is read
                    self.exec_outputs.append((redirection, len(frame.programs)))
        elif self.wordless and self.frames[-1].runs():
            # Arithmetic, or redirections alone, are commands too: "true; (( 0 )) || x" runs x.
            self.frames[-1].status = None
        self.cur = RawCommand()
        self.wordless = False
        self.closed = None

    def _separator(self, op: str) -> None:
        if op == "|":
            self.cur.piped_from = self.last_program
        frame = self.frames[-1]
        if frame.ending and op not in _SUBSHELL_AFTER:
            frame.ended = True
        frame.ending = False
        if op == "&":
            # The whole and-or list before "&" ran in a subshell of its own: an exit in it
            # ("exit 0 && x &") ends only that subshell, and starting it succeeds.
            frame.ended = frame.ended_before
            frame.status = True
        if op in _LIST_STARTS:
            frame.ended_before = frame.ended
        frame.separator = op

    def _push(self, kind: str) -> _Frame:
        parent = self.frames[-1]
        # A "!" before a compound command negates the status of the whole (not followed),
        # not that of the first command inside it: "! if true; then" still takes the branch.
        self.cur.negated = False
        function, self.defining = self.defining, None
        frame = _Frame(kind, outer_dead=not parent.runs(), function=function or parent.function,
                       definition=function is not None, certain=parent.always_runs())
        if function is not None:
            # A name defined again (or inside its own body) keeps what its earlier bodies
            # run: a call may come before the new definition, or while the old body runs.
            self.bodies.setdefault(function, [])
        self.frames.append(frame)
        frame.coprocess, self.coprocess = self.coprocess, False
        if frame.coprocess:
            self._emit(PUSH)
        return frame

    def _pop(self, *kinds: str) -> None:
        """Close the innermost construct if it is one of ``kinds`` (else the script is not
        what it seems, and nothing is closed)."""
        if len(self.frames) > 1 and self.frames[-1].kind in kinds:
            frame = self.frames.pop()
            parent = self.frames[-1]
            if frame.definition:
                # A function definition runs nothing where it stands, and succeeds (where it
                # is reached at all): "false; f() { :; } && x" runs x.
                if not frame.outer_dead:
                    parent.status = True if frame.certain else None
                return
            parent.programs += frame.programs
            self.closed, self.closed_dead = list(frame.programs), frame.outer_dead
            if frame.coprocess:
                self._emit(POP)
            # A group that always runs and always exits ends its shell too (unless coproc runs
            # it); the status of a compound command is not followed.
            parent.ending = frame.kind == "{" and frame.certain and frame.ended \
                and not frame.coprocess
            parent.status = None

    def _keyword(self, word: str) -> None:
        frame = self.frames[-1]
        if word == "!":
            self.cur.negated = not self.cur.negated
        elif word == "coproc":
            self.coprocess = True
            # "coproc NAME { ...; }": NAME names the coprocess, it is no command. A keyword
            # is no NAME: "coproc { { a; } & b; }" is one group run by coproc.
            name = self._next()
            after = self.toks[self.i + 1] if self.i + 1 < len(self.toks) else None
            if name is not None and name.op is None and name.word not in _KEYWORDS \
                    and after is not None and (after.op in ("(", "((") or (
                        after.op is None and after.word in _COMPOUNDS)):
                self.i += 1
        elif word in ("if", "while", "until"):
            self._push(word)
        elif word == "{":
            self._push("{")
        elif word == "}":
            self._pop("{")
        elif word == "then" and frame.kind == "if":
            frame.kind, frame.dead = "then", frame.outer_dead or frame.taken or \
                frame.status is False
            frame.taken = frame.taken or frame.status is True
            frame.restart()
        elif word in ("elif", "else") and frame.kind == "then":
            frame.kind, frame.dead = ("if" if word == "elif" else "else"), \
                frame.outer_dead or frame.taken
            frame.restart()
        elif word == "fi":
            self._pop("then", "else")
        elif word == "do" and frame.kind in ("while", "until", "for"):
            never = (frame.kind == "while" and frame.status is False) or \
                (frame.kind == "until" and frame.status is True)
            frame.kind, frame.dead = "do", frame.outer_dead or never
            frame.restart()
        elif word == "done":
            self._pop("do")

    def _next(self) -> Token | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def _word(self, tok: Token) -> None:
        w = tok.word
        if not self.cur.words:  # command position: keywords are recognised only here
            if w in _KEYWORDS:
                self._keyword(w)
                return
            if w == "esac":
                if self.stack and self.stack[-1] == "case-body":
                    self._pop("arm")
                    self.stack.pop()
                return
            if w == "case":
                self._skip_header(end_word="in", at_separator=False)
                self.stack.append("case-pattern")
                return
            if w in ("for", "select"):
                nxt = self._next()
                if nxt is not None and nxt.op is None:
                    self._emit(Rebound(nxt.word))
                frame = self._push("for")
                if self._skip_header(end_word="do", at_separator=True):
                    frame.kind = "do"
                return
            if w == "function":
                nxt = self._next()
                if nxt is not None and nxt.op is None:
                    self.functions.add(nxt.word)
                    self.defining = nxt.word
                    self.i += 1
                return
            if w == "[[":
                self._double_bracket()
                return
        self.cur.words.append(w)
        self.cur.scripts.extend(tok.scripts)

    def _skip_header(self, end_word: str, at_separator: bool) -> bool:
        """Skip ``for x in ...`` / ``case WORD in``: not commands, but substitutions run.
        Whether ``end_word`` itself was skipped too."""
        header = RawCommand()
        ended = False
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
                ended = True
                break
            header.scripts.extend(tok.scripts)
        if header:
            header.dead = not self.frames[-1].runs()
            self._emit(header)
        return ended

    def _case_pattern(self, tok: Token) -> None:
        if tok.op == ")":
            self.stack[-1] = "case-body"
            self._push("arm")
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
                self._pop("arm")
                self.stack[-1] = "case-pattern"
            else:
                self._separator(op)
        elif op in _REDIRECTIONS:
            self.wordless = True
            target = self._next()
            if target is not None and target.op is None:
                self.i += 1
                self.cur.scripts.extend(target.scripts)
                if op in _INPUT_REDIRECTIONS:
                    self.cur.inputs.append(target.word)
                if op in _OUTPUT_REDIRECTIONS:
                    self.cur.outputs.append(target.word)
                    if not self.cur.words and self.closed is not None:
                        # "{ a; b; } > f": f holds what the commands inside wrote.
                        self._emit(RawCommand(outputs=[target.word], programs=self.closed,
                                              dead=self.closed_dead))
        elif op == "((" and not self.cur.words:
            self.wordless = True
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
        if len(words) <= 1 and nxt is not None and nxt.op == ")":
            # "name () { ...; }" defines a function: the name is not a command. After
            # "function name" the name is already taken.
            if words:
                self.functions.add(words[0])
                self.defining = words[0]
            self.cur.words = []
            self.i += 1
            return
        self._finish()
        self._push("(")
        self.stack.append("(")
        self._emit(PUSH)

    def _close_paren(self) -> None:
        self._finish()
        if self.stack and self.stack[-1] == "(":
            self.stack.pop()
            self._emit(POP)
            self._pop("(")
