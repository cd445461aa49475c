"""Seals on what the runner keeps between runs, so that a skill cannot write it instead.

A probe result kept beside a fixture turns the judgement of a case's oracle from the static
heuristic into what a probe saw; its hashes say which case it describes, and anyone can
compute them from the skill. A file the skill ships, or writes while a trial runs, could
claim an oracle killed every stand-in. So each stored result carries a seal: an HMAC with a
key of this account on this machine, kept in its state directory, which sandboxed trials do
not see (it is hidden like the run directories). A result without a valid seal is shown and
never used; one made on another machine or account is probed again here.

Pure: no pytest import.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

KEY_FILENAME = "probe-key"


def key_directory() -> Path:
    """Where this account keeps the key: ``$XDG_STATE_HOME/agentic-evals`` (by default
    ``~/.local/state/agentic-evals``)."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state")
    return Path(state) / "agentic-evals"


def _key(create: bool) -> bytes | None:
    path = key_directory() / KEY_FILENAME
    with contextlib.suppress(OSError):
        key = path.read_bytes()
        if len(key) >= 32:
            return key
    if not create:
        return None
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # Written whole under another name, then linked into place: a process that reads the key
    # meanwhile finds none or all of it, and of two made at once the first linked is the key.
    temporary = path.with_name(f".{KEY_FILENAME}.{os.getpid()}.{secrets.token_hex(4)}")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(secrets.token_bytes(32))
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return _key(create=False)


def seal(value: Any) -> str:
    """The seal of a JSON value, making this account's key when it has none."""
    key = _key(create=True)
    if key is None:
        raise OSError(f"{key_directory() / KEY_FILENAME}: the key that seals probe results "
                      "cannot be read")
    return mac(key, value)


def is_sealed(value: Any, claimed: Any) -> bool:
    """Whether ``claimed`` is the seal of ``value`` made with this account's key."""
    key = _key(create=False)
    if key is None or not isinstance(claimed, str):
        return False
    return hmac.compare_digest(mac(key, value), claimed)


def mac(key: bytes, value: Any) -> str:
    """The HMAC-SHA256 of a JSON value in canonical form (sorted keys, no spaces): the same
    for a value that went through JSON and back (a tuple read back as a list)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           default=str)
    # surrogatepass: a path the file system gave in bytes that are not UTF-8 is sealed too.
    return hmac.new(key, canonical.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
