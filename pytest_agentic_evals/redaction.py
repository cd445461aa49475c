"""Secrets kept out of everything the runner writes or prints.

A trial runs with the runner's environment, which holds tokens, and its output may echo them.
Whatever leaves the runner (the JSON report, the Markdown summary, JUnit, the terminal's
failure text) goes through a ``Redactor`` first. It replaces, with ``[REDACTED]``:

- the value of every environment variable whose name looks secret (``GH_PAT``, ``*_TOKEN``,
  ``*_KEY``, ``*_SECRET``, ``*PASSWORD*``, ...), and the forms a program may print it in:
  upper- and lower-cased, base64 (standard or URL-safe, whole or inside a longer encoded
  text), percent-encoded;
- the password of any URL in the environment, whatever the variable's name
  (``DATABASE_URL=postgres://user:pass@host``);
- shapes that are secrets wherever they appear: URL passwords, ``Authorization`` headers,
  bearer tokens, ``token=``/``password=`` pairs, JSON ``"token": "..."`` members,
  ``NAME_TOKEN=...`` assignments, and the well-known token formats (GitHub ``ghp_`` and
  ``github_pat_``, ``sk-`` API keys, Slack ``xox?-``, AWS ``AKIA...``, Google ``AIza...``,
  GitLab ``glpat-``, npm, JSON web tokens, private key blocks).

A token's well-known prefix is kept (``ghp_[REDACTED]``): it says what leaked, not the secret.
Redacting twice changes nothing. ``escape_controls`` makes captured text safe for a terminal.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

Document = TypeVar("Document", bound=Mapping[str, Any])  # a report, a trial's result

REDACTED = "[REDACTED]"
# Shorter values are too likely to be ordinary words to be replaced wherever they appear.
MIN_SECRET_CHARS = 6
# Encoded forms shorter than this could match by chance.
MIN_ENCODED_CHARS = 8

SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|KEY|AUTH|CREDENTIAL|PRIVATE|COOKIE|SESSION"
    r"|(?:^|_)(?:PAT|PASS|PWD)(?:_|$)",
    re.I,
)
# Names that look secret and are not: where things are, and what kind of session a desktop runs.
NOT_SECRET_NAMES = frozenset({
    "PWD", "OLDPWD", "SSH_AUTH_SOCK", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS",
    "DESKTOP_SESSION", "GPG_AGENT_INFO", "KEYTIMEOUT",
})
NOT_SECRET_PREFIXES = ("XDG_SESSION_", "AGENTIC_EVALS_")

# (pattern, replacement): the replacement keeps the context and drops the secret.
_KEEP = r"\g<1>" + REDACTED
SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    # A private key block, to its end (or the end of the text, when it was cut).
    (re.compile(r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)[\s\S]*?"
                r"(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)"), _KEEP),
    # scheme://user:password@host
    (re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@\"'<>]*:)[^\s/@\"'<>]+(?=@)"), _KEEP),
    (re.compile(r"(?i)(\bauthorization\s*[:=]\s*(?:bearer|basic|token)?\s*)[^\s\"',;]+"), _KEEP),
    (re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}"), _KEEP),
    (re.compile(r"(?i)(\b(?:access_token|refresh_token|token|api[_-]?key|secret|password|passwd)"
                r"\s*=\s*)[^\s&\"',;]+"), _KEEP),
    (re.compile(r"(?i)(\"(?:[a-z_]*token|[a-z_]*secret|password|passwd|api[_-]?key"
                r"|authorization)\"\s*:\s*\")[^\"]*"), _KEEP),
    # NAME=value where NAME is an environment-style name that looks secret (an `env` dump).
    (re.compile(r"(\b[A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|_KEY|_PAT)[A-Z0-9_]*"
                r"=)[^\s\"',;]+"), _KEEP),
    # Well-known token formats: the prefix says what it is, the rest is the secret.
    (re.compile(r"\b(gh[pousr]_)[A-Za-z0-9]{20,}"), _KEEP),
    (re.compile(r"\b(github_pat_)[A-Za-z0-9_]{20,}"), _KEEP),
    (re.compile(r"\b(sk-)[A-Za-z0-9_-]{12,}"), _KEEP),
    (re.compile(r"\b([rsp]k_(?:live|test)_)[A-Za-z0-9]{8,}"), _KEEP),
    (re.compile(r"\b(xox[abposr]-)[A-Za-z0-9-]{8,}"), _KEEP),
    (re.compile(r"\b(AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"), _KEEP),
    (re.compile(r"\b(AIza)[0-9A-Za-z_-]{35}"), _KEEP),
    (re.compile(r"\b(glpat-)[A-Za-z0-9_-]{20,}"), _KEEP),
    (re.compile(r"\b(npm_)[A-Za-z0-9]{36}"), _KEEP),
    (re.compile(r"\b(eyJ)[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), _KEEP),
)



def _any_of(patterns: Iterable[re.Pattern[str]]) -> re.Pattern[str]:
    """One pattern that matches where any of ``patterns`` would (case-insensitive ones keep
    their flag inside their own group)."""
    parts = []
    for pattern in patterns:
        text = pattern.pattern
        parts.append("(?i:" + text[4:] + ")" if text.startswith("(?i)") else "(?:" + text + ")")
    return re.compile("|".join(parts))


# Searched once per text before the shapes are replaced one by one: most texts (paths, argv,
# short output) hold none, and then no replacement could change anything, since each would
# first have to match the text as it is.
_ANY_SHAPE = _any_of(pattern for pattern, _ in SHAPES)

# C0 controls but newline and tab, DEL, and C1 controls: never written raw to a terminal.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Half of a UTF-16 pair on its own (JSON's "\ud800", a file name in bytes that are not UTF-8):
# no text, so no terminal, file or report can take it as it is.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def is_secret_name(name: str) -> bool:
    if name.upper() in NOT_SECRET_NAMES or name.upper().startswith(NOT_SECRET_PREFIXES):
        return False
    return bool(SECRET_NAME.search(name))


def url_password(value: str) -> str | None:
    """The password of a URL (``postgres://user:pass@host/db``), else None."""
    if "://" not in value or "@" not in value:
        return None
    try:
        password = urlsplit(value.strip()).password
    except ValueError:
        return None
    return password or None


def environment_secrets(env: Mapping[str, str]) -> list[str]:
    """The secret values of an environment: values of secret-looking names (but the paths of
    files that exist, which locate a secret and are none), and the passwords of URLs."""
    values: set[str] = set()
    for name, value in env.items():
        password = url_password(value)
        if password and len(password) >= MIN_SECRET_CHARS:
            values.add(password)
        if len(value) < MIN_SECRET_CHARS or not is_secret_name(name):
            continue
        if value.startswith("/") and _exists(value):
            continue
        values.add(value)
    return sorted(values, key=len, reverse=True)


def _exists(path: str) -> bool:
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False


def encoded_forms(value: str) -> set[str]:
    """The texts a program may print a secret as: itself, cased, base64, percent-encoded."""
    forms = {value, value.upper(), value.lower(), quote(value, safe="")}
    raw = value.encode("utf-8", errors="replace")
    for offset in range(3):
        # base64 of the secret inside a longer text, at each alignment: the characters that
        # depend on the secret's bytes only (the group it shares with what precedes it, and
        # the one it shares with what follows, are left out).
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii")
        start = 4 if offset else 0
        core = encoded[start: 4 * ((offset + len(raw)) // 3)]
        whole = encoded.rstrip("=") if offset == 0 else ""
        for form in (core, whole):
            if len(form) >= MIN_ENCODED_CHARS:
                forms.add(form)
                forms.add(form.replace("+", "-").replace("/", "_"))
    return {form for form in forms if len(form) >= MIN_SECRET_CHARS}


# Short texts recur across trials and reports (case names, paths, outcomes, reasons): each is
# redacted once per Redactor and looked up afterwards. Bounded, so memory does not grow with
# the number of trials.
CACHED_TEXT_CHARS = 512
CACHED_TEXTS = 4096


class Redactor:
    """Replaces known secret values and secret shapes in text, and in JSON documents."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for value in secrets:
            if value:
                forms |= encoded_forms(value)
        # Longest first, so that a value is replaced whole before a shorter one inside it.
        ordered = sorted(forms, key=lambda form: (-len(form), form))
        self.values = tuple(ordered)
        self._values = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._done: dict[str, str] = {}

    @classmethod
    def of_environment(cls, *envs: Mapping[str, str]) -> Redactor:
        secrets: set[str] = set()
        for env in envs:
            secrets.update(environment_secrets(env))
        return cls(secrets)

    def text(self, text: str) -> str:
        """``text`` redacted; the very same object when there was nothing to redact."""
        if not text or len(text) > CACHED_TEXT_CHARS:
            return self._redact(text)
        done = self._done.get(text)
        if done is None:
            if len(self._done) >= CACHED_TEXTS:
                self._done.clear()
            done = self._done[text] = self._redact(text)
        return text if done == text else done  # the caller's own object when unchanged

    def _redact(self, text: str) -> str:
        if self._values is not None:
            text = self._values.sub(REDACTED, text)
        if _ANY_SHAPE.search(text) is None:
            return text
        for pattern, replacement in SHAPES:
            text = pattern.sub(replacement, text)
        return text

    def tree(self, value: Any) -> Any:
        """A JSON document with every string redacted (keys are kept as they are).

        Copy on write: a part with nothing to redact is returned as the very same object, so
        that redacting a report of many trials, where there is usually no secret at all,
        copies nothing (a copy per pass used to double the session's peak memory at its end).
        The caller gets a new object only where something was redacted, and must not count on
        the result being a copy."""
        if isinstance(value, str):
            return self.text(value)  # re's sub returns the same string when nothing matched
        if isinstance(value, dict):
            changed: dict[Any, Any] | None = None
            for key, item in value.items():
                redacted = self.tree(item)
                if redacted is not item:
                    if changed is None:
                        changed = dict(value)
                    changed[key] = redacted
            return value if changed is None else changed
        if isinstance(value, (list, tuple)):
            items = [self.tree(item) for item in value]
            if isinstance(value, list) and all(a is b for a, b in zip(items, value, strict=True)):
                return value
            return items
        return value

    def document(self, value: Document) -> Document:
        """``tree`` of a JSON object (a report, a trial's result), typed as it came."""
        redacted: Document = self.tree(value)
        return redacted


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    return Redactor(secrets).text(text)


def escape_controls(text: str) -> str:
    """Captured text made safe to print: ESC, NUL and the other control characters (but newline
    and tab) shown as ``\\x1b``, so that a trial's output can never drive the terminal, and
    half a UTF-16 pair as ``\\ud800`` (see ``escape_surrogates``)."""
    return escape_surrogates(_CONTROLS.sub(lambda match: f"\\x{ord(match.group()):02x}", text))


def escape_line(text: str) -> str:
    """One line of a table or summary made safe to print: ``escape_controls``, and a line
    break inside it shown as ``\\n``. What a fixture names (a skill, a seam, a claim) is
    printed inside a line, where a line break of its own would make a line of its choosing
    (``READY ...``) under the real one."""
    return escape_controls(text).replace("\n", "\\n")


def escape_surrogates(text: str) -> str:
    """``text`` with each half of a UTF-16 pair that stands alone written as its escape
    (``\\ud800``): a message quoting such a value still shows it, and stays text."""
    if not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def head(text: str, size: int) -> str:
    """The first ``size`` characters of redacted text, never ending inside a marker."""
    cut = min(size, len(text))
    inside = _marker_around(text, cut)
    return text[: cut if inside is None else inside + len(REDACTED)]


def tail(text: str, size: int) -> str:
    """The last ``size`` characters of redacted text, never starting inside a marker."""
    cut = max(0, len(text) - size)
    inside = _marker_around(text, cut)
    return text[cut if inside is None else inside:]


def _marker_around(text: str, cut: int) -> int | None:
    """Where the marker that ``cut`` falls strictly inside starts, if it falls inside one."""
    start = text.rfind(REDACTED, max(0, cut - len(REDACTED) + 1), cut + len(REDACTED) - 1)
    return start if start != -1 and start < cut < start + len(REDACTED) else None
